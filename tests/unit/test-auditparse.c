/*
 * test-auditparse.c: the audit line parser.  Every kind of line the
 * writer (audit.c) makes, text and JSON, is formatted by the writer
 * itself and parsed back; the record module's START, CHECKPOINT and
 * chain= lines (SPEC "### record") are parsed from their documented
 * form; and lines outside the grammar are refused.
 */
#include "egress-int.h"

#include "audit.h"
#include "auditparse.h"
#include "tap.h"

static const char	*C64 =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static int
val_is(const struct egress_audit_line *l, const char *key, const char *want)
{
	const char *v;
	size_t n;

	v = egress_audit_get(l, key, &n);
	if (v == NULL)
		return want == NULL;
	return want != NULL && n == strlen(want) && memcmp(v, want, n) == 0;
}

static int
span_is(const char *p, size_t n, const char *want)
{
	return p != NULL && n == strlen(want) && memcmp(p, want, n) == 0;
}

/* Format ev both ways with the writer, parse both back. */
static void
both(const struct egress_event *ev, const char *what,
    struct egress_audit_line *t, struct egress_audit_line *j,
    char *tb, char *jb)
{
	size_t nt, nj;

	nt = eg_audit_format(ev, 0, tb, EG_AUDIT_LINE);
	nj = eg_audit_format(ev, 1, jb, EG_AUDIT_LINE);
	ok(egress_audit_parse(tb, nt, t) == 0, "%s: text parses", what);
	ok(egress_audit_parse(jb, nj, j) == 0, "%s: JSON parses", what);
	ok(!t->json && j->json, "%s: json flag", what);
	tb[nt - 1] = '\0';
	jb[nj - 1] = '\0';
	diag("%s", tb);
	diag("%s", jb);
}

