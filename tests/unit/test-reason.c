/*
 * test-reason.c: unit tests for the refusal table and reply (reason.c):
 * the reason phrase carries the body's text, X-Egressd-Reason and the
 * verdict come from the table, and no byte of a hostile body can break
 * the status line or the head.  The refusal table's bodies are checked
 * against the formats conn.c and route.c wrote by hand before it, byte
 * for byte.  Linked without the core: reason.c stands alone.
 */
#include "egress-int.h"

#include "reason.h"
#include "tap.h"

/* Body of rf with a's fields; is it want? */
static int
body_is(enum eg_refusal rf, const struct eg_refusal_arg *a,
    const char *want)
{
	char got[EG_REFUSAL_TEXT];
	size_t n = eg_refusal_body(got, sizeof(got), rf, a);

	if (n == strlen(want) && strcmp(got, want) == 0)
		return 1;
	diag("got  '%s'", got);
	diag("want '%s'", want);
	return 0;
}

/* {target}: host (a C string) and port. */
static void
target(struct eg_refusal_arg *a, const char *host, unsigned port)
{
	a->host = host;
	a->hostlen = strlen(host);
	a->port = port;
}

static void
refusals(void)
{
	struct eg_refusal_arg a;
	char want[1024], buf[EG_REFUSAL_MAX], all[EG_REFUSAL_TEXT];
	size_t i;
	int r, bad;

	memset(&a, 0, sizeof(a));
	target(&a, "github.com", 443);
	a.phase = "agent";
	ok(body_is(EG_RF_NOT_ALLOWED, &a, "egressd: github.com:443 is not "
	    "allowed in phase agent"), "not_allowed without a hint");
	a.hint = "ask the operator";
	ok(body_is(EG_RF_NOT_ALLOWED, &a, "egressd: github.com:443 is not "
	    "allowed in phase agent: ask the operator"),
	    "not_allowed with the phase's hint");
	a.hint = "";
	ok(body_is(EG_RF_NOT_ALLOWED, &a, "egressd: github.com:443 is not "
	    "allowed in phase agent: "), "an empty hint still has its ': '");
	a.hint = NULL;
	a.num = 443;
	snprintf(want, sizeof(want), "egressd: %s:%u is not allowed in phase "
	    "%s (port %u is not allowed for this host)", "github.com", 443,
	    "agent", 443);
	ok(body_is(EG_RF_PORT_NOT_ALLOWED, &a, want), "port_not_allowed");
	a.num = (uint64_t)2 << 30;
	ok(body_is(EG_RF_BUDGET_UP, &a, "egressd: github.com:443 is refused: "
	    "budget_up of phase agent is spent (limit 2G = 2147483648 "
	    "bytes)"), "budget_up, a whole number of G");
	a.num = 1000;
	ok(body_is(EG_RF_BUDGET_DOWN, &a, "egressd: github.com:443 is "
	    "refused: budget_down of phase agent is spent (limit 1000 "
	    "bytes)"), "budget_down, not a whole K");
	a.num = 3072;
	ok(body_is(EG_RF_BUDGET_UP, &a, "egressd: github.com:443 is refused: "
	    "budget_up of phase agent is spent (limit 3K = 3072 bytes)"),
	    "budget_up in K");
	a.num = 2;
	ok(body_is(EG_RF_BUDGET_REQUESTS, &a, "egressd: github.com:443 is "
	    "refused: budget_requests of phase agent is spent (limit 2 "
	    "requests)"), "budget_requests");
	a.why = "NXDOMAIN";
	ok(body_is(EG_RF_DNS_FAILURE, &a, "egressd: github.com:443 does not "
	    "resolve (NXDOMAIN)"), "dns_failure names c-ares's reason");
	a.num = 10;
	ok(body_is(EG_RF_CONNECT_TIMEOUT, &a, "egressd: no connection to "
	    "github.com:443 within 10 s"), "connect_timeout");
	a.session = "job-1";
	ok(body_is(EG_RF_SESSION_CLOSED, &a, "egressd: github.com:443 not "
	    "reached: session job-1 was closed"), "session closed");
	ok(body_is(EG_RF_NOMEM, NULL, "egressd: out of memory"),
	    "no arguments at all");

	/* the head's refusals: " for TARGET" only when there is one */
	memset(&a, 0, sizeof(a));
	ok(body_is(EG_RF_HEAD_TIMEOUT, &a, "egressd: request timed out: "
	    "request headers not received in time"), "408 without a target");
	target(&a, "x.test", 80);
	ok(body_is(EG_RF_HEAD_TIMEOUT, &a, "egressd: request for x.test:80 "
	    "timed out: request headers not received in time"),
	    "408 with a target");
	a.why = "obs-fold header line";
	ok(body_is(EG_RF_REQUEST, &a, "egressd: bad request for x.test:80: "
	    "obs-fold header line"), "the parser's why");
	target(&a, "a b\x01\xff", 0);
	ok(body_is(EG_RF_HEAD_MALFORMED, &a, "egressd: bad request for "
	    "a\\x20b\\x01\\xff: malformed request head"),
	    "a raw target: bytes but visible ASCII as \\xHH");
	ok(eg_refusal_tab[EG_RF_HEAD_TOO_LARGE].status == 431 &&
	    eg_refusal_tab[EG_RF_HEAD_TOO_MANY].status == 431 &&
	    eg_refusal_tab[EG_RF_ROUTE_BODY].status == 413,
	    "431 and 413 rows");

	/* routes */
	memset(&a, 0, sizeof(a));
	a.route = "anthropic";
	a.method = "DELETE";
	a.path = "/v1/messages";
	a.num = 1024;
	ok(body_is(EG_RF_ROUTE_NOT_ALLOWED, &a, "egressd: DELETE /v1/messages "
	    "is not allowed by route anthropic"), "route_not_allowed");
	ok(body_is(EG_RF_ROUTE_BODY, &a, "egressd: the request body is over "
	    "route anthropic's max_request_bytes (1024)") &&
	    body_is(EG_RF_ROUTE_BODY_CHUNKED, &a, "egressd: request body is "
	    "over route anthropic's max_request_bytes (1024)"),
	    "the two 413 bodies (as route.c wrote them)");
	ok(body_is(EG_RF_ROUTE_NO_SLASH, &a, "egressd: bad request for route "
	    "anthropic: the route name must be followed by '/'"),
	    "route without a slash");

	/* every row: a known reason, every field known, a whole reply */
	memset(&a, 0, sizeof(a));
	target(&a, "h", 1);
	a.phase = a.hint = a.why = a.route = a.method = a.path = a.session =
	    "v";
	for (i = 0, bad = 0; i < EG_RF_COUNT; i++) {
		eg_refusal_body(all, sizeof(all), (enum eg_refusal)i, &a);
		if (eg_refusal_tab[i].reason <= EG_R_NONE ||
		    eg_refusal_tab[i].reason >= EG_R_COUNT ||
		    strncmp(all, "egressd: ", 9) != 0 ||
		    strchr(all, '{') != NULL || strchr(all, '}') != NULL ||
		    strchr(all, '|') != NULL) {
			diag("row %zu: '%s'", i, all);
			bad++;
		}
		eg_refusal_write(buf, sizeof(buf), (enum eg_refusal)i, &a);
		if (strstr(buf, all) == NULL)
			bad++;
	}
	ok(bad == 0, "every refusal row renders all its fields (%zu rows)",
	    (size_t)EG_RF_COUNT);
	eg_refusal_write(buf, sizeof(buf), EG_RF_HEAD_TOO_MANY, NULL);
	ok(strncmp(buf, "HTTP/1.1 431 Request Header Fields Too Large "
	    "(egressd: bad request: too many request headers)\r\n", 93) == 0 &&
	    strstr(buf, "X-Egressd-Reason: bad_request\r\n") != NULL,
	    "eg_refusal_write: the row's status, reason and body");
	eg_refusal_write(buf, sizeof(buf), EG_RF_SHUTDOWN, NULL);
	ok(strstr(buf, "X-Egressd-Verdict: FAIL\r\n") != NULL,
	    "shutdown: FAIL");
	{
		char tiny[16];

		memset(tiny, 'Z', sizeof(tiny));
		i = eg_refusal_body(tiny, 10, EG_RF_TOO_MANY, NULL);
		ok(i == 9 && strcmp(tiny, "egressd: ") == 0 &&
		    tiny[10] == 'Z', "a body too long for its buffer is cut");
	}

	/* names and meanings, for egressctl */
	for (r = EG_R_NONE + 1, bad = 0; r < EG_R_COUNT; r++)
		if (eg_reason_by_name(eg_reason_name[r]) != (enum eg_reason)r ||
		    eg_reason_text((enum eg_reason)r)[0] == '\0' ||
		    strchr(eg_reason_text((enum eg_reason)r), '\n') != NULL)
			bad++;
	ok(bad == 0, "every reason: found by its name, a one-line meaning");
	ok(eg_reason_by_name("-") == EG_R_COUNT &&
	    eg_reason_by_name(NULL) == EG_R_COUNT &&
	    eg_reason_by_name("not_allowe") == EG_R_COUNT &&
	    eg_reason_by_name("NOT_ALLOWED") == EG_R_COUNT,
	    "'-', NULL, a prefix and another case are no reason");
	ok(strcmp(eg_reason_text(EG_R_NOT_ALLOWED), "host not in the "
	    "phase's allowlist") == 0 && strcmp(eg_reason_text(EG_R_COUNT),
	    "unknown reason") == 0, "eg_reason_text: SPEC's words; out of "
	    "range is unknown");
}

