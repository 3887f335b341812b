/*
 * module.h: the whole contract an optional module sees.  A module is a
 * table of callbacks (struct eg_module); module.c lists every known
 * module name, compiled in or not, and is the only place in the tree
 * that tests ENABLE_<module>.  Modules use only egress.h and this file,
 * never the core's structs.  doc/internals/MODULES.md describes the
 * lifecycle.
 */
#ifndef EG_MODULE_H
#define EG_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "audit-ops.h"
#include "egress.h"

/* At most this many known modules (compiled in or not). */
#define EG_MODULES_MAX	8

struct eg_module {
	const char	*name;		/* "sandbox": also its [section] */
	const char	*summary;	/* one line for -V */
	/*
	 * Entry point of the "egressd CMD ..." subcommands listed for this
	 * module in module.c; argv[0] is the subcommand.  Returns the exit
	 * status.  Runs on the daemon's main thread, before any proxy.
	 */
	int		 (*main)(int argc, char *argv[]);
	/*
	 * One key of the module's [NAME] section, while a configuration is
	 * parsed (egress_new*(), egress_reload(), egress -t), on the thread
	 * that parses.  *cfg starts NULL for each configuration; the module
	 * allocates what it needs there.  file and line locate the key
	 * (for messages about it later).  On a bad key or value return -1
	 * with a message in err (no FILE:LINE: the core prefixes it); the
	 * configuration is then refused.  NULL: the section takes no keys.
	 */
	int		 (*config)(void **cfg, const char *key,
			    const char *value, const char *file, int line,
			    char *err, size_t errlen);
	/* Free what config() built (the configuration snapshot died). */
	void		 (*config_free)(void *cfg);
	/*
	 * Called by egress_start() on the caller's thread, before anything
	 * is bound, with the module's configuration (NULL when the file has
	 * no [NAME] section or it was empty).  *state (NULL on entry) is
	 * passed to on_event() and fini().  On failure return -1 with a
	 * message in err: egress_start() fails with "module NAME: err",
	 * fini() is not called.  Never exit(), never print.
	 */
	int		 (*init)(struct egress *ex, const void *cfg,
			    void **state, char *err, size_t errlen);
	/*
	 * Every audit event of the proxy, after its line is written, on a
	 * loop thread (the same rules as egress_subscribe(): no blocking,
	 * no calls into the proxy, copy what you keep).
	 */
	void		 (*on_event)(const struct egress_event *ev,
			    void *state);
	/* egress_free(): release the state of a successful init(). */
	void		 (*fini)(void *state);
	/* Audit chaining (the record module); NULL: none. */
	const struct eg_audit_ops *audit;
};

/* One line of the table of known modules (module.c). */
struct eg_module_slot {
	const char		*name;		/* section and --enable-NAME */
	const char *const	*commands;	/* NULL-terminated, or NULL */
	const struct eg_module	*mod;		/* NULL: not compiled in */
};

/*
 * The table, terminated by a NULL name.  A pointer so that unit tests
 * (which link the core) can put a table of their own in before creating
 * a proxy; nothing else writes it.
 */
extern const struct eg_module_slot *eg_module_table;

/* The slot named exactly name[0..len), or NULL. */
const struct eg_module_slot *eg_module_find(const char *name, size_t len);
/* Its index in eg_module_table (for per-module arrays), or -1. */
int	eg_module_index(const struct eg_module *m);

/* --- for the core (starting, stopping, events: modrun.h) ----------------- */
/* The chaining of the compiled-in module that provides it, or NULL. */
const struct eg_audit_ops *eg_module_audit_ops(void);

/* --- for modules ----------------------------------------------------------- */
/* m's configuration in the proxy's snapshot (NULL: none); valid until
 * the next egress_reload() or egress_free(). */
const void	*eg_module_config(struct egress *ex, const struct eg_module *m);
/* The state m's init() made on ex (NULL: none). */
void		*eg_module_state(struct egress *ex, const struct eg_module *m);
/* Untrusted text for a message, quoted and cut (at most 80 bytes). */
const char	*eg_module_quote(const char *s, char *buf, size_t cap);
/*
 * The variables a sandbox gets for the credential routes of the current
 * configuration (SPEC "Routes", In a sandbox): for each route with an
 * env or placeholder key, fn(arg, NAME, env or NULL, placeholder or
 * NULL).  Names only: never a credential.
 */
void		 eg_module_routes(struct egress *ex, void (*fn)(void *,
		    const char *, const char *, const char *), void *arg);
/* The configuration text as records keep it: literal header values of
 * [route:*] sections replaced by [REDACTED] (eg_free() it; NULL: out of
 * memory). */
char		*eg_cfg_redact(const char *text, size_t len, size_t *olen);
/* What NO_PROXY and no_proxy are inside a sandbox. */
#define EG_SANDBOX_NO_PROXY	"127.0.0.1,localhost,::1"
/* The relay's port inside a sandbox (the sandbox module's SB_IN_PORT). */
#define EG_SANDBOX_IN_PORT_S	"3128"

#endif
