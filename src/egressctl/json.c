/*
 * json.c: a small JSON reader for the admin API's answers (json.h): the
 * whole text parsed into a tree of struct jv, bounded in depth, every
 * value with its text in the input.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "shared.h"

#include "json.h"

struct jp {
	const char	*p, *end;
	int		 depth;
};

void
jv_free(struct jv *v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < v->n; i++) {
		jv_free(&v->kids[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->kids);
	free(v->keys);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

static void
jp_ws(struct jp *jp)
{
	while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' ||
	    *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

/* A string at jp->p (the opening quote); decoded, malloc'd. */
static char *
jp_str(struct jp *jp)
{
	const char *p = jp->p + 1;
	char *out, *o;
	unsigned u;
	int i, h;

	if ((out = malloc((size_t)(jp->end - jp->p) + 1)) == NULL)
		return NULL;
	o = out;
	while (p < jp->end && *p != '"') {
		if ((unsigned char)*p < 0x20)
			goto bad;
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		if (++p >= jp->end)
			goto bad;
		switch (*p) {
		case '"': case '\\': case '/': *o++ = *p; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (jp->end - p < 5)
				goto bad;
			for (u = 0, i = 1; i <= 4; i++) {
				if ((h = eg_hexval((unsigned char)p[i])) < 0)
					goto bad;
				u = u * 16 + (unsigned)h;
			}
			p += 4;
			if (u < 0x80)
				*o++ = (char)u;
			else if (u < 0x800) {
				*o++ = (char)(0xc0 | (u >> 6));
				*o++ = (char)(0x80 | (u & 0x3f));
			} else if (u >= 0xd800 && u < 0xe000)
				*o++ = '?';	/* lone surrogate half */
			else {
				*o++ = (char)(0xe0 | (u >> 12));
				*o++ = (char)(0x80 | ((u >> 6) & 0x3f));
				*o++ = (char)(0x80 | (u & 0x3f));
			}
			break;
		default:
			goto bad;
		}
		p++;
	}
	if (p >= jp->end)
		goto bad;
	*o = '\0';
	jp->p = p + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static int jp_value(struct jp *, struct jv *);

static int
jp_push(struct jv *v, int obj)
{
	struct jv *k;
	char **kk;

	if ((k = realloc(v->kids, (v->n + 1) * sizeof(*k))) == NULL)
		return -1;
	v->kids = k;
	memset(&k[v->n], 0, sizeof(*k));
	if (obj) {
		if ((kk = realloc(v->keys, (v->n + 1) * sizeof(*kk))) == NULL)
			return -1;
		v->keys = kk;
		kk[v->n] = NULL;
	}
	v->n++;
	return 0;
}

static int
jp_value(struct jp *jp, struct jv *v)
{
	const char *start;
	int obj;

	jp_ws(jp);
	if (jp->p >= jp->end || ++jp->depth > JSON_DEPTH)
		return -1;
	start = jp->p;
	v->raw = start;
	if (*jp->p == '{' || *jp->p == '[') {
		obj = *jp->p == '{';
		v->t = obj ? J_OBJ : J_ARR;
		jp->p++;
		jp_ws(jp);
		if (jp->p < jp->end && *jp->p == (obj ? '}' : ']')) {
			jp->p++;
			goto done;
		}
		for (;;) {
			if (jp_push(v, obj) == -1)
				return -1;
			if (obj) {
				jp_ws(jp);
				if (jp->p >= jp->end || *jp->p != '"' ||
				    (v->keys[v->n - 1] = jp_str(jp)) == NULL)
					return -1;
				jp_ws(jp);
				if (jp->p >= jp->end || *jp->p++ != ':')
					return -1;
			}
			if (jp_value(jp, &v->kids[v->n - 1]) == -1)
				return -1;
			jp_ws(jp);
			if (jp->p >= jp->end)
				return -1;
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p++ != (obj ? '}' : ']'))
				return -1;
			break;
		}
	} else if (*jp->p == '"') {
		v->t = J_STR;
		if ((v->s = jp_str(jp)) == NULL)
			return -1;
	} else if (jp->end - jp->p >= 4 && memcmp(jp->p, "true", 4) == 0) {
		v->t = J_BOOL;
		v->b = 1;
		jp->p += 4;
	} else if (jp->end - jp->p >= 5 && memcmp(jp->p, "false", 5) == 0) {
		v->t = J_BOOL;
		jp->p += 5;
	} else if (jp->end - jp->p >= 4 && memcmp(jp->p, "null", 4) == 0) {
		v->t = J_NULL;
		jp->p += 4;
	} else {
		while (jp->p < jp->end && strchr("0123456789+-.eE",
		    *jp->p) != NULL && *jp->p != '\0')
			jp->p++;
		if (jp->p == start)
			return -1;
		v->t = J_NUM;
		if ((v->s = strndup(start, (size_t)(jp->p - start))) == NULL)
			return -1;
	}
done:
	v->rawlen = (size_t)(jp->p - start);
	jp->depth--;
	return 0;
}

int
json_parse(const char *s, size_t len, struct jv *v)
{
	struct jp jp = { s, s + len, 0 };

	memset(v, 0, sizeof(*v));
	if (jp_value(&jp, v) == -1) {
		jv_free(v);
		return -1;
	}
	jp_ws(&jp);
	if (jp.p != jp.end) {
		jv_free(v);
		return -1;
	}
	return 0;
}

const struct jv *
jget(const struct jv *o, const char *key)
{
	size_t i;

	if (o == NULL || o->t != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return &o->kids[i];
	return NULL;
}

/* A scalar as text ("" if absent); numbers and strings. */
const char *
jstr(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	if (v == NULL)
		return "";
	if (v->t == J_STR || v->t == J_NUM)
		return v->s;
	if (v->t == J_BOOL)
		return v->b ? "true" : "false";
	return "";
}

uint64_t
jnum(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	if (v == NULL || v->t != J_NUM)
		return 0;
	return strtoull(v->s, NULL, 10);
}
