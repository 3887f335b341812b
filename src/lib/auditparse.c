/*
 * auditparse.c: the audit line parser (egress_audit_parse() in egress.h).
 *
 * It accepts exactly what audit.c writes (and the record module's START,
 * CHECKPOINT and chain=), nothing else, so that a tool that reads a log
 * back never acts on a line the proxy could not have written:
 *
 *   text  TS SP EVENT SP SUBJECT *(SP KEY "=" VALUE) [LF]
 *   JSON  {"ts":"TS","event":"EVENT" *(,"KEY":(STRING|NUMBER)) } [LF]
 *
 * TS is 2026-11-29T18:00:00.123Z; EVENT one of the eight names; a text
 * VALUE is one or more bytes '!'..'~' where '\' and '"' appear only in
 * the writer's escape \xHH (lower-case hex, of a byte the writer
 * escapes); a JSON STRING holds bytes 0x20..0x7e with \" \\ and \u00HH
 * (of a byte below 0x20 or above 0x7e) as its only escapes; a NUMBER is
 * decimal digits without a leading zero.  KEY is [a-z][a-z0-9_]*.  Keys
 * are unique, chain= (64 lower-case hex) is the last one when present.
 * Subjects: host:port or "-" (ALLOW BLOCK FAIL CLOSE), a phase or session
 * name (PHASE, SESSION), "-" (START, CHECKPOINT).
 *
 * Nothing is allocated or copied: every pointer points into the line
 * (or at a static "-").  The input need not be NUL-terminated.
 */
#include "egress-int.h"

#include "auditparse.h"

#define AP_KEY_MAX	32
#define AP_NAME_MAX	64	/* phase and session names */
#define AP_TS_LEN	24	/* 2026-11-29T18:00:00.123Z */
#define AP_CHAIN_LEN	64

static const char *const ap_events[] = {
	"ALLOW", "BLOCK", "FAIL", "CLOSE", "PHASE", "SESSION", "START",
	"CHECKPOINT"
};

static const char ap_dash[] = "-";

static int
ap_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
ap_hexlc(char c)
{
	return ap_digit(c) || (c >= 'a' && c <= 'f');
}

static unsigned
ap_hexval(char c)
{
	return ap_digit(c) ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
}

/* n digits at s as a number, or -1. */
static int
ap_num(const char *s, size_t n)
{
	int v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!ap_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* YYYY-MM-DDTHH:MM:SS.mmmZ, with plausible ranges. */
static int
ap_ts_ok(const char *s, size_t n)
{
	int mo, d, h, mi, se;

	if (n != AP_TS_LEN || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z')
		return 0;
	if (ap_num(s, 4) < 0 || ap_num(s + 20, 3) < 0)
		return 0;
	mo = ap_num(s + 5, 2);
	d = ap_num(s + 8, 2);
	h = ap_num(s + 11, 2);
	mi = ap_num(s + 14, 2);
	se = ap_num(s + 17, 2);
	return mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h >= 0 &&
	    h <= 23 && mi >= 0 && mi <= 59 && se >= 0 && se <= 60;
}

static int
ap_event(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < nitems(ap_events); i++)
		if (strlen(ap_events[i]) == n && memcmp(ap_events[i], s, n) == 0)
			return (int)i;
	return -1;
}

/* Phase and session names: 1 to 64 of A-Z a-z 0-9 . _ - */
static int
ap_name_ok(const char *s, size_t n)
{
	size_t i;
	char c;

	if (n == 0 || n > AP_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    ap_digit(c) || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static int
ap_key_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > AP_KEY_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || ap_digit(s[i]) ||
		    s[i] == '_'))
			return 0;
	return 1;
}

/* A byte the text writer leaves as it is. */
static int
ap_text_plain(unsigned char ch)
{
	return ch > ' ' && ch < 0x7f && ch != '\\' && ch != '"';
}

/* A byte the JSON writer leaves as it is. */
static int
ap_json_plain(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"';
}

/* A text value: non-empty, plain bytes and canonical \xHH escapes. */
static int
ap_text_val_ok(const char *s, size_t n)
{
	size_t i = 0;
	unsigned b;

	if (n == 0)
		return 0;
	while (i < n) {
		if (ap_text_plain((unsigned char)s[i])) {
			i++;
			continue;
		}
		if (s[i] != '\\' || n - i < 4 || s[i + 1] != 'x' ||
		    !ap_hexlc(s[i + 2]) || !ap_hexlc(s[i + 3]))
			return 0;
		b = ap_hexval(s[i + 2]) << 4 | ap_hexval(s[i + 3]);
		if (b == 0 || ap_text_plain((unsigned char)b))
			return 0;	/* NUL ends a C string: never written */
		i += 4;
	}
	return 1;
}

