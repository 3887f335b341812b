/*
 * reason.h: what egressd answers itself when it refuses a request, in two
 * tables.  The reason table says, per audit reason, its name in the log,
 * its usual status code, its verdict (BLOCK or FAIL) and what it means in
 * one line; the refusal table says, per way of refusing (there are several
 * per reason: a 431 and a relay header are both bad_request), its reason,
 * its status and its body's format.  eg_refusal_write() writes the whole
 * reply (SPEC "Proxy behaviour": the status line's reason phrase carries
 * the body's text, X-Egressd-Verdict, X-Egressd-Reason, a one-line
 * text/plain body).  CONNECT, plain HTTP and routes all refuse through it;
 * a change of wording is one edit to the table in reason.c.
 *
 * This file and reason.c stand alone: they use nothing but the C library
 * (no proxy, no logger, no allocation), so a program without the core
 * (egressctl) can compile reason.c in and name a reason the way the proxy
 * does: eg_reason_by_name() for a name read from an audit line,
 * eg_reason_text() for what it means.
 */
#ifndef EG_REASON_H
#define EG_REASON_H

#include <stddef.h>
#include <stdint.h>

#define EG_REFUSAL_MAX	3072	/* a reply eg_refusal_reply() writes */
#define EG_REFUSAL_TEXT	1024	/* a body eg_refusal_body() writes */
#define EG_HINT_MAX	256	/* bytes of a phase's hint */

/* The audit log's reason= of a BLOCK or FAIL line. */
enum eg_reason {
	EG_R_NONE,
	EG_R_NOT_ALLOWED,
	EG_R_PORT_NOT_ALLOWED,
	EG_R_PRIVATE_ADDRESS,
	EG_R_BAD_REQUEST,
	EG_R_TIMEOUT,
	EG_R_DNS_FAILURE,
	EG_R_CONNECT_FAILED,
	EG_R_CONNECT_TIMEOUT,
	EG_R_TOO_MANY,
	EG_R_LOOP,
	EG_R_SHUTDOWN,
	EG_R_AUDIT_FAILED,	/* the ALLOW line could not be written */
	EG_R_BUDGET,		/* a budget of the phase is spent */
	EG_R_TLS_TO_PROXY,	/* a TLS ClientHello instead of a request */
	EG_R_NO_ROUTE,		/* routes (route.c): no route of that name */
	EG_R_ROUTE_NOT_ALLOWED,	/* ... method or path not allowed by it */
	EG_R_TLS_FAILED,	/* ... upstream certificate refused */
	EG_R_COUNT		/* (how many; not a reason) */
};

struct eg_reason_info {
	const char	*name;		/* the audit log's reason= */
	int		 status;	/* the usual status code */
	int		 fail;		/* verdict FAIL, else BLOCK */
	const char	*text;		/* what it means, one line (SPEC) */
};

extern const struct eg_reason_info eg_reason_tab[EG_R_COUNT];
extern const char *const eg_reason_name[EG_R_COUNT];

/*
 * The reason whose audit name is name ("not_allowed"), or EG_R_COUNT when
 * none is (NULL, "-" and unknown names included: "-" is no reason).
 */
enum eg_reason	 eg_reason_by_name(const char *name);

/*
 * What reason r means, one line of plain ASCII without a final period,
 * the same words as SPEC's outcome tables ("host not in the phase's
 * allowlist"); "unknown reason" for EG_R_NONE or out of range.  For a
 * person reading an audit line: egressctl's and the admin API's messages
 * about a reason say it with this.
 */
const char	*eg_reason_text(enum eg_reason r);

/* The standard reason phrase of a status code ("Error" if unknown). */
const char	*eg_status_text(int status);

/*
 * The ways egressd refuses, one row each in reason.c's REFUSALS table:
 * the reason, the status, the body's format.
 */