static void
test_writer_lines(void)
{
	static char tb[EG_AUDIT_LINE], jb[EG_AUDIT_LINE];
	struct egress_audit_line t, j;
	struct egress_event ev;
	const char *h;
	size_t hl;
	unsigned port;
	char raw[64];

	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_ALLOW;
	ev.ts_ms = 1795975200123LL;	/* 2026-11-29T18:00:00.123Z */
	ev.id = 17;
	ev.host = "api.anthropic.com";
	ev.port = 443;
	ev.phase = "agent";
	ev.client = "unix";
	ev.method = "CONNECT";
	ev.addr = "160.79.104.10";
	ev.rule = "api.anthropic.com";
	both(&ev, "ALLOW", &t, &j, tb, jb);
	ok(span_is(t.ts, t.tslen, "2026-11-29T18:00:00.123Z") &&
	    span_is(j.ts, j.tslen, "2026-11-29T18:00:00.123Z"), "ALLOW: ts");
	ok(span_is(t.event, t.eventlen, "ALLOW") &&
	    span_is(j.event, j.eventlen, "ALLOW"), "ALLOW: event");
	ok(span_is(t.subject, t.subjectlen, "api.anthropic.com:443"),
	    "ALLOW text: subject host:port");
	ok(span_is(j.subject, j.subjectlen, "api.anthropic.com") &&
	    val_is(&j, "port", "443") && val_is(&j, "host",
	    "api.anthropic.com"), "ALLOW JSON: subject is the host");
	is_int(t.nfields, 6, "ALLOW text: id phase client method addr rule");
	is_int(j.nfields, 8, "ALLOW JSON: host port + those six");
	ok(val_is(&t, "id", "17") && val_is(&t, "phase", "agent") &&
	    val_is(&t, "client", "unix") && val_is(&t, "method", "CONNECT") &&
	    val_is(&t, "addr", "160.79.104.10") &&
	    val_is(&t, "rule", "api.anthropic.com") &&
	    val_is(&t, "reason", NULL), "ALLOW text: fields");
	ok(val_is(&j, "id", "17") && val_is(&j, "phase", "agent") &&
	    val_is(&j, "rule", "api.anthropic.com"), "ALLOW JSON: fields");
	ok(span_is(t.field[0].key, t.field[0].keylen, "id") &&
	    span_is(t.field[5].key, t.field[5].keylen, "rule"),
	    "text fields in order");
	ok(egress_audit_target(&t, &h, &hl, &port) == 0 &&
	    span_is(h, hl, "api.anthropic.com") && port == 443,
	    "text target");
	ok(egress_audit_target(&j, &h, &hl, &port) == 0 &&
	    span_is(h, hl, "api.anthropic.com") && port == 443,
	    "JSON target");
	is_int(eg_audit_event(&t), EG_AEV_ALLOW, "event enum");

	/* IPv6 target, session, report mode */
	ev.host = "[2001:db8::1]";
	ev.port = 8443;
	ev.session = "run-42";
	ev.rule = NULL;
	ev.report = "not_allowed";
	both(&ev, "ALLOW report", &t, &j, tb, jb);
	ok(val_is(&t, "rule", "-") && val_is(&t, "report", "not_allowed") &&
	    val_is(&t, "session", "run-42"), "report-mode ALLOW fields");
	ok(span_is(t.field[1].key, t.field[1].keylen, "phase") &&
	    span_is(t.field[2].key, t.field[2].keylen, "session"),
	    "session= right after phase=");
	ok(egress_audit_target(&t, &h, &hl, &port) == 0 &&
	    span_is(h, hl, "[2001:db8::1]") && port == 8443, "IPv6 target");

	/* BLOCK not_allowed */
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_BLOCK;
	ev.ts_ms = 1795975200456LL;
	ev.id = 18;
	ev.host = "github.com";
	ev.port = 443;
	ev.phase = "agent";
	ev.client = "127.0.0.1:51234";
	ev.method = "CONNECT";
	ev.reason = "not_allowed";
	both(&ev, "BLOCK", &t, &j, tb, jb);
	ok(val_is(&t, "reason", "not_allowed") &&
	    val_is(&j, "reason", "not_allowed") && val_is(&t, "rule", NULL),
	    "BLOCK reason");

	/* a bad request: raw target, escaped, no port */
	ev.host = "ex ample\"\\\x01\x7f\xff:443";
	ev.port = 0;
	ev.reason = "bad_request";
	ev.method = "CONNECT";
	both(&ev, "BLOCK bad_request", &t, &j, tb, jb);
	ok(span_is(t.subject, t.subjectlen,
	    "ex\\x20ample\\x22\\x5c\\x01\\x7f\\xff:443"), "text escapes");
	ok(egress_audit_target(&t, &h, &hl, &port) == 0 && port == 443,
	    "text: a raw target that looks like host:port splits");
	ok(egress_audit_target(&j, &h, &hl, &port) == 0 && port == 0,
	    "JSON: its port is 0");
	is_int(eg_audit_unescape(t.subject, t.subjectlen, 0, raw,
	    sizeof(raw)), 17, "text unescape length");
	ok(strcmp(raw, "ex ample\"\\\x01\x7f\xff:443") == 0, "text unescape");
	is_int(eg_audit_unescape(j.subject, j.subjectlen, 1, raw,
	    sizeof(raw)), 17, "JSON unescape length");
	ok(strcmp(raw, "ex ample\"\\\x01\x7f\xff:443") == 0, "JSON unescape");
	is_int(eg_audit_unescape(t.subject, t.subjectlen, 0, raw, 8), -1,
	    "unescape: too small");

	/* no target at all (timeout before a request line) */
	ev.host = NULL;
	ev.method = NULL;
	ev.reason = "timeout";
	both(&ev, "BLOCK timeout", &t, &j, tb, jb);
	ok(span_is(t.subject, t.subjectlen, "-") &&
	    span_is(j.subject, j.subjectlen, "-") && val_is(&j, "port", "0"),
	    "no target: -");
	ok(egress_audit_target(&t, &h, &hl, &port) == 0 && port == 0 &&
	    span_is(h, hl, "-"), "no target: host - port 0");

	/* FAIL, CLOSE */
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_FAIL;
	ev.ts_ms = 1795975201000LL;
	ev.id = 19;
	ev.host = "pkgs.example.com";
	ev.port = 443;
	ev.phase = "setup";
	ev.client = "unix";
	ev.method = "CONNECT";
	ev.reason = "dns_failure";
	both(&ev, "FAIL", &t, &j, tb, jb);
	ok(val_is(&t, "reason", "dns_failure"), "FAIL reason");
	ev.type = EGRESS_EV_CLOSE;
	ev.reason = NULL;
	ev.up = 5123;
	ev.down = 98321;
	ev.ms = 1878;
	ev.end = "sni_mismatch";
	ev.sni = "evil.example";
	both(&ev, "CLOSE", &t, &j, tb, jb);
	ok(val_is(&t, "up", "5123") && val_is(&j, "down", "98321") &&
	    val_is(&t, "end", "sni_mismatch") && val_is(&j, "sni",
	    "evil.example"), "CLOSE fields");

	/* PHASE, SESSION */
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_PHASE;
	ev.ts_ms = 1795975500000LL;
	ev.phase = "judge";
	ev.from = "agent";
	ev.by = "admin";
	ev.closed = 2;
	both(&ev, "PHASE", &t, &j, tb, jb);
	ok(span_is(t.subject, t.subjectlen, "judge") &&
	    span_is(j.subject, j.subjectlen, "judge"), "PHASE subject");
	ok(val_is(&t, "from", "agent") && val_is(&j, "closed", "2"),
	    "PHASE fields");
	ok(egress_audit_target(&t, &h, &hl, &port) == -1,
	    "PHASE has no target");
	ev.session = "ci-7";
	both(&ev, "PHASE session", &t, &j, tb, jb);
	ok(val_is(&t, "session", "ci-7"), "PHASE session=");
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_SESSION;
	ev.ts_ms = 1795975500000LL;
	ev.session = "run-42";
	ev.action = "open";
	ev.phase = "setup";
	ev.by = "admin";
	both(&ev, "SESSION open", &t, &j, tb, jb);
	ok(span_is(t.subject, t.subjectlen, "run-42") &&
	    span_is(j.subject, j.subjectlen, "run-42") &&
	    val_is(&t, "action", "open") && val_is(&j, "phase", "setup"),
	    "SESSION open");
	ev.action = "close";
	ev.closed = 3;
	ev.by = "ttl";
	both(&ev, "SESSION close", &t, &j, tb, jb);
	ok(val_is(&t, "closed", "3") && val_is(&j, "by", "ttl"),
	    "SESSION close");
}