static int
ap_chain_ok(const char *s, size_t n)
{
	size_t i;

	if (n != AP_CHAIN_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!ap_hexlc(s[i]))
			return 0;
	return 1;
}

/* Add key/value; -1 when full or the key is already there. */
static int
ap_add(struct egress_audit_line *l, const char *k, size_t kl, const char *v,
    size_t vl)
{
	size_t i;

	if (l->nfields >= nitems(l->field))
		return -1;
	for (i = 0; i < l->nfields; i++)
		if (l->field[i].keylen == kl && memcmp(l->field[i].key, k, kl) ==
		    0)
			return -1;
	l->field[l->nfields].key = k;
	l->field[l->nfields].keylen = kl;
	l->field[l->nfields].val = v;
	l->field[l->nfields].vallen = vl;
	l->nfields++;
	return 0;
}

/* Checks common to both forms, once every field is in. */
static int
ap_finish(struct egress_audit_line *l)
{
	size_t i;

	for (i = 0; i < l->nfields; i++) {
		if (l->field[i].keylen != 5 ||
		    memcmp(l->field[i].key, "chain", 5) != 0)
			continue;
		if (i + 1 != l->nfields ||
		    !ap_chain_ok(l->field[i].val, l->field[i].vallen))
			return -1;
	}
	return 0;
}

static int
ap_text_subject_ok(int ev, const char *s, size_t n)
{
	switch (ev) {
	case EG_AEV_PHASE:
		return ap_name_ok(s, n);
	case EG_AEV_SESSION:
		return ap_name_ok(s, n) && s[0] != '.' && s[0] != '-';
	case EG_AEV_START:
	case EG_AEV_CHECKPOINT:
		return n == 1 && s[0] == '-';
	default:
		/* host:port, "-", or a refused request's raw target (port 0) */
		return ap_text_val_ok(s, n);
	}
}

static int
ap_parse_text(const char *p, size_t len, struct egress_audit_line *l)
{
	size_t i, k, eq;
	int ev;

	if (len < AP_TS_LEN + 1 || p[AP_TS_LEN] != ' ' ||
	    !ap_ts_ok(p, AP_TS_LEN))
		return -1;
	l->ts = p;
	l->tslen = AP_TS_LEN;
	i = AP_TS_LEN + 1;
	for (k = i; k < len && p[k] != ' '; k++)
		;
	if ((ev = ap_event(p + i, k - i)) < 0 || k == len)
		return -1;
	l->event = p + i;
	l->eventlen = k - i;
	i = k + 1;
	for (k = i; k < len && p[k] != ' '; k++)
		;
	if (!ap_text_subject_ok(ev, p + i, k - i))
		return -1;
	l->subject = p + i;
	l->subjectlen = k - i;
	while (k < len) {
		/* p[k] is the space before a key */
		i = k + 1;
		for (k = i; k < len && p[k] != ' '; k++)
			;
		for (eq = i; eq < k && p[eq] != '='; eq++)
			;
		if (eq == k || !ap_key_ok(p + i, eq - i) ||
		    !ap_text_val_ok(p + eq + 1, k - eq - 1) ||
		    ap_add(l, p + i, eq - i, p + eq + 1, k - eq - 1) == -1)
			return -1;
	}
	return ap_finish(l);
}

/*
 * A JSON string at p[*i] (the opening quote); on success *i is past the
 * closing quote and the contents are [s, s + n).
 */
static int
ap_json_str(const char *p, size_t len, size_t *i, const char **s, size_t *n)
{
	size_t j = *i;
	unsigned b;

	if (j >= len || p[j] != '"')
		return -1;
	*s = p + ++j;
	while (j < len && p[j] != '"') {
		if (ap_json_plain((unsigned char)p[j])) {
			j++;
			continue;
		}
		if (p[j] != '\\' || len - j < 2)
			return -1;
		if (p[j + 1] == '"' || p[j + 1] == '\\') {
			j += 2;
			continue;
		}
		if (len - j < 6 || memcmp(p + j + 1, "u00", 3) != 0 ||
		    !ap_hexlc(p[j + 4]) || !ap_hexlc(p[j + 5]))
			return -1;
		b = ap_hexval(p[j + 4]) << 4 | ap_hexval(p[j + 5]);
		if (b == 0 || (b >= 0x20 && b < 0x7f))
			return -1;
		j += 6;
	}
	if (j >= len)
		return -1;
	*n = (size_t)(p + j - *s);
	*i = j + 1;
	return 0;
}

