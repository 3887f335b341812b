/*
 * cfg.h: the configuration snapshot.  A snapshot is built and fully
 * validated from an INI text (inih, through our own line reader so every
 * error has its line), then never changes; it is reference-counted so a
 * reload can swap it while connections still point at the old one.
 */
#ifndef EG_CFG_H
#define EG_CFG_H

#include <sys/socket.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "host.h"
#include "listen-kind.h"
#include "module.h"
#include "policy.h"

struct eg_listen {
	enum eg_listen_kind	kind;
	char			*text;	/* as written: "127.0.0.1:3128", path */
	struct sockaddr_storage	 ss;	/* TCP: the parsed address */
	socklen_t		 sslen;
	int			 line;	/* 0: command line; -1: the implicit
					   default listener */
};

struct eg_pin {				/* one [hosts] entry */
	char			*name;	/* normalised */
	size_t			 naddr;
	struct sockaddr_storage	*addr;	/* port 0; the caller sets it */
};

struct eg_cfg_session {			/* one [session:NAME] */
	char			*name;
	int			 line;
	char			*phase;	/* NULL: [proxy] phase */
	int			 phase_line;
	struct eg_listen	*listen;	size_t nlisten;
};

struct eg_cfg {
	unsigned	 refs;		/* atomic; see eg_cfg_ref() */
	char		*file;		/* as given; "(default)" if embedded */

	struct eg_listen *listen;	size_t nlisten;
	mode_t		 unix_mode;
	char		*admin;		/* path or ADDR:PORT; NULL: default */
	mode_t		 admin_mode;
	char		*admin_token_file;
	int		 admin_token_line;	/* its line; 0: an override */
	unsigned	 admin_max_connections;
	unsigned	 admin_idle_timeout;	/* seconds */
	unsigned	 audit_ring;
	char		*audit_log;	/* "-" = stdout */
	int		 audit_log_set;	/* given, not the default */
	int		 audit_json;
	int		 audit_chain;	/* record module: chain= lines */
	char		*audit_key;	/* record module: checkpoint key */
	unsigned	 checkpoint_lines;
	unsigned	 checkpoint_interval_ms;
	char		*src;		/* a file's bytes, as read */
	size_t		 src_len;
	char		*phase;		/* initial phase name */
	uint16_t	*ports;		size_t nports;
	int		 deny_private;
	int		 plain_http;
	int		 close_on_phase_change;	/* on_phase_change = close */
	int		 sni_check;
	unsigned	 connect_timeout_ms;
	unsigned	 header_timeout_ms;
	unsigned	 idle_timeout_ms;
	unsigned	 fin_timeout_ms;	/* half-open after one EOF */
	unsigned	 max_connections;
	unsigned	 max_connections_per_client;
	unsigned	 max_header_bytes;
	char		*dns_servers;	/* "ip:port,ip:port" or NULL */
	unsigned	 dns_timeout_ms;	/* the bound of one lookup */
	unsigned	 dns_tries;	/* query rounds within it */
	unsigned	 workers;	/* 0 = one per CPU */
	char		*session_dir;	/* NULL: "sessions" by the admin
					   socket */
	unsigned	 max_sessions;	/* not counting default */

	struct eg_pin	*pins;		size_t npins;
	struct eg_phase	*phases;	size_t nphases;
	struct eg_cfg_session *sessions;	size_t nsessions;
	struct eg_route	*routes;	size_t nroutes;	/* route.h */

	/* per eg_module_table index: what the module's config() built
	   from its [NAME] section, and the module that frees it */
	void			*mod_cfg[EG_MODULES_MAX];
	const struct eg_module	*mod_cfg_owner[EG_MODULES_MAX];
};

/*
 * Parse len bytes of INI text; fname names it in messages.  Returns a
 * snapshot with refs = 1, or NULL with every problem appended to errs as
 * "FILE:LINE: message".  Defaults apply to keys not given; with no
 * listener at all, 127.0.0.1:3128.
 */
struct eg_cfg	*eg_cfg_parse(const char *text, size_t len, const char *fname,
		    struct eg_errs *errs);
/* Read and parse a file ("FILE: cannot open: reason" on failure). */
struct eg_cfg	*eg_cfg_load(const char *path, struct eg_errs *errs);
/* The embedded default (conf/default.ini, compiled in). */
struct eg_cfg	*eg_cfg_default(struct eg_errs *errs);
extern const char eg_cfg_default_text[];

/*
 * Apply a command-line override before use: key is "listen", "unix",
 * "admin", "phase", "audit_log" or "audit_format".  The first "listen"
 * (or "unix") replaces the file's listeners of that kind; later ones
 * add.  Returns 0 or -1 with err set.
 */
int		 eg_cfg_override(struct eg_cfg *, const char *key,
		    const char *value, struct eg_err *err);
/* Checks that need the whole snapshot (the initial phase exists, ...). */
int		 eg_cfg_check(const struct eg_cfg *, struct eg_errs *errs);

/*
 * Parse "ADDR:PORT" ("[v6]:PORT" for IPv6; the port is required) into a
 * socket address.  The grammar of listen = and of a TCP admin =.
 */
int		 eg_cfg_parse_addr(const char *s, size_t len,
		    struct sockaddr_storage *ss, socklen_t *sslen);

void		 eg_cfg_ref(struct eg_cfg *);
void		 eg_cfg_unref(struct eg_cfg *);	/* frees at zero; NULL ok */

const struct eg_phase *eg_cfg_phase(const struct eg_cfg *, const char *name);
const struct eg_pin   *eg_cfg_pin(const struct eg_cfg *,
		    const struct eg_host *h);
/*
 * The addresses a target has without DNS, into addrs (max of them, port
 * 0): its literal, trusted unless the pass is report mode's, or its
 * [hosts] pin, which the operator wrote: trusted.  How many; 0 for a name
 * to resolve.
 */
size_t		 eg_cfg_known_addrs(const struct eg_cfg *,
		    const struct eg_host *h, int report,
		    struct sockaddr_storage *addrs, size_t max, int *trusted);

/* The key table, for documentation checks: NULL-terminated names. */
extern const char *const eg_cfg_keys[];

#endif