/* Lines in the record module's documented form. */
static const char *const good_lines[] = {
	"2026-11-29T18:00:00.000Z START - run=0b6f3c1e-8a52-4d7e-9f10-"
	    "2c3d4e5f6a7b config=%s prev=- chain=%s",
	"2026-11-29T18:00:00.000Z START - run=0b6f3c1e-8a52-4d7e-9f10-"
	    "2c3d4e5f6a7b config=%s prev=%s chain=%s\n",
	"2026-11-29T18:00:01.000Z CHECKPOINT - seq=1 lines=1000 head=%s "
	    "sig=MEUCIQDx+/abc== chain=%s",
	"2026-11-29T18:00:00.123Z ALLOW api.anthropic.com:443 id=17 "
	    "phase=agent session=r1 step=build client=unix method=CONNECT "
	    "addr=160.79.104.10 rule=api.anthropic.com chain=%s",
	"{\"ts\":\"2026-11-29T18:00:00.000Z\",\"event\":\"START\",\"run\":"
	    "\"0b6f3c1e-8a52-4d7e-9f10-2c3d4e5f6a7b\",\"config\":\"%s\","
	    "\"prev\":\"-\",\"chain\":\"%s\"}",
	"{\"ts\":\"2026-11-29T18:00:01.000Z\",\"event\":\"CHECKPOINT\","
	    "\"seq\":1,\"lines\":1000,\"head\":\"%s\",\"sig\":\"MEUC+/==\","
	    "\"chain\":\"%s\"}\n",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a.example\",\"port\":443,\"id\":1,\"phase\":\"p\",\"step\":"
	    "\"s\",\"client\":\"unix\",\"chain\":\"%s\"}",
	"2026-02-28T23:59:60.999Z PHASE a.B_c-9 from=x by=api closed=0",
	"2026-02-28T23:59:60.999Z PHASE - from=x by=api closed=0",
};

