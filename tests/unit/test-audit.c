/*
 * test-audit.c: audit line formatting (text and JSON), escaping, and the
 * in-memory ring that GET /v1/audit reads.
 */
#include "egress-int.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "audit.h"
#include "session-int.h"
#include "sessref.h"
#include "tap.h"

struct drain {
	int	 fd;
	int	 delay_ms;
	size_t	 want;		/* bytes to read after the filler */
	size_t	 skip;		/* filler bytes to read first */
	char	*got;
	size_t	 len;
};

/* One read, giving up after 2 s of silence (so a failure cannot hang). */
static ssize_t
read_some(int fd, char *buf, size_t n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, 2000) != 1)
		return -1;
	return read(fd, buf, n);
}

/* After delay_ms, read skip bytes (the filler), then want bytes. */
static void *
drain_main(void *arg)
{
	struct drain *d = arg;
	char buf[65536];
	ssize_t n;

	usleep((useconds_t)d->delay_ms * 1000);
	while (d->skip > 0) {
		n = read_some(d->fd, buf, d->skip < sizeof(buf) ? d->skip :
		    sizeof(buf));
		if (n <= 0)
			return NULL;
		d->skip -= (size_t)n;
	}
	while (d->len < d->want) {
		n = read_some(d->fd, d->got + d->len, d->want - d->len);
		if (n <= 0)
			break;
		d->len += (size_t)n;
	}
	return NULL;
}

