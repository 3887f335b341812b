/*
 * buf.c: bounded byte buffers; the overflow rule is stated in buf.h.
 */
#include "egress-int.h"

#include <stdarg.h>
#include <stdio.h>

#include "alloc.h"
#include "buf.h"

#define BUF_MIN		256	/* first allocation of a heap buffer */

void
eg_buf_init(struct eg_buf *b, void *storage, size_t size)
{
	b->p = storage;
	b->off = b->len = 0;
	b->cap = b->max = storage != NULL ? size : 0;
	b->heap = 0;
	b->err = EG_BUF_OK;
}

void
eg_buf_init_heap(struct eg_buf *b, size_t max)
{
	b->p = NULL;
	b->off = b->len = b->cap = 0;
	b->max = max;
	b->heap = 1;
	b->err = EG_BUF_OK;
}

void
eg_buf_clear(struct eg_buf *b)
{
	if (b->heap) {
		eg_free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
	eg_buf_reset(b);
}

void
eg_buf_reset(struct eg_buf *b)
{
	b->off = b->len = 0;
	b->err = EG_BUF_OK;
}

int
eg_buf_reserve(struct eg_buf *b, size_t n)
{
	size_t ncap;
	char *np;

	if (b->err != EG_BUF_OK)
		return -1;
	if (n <= b->cap - b->len)
		return 0;
	if (n > b->max - b->len) {
		b->err = EG_BUF_FULL;
		return -1;
	}
	if (!b->heap) {		/* cap == max for fixed storage */
		b->err = EG_BUF_FULL;
		return -1;
	}
	/* double from BUF_MIN, but never past max */
	ncap = b->cap != 0 ? b->cap : BUF_MIN;
	while (ncap - b->len < n && ncap < b->max / 2)
		ncap *= 2;
	if (ncap - b->len < n || ncap > b->max)
		ncap = b->max;
	if ((np = eg_realloc(b->p, ncap)) == NULL) {
		b->err = EG_BUF_NOMEM;
		return -1;
	}
	b->p = np;
	b->cap = ncap;
	return 0;
}

int
eg_buf_add_slow(struct eg_buf *b, const void *s, size_t n)
{
	if (eg_buf_reserve(b, n) == -1)
		return -1;
	if (n != 0)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

size_t
eg_u64_text(char d[EG_U64_DIGITS], uint64_t v, const char **start)
{
	size_t i = EG_U64_DIGITS;

	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	*start = d + i;
	return EG_U64_DIGITS - i;
}

int
eg_buf_u64(struct eg_buf *b, uint64_t v)
{
	char d[EG_U64_DIGITS];
	const char *p;
	size_t n = eg_u64_text(d, v, &p);

	return eg_buf_add(b, p, n);
}

int
eg_buf_printf(struct eg_buf *b, const char *fmt, ...)
{
	char tmp[256], *big;
	va_list ap;
	int n, rc;

	if (b->err != EG_BUF_OK)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* an encoding error: nothing is appended, as for any
		 * append that cannot be made */
		b->err = EG_BUF_FULL;
		return -1;
	}
	if ((size_t)n < sizeof(tmp))
		return eg_buf_add(b, tmp, (size_t)n);
	/* a long result: formatted again, beside the buffer */
	if ((size_t)n > b->max - b->len) {
		b->err = EG_BUF_FULL;
		return -1;
	}
	if ((big = eg_malloc((size_t)n + 1)) == NULL) {
		b->err = EG_BUF_NOMEM;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rc = eg_buf_add(b, big, (size_t)n);
	eg_free(big);
	return rc;
}

size_t
eg_json_escape(unsigned char ch, char out[6])
{
	static const char hex[] = "0123456789abcdef";

	if (ch == '"' || ch == '\\') {
		out[0] = '\\';
		out[1] = (char)ch;
		return 2;
	}
	if (ch >= 0x20 && ch < 0x7f) {
		out[0] = (char)ch;
		return 1;
	}
	memcpy(out, "\\u00", 4);
	out[4] = hex[ch >> 4];
	out[5] = hex[ch & 15];
	return 6;
}

int
eg_buf_json(struct eg_buf *b, const char *s, size_t n)
{
	size_t start = b->len, i = 0, run;
	unsigned char ch;
	char e[6];

	if (eg_buf_add(b, "\"", 1) == -1)
		return -1;
	while (i < n) {
		for (run = i; i < n && (ch = (unsigned char)s[i]) >= 0x20 &&
		    ch < 0x7f && ch != '"' && ch != '\\'; i++)
			;
		if (eg_buf_add(b, s + run, i - run) == -1)
			goto fail;
		if (i == n)
			break;
		if (eg_buf_add(b, e, eg_json_escape((unsigned char)s[i++], e))
		    == -1)
			goto fail;
	}
	if (eg_buf_add(b, "\"", 1) == 0)
		return 0;
fail:
	b->len = start;		/* all or nothing; the error stays */
	return -1;
}

int
eg_buf_json_str(struct eg_buf *b, const char *s)
{
	return eg_buf_json(b, s, s != NULL ? strlen(s) : 0);
}

void
eg_buf_consume(struct eg_buf *b, size_t n)
{
	if (n > b->len - b->off)
		n = b->len - b->off;
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}
