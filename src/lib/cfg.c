/*
 * cfg.c: the configuration loader.  INI text goes through inih with our
 * own line reader, which counts lines, strips comments, sees section
 * headers (even empty sections) and refuses lines inih would split; keys
 * are then handled generically from one table.  Every problem is
 * collected as "FILE:LINE: message" and the snapshot is returned only
 * when there is none.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#include "audit.h"
#include "cfg.h"
#include "host.h"
#include "inilex.h"
#include "policy.h"
#include "reason.h"
#include "routecfg.h"
#include "shared.h"

#define CFG_FILE_MAX	(16 * 1024 * 1024)	/* eg_cfg_load() limit */
#define KEY_MAX		(EG_HOST_MAX + 8)	/* [hosts] keys: names */
#define LIST_MAX	256			/* items in one list value */
#define DEFAULT_LISTEN	"127.0.0.1:3128"
#define LINE_DEFAULT	(-1)	/* eg_listen.line of the implicit one */

enum ktype {
	K_LISTEN,		/* ADDR:PORT, appended to cfg->listen */
	K_UNIX,			/* socket path, added to cfg->listen */
	K_ADMIN,		/* socket path or ADDR:PORT */
	K_STR,			/* non-empty string */
	K_MODE,			/* octal file mode, 0 to 0777 */
	K_UINT,			/* decimal, min..max */
	K_SECONDS,		/* decimal seconds, min..max, stored in ms */
	K_BOOL,			/* yes/no, true/false, on/off, 1/0 */
	K_ENUM,			/* one of choices[], stored as its index */
	K_PORTS,		/* list of ports */
	K_DNS,			/* list of IP[:port] */
	K_PHASE,		/* the initial phase's name */
	K_ALLOW,		/* list of patterns (phase section) */
	K_HINT,			/* printable text, at most EG_HINT_MAX */
	K_BYTES,		/* a byte size: N, NK, NM or NG (1024s) */
	K_COUNT			/* decimal, 64 bits */
};

enum ksect { KS_PROXY, KS_PHASE };

#define KF_REPEAT	0x01	/* every occurrence adds */

struct key {
	enum ksect		 sect;
	const char		*name;
	enum ktype		 type;
	unsigned		 min, max;
	size_t			 off;	/* in struct eg_cfg or eg_phase */
	int			 flags;
	const char *const	*choices;	/* K_ENUM, NULL-terminated */
};

static const char *const fmt_choices[] = { "text", "json", NULL };
static const char *const opc_choices[] = { "keep", "close", NULL };
static const char *const mode_choices[] = { "enforce", "report", NULL };

#define C(f)	offsetof(struct eg_cfg, f)
#define P(f)	offsetof(struct eg_phase, f)

/*
 * The key table: one row per key, X-macro so that the rows and the
 * exported name list cannot disagree.
 */
#define CFG_KEYS(X)							\
	X(KS_PROXY, "listen", K_LISTEN, 0, 0, 0, KF_REPEAT, NULL)	\
	X(KS_PROXY, "unix", K_UNIX, 0, 0, 0, KF_REPEAT, NULL)		\
	X(KS_PROXY, "unix_mode", K_MODE, 0, 0777, C(unix_mode), 0, NULL) \
	X(KS_PROXY, "admin", K_ADMIN, 0, 0, C(admin), 0, NULL)		\
	X(KS_PROXY, "admin_mode", K_MODE, 0, 0777, C(admin_mode), 0, NULL) \
	X(KS_PROXY, "admin_token_file", K_STR, 0, 0, C(admin_token_file), \
	    0, NULL)							\
	X(KS_PROXY, "admin_max_connections", K_UINT, 1, 65536,		\
	    C(admin_max_connections), 0, NULL)				\
	X(KS_PROXY, "admin_idle_timeout", K_UINT, 1, 3600,		\
	    C(admin_idle_timeout), 0, NULL)				\
	X(KS_PROXY, "audit_ring", K_UINT, 0, 1048576, C(audit_ring), 0,	\
	    NULL)							\
	X(KS_PROXY, "audit_log", K_STR, 0, 0, C(audit_log), 0, NULL)	\
	X(KS_PROXY, "audit_format", K_ENUM, 0, 0, C(audit_json), 0,	\
	    fmt_choices)						\
	X(KS_PROXY, "phase", K_PHASE, 0, 0, C(phase), 0, NULL)		\
	X(KS_PROXY, "ports", K_PORTS, 0, 0, 0, 0, NULL)		\
	X(KS_PROXY, "deny_private", K_BOOL, 0, 0, C(deny_private), 0, NULL) \
	X(KS_PROXY, "plain_http", K_BOOL, 0, 0, C(plain_http), 0, NULL)	\
	X(KS_PROXY, "on_phase_change", K_ENUM, 0, 0,			\
	    C(close_on_phase_change), 0, opc_choices)			\
	X(KS_PROXY, "sni_check", K_BOOL, 0, 0, C(sni_check), 0, NULL)	\
	X(KS_PROXY, "connect_timeout", K_SECONDS, 1, 86400,		\
	    C(connect_timeout_ms), 0, NULL)				\
	X(KS_PROXY, "header_timeout", K_SECONDS, 1, 86400,		\
	    C(header_timeout_ms), 0, NULL)				\
	X(KS_PROXY, "idle_timeout", K_SECONDS, 1, 86400,		\
	    C(idle_timeout_ms), 0, NULL)				\
	X(KS_PROXY, "fin_timeout", K_SECONDS, 1, 86400,		\
	    C(fin_timeout_ms), 0, NULL)					\
	X(KS_PROXY, "max_connections", K_UINT, 1, 1000000,		\
	    C(max_connections), 0, NULL)				\
	X(KS_PROXY, "max_connections_per_client", K_UINT, 1, 1000000,	\
	    C(max_connections_per_client), 0, NULL)			\
	X(KS_PROXY, "max_header_bytes", K_UINT, 1024, 1048576,		\
	    C(max_header_bytes), 0, NULL)				\
	X(KS_PROXY, "dns_servers", K_DNS, 0, 0, C(dns_servers), 0, NULL) \
	X(KS_PROXY, "dns_timeout", K_SECONDS, 1, 300, C(dns_timeout_ms),	\
	    0, NULL)							\
	X(KS_PROXY, "dns_tries", K_UINT, 1, 8, C(dns_tries), 0, NULL)	\
	X(KS_PROXY, "workers", K_UINT, 0, 256, C(workers), 0, NULL)	\
	X(KS_PROXY, "session_dir", K_STR, 0, 0, C(session_dir), 0, NULL) \
	X(KS_PROXY, "max_sessions", K_UINT, 0, 1000000, C(max_sessions), \
	    0, NULL)							\
	X(KS_PROXY, "audit_chain", K_BOOL, 0, 0, C(audit_chain), 0, NULL) \
	X(KS_PROXY, "audit_key", K_STR, 0, 0, C(audit_key), 0, NULL)	\
	X(KS_PROXY, "checkpoint_lines", K_UINT, 1, 1000000000,		\
	    C(checkpoint_lines), 0, NULL)				\
	X(KS_PROXY, "checkpoint_interval", K_SECONDS, 1, 86400,		\
	    C(checkpoint_interval_ms), 0, NULL)				\
	X(KS_PHASE, "allow", K_ALLOW, 0, 0, 0, KF_REPEAT, NULL)		\
	X(KS_PHASE, "mode", K_ENUM, 0, 0, P(report), 0, mode_choices)	\
	X(KS_PHASE, "hint", K_HINT, 0, 0, P(hint), 0, NULL)		\
	X(KS_PHASE, "budget_up", K_BYTES, 0, 0, P(budget_up), 0, NULL)	\
	X(KS_PHASE, "budget_down", K_BYTES, 0, 0, P(budget_down), 0, NULL) \
	X(KS_PHASE, "budget_requests", K_COUNT, 0, 0, P(budget_requests), \
	    0, NULL)

