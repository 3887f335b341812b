/*
 * test-reqparse.c: the request and response head grammar, the
 * hop-by-hop rewriting for plain HTTP forwarding, and chunked framing,
 * with the hostile inputs (smuggling, folding, bare LF, bad targets) that
 * must be refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reqparse.h"
#include "tap.h"

static const char *const rname[] = { "OK", "AGAIN", "BAD", "TOOBIG" };

/* The pipeline the proxy runs: scan for the end of head, then parse. */
static enum eg_parse
run_req(const char *s, size_t len, struct eg_req *req, const char **why)
{
	size_t scan = 0, hl = 0;
	enum eg_parse r;

	*why = NULL;
	r = eg_head_scan((const uint8_t *)s, len, &scan, &hl);
	if (r != EG_PARSE_OK) {
		if (r == EG_PARSE_BAD)
			*why = "(scan)";
		return r;
	}
	return eg_req_parse((const uint8_t *)s, hl, req, why);
}

static struct eg_req R;

/* Expect result want for request s; print the reason on mismatch. */
static void
req(const char *s, enum eg_parse want, const char *desc)
{
	const char *why;
	enum eg_parse r;

	r = run_req(s, strlen(s), &R, &why);
	ok(r == want, "req %s: %s", rname[want], desc);
	if (r != want)
		diag("got %s (%s)", rname[r], why ? why : "-");
}

static enum eg_parse
run_resp(const char *s, struct eg_resp *resp, const char **why)
{
	size_t scan = 0, hl = 0;
	enum eg_parse r;

	*why = NULL;
	r = eg_head_scan((const uint8_t *)s, strlen(s), &scan, &hl);
	if (r != EG_PARSE_OK)
		return r;
	return eg_resp_parse((const uint8_t *)s, hl, resp, why);
}

static struct eg_resp P;

static void
resp(const char *s, enum eg_parse want, const char *desc)
{
	const char *why;
	enum eg_parse r;

	r = run_resp(s, &P, &why);
	ok(r == want, "resp %s: %s", rname[want], desc);
	if (r != want)
		diag("got %s (%s)", rname[r], why ? why : "-");
}

/* Feed s to a fresh chunk parser in one go. */
static ssize_t
chunk1(const char *s, size_t len, int *done)
{
	struct eg_chunk ck;

	eg_chunk_init(&ck);
	return eg_chunk_feed(&ck, (const uint8_t *)s, len, done);
}

/* Feed s one byte at a time; return the body length or -1. */
static ssize_t
chunk_bytewise(const char *s, size_t len, int *done)
{
	struct eg_chunk ck;
	size_t i;
	ssize_t n;

	eg_chunk_init(&ck);
	*done = 0;
	for (i = 0; i < len; i++) {
		n = eg_chunk_feed(&ck, (const uint8_t *)s + i, 1, done);
		if (n < 0)
			return -1;
		if (*done)
			return (ssize_t)i + n;
	}
	return (ssize_t)len;
}

static void
chunk_ok(const char *s, size_t body, const char *desc)
{
	ssize_t n;
	int done;

	n = chunk1(s, strlen(s), &done);
	ok(n == (ssize_t)body && done, "chunked ends at %zu: %s", body, desc);
	if (n != (ssize_t)body || !done)
		diag("got %zd done=%d", n, done);
	n = chunk_bytewise(s, strlen(s), &done);
	ok(n == (ssize_t)body && done, "bytewise same: %s", desc);
}

static void
chunk_bad(const char *s, const char *desc)
{
	ssize_t n;
	int done;

	n = chunk1(s, strlen(s), &done);
	ok(n == -1, "chunked bad: %s", desc);
	n = chunk_bytewise(s, strlen(s), &done);
	ok(n == -1, "bytewise bad: %s", desc);
}

static int
has(const char *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle), i;

	for (i = 0; i + k <= n; i++)
		if (strncasecmp(hay + i, needle, k) == 0)
			return 1;
	return 0;
}

static void
test_scan(void)
{
	const char *h = "CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:443\r\n\r\n"
	    "extra";
	size_t scan = 0, hl = 0, i;
	enum eg_parse r = EG_PARSE_AGAIN;

	/* Byte by byte: never done early, done exactly at CRLFCRLF. */
	for (i = 1; i <= strlen(h); i++) {
		r = eg_head_scan((const uint8_t *)h, i, &scan, &hl);
		if (r != EG_PARSE_AGAIN)
			break;
	}
	is_int(r, EG_PARSE_OK, "scan: resumable byte by byte");
	is_int(hl, strlen(h) - 5, "scan: head_len excludes what follows");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)h, 20, &scan, &hl),
	    EG_PARSE_AGAIN, "scan: partial head is AGAIN");
	is_int(scan, 20, "scan: resumes where it stopped");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET\n\n", 5, &scan, &hl),
	    EG_PARSE_BAD, "scan: bare LF");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET x\r\nA: b\n\r\n\r\n", 16,
	    &scan, &hl), EG_PARSE_BAD, "scan: bare LF in a header");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET\rX\r\n\r\n", 9, &scan, &hl),
	    EG_PARSE_BAD, "scan: lone CR");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET\0 x\r\n\r\n", 10, &scan,
	    &hl), EG_PARSE_BAD, "scan: NUL");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET \x01\r\n\r\n", 9, &scan,
	    &hl), EG_PARSE_BAD, "scan: control byte");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET x\r\nA: \x7f\r\n\r\n", 15,
	    &scan, &hl), EG_PARSE_BAD, "scan: DEL");
	scan = 0;
	is_int(eg_head_scan((const uint8_t *)"GET x\r", 6, &scan, &hl),
	    EG_PARSE_AGAIN, "scan: CR at the end waits for LF");
	is_int(eg_head_scan((const uint8_t *)"GET x\rQ", 7, &scan, &hl),
	    EG_PARSE_BAD, "scan: ... and refuses a non-LF after it");
}

