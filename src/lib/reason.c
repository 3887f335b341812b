/*
 * reason.c: the reason and refusal tables and the functions that write
 * what egressd answers when it refuses (reason.h).  Nothing here but the
 * C library: egressctl compiles this file in without the core.
 */
#include "egress-int.h"

#include <stdio.h>
#include <string.h>

#include "reason.h"

/*
 * One row per reason: the enum, its audit name, status, FAIL or BLOCK,
 * and what it means (SPEC's outcome tables).
 */
#define REASONS(X)							\
	X(EG_R_NONE,		 "-",			0,   0,		\
	    "unknown reason")						\
	X(EG_R_NOT_ALLOWED,	 "not_allowed",		403, 0,		\
	    "host not in the phase's allowlist")			\
	X(EG_R_PORT_NOT_ALLOWED, "port_not_allowed",	403, 0,		\
	    "port not allowed for that host")				\
	X(EG_R_PRIVATE_ADDRESS,	 "private_address",	403, 0,		\
	    "every address non-public")					\
	X(EG_R_BAD_REQUEST,	 "bad_request",		400, 0,		\
	    "malformed request or host")				\
	X(EG_R_TIMEOUT,		 "timeout",		408, 0,		\
	    "headers not complete within header_timeout")		\
	X(EG_R_DNS_FAILURE,	 "dns_failure",		502, 1,		\
	    "name does not resolve")					\
	X(EG_R_CONNECT_FAILED,	 "connect_failed",	502, 1,		\
	    "connection refused / unreachable")				\
	X(EG_R_CONNECT_TIMEOUT,	 "connect_timeout",	504, 1,		\
	    "no connection within connect_timeout")			\
	X(EG_R_TOO_MANY,	 "too_many_connections", 503, 0,	\
	    "max_connections reached")					\
	X(EG_R_LOOP,		 "loop",		403, 0,		\
	    "the target is one of egressd's own listening addresses")	\
	X(EG_R_SHUTDOWN,	 "shutdown",		503, 1,		\
	    "egressd shut down or the session was closed first")	\
	X(EG_R_AUDIT_FAILED,	 "audit_failed",	503, 0,		\
	    "the audit log cannot be written")				\
	X(EG_R_BUDGET,		 "budget",		429, 0,		\
	    "a budget of the phase is spent")				\
	X(EG_R_TLS_TO_PROXY,	 "tls_to_proxy",	400, 0,		\
	    "the client spoke TLS to the proxy (an https:// proxy URL)") \
	X(EG_R_NO_ROUTE,	 "no_route",		404, 0,		\
	    "no route of that name")					\
	X(EG_R_ROUTE_NOT_ALLOWED, "route_not_allowed",	403, 0,		\
	    "method or path not allowed by the route")			\
	X(EG_R_TLS_FAILED,	 "tls_failed",		502, 1,		\
	    "upstream certificate not trusted or wrong name")

#define R_ROW(e, n, st, f, t)	[e] = { n, st, f, t },
#define R_NAME(e, n, st, f, t)	[e] = n,
#define R_ONE(e, n, st, f, t)	+ 1

const struct eg_reason_info eg_reason_tab[EG_R_COUNT] = { REASONS(R_ROW) };
const char *const eg_reason_name[EG_R_COUNT] = { REASONS(R_NAME) };

_Static_assert(0 REASONS(R_ONE) == EG_R_COUNT, "a reason without its row");

/*
 * The wording bodies share.  Every body begins "egressd: " (SPEC "Proxy
 * behaviour": it names the target as host:port and the reason).
 */
#define E(text)		"egressd: " text
#define BAD(why)	E("bad request{ for |target}: " why)
#define TIMED_OUT(why)	E("request{ for |target} timed out: " why)
#define RELAY		"relay header: "
#define OWN		"egressd's own relay"
#define IN_PHASE(more)	E("{target} is not allowed in phase {phase}" more)
#define SPENT(b)	E("{target} is refused: " b " of phase {phase} is " \
			"spent (limit {bytes} bytes)")