#define KEY_ROW(s, n, t, lo, hi, o, f, c)	{ s, n, t, lo, hi, o, f, c },
#define KEY_NAME(s, n, t, lo, hi, o, f, c)	n,

static const struct key keys[] = { CFG_KEYS(KEY_ROW) };
#define NKEYS	nitems(keys)

const char *const eg_cfg_keys[] = { CFG_KEYS(KEY_NAME) NULL };

enum sect {
	SECT_NONE,		/* before any section header */
	SECT_SKIP,		/* unknown or duplicate: keys ignored */
	SECT_PROXY,
	SECT_HOSTS,
	SECT_PHASE,
	SECT_MODULE,		/* [NAME] of a compiled-in module */
	SECT_SESSION,		/* [session:NAME] */
	SECT_ROUTE		/* [route:NAME] (routecfg.c) */
};

/*
 * Parsing state, shared by the line reader and the inih handler.  When
 * err is set (eg_cfg_override()) the first message goes there instead
 * of to errs, prefixed "command line: ".
 */
#define LINE_MAX_VALUE	65536	/* bytes of one value */

struct parse {
	struct eg_cfg	*cfg;
	const char	*fname;
	struct eg_errs	*errs;
	struct eg_err	*err;
	int		 nerr;

	struct eg_ini	 ini;		/* the text, the line just read */

	enum sect	 sect;
	char		 sectname[408];	/* for messages */
	size_t		 phase;		/* SECT_PHASE: in cfg->phases */
	size_t		 sess;		/* SECT_SESSION: in cfg->sessions */
	int		 proxy_line, hosts_line;
	size_t		 mod;		/* SECT_MODULE: eg_module_table index */
	int		 mod_line[EG_MODULES_MAX];	/* of its [NAME] */

	int		 seen[NKEYS];	/* line of a key's first use */
	int		*pin_line;	/* per cfg->pins entry */
};

static void	 free_listen(struct eg_listen *);

/* Untrusted text for a message, at most 80 bytes (see eg_quote()). */
static const char *
quote(const char *s, size_t len, char *buf, size_t cap)
{
	return eg_quote(s, len, 80, buf, cap);
}

/* Report a problem at the current line (or at line when > 0). */
static int
perr_at(struct parse *ps, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
perr_at(struct parse *ps, int line, const char *fmt, ...)
{
	char msg[EG_ERR_MSGLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->err != NULL) {
		if (ps->nerr == 0)
			eg_err_set(ps->err, EINVAL, "command line: %s", msg);
	} else
		eg_errs_add(ps->errs, "%s:%d: %s", ps->fname, line, msg);
	ps->nerr++;
	return -1;
}

#define perr(ps, ...)	perr_at((ps), (ps)->ini.line, __VA_ARGS__)

static int
bad_value(struct parse *ps, const struct key *k, const char *val,
    const char *why)
{
	char q[400];

	return perr(ps, "bad value '%s' for %s: %s",
	    quote(val, strlen(val), q, sizeof(q)), k->name, why);
}

static int
is_space(int c)
{
	return c == ' ' || c == '\t';
}

/* Next item of a list separated by spaces, tabs or commas. */
static int
next_item(const char **pp, const char **item, size_t *len)
{
	const char *p = *pp;

	while (*p == ',' || is_space(*p))
		p++;
	if (*p == '\0')
		return 0;
	*item = p;
	while (*p != '\0' && *p != ',' && !is_space(*p))
		p++;
	*len = (size_t)(p - *item);
	*pp = p;
	return 1;
}

static int
parse_uint(const char *s, size_t len, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (len == 0 || len > 10)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * A byte size (K_BYTES: digits, then K, M or G for powers of 1024) or a
 * count (digits only), at most 2^62.  0 or -1.
 */
static int
parse_size(const char *s, size_t len, int suffix, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	size_t i;

	if (suffix && len > 1) {
		switch (s[len - 1]) {
		case 'K': case 'k': mul = 1024; len--; break;
		case 'M': case 'm': mul = 1024 * 1024; len--; break;
		case 'G': case 'g': mul = 1024 * 1024 * 1024; len--; break;
		}
	}
	if (len == 0 || len > 19)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > (UINT64_C(1) << 62) / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/*
 * Parse an IP literal (IPv6 with or without brackets) of len bytes into
 * ss with port 0.
 */
static int
parse_ip(const char *s, size_t len, struct sockaddr_storage *ss,
    socklen_t *sslen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char buf[INET6_ADDRSTRLEN + 2];

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	} else if (len > 0 && s[0] == '[')
		return -1;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, buf, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		*sslen = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, buf, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		*sslen = sizeof(*sin6);
		return 0;
	}
	return -1;
}

/*
 * Parse "IPv4:PORT" or "[IPv6]:PORT" (the port is required unless dflt
 * is not 0).
 */
static int
parse_ipport(const char *s, size_t len, uint16_t dflt,
    struct sockaddr_storage *ss, socklen_t *sslen)
{
	const char *colon = NULL, *rb;
	uint16_t port = dflt;
	size_t i, hostlen = len;

	if (len > 0 && s[0] == '[') {
		rb = memchr(s, ']', len);
		if (rb == NULL)
			return -1;
		hostlen = (size_t)(rb - s) + 1;
		if (hostlen < len) {
			if (s[hostlen] != ':')
				return -1;
			colon = s + hostlen;
		}
	} else {
		for (i = 0; i < len; i++)
			if (s[i] == ':')
				colon = s + i;
		if (colon != NULL && memchr(s, ':', (size_t)(colon - s)))
			colon = NULL;	/* a bare IPv6 address */
		if (colon != NULL)
			hostlen = (size_t)(colon - s);
	}
	if (colon != NULL && eg_port_parse(colon + 1,
	    len - hostlen - 1, &port) == -1)
		return -1;
	if (port == 0)
		return -1;
	if (parse_ip(s, hostlen, ss, sslen) == -1)
		return -1;
	/* Brackets are how IPv6 and a port go together, and only that:
	 * no "[127.0.0.1]:3128" either. */
	if (s[0] != '[' && ss->ss_family == AF_INET6 && colon != NULL)
		return -1;
	if (s[0] == '[' && ss->ss_family != AF_INET6)
		return -1;
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	return 0;
}

int
eg_cfg_parse_addr(const char *s, size_t len, struct sockaddr_storage *ss,
    socklen_t *sslen)
{
	return parse_ipport(s, len, 0, ss, sslen);
}

static int
add_listen(struct parse *ps, enum eg_listen_kind kind, const char *val,
    const struct sockaddr_storage *ss, socklen_t sslen, int line)
{
	struct eg_cfg *cfg = ps->cfg;
	struct eg_listen *nl, *l;

	nl = eg_reallocarray(cfg->listen, cfg->nlisten + 1, sizeof(*nl));
	if (nl == NULL)
		return perr(ps, "out of memory");
	cfg->listen = nl;
	l = &nl[cfg->nlisten];
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->line = line;
	if (ss != NULL) {
		l->ss = *ss;
		l->sslen = sslen;
	}
	l->text = eg_strdup(val);
	if (l->text == NULL)
		return perr(ps, "out of memory");
	cfg->nlisten++;
	return 0;
}

/* Drop the listeners of kind that did not come from the command line. */
static void
drop_listeners(struct eg_cfg *cfg, enum eg_listen_kind kind)
{
	size_t i, o = 0;

	for (i = 0; i < cfg->nlisten; i++) {
		if ((cfg->listen[i].kind == kind && cfg->listen[i].line != 0) ||
		    cfg->listen[i].line == LINE_DEFAULT)
			free_listen(&cfg->listen[i]);
		else
			cfg->listen[o++] = cfg->listen[i];
	}
	cfg->nlisten = o;
}

/* Where key k keeps its string in base (the struct eg_cfg or eg_phase):
 * a copy of its own that set_str() made; NULL for the other types. */
static char **
key_str(const struct key *k, void *base)
{
	switch (k->type) {
	case K_ADMIN:
	case K_STR:
	case K_DNS:
	case K_PHASE:
	case K_HINT:
		return (char **)(void *)((char *)base + k->off);
	default:
		return NULL;
	}
}

static int
set_str(struct parse *ps, char **dst, const char *val)
{
	char *s;

	s = eg_strdup(val);
	if (s == NULL)
		return perr(ps, "out of memory");
	eg_free(*dst);
	*dst = s;
	return 0;
}

static int
set_ports(struct parse *ps, const struct key *k, const char *val)
{
	uint16_t ports[LIST_MAX], *np, port;
	const char *p = val, *it;
	size_t len, n = 0, i;

	while (next_item(&p, &it, &len)) {
		if (eg_port_parse(it, len, &port) == -1)
			return bad_value(ps, k, val, "ports are 1-65535");
		for (i = 0; i < n; i++)
			if (ports[i] == port)
				break;
		if (i < n)
			continue;
		if (n == LIST_MAX)
			return bad_value(ps, k, val, "too many ports");
		ports[n++] = port;
	}
	if (n == 0)
		return bad_value(ps, k, val, "at least one port is needed");
	np = eg_calloc(n, sizeof(*np));
	if (np == NULL)
		return perr(ps, "out of memory");
	memcpy(np, ports, n * sizeof(*np));
	eg_free(ps->cfg->ports);
	ps->cfg->ports = np;
	ps->cfg->nports = n;
	return 0;
}

/* Normalise a DNS server list into "ip:port,[ip6]:port" for c-ares. */
static int
set_dns(struct parse *ps, const struct key *k, const char *val)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	char out[4096];
	const char *p = val, *it;
	size_t len, o = 0, n = 0;
	int w;

	while (next_item(&p, &it, &len)) {
		if (parse_ipport(it, len, 53, &ss, &sslen) == -1)
			return bad_value(ps, k, val,
			    "expected IP[:PORT] or [IPv6]:PORT");
		if (n > 0 && o + 1 < sizeof(out))
			out[o++] = ',';
		w = eg_addr_text((struct sockaddr *)&ss, out + o,
		    sizeof(out) - o);
		if (w < 0 || (size_t)w >= sizeof(out) - o)
			return bad_value(ps, k, val, "too many servers");
		o += (size_t)w;
		n++;
	}
	if (n == 0)
		return bad_value(ps, k, val, "no server given");
	return set_str(ps, key_str(k, ps->cfg), out);
}

