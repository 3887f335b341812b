/*
 * module.c: the registry of optional modules.  This table is the only
 * place in the tree where ENABLE_<module> appears; the build adds the
 * module's sources only when it is enabled.
 */
#include "egress-int.h"

#include "egress.h"
#include "module.h"

#ifdef ENABLE_SANDBOX
extern const struct eg_module eg_mod_sandbox;
#endif

const struct eg_module *const eg_modules[] = {
#ifdef ENABLE_SANDBOX
	&eg_mod_sandbox,
#endif
	NULL
};

const struct eg_module *
eg_module_for_command(const char *cmd)
{
	size_t i, j;

	for (i = 0; eg_modules[i] != NULL; i++) {
		if (eg_modules[i]->commands == NULL)
			continue;
		for (j = 0; eg_modules[i]->commands[j] != NULL; j++)
			if (strcmp(eg_modules[i]->commands[j], cmd) == 0)
				return eg_modules[i];
	}
	return NULL;
}

const char *const *
egress_modules(void)
{
	static const char *names[nitems(eg_modules)];
	size_t i;

	for (i = 0; eg_modules[i] != NULL; i++)
		names[i] = eg_modules[i]->name;
	names[i] = NULL;
	return names;
}