enum eg_refusal {
	/* the request head, before any decision: bad_request, timeout */
	EG_RF_HEAD_TIMEOUT,	/* 408: header_timeout ran out */
	EG_RF_HEAD_MALFORMED,	/* the head's grammar */
	EG_RF_HEAD_INCOMPLETE,	/* the client stopped mid-head */
	EG_RF_HEAD_TOO_LARGE,	/* 431: over max_header_bytes */
	EG_RF_HEAD_TOO_MANY,	/* 431: too many header fields */
	EG_RF_REQUEST,		/* the parser's why */
	EG_RF_REQUEST_MALFORMED, /* ... when it gave none */
	EG_RF_PLAIN_DISABLED,	/* plain_http = no */
	EG_RF_PROXY_HEADER,	/* a PROXY header not from our relay */
	EG_RF_RELAY,		/* egressd's relay: the header parser's why */
	EG_RF_RELAY_NOMEM,
	EG_RF_RELAY_INCOMPLETE,
	EG_RF_RELAY_ANCILLARY,
	EG_RF_RELAY_NO_SOCKET,
	EG_RF_RELAY_NOT_TCP,
	/* the decision */
	EG_RF_NOT_ALLOWED,	/* with the phase's hint, if it has one */
	EG_RF_PORT_NOT_ALLOWED,
	EG_RF_BUDGET_UP,	/* num: the limit in bytes */
	EG_RF_BUDGET_DOWN,
	EG_RF_BUDGET_REQUESTS,
	EG_RF_AUDIT_FAILED,
	/* resolving and connecting */
	EG_RF_DNS_FAILURE,	/* why: c-ares's reason */
	EG_RF_CONNECT_TIMEOUT,	/* num: connect_timeout in seconds */
	EG_RF_PRIVATE_ADDRESS,
	EG_RF_LOOP,
	EG_RF_CONNECT_FAILED,
	/* the proxy's own state: too_many_connections, shutdown */
	EG_RF_NOMEM,
	EG_RF_TOO_MANY,
	EG_RF_TOO_MANY_CLIENT,
	EG_RF_SESSION_CLOSED,	/* session: its name */
	EG_RF_SHUTDOWN,
	/* routes (route.c) */
	EG_RF_NO_ROUTE,
	EG_RF_ROUTE_BAD,	/* why: what is wrong with the path */
	EG_RF_ROUTE_NO_SLASH,
	EG_RF_ROUTE_PHASE,	/* the phase does not allow the route */
	EG_RF_ROUTE_NOT_ALLOWED, /* method and path */
	EG_RF_ROUTE_BODY,	/* num: max_request_bytes */
	EG_RF_ROUTE_BODY_CHUNKED, /* ... found while forwarding chunks */
	EG_RF_ROUTE_AUDIT_FAILED,
	EG_RF_TLS_FAILED,	/* why: the TLS library's; tls_failed */
	EG_RF_TLS_CONNECT_FAILED, /* ... the same words, connect_failed */
	EG_RF_UPSTREAM_CLOSED,	/* the upstream hung up before answering */
	EG_RF_COUNT		/* (how many; not a refusal) */
};

struct eg_refusal_info {
	enum eg_reason	 reason;
	int		 status;
	/*
	 * The body: text with fields in braces.  "{phase}" is the field's
	 * value (nothing when it is NULL); "{ for |target}" is " for "
	 * then the value, or nothing at all when there is none (NULL, or
	 * an empty target).
	 */
	const char	*body;
};

extern const struct eg_refusal_info eg_refusal_tab[EG_RF_COUNT];

/*
 * The values a body's fields take; what a row does not name is not
 * read, so zero what you do not set.
 */
struct eg_refusal_arg {
	/*
	 * {target}: "host:port", or with port 0 the raw request-target of
	 * a head that could not be parsed (hostlen bytes, any byte but
	 * visible ASCII as \xHH), or nothing when hostlen is 0.
	 */
	const char	*host;
	size_t		 hostlen;
	unsigned	 port;
	const char	*phase, *hint, *why, *route, *method, *path, *session;
	uint64_t	 num;		/* {num}: decimal; {bytes}: "2G = N" */
};

/*
 * The body of refusal rf into buf (len bytes, NUL-terminated, cut to
 * fit; EG_REFUSAL_TEXT always holds it).  Returns its length.
 */
size_t		 eg_refusal_body(char *buf, size_t len, enum eg_refusal rf,
		    const struct eg_refusal_arg *a);

/*
 * The whole reply of refusal rf into buf (len bytes; EG_REFUSAL_MAX
 * holds it): eg_refusal_reply() with the row's reason, status and body.
 * Returns the reply's length.
 */
size_t		 eg_refusal_write(char *buf, size_t len, enum eg_refusal rf,
		    const struct eg_refusal_arg *a);

/*
 * Write the refusal for reason r into buf (len bytes; 256 or more for
 * the text to fit):
 * status (0: the reason's usual one), its standard phrase followed by
 * " (BODY)", the headers, and BODY as a line.  Any byte of body that
 * is not visible ASCII or a space is written as '?', so neither the
 * phrase nor the body can hold CR, LF or another control byte; a body
 * too long for buf is cut.  Returns the reply's length.
 */
size_t		 eg_refusal_reply(char *buf, size_t len, enum eg_reason r,
		    int status, const char *body);

#endif
