/*
 * fuzz-redact.c: libFuzzer target for the streaming redactor.  The input
 * describes 1-4 secret values (8-31 bytes each, taken from the input), a
 * read size, and the text; the text fed in pieces of that size (and in
 * pieces of a size varying with position) must come out exactly as the
 * whole-buffer reference makes it, with the same number of replacements,
 * and hold none of the values unless the reference output does too.
 * rp_redact_mem() of the whole text must give the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/mod/replay/redact.h"
#include "naive-redact.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct mem {
	unsigned char	*p;
	size_t		 len, cap;
};

static int
mem_emit(void *arg, const void *buf, size_t len)
{
	struct mem *m = arg;

	if (m->len + len > m->cap)
		abort();	/* more output than the reference bound */
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

static void
run(struct rp_redactor *r, const unsigned char *text, size_t len,
    size_t chunk, int vary, const unsigned char *want, size_t wlen,
    size_t whits)
{
	struct rp_rstream st;
	struct mem m;
	size_t pos = 0, k;

	m.cap = len * 2 + 16;
	m.len = 0;
	if ((m.p = malloc(m.cap)) == NULL)
		return;
	if (rp_rstream_init(&st, r, mem_emit, &m) < 0) {
		free(m.p);
		return;
	}
	while (pos < len) {
		k = vary ? 1 + (pos * 7 + chunk) % (chunk + 13) : chunk;
		if (k > len - pos)
			k = len - pos;
		if (rp_rstream_feed(&st, text + pos, k) < 0)
			abort();
		pos += k;
	}
	if (rp_rstream_finish(&st) < 0)
		abort();
	if (m.len != wlen || memcmp(m.p, want, wlen) != 0 || st.hits != whits)
		abort();
	rp_rstream_free(&st);
	free(m.p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rp_secret s[4];
	struct rp_redactor *r;
	unsigned char *want;
	size_t ns, i, off = 0, wlen, whits, chunk;

	if (size < 1)
		return 0;
	ns = 1 + data[off++] % 4;
	for (i = 0; i < ns; i++) {
		if (off >= size)
			return 0;
		s[i].name = "S";
		s[i].len = 8 + data[off++] % 24;
		if (size - off < s[i].len)
			return 0;
		s[i].val = (const char *)data + off;
		off += s[i].len;
	}
	if (off >= size)
		return 0;
	chunk = 1 + data[off++] % 70;
	if ((r = rp_redactor_new(s, ns)) == NULL)
		return 0;
	if ((want = malloc((size - off) * 2 + 16)) == NULL) {
		rp_redactor_free(r);
		return 0;
	}
	wlen = naive_redact(s, ns, data + off, size - off, want, &whits);
	run(r, data + off, size - off, chunk, 0, want, wlen, whits);
	run(r, data + off, size - off, chunk, 1, want, wlen, whits);
	run(r, data + off, size - off, size - off + 1, 0, want, wlen, whits);
	/* the in-memory form (plan.ini's copy): the same bytes */
	{
		uint64_t mhits = 0;
		size_t mlen;
		char *m = rp_redact_mem(s, ns, (const char *)data + off,
		    size - off, &mlen, &mhits);

		if (m != NULL && (mlen != wlen || memcmp(m, want, wlen) != 0 ||
		    mhits != whits || m[mlen] != '\0'))
			abort();
		free(m);
	}
	free(want);
	rp_redactor_free(r);
	return 0;
}