/* Decimal digits, no leading zero, at most 20. */
static int
ap_json_num(const char *p, size_t len, size_t *i, size_t *n)
{
	size_t j = *i;

	while (j < len && ap_digit(p[j]))
		j++;
	if (j == *i || j - *i > 20 || (p[*i] == '0' && j - *i > 1))
		return -1;
	*n = j - *i;
	*i = j;
	return 0;
}

/* The value of key in the fields, and whether it was a string. */
static const struct egress_audit_field *
ap_find(const struct egress_audit_line *l, const char *key)
{
	size_t i, kl = strlen(key);

	for (i = 0; i < l->nfields; i++)
		if (l->field[i].keylen == kl &&
		    memcmp(l->field[i].key, key, kl) == 0)
			return &l->field[i];
	return NULL;
}

static int
ap_parse_json(const char *p, size_t len, struct egress_audit_line *l)
{
	const struct egress_audit_field *f, *fp;
	const char *k, *v;
	size_t i, kl, vl;
	int ev;
	char strs[nitems(l->field)];	/* 1: field i is a string */

	if (len < 8 || memcmp(p, "{\"ts\":", 6) != 0)
		return -1;
	i = 6;
	if (ap_json_str(p, len, &i, &l->ts, &l->tslen) == -1 ||
	    !ap_ts_ok(l->ts, l->tslen))
		return -1;
	if (len - i < 9 || memcmp(p + i, ",\"event\":", 9) != 0)
		return -1;
	i += 9;
	if (ap_json_str(p, len, &i, &l->event, &l->eventlen) == -1 ||
	    (ev = ap_event(l->event, l->eventlen)) < 0)
		return -1;
	while (i < len && p[i] == ',') {
		i++;
		if (ap_json_str(p, len, &i, &k, &kl) == -1 ||
		    !ap_key_ok(k, kl) || i >= len || p[i++] != ':' ||
		    (kl == 2 && memcmp(k, "ts", 2) == 0) ||
		    (kl == 5 && memcmp(k, "event", 5) == 0) || i >= len)
			return -1;
		if (p[i] == '"') {
			if (ap_json_str(p, len, &i, &v, &vl) == -1)
				return -1;
			strs[l->nfields < nitems(strs) ? l->nfields : 0] = 1;
		} else {
			v = p + i;
			if (ap_json_num(p, len, &i, &vl) == -1)
				return -1;
			strs[l->nfields < nitems(strs) ? l->nfields : 0] = 0;
		}
		if (ap_add(l, k, kl, v, vl) == -1)
			return -1;
	}
	if (i + 1 != len || p[i] != '}')
		return -1;
	if ((f = ap_find(l, "chain")) != NULL && !strs[f - l->field])
		return -1;
	switch (ev) {
	case EG_AEV_PHASE:
	case EG_AEV_SESSION:
		f = ap_find(l, ev == EG_AEV_PHASE ? "phase" : "session");
		if (f == NULL || !strs[f - l->field] ||
		    !ap_name_ok(f->val, f->vallen) || (ev == EG_AEV_SESSION &&
		    (f->val[0] == '.' || f->val[0] == '-')))
			return -1;
		l->subject = f->val;
		l->subjectlen = f->vallen;
		break;
	case EG_AEV_START:
	case EG_AEV_CHECKPOINT:
		l->subject = ap_dash;
		l->subjectlen = 1;
		break;
	default:
		f = ap_find(l, "host");
		fp = ap_find(l, "port");
		if (f == NULL || fp == NULL || !strs[f - l->field] ||
		    strs[fp - l->field] || f->vallen == 0 || fp->vallen > 5 ||
		    ap_num(fp->val, fp->vallen) > 65535)
			return -1;
		l->subject = f->val;
		l->subjectlen = f->vallen;
		break;
	}
	return ap_finish(l);
}