#define SPENT_REQ(b)	E("{target} is refused: " b " of phase {phase} is " \
			"spent (limit {num} requests)")
#define AUDIT(who)	E(who " is refused: the audit log is failing")
#define ROUTE_BAD(why)	E("bad request for route {route}: " why)
#define OVER_MAX(what)	E(what " is over route {route}'s max_request_bytes " \
			"({num})")

/*
 * One row per way of refusing: the enum, its reason, its status (0: the
 * reason's), its body (fields: reason.h).
 */
#define REFUSALS(X)							\
	X(EG_RF_HEAD_TIMEOUT, EG_R_TIMEOUT, 0,				\
	    TIMED_OUT("request headers not received in time"))		\
	X(EG_RF_HEAD_MALFORMED, EG_R_BAD_REQUEST, 0,			\
	    BAD("malformed request head"))				\
	X(EG_RF_HEAD_INCOMPLETE, EG_R_BAD_REQUEST, 0,			\
	    BAD("incomplete request head"))				\
	X(EG_RF_HEAD_TOO_LARGE, EG_R_BAD_REQUEST, 431,			\
	    BAD("request headers too large"))				\
	X(EG_RF_HEAD_TOO_MANY, EG_R_BAD_REQUEST, 431,			\
	    BAD("too many request headers"))				\
	X(EG_RF_REQUEST, EG_R_BAD_REQUEST, 0,				\
	    BAD("{why}"))						\
	X(EG_RF_REQUEST_MALFORMED, EG_R_BAD_REQUEST, 0,			\
	    BAD("malformed request"))					\
	X(EG_RF_PLAIN_DISABLED, EG_R_BAD_REQUEST, 0,			\
	    BAD("plain HTTP forwarding is disabled"))			\
	X(EG_RF_PROXY_HEADER, EG_R_BAD_REQUEST, 0,			\
	    BAD("a PROXY protocol header is accepted only from " OWN))	\
	X(EG_RF_RELAY, EG_R_BAD_REQUEST, 0,				\
	    BAD("{why}"))						\
	X(EG_RF_RELAY_NOMEM, EG_R_BAD_REQUEST, 0,			\
	    BAD("egressd relay: out of memory"))			\
	X(EG_RF_RELAY_INCOMPLETE, EG_R_BAD_REQUEST, 0,			\
	    BAD("incomplete relay header"))				\
	X(EG_RF_RELAY_ANCILLARY, EG_R_BAD_REQUEST, 0,			\
	    BAD(RELAY "unexpected ancillary data"))			\
	X(EG_RF_RELAY_NO_SOCKET, EG_R_BAD_REQUEST, 0,			\
	    BAD(RELAY "no client socket passed"))			\
	X(EG_RF_RELAY_NOT_TCP, EG_R_BAD_REQUEST, 0,			\
	    BAD(RELAY "the socket passed is not TCP"))			\
	X(EG_RF_NOT_ALLOWED, EG_R_NOT_ALLOWED, 0,			\
	    IN_PHASE("{: |hint}"))					\
	X(EG_RF_PORT_NOT_ALLOWED, EG_R_PORT_NOT_ALLOWED, 0,		\
	    IN_PHASE(" (port {num} is not allowed for this host)"))	\
	X(EG_RF_BUDGET_UP, EG_R_BUDGET, 0,				\
	    SPENT("budget_up"))						\
	X(EG_RF_BUDGET_DOWN, EG_R_BUDGET, 0,				\
	    SPENT("budget_down"))					\
	X(EG_RF_BUDGET_REQUESTS, EG_R_BUDGET, 0,			\
	    SPENT_REQ("budget_requests"))				\
	X(EG_RF_AUDIT_FAILED, EG_R_AUDIT_FAILED, 0,			\
	    AUDIT("{target}"))						\
	X(EG_RF_DNS_FAILURE, EG_R_DNS_FAILURE, 0,			\
	    E("{target} does not resolve ({why})"))			\
	X(EG_RF_CONNECT_TIMEOUT, EG_R_CONNECT_TIMEOUT, 0,		\
	    E("no connection to {target} within {num} s"))		\
	X(EG_RF_PRIVATE_ADDRESS, EG_R_PRIVATE_ADDRESS, 0,		\
	    E("{target} resolves only to non-public addresses"))	\
	X(EG_RF_LOOP, EG_R_LOOP, 0,					\
	    E("{target} is egressd itself"))				\
	X(EG_RF_CONNECT_FAILED, EG_R_CONNECT_FAILED, 0,			\
	    E("cannot connect to {target}"))				\
	X(EG_RF_NOMEM, EG_R_TOO_MANY, 0,				\
	    E("out of memory"))						\
	X(EG_RF_TOO_MANY, EG_R_TOO_MANY, 0,				\
	    E("too many connections"))					\
	X(EG_RF_TOO_MANY_CLIENT, EG_R_TOO_MANY, 0,			\
	    E("too many connections from this client"))			\
	X(EG_RF_SESSION_CLOSED, EG_R_SHUTDOWN, 0,			\
	    E("{target} not reached: session {session} was closed"))	\
	X(EG_RF_SHUTDOWN, EG_R_SHUTDOWN, 0,				\
	    E("{target} not reached: egressd is shutting down"))	\
	X(EG_RF_NO_ROUTE, EG_R_NO_ROUTE, 0,				\
	    E("no route {route}"))					\
	X(EG_RF_ROUTE_BAD, EG_R_BAD_REQUEST, 0,				\
	    ROUTE_BAD("{why}"))						\
	X(EG_RF_ROUTE_NO_SLASH, EG_R_BAD_REQUEST, 0,			\
	    ROUTE_BAD("the route name must be followed by '/'"))	\
	X(EG_RF_ROUTE_PHASE, EG_R_NOT_ALLOWED, 0,			\
	    E("route {route} is not allowed in phase {phase}"))		\
	X(EG_RF_ROUTE_NOT_ALLOWED, EG_R_ROUTE_NOT_ALLOWED, 0,		\
	    E("{method} {path} is not allowed by route {route}"))	\
	X(EG_RF_ROUTE_BODY, EG_R_BAD_REQUEST, 413,			\
	    OVER_MAX("the request body"))				\
	X(EG_RF_ROUTE_BODY_CHUNKED, EG_R_BAD_REQUEST, 413,		\
	    OVER_MAX("request body"))					\
	X(EG_RF_ROUTE_AUDIT_FAILED, EG_R_AUDIT_FAILED, 0,		\
	    AUDIT("route {route}"))					\
	X(EG_RF_TLS_FAILED, EG_R_TLS_FAILED, 0,				\
	    E("TLS to {target} failed: {why}"))				\
	X(EG_RF_TLS_CONNECT_FAILED, EG_R_CONNECT_FAILED, 0,		\
	    E("TLS to {target} failed: {why}"))				\
	X(EG_RF_UPSTREAM_CLOSED, EG_R_CONNECT_FAILED, 0,		\
	    E("{target} closed the connection before answering"))

