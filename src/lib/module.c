/*
 * module.c: the registry of optional modules.  The table below is the one list of module names in the tree,
 * with the ones not compiled in (so "[record]" or "egressd record" says
 * "not compiled in" rather than "unknown"), and the only place where
 * ENABLE_<module> appears; the build adds a module's sources only when
 * it is enabled.  The modules on a running proxy are modrun.c's.  See
 * doc/internals/MODULES.md.
 */
#include "egress-int.h"

#include <pthread.h>

#include "egress.h"
#include "module.h"

#ifdef ENABLE_SANDBOX
extern const struct eg_module eg_mod_sandbox;
#define MOD_SANDBOX	(&eg_mod_sandbox)
#else
#define MOD_SANDBOX	NULL
#endif
#ifdef ENABLE_REPLAY
extern const struct eg_module eg_mod_replay;
#define MOD_REPLAY	(&eg_mod_replay)
#else
#define MOD_REPLAY	NULL
#endif

#ifdef ENABLE_RECORD
extern const struct eg_module eg_mod_record;
#define MOD_RECORD	(&eg_mod_record)
#else
#define MOD_RECORD	NULL
#endif

static const char *const sandbox_cmds[] = { "run", "relay", NULL };
static const char *const replay_cmds[] = { "replay", NULL };
static const char *const record_cmds[] = { "record", "audit-verify",
    NULL };

static const struct eg_module_slot builtin[] = {
	{ "sandbox",	sandbox_cmds,	MOD_SANDBOX },
	{ "replay",	replay_cmds,	MOD_REPLAY },
	{ "record",	record_cmds,	MOD_RECORD },
	{ NULL, NULL, NULL }
};
_Static_assert(nitems(builtin) <= EG_MODULES_MAX + 1,
    "raise EG_MODULES_MAX");

const struct eg_module_slot *eg_module_table = builtin;

const struct eg_module_slot *
eg_module_find(const char *name, size_t len)
{
	const struct eg_module_slot *s;

	for (s = eg_module_table; s->name != NULL; s++)
		if (strlen(s->name) == len && memcmp(s->name, name, len) == 0)
			return s;
	return NULL;
}

int
eg_module_index(const struct eg_module *m)
{
	int i;

	for (i = 0; i < EG_MODULES_MAX && eg_module_table[i].name != NULL;
	    i++)
		if (m != NULL && eg_module_table[i].mod == m)
			return i;
	return -1;
}

const struct eg_audit_ops *
eg_module_audit_ops(void)
{
	size_t i;

	for (i = 0; i < EG_MODULES_MAX && eg_module_table[i].name != NULL;
	    i++)
		if (eg_module_table[i].mod != NULL &&
		    eg_module_table[i].mod->audit != NULL)
			return eg_module_table[i].mod->audit;
	return NULL;
}

/* --- public ------------------------------------------------------------------ */

static const char *mod_names[EG_MODULES_MAX + 1];
static pthread_once_t mod_names_once = PTHREAD_ONCE_INIT;

static void
mod_names_fill(void)
{
	size_t i, n = 0;

	for (i = 0; eg_module_table[i].name != NULL && n < EG_MODULES_MAX;
	    i++)
		if (eg_module_table[i].mod != NULL)
			mod_names[n++] = eg_module_table[i].name;
	mod_names[n] = NULL;
}

/* Filled once: callers on several threads (the admin API's, one per
 * connection) read it while no one writes it. */
const char *const *
egress_modules(void)
{
	(void)pthread_once(&mod_names_once, mod_names_fill);
	return mod_names;
}

int
egress_module_main(const char *cmd, int argc, char *argv[], char *err,
    size_t errlen)
{
	const struct eg_module_slot *s;
	size_t j;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	for (s = eg_module_table; cmd != NULL && s->name != NULL; s++) {
		for (j = 0; s->commands != NULL && s->commands[j] != NULL;
		    j++) {
			if (strcmp(s->commands[j], cmd) != 0)
				continue;
			if (s->mod != NULL && s->mod->main != NULL)
				return s->mod->main(argc, argv);
			if (err != NULL && errlen > 0)
				snprintf(err, errlen, "%s: module %s not "
				    "compiled in (./configure --enable-%s)",
				    cmd, s->name, s->name);
			return -1;
		}
	}
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "unknown command '%s'",
		    cmd != NULL ? cmd : "(null)");
	return -1;
}

/* --- for modules -------------------------------------------------------------- */

const char *
eg_module_quote(const char *s, char *buf, size_t cap)
{
	return eg_quote(s, strlen(s), 80, buf, cap);
}
