/*
 * test-reason.c: unit tests for the refusal table and reply (reason.c):
 * the reason phrase carries the body's text, X-Egressd-Reason and the
 * verdict come from the table, and no byte of a hostile body can break
 * the status line or the head.
 */
#include "egress-int.h"

#include "reason.h"
#include "tap.h"

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
	return done_testing();
}