int
egress_audit_parse(const char *line, size_t len,
    struct egress_audit_line *out)
{
	size_t i;
	int rc;

	if (line == NULL || out == NULL)
		return -1;
	memset(out, 0, offsetof(struct egress_audit_line, field));
	if (len > 0 && line[len - 1] == '\n')
		len--;
	/* no raw control byte, no byte above '~', anywhere */
	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 ||
		    (unsigned char)line[i] >= 0x7f)
			return -1;
	if (len > 0 && line[0] == '{') {
		out->json = 1;
		rc = ap_parse_json(line, len, out);
	} else
		rc = ap_parse_text(line, len, out);
	if (rc == -1) {
		memset(out, 0, offsetof(struct egress_audit_line, field));
		return -1;
	}
	return 0;
}

const char *
egress_audit_get(const struct egress_audit_line *l, const char *key,
    size_t *len)
{
	const struct egress_audit_field *f;

	if (l == NULL || key == NULL || (f = ap_find(l, key)) == NULL)
		return NULL;
	if (len != NULL)
		*len = f->vallen;
	return f->val;
}

int
egress_audit_target(const struct egress_audit_line *l, const char **host,
    size_t *hostlen, unsigned *port)
{
	const char *v;
	size_t n, i;
	int ev;

	if (l == NULL || l->event == NULL)
		return -1;
	ev = (int)eg_audit_event(l);
	if (ev != EG_AEV_ALLOW && ev != EG_AEV_BLOCK && ev != EG_AEV_FAIL &&
	    ev != EG_AEV_CLOSE)
		return -1;
	if (l->json) {
		v = egress_audit_get(l, "port", &n);
		*host = l->subject;
		*hostlen = l->subjectlen;
		*port = v != NULL ? (unsigned)ap_num(v, n) : 0;
		return 0;
	}
	/* host:port; "-" and a refused request's raw target have no port */
	*host = l->subject;
	*hostlen = l->subjectlen;
	*port = 0;
	for (i = l->subjectlen; i > 0 && ap_digit(l->subject[i - 1]); i--)
		;
	n = l->subjectlen - i;
	if (i >= 2 && l->subject[i - 1] == ':' && n >= 1 && n <= 5 &&
	    l->subject[i] != '0' && ap_num(l->subject + i, n) <= 65535) {
		*hostlen = i - 1;
		*port = (unsigned)ap_num(l->subject + i, n);
	}
	return 0;
}

enum eg_audit_ev
eg_audit_event(const struct egress_audit_line *l)
{
	int ev = ap_event(l->event, l->eventlen);

	return ev < 0 ? EG_AEV_ALLOW : (enum eg_audit_ev)ev;
}

int
eg_audit_unescape(const char *v, size_t len, int json, char *out, size_t cap)
{
	size_t i = 0, o = 0;
	unsigned b;

	if (cap == 0)
		return -1;
	while (i < len) {
		if (o + 1 >= cap)
			return -1;
		if (v[i] != '\\') {
			out[o++] = v[i++];
			continue;
		}
		if (!json && len - i >= 4 && v[i + 1] == 'x' &&
		    ap_hexlc(v[i + 2]) && ap_hexlc(v[i + 3])) {
			b = ap_hexval(v[i + 2]) << 4 | ap_hexval(v[i + 3]);
			i += 4;
		} else if (json && len - i >= 2 &&
		    (v[i + 1] == '"' || v[i + 1] == '\\')) {
			b = (unsigned char)v[i + 1];
			i += 2;
		} else if (json && len - i >= 6 &&
		    memcmp(v + i + 1, "u00", 3) == 0 && ap_hexlc(v[i + 4]) &&
		    ap_hexlc(v[i + 5])) {
			b = ap_hexval(v[i + 4]) << 4 | ap_hexval(v[i + 5]);
			i += 6;
		} else
			return -1;
		out[o++] = (char)b;
	}
	out[o] = '\0';
	return (int)o;
}

int
eg_audit_u64(const char *v, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;
	size_t i;

	if (len == 0 || len > 20 || (v[0] == '0' && len > 1))
		return -1;
	for (i = 0; i < len; i++) {
		if (!ap_digit(v[i]))
			return -1;
		if (n > (UINT64_MAX - (uint64_t)(v[i] - '0')) / 10)
			return -1;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	if (n > max)
		return -1;
	*out = n;
	return 0;
}