static int
add_allow(struct parse *ps, struct eg_phase *ph, const char *val)
{
	struct eg_rule r;
	struct eg_err e;
	const char *p = val, *it;
	size_t len;
	int rc = 0;

	while (next_item(&p, &it, &len)) {
		if (len > 6 && memcmp(it, "route:", 6) == 0) {
			char **nr;
			int *nl;

			nr = eg_reallocarray(ph->routes, ph->nroutes + 1,
			    sizeof(*nr));
			if (nr != NULL)
				ph->routes = nr;
			nl = eg_reallocarray(ph->route_lines, ph->nroutes + 1,
			    sizeof(*nl));
			if (nl != NULL)
				ph->route_lines = nl;
			if (nr == NULL || nl == NULL || (nr[ph->nroutes] =
			    eg_strndup(it + 6, len - 6)) == NULL)
				return perr(ps, "out of memory");
			nl[ph->nroutes++] = ps->ini.line;
			continue;
		}
		if (eg_rule_parse(it, len, &r, &e) == -1) {
			rc = perr(ps, "%s", e.msg);
			continue;
		}
		if (eg_phase_add(ph, &r) == -1) {
			eg_rule_clear(&r);
			return perr(ps, "out of memory");
		}
	}
	return rc;
}

/* Set one key from the table; base is the struct eg_cfg or eg_phase. */
static int
key_set(struct parse *ps, const struct key *k, void *base, const char *val)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	unsigned long v;
	size_t i, len = strlen(val);
	char *b = base;

	if (len == 0 && k->type != K_ALLOW)
		return bad_value(ps, k, val, "empty value");
	/* the record module's keys mean nothing without it (a chain asked
	 * for and silently not made would be worse than an error) */
	if (k->sect == KS_PROXY && (k->off == C(audit_chain) ||
	    k->off == C(audit_key)) && eg_module_audit_ops() == NULL &&
	    (k->off == C(audit_key) || strcasecmp(val, "yes") == 0 ||
	    strcasecmp(val, "true") == 0 || strcasecmp(val, "on") == 0 ||
	    strcmp(val, "1") == 0))
		return perr(ps, "%s: the record module is not compiled in "
		    "(./configure --enable-record)", k->name);
	switch (k->type) {
	case K_LISTEN:
		if (parse_ipport(val, len, 0, &ss, &sslen) == -1)
			return bad_value(ps, k, val,
			    "expected IPv4:PORT or [IPv6]:PORT");
		return add_listen(ps, EG_LISTEN_TCP, val, &ss, sslen,
		    ps->ini.line);
	case K_UNIX:
		if (len >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return bad_value(ps, k, val, "path too long");
		return add_listen(ps, EG_LISTEN_UNIX, val, NULL, 0,
		    ps->ini.line);
	case K_ADMIN:
		/* "none": no admin API (tests, egressd run) */
		if (len == 4 && memcmp(val, "none", 4) == 0)
			return set_str(ps, key_str(k, base), val);
		if (memchr(val, '/', len) != NULL) {
			if (len >= sizeof(((struct sockaddr_un *)0)->sun_path))
				return bad_value(ps, k, val,
				    "path too long");
		} else if (parse_ipport(val, len, 0, &ss, &sslen) == -1)
			return bad_value(ps, k, val,
			    "expected a socket path or ADDR:PORT");
		return set_str(ps, key_str(k, base), val);
	case K_STR:
		if (k->sect == KS_PROXY && k->off == C(audit_log))
			ps->cfg->audit_log_set = 1;
		/* a signing key others may read is refused as the admin token
		 * is (a missing one is the start's error, as before) */
		if (k->sect == KS_PROXY && k->off == C(audit_key)) {
			char q[400], why[512];
			struct stat st;

			if (stat(val, &st) == 0 && eg_secret_mode_why(&st, val,
			    "the private key", why, sizeof(why)) != NULL)
				return perr(ps, "%s %s: %s", k->name,
				    quote(val, len, q, sizeof(q)), why);
		}
		return set_str(ps, key_str(k, base), val);
	case K_PHASE:
		if (!eg_phase_name_ok(val, len))
			return bad_value(ps, k, val, "not a phase name");
		return set_str(ps, key_str(k, base), val);
	case K_MODE:
		v = 0;
		for (i = 0; i < len; i++) {
			if (val[i] < '0' || val[i] > '7' || i >= 4)
				break;
			v = v * 8 + (unsigned long)(val[i] - '0');
		}
		if (i < len || v > k->max)
			return bad_value(ps, k, val,
			    "expected an octal mode such as 0660");
		*(mode_t *)(void *)(b + k->off) = (mode_t)v;
		return 0;
	case K_UINT:
	case K_SECONDS:
		if (parse_uint(val, len, k->max, &v) == -1 || v < k->min) {
			char why[64];

			snprintf(why, sizeof(why), "expected %s from %u to %u",
			    k->type == K_SECONDS ? "seconds" : "a number",
			    k->min, k->max);
			return bad_value(ps, k, val, why);
		}
		if (k->type == K_SECONDS)
			v *= 1000;
		*(unsigned *)(void *)(b + k->off) = (unsigned)v;
		return 0;
	case K_BOOL:
		if (strcasecmp(val, "yes") == 0 ||
		    strcasecmp(val, "true") == 0 ||
		    strcasecmp(val, "on") == 0 || strcmp(val, "1") == 0)
			*(int *)(void *)(b + k->off) = 1;
		else if (strcasecmp(val, "no") == 0 ||
		    strcasecmp(val, "false") == 0 ||
		    strcasecmp(val, "off") == 0 || strcmp(val, "0") == 0)
			*(int *)(void *)(b + k->off) = 0;
		else
			return bad_value(ps, k, val, "expected yes or no");
		return 0;
	case K_ENUM:
		for (i = 0; k->choices[i] != NULL; i++) {
			if (strcmp(val, k->choices[i]) == 0) {
				*(int *)(void *)(b + k->off) = (int)i;
				return 0;
			}
		}
		return bad_value(ps, k, val, k->choices == fmt_choices ?
		    "expected text or json" : k->choices == opc_choices ?
		    "expected close or keep" : "expected enforce or report");
	case K_PORTS:
		return set_ports(ps, k, val);
	case K_DNS:
		return set_dns(ps, k, val);
	case K_ALLOW:
		return add_allow(ps, base, val);
	case K_HINT:
		if (len > EG_HINT_MAX)
			return bad_value(ps, k, val, "longer than 256 bytes");
		for (i = 0; i < len; i++)
			if ((unsigned char)val[i] < 0x20 ||
			    (unsigned char)val[i] >= 0x7f)
				return bad_value(ps, k, val, "only printable "
				    "ASCII text");
		return set_str(ps, key_str(k, base), val);
	case K_BYTES:
	case K_COUNT: {
		/* a uint64_t; a phase's budgets also mark themselves set */
		uint64_t u;
		struct eg_phase *ph = base;

		if (parse_size(val, len, k->type == K_BYTES, &u) == -1)
			return bad_value(ps, k, val, k->type == K_BYTES ?
			    "expected a size such as 500K, 50M or 2G" :
			    "expected a number");
		*(uint64_t *)(void *)(b + k->off) = u;
		if (k->sect == KS_PHASE && k->off == P(budget_up))
			ph->budget_has |= EG_BUDGET_UP;
		else if (k->sect == KS_PHASE && k->off == P(budget_down))
			ph->budget_has |= EG_BUDGET_DOWN;
		else if (k->sect == KS_PHASE && k->off == P(budget_requests))
			ph->budget_has |= EG_BUDGET_REQ;
		return 0;
	}
	}
	return -1;
}