static const char *const bad_lines[] = {
	"",
	"\n",
	"2026-11-29T18:00:00.123Z",
	"2026-11-29T18:00:00.123Z ALLOW",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=",
	"2026-11-29T18:00:00.123Z ALLOW a:443 =1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1 ",
	"2026-11-29T18:00:00.123Z ALLOW a:443  id=1",
	"2026-11-29T18:00:00.123Z  ALLOW a:443 id=1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1 id=2",
	"2026-11-29T18:00:00.123Z ALLOW a:443 Id=1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 1d=1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 i-d=1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\"1\"",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=a\\b",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\\x41",	/* 'A' needs none */
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\\x00",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\\x2",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\\X20",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\\x2A",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1\r",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1\n\n",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1\t",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=\xc3\xa9",
	"2026-11-29T18:00:00.123Z allow a:443 id=1",
	"2026-11-29T18:00:00.123Z DENY a:443 id=1",
	"2026-11-29T18:00:00.123 ALLOW a:443 id=1",
	"2026-11-29 18:00:00.123Z ALLOW a:443 id=1",
	"2026-13-29T18:00:00.123Z ALLOW a:443 id=1",
	"2026-11-00T18:00:00.123Z ALLOW a:443 id=1",
	"2026-11-29T24:00:00.123Z ALLOW a:443 id=1",
	"2026-11-29T18:60:00.123Z ALLOW a:443 id=1",
	"2026-11-29T18:00:00.12aZ ALLOW a:443 id=1",
	"+026-11-29T18:00:00.123Z ALLOW a:443 id=1",
	"2026-11-29T18:00:00.123Z PHASE bad/name from=a",
	"2026-11-29T18:00:00.123Z PHASE a:b from=a",
	"2026-11-29T18:00:00.123Z SESSION -x action=open",
	"2026-11-29T18:00:00.123Z SESSION .x action=open",
	"2026-11-29T18:00:00.123Z SESSION " "0123456789012345678901234567890"
	    "12345678901234567890123456789012345 action=open",
	"2026-11-29T18:00:00.123Z START x run=1",
	"2026-11-29T18:00:00.123Z CHECKPOINT a:1 seq=1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 chain=%s id=1",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1 chain=abc",
	"2026-11-29T18:00:00.123Z ALLOW a:443 id=1 chain="
	    "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":\"443\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":0443}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":65536}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443} ",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\", \"port\":443}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"port\":443}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"ts\":\"x\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":null}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":-1}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":{}}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":\"\\n\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":\"\\u0041\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":\"\\u001B\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"x\":\"a\tb\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"chain\":\"%s\",\"id\":1}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443,\"chain\":1}",
	"{\"event\":\"ALLOW\",\"ts\":\"2026-11-29T18:00:00.123Z\",\"host\":"
	    "\"a\",\"port\":443}",
	"{ \"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"ALLOW\",\"host\":"
	    "\"a\",\"port\":443}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"PHASE\",\"from\":"
	    "\"a\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"PHASE\",\"phase\":"
	    "\"a b\"}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"SESSION\","
	    "\"session\":1}",
	"{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":\"NOPE\"}",
};