int
main(void)
{
	char buf[EG_REFUSAL_MAX], small[256], big[4000];
	const char *eol;
	size_t n, i;

	n = eg_refusal_reply(buf, sizeof(buf), EG_R_NOT_ALLOWED, 0,
	    "egressd: github.com:443 is not allowed in phase agent");
	ok(n == strlen(buf), "the length returned is the reply's");
	ok(strncmp(buf, "HTTP/1.1 403 Forbidden (egressd: github.com:443 is "
	    "not allowed in phase agent)\r\n", 73) == 0,
	    "the status line: standard phrase, then the body's text");
	ok(strstr(buf, "\r\nX-Egressd-Verdict: BLOCK\r\n") != NULL &&
	    strstr(buf, "\r\nX-Egressd-Reason: not_allowed\r\n") != NULL &&
	    strstr(buf, "\r\nContent-Type: text/plain\r\nConnection: close"
	    "\r\n") != NULL, "verdict, reason, type and close headers");
	{
		static const char tail[] = "\r\n\r\negressd: github.com:443 "
		    "is not allowed in phase agent\n";

		ok(n > sizeof(tail) - 1 && strcmp(buf + n - (sizeof(tail) -
		    1), tail) == 0, "the body is the text, one line");
	}

	eg_refusal_reply(buf, sizeof(buf), EG_R_CONNECT_TIMEOUT, 0, "t");
	ok(strncmp(buf, "HTTP/1.1 504 Gateway Timeout (t)\r\n", 34) == 0 &&
	    strstr(buf, "X-Egressd-Verdict: FAIL\r\n") != NULL,
	    "connect_timeout: 504, FAIL");
	eg_refusal_reply(buf, sizeof(buf), EG_R_BUDGET, 0, "b");
	ok(strncmp(buf, "HTTP/1.1 429 Too Many Requests (b)\r\n", 36) == 0 &&
	    strstr(buf, "X-Egressd-Reason: budget\r\n") != NULL,
	    "budget: 429 Too Many Requests");
	eg_refusal_reply(buf, sizeof(buf), EG_R_BAD_REQUEST, 431, "h");
	ok(strncmp(buf, "HTTP/1.1 431 Request Header Fields Too Large (h)"
	    "\r\n", 50) == 0, "an explicit status wins over the table's");

	/* hostile text: CR, LF, NUL-free control bytes, high bytes */
	eg_refusal_reply(buf, sizeof(buf), EG_R_BAD_REQUEST, 0,
	    "egressd: x\r\nSet-Cookie: a=b\x01\x7f\xff");
	eol = strstr(buf, "\r\n");
	ok(eol != NULL && strncmp(buf, "HTTP/1.1 400 Bad Request (egressd: "
	    "x?" "?Set-Cookie: a=b?" "?" "?)", (size_t)(eol - buf)) == 0,
	    "CR, LF, control and high bytes become '?' in the phrase");
	ok(strstr(buf, "\r\nSet-Cookie") == NULL, "no header can be injected");
	for (i = 0; buf[i] != '\0'; i++)
		if ((unsigned char)buf[i] >= 0x7f || ((unsigned char)buf[i] <
		    0x20 && buf[i] != '\r' && buf[i] != '\n'))
			break;
	ok(buf[i] == '\0', "the reply is ASCII text");

	/* a body too long for the buffer is cut, never overflows */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = eg_refusal_reply(small, sizeof(small), EG_R_NOT_ALLOWED, 0, big);
	ok(n < sizeof(small) && strncmp(small, "HTTP/1.1 403 Forbidden",
	    22) == 0, "a long body in a small buffer: cut, %zu bytes", n);
	n = eg_refusal_reply(buf, sizeof(buf), EG_R_NOT_ALLOWED, 0, big);
	ok(n < sizeof(buf) && strstr(buf, "\r\n\r\n") != NULL &&
	    buf[n - 1] == '\n', "a long body: the whole head and a cut body");
	{
		char tiny[40];

		memset(tiny, 'Z', sizeof(tiny));
		n = eg_refusal_reply(tiny, 32, EG_R_NOT_ALLOWED, 0, big);
		ok(n < 32 && tiny[n] == '\0' && tiny[32] == 'Z',
		    "a buffer under 256 bytes: a cut status line, nothing "
		    "written past it (%zu)", n);
	}
	eg_refusal_reply(buf, sizeof(buf), EG_R_COUNT, 0, "");
	ok(strncmp(buf, "HTTP/1.1 500 Error\r\n", 20) == 0,
	    "an out-of-range reason, no body: 500 without a phrase suffix");
	ok(strcmp(eg_reason_name[EG_R_TLS_TO_PROXY], "tls_to_proxy") == 0 &&
	    strcmp(eg_reason_tab[EG_R_BUDGET].name, "budget") == 0,
	    "names: tls_to_proxy, budget");
	refusals();
	return done_testing();
}