static const struct key *
key_find(enum ksect sect, const char *name)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (keys[i].sect == sect && strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* A [hosts] line: name = addr [addr...]. */
static int
hosts_entry(struct parse *ps, const char *name, const char *val)
{
	struct eg_cfg *cfg = ps->cfg;
	struct sockaddr_storage addr[LIST_MAX], *na;
	struct eg_host h;
	struct eg_pin *np;
	socklen_t sslen;
	const char *p = val, *it, *why;
	char q[400];
	size_t len, n = 0;
	int *nl;

	if (eg_host_parse(name, strlen(name), &h, &why) == -1)
		return perr(ps, "bad host name '%s' in [hosts]: %s",
		    quote(name, strlen(name), q, sizeof(q)), why);
	if (h.kind != EG_HOST_NAME)
		return perr(ps, "bad host name '%s' in [hosts]: an address "
		    "needs no pinning", quote(name, strlen(name), q,
		    sizeof(q)));
	while (next_item(&p, &it, &len)) {
		if (n == LIST_MAX)
			return perr(ps, "too many addresses for '%s'",
			    h.name);
		if (parse_ip(it, len, &addr[n], &sslen) == -1)
			return perr(ps, "bad address '%s' for '%s' in "
			    "[hosts]: expected an IPv4 or IPv6 address",
			    quote(it, len, q, sizeof(q)), h.name);
		n++;
	}
	if (n == 0)
		return perr(ps, "no address for '%s' in [hosts]", h.name);

	np = eg_reallocarray(cfg->pins, cfg->npins + 1, sizeof(*np));
	if (np == NULL)
		return perr(ps, "out of memory");
	cfg->pins = np;
	nl = eg_reallocarray(ps->pin_line, cfg->npins + 1, sizeof(*nl));
	if (nl == NULL)
		return perr(ps, "out of memory");
	ps->pin_line = nl;
	na = eg_calloc(n, sizeof(*na));
	np = &cfg->pins[cfg->npins];
	np->name = eg_strdup(h.name);
	if (na == NULL || np->name == NULL) {
		eg_free(na);
		eg_free(np->name);
		return perr(ps, "out of memory");
	}
	memcpy(na, addr, n * sizeof(*na));
	np->addr = na;
	np->naddr = n;
	nl[cfg->npins] = ps->ini.line;
	cfg->npins++;
	return 0;
}

/*
 * A new [KIND:NAME] section's entry: one more element, zeroed but for its
 * name and this line, at the end of the array *arrp points to (*n
 * elements of sz bytes, each beginning with its char *name and holding
 * its int line at line_off; struct eg_phase, struct eg_cfg_session).
 * NULL when NAME was used before or memory runs out: perr() said which.
 */
static void *
sect_add(struct parse *ps, const char *kind, void *arrp, size_t *n,
    size_t sz, size_t line_off, const char *name, size_t len)
{
	char *arr, *e, *nm;
	size_t i;
	int line;

	memcpy(&arr, arrp, sizeof(arr));
	for (i = 0; i < *n; i++) {
		e = arr + i * sz;
		memcpy(&nm, e, sizeof(nm));
		memcpy(&line, e + line_off, sizeof(line));
		if (strlen(nm) == len && memcmp(nm, name, len) == 0) {
			perr(ps, "duplicate section [%s:%s] (first at line "
			    "%d)", kind, nm, line);
			return NULL;
		}
	}
	if ((arr = eg_reallocarray(arr, *n + 1, sz)) == NULL) {
		perr(ps, "out of memory");
		return NULL;
	}
	memcpy(arrp, &arr, sizeof(arr));
	e = arr + *n * sz;
	memset(e, 0, sz);
	if ((nm = eg_strndup(name, len)) == NULL) {
		perr(ps, "out of memory");
		return NULL;
	}
	line = ps->ini.line;
	memcpy(e, &nm, sizeof(nm));
	memcpy(e + line_off, &line, sizeof(line));
	(*n)++;
	return e;
}

/* A section that stands once ([proxy], [hosts]); *line: its first. */
static void
sect_once(struct parse *ps, const char *kind, int *line, enum sect sect)
{
	if (*line) {
		perr(ps, "duplicate section [%s] (first at line %d)", kind,
		    *line);
		return;
	}
	*line = ps->ini.line;
	ps->sect = sect;
}

_Static_assert(offsetof(struct eg_phase, name) == 0 &&
    offsetof(struct eg_cfg_session, name) == 0, "sect_add(): name first");

/* A section header; name is what is between the brackets, trimmed. */
static void
section_start(void *arg, const char *name, size_t len)
{
	struct parse *ps = arg;
	const struct eg_module_slot *ms;
	struct eg_cfg *cfg = ps->cfg;
	const char *colon;
	char q[400];
	size_t i;

	ps->sect = SECT_SKIP;
	quote(name, len, q, sizeof(q));
	snprintf(ps->sectname, sizeof(ps->sectname), "[%s]", q);
	for (i = 0; i < NKEYS; i++)
		if (keys[i].sect == KS_PHASE)
			ps->seen[i] = 0;

	if (len == 5 && memcmp(name, "proxy", 5) == 0) {
		sect_once(ps, "proxy", &ps->proxy_line, SECT_PROXY);
		return;
	}
	if (len == 5 && memcmp(name, "hosts", 5) == 0) {
		sect_once(ps, "hosts", &ps->hosts_line, SECT_HOSTS);
		return;
	}
	if (len >= 6 && memcmp(name, "phase:", 6) == 0) {
		name += 6;
		len -= 6;
		if (!eg_phase_name_ok(name, len)) {
			perr(ps, "bad phase name '%s' (letters, digits, '.', "
			    "'_' and '-', at most %d)", quote(name, len, q,
			    sizeof(q)), EG_PHASE_NAME_MAX);
			return;
		}
		if (sect_add(ps, "phase", &cfg->phases, &cfg->nphases,
		    sizeof(*cfg->phases), offsetof(struct eg_phase, line),
		    name, len) == NULL)
			return;
		ps->phase = cfg->nphases - 1;
		ps->sect = SECT_PHASE;
		return;
	}
	if (len >= 6 && memcmp(name, "route:", 6) == 0) {
		char msg[EG_ERR_MSGLEN];

		if (eg_route_section(cfg, name + 6, len - 6, ps->ini.line,
		    msg, sizeof(msg)) == -1) {
			perr(ps, "%s", msg);
			return;
		}
		ps->sect = SECT_ROUTE;
		return;
	}
	if (len >= 8 && memcmp(name, "session:", 8) == 0) {
		name += 8;
		len -= 8;
		if (!eg_session_name_ok(name, len) || (len == 7 &&
		    memcmp(name, "default", 7) == 0)) {
			perr(ps, "bad session name '%s' (letters, digits, "
			    "'.', '_' and '-', at most %d, not beginning with "
			    "'.' or '-'; not default)", quote(name, len, q,
			    sizeof(q)), EG_SESSION_NAME_MAX);
			return;
		}
		if (sect_add(ps, "session", &cfg->sessions, &cfg->nsessions,
		    sizeof(*cfg->sessions), offsetof(struct eg_cfg_session,
		    line), name, len) == NULL)
			return;
		ps->sess = cfg->nsessions - 1;
		ps->sect = SECT_SESSION;
		return;
	}
	/* a module's [NAME], or [NAME:...] of one not compiled in */
	colon = memchr(name, ':', len);
	ms = eg_module_find(name, colon != NULL ? (size_t)(colon - name) :
	    len);
	if (ms != NULL && ms->mod == NULL) {
		perr(ps, "[%s]: module not compiled in "
		    "(./configure --enable-%s)", q, ms->name);
		return;
	}
	if (ms != NULL && colon == NULL &&
	    (i = (size_t)(ms - eg_module_table)) < EG_MODULES_MAX) {
		if (ps->mod_line[i]) {
			perr(ps, "duplicate section [%s] (first at line %d)",
			    ms->name, ps->mod_line[i]);
			return;
		}
		ps->mod_line[i] = ps->ini.line;
		ps->mod = i;
		ps->sect = SECT_MODULE;
		return;
	}
	perr(ps, "unknown section [%s]", q);
}

static int
valid_key_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* A line inilex.c refuses, or NULL: out of memory. */
static void
ini_refused(void *arg, const char *msg)
{
	perr((struct parse *)arg, "%s", msg != NULL ? msg : "out of memory");
}

/* the handler takes the key from ps->ini.key, so a long key ([hosts]
 * names) need not fit inih's buffer either */
_Static_assert(KEY_MAX <= EG_INI_KEY_MAX, "KEY_MAX");
static const struct eg_ini_ops cfg_ini_ops = {
	section_start, ini_refused, valid_key_char, KEY_MAX, LINE_MAX_VALUE
};

/* A key of a module's section: the module parses it. */
static void
module_entry(struct parse *ps, const char *value)
{
	const struct eg_module *m = eg_module_table[ps->mod].mod;
	char msg[EG_ERR_MSGLEN], q[400];

	if (m->config == NULL) {
		perr(ps, "unknown key '%s' in %s", quote(ps->ini.key,
		    strlen(ps->ini.key), q, sizeof(q)), ps->sectname);
		return;
	}
	ps->cfg->mod_cfg_owner[ps->mod] = m;
	msg[0] = '\0';
	if (m->config(&ps->cfg->mod_cfg[ps->mod], ps->ini.key, value, ps->fname,
	    ps->ini.line, msg, sizeof(msg)) == -1)
		perr(ps, "%s", msg[0] != '\0' ? msg : "bad key");
}

/* A key of [session:NAME]: unix and listen (repeatable), phase. */
static void
session_entry(struct parse *ps, const char *key, const char *val)
{
	struct eg_cfg_session *cs = &ps->cfg->sessions[ps->sess];
	struct eg_listen *nl, *l;
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	size_t len = strlen(val);
	int tcp;
	char q[400];

	if (strcmp(key, "phase") == 0) {
		if (cs->phase_line) {
			perr(ps, "duplicate key 'phase' in %s (first at line "
			    "%d)", ps->sectname, cs->phase_line);
			return;
		}
		if (!eg_phase_name_ok(val, len)) {
			perr(ps, "bad phase name '%s'", quote(val, len, q,
			    sizeof(q)));
			return;
		}
		cs->phase_line = ps->ini.line;
		if ((cs->phase = eg_strdup(val)) == NULL)
			perr(ps, "out of memory");
		return;
	}
	if (strcmp(key, "unix") != 0 && strcmp(key, "listen") != 0) {
		perr(ps, "unknown key '%s' in %s (unix, listen, phase)",
		    quote(key, strlen(key), q, sizeof(q)), ps->sectname);
		return;
	}
	tcp = key[0] == 'l';
	if (len == 0) {
		perr(ps, "%s: empty value", key);
		return;
	}
	if (tcp && parse_ipport(val, len, 0, &ss, &sslen) == -1) {
		perr(ps, "bad value '%s' for listen: expected IPv4:PORT or "
		    "[IPv6]:PORT", quote(val, len, q, sizeof(q)));
		return;
	}
	if (!tcp && len >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		perr(ps, "bad value for unix: path too long");
		return;
	}
	nl = eg_reallocarray(cs->listen, cs->nlisten + 1, sizeof(*nl));
	if (nl == NULL) {
		perr(ps, "out of memory");
		return;
	}
	cs->listen = nl;
	l = &nl[cs->nlisten];
	memset(l, 0, sizeof(*l));
	l->kind = tcp ? EG_LISTEN_TCP : EG_LISTEN_UNIX;
	l->line = ps->ini.line;
	if (tcp) {
		l->ss = ss;
		l->sslen = sslen;
	}
	if ((l->text = eg_strdup(val)) == NULL) {
		perr(ps, "out of memory");
		return;
	}
	cs->nlisten++;
}

/*
 * The inih handler.  inih's section and name are not used: the reader
 * tracked the section, and kept the key untruncated (inih cuts names at
 * 49 bytes; [hosts] keys are DNS names).
 */
static int
cfg_handler(void *arg, const char *section, const char *name,
    const char *inih_value)
{
	struct parse *ps = arg;
	const char *value = inih_value;
	const struct key *k;
	char q[400];
	void *base;
	size_t ki;

	(void)section;
	(void)name;
	value = eg_ini_value(&ps->ini, value);
	switch (ps->sect) {
	case SECT_NONE:
		perr(ps, "key '%s' outside any section",
		    quote(ps->ini.key, strlen(ps->ini.key), q, sizeof(q)));
		return 1;
	case SECT_SKIP:
		return 1;
	case SECT_HOSTS:
		hosts_entry(ps, ps->ini.key, value);
		return 1;
	case SECT_MODULE:
		module_entry(ps, value);
		return 1;
	case SECT_SESSION:
		session_entry(ps, ps->ini.key, value);
		return 1;
	case SECT_ROUTE: {
		char msg[EG_ERR_MSGLEN];

		if (eg_route_key(&ps->cfg->routes[ps->cfg->nroutes - 1],
		    ps->ini.key, value, ps->ini.line, msg, sizeof(msg)) == -1)
			perr(ps, "%s", msg);
		return 1;
	}
	case SECT_PROXY:
	case SECT_PHASE:
		break;
	}
	k = key_find(ps->sect == SECT_PROXY ? KS_PROXY : KS_PHASE, ps->ini.key);
	if (k == NULL) {
		perr(ps, "unknown key '%s' in %s", quote(ps->ini.key,
		    strlen(ps->ini.key), q, sizeof(q)), ps->sectname);
		return 1;
	}
	ki = (size_t)(k - keys);
	if (!(k->flags & KF_REPEAT) && ps->seen[ki]) {
		perr(ps, "duplicate key '%s' in %s (first at line %d)",
		    k->name, ps->sectname, ps->seen[ki]);
		return 1;
	}
	if (!ps->seen[ki])
		ps->seen[ki] = ps->ini.line;
	if (k->sect == KS_PHASE)
		base = &ps->cfg->phases[ps->phase];
	else
		base = ps->cfg;
	key_set(ps, k, base, value);
	return 1;
}

static struct eg_cfg *
cfg_new(const char *fname)
{
	struct eg_cfg *cfg;

	cfg = eg_calloc(1, sizeof(*cfg));
	if (cfg == NULL)
		return NULL;
	cfg->refs = 1;
	cfg->file = eg_strdup(fname);
	cfg->audit_log = eg_strdup("-");
	cfg->ports = eg_calloc(1, sizeof(*cfg->ports));
	if (cfg->file == NULL || cfg->audit_log == NULL ||
	    cfg->ports == NULL) {
		eg_cfg_unref(cfg);
		return NULL;
	}
	cfg->ports[0] = 443;
	cfg->nports = 1;
	cfg->unix_mode = 0660;
	cfg->admin_mode = 0600;
	cfg->admin_max_connections = 1024;
	cfg->admin_idle_timeout = 5;
	cfg->max_sessions = 1024;
	cfg->audit_ring = 1024;
	cfg->audit_json = 0;
	cfg->checkpoint_lines = 1000;
	cfg->checkpoint_interval_ms = 60 * 1000;
	cfg->deny_private = 1;
	cfg->plain_http = 1;
	cfg->close_on_phase_change = 1;
	cfg->sni_check = 1;
	cfg->connect_timeout_ms = 10 * 1000;
	cfg->header_timeout_ms = 10 * 1000;
	cfg->idle_timeout_ms = 300 * 1000;
	cfg->fin_timeout_ms = 10 * 1000;
	cfg->max_connections = 4096;
	cfg->max_connections_per_client = 256;
	cfg->max_header_bytes = 16384;
	cfg->dns_timeout_ms = 5 * 1000;
	cfg->dns_tries = 2;
	cfg->workers = 0;
	return cfg;
}

static int
pin_cmp(const void *a, const void *b)
{
	const struct eg_pin *pa = a, *pb = b;

	return strcmp(pa->name, pb->name);
}

struct pin_ref {
	const char	*name;
	int		 line;
};

static int
pin_ref_cmp(const void *a, const void *b)
{
	const struct pin_ref *pa = a, *pb = b;
	int c;

	c = strcmp(pa->name, pb->name);
	if (c != 0)
		return c;
	return (pa->line > pb->line) - (pa->line < pb->line);
}

/*
 * Report names pinned twice (sorting, so a large [hosts] stays cheap),
 * then sort the pins for eg_cfg_pin()'s binary search.
 */
static void
pins_finish(struct parse *ps)
{
	struct eg_cfg *cfg = ps->cfg;
	struct pin_ref *ref;
	size_t i, first;

	if (cfg->npins < 2)
		return;
	ref = eg_calloc(cfg->npins, sizeof(*ref));
	if (ref == NULL) {
		perr(ps, "out of memory");
		return;
	}
	for (i = 0; i < cfg->npins; i++) {
		ref[i].name = cfg->pins[i].name;
		ref[i].line = ps->pin_line[i];
	}
	qsort(ref, cfg->npins, sizeof(*ref), pin_ref_cmp);
	for (first = 0, i = 1; i < cfg->npins; i++) {
		if (strcmp(ref[i].name, ref[first].name) != 0) {
			first = i;
			continue;
		}
		perr_at(ps, ref[i].line, "duplicate host '%s' in [hosts] "
		    "(first at line %d)", ref[i].name, ref[first].line);
	}
	eg_free(ref);
	qsort(cfg->pins, cfg->npins, sizeof(*cfg->pins), pin_cmp);
}

static int
admin_is_tcp(const char *admin)
{
	return admin != NULL && strchr(admin, '/') == NULL &&
	    strcmp(admin, "none") != 0;
}

struct eg_cfg *
eg_cfg_parse(const char *text, size_t len, const char *fname,
    struct eg_errs *errs)
{
	struct sockaddr_storage ss;
	struct parse ps;
	struct eg_cfg *cfg;
	socklen_t sslen;
	size_t i;
	struct eg_err aerr;
	int rc, admin_line;

	if (fname == NULL)
		fname = "(config)";
	memset(&ps, 0, sizeof(ps));
	ps.fname = fname;
	ps.errs = errs;
	eg_ini_init(&ps.ini, text, len, &cfg_ini_ops, &ps);
	cfg = cfg_new(fname);
	if (cfg == NULL) {
		eg_errs_add(errs, "%s:0: out of memory", fname);
		return NULL;
	}
	ps.cfg = cfg;

	rc = ini_parse_stream(eg_ini_reader, &ps.ini, cfg_handler, &ps);
	if (rc != 0 && ps.nerr == 0)
		perr(&ps, rc == -2 ? "out of memory" : "cannot parse line");

	if (ps.ini.line == 0)
		ps.ini.line = 1;
	if (cfg->nphases == 0)
		perr(&ps, "no phase defined: add a [phase:NAME] section");
	else if (cfg->phase != NULL) {
		if (eg_cfg_phase(cfg, cfg->phase) == NULL)
			perr_at(&ps, ps.seen[key_find(KS_PROXY, "phase") -
			    keys], "phase '%s' does not exist", cfg->phase);
	} else {
		cfg->phase = eg_strdup(cfg->phases[0].name);
		if (cfg->phase == NULL)
			perr(&ps, "out of memory");
	}
	for (i = 0; i < cfg->nsessions; i++) {
		struct eg_cfg_session *cs = &cfg->sessions[i];

		if (cs->nlisten == 0)
			perr_at(&ps, cs->line, "[session:%s] has no listener "
			    "(unix = PATH or listen = ADDR:PORT)", cs->name);
		if (cs->phase != NULL && cfg->nphases > 0 &&
		    eg_cfg_phase(cfg, cs->phase) == NULL)
			perr_at(&ps, cs->phase_line, "phase '%s' does not "
			    "exist", cs->phase);
	}
	/* audit_log = journal / syslog:FACILITY (audit.c) */
	if (cfg->audit_log != NULL && eg_audit_sink_check(cfg->audit_log,
	    &aerr) == -1)
		perr_at(&ps, ps.seen[key_find(KS_PROXY, "audit_log") - keys],
		    "%s", aerr.msg);
	admin_line = ps.seen[key_find(KS_PROXY, "admin") - keys];
	cfg->admin_token_line = ps.seen[key_find(KS_PROXY,
	    "admin_token_file") - keys];
	if (admin_is_tcp(cfg->admin) && cfg->admin_token_file == NULL)
		perr_at(&ps, admin_line, "admin on TCP (%s) requires "
		    "admin_token_file", cfg->admin);
	if (cfg->nlisten == 0) {
		if (parse_ipport(DEFAULT_LISTEN, strlen(DEFAULT_LISTEN), 0,
		    &ss, &sslen) == -1)
			perr(&ps, "internal error: default listener");
		else
			add_listen(&ps, EG_LISTEN_TCP, DEFAULT_LISTEN, &ss,
			    sslen, LINE_DEFAULT);
	}
	for (i = 0; i < cfg->nphases; i++)
		if (eg_phase_finish(&cfg->phases[i]) == -1)
			perr_at(&ps, cfg->phases[i].line, "out of memory");
	/* routes: their trust and values; every route:NAME a phase allows */
	for (i = 0; i < cfg->nroutes; i++) {
		char msg[EG_ERR_MSGLEN];
		int rline;

		if (eg_route_finish(&cfg->routes[i], msg, sizeof(msg),
		    &rline) == -1)
			perr_at(&ps, rline, "%s", msg);
	}
	for (i = 0; i < cfg->nphases; i++) {
		const struct eg_phase *ph = &cfg->phases[i];
		size_t j;

		for (j = 0; j < ph->nroutes; j++)
			if (eg_cfg_route(cfg, ph->routes[j],
			    strlen(ph->routes[j])) == NULL)
				perr_at(&ps, ph->route_lines[j], "route '%s' "
				    "does not exist (no [route:%s] section)",
				    ph->routes[j], ph->routes[j]);
	}
	pins_finish(&ps);
	eg_free(ps.pin_line);
	eg_ini_clear(&ps.ini);
	if (ps.nerr != 0) {
		eg_cfg_unref(cfg);
		return NULL;
	}
	return cfg;
}

struct eg_cfg *
eg_cfg_load(const char *path, struct eg_errs *errs)
{
	struct eg_cfg *cfg;
	char *buf = NULL, *nb;
	size_t off = 0, cap = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		eg_errs_add(errs, "%s: cannot open: %s", path,
		    strerror(errno));
		return NULL;
	}
	/*
	 * Read to the end whatever the file is (a pipe such as /dev/stdin
	 * works too), growing the buffer up to CFG_FILE_MAX.
	 */
	for (;;) {
		if (off == cap) {
			if (cap == CFG_FILE_MAX) {
				eg_errs_add(errs, "%s: cannot read: larger "
				    "than %d bytes", path, CFG_FILE_MAX);
				goto fail;
			}
			cap = cap ? cap * 2 : 64 * 1024;
			if (cap > CFG_FILE_MAX)
				cap = CFG_FILE_MAX;
			nb = eg_realloc(buf, cap);
			if (nb == NULL) {
				eg_errs_add(errs, "%s: cannot read: out of "
				    "memory", path);
				goto fail;
			}
			buf = nb;
		}
		n = read(fd, buf + off, cap - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			eg_errs_add(errs, "%s: cannot read: %s", path,
			    strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	cfg = eg_cfg_parse(buf, off, path, errs);
	if (cfg != NULL) {
		/* kept: the audit chain's START names its SHA-256 */
		cfg->src = buf;
		cfg->src_len = off;
	} else
		eg_free(buf);
	return cfg;
fail:
	eg_free(buf);
	close(fd);
	return NULL;
}

struct eg_cfg *
eg_cfg_default(struct eg_errs *errs)
{
	return eg_cfg_parse(eg_cfg_default_text, strlen(eg_cfg_default_text),
	    "(default)", errs);
}

int
eg_cfg_override(struct eg_cfg *cfg, const char *key, const char *value,
    struct eg_err *err)
{
	struct parse ps;
	const struct key *k;
	enum eg_listen_kind kind;
	char q[400];
	int rc;

	memset(&ps, 0, sizeof(ps));
	ps.cfg = cfg;
	ps.fname = cfg->file;
	ps.err = err;
	ps.ini.line = 0;
	if (key == NULL || value == NULL)
		return eg_err_set(err, EINVAL, "command line: missing value");
	k = key_find(KS_PROXY, key);
	if (k == NULL)
		return perr(&ps, "unknown key '%s'", quote(key, strlen(key),
		    q, sizeof(q)));
	if ((k->type == K_LISTEN || k->type == K_UNIX) &&
	    strcmp(value, "none") == 0) {
		/* no listener of this kind (embedders, egressd run) */
		drop_listeners(cfg, k->type == K_LISTEN ? EG_LISTEN_TCP :
		    EG_LISTEN_UNIX);
		return 0;
	}
	if (k->type == K_LISTEN || k->type == K_UNIX) {
		/* Validate first, so a bad value changes nothing. */
		struct parse probe = ps;
		struct eg_cfg tmp;

		memset(&tmp, 0, sizeof(tmp));
		probe.cfg = &tmp;
		rc = key_set(&probe, k, &tmp, value);
		free_listen(tmp.listen);
		eg_free(tmp.listen);
		if (rc == -1)
			return -1;
		kind = k->type == K_LISTEN ? EG_LISTEN_TCP : EG_LISTEN_UNIX;
		drop_listeners(cfg, kind);
	}
	if (strcmp(k->name, "admin_token_file") == 0)
		cfg->admin_token_line = 0;	/* no longer the file's */
	return key_set(&ps, k, cfg, value);
}

int
eg_cfg_check(const struct eg_cfg *cfg, struct eg_errs *errs)
{
	int rc = 0;

	if (cfg->phase == NULL || eg_cfg_phase(cfg, cfg->phase) == NULL)
		rc = eg_errs_add(errs, "%s:0: phase '%s' does not exist",
		    cfg->file, cfg->phase ? cfg->phase : "");
	if (admin_is_tcp(cfg->admin) && cfg->admin_token_file == NULL)
		rc = eg_errs_add(errs, "%s:0: admin on TCP (%s) requires "
		    "admin_token_file", cfg->file, cfg->admin);
	/* the file the TCP admin will read: the same rules, at -t time */
	if (admin_is_tcp(cfg->admin) && cfg->admin_token_file != NULL) {
		char tok[EG_TOKEN_MAX + 1], msg[512];

		if (eg_token_read(cfg->admin_token_file, tok, msg,
		    sizeof(msg)) != NULL)
			rc = eg_errs_add(errs, "%s:%d: admin_token_file %s: "
			    "%s", cfg->file, cfg->admin_token_line,
			    cfg->admin_token_file, msg);
		explicit_bzero(tok, sizeof(tok));
	}
	if (cfg->nlisten == 0)
		rc = eg_errs_add(errs, "%s:0: no listener", cfg->file);
	return rc;
}

void
eg_cfg_ref(struct eg_cfg *cfg)
{
	__atomic_add_fetch(&cfg->refs, 1, __ATOMIC_RELAXED);
}

static void
free_listen(struct eg_listen *l)
{
	if (l != NULL)
		eg_free(l->text);
}

void
eg_cfg_unref(struct eg_cfg *cfg)
{
	size_t i;
	char **s;

	if (cfg == NULL)
		return;
	if (__atomic_sub_fetch(&cfg->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (i = 0; i < cfg->nlisten; i++)
		free_listen(&cfg->listen[i]);
	eg_free(cfg->listen);
	for (i = 0; i < cfg->npins; i++) {
		eg_free(cfg->pins[i].name);
		eg_free(cfg->pins[i].addr);
	}
	eg_free(cfg->pins);
	for (i = 0; i < cfg->nphases; i++)
		eg_phase_clear(&cfg->phases[i]);
	eg_free(cfg->phases);
	for (i = 0; i < cfg->nsessions; i++) {
		size_t j;

		for (j = 0; j < cfg->sessions[i].nlisten; j++)
			free_listen(&cfg->sessions[i].listen[j]);
		eg_free(cfg->sessions[i].listen);
		eg_free(cfg->sessions[i].name);
		eg_free(cfg->sessions[i].phase);
	}
	eg_free(cfg->sessions);
	eg_routes_free(cfg->routes, cfg->nroutes);
	for (i = 0; i < EG_MODULES_MAX; i++)
		if (cfg->mod_cfg_owner[i] != NULL &&
		    cfg->mod_cfg_owner[i]->config_free != NULL)
			cfg->mod_cfg_owner[i]->config_free(cfg->mod_cfg[i]);
	/* [proxy]'s strings, found by the rows that set them */
	for (i = 0; i < NKEYS; i++)
		if (keys[i].sect == KS_PROXY &&
		    (s = key_str(&keys[i], cfg)) != NULL)
			eg_free(*s);
	eg_free(cfg->file);
	eg_free(cfg->src);
	eg_free(cfg->ports);
	eg_free(cfg);
}

const struct eg_phase *
eg_cfg_phase(const struct eg_cfg *cfg, const char *name)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < cfg->nphases; i++)
		if (strcmp(cfg->phases[i].name, name) == 0)
			return &cfg->phases[i];
	return NULL;
}

const struct eg_pin *
eg_cfg_pin(const struct eg_cfg *cfg, const struct eg_host *h)
{
	struct eg_pin key;

	if (h->kind != EG_HOST_NAME || cfg->npins == 0)
		return NULL;
	key.name = (char *)(uintptr_t)h->name;
	return bsearch(&key, cfg->pins, cfg->npins, sizeof(*cfg->pins),
	    pin_cmp);
}

size_t
eg_cfg_known_addrs(const struct eg_cfg *cfg, const struct eg_host *h,
    int report, struct sockaddr_storage *addrs, size_t max, int *trusted)
{
	const struct eg_pin *pin;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&addrs[0];
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&addrs[0];
	size_t n;

	*trusted = 0;
	if (max == 0)
		return 0;
	switch (h->kind) {
	case EG_HOST_V4:
		memset(&addrs[0], 0, sizeof(addrs[0]));
		s4->sin_family = AF_INET;
		s4->sin_addr = h->ip.v4;
		*trusted = !report;
		return 1;
	case EG_HOST_V6:
		memset(&addrs[0], 0, sizeof(addrs[0]));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = h->ip.v6;
		*trusted = !report;
		return 1;
	case EG_HOST_NAME:
		break;
	}
	if ((pin = eg_cfg_pin(cfg, h)) == NULL)
		return 0;
	n = pin->naddr < max ? pin->naddr : max;
	memcpy(addrs, pin->addr, n * sizeof(addrs[0]));
	*trusted = 1;
	return n;
}