static void
test_record_lines(void)
{
	struct egress_audit_line l;
	char line[1024];
	size_t i, n;
	const char *c;

	for (i = 0; i < nitems(good_lines); i++) {
		n = (size_t)snprintf(line, sizeof(line), good_lines[i], C64, C64,
		    C64);
		ok(egress_audit_parse(line, n, &l) == 0, "good line %zu parses",
		    i);
		if (l.nfields == 0)
			continue;
		/* chain= last: what it covers ends before " chain=" */
		c = egress_audit_get(&l, "chain", NULL);
		if (c != NULL)
			ok(l.field[l.nfields - 1].val == c && (l.json ?
			    memcmp(l.field[l.nfields - 1].key - 2, ",\"chain\"",
			    8) == 0 : memcmp(l.field[l.nfields - 1].key - 1,
			    " chain=", 7) == 0), "good line %zu: chain last",
			    i);
	}
	n = (size_t)snprintf(line, sizeof(line), good_lines[2], C64, C64);
	egress_audit_parse(line, n, &l);
	ok(span_is(l.subject, l.subjectlen, "-") &&
	    val_is(&l, "sig", "MEUCIQDx+/abc==") && val_is(&l, "seq", "1"),
	    "CHECKPOINT: sig with = and /");
	n = (size_t)snprintf(line, sizeof(line), good_lines[5], C64, C64);
	egress_audit_parse(line, n, &l);
	ok(span_is(l.subject, l.subjectlen, "-") &&
	    val_is(&l, "lines", "1000") && val_is(&l, "head", C64),
	    "JSON CHECKPOINT");
	n = (size_t)snprintf(line, sizeof(line), good_lines[3], C64);
	egress_audit_parse(line, n, &l);
	ok(val_is(&l, "step", "build"), "step=");

	for (i = 0; i < nitems(bad_lines); i++) {
		n = (size_t)snprintf(line, sizeof(line), bad_lines[i], C64);
		memset(&l, 0x55, sizeof(l));
		ok(egress_audit_parse(line, n, &l) == -1 && l.ts == NULL &&
		    l.nfields == 0, "bad line %zu refused: %s", i, line);
	}
}

static void
test_lengths(void)
{
	struct egress_audit_line l;
	char line[4096];
	const char *base = "2026-11-29T18:00:00.123Z PHASE p";
	size_t n, i;

	/* explicit length: the bytes after len are not read */
	strcpy(line, "2026-11-29T18:00:00.123Z PHASE judge from=agentXX");
	ok(egress_audit_parse(line, strlen(line) - 2, &l) == 0 &&
	    val_is(&l, "from", "agent"), "explicit length, no NUL needed");
	ok(egress_audit_parse(line, 10, &l) == -1, "a prefix is not a line");
	/* 48 fields fit, 49 do not */
	n = strlen(base);
	memcpy(line, base, n);
	for (i = 0; i < 48; i++)
		n += (size_t)sprintf(line + n, " k%zu=v", i);
	ok(egress_audit_parse(line, n, &l) == 0 && l.nfields == 48,
	    "48 fields");
	n += (size_t)sprintf(line + n, " k48=v");
	ok(egress_audit_parse(line, n, &l) == -1, "49 fields refused");
	ok(egress_audit_parse(NULL, 0, &l) == -1, "NULL line");
}

static void
test_u64(void)
{
	uint64_t v = 7;

	ok(eg_audit_u64("443", 3, 65535, &v) == 0 && v == 443, "u64 443");
	ok(eg_audit_u64("65536", 5, 65535, &v) == -1, "u64 over max");
	ok(eg_audit_u64("18446744073709551615", 20, UINT64_MAX, &v) == 0 &&
	    v == UINT64_MAX, "u64 max");
	ok(eg_audit_u64("18446744073709551616", 20, UINT64_MAX, &v) == -1,
	    "u64 overflow");
	ok(eg_audit_u64("01", 2, 100, &v) == -1 && eg_audit_u64("", 0, 1, &v)
	    == -1 && eg_audit_u64("1a", 2, 100, &v) == -1, "u64 refusals");
}

int
main(void)
{
	test_writer_lines();
	test_record_lines();
	test_lengths();
	test_u64();
	return done_testing();
}