#define RF_ROW(e, r, st, b)	[e] = { r, st, b },
#define RF_ONE(e, r, st, b)	+ 1

const struct eg_refusal_info eg_refusal_tab[EG_RF_COUNT] = {
	REFUSALS(RF_ROW)
};

_Static_assert(0 REFUSALS(RF_ONE) == EG_RF_COUNT,
    "a refusal without its row");

enum eg_reason
eg_reason_by_name(const char *name)
{
	int r;

	if (name == NULL)
		return EG_R_COUNT;
	for (r = EG_R_NONE + 1; r < EG_R_COUNT; r++)
		if (strcmp(name, eg_reason_tab[r].name) == 0)
			return (enum eg_reason)r;
	return EG_R_COUNT;
}

const char *
eg_reason_text(enum eg_reason r)
{
	if ((unsigned)r >= EG_R_COUNT)
		r = EG_R_NONE;
	return eg_reason_tab[r].text;
}

const char *
eg_status_text(int status)
{
	static const struct { int code; const char *text; } st[] = {
		{ 400, "Bad Request" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 408, "Request Timeout" },
		{ 413, "Content Too Large" },
		{ 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 502, "Bad Gateway" }, { 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" }
	};
	size_t i;

	for (i = 0; i < nitems(st); i++)
		if (st[i].code == status)
			return st[i].text;
	return "Error";
}

/* --- bodies ---------------------------------------------------------------- */

/* Output into a fixed buffer: what does not fit is dropped. */
struct out {
	char	*p;
	size_t	 len, n;	/* n < len: p[n] is the NUL */
};

static void
out_add(struct out *o, const char *s, size_t n)
{
	size_t room = o->len - 1 - o->n;

	if (n > room)
		n = room;
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = '\0';
}

#define TARGET_MAX	(253 + 64)	/* EG_HOST_MAX and its escapes */

/* {target} into buf (TARGET_MAX bytes); its length. */
static size_t
target_text(const struct eg_refusal_arg *a, char *buf)
{
	const uint8_t *p = (const uint8_t *)a->host;
	size_t i, o = 0;
	int n;

	buf[0] = '\0';
	if (a->host == NULL || a->hostlen == 0)
		return 0;
	if (a->port != 0) {
		n = snprintf(buf, TARGET_MAX, "%s:%u", a->host, a->port);
		return n < 0 ? 0 : (size_t)n < TARGET_MAX ? (size_t)n :
		    TARGET_MAX - 1;
	}
	for (i = 0; i < a->hostlen && o + 5 <= TARGET_MAX; i++) {
		if (p[i] > 0x20 && p[i] < 0x7f)
			buf[o++] = (char)p[i];
		else
			o += (size_t)snprintf(buf + o, TARGET_MAX - o,
			    "\\x%02x", p[i]);
	}
	buf[o] = '\0';
	return o;
}

/* {bytes}: "2G = 2147483648" for a whole number of K, M or G, else N. */
static void
bytes_text(uint64_t v, char *buf, size_t len)
{
	static const char unit[] = "GMK";
	unsigned i;

	for (i = 0; i < 3 && v != 0; i++) {
		uint64_t u = (uint64_t)1 << (10 * (3 - i));

		if (v % u == 0) {
			snprintf(buf, len, "%llu%c = %llu",
			    (unsigned long long)(v / u), unit[i],
			    (unsigned long long)v);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* The value of the field named f (n bytes), NULL if it has none (an
 * empty target has none). */
static const char *
field(const struct eg_refusal_arg *a, const char *f, size_t n,
    char *tmp)
{
	static const struct {
		const char	*name;
		size_t		 off;
	} str[] = {
		{ "phase",	offsetof(struct eg_refusal_arg, phase) },
		{ "hint",	offsetof(struct eg_refusal_arg, hint) },
		{ "why",	offsetof(struct eg_refusal_arg, why) },
		{ "route",	offsetof(struct eg_refusal_arg, route) },
		{ "method",	offsetof(struct eg_refusal_arg, method) },
		{ "path",	offsetof(struct eg_refusal_arg, path) },
		{ "session",	offsetof(struct eg_refusal_arg, session) }
	};
	size_t i;

#define IS(s)	(n == sizeof(s) - 1 && memcmp(f, s, n) == 0)
	if (IS("target"))
		return target_text(a, tmp) > 0 ? tmp : NULL;
	if (IS("num")) {
		snprintf(tmp, TARGET_MAX, "%llu", (unsigned long long)a->num);
		return tmp;
	}
	if (IS("bytes")) {
		bytes_text(a->num, tmp, TARGET_MAX);
		return tmp;
	}
	for (i = 0; i < nitems(str); i++)
		if (strlen(str[i].name) == n &&
		    memcmp(f, str[i].name, n) == 0)
			return *(const char *const *)(const void *)
			    ((const char *)a + str[i].off);
#undef IS
	return NULL;
}

size_t
eg_refusal_body(char *buf, size_t len, enum eg_refusal rf,
    const struct eg_refusal_arg *a)
{
	static const struct eg_refusal_arg none;
	struct out o = { buf, len, 0 };
	char tmp[TARGET_MAX];
	const char *s, *e, *bar, *v;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	if ((unsigned)rf >= EG_RF_COUNT)
		return 0;
	if (a == NULL)
		a = &none;
	for (s = eg_refusal_tab[rf].body; *s != '\0'; s = e) {
		if (*s != '{' || (e = strchr(s, '}')) == NULL) {
			/* text, up to the next field */
			if ((e = strchr(s + 1, '{')) == NULL)
				e = s + strlen(s);
			out_add(&o, s, (size_t)(e - s));
			continue;
		}
		/* {field} or {prefix|field} */
		bar = memchr(s + 1, '|', (size_t)(e - s - 1));
		v = bar != NULL ? field(a, bar + 1, (size_t)(e - bar - 1),
		    tmp) : field(a, s + 1, (size_t)(e - s - 1), tmp);
		if (v != NULL) {
			if (bar != NULL)
				out_add(&o, s + 1, (size_t)(bar - s - 1));
			out_add(&o, v, strlen(v));
		}
		e++;
	}
	return o.n;
}

size_t
eg_refusal_write(char *buf, size_t len, enum eg_refusal rf,
    const struct eg_refusal_arg *a)
{
	char text[EG_REFUSAL_TEXT];

	if ((unsigned)rf >= EG_RF_COUNT)
		return eg_refusal_reply(buf, len, EG_R_NONE, 0, NULL);
	eg_refusal_body(text, sizeof(text), rf, a);
	return eg_refusal_reply(buf, len, eg_refusal_tab[rf].reason,
	    eg_refusal_tab[rf].status, text);
}

size_t
eg_refusal_reply(char *buf, size_t len, enum eg_reason r, int status,
    const char *body)
{
	const struct eg_reason_info *ri;
	char text[EG_REFUSAL_TEXT];
	size_t n, cap = len > 256 ? (len - 256) / 2 : 0;
	int m;

	if ((unsigned)r >= EG_R_COUNT)
		r = EG_R_NONE;
	ri = &eg_reason_tab[r];
	if (status == 0)
		status = ri->status ? ri->status : 500;
	/* the text: one line of visible ASCII and spaces, the same in the
	 * phrase and the body; kept short enough for both and the headers */
	for (n = 0; body != NULL && body[n] != '\0' && n < sizeof(text) - 1 &&
	    n < cap; n++) {
		unsigned char ch = (unsigned char)body[n];

		text[n] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	text[n] = '\0';
	m = snprintf(buf, len, "HTTP/1.1 %d %s%s%s%s\r\n"
	    "Content-Type: text/plain\r\nConnection: close\r\n"
	    "X-Egressd-Verdict: %s\r\nX-Egressd-Reason: %s\r\n"
	    "Content-Length: %zu\r\n\r\n%s\n",
	    status, eg_status_text(status), n ? " (" : "", text, n ? ")" : "",
	    ri->fail ? "FAIL" : "BLOCK", ri->name, n + 1, text);
	if (m < 0 || (size_t)m >= len) {
		/* only when len < 256 (the cut above leaves room otherwise) */
		m = snprintf(buf, len, "HTTP/1.1 %d %s\r\nConnection: close"
		    "\r\nContent-Length: 0\r\n\r\n", status,
		    eg_status_text(status));
		if (m < 0)
			return 0;
		if ((size_t)m >= len)
			m = (int)len - 1;
	}
	return (size_t)m;
}
