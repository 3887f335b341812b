/*
 * event.c: eg_emit() (event.h), the one way out of every audit event:
 * its public form (names for the enums, the session's redactions), its
 * session's counters and file or the main log, the metrics, the
 * subscribers (egress_subscribe()) and the modules.
 */
#include "egress-int.h"

#include "audit.h"
#include "cfg.h"
#include "core.h"
#include "event.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "modrun.h"
#include "sessref.h"

/* A CLOSE's end= names, by enum eg_end (the reasons' names: reason.c). */
const char *const eg_end_name[] = {
	"-", "client_closed", "upstream_closed", "idle_timeout",
	"phase_change", "reload", "sni_mismatch", "shutdown", "done", "error",
	"session_closed", "budget"
};

_Static_assert(nitems(eg_end_name) == EG_END_COUNT, "eg_end_name");

int
egress_subscribe(struct egress *ex, egress_event_cb cb, void *arg)
{
	if (ex->nsubs == nitems(ex->subs))
		return eg_set_err(ex, 0, "too many subscribers");
	if (ex->started)
		return eg_set_err(ex, 0, "subscribe before egress_start()");
	ex->subs[ex->nsubs].cb = cb;
	ex->subs[ex->nsubs].arg = arg;
	ex->nsubs++;
	return 0;
}

/* The public form of e: the enums' names, the phase's name. */
static void
emit_public(const struct eg_event *e, struct egress_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = e->type;
	ev->ts_ms = eg_wall_ms();
	ev->id = e->id;
	ev->host = e->host;
	ev->port = e->port;
	ev->phase = e->phase != NULL ? e->phase->name : NULL;
	ev->session = e->sess != NULL && !e->sess->is_default ?
	    e->sess->name : NULL;
	ev->client = e->client;
	ev->method = e->method;
	ev->addr = e->addr;
	ev->rule = e->rule;
	if (e->reason != EG_R_NONE && (unsigned)e->reason < EG_R_COUNT)
		ev->reason = eg_reason_name[e->reason];
	ev->report = e->report ? eg_reason_name[EG_R_NOT_ALLOWED] : NULL;
	ev->up = e->up;
	ev->down = e->down;
	ev->ms = e->ms;
	if (e->type == EGRESS_EV_CLOSE)
		ev->end = eg_end_name[e->end == EG_END_NONE ||
		    (unsigned)e->end >= EG_END_COUNT ? EG_END_ERROR : e->end];
	ev->sni = e->sni;
	ev->from = e->from;
	ev->by = e->by;
	ev->closed = e->closed;
	ev->action = e->action;
	ev->pid = e->pid;
	ev->exe = e->exe;
	ev->route = e->route;
	ev->path = e->path;
	ev->cred = e->cred;
	ev->status = e->route != NULL ? e->status : 0;
	ev->tokens_in = e->route != NULL ? e->tokens_in : -1;
	ev->tokens_out = e->route != NULL ? e->tokens_out : -1;
	ev->tokens_cached = e->route != NULL ? e->tokens_cached : -1;
}

/*
 * egress_session_set_redact(): every string field of ev with the values
 * replaced, the new strings carved out of buf (a field that finds no
 * room left is "[REDACTED]" whole: nothing of a value gets through).
 */
static void
redact_event(const struct eg_redact *rd, struct egress_event *ev, char *buf,
    size_t cap)
{
	const char **f[] = { &ev->host, &ev->phase, &ev->session,
	    &ev->client, &ev->method, &ev->addr, &ev->rule, &ev->reason,
	    &ev->report, &ev->end, &ev->sni, &ev->from, &ev->by,
	    &ev->action, &ev->step, &ev->exe };
	const char *r;
	size_t i, used = 0;

	for (i = 0; i < nitems(f); i++) {
		if (*f[i] == NULL)
			continue;
		r = eg_redact_str(rd, *f[i], buf + used, cap - used);
		if (r == buf + used)
			used += strlen(r) + 1;
		*f[i] = r;
	}
}

/* The file an event of s goes to: its own, or the main log. */
static struct eg_audit *
event_audit(struct egress *ex, struct eg_session *s)
{
	struct eg_audit *a;

	if (s == NULL)
		s = &ex->def;
	a = __atomic_load_n(&s->audit, __ATOMIC_ACQUIRE);
	return a != NULL ? a : ex->audit;
}

/* The first failure of the log and its recovery are logged, not every
 * line (change: eg_audit_emit()). */
static void
emit_change(struct egress *ex, int change)
{
	if (change > 0)
		eg_log(ex, EGRESS_LOG_ERR, "audit log write failed: %s; "
		    "refusing what would be allowed until it works again",
		    strerror(errno));
	else if (change < 0)
		eg_log(ex, EGRESS_LOG_INFO, "audit log writes work again");
}

/*
 * May e's line wait in its batch (audit.h) for the next line?  The CLOSE
 * of a request or tunnel that ended as it should: nobody waits for it.
 * A decision never waits, nor the CLOSE of a policy's end (a phase
 * change, a reload, a budget...), which the admin API's answer follows.
 */
static int
event_may_wait(const struct eg_event *e)
{
	return e->type == EGRESS_EV_CLOSE && (e->end == EG_END_DONE ||
	    e->end == EG_END_CLIENT_CLOSED || e->end == EG_END_UPSTREAM_CLOSED);
}

void
eg_emit_flush(struct egress *ex, struct eg_audit_batch *b)
{
	int change;

	(void)eg_audit_batch_flush(b, &change);
	emit_change(ex, change);
}

int
eg_emit(struct egress *ex, const struct eg_event *e)
{
	struct egress_event ev;
	const struct eg_redact *rd;
	char rbuf[2 * EG_AUDIT_LINE];
	size_t i;
	int rc, change;

	emit_public(e, &ev);
	ev.step = __atomic_load_n(e->sess != NULL ? &e->sess->step :
	    &ex->def.step, __ATOMIC_ACQUIRE);
	rd = __atomic_load_n(e->sess != NULL ? &e->sess->redact :
	    &ex->def.redact, __ATOMIC_ACQUIRE);
	if (rd != NULL)
		redact_event(rd, &ev, rbuf, sizeof(rbuf));
	/* counted against its session, kept in its ring, written to its
	 * file (egress_session_set_audit()) or the main log */
	rc = eg_audit_emit_ring(event_audit(ex, e->sess), &ev,
	    eg_session_event(ex, e->sess, e->type), e->batch,
	    event_may_wait(e), &change);
	emit_change(ex, change);
	if (rc == -1 && e->type == EGRESS_EV_ALLOW)
		return -1;
	eg_metrics_event(ex->metrics, e);
	for (i = 0; i < ex->nsubs; i++)
		ex->subs[i].cb(&ev, ex->subs[i].arg);
	eg_modules_event(ex, &ev);
	return rc;
}
