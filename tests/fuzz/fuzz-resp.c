/*
 * fuzz-resp.c: libFuzzer target for the upstream side: a response head
 * (scan, parse, hop-by-hop rewrite) and the chunked framer over whatever
 * follows it.  Feeding the body in pieces must find the same end, or the
 * same error, as feeding it at once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reqparse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Feed p in pieces of step bytes; return the body length or -1. */
static ssize_t
feed_steps(const uint8_t *p, size_t n, size_t step, int *done)
{
	struct eg_chunk ck;
	size_t off = 0, k;
	ssize_t r;

	eg_chunk_init(&ck);
	*done = 0;
	while (off < n) {
		k = n - off < step ? n - off : step;
		r = eg_chunk_feed(&ck, p + off, k, done);
		if (r < 0)
			return -1;
		if ((size_t)r > k || (!*done && (size_t)r != k))
			abort();
		off += (size_t)r;
		if (*done)
			break;
	}
	return (ssize_t)off;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct eg_resp resp;
	static char out[65536];
	size_t scan = 0, hl = 0, i, step;
	const char *why;
	ssize_t n1, n2;
	int d1, d2;

	if (eg_resp_parse(data, size, &resp, &why) == EG_PARSE_OK) {
		if (resp.head_len > size || resp.nhdr > EG_MAX_HEADERS ||
		    resp.status < 100 || resp.status > 599)
			abort();
	}
	/* The whole input as a chunked body. */
	step = size ? (size_t)data[size - 1] % 17 + 1 : 1;
	n1 = feed_steps(data, size, size ? size : 1, &d1);
	n2 = feed_steps(data, size, step, &d2);
	if (n1 != n2 || d1 != d2)
		abort();

	if (eg_head_scan(data, size, &scan, &hl) != EG_PARSE_OK)
		return 0;
	if (eg_resp_parse(data, hl, &resp, &why) != EG_PARSE_OK)
		return 0;
	if (resp.head_len != hl)
		abort();
	for (i = 0; i < resp.nhdr; i++)
		if (resp.hdr[i].value_off + resp.hdr[i].value_len > hl ||
		    resp.hdr[i].name_off + resp.hdr[i].name_len > hl)
			abort();
	n1 = eg_resp_head(data, &resp, data[0] & 1, out, sizeof(out));
	if (n1 < 0 || (size_t)n1 > sizeof(out))
		abort();
	if (eg_resp_head(data, &resp, 1, out, (size_t)n1 / 2) != -1)
		abort();
	if (resp.chunked) {
		n1 = feed_steps(data + hl, size - hl, size - hl + 1, &d1);
		n2 = feed_steps(data + hl, size - hl, 1, &d2);
		if (n1 != n2 || d1 != d2)
			abort();
	}
	return 0;
}
