/*
 * fuzz-auditparse.c: libFuzzer target for the audit line parser.  A line
 * that parses must be made again, byte for byte, from what the parser
 * returned (so every pointer is inside the input and nothing was skipped
 * or invented); every value must unescape and escape again to itself
 * (the writer's escaping is canonical); chain= is last; the target of a
 * connection line lies inside its subject.  A line that does not parse
 * must leave the result empty.  ("No-such-key" is outside the key
 * alphabet, so no line has it.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auditparse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	rebuilt[16384];
static size_t	rn;

static void
put(const char *s, size_t n)
{
	if (rn + n > sizeof(rebuilt))
		abort();
	memcpy(rebuilt + rn, s, n);
	rn += n;
}

static void
inside(const char *p, size_t n, const char *base, size_t len)
{
	if (p < base || p + n > base + len)
		abort();
}

/* The writers' escaping of raw bytes, appended to out. */
static size_t
escape(const char *raw, size_t n, int json, char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c;
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		c = (unsigned char)raw[i];
		if (json && (c == '"' || c == '\\')) {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (json && (c < 0x20 || c >= 0x7f)) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[c >> 4];
			out[o + 5] = hex[c & 15];
			o += 6;
		} else if (!json && (c <= ' ' || c >= 0x7f || c == '"' ||
		    c == '\\')) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else
			out[o++] = (char)c;
	}
	return o;
}

static void
canonical(const char *v, size_t n, int json)
{
	char raw[8192], again[8192 * 6];
	int r;

	if (n >= sizeof(raw))
		return;
	r = eg_audit_unescape(v, n, json, raw, sizeof(raw));
	if (r < 0)
		abort();
	if (escape(raw, (size_t)r, json, again) != n ||
	    memcmp(again, v, n) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct egress_audit_line zero;
	struct egress_audit_line l;
	const char *s = (const char *)data, *h;
	size_t i, len = size, hl;
	unsigned port;
	int str;

	if (egress_audit_parse(s, size, &l) != 0) {
		if (memcmp(&l, &zero, offsetof(struct egress_audit_line,
		    field)) != 0)
			abort();
		return 0;
	}
	if (len > 0 && s[len - 1] == '\n')
		len--;
	if (l.nfields > 48)
		abort();
	rn = 0;
	if (!l.json) {
		put(l.ts, l.tslen);
		put(" ", 1);
		put(l.event, l.eventlen);
		put(" ", 1);
		put(l.subject, l.subjectlen);
		inside(l.subject, l.subjectlen, s, len);
		canonical(l.subject, l.subjectlen, 0);
	} else {
		put("{\"ts\":\"", 7);
		put(l.ts, l.tslen);
		put("\",\"event\":\"", 11);
		put(l.event, l.eventlen);
		put("\"", 1);
		if (!(l.subjectlen == 1 && l.subject[0] == '-'))
			inside(l.subject, l.subjectlen, s, len);
	}
	inside(l.ts, l.tslen, s, len);
	inside(l.event, l.eventlen, s, len);
	for (i = 0; i < l.nfields; i++) {
		inside(l.field[i].key, l.field[i].keylen, s, len);
		inside(l.field[i].val, l.field[i].vallen, s, len);
		if (l.json) {
			str = l.field[i].val > s && l.field[i].val[-1] == '"';
			put(",\"", 2);
			put(l.field[i].key, l.field[i].keylen);
			put("\":", 2);
			if (str)
				put("\"", 1);
			put(l.field[i].val, l.field[i].vallen);
			if (str)
				put("\"", 1);
			if (str)
				canonical(l.field[i].val, l.field[i].vallen, 1);
		} else {
			put(" ", 1);
			put(l.field[i].key, l.field[i].keylen);
			put("=", 1);
			put(l.field[i].val, l.field[i].vallen);
			canonical(l.field[i].val, l.field[i].vallen, 0);
		}
		if (l.field[i].keylen == 5 &&
		    memcmp(l.field[i].key, "chain", 5) == 0 &&
		    (i + 1 != l.nfields || l.field[i].vallen != 64))
			abort();
		if (egress_audit_get(&l, "No-such-key", &hl) != NULL)
			abort();
	}
	if (l.json)
		put("}", 1);
	if (rn != len || memcmp(rebuilt, s, len) != 0)
		abort();
	if (egress_audit_target(&l, &h, &hl, &port) == 0) {
		if (port > 65535 || h != l.subject || hl > l.subjectlen)
			abort();
	}
	return 0;
}