static void
test_connect(void)
{
	const char *why;

	req("CONNECT example.com:443 HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "CONNECT without headers");
	ok(R.form == EG_REQ_CONNECT && R.port == 443 &&
	    strcmp(R.host.name, "example.com") == 0 && R.minor == 1 &&
	    strcmp(R.method, "CONNECT") == 0 && !R.close,
	    "CONNECT fields");
	req("CONNECT API.Example.COM.:8443 HTTP/1.0\r\n"
	    "Host: api.example.com:8443\r\nUser-Agent: t\r\n\r\n",
	    EG_PARSE_OK, "CONNECT normalised, HTTP/1.0");
	ok(strcmp(R.host.name, "api.example.com") == 0 && R.port == 8443 &&
	    R.minor == 0 && R.close && R.nhdr == 2, "CONNECT 1.0 fields");
	ok(R.head_len == strlen("CONNECT API.Example.COM.:8443 HTTP/1.0\r\n"
	    "Host: api.example.com:8443\r\nUser-Agent: t\r\n\r\n"),
	    "head_len");
	req("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "CONNECT IPv6");
	ok(R.host.kind == EG_HOST_V6 && strcmp(R.host.name, "[::1]") == 0,
	    "CONNECT IPv6 host");
	req("CONNECT 127.0.0.1:3128 HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "CONNECT IPv4");
	req("CONNECT http://x/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT absolute URI");
	req("CONNECT a@host:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT userinfo");
	req("CONNECT host:443/path HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT path");
	req("CONNECT host:443?q HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT query");
	req("CONNECT host:443#f HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT fragment");
	req("CONNECT ho%73t:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT percent-encoding");
	req("CONNECT host HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT without port");
	req("CONNECT host:0443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT port 0443");
	req("CONNECT host:0 HTTP/1.1\r\n\r\n", EG_PARSE_BAD, "CONNECT port 0");
	req("CONNECT host:65536 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT port 65536");
	req("CONNECT host:443abc HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT port 443abc");
	req("CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT decimal IPv4");
	req("CONNECT 0x7f.1:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT hex IPv4");
	req("CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT zone id");
	req("CONNECT ::1:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "CONNECT unbracketed IPv6");
	req("connect host:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "lower-case method");
	req("Connect host:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "mixed-case method");
	req("CONNECT  host:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "two spaces after method");
	req("CONNECT host:443  HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "two spaces before version");
	req("CONNECT\thost:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "tab as separator");
	req("CONNECT host:443 HTTP/1.1 \r\n\r\n", EG_PARSE_BAD,
	    "space after version");
	req("CONNECT host:443 HTTP/2.0\r\n\r\n", EG_PARSE_BAD, "HTTP/2.0");
	req("CONNECT host:443 HTTP/1.2\r\n\r\n", EG_PARSE_BAD, "HTTP/1.2");
	req("CONNECT host:443 http/1.1\r\n\r\n", EG_PARSE_BAD,
	    "lower-case version");
	req("CONNECT host:443\r\n\r\n", EG_PARSE_BAD, "HTTP/0.9 style");
	req("CONNECT host:443 HTTP/1.1\r\n", EG_PARSE_AGAIN,
	    "no empty line yet");
	req("\r\n\r\n", EG_PARSE_BAD, "empty request line");
	req("CONNECT h\xc3\xa9.com:443 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "non-ASCII host");
	req("CONNECTCONNECTCONNECTCONNECT host:443 HTTP/1.1\r\n\r\n",
	    EG_PARSE_BAD, "method too long");
	ok(eg_req_parse((const uint8_t *)"CONNECT a:1 HTTP/1.1\n\r\n", 23,
	    &R, &why) == EG_PARSE_BAD, "parser alone refuses bare LF");
	ok(eg_req_parse((const uint8_t *)"CONNECT a:1 HTTP/1.1\r\n", 22,
	    &R, &why) == EG_PARSE_BAD, "parser alone refuses a cut head");
}

static void
test_headers(void)
{
	char big[8192];
	size_t off, i;

	req("CONNECT h:443 HTTP/1.1\r\nA: b\r\n c\r\n\r\n", EG_PARSE_BAD,
	    "obs-fold (SP)");
	req("CONNECT h:443 HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", EG_PARSE_BAD,
	    "obs-fold (HT)");
	req("CONNECT h:443 HTTP/1.1\r\n A: b\r\n\r\n", EG_PARSE_BAD,
	    "first header starts with SP");
	req("CONNECT h:443 HTTP/1.1\r\nA : b\r\n\r\n", EG_PARSE_BAD,
	    "space before colon");
	req("CONNECT h:443 HTTP/1.1\r\nA\t: b\r\n\r\n", EG_PARSE_BAD,
	    "tab before colon");
	req("CONNECT h:443 HTTP/1.1\r\n: b\r\n\r\n", EG_PARSE_BAD,
	    "empty header name");
	req("CONNECT h:443 HTTP/1.1\r\nA(b): c\r\n\r\n", EG_PARSE_BAD,
	    "separator in header name");
	req("CONNECT h:443 HTTP/1.1\r\nNoColon\r\n\r\n", EG_PARSE_BAD,
	    "header without colon");
	req("CONNECT h:443 HTTP/1.1\r\nA: b\x01" "c\r\n\r\n", EG_PARSE_BAD,
	    "control byte in value");
	req("CONNECT h:443 HTTP/1.1\r\nA: b\x7f\r\n\r\n", EG_PARSE_BAD,
	    "DEL in value");
	req("CONNECT h:443 HTTP/1.1\r\nA: b\rc\r\n\r\n", EG_PARSE_BAD,
	    "CR in value");
	ok(eg_req_parse((const uint8_t *)
	    "CONNECT h:443 HTTP/1.1\r\nA: b\0c\r\n\r\n", 33, &R, NULL) ==
	    EG_PARSE_BAD, "NUL in value (parser alone)");
	ok(eg_req_parse((const uint8_t *)
	    "CONNECT h:443 HTTP/1.1\r\nA: b\x7f" "c\r\n\r\n", 33, &R, NULL) ==
	    EG_PARSE_BAD, "DEL in value (parser alone)");
	req("CONNECT h:443 HTTP/1.1\r\nA:  \tb c\t \r\nB:\r\n"
	    "C: caf\xc3\xa9\r\n\r\n", EG_PARSE_OK,
	    "OWS trimmed, empty value, obs-text");
	ok(R.nhdr == 3 && R.hdr[0].value_len == 3 &&
	    R.hdr[1].value_len == 0 && R.hdr[2].value_len == 5,
	    "value offsets trimmed");

	/* EG_MAX_HEADERS lines are fine; one more is 431. */
	off = (size_t)snprintf(big, sizeof(big), "CONNECT h:443 HTTP/1.1\r\n");
	for (i = 0; i < EG_MAX_HEADERS; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off,
		    "X-%zu: v\r\n", i);
	snprintf(big + off, sizeof(big) - off, "\r\n");
	req(big, EG_PARSE_OK, "EG_MAX_HEADERS headers");
	is_int(R.nhdr, EG_MAX_HEADERS, "all headers recorded");
	snprintf(big + off, sizeof(big) - off, "X-last: v\r\n\r\n");
	req(big, EG_PARSE_TOOBIG, "EG_MAX_HEADERS + 1 headers");

	req("CONNECT h:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	    EG_PARSE_BAD, "two Host headers");
	req("CONNECT h:443 HTTP/1.1\r\nHost: other:443\r\n\r\n", EG_PARSE_OK,
	    "CONNECT: Host header not compared");
	req("CONNECT h:443 HTTP/1.1\r\nConnection: close\r\n\r\n",
	    EG_PARSE_OK, "Connection: close");
	ok(R.close, "close set");
	req("CONNECT h:443 HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\n\r\n",
	    EG_PARSE_OK, "Connection: list with close");
	ok(R.close, "close token found in a list");
	req("CONNECT h:443 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	    EG_PARSE_OK, "HTTP/1.0 keep-alive");
	ok(!R.close, "1.0 with keep-alive stays open");
	req("CONNECT h:443 HTTP/1.0\r\n\r\n", EG_PARSE_OK, "HTTP/1.0");
	ok(R.close, "1.0 without keep-alive closes");
	req("CONNECT h:443 HTTP/1.1\r\nConnection: a b\r\n\r\n",
	    EG_PARSE_BAD, "Connection value not a token list");
	req("CONNECT h:443 HTTP/1.1\r\nConnection: Host\r\n\r\n",
	    EG_PARSE_BAD, "CONNECT: Connection names Host");
}

/*
 * Connection may not name a header egressd frames or routes by: the
 * hop-by-hop filter would drop it, and the origin would read the body
 * as a request egressd never decided.
 */
static void
test_conn_framing(void)
{
	enum eg_parse r;
	const char *why;
	const char *s;

	req("POST http://h/ HTTP/1.1\r\nConnection: content-length\r\n"
	    "Content-Length: 5\r\n\r\n", EG_PARSE_BAD,
	    "Connection: content-length");
	s = "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Connection: Content-Length\r\n\r\n";
	r = run_req(s, strlen(s), &R, &why);
	ok(r == EG_PARSE_BAD && why != NULL &&
	    strstr(why, "Content-Length") != NULL,
	    "the reason names Content-Length");
	if (why != NULL)
		diag("reason: %s", why);
	req("POST http://h/ HTTP/1.1\r\nConnection: close, CONTENT-LENGTH\r\n"
	    "Content-Length: 5\r\n\r\n", EG_PARSE_BAD,
	    "Connection list naming Content-Length, upper case");
	req("POST http://h/ HTTP/1.1\r\nConnection: transfer-encoding\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", EG_PARSE_BAD,
	    "Connection: transfer-encoding");
	req("GET http://h/ HTTP/1.1\r\nHost: h\r\nConnection: host\r\n\r\n",
	    EG_PARSE_BAD, "Connection: host");
	req("GET http://h/ HTTP/1.1\r\nConnection: keep-alive\r\n"
	    "Connection: , Host ,\r\n\r\n", EG_PARSE_BAD,
	    "second Connection line naming Host, with OWS and empty elements");
	req("GET http://h/ HTTP/1.1\r\nConnection: content-length\r\n\r\n",
	    EG_PARSE_BAD, "Connection names Content-Length that is absent");
	req("GET http://h/ HTTP/1.1\r\nConnection: content-lengthx, x-host,"
	    " host-x\r\n\r\n", EG_PARSE_OK,
	    "names that only look like framing headers are fine");
	req("GET http://h/ HTTP/1.1\r\nConnection: keep-alive, x-a, te, "
	    "proxy-authorization\r\n\r\n", EG_PARSE_OK,
	    "other names are fine");
	resp("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "Connection: content-length\r\n\r\n", EG_PARSE_BAD,
	    "a response naming Content-Length in Connection");
	resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Connection: Transfer-Encoding\r\n\r\n", EG_PARSE_BAD,
	    "a response naming Transfer-Encoding in Connection");
}

/* Content_Length / Transfer_Encoding: a next hop that reads '_' as '-'
 * would frame the body by them; refused, not forwarded (issue 21, 13). */
static void
test_underscore_framing(void)
{
	enum eg_parse r;
	const char *why;
	const char *s;

	req("POST http://h/ HTTP/1.1\r\nContent_Length: 5\r\n\r\n",
	    EG_PARSE_BAD, "Content_Length");
	req("POST http://h/ HTTP/1.1\r\nTransfer_Encoding: chunked\r\n\r\n",
	    EG_PARSE_BAD, "Transfer_Encoding");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
	    "transfer_encoding: chunked\r\n\r\n", EG_PARSE_BAD,
	    "transfer_encoding, lower case, beside a Content-Length");
	req("POST http://h/ HTTP/1.1\r\nTRANSFER-ENCODING: chunked\r\n"
	    "CONTENT_LENGTH: 0\r\n\r\n", EG_PARSE_BAD,
	    "CONTENT_LENGTH beside a chunked body");
	req("GET http://h/ HTTP/1.1\r\nTransfer_encoding: x\r\n\r\n",
	    EG_PARSE_BAD, "Transfer_encoding on a GET");
	req("CONNECT h:443 HTTP/1.1\r\nContent_Length: 5\r\n\r\n",
	    EG_PARSE_BAD, "Content_Length on a CONNECT");
	s = "POST http://h/ HTTP/1.1\r\nTransfer_Encoding: chunked\r\n\r\n";
	r = run_req(s, strlen(s), &R, &why);
	ok(r == EG_PARSE_BAD && why != NULL &&
	    strstr(why, "Transfer_Encoding") != NULL,
	    "the reason names Transfer_Encoding");
	if (why != NULL)
		diag("reason: %s", why);
	req("GET http://h/ HTTP/1.1\r\nContent_Lengthx: 5\r\n"
	    "X_Content_Length: 5\r\nContent__Length: 1\r\n"
	    "Content_Type: a\r\n\r\n", EG_PARSE_OK,
	    "other names with underscores are fine");
	resp("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "Content_Length: 3\r\n\r\n", EG_PARSE_OK,
	    "a response's Content_Length is the client's business");
}

static void
test_absolute(void)
{
	char out[1024];
	const char *s;
	ssize_t n;

	s = "GET http://Example.COM/a/b?c=d HTTP/1.1\r\n"
	    "Host: example.com\r\nAccept: */*\r\n\r\n";
	req(s, EG_PARSE_OK, "absolute form");
	ok(R.form == EG_REQ_ABSOLUTE && R.port == 80 &&
	    strcmp(R.host.name, "example.com") == 0 &&
	    R.path_len == 8 && memcmp(s + R.path_off, "/a/b?c=d", 8) == 0 &&
	    R.content_length == -1 && !R.chunked && !R.close,
	    "absolute fields");
	s = "GET http://example.com HTTP/1.1\r\n\r\n";
	req(s, EG_PARSE_OK, "empty path");
	ok(R.path_len == 1 && s[R.path_off] == '/', "empty path is /");
	req("GET HTTP://example.com:8080/ HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "scheme case-insensitive, port");
	is_int(R.port, 8080, "port 8080");
	req("GET http://[::1]:8080/x HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "IPv6 URL");
	ok(strcmp(R.host.name, "[::1]") == 0 && R.port == 8080,
	    "IPv6 URL fields");
	req("GET http://[::1]/ HTTP/1.1\r\nHost: [::1]\r\n\r\n", EG_PARSE_OK,
	    "IPv6 URL with matching Host");
	req("POST http://example.com/%7Efoo HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "percent-encoding in path");
	req("M-SEARCH http://h/ HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "token method");
	req("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", EG_PARSE_BAD,
	    "origin-form");
	req("GET * HTTP/1.1\r\n\r\n", EG_PARSE_BAD, "asterisk form");
	req("GET example.com:80 HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "authority form with GET");
	req("GET https://example.com/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "https absolute form");
	req("GET ftp://example.com/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "ftp scheme");
	req("GET http:/example.com/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "one slash");
	req("GET http://u:p@example.com/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "userinfo");
	req("GET http://example.com/#frag HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "fragment");
	req("GET http://example.com/ HTTP/1.1\r\n\r\n", EG_PARSE_OK,
	    "baseline");
	req("GET http://ex%61mple.com/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "percent-encoded host");
	req("GET http://example.com?q HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "query without path");
	req("GET http:// HTTP/1.1\r\n\r\n", EG_PARSE_BAD, "empty host");
	req("GET http://:80/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "empty host with port");
	req("GET http://example.com:/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "empty port");
	req("GET http://example.com:0/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "port 0");
	req("GET http://example.com:080/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "port 080");
	req("GET http://127.1/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "short IPv4");
	req("GET http://::1/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "unbracketed IPv6");
	req("GET http://[::1]x/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "junk after IPv6");
	req("GET http://ex\xc3\xa9.com/ HTTP/1.1\r\n\r\n", EG_PARSE_BAD,
	    "raw UTF-8 in URL");

	/* Host header against the URL. */
	req("GET http://example.com/ HTTP/1.1\r\nHost: EXAMPLE.com.\r\n\r\n",
	    EG_PARSE_OK, "Host equal after normalisation");
	req("GET http://example.com/ HTTP/1.1\r\nHost: example.com:80\r\n\r\n",
	    EG_PARSE_OK, "Host with default port");
	req("GET http://example.com:8080/ HTTP/1.1\r\n"
	    "Host: example.com:8080\r\n\r\n", EG_PARSE_OK, "Host with port");
	/* the URL decides (RFC 9112 3.2.2): a valid Host that differs is
	 * replaced by the URL's authority, not refused */
	s = "GET http://example.com/ HTTP/1.1\r\nHost: evil.com\r\n"
	    "Accept: */*\r\n\r\n";
	req(s, EG_PARSE_OK, "Host differs: the URL decides");
	ok(strcmp(R.host.name, "example.com") == 0 && R.port == 80,
	    "Host differs: target is the URL's");
	n = eg_req_origin_head((const uint8_t *)s, &R, 0, out, sizeof(out));
	ok(n > 0 && has(out, (size_t)n, "\r\nHost: example.com\r\n") &&
	    !has(out, (size_t)n, "evil"),
	    "Host differs: forwarded Host is the URL's, the client's is gone");
	s = "GET http://evil.com:8080/ HTTP/1.1\r\nHost: example.com\r\n\r\n";
	req(s, EG_PARSE_OK, "Host differs the other way");
	ok(strcmp(R.host.name, "evil.com") == 0 && R.port == 8080,
	    "the URL's host and port, not Host's");
	n = eg_req_origin_head((const uint8_t *)s, &R, 0, out, sizeof(out));
	ok(n > 0 && has(out, (size_t)n, "\r\nHost: evil.com:8080\r\n") &&
	    !has(out, (size_t)n, "example.com"),
	    "forwarded Host: evil.com:8080, one Host only");
	req("GET http://example.com/ HTTP/1.1\r\nHost: example.com:81\r\n\r\n",
	    EG_PARSE_OK, "Host port differs: replaced");
	req("GET http://example.com:8080/ HTTP/1.1\r\n"
	    "Host: example.com\r\n\r\n",
	    EG_PARSE_OK, "Host lacks the URL's port: replaced");
	/* but it must still be one valid Host (RFC 9112 3.2) */
	req("GET http://example.com/ HTTP/1.1\r\nHost: \r\n\r\n",
	    EG_PARSE_BAD, "empty Host");
	req("GET http://example.com/ HTTP/1.1\r\nHost: 127.1\r\n\r\n",
	    EG_PARSE_BAD, "Host with a short IPv4 spelling");
	req("GET http://example.com/ HTTP/1.1\r\nHost: example.com:x\r\n"
	    "\r\n", EG_PARSE_BAD, "Host with a bad port");
	req("GET http://example.com/ HTTP/1.1\r\nHost: u@example.com\r\n\r\n",
	    EG_PARSE_BAD, "Host with userinfo");
	req("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n"
	    "Host: example.com\r\n\r\n", EG_PARSE_BAD, "two equal Hosts");

	/* Framing: the smuggling cases. */
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
	    EG_PARSE_OK, "Content-Length");
	is_int(R.content_length, 5, "content_length 5");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	    EG_PARSE_OK, "Content-Length 0");
	is_int(R.content_length, 0, "content_length 0");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: "
	    "9223372036854775807\r\n\r\n", EG_PARSE_OK, "INT64_MAX");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: "
	    "9223372036854775808\r\n\r\n", EG_PARSE_BAD, "INT64_MAX + 1");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: "
	    "99999999999999999999999\r\n\r\n", EG_PARSE_BAD, "huge CL");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Content-Length: 5\r\n\r\n", EG_PARSE_BAD, "duplicate CL, same");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
	    "content-length: 6\r\n\r\n", EG_PARSE_BAD, "duplicate CL");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
	    EG_PARSE_BAD, "CL list");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
	    EG_PARSE_BAD, "CL sign");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
	    EG_PARSE_BAD, "CL negative");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
	    EG_PARSE_BAD, "CL hex");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n",
	    EG_PARSE_BAD, "CL with inner space");
	req("POST http://h/ HTTP/1.1\r\nContent-Length:\r\n\r\n",
	    EG_PARSE_BAD, "CL empty");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	    EG_PARSE_OK, "chunked");
	ok(R.chunked && R.content_length == -1, "chunked set");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: ChUnKeD\r\n\r\n",
	    EG_PARSE_OK, "chunked, any case");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 5\r\n\r\n", EG_PARSE_BAD, "TE and CL");
	req("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", EG_PARSE_BAD, "CL and TE");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked, chunked"
	    "\r\n\r\n", EG_PARSE_BAD, "TE list chunked, chunked");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked"
	    "\r\n\r\n", EG_PARSE_BAD, "TE gzip, chunked");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", EG_PARSE_BAD, "two TE lines");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n",
	    EG_PARSE_BAD, "xchunked");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked x\r\n\r\n",
	    EG_PARSE_BAD, "chunked with trailing garbage");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked;q=1\r\n"
	    "\r\n", EG_PARSE_BAD, "chunked with parameter");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n",
	    EG_PARSE_BAD, "identity");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n",
	    EG_PARSE_BAD, "empty TE");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n",
	    EG_PARSE_BAD, "TE with space before colon");
	req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked \r\n\r\n",
	    EG_PARSE_OK, "trailing OWS is trimmed, not garbage");

	/* Origin-form rewriting. */
	s = "GET http://example.com:8080/p?q HTTP/1.1\r\n"
	    "Host: example.com:8080\r\n"
	    "Proxy-Authorization: Basic eA==\r\n"
	    "Proxy-Connection: keep-alive\r\n"
	    "Connection: X-Secret, keep-alive\r\n"
	    "X-Secret: 1\r\n"
	    "Keep-Alive: timeout=5\r\n"
	    "TE: trailers\r\n"
	    "Trailer: X-T\r\n"
	    "Upgrade: websocket\r\n"
	    "Accept: */*\r\n"
	    "X-Proxy-Keep: yes\r\n\r\n";
	req(s, EG_PARSE_OK, "request with hop-by-hop headers");
	n = eg_req_origin_head((const uint8_t *)s, &R, 1, out, sizeof(out));
	ok(n > 0, "origin head written");
	if (n < 0)
		n = 0;
	ok((size_t)n > 33 && memcmp(out, "GET /p?q HTTP/1.1\r\n", 19) == 0,
	    "origin-form request line");
	ok(has(out, (size_t)n, "\r\nHost: example.com:8080\r\n"), "Host kept");
	ok(has(out, (size_t)n, "\r\nAccept: */*\r\n"), "Accept kept");
	ok(has(out, (size_t)n, "\r\nX-Proxy-Keep: yes\r\n"),
	    "X-Proxy-Keep kept");
	ok(!has(out, (size_t)n, "Proxy-Authorization"), "Proxy-* removed");
	ok(!has(out, (size_t)n, "Proxy-Connection"),
	    "Proxy-Connection removed");
	ok(!has(out, (size_t)n, "X-Secret"), "Connection-named removed");
	ok(!has(out, (size_t)n, "Keep-Alive: timeout"), "Keep-Alive removed");
	ok(!has(out, (size_t)n, "\nTE:"), "TE removed");
	ok(!has(out, (size_t)n, "Trailer"), "Trailer removed");
	ok(!has(out, (size_t)n, "Upgrade"), "Upgrade removed");
	ok(has(out, (size_t)n, "\r\nConnection: keep-alive\r\n\r\n") &&
	    out[n - 1] == '\n', "our Connection header ends the head");
	ok(eg_req_origin_head((const uint8_t *)s, &R, 1, out, 40) == -1,
	    "short buffer: -1");
	n = eg_req_origin_head((const uint8_t *)s, &R, 0, out, sizeof(out));
	ok(n > 0 && has(out, (size_t)n, "Connection: close\r\n\r\n"),
	    "close requested");

	s = "GET http://example.com HTTP/1.0\r\nAccept: x\r\n\r\n";
	req(s, EG_PARSE_OK, "1.0 request without Host");
	n = eg_req_origin_head((const uint8_t *)s, &R, 0, out, sizeof(out));
	ok(n > 0 && memcmp(out, "GET / HTTP/1.0\r\nHost: example.com\r\n",
	    35) == 0, "Host added from URL, path /");
	s = "GET http://[::1]:81/ HTTP/1.1\r\n\r\n";
	req(s, EG_PARSE_OK, "IPv6 without Host");
	n = eg_req_origin_head((const uint8_t *)s, &R, 1, out, sizeof(out));
	ok(n > 0 && has(out, (size_t)n, "\r\nHost: [::1]:81\r\n"),
	    "Host [::1]:81 added");
}

static void
test_resp(void)
{
	char out[512];
	const char *s;
	ssize_t n;

	resp("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", EG_PARSE_OK,
	    "200 with CL");
	ok(P.status == 200 && P.minor == 1 && P.content_length == 3 &&
	    !P.chunked && !P.close && !P.nobody, "200 fields");
	resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    EG_PARSE_OK, "200 chunked");
	ok(P.chunked && !P.close, "chunked response");
	resp("HTTP/1.1 200 OK\r\n\r\n", EG_PARSE_OK, "200 until close");
	ok(P.close, "no length: the connection ends the body");
	resp("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", EG_PARSE_OK,
	    "1.0");
	ok(P.close, "1.0 without keep-alive closes");
	resp("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n"
	    "Connection: keep-alive\r\n\r\n", EG_PARSE_OK, "1.0 keep-alive");
	ok(!P.close, "1.0 with keep-alive stays");
	resp("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n"
	    "\r\n", EG_PARSE_OK, "Connection: close");
	ok(P.close, "close");
	resp("HTTP/1.1 204 No Content\r\n\r\n", EG_PARSE_OK, "204");
	ok(P.nobody && !P.close, "204 has no body");
	resp("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
	    EG_PARSE_OK, "304");
	ok(P.nobody, "304 has no body");
	resp("HTTP/1.1 100 Continue\r\n\r\n", EG_PARSE_OK, "100");
	ok(P.nobody, "1xx has no body");
	resp("HTTP/1.1 599 X\r\nContent-Length: 0\r\n\r\n", EG_PARSE_OK,
	    "599");
	resp("HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n", EG_PARSE_OK,
	    "empty reason");
	resp("HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", EG_PARSE_OK,
	    "no reason at all");
	resp("HTTP/1.1 099 X\r\n\r\n", EG_PARSE_BAD, "status 99");
	resp("HTTP/1.1 600 X\r\n\r\n", EG_PARSE_BAD, "status 600");
	resp("HTTP/1.1 20 X\r\n\r\n", EG_PARSE_BAD, "two-digit status");
	resp("HTTP/1.1 2000 X\r\n\r\n", EG_PARSE_BAD, "four-digit status");
	resp("HTTP/1.1  200 X\r\n\r\n", EG_PARSE_BAD, "two spaces");
	resp("HTTP/2 200 X\r\n\r\n", EG_PARSE_BAD, "HTTP/2");
	resp("HTTP/1.1 200 O\x01K\r\n\r\n", EG_PARSE_BAD, "control in reason");
	resp("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
	    "\r\n", EG_PARSE_BAD, "duplicate CL");
	resp("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", EG_PARSE_BAD, "CL and TE");
	resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	    EG_PARSE_BAD, "TE list");
	resp("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", EG_PARSE_BAD,
	    "obs-fold");
	resp("HTTP/1.1 200 OK\r\nA : b\r\n\r\n", EG_PARSE_BAD,
	    "space before colon");
	resp("HTTP/1.1 200 OK\nA: b\r\n\r\n", EG_PARSE_BAD, "bare LF");

	s = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: X-Hop\r\n"
	    "X-Hop: 1\r\nKeep-Alive: timeout=1\r\nProxy-Authenticate: B\r\n"
	    "Upgrade: h2c\r\nServer: t\r\n\r\nhi";
	resp(s, EG_PARSE_OK, "response with hop-by-hop headers");
	n = eg_resp_head((const uint8_t *)s, &P, 1, out, sizeof(out));
	ok(n > 0 && memcmp(out, "HTTP/1.1 200 OK\r\n", 17) == 0,
	    "status line copied");
	if (n < 0)
		n = 0;
	ok(has(out, (size_t)n, "Content-Length: 2\r\n") &&
	    has(out, (size_t)n, "Server: t\r\n"), "end-to-end kept");
	ok(!has(out, (size_t)n, "X-Hop") &&
	    !has(out, (size_t)n, "Keep-Alive:") &&
	    !has(out, (size_t)n, "Proxy-") && !has(out, (size_t)n, "Upgrade"),
	    "hop-by-hop removed");
	ok(has(out, (size_t)n, "\r\nConnection: keep-alive\r\n\r\n"),
	    "Connection: keep-alive added");
	ok(eg_resp_head((const uint8_t *)s, &P, 1, out, 10) == -1,
	    "short buffer: -1");
}

static void
test_chunk(void)
{
	char big[5000];
	struct eg_chunk ck;
	ssize_t n;
	int done;
	const char *s;

	chunk_ok("0\r\n\r\n", 5, "empty body");
	chunk_ok("5\r\nhello\r\n0\r\n\r\n", 15, "one chunk");
	chunk_ok("5\r\nhello\r\n0\r\n\r\nGET /next", 15,
	    "stops before the next request");
	chunk_ok("A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n", 35,
	    "hex sizes, both cases");
	chunk_ok("5;name=val\r\nhello\r\n0;x\r\n\r\n", 26, "extensions");
	chunk_ok("5 ;ext\r\nhello\r\n0\r\n\r\n", 20, "BWS before ;");
	chunk_ok("5\r\nhello\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n", 29,
	    "trailers");
	chunk_ok("000000000000005\r\nhello\r\n0\r\n\r\n", 29,
	    "15 hex digits");
	chunk_ok("3\r\n\r\n\xff\r\n0\r\n\r\n", 13, "binary data");
	chunk_bad("0000000000000005\r\nhello\r\n0\r\n\r\n", "16 hex digits");
	chunk_bad("ffffffffffffffffff\r\n", "overflowing size");
	chunk_bad("\r\n", "empty size");
	chunk_bad("-5\r\n", "negative size");
	chunk_bad("0x5\r\nhello\r\n0\r\n\r\n", "0x prefix");
	chunk_bad("5\nhello\r\n0\r\n\r\n", "bare LF after size");
	chunk_bad("5\r\nhelloX\r\n0\r\n\r\n", "data longer than size");
	chunk_bad("5\r\nhello\n0\r\n\r\n", "bare LF after data");
	chunk_bad("5 \r\nhello\r\n0\r\n\r\n", "trailing space, no ext");
	chunk_bad("5\r\nhello\r\n0\r\nX: 1\n\r\n", "bare LF in trailer");
	chunk_bad("5\r\nhello\r\n0\r\n\n", "bare LF at end");
	chunk_bad("5;a\x01\r\nhello\r\n0\r\n\r\n", "control in extension");
	chunk_bad("5\r\nhello\r\n0\r\nX: \x01\r\n\r\n", "control in trailer");
	chunk_bad(" 5\r\nhello\r\n0\r\n\r\n", "leading space");

	/* Extension line limit. */
	memset(big, 'e', sizeof(big));
	big[0] = '1';
	big[1] = ';';
	memcpy(big + 4090, "\r\nx\r\n0\r\n\r\n", 11);
	n = chunk1(big, strlen(big), &done);
	ok(n == (ssize_t)strlen(big) && done, "4090-byte size line accepted");
	big[4090] = 'e';
	memcpy(big + 4100, "\r\nx\r\n0\r\n\r\n", 11);
	n = chunk1(big, strlen(big), &done);
	ok(n == -1, "4100-byte size line refused");
	memcpy(big, "0\r\nX: ", 6);
	memset(big + 6, 'v', 4200);
	memcpy(big + 4206, "\r\n\r\n", 5);
	n = chunk1(big, strlen(big), &done);
	ok(n == -1, "4200-byte trailer line refused");

	/* Incremental: partial, then the rest. */
	s = "5\r\nhel";
	eg_chunk_init(&ck);
	n = eg_chunk_feed(&ck, (const uint8_t *)s, strlen(s), &done);
	ok(n == 6 && !done, "partial chunk consumed, not done");
	s = "lo\r\n0\r\n\r\nrest";
	n = eg_chunk_feed(&ck, (const uint8_t *)s, strlen(s), &done);
	ok(n == 9 && done, "rest ends the body before 'rest'");
	n = eg_chunk_feed(&ck, (const uint8_t *)"more", 4, &done);
	ok(n == 0 && done, "after the end nothing more is body");
	eg_chunk_init(&ck);
	ok(eg_chunk_feed(&ck, (const uint8_t *)"z", 1, &done) == -1 &&
	    eg_chunk_feed(&ck, (const uint8_t *)"0\r\n\r\n", 5, &done) == -1,
	    "errors are sticky");
}

int
main(void)
{
	test_scan();
	test_connect();
	test_headers();
	test_absolute();
	test_resp();
	test_conn_framing();
	test_underscore_framing();
	test_chunk();
	return done_testing();
}
