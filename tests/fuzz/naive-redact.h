/*
 * naive-redact.h: the whole-buffer reference the streaming redactor is
 * checked against (tests/unit/test-redact.c, tests/fuzz/fuzz-redact.c):
 * left to right, the longest secret value at a position is replaced by
 * "[REDACTED]", else the byte is copied.  Quadratic and obviously right.
 */
#ifndef RP_NAIVE_REDACT_H
#define RP_NAIVE_REDACT_H

#include <stdlib.h>
#include <string.h>

/* out must hold len * 2 + 10 bytes (values are 8 bytes or more, a
 * replacement 10). */
static size_t
naive_redact(const struct rp_secret *s, size_t ns, const unsigned char *in,
    size_t len, unsigned char *out, size_t *hits)
{
	size_t i = 0, o = 0, k, best;

	*hits = 0;
	while (i < len) {
		best = 0;
		for (k = 0; k < ns; k++)
			if (s[k].len >= 8 && s[k].len <= len - i &&
			    s[k].len > best &&
			    memcmp(in + i, s[k].val, s[k].len) == 0)
				best = s[k].len;
		if (best > 0) {
			memcpy(out + o, "[REDACTED]", 10);
			o += 10;
			i += best;
			(*hits)++;
		} else
			out[o++] = in[i++];
	}
	return o;
}

#endif
