/*
 * reason.c: the refusal table and the one function that writes what
 * egressd answers when it refuses (reason.h).
 */
#include "egress-int.h"

#include <stdio.h>
#include <string.h>

#include "reason.h"

/* One row per reason: the enum, its audit name, status, FAIL or BLOCK. */
#define REASONS(X)							\
	X(EG_R_NONE,		 "-",			0,   0)		\
	X(EG_R_NOT_ALLOWED,	 "not_allowed",		403, 0)		\
	X(EG_R_PORT_NOT_ALLOWED, "port_not_allowed",	403, 0)		\
	X(EG_R_PRIVATE_ADDRESS,	 "private_address",	403, 0)		\
	X(EG_R_BAD_REQUEST,	 "bad_request",		400, 0)		\
	X(EG_R_TIMEOUT,		 "timeout",		408, 0)		\
	X(EG_R_DNS_FAILURE,	 "dns_failure",		502, 1)		\
	X(EG_R_CONNECT_FAILED,	 "connect_failed",	502, 1)		\
	X(EG_R_CONNECT_TIMEOUT,	 "connect_timeout",	504, 1)		\
	X(EG_R_TOO_MANY,	 "too_many_connections", 503, 0)		\
	X(EG_R_LOOP,		 "loop",		403, 0)		\
	X(EG_R_SHUTDOWN,	 "shutdown",		503, 1)		\
	X(EG_R_AUDIT_FAILED,	 "audit_failed",	503, 0)		\
	X(EG_R_BUDGET,		 "budget",		429, 0)		\
	X(EG_R_TLS_TO_PROXY,	 "tls_to_proxy",	400, 0)		\
	X(EG_R_NO_ROUTE,	 "no_route",		404, 0)		\
	X(EG_R_ROUTE_NOT_ALLOWED, "route_not_allowed",	403, 0)		\
	X(EG_R_TLS_FAILED,	 "tls_failed",		502, 1)

#define R_ROW(e, n, st, f)	[e] = { n, st, f },
#define R_NAME(e, n, st, f)	[e] = n,
#define R_ONE(e, n, st, f)	+ 1

const struct eg_reason_info eg_reason_tab[EG_R_COUNT] = { REASONS(R_ROW) };
const char *const eg_reason_name[EG_R_COUNT] = { REASONS(R_NAME) };

_Static_assert(0 REASONS(R_ONE) == EG_R_COUNT, "a reason without its row");


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

size_t
eg_refusal_reply(char *buf, size_t len, enum eg_reason r, int status,
    const char *body)
{
	const struct eg_reason_info *ri;
	char text[1024];
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
