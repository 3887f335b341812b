/*
 * test-audit.c: audit line formatting (text and JSON), escaping, and the
 * in-memory ring that GET /v1/audit reads.
 */
#include "egress-int.h"

#include "audit.h"
#include "tap.h"

static const char *
fmt(const struct egress_event *ev, int json)
{
	static char buf[EG_AUDIT_LINE];
	size_t n = eg_audit_format(ev, json, buf, sizeof(buf));

	buf[n] = '\0';
	return buf;
}

int
main(void)
{
	struct egress_event ev;
	struct eg_audit *a;
	struct eg_err err;
	char big[600], ring[8192];
	const char *s;
	int i;

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
	is_str(fmt(&ev, 0), "2026-11-29T18:00:00.123Z ALLOW api.anthropic.com:443 "
	    "id=17 phase=agent client=unix method=CONNECT addr=160.79.104.10 "
	    "rule=api.anthropic.com\n", "ALLOW text line matches SPEC");
	is_str(fmt(&ev, 1), "{\"ts\":\"2026-11-29T18:00:00.123Z\",\"event\":"
	    "\"ALLOW\",\"host\":\"api.anthropic.com\",\"port\":443,\"id\":17,"
	    "\"phase\":\"agent\",\"client\":\"unix\",\"method\":\"CONNECT\","
	    "\"addr\":\"160.79.104.10\",\"rule\":\"api.anthropic.com\"}\n",
	    "ALLOW JSON line");

	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_BLOCK;
	ev.ts_ms = 1795975200456LL;
	ev.id = 18;
	ev.host = "code.example";
	ev.port = 443;
	ev.phase = "agent";
	ev.client = "127.0.0.1:51234";
	ev.method = "CONNECT";
	ev.reason = "not_allowed";
	is_str(fmt(&ev, 0), "2026-11-29T18:00:00.456Z BLOCK code.example:443 id=18 "
	    "phase=agent client=127.0.0.1:51234 method=CONNECT "
	    "reason=not_allowed\n", "BLOCK text line matches SPEC");

	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_CLOSE;
	ev.ts_ms = 1795975202001LL;
	ev.id = 17;
	ev.host = "api.anthropic.com";
	ev.port = 443;
	ev.phase = "agent";
	ev.up = 5123;
	ev.down = 98321;
	ev.ms = 1878;
	ev.end = "client_closed";
	is_str(fmt(&ev, 0), "2026-11-29T18:00:02.001Z CLOSE api.anthropic.com:443 "
	    "id=17 phase=agent up=5123 down=98321 ms=1878 end=client_closed\n",
	    "CLOSE text line matches SPEC");
	ev.ts_ms = 1795975199999LL;	/* back into an earlier second */
	ev.up = UINT64_MAX;
	ev.down = 0;
	is_str(fmt(&ev, 0), "2026-11-29T17:59:59.999Z CLOSE api.anthropic.com:443 "
	    "id=17 phase=agent up=18446744073709551615 down=0 ms=1878 "
	    "end=client_closed\n", "counters at their limits; an earlier second");

	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_PHASE;
	ev.ts_ms = 1795975500000LL;
	ev.phase = "judge";
	ev.from = "agent";
	ev.by = "admin";
	ev.closed = 2;
	is_str(fmt(&ev, 0), "2026-11-29T18:05:00.000Z PHASE judge from=agent "
	    "by=admin closed=2\n", "PHASE text line matches SPEC");
	is_str(fmt(&ev, 1), "{\"ts\":\"2026-11-29T18:05:00.000Z\",\"event\":"
	    "\"PHASE\",\"phase\":\"judge\",\"from\":\"agent\",\"by\":\"admin\","
	    "\"closed\":2}\n", "PHASE JSON line");

	/* hostile values are escaped: no spaces or control bytes */
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_BLOCK;
	ev.ts_ms = 0;
	ev.host = "a b\r\n\x01\"\\\xff";
	ev.phase = "p";
	ev.client = "unix";
	ev.method = "CONNECT";
	ev.reason = "bad_request";
	s = fmt(&ev, 0);
	ok(strstr(s, "BLOCK a\\x20b\\x0d\\x0a\\x01\\x22\\x5c\\xff id=0") != NULL,
	    "text escapes space, CR, LF, control, quote, backslash, 8-bit");
	ok(strchr(s, '\r') == NULL && strchr(s, '\n') == s + strlen(s) - 1,
	    "text line has exactly one newline, at its end");
	s = fmt(&ev, 1);
	ok(strstr(s, "\"host\":\"a b\\u000d\\u000a\\u0001\\\"\\\\\\u00ff\"")
	    != NULL, "JSON escapes control and 8-bit bytes");
	ev.session = "run-42";
	ok(strstr(fmt(&ev, 0), " session=run-42 ") != NULL,
	    "session appears for non-default sessions");

	/* over-long values are truncated, the line still ends in newline */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ev.host = big;
	ev.client = big;
	ev.method = big;
	ev.reason = big;
	ev.rule = big;
	ev.addr = big;
	ev.phase = big;
	s = fmt(&ev, 0);
	ok(strlen(s) < EG_AUDIT_LINE && s[strlen(s) - 1] == '\n',
	    "long line is bounded and newline-terminated");

	/* ring: keeps the last N, answers since= and limit= */
	a = eg_audit_open("none", 0, 4, &err);
	ok(a != NULL, "open a discarding audit with a ring of 4");
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_BLOCK;
	ev.host = "h.test";
	ev.port = 443;
	ev.phase = "p";
	for (i = 1; i <= 6; i++) {
		ev.id = (uint64_t)i;
		eg_audit_emit(a, &ev);
	}
	eg_audit_ring_json(a, 0, 100, ring, sizeof(ring));
	ok(strstr(ring, "\"id\":3") && strstr(ring, "\"id\":6") &&
	    !strstr(ring, "\"id\":2,"), "ring holds the last 4 events");
	eg_audit_ring_json(a, 5, 100, ring, sizeof(ring));
	ok(strstr(ring, "\"id\":6") && !strstr(ring, "\"id\":5"),
	    "since=5 returns only later events");
	eg_audit_ring_json(a, 0, 1, ring, sizeof(ring));
	ok(strstr(ring, "\"id\":6") && !strstr(ring, "\"id\":5"),
	    "limit=1 returns the most recent");
	eg_audit_close(a);
	return done_testing();
}
