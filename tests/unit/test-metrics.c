/*
 * test-metrics.c: the decision and close counters, indexed by the
 * internal event's enums (verdict x reason per phase name, end), and
 * their exposition text.
 */
#include "egress-int.h"

#include "buf.h"
#include "event.h"
#include "metrics.h"
#include "policy.h"
#include "tap.h"

static char out[65536];

/* The exposition's lines that start with prefix, joined. */
static const char *
lines(struct eg_metrics *m, const char *prefix)
{
	static char sel[65536];
	struct eg_buf b;
	const char *p, *e;
	size_t o = 0, n;

	eg_buf_init(&b, out, sizeof(out) - 1);
	if (eg_metrics_render(m, NULL, &b) == -1)
		return "(render failed)";
	out[eg_buf_len(&b)] = '\0';
	sel[0] = '\0';
	for (p = out; *p != '\0'; p = *e ? e + 1 : e) {
		e = strchr(p, '\n');
		if (e == NULL)
			e = p + strlen(p);
		n = (size_t)(e - p);
		if (strncmp(p, prefix, strlen(prefix)) != 0 ||
		    o + n + 2 > sizeof(sel))
			continue;
		memcpy(sel + o, p, n);
		o += n;
		sel[o++] = '\n';
		sel[o] = '\0';
	}
	return sel;
}

static void
ev(struct eg_metrics *m, enum egress_event_type t, enum eg_reason r,
    int report, const struct eg_phase *ph)
{
	struct eg_event e;

	memset(&e, 0, sizeof(e));
	e.type = t;
	e.reason = r;
	e.report = report;
	e.phase = ph;
	eg_metrics_event(m, &e);
}

static void
close_ev(struct eg_metrics *m, enum eg_end end, uint64_t up)
{
	struct eg_event e;

	memset(&e, 0, sizeof(e));
	e.type = EGRESS_EV_CLOSE;
	e.end = end;
	e.up = up;
	eg_metrics_event(m, &e);
}

int
main(void)
{
	struct eg_phase a[2], b[2], none;
	struct eg_metrics *m;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(&none, 0, sizeof(none));
	a[0].name = "setup";
	a[1].name = "work";
	b[0].name = "lock\"down";	/* escaped in the label */
	b[1].name = "work";		/* a reload keeps the name's row */
	none.name = "unregistered";

	ok((m = eg_metrics_new()) != NULL, "metrics");
	eg_metrics_register(m, a, 2);
	eg_metrics_register(m, b, 2);
	ok(a[0].mrow != NULL && a[1].mrow != NULL, "every phase has a row");
	ok(a[1].mrow == b[1].mrow, "one row per phase name, across "
	    "snapshots");
	ok(a[0].mrow != b[0].mrow, "another name, another row");

	is_str(lines(m, "egressd_decisions_total{"), "",
	    "no decision lines before a decision");

	ev(m, EGRESS_EV_FAIL, EG_R_CONNECT_FAILED, 0, &a[0]);
	ev(m, EGRESS_EV_BLOCK, EG_R_NOT_ALLOWED, 0, &b[1]);
	ev(m, EGRESS_EV_BLOCK, EG_R_NOT_ALLOWED, 0, &a[1]);
	ev(m, EGRESS_EV_BLOCK, EG_R_NOT_ALLOWED, 0, &a[0]);
	ev(m, EGRESS_EV_ALLOW, EG_R_NONE, 0, &a[1]);
	ev(m, EGRESS_EV_ALLOW, EG_R_NONE, 1, &b[0]);
	ev(m, EGRESS_EV_BLOCK, EG_R_PORT_NOT_ALLOWED, 0, &b[0]);
	ev(m, EGRESS_EV_BLOCK, EG_R_AUDIT_FAILED, 0, &a[0]);
	ev(m, EGRESS_EV_BLOCK, EG_R_NOT_ALLOWED, 0, &none);
	ev(m, EGRESS_EV_BLOCK, EG_R_COUNT, 0, &a[0]);	/* out of range */
	is_str(lines(m, "egressd_decisions_total{"),
	    "egressd_decisions_total{event=\"ALLOW\",reason=\"\","
	    "phase=\"work\"} 1\n"
	    "egressd_decisions_total{event=\"ALLOW\","
	    "reason=\"report:not_allowed\",phase=\"lock\\\"down\"} 1\n"
	    "egressd_decisions_total{event=\"BLOCK\",reason=\"not_allowed\","
	    "phase=\"setup\"} 1\n"
	    "egressd_decisions_total{event=\"BLOCK\",reason=\"not_allowed\","
	    "phase=\"work\"} 2\n"
	    "egressd_decisions_total{event=\"BLOCK\","
	    "reason=\"port_not_allowed\",phase=\"lock\\\"down\"} 1\n"
	    "egressd_decisions_total{event=\"BLOCK\",reason=\"audit_failed\","
	    "phase=\"setup\"} 1\n"
	    "egressd_decisions_total{event=\"FAIL\","
	    "reason=\"connect_failed\",phase=\"setup\"} 1\n",
	    "decisions by event, reason, then phase; an unregistered phase "
	    "and an unknown reason are not counted");

	close_ev(m, EG_END_UPSTREAM_CLOSED, 10);
	close_ev(m, EG_END_CLIENT_CLOSED, 5);
	close_ev(m, EG_END_CLIENT_CLOSED, 1);
	close_ev(m, EG_END_NONE, 0);		/* counts as error */
	close_ev(m, EG_END_COUNT, 0);		/* likewise */
	is_str(lines(m, "egressd_tunnels_closed_total{"),
	    "egressd_tunnels_closed_total{end=\"client_closed\"} 2\n"
	    "egressd_tunnels_closed_total{end=\"upstream_closed\"} 1\n"
	    "egressd_tunnels_closed_total{end=\"error\"} 2\n",
	    "closes by end, in the enum's order");
	is_str(lines(m, "egressd_bytes_total{direction=\"up\"}"),
	    "egressd_bytes_total{direction=\"up\"} 16\n", "bytes up summed");

	eg_metrics_free(m);
	return done_testing();
}
