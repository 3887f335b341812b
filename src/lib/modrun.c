/*
 * modrun.c: the modules on a proxy.  The core's calls that start them
 * (egress_start()), hand them every event (eg_emit()) and stop them
 * (egress_free()), and what module.h lets a module ask of the proxy (its
 * configuration in the current snapshot, its state).  The table of
 * known modules is module.c's.
 */
#include "egress-int.h"

#include "cfg.h"
#include "core.h"
#include "egress.h"
#include "modrun.h"
#include "module.h"

/* --- the core's side of the lifecycle --------------------------------------- */

int
eg_modules_init(struct egress *ex, char *err, size_t errlen)
{
	const struct eg_module *m;
	char msg[512];
	void *state;
	size_t i;

	for (i = 0; i < EG_MODULES_MAX && eg_module_table[i].name != NULL;
	    i++) {
		m = eg_module_table[i].mod;
		if (m == NULL || m->init == NULL || ex->mod_live[i] != NULL)
			continue;
		state = NULL;
		msg[0] = '\0';
		if (m->init(ex, ex->cfg->mod_cfg[i], &state, msg,
		    sizeof(msg)) == -1) {
			snprintf(err, errlen, "module %s: %s", m->name,
			    msg[0] != '\0' ? msg : "initialisation failed");
			return -1;
		}
		ex->mod_state[i] = state;
		ex->mod_live[i] = m;
	}
	return 0;
}

void
eg_modules_event(struct egress *ex, const struct egress_event *ev)
{
	const struct eg_module *m;
	size_t i;

	for (i = 0; i < EG_MODULES_MAX; i++)
		if ((m = ex->mod_live[i]) != NULL && m->on_event != NULL)
			m->on_event(ev, ex->mod_state[i]);
}

void
eg_modules_fini(struct egress *ex)
{
	const struct eg_module *m;
	size_t i;

	for (i = EG_MODULES_MAX; i-- > 0;) {
		if ((m = ex->mod_live[i]) == NULL)
			continue;
		if (m->fini != NULL)
			m->fini(ex->mod_state[i]);
		ex->mod_live[i] = NULL;
		ex->mod_state[i] = NULL;
	}
}

/* --- for modules (module.h) ------------------------------------------------ */

const void *
eg_module_config(struct egress *ex, const struct eg_module *m)
{
	int i = eg_module_index(m);

	if (i == -1 || ex == NULL || ex->cfg == NULL)
		return NULL;
	return ex->cfg->mod_cfg[i];
}

void *
eg_module_state(struct egress *ex, const struct eg_module *m)
{
	int i = eg_module_index(m);

	if (i == -1 || ex == NULL || ex->mod_live[i] != m)
		return NULL;
	return ex->mod_state[i];
}
