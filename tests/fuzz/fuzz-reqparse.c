/*
 * fuzz-reqparse.c: libFuzzer target for the request head path the proxy
 * runs on client bytes: eg_head_scan() fed in pieces must agree with one
 * scan of the whole input, eg_req_parse() must keep every offset inside
 * the head, and eg_req_origin_head() must fit or say it does not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reqparse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_req(const uint8_t *data, size_t len, const struct eg_req *req)
{
	size_t i;

	if (req->head_len > len || req->nhdr > EG_MAX_HEADERS)
		abort();
	if (strlen(req->host.name) != req->host.len ||
	    req->host.len > EG_HOST_MAX + 2 || req->port == 0)
		abort();
	if (memchr(req->method, '\0', sizeof(req->method)) == NULL)
		abort();
	if (req->form == EG_REQ_ABSOLUTE &&
	    (req->path_len == 0 || req->path_off + req->path_len > len ||
	    data[req->path_off] != '/'))
		abort();
	for (i = 0; i < req->nhdr; i++) {
		if (req->hdr[i].name_len == 0 ||
		    req->hdr[i].name_off + req->hdr[i].name_len > len ||
		    req->hdr[i].value_off + req->hdr[i].value_len > len)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct eg_req req;
	static char out[65536];
	enum eg_parse r1, r2 = EG_PARSE_AGAIN;
	size_t scan = 0, hl1 = 0, hl2 = 0, step, end;
	const char *why;
	ssize_t n;

	/* The parser alone, on anything. */
	if (eg_req_parse(data, size, &req, &why) == EG_PARSE_OK)
		check_req(data, size, &req);

	r1 = eg_head_scan(data, size, &scan, &hl1);
	step = size ? (size_t)data[0] % 13 + 1 : 1;
	scan = 0;
	for (end = 0; end < size && r2 == EG_PARSE_AGAIN; ) {
		end = end + step > size ? size : end + step;
		r2 = eg_head_scan(data, end, &scan, &hl2);
	}
	if (size == 0)
		r2 = eg_head_scan(data, 0, &scan, &hl2);
	if (r1 != r2 || (r1 == EG_PARSE_OK && hl1 != hl2))
		abort();
	if (r1 != EG_PARSE_OK)
		return 0;
	if (hl1 > size || hl1 < 4 || memcmp(data + hl1 - 4, "\r\n\r\n", 4))
		abort();
	if (eg_req_parse(data, hl1, &req, &why) != EG_PARSE_OK)
		return 0;
	check_req(data, hl1, &req);
	if (req.head_len != hl1)
		abort();
	n = eg_req_origin_head(data, &req, data[0] & 1, out, sizeof(out));
	if (n < 0 || (size_t)n > sizeof(out))
		abort();
	n = eg_req_origin_head(data, &req, 0, out, (size_t)n / 2);
	if (n != -1)
		abort();
	return 0;
}
