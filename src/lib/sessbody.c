/*
 * sessbody.c: the POST /v1/sessions body parser (sessbody.h).  A small
 * recursive-descent JSON reader for exactly the shape the route takes;
 * every read is bounded by len, and strings are copied, NUL-terminated,
 * into the caller's arena.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sessbody.h"

struct rd {
	const char	*s;
	size_t		 len, i;
	struct eg_sess_body *b;
	size_t		 used;		/* of b->arena */
	size_t		 nptr;		/* of b->ptrs */
	char		*why;
	size_t		 whylen;
};

static int
fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(r->why, r->whylen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void
ws(struct rd *r)
{
	while (r->i < r->len && (r->s[r->i] == ' ' || r->s[r->i] == '\t' ||
	    r->s[r->i] == '\n' || r->s[r->i] == '\r'))
		r->i++;
}

static int
peek(struct rd *r)
{
	ws(r);
	return r->i < r->len ? (unsigned char)r->s[r->i] : -1;
}

static int
expect(struct rd *r, char c)
{
	if (peek(r) != (unsigned char)c)
		return fail(r, "bad JSON at byte %zu: expected '%c'", r->i, c);
	r->i++;
	return 0;
}

/* A JSON string into the arena (escapes \" \\ \/ only; no control or
 * 8-bit bytes: nothing this route takes needs them).  *out, *outlen. */
static int
str(struct rd *r, const char **out, size_t *outlen)
{
	char *dst = r->b->arena + r->used;
	size_t n = 0, room = sizeof(r->b->arena) - r->used;
	unsigned char c;

	if (expect(r, '"') == -1)
		return -1;
	for (;;) {
		if (r->i >= r->len)
			return fail(r, "bad JSON: unterminated string");
		c = (unsigned char)r->s[r->i++];
		if (c == '"')
			break;
		if (c == '\\') {
			if (r->i >= r->len)
				return fail(r, "bad JSON: unterminated string");
			c = (unsigned char)r->s[r->i++];
			if (c != '"' && c != '\\' && c != '/')
				return fail(r, "bad JSON at byte %zu: only "
				    "\\\", \\\\ and \\/ escapes are accepted",
				    r->i - 1);
		} else if (c < 0x20 || c >= 0x7f)
			return fail(r, "bad JSON at byte %zu: control or "
			    "non-ASCII byte in a string", r->i - 1);
		if (n + 1 >= room)
			return fail(r, "request body too large");
		dst[n++] = (char)c;
	}
	dst[n] = '\0';
	r->used += n + 1;
	*out = dst;
	if (outlen != NULL)
		*outlen = n;
	return 0;
}

static int
literal(struct rd *r, const char *lit)
{
	size_t n = strlen(lit);

	ws(r);
	if (r->len - r->i < n || memcmp(r->s + r->i, lit, n) != 0)
		return -1;
	r->i += n;
	return 0;
}

static int
phases(struct rd *r)
{
	struct eg_sess_body *b = r->b;
	const char *name, *pat;
	size_t nlen, j;

	if (expect(r, '{') == -1)
		return -1;
	b->has_phases = 1;
	if (peek(r) == '}') {
		r->i++;
		return 0;
	}
	for (;;) {
		if (str(r, &name, &nlen) == -1)
			return -1;
		if (!eg_phase_name_ok(name, nlen))
			return fail(r, "phases: bad phase name '%.64s': 1 to "
			    "%d of A-Z a-z 0-9 _ . -", name,
			    EG_PHASE_NAME_MAX);
		for (j = 0; j < b->nphases; j++)
			if (strcmp(b->phases[j].name, name) == 0)
				return fail(r, "phases: phase '%s' given twice",
				    name);
		if (b->nphases == EG_SB_PHASES_MAX)
			return fail(r, "phases: more than %d phases",
			    EG_SB_PHASES_MAX);
		if (expect(r, ':') == -1 || expect(r, '[') == -1)
			return -1;
		b->phases[b->nphases].name = name;
		b->phases[b->nphases].allow = &b->ptrs[r->nptr];
		if (peek(r) == ']')
			r->i++;
		else
			for (;;) {
				if (str(r, &pat, NULL) == -1)
					return -1;
				/* one slot stays for each phase's NULL */
				if (r->nptr + 1 >= EG_SB_ALLOW_MAX)
					return fail(r, "phases: more than %d "
					    "patterns", EG_SB_ALLOW_MAX - 2);
				b->ptrs[r->nptr++] = pat;
				if (peek(r) == ',') {
					r->i++;
					continue;
				}
				if (expect(r, ']') == -1)
					return -1;
				break;
			}
		b->ptrs[r->nptr++] = NULL;
		b->nphases++;
		if (peek(r) == ',') {
			r->i++;
			continue;
		}
		return expect(r, '}');
	}
}

static int
number(struct rd *r, unsigned max, unsigned *out, const char *key)
{
	unsigned long long v = 0;
	size_t n = 0;

	ws(r);
	while (r->i < r->len && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
		v = v * 10 + (unsigned)(r->s[r->i] - '0');
		r->i++;
		if (++n > 10 || v > max)
			return fail(r, "%s: expected 0 to %u", key, max);
	}
	if (n == 0 || (r->i < r->len && (r->s[r->i] == '.' ||
	    r->s[r->i] == 'e' || r->s[r->i] == 'E')))
		return fail(r, "%s: expected 0 to %u", key, max);
	*out = (unsigned)v;
	return 0;
}

int
eg_sess_body_parse(const char *body, size_t len, struct eg_sess_body *b,
    char *why, size_t whylen)
{
	struct rd r = { body, len, 0, b, 0, 0, why, whylen };
	const char *key, *v;
	size_t klen, vlen;
	unsigned seen = 0, bit;

	memset(b, 0, offsetof(struct eg_sess_body, ptrs));
	if (whylen > 0)
		why[0] = '\0';
	if (expect(&r, '{') == -1)
		return -1;
	if (peek(&r) == '}')
		r.i++;
	else
		for (;;) {
			if (str(&r, &key, &klen) == -1 || expect(&r, ':') == -1)
				return -1;
			if (strcmp(key, "name") == 0)
				bit = 1;
			else if (strcmp(key, "phase") == 0)
				bit = 2;
			else if (strcmp(key, "listen") == 0)
				bit = 4;
			else if (strcmp(key, "ttl_s") == 0)
				bit = 8;
			else if (strcmp(key, "phases") == 0)
				bit = 16;
			else
				return fail(&r, "unknown key '%.64s' (name, "
				    "phase, listen, ttl_s, phases)", key);
			if (seen & bit)
				return fail(&r, "key '%s' given twice", key);
			seen |= bit;
			if (bit == 8) {
				if (number(&r, 31536000, &b->ttl_s, "ttl_s") ==
				    -1)
					return -1;
			} else if (bit == 16) {
				if (literal(&r, "null") == -1 && phases(&r) ==
				    -1)
					return -1;
			} else if (bit == 4 && literal(&r, "null") == 0) {
				;
			} else {
				if (peek(&r) != '"')
					return fail(&r, "%s: expected a string",
					    key);
				if (str(&r, &v, &vlen) == -1)
					return -1;
				if (bit == 1) {
					if (!eg_session_name_ok(v, vlen))
						return fail(&r, "bad session "
						    "name '%.64s': 1 to %d of "
						    "A-Z a-z 0-9 _ . -, not "
						    "beginning with . or -", v,
						    EG_SESSION_NAME_MAX);
					memcpy(b->name, v, vlen + 1);
				} else if (bit == 2) {
					if (!eg_phase_name_ok(v, vlen))
						return fail(&r, "bad phase "
						    "name '%.64s'", v);
					memcpy(b->phase, v, vlen + 1);
				} else {
					if (vlen == 0 || vlen >=
					    sizeof(b->listen))
						return fail(&r, "listen: "
						    "expected ADDR:PORT");
					memcpy(b->listen, v, vlen + 1);
				}
			}
			if (peek(&r) == ',') {
				r.i++;
				continue;
			}
			if (expect(&r, '}') == -1)
				return -1;
			break;
		}
	if (peek(&r) != -1)
		return fail(&r, "bad JSON at byte %zu: trailing data", r.i);
	if (!(seen & 1))
		return fail(&r, "name: required");
	return 0;
}
