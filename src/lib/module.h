/*
 * module.h: the whole contract an optional module sees.  A module is a
 * table of callbacks registered in module.c (the only place in the tree
 * that tests ENABLE_<module>).  Modules use only egress.h and this file,
 * never the core's structs.
 */
#ifndef EG_MODULE_H
#define EG_MODULE_H

#include "egress.h"

struct eg_module {
	const char	*name;		/* "sandbox" */
	const char	*summary;	/* one line for --help / -V */
	/*
	 * "egressd NAME ..." subcommands this module serves, NULL-terminated
	 * (the sandbox module serves "run" and "relay"), and their entry
	 * point: argv[0] is the subcommand.  Returns the exit status.
	 */
	const char *const *commands;
	int		 (*main)(int argc, char *argv[]);
	/* observer of audit events, on a loop thread; must not block */
	egress_event_cb	 on_event;
};

/* NULL-terminated table of the modules compiled in. */
extern const struct eg_module *const eg_modules[];

/* The module serving subcommand cmd, or NULL. */
const struct eg_module *eg_module_for_command(const char *cmd);

#endif