/* Fill a non-blocking pipe until it refuses more; returns the bytes. */
static size_t
fill_pipe(int fd)
{
	char buf[4096];
	size_t total = 0;
	ssize_t n;

	memset(buf, 'f', sizeof(buf));
	for (;;) {
		n = write(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	/* the last page may have room for fewer than 4096 bytes */
	while ((n = write(fd, buf, 1)) == 1)
		total++;
	return total;
}

static void
test_write_all(void)
{
	struct drain d;
	pthread_t t;
	char *msg;
	size_t i, big = 300000;
	int p[2], rc, e;

	msg = malloc(big);
	d.got = malloc(big);
	for (i = 0; i < big; i++)
		msg[i] = (char)('a' + i % 26);

	/* a full non-blocking pipe: EAGAIN waits for room, then completes */
	ok(pipe(p) == 0, "pipe");
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	d.fd = p[0];
	d.delay_ms = 200;
	d.skip = fill_pipe(p[1]);
	d.want = 3000;
	d.len = 0;
	ok(d.skip > 0 && write(p[1], "x", 1) == -1 && errno == EAGAIN,
	    "the pipe is full (EAGAIN)");
	pthread_create(&t, NULL, drain_main, &d);
	rc = eg_audit_write_all(p[1], msg, 3000);
	pthread_join(t, NULL);
	is_int(rc, 0, "write_all on a full non-blocking pipe waits and "
	    "succeeds");
	ok(d.len == 3000 && memcmp(d.got, msg, 3000) == 0,
	    "the whole line arrives, intact");

	/* more than the pipe holds: short writes are continued */
	d.delay_ms = 50;
	d.skip = 0;
	d.want = big;
	d.len = 0;
	pthread_create(&t, NULL, drain_main, &d);
	rc = eg_audit_write_all(p[1], msg, big);
	pthread_join(t, NULL);
	is_int(rc, 0, "write_all of 300000 bytes through a pipe succeeds");
	ok(d.len == big && memcmp(d.got, msg, big) == 0,
	    "short writes are continued to completion, in order");

	/* a pipe nobody drains: gives up (EAGAIN) after the stall bound */
	fill_pipe(p[1]);
	rc = eg_audit_write_all(p[1], msg, 100);
	e = errno;
	ok(rc == -1 && e == EAGAIN, "a pipe that never drains fails with "
	    "EAGAIN after %d ms", EG_AUDIT_STALL_MS);
	close(p[0]);
	close(p[1]);

	/* a real error */
	p[1] = open("/dev/full", O_WRONLY);
	if (p[1] != -1) {
		rc = eg_audit_write_all(p[1], msg, 10);
		e = errno;
		ok(rc == -1 && e == ENOSPC, "/dev/full: -1, ENOSPC");
		close(p[1]);
	} else
		ok(1, "# SKIP no /dev/full");
	free(msg);
	free(d.got);
}

/* A failing log: counted, "failing" until a write works, ALLOW not in
 * the ring, other events are. */
static void
test_failing(void)
{
	struct egress_event ev;
	struct eg_audit *a;
	struct eg_err err;
	char ring[8192], path[] = "/tmp/test-audit.XXXXXX";
	uint64_t n;
	int failing, change, fd, rc;

	if (access("/dev/full", W_OK) != 0) {
		ok(1, "# SKIP no /dev/full");
		return;
	}
	a = eg_audit_open("/dev/full", 0, 8, &err);
	ok(a != NULL, "open /dev/full as the audit log");
	if (a == NULL)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.host = "h.test";
	ev.port = 443;
	ev.phase = "p";
	ev.id = 1;
	ev.type = EGRESS_EV_ALLOW;
	rc = eg_audit_emit(a, &ev, &change);
	eg_audit_health(a, &n, &failing);
	ok(rc == -1 && change == 1 && n == 1 && failing,
	    "a failed write: -1, counted, now failing (change +1)");
	ev.id = 2;
	ev.type = EGRESS_EV_BLOCK;
	ev.reason = "audit_failed";
	rc = eg_audit_emit(a, &ev, &change);
	eg_audit_health(a, &n, &failing);
	ok(rc == -1 && change == 0 && n == 2 && failing,
	    "a second failure: counted, no transition");
	eg_audit_ring_json(a, 0, 100, ring, sizeof(ring));
	ok(!strstr(ring, "\"ALLOW\"") && strstr(ring, "\"id\":2"),
	    "the failed ALLOW is not in the ring, the failed BLOCK is");
	fd = mkstemp(path);
	ok(fd != -1 && eg_audit_reconfigure(a, path, 0, &err) == 0,
	    "reconfigure to a file");
	eg_audit_health(a, &n, &failing);
	ok(failing, "still failing until a write works");
	ev.id = 3;
	rc = eg_audit_emit(a, &ev, &change);
	eg_audit_health(a, &n, &failing);
	ok(rc == 0 && change == -1 && n == 2 && !failing,
	    "a good write clears failing (change -1), the count stays");
	ok(eg_audit_reconfigure(a, "/dev/full", 0, &err) == 0 &&
	    eg_audit_emit(a, &ev, NULL) == -1, "back to /dev/full: fails");
	ok(eg_audit_reconfigure(a, "none", 0, &err) == 0,
	    "reconfigure to none");
	eg_audit_health(a, &n, &failing);
	ok(!failing && n == 3, "a discarding log is not failing");
	if (fd != -1) {
		close(fd);
		unlink(path);
	}
	eg_audit_close(a);
}

static const char *
fmt(const struct egress_event *ev, int json)
{
	static char buf[EG_AUDIT_LINE];
	size_t n = eg_audit_format(ev, json, buf, sizeof(buf));

	buf[n] = '\0';
	return buf;
}


/* egress_session_set_redact()'s matcher (session.c). */
static void
test_redact(void)
{
	char *vals[] = { (char *)"SeCrEt-ValUe-1", (char *)"short-12",
	    (char *)"short-12-longer" };
	size_t lens[] = { 14, 8, 15 };
	struct eg_redact r = { NULL, 3, 15, lens, vals };
	char out[64], tiny[12];
	const char *s;

	s = eg_redact_str(&r, "secret-value-1.exfil.test", out, sizeof(out));
	ok(strcmp(s, "[REDACTED].exfil.test") == 0,
	    "a lower-cased host: the value matched without regard to case");
	s = eg_redact_str(&r, "x.SECRET-VALUE-1SECRET-VALUE-1", out,
	    sizeof(out));
	ok(strcmp(s, "x.[REDACTED][REDACTED]") == 0, "two in a row");
	s = eg_redact_str(&r, "a-short-12-longer-b", out, sizeof(out));
	ok(strcmp(s, "a-[REDACTED]-b") == 0, "the longest value wins");
	s = eg_redact_str(&r, "nothing.example", out, sizeof(out));
	ok(strcmp(s, "nothing.example") == 0 && s != out,
	    "no match: the string itself");
	s = eg_redact_str(&r, "zz-secret-value-1-zzzzzzzzzzzzzzzz", tiny,
	    sizeof(tiny));
	ok(strcmp(s, "[REDACTED]") == 0,
	    "no room for the result: [REDACTED] whole, nothing of it leaks");
	ok(eg_redact_str(NULL, "secret-value-1", out, sizeof(out))[0] == 's',
	    "no list: unchanged");
}

/* The size of the file at path (-1: none). */
static long
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Lines waiting in a batch (audit.h): what waits, what goes with what,
 * in how many write(2)s (a packet pipe: each read is one write). */
static void
test_batch(void)
{
	struct eg_audit_batch b = { 0 };
	struct egress_event ev;
	struct eg_audit *a, *priv;
	struct eg_err err;
	char path[] = "/tmp/test-audit-batch.XXXXXX", buf[16384];
	char ppath[] = "/tmp/test-audit-priv.XXXXXX";
	int fd, p[2], saved, i, packets, good, change;
	ssize_t n;
	uint64_t nerr;

	memset(&ev, 0, sizeof(ev));
	ev.host = "h.test";
	ev.port = 443;
	ev.phase = "p";
	ev.end = "done";
	fd = mkstemp(path);
	a = fd != -1 ? eg_audit_open(path, 0, 8, &err) : NULL;
	ok(a != NULL, "open a file as the audit log");
	if (a == NULL)
		return;
	ev.type = EGRESS_EV_CLOSE;
	ev.id = 1;
	ok(eg_audit_emit_ring(a, &ev, NULL, &b, 1, NULL) == 0 &&
	    file_size(path) == 0 && b.lines == 1,
	    "a CLOSE that may wait is not written yet");
	ev.type = EGRESS_EV_ALLOW;
	ev.id = 2;
	ok(eg_audit_emit_ring(a, &ev, NULL, &b, 0, NULL) == 0 && b.len == 0,
	    "an ALLOW is written at once, and takes the CLOSE with it");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	ok(n > 0 && strstr(buf, " CLOSE h.test:443 id=1 ") != NULL &&
	    strstr(buf, " ALLOW h.test:443 id=2 ") > strstr(buf, " CLOSE "),
	    "the file has the CLOSE, then the ALLOW");
	ev.type = EGRESS_EV_CLOSE;
	ev.id = 3;
	eg_audit_emit_ring(a, &ev, NULL, &b, 1, NULL);
	ok(eg_audit_batch_flush(&b, &change) == 0 && change == 0 &&
	    b.len == 0, "a flush empties the batch");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	ok(strstr(buf, " CLOSE h.test:443 id=3 ") != NULL,
	    "and writes what waited");

	/* a session's own file is never batched: it is closed with the
	 * session, maybe before a flush */
	close(mkstemp(ppath));
	priv = eg_audit_open_private(ppath, 0, &err);
	ok(priv != NULL && eg_audit_emit_ring(priv, &ev, NULL, &b, 1,
	    NULL) == 0 && file_size(ppath) > 0 && b.len == 0,
	    "a session's own file: the CLOSE is written at once");
	eg_audit_close(priv);
	unlink(ppath);
	eg_audit_close(a);
	close(fd);
	unlink(path);

	/* standard output as a packet pipe: a read returns one write(2) */
	if (pipe2(p, O_DIRECT) == -1) {
		ok(1, "# SKIP no packet pipes (O_DIRECT)");
		return;
	}
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(p[1], STDOUT_FILENO);
	a = eg_audit_open("-", 0, 8, &err);
	for (i = 1; a != NULL && i <= 40; i++) {
		ev.id = (uint64_t)i;
		ev.type = i % 10 == 0 ? EGRESS_EV_ALLOW : EGRESS_EV_CLOSE;
		eg_audit_emit_ring(a, &ev, NULL, &b, ev.type ==
		    EGRESS_EV_CLOSE, NULL);
	}
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(p[1]);
	ok(a != NULL, "standard output (a packet pipe) as the audit log");
	packets = 0;
	good = 1;
	while ((n = read(p[0], buf, sizeof(buf) - 1)) > 0) {
		const char *last;
		int lines = 0, k;

		packets++;
		buf[n] = '\0';
		for (k = 0; k < n; k++)
			lines += buf[k] == '\n';
		/* its last line: after the last newline but one */
		buf[n - 1] = '\0';
		last = strrchr(buf, '\n');
		last = last != NULL ? last + 1 : buf;
		good = good && lines == 10 && strstr(last, " ALLOW ") != NULL;
	}
	close(p[0]);
	ok(packets == 4 && good,
	    "40 lines, every tenth an ALLOW: 4 write(2)s of 10 lines, each "
	    "ending with its ALLOW");
	if (a != NULL)
		eg_audit_close(a);

	/* a failed batch write counts each of its lines */
	if (access("/dev/full", W_OK) != 0)
		return;
	a = eg_audit_open("/dev/full", 0, 8, &err);
	if (a == NULL)
		return;
	ev.type = EGRESS_EV_CLOSE;
	eg_audit_emit_ring(a, &ev, NULL, &b, 1, NULL);
	eg_audit_emit_ring(a, &ev, NULL, &b, 1, NULL);
	ev.type = EGRESS_EV_ALLOW;
	ok(eg_audit_emit_ring(a, &ev, NULL, &b, 0, &change) == -1 &&
	    change == 1, "an ALLOW that goes with two CLOSEs to /dev/full "
	    "fails");
	eg_audit_health(a, &nerr, &good);
	ok(nerr == 3 && good, "three failed lines counted, the log failing");
	ev.type = EGRESS_EV_CLOSE;
	ok(eg_audit_emit_ring(a, &ev, NULL, &b, 1, &change) == 0 &&
	    change == 0, "a CLOSE that waits: no change reported");
	eg_audit_health(a, &nerr, &good);
	ok(good && nerr == 3, "... and the log is still failing (nothing "
	    "was written)");
	ok(eg_audit_batch_flush(&b, &change) == -1 && change == 0,
	    "its flush fails too: still failing, no change");
	eg_audit_close(a);
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

	/* sessions: session= right after phase=, PHASE lines too */
	ev.session = "run-42";
	is_str(fmt(&ev, 0), "2026-11-29T18:05:00.000Z PHASE judge "
	    "session=run-42 from=agent by=admin closed=2\n",
	    "PHASE line of a session carries session=");
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_BLOCK;
	ev.ts_ms = 1795975200456LL;
	ev.host = "github.com";
	ev.port = 443;
	ev.id = 18;
	ev.phase = "agent";
	ev.session = "run-42";
	ev.client = "unix";
	ev.method = "CONNECT";
	ev.reason = "not_allowed";
	is_str(fmt(&ev, 0), "2026-11-29T18:00:00.456Z BLOCK github.com:443 "
	    "id=18 phase=agent session=run-42 client=unix method=CONNECT "
	    "reason=not_allowed\n",
	    "BLOCK of a session: session= after phase=");
	is_str(fmt(&ev, 1), "{\"ts\":\"2026-11-29T18:00:00.456Z\",\"event\":"
	    "\"BLOCK\",\"host\":\"github.com\",\"port\":443,\"id\":18,"
	    "\"phase\":\"agent\",\"session\":\"run-42\",\"client\":\"unix\","
	    "\"method\":\"CONNECT\",\"reason\":\"not_allowed\"}\n",
	    "... and in JSON");
	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_SESSION;
	ev.ts_ms = 1795975500000LL;
	ev.session = "run-42";
	ev.action = "open";
	ev.phase = "setup";
	ev.by = "admin";
	is_str(fmt(&ev, 0), "2026-11-29T18:05:00.000Z SESSION run-42 "
	    "action=open phase=setup by=admin\n", "SESSION open line (SPEC)");
	is_str(fmt(&ev, 1), "{\"ts\":\"2026-11-29T18:05:00.000Z\",\"event\":"
	    "\"SESSION\",\"session\":\"run-42\",\"action\":\"open\","
	    "\"phase\":\"setup\",\"by\":\"admin\"}\n",
	    "SESSION open JSON line");
	ev.action = "close";
	ev.phase = NULL;
	ev.closed = 3;
	ev.by = "ttl";
	is_str(fmt(&ev, 0), "2026-11-29T18:05:00.000Z SESSION run-42 "
	    "action=close closed=3 by=ttl\n", "SESSION close line (SPEC)");

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
		eg_audit_emit(a, &ev, NULL);
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

	/* a session's ring: its own, growing as it fills, then wrapping */
	{
		struct eg_ring *r = eg_ring_new(20);
		char want[32];
		int good = 1;

		ok(r != NULL, "a ring of 20 of its own");
		for (i = 1; i <= 50; i++) {
			ev.id = (uint64_t)i;
			eg_audit_emit_ring(a, &ev, r, NULL, 0, NULL);
			if (i == 13) {
				eg_ring_json(r, 0, 0, ring, sizeof(ring));
				good = strstr(ring, "{\"seq\":1,") != NULL &&
				    strstr(ring, "\"id\":13") != NULL;
			}
		}
		ok(good, "13 events (past a growth): all kept, in order");
		eg_ring_json(r, 0, 0, ring, sizeof(ring));
		good = strncmp(ring, "[{\"seq\":31,", 11) == 0;
		for (i = 31; i <= 50 && good; i++) {
			snprintf(want, sizeof(want), "\"id\":%d,", i);
			good = strstr(ring, want) != NULL;
		}
		ok(good && strstr(ring, "\"id\":30,") == NULL,
		    "50 events: the last 20 (31 to 50), from seq 31");
		eg_ring_json(r, 35, 3, ring, sizeof(ring));
		ok(strncmp(ring, "[{\"seq\":36,", 11) == 0 &&
		    strstr(ring, "{\"seq\":38,") != NULL &&
		    strstr(ring, "{\"seq\":39,") == NULL,
		    "since=35 limit=3: 36 to 38");
		eg_audit_ring_json(a, 0, 1, ring, sizeof(ring));
		ok(strstr(ring, "\"id\":6") != NULL,
		    "the log's own ring did not get them");
		eg_ring_free(r);
	}
	eg_audit_close(a);
	test_write_all();
	test_failing();
	test_redact();
	test_batch();
	return done_testing();
}
