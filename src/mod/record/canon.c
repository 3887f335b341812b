/*
 * canon.c: canonical JSON writer (see canon.h for the rules).  An eg_buf
 * capped at REC_CANON_MAX and a recursive walk; keys are sorted with memcmp on
 * their UTF-8 bytes, which orders them by code point (not by UTF-16 code
 * unit as RFC 8785 does: U+FF61 sorts before U+1F600 here).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "canon.h"

#define CANON_DEPTH	64

/* Append under buf.h's overflow rule; -1 with errno EFBIG past the cap,
 * ENOMEM when the buffer cannot grow. */
static int
cb_add(struct eg_buf *b, const void *s, size_t n)
{
	if (eg_buf_add(b, s, n) == -1) {
		errno = eg_buf_failed(b) == EG_BUF_FULL ? EFBIG : ENOMEM;
		return -1;
	}
	return 0;
}

/* 1 when s[0..n) is well-formed UTF-8 (no surrogates, no overlongs). */
static int
utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0, k, need;
	uint32_t cp;

	while (i < n) {
		unsigned char c = s[i];

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else
			return 0;
		if (n - i - 1 < need)
			return 0;
		for (k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

static int
cb_string(struct eg_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	char esc[6];
	size_t i, run;

	if (!utf8_valid((const unsigned char *)s, n)) {
		errno = EINVAL;
		return -1;
	}
	if (cb_add(b, "\"", 1) == -1)
		return -1;
	for (i = 0; i < n; i += run) {
		unsigned char c = (unsigned char)s[i];
		const char *e = NULL;

		for (run = 0; i + run < n; run++) {
			c = (unsigned char)s[i + run];
			if (c < 0x20 || c == '"' || c == '\\')
				break;
		}
		if (run > 0) {
			if (cb_add(b, s + i, run) == -1)
				return -1;
			continue;
		}
		run = 1;
		switch (c) {
		case '"':  e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			if (cb_add(b, esc, 6) == -1)
				return -1;
			continue;
		}
		if (cb_add(b, e, strlen(e)) == -1)
			return -1;
	}
	return cb_add(b, "\"", 1);
}

struct ckey {
	const char	*k;
	size_t		 len;
	json_t		*v;
};

static int
ckey_cmp(const void *a, const void *b)
{
	const struct ckey *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->k, y->k, n);

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int
cb_value(struct eg_buf *b, const json_t *v, int depth)
{
	char num[32];
	struct ckey *keys;
	const char *k;
	json_t *m;
	size_t i, n, klen;
	int rc;

	if (depth > CANON_DEPTH) {
		errno = EINVAL;
		return -1;
	}
	switch (json_typeof(v)) {
	case JSON_NULL:
		return cb_add(b, "null", 4);
	case JSON_TRUE:
		return cb_add(b, "true", 4);
	case JSON_FALSE:
		return cb_add(b, "false", 5);
	case JSON_INTEGER:
		n = (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		return cb_add(b, num, n);
	case JSON_REAL:
		errno = EINVAL;
		return -1;
	case JSON_STRING:
		return cb_string(b, json_string_value(v),
		    json_string_length(v));
	case JSON_ARRAY:
		if (cb_add(b, "[", 1) == -1)
			return -1;
		for (i = 0; i < json_array_size(v); i++)
			if ((i > 0 && cb_add(b, ",", 1) == -1) ||
			    cb_value(b, json_array_get(v, i), depth + 1) == -1)
				return -1;
		return cb_add(b, "]", 1);
	case JSON_OBJECT:
		n = json_object_size(v);
		if ((keys = eg_calloc(n ? n : 1, sizeof(*keys))) == NULL)
			return -1;
		i = 0;
		json_object_keylen_foreach((json_t *)(uintptr_t)v, k, klen, m) {
			if (i == n)
				break;
			keys[i].k = k;
			keys[i].len = klen;
			keys[i].v = m;
			i++;
		}
		n = i;
		qsort(keys, n, sizeof(*keys), ckey_cmp);
		rc = cb_add(b, "{", 1);
		for (i = 0; rc == 0 && i < n; i++)
			if ((i > 0 && cb_add(b, ",", 1) == -1) ||
			    cb_string(b, keys[i].k, keys[i].len) == -1 ||
			    cb_add(b, ":", 1) == -1 ||
			    cb_value(b, keys[i].v, depth + 1) == -1)
				rc = -1;
		eg_free(keys);
		return rc == -1 ? -1 : cb_add(b, "}", 1);
	}
	errno = EINVAL;
	return -1;
}

char *
rec_canon_dump(const json_t *v, size_t *len)
{
	/* the bytes and their NUL */
	struct eg_buf b = EG_BUF_HEAP((size_t)REC_CANON_MAX + 1);
	int saved;

	if (v == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (cb_value(&b, v, 0) == -1 || cb_add(&b, "", 1) == -1) {
		saved = errno;
		eg_buf_clear(&b);
		errno = saved;
		return NULL;
	}
	if (len != NULL)
		*len = eg_buf_len(&b) - 1;
	return eg_buf_data(&b);
}
