/*
 * fuzz-route.c: libFuzzer target for the route request path (src/lib/
 * route.c, routecfg.c): a client's request head, parsed as the proxy
 * parses it; an origin-form one is split into the route name and REST,
 * REST's path checked for what could mean another path, and the upstream
 * head built for a route with a credential.  That head must parse again
 * as a request, carry the route's credential exactly once and nothing of
 * the client's x-api-key or Authorization, and keep REST byte for byte.
 * The redaction of configuration text runs over the input too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "module.h"
#include "reqparse.h"
#include "route.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static size_t
count(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle), i, c = 0;

	for (i = 0; i + k <= n; i++)
		if (strncasecmp(s + i, needle, k) == 0)
			c++;
	return c;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct eg_req q, q2;
	static char out[65536];
	static char hn[] = "x-api-key", hv[] = "SECRET-route-credential";
	static char strip0[] = "cookie";
	static char *strip[] = { strip0 };
	struct eg_route_hdr hdr = { hn, 9, hv, sizeof(hv) - 1, 1 };
	struct eg_route r;
	size_t scan = 0, hl = 0, nl, pl, olen, scan2 = 0, hl2 = 0;
	const char *why;
	ssize_t n;
	char *red;

	/* the configuration's redaction: never longer than its bound */
	if ((red = eg_cfg_redact((const char *)data, size, &olen)) != NULL) {
		if (strlen(red) > olen)
			abort();
		eg_free(red);
	}
	if (eg_head_scan(data, size, &scan, &hl) != EG_PARSE_OK)
		return 0;
	memset(&q, 0, sizeof(q));
	if (eg_req_parse(data, hl, &q, &why) != EG_PARSE_OK ||
	    q.form != EG_REQ_ORIGIN)
		return 0;
	if (q.path_off + q.path_len > hl || data[q.path_off] != '/')
		abort();
	eg_route_split(data + q.path_off, q.path_len, &nl, &pl);
	if (1 + nl + pl > q.path_len)
		abort();
	(void)eg_route_path_bad((const char *)data + q.path_off + 1 + nl, pl);
	memset(&r, 0, sizeof(r));
	r.authority = (char *)"api.test:443";
	r.hdr = &hdr;
	r.nhdr = 1;
	r.strip = strip;
	r.nstrip = 1;
	n = eg_route_upstream_head(&r, data, &q, q.path_off + 1 + nl,
	    q.path_len - 1 - nl, out, sizeof(out));
	if (n < 0)
		return 0;
	if ((size_t)n >= sizeof(out) || n < 4 ||
	    memcmp(out + n - 4, "\r\n\r\n", 4) != 0)
		abort();
	if (count(out, (size_t)n, "\r\nx-api-key:") != 1 ||
	    count(out, (size_t)n, "\r\nx-api-key: SECRET-route-credential"
	    "\r\n") != 1 ||
	    count(out, (size_t)n, "\r\nauthorization:") != 0 ||
	    count(out, (size_t)n, "\r\ncookie:") != 0)
		abort();
	if (eg_head_scan((const uint8_t *)out, (size_t)n, &scan2, &hl2) !=
	    EG_PARSE_OK || hl2 != (size_t)n)
		abort();
	/* "/", "/?Q" and "//..." are not route targets themselves (the
	 * proxy refuses a REST with "//" before building a head): not
	 * re-parsed */
	if (pl <= 1 || data[q.path_off + 2 + nl] == '/' ||
	    data[q.path_off + 2 + nl] == '?')
		return 0;
	memset(&q2, 0, sizeof(q2));
	/* our parser's own limit: the added Host, credential and
	 * Connection lines may pass it (the upstream's parser decides) */
	if (q.nhdr + r.nhdr + 2 > EG_MAX_HEADERS)
		return 0;
	if (eg_req_parse((const uint8_t *)out, hl2, &q2, &why) != EG_PARSE_OK)
		abort();
	if (q2.content_length != q.content_length || q2.chunked != q.chunked)
		abort();
	return 0;
}
