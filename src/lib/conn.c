/*
 * conn.c: the lifecycle of one client connection, from the first byte of
 * its request head to the CLOSE line of its tunnel.  Every event (socket
 * readiness, timer, DNS answer) ends in conn_step(), which advances the
 * state machine until something would block; eg_conn_set_state() is the only
 * writer of c->state and arms the state's timer.  A verdict is written to
 * the audit log (conn_deny_locked() for BLOCK and FAIL, conn_allow() for
 * ALLOW) before any reply byte is queued; what a refusal says comes from
 * reason.c's refusal table, never from text written here.
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "addrclass.h"
#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "conn-int.h"
#include "conn.h"
#include "core.h"
#include "dns.h"
#include "event.h"
#include "host.h"
#include "log.h"
#include "metrics.h"
#include "ownaddr.h"
#include "policy.h"
#include "reason.h"
#include "relayhdr.h"
#include "reqparse.h"
#include "select.h"
#include "sessref.h"
#include "sni.h"
#include "tcpopt.h"
#include "upool.h"
#include "worker.h"

#ifdef __SANITIZE_ADDRESS__
#define CONNPOOL_MAX	0		/* ASan sees every use after free */
#define HEADPOOL_MAX	0
#else
#define CONNPOOL_MAX	256		/* freed connections kept for reuse */
#define HEADPOOL_MAX	64		/* and request head buffers */
#endif
#define LINGER_MS	2000		/* drain after a refusal */
#define EG_FD_RESERVE	32		/* descriptors kept for refusing */

static void	conn_step(struct eg_conn *);
static void	conn_cio(void *, uint32_t);
static void	conn_uio(void *, uint32_t);
static void	conn_timeout(void *);

/* --- buffers -------------------------------------------------------------- */

/* An empty head buffer of cap bytes: from the worker's pool, else new. */
static struct head *
head_get(struct eg_worker *w, size_t cap)
{
	struct head *h;

	while ((h = eg_freelist_get(&w->headpool, &w->nheadpool)) != NULL) {
		if (h->cap == cap)	/* else from before a reload */
			break;
		eg_free(h);
	}
	if (h == NULL && (h = eg_malloc(sizeof(*h) + cap)) == NULL)
		return NULL;
	h->cap = cap;
	h->len = h->scan = 0;
	h->req.host.len = 0;
	h->req.port = 0;
	return h;
}

static void
head_put(struct eg_worker *w, struct head *h)
{
	eg_freelist_put(&w->headpool, &w->nheadpool, h, HEADPOOL_MAX);
}

/* --- state ------------------------------------------------------------------ */

void
eg_conn_set_state(struct eg_conn *c, enum eg_cstate to)
{
	struct eg_loop *loop = c->w->loop;
	uint64_t idle, el;

	if (c->state != to) {
		c->state = to;
		switch (to) {
		case EG_CS_CONNECTING:
			c->uev = 0;
			c->c2u.rd = 0;	/* see conn_interest() */
			break;
		case EG_CS_RESOLVING:
			c->c2u.rd = 0;
			break;
		case EG_CS_SNI:
		case EG_CS_TUNNEL:
		case EG_CS_FORWARD:
		case EG_CS_ROUTE:
			/* no probing read: level-triggered epoll reports
			 * bytes that are already waiting as soon as interest
			 * is set */
			c->c2u.rd = c->u2c.rd = 0;
			c->last = eg_loop_now(loop);
			break;
		default:
			break;
		}
	}
	switch (c->state) {
	case EG_CS_HEAD:
		eg_timer_arm(loop, &c->tmo, c->cfg->header_timeout_ms);
		break;
	case EG_CS_CONNECTING:
		eg_timer_arm(loop, &c->tmo, c->cfg->connect_timeout_ms);
		break;
	case EG_CS_ROUTE:
		if (eg_route_handshaking(c)) {
			eg_timer_arm(loop, &c->tmo, c->cfg->connect_timeout_ms);
			break;
		}
		idle = eg_conn_idle_ms(c);
		el = eg_loop_now(loop) - c->last;
		eg_timer_arm(loop, &c->tmo, el < idle ? idle - el : 0);
		break;
	case EG_CS_SNI:
		if (eg_buf_len(&c->c2u.b) > 0) {
			/* a ClientHello has begun: it must be complete in
			 * time, counted from its first byte */
			eg_timer_arm(loop, &c->tmo, c->cfg->header_timeout_ms);
			break;
		}
		/* FALLTHROUGH */
	case EG_CS_TUNNEL:
	case EG_CS_FORWARD:
		/* what is left of the idle (or fin) timeout since the last
		 * activity: all of it on entry */
		idle = eg_conn_idle_ms(c);
		el = eg_loop_now(loop) - c->last;
		eg_timer_arm(loop, &c->tmo, el < idle ? idle - el : 0);
		break;
	case EG_CS_LINGER:
		eg_timer_arm(loop, &c->tmo, LINGER_MS);
		break;
	default:
		eg_timer_stop(loop, &c->tmo);
		break;
	}
}

/* Recompute fd interest from state and buffer levels. */
static void
conn_interest(struct eg_conn *c)
{
	struct eg_loop *loop = c->w->loop;
	uint32_t ce = 0, ue = 0;

	switch (c->state) {
	case EG_CS_HEAD:
		ce = EPOLLIN | EPOLLRDHUP;
		ue = eg_route_idle_interest(c);	/* a route's kept upstream */
		break;
	case EG_CS_LINGER:
		ce = EPOLLIN | EPOLLRDHUP;
		break;
	case EG_CS_NEW:
	case EG_CS_DEAD:
		break;
	case EG_CS_RESOLVING:
	case EG_CS_CONNECTING:
		/*
		 * The client waits for our answer.  Its interest stays as
		 * it was (no epoll_ctl per request) until it sends or
		 * closes; then it is muted, the bytes left unread until
		 * the tunnel opens.
		 */
		if (!c->c2u.rd)
			ce = EPOLLIN | EPOLLRDHUP;
		if (c->state == EG_CS_CONNECTING)
			ue = EPOLLOUT;
		break;
	case EG_CS_REPLYING:
		ce = EPOLLOUT;
		break;
	case EG_CS_ROUTE:
		eg_route_interest(c, &ce, &ue);
		break;
	case EG_CS_SNI:
	case EG_CS_TUNNEL:
	case EG_CS_FORWARD:
		if (eg_pend_busy(&c->u2c))
			ce |= EPOLLOUT;
		else if (!c->u_eof && c->uio.fd != -1 &&
		    !(c->state == EG_CS_FORWARD && c->f->resp_done))
			ue |= EPOLLIN | EPOLLRDHUP;
		if (eg_pend_busy(&c->c2u) && c->state != EG_CS_SNI)
			ue |= EPOLLOUT;
		else if (!c->c_eof && !(c->state == EG_CS_FORWARD &&
		    c->f->req.done))
			ce |= EPOLLIN | EPOLLRDHUP;
		break;
	}
	if (c->cio.fd != -1)
		eg_io_set(loop, &c->cio, ce);
	if (c->uio.fd != -1)
		eg_io_set(loop, &c->uio, ue);
}

/* --- verdicts --------------------------------------------------------------- */

static void
conn_event(struct eg_conn *c, struct eg_event *ev, enum egress_event_type t)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = t;
	ev->id = c->id;
	ev->client = c->client;
	ev->method = c->method;
	ev->sess = c->sess;
	ev->batch = &c->w->batch;	/* c's loop thread */
	if (c->relay == 2) {
		ev->pid = c->rpid;
		ev->exe = c->rexe != NULL ? c->rexe : "";
	}
	if (c->t.host.len > 0) {
		ev->host = c->t.host.name;
		ev->port = c->t.port;
	}
	eg_route_event(c, ev);
}

/*
 * Queue reply (n bytes) as the last thing the client gets: the upstream
 * goes, and the client's further bytes are not read into a tunnel.  The
 * reply goes out, then the write side is shut and the client drained (so
 * the reply is not lost to a reset).
 */
static void
conn_reply_close(struct eg_conn *c, const void *reply, size_t n)
{
	if (c->uio.fd != -1) {
		eg_io_del(c->w->loop, &c->uio);
		close(c->uio.fd);
		c->uio.fd = -1;
	}
	eg_pend_release(c, &c->c2u);
	if (eg_pend_append(c, &c->u2c, reply, n) == -1)
		/* no buffer (out of memory): say it at once, as far as
		 * the socket takes it; the linger follows as usual */
		(void)send(c->cio.fd, reply, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	c->close_after = 1;
	eg_conn_set_state(c, EG_CS_REPLYING);
}

/* The reply of a refusal whose body is written: status 0 is r's. */
static void
conn_reply_refusal(struct eg_conn *c, enum eg_reason r, int status,
    const char *body)
{
	char reply[EG_REFUSAL_MAX];
	size_t n;

	n = eg_refusal_reply(reply, sizeof(reply), r, status, body);
	conn_reply_close(c, reply, n);
}

/*
 * Write the reply for refusal rf (reason.c: its status line with the
 * body's text as the phrase, X-Egressd-Verdict and -Reason, the body).
 * The audit line is already written.
 */
static void
conn_refuse(struct eg_conn *c, enum eg_refusal rf,
    const struct eg_refusal_arg *a)
{
	char reply[EG_REFUSAL_MAX];
	size_t n;

	n = eg_refusal_write(reply, sizeof(reply), rf, a);
	conn_reply_close(c, reply, n);
}

/* The same, with the body written already (under the lock). */
static void
conn_refuse_body(struct eg_conn *c, enum eg_refusal rf, const char *body)
{
	conn_reply_refusal(c, eg_refusal_tab[rf].reason,
	    eg_refusal_tab[rf].status, body);
}

/* The arguments of a refusal naming c's target (reason.h {target}). */
static void
conn_rarg(const struct eg_conn *c, struct eg_refusal_arg *a)
{
	memset(a, 0, sizeof(*a));
	a->host = c->t.host.name;
	a->hostlen = c->t.host.len;
	a->port = c->t.port;
}

/*
 * The BLOCK or FAIL line.  The caller holds the read lock: the phase it
 * names is the session's, as of the decision.
 */
static void
conn_deny_locked(struct eg_conn *c, enum egress_event_type t,
    enum eg_reason r)
{
	struct eg_event ev;

	if (c->decided)
		EG_BUG(c->ex, "a second verdict on one connection");
	conn_event(c, &ev, t);
	ev.reason = r;
	ev.phase = c->sess->phase;	/* written under the lock */
	eg_emit(c->ex, &ev);
	c->decided = 1;
}

/*
 * Refusal rf: one audit line (under the lock), BLOCK or FAIL as its
 * reason says, then the reply.
 */
static void
conn_deny(struct eg_conn *c, enum eg_refusal rf,
    const struct eg_refusal_arg *a)
{
	enum eg_reason r = eg_refusal_tab[rf].reason;

	pthread_rwlock_rdlock(&c->ex->lock);
	conn_deny_locked(c, eg_reason_tab[r].fail ? EGRESS_EV_FAIL :
	    EGRESS_EV_BLOCK, r);
	pthread_rwlock_unlock(&c->ex->lock);
	conn_refuse(c, rf, a);
}

/* A refused head (bad_request or timeout), naming the target if known;
 * why: the parser's, for EG_RF_REQUEST and EG_RF_RELAY. */
static void
conn_bad(struct eg_conn *c, enum eg_refusal rf, const char *why)
{
	struct eg_refusal_arg a;

	conn_rarg(c, &a);
	a.why = why;
	conn_deny(c, rf, &a);
}

/*
 * A policy refusal, decided under the lock: the BLOCK line is written
 * before the caller unlocks; the 403 follows with conn_policy_reply().
 */
static void
conn_policy_deny_locked(struct eg_conn *c, enum eg_match m)
{
	conn_deny_locked(c, EGRESS_EV_BLOCK, m == EG_MATCH_PORT_NOT_ALLOWED ?
	    EG_R_PORT_NOT_ALLOWED : EG_R_NOT_ALLOWED);
}

/* The 403 of a policy refusal; phase lives in c->cfg, which c holds.
 * A not_allowed refusal carries the phase's hint. */
static void
conn_policy_reply(struct eg_conn *c, enum eg_match m,
    const struct eg_phase *ph)
{
	struct eg_refusal_arg a;

	conn_rarg(c, &a);
	a.phase = ph->name;
	a.hint = ph->hint;
	a.num = c->t.port;
	conn_refuse(c, m == EG_MATCH_PORT_NOT_ALLOWED ?
	    EG_RF_PORT_NOT_ALLOWED : EG_RF_NOT_ALLOWED, &a);
}

/* --- budgets ------------------------------------------------------------- */

#define BUDGET_LEASE_MAX	((uint64_t)1 << 20)	/* bytes between folds */

void
eg_budget_reset(struct eg_budget *b)
{
	b->epoch++;
	__atomic_store_n(&b->up, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->down, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->req, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->spent, 0, __ATOMIC_RELAXED);
}

int
eg_budget_changed(const struct eg_phase *a, const struct eg_phase *b)
{
	return a->budget_has != b->budget_has ||
	    a->budget_up != b->budget_up || a->budget_down != b->budget_down ||
	    a->budget_requests != b->budget_requests;
}

/* The budgets of ph that b has spent, as EG_BUDGET_* bits: a byte count
 * past its limit, or as many requests as allowed.  Caller holds the lock. */
static unsigned
budget_spent(const struct eg_phase *ph, struct eg_budget *b)
{
	unsigned k = 0;

	if ((ph->budget_has & EG_BUDGET_UP) &&
	    __atomic_load_n(&b->up, __ATOMIC_RELAXED) > ph->budget_up)
		k |= EG_BUDGET_UP;
	if ((ph->budget_has & EG_BUDGET_DOWN) &&
	    __atomic_load_n(&b->down, __ATOMIC_RELAXED) > ph->budget_down)
		k |= EG_BUDGET_DOWN;
	if ((ph->budget_has & EG_BUDGET_REQ) &&
	    __atomic_load_n(&b->req, __ATOMIC_RELAXED) >= ph->budget_requests)
		k |= EG_BUDGET_REQ;
	return k;
}

/* Count the budgets in k as spent, once per count (the metric). */
static void
budget_note_spent(struct egress *ex, struct eg_budget *b, unsigned k)
{
	unsigned was = __atomic_fetch_or(&b->spent, k, __ATOMIC_RELAXED);

	for (k &= ~was; k != 0; k &= k - 1)
		eg_metrics_budget_exhausted(ex->metrics);
}

static uint64_t
budget_lease(uint64_t used, uint64_t limit)
{
	if (used >= limit)
		return 0;
	return limit - used < BUDGET_LEASE_MAX ? limit - used :
	    BUDGET_LEASE_MAX;
}

/*
 * A lease on the session's byte budgets (caller holds the lock): the
 * connection moves up to what is left (at most BUDGET_LEASE_MAX) before
 * it folds its bytes in; one more byte than the limit crosses it.
 */
static void
conn_budget_lease_locked(struct eg_conn *c)
{
	const struct eg_phase *ph = c->sess->phase;
	struct eg_budget *b = &c->sess->bud;

	c->bup_base = c->up;
	c->bdown_base = c->down;
	c->bup_mark = c->bdown_mark = UINT64_MAX;
	c->bleased = 0;
	if (ph == NULL || !(ph->budget_has & (EG_BUDGET_UP | EG_BUDGET_DOWN)))
		return;
	c->bleased = 1;
	c->bepoch = b->epoch;
	if (ph->budget_has & EG_BUDGET_UP)
		c->bup_mark = c->up + budget_lease(__atomic_load_n(&b->up,
		    __ATOMIC_RELAXED), ph->budget_up);
	if (ph->budget_has & EG_BUDGET_DOWN)
		c->bdown_mark = c->down + budget_lease(__atomic_load_n(
		    &b->down, __ATOMIC_RELAXED), ph->budget_down);
}

/*
 * Fold the bytes moved since the last fold into the session's counts
 * (caller holds the lock), unless the count was reset meanwhile (they
 * belong to the old one).  Returns the byte budgets now crossed.
 */
static unsigned
conn_budget_fold_locked(struct eg_conn *c)
{
	struct eg_budget *b = &c->sess->bud;
	unsigned k;

	if (!c->bleased)
		return 0;
	c->bleased = 0;
	c->bup_mark = c->bdown_mark = UINT64_MAX;
	if (c->bepoch != b->epoch)
		return 0;
	__atomic_add_fetch(&b->up, c->up - c->bup_base, __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->down, c->down - c->bdown_base,
	    __ATOMIC_RELAXED);
	c->bup_base = c->up;
	c->bdown_base = c->down;
	k = budget_spent(c->sess->phase, b) & (EG_BUDGET_UP | EG_BUDGET_DOWN);
	if (k != 0)
		budget_note_spent(c->ex, b, k);
	return k;
}

/* Fold what is left, outside the lock (the connection ends or its
 * plain-HTTP request is done). */
static void
conn_budget_fold(struct eg_conn *c)
{
	if (!c->bleased)
		return;
	pthread_rwlock_rdlock(&c->ex->lock);
	(void)conn_budget_fold_locked(c);
	pthread_rwlock_unlock(&c->ex->lock);
}

int
eg_conn_budget_check(struct eg_conn *c)
{
	unsigned k;

	pthread_rwlock_rdlock(&c->ex->lock);
	if ((k = conn_budget_fold_locked(c)) == 0)
		conn_budget_lease_locked(c);
	pthread_rwlock_unlock(&c->ex->lock);
	if (k == 0)
		return 0;
	eg_conn_reset_close(c, EG_END_BUDGET);
	return -1;
}

/*
 * A request of a session whose budget is spent (caller holds the lock):
 * the BLOCK line, and the 429's body into body (len bytes); returns its
 * refusal, EG_RF_COUNT when nothing is spent.  With count, an ALLOW is
 * about to be written: it takes one of budget_requests (exactly N are
 * allowed).
 */
static enum eg_refusal
conn_budget_refused_locked(struct eg_conn *c, int count, char *body,
    size_t len)
{
	const struct eg_phase *ph = c->sess->phase;
	struct eg_budget *b = &c->sess->bud;
	struct eg_refusal_arg a;
	enum eg_refusal rf;
	unsigned k;
	uint64_t n;

	if (ph == NULL || ph->budget_has == 0)
		return EG_RF_COUNT;
	k = budget_spent(ph, b);
	if (k == 0 && count && (ph->budget_has & EG_BUDGET_REQ)) {
		n = __atomic_add_fetch(&b->req, 1, __ATOMIC_RELAXED);
		if (n > ph->budget_requests) {
			__atomic_sub_fetch(&b->req, 1, __ATOMIC_RELAXED);
			k = EG_BUDGET_REQ;
		}
	}
	if (k == 0)
		return EG_RF_COUNT;
	budget_note_spent(c->ex, b, k);
	conn_rarg(c, &a);
	a.phase = ph->name;
	if (k & EG_BUDGET_UP) {
		rf = EG_RF_BUDGET_UP;
		a.num = ph->budget_up;
	} else if (k & EG_BUDGET_DOWN) {
		rf = EG_RF_BUDGET_DOWN;
		a.num = ph->budget_down;
	} else {
		rf = EG_RF_BUDGET_REQUESTS;
		a.num = ph->budget_requests;
	}
	eg_refusal_body(body, len, rf, &a);
	conn_deny_locked(c, EGRESS_EV_BLOCK, EG_R_BUDGET);
	return rf;
}

/*
 * Match the target against the session's current phase (caller holds
 * the lock), after taking the current snapshot, which the phase lives
 * in.  Fills in c->t's rule, report, phase and gen; returns the match.
 */
static enum eg_match
conn_match(struct eg_conn *c)
{
	struct eg_cfg *cfg = c->ex->cfg;
	const struct eg_phase *ph = c->sess->phase;

	if (c->cfg != cfg) {		/* keep the snapshot it lives in */
		eg_cfg_ref(cfg);
		eg_cfg_unref(c->cfg);
		c->cfg = cfg;
	}
	c->t.gen = c->sess->gen;
	c->t.phase = ph;
	return eg_phase_decide(ph, &c->t.host, c->t.port, cfg->ports,
	    cfg->nports, &c->t.rule, &c->t.report);
}

/*
 * The upstream is connected: decide for the last time, write ALLOW,
 * queue the 200.  One pass under the read lock: if the phase changed
 * while we resolved and connected (the generation moved), the target is
 * matched again; the ALLOW line, or the refusal's line, is written
 * before the lock is let go.  Returns 0, or -1 if refused after all.
 */
static int
conn_allow(struct eg_conn *c)
{
	struct eg_event ev;
	struct eg_refusal_arg a;
	enum eg_refusal rf;
	enum eg_match m;
	char body[EG_HOST_MAX + 256];

	if (c->decided)
		EG_BUG(c->ex, "a second verdict on one connection");
	pthread_rwlock_rdlock(&c->ex->lock);
	if (c->t.gen != c->sess->gen &&
	    (m = conn_match(c)) != EG_MATCH_ALLOW) {
		conn_policy_deny_locked(c, m);
		pthread_rwlock_unlock(&c->ex->lock);
		conn_policy_reply(c, m, c->t.phase);
		return -1;
	}
	if ((rf = conn_budget_refused_locked(c, 1, body, sizeof(body))) !=
	    EG_RF_COUNT) {
		pthread_rwlock_unlock(&c->ex->lock);
		conn_refuse_body(c, rf, body);
		return -1;
	}
	conn_event(c, &ev, EGRESS_EV_ALLOW);
	/* c->cfg is the snapshot this phase lives in: the name stays valid
	 * for the CLOSE line, whatever the session does meanwhile */
	ev.phase = c->t.phase;
	ev.addr = c->t.addr;
	ev.rule = c->t.rule ? c->t.rule->text : NULL;
	ev.report = c->t.report;
	if (eg_emit(c->ex, &ev) == -1) {
		/* no ALLOW line, no ALLOW: refuse, and close the upstream
		 * before a byte reaches it */
		conn_deny_locked(c, EGRESS_EV_BLOCK, EG_R_AUDIT_FAILED);
		pthread_rwlock_unlock(&c->ex->lock);
		conn_rarg(c, &a);
		conn_refuse(c, EG_RF_AUDIT_FAILED, &a);
		return -1;
	}
	conn_budget_lease_locked(c);
	pthread_rwlock_unlock(&c->ex->lock);
	c->decided = 1;
	c->allowed = 1;
	c->t0 = eg_wall_ms();
	return 0;
}

/* --- head ----------------------------------------------------------------- */

/* The raw request-target of a head we could not parse, for the log. */
static void
conn_raw_target(struct eg_conn *c)
{
	const uint8_t *p = c->h->buf, *e = p + c->h->len, *sp, *t;
	struct eg_host *hh = &c->t.host;
	size_t n;

	hh->len = 0;
	c->t.port = 0;
	if ((sp = memchr(p, ' ', c->h->len)) == NULL)
		return;
	t = sp + 1;
	for (n = 0; t + n < e && t[n] != ' ' && t[n] != '\r' &&
	    t[n] != '\n'; n++)
		;
	if (n == 0)
		return;
	if (n > EG_HOST_MAX)
		n = EG_HOST_MAX;
	memcpy(hh->name, t, n);
	hh->name[n] = '\0';
	hh->len = n;
}

/*
 * The target of a head the parser refused: the parsed host and port when
 * the request line was good (a bad header came later), else the raw one.
 */
static void
conn_bad_target(struct eg_conn *c)
{
	if (c->h->req.target_ok) {
		c->t.host = c->h->req.host;
		c->t.port = c->h->req.port;
	} else
		conn_raw_target(c);
}

static void	conn_decide(struct eg_conn *);

/* --- egressd's own relay ---------------------------------------------------- */

/* The handoff being read (relayhdr.h); freed once it is done. */
struct eg_relay_hdr {
	size_t		 len;
	int		 fd;		/* the client's TCP socket, or -1 */
	int		 extra;		/* more descriptors, or some lost */
	uint8_t		 buf[EG_RLY_MAX];
};

static void
conn_relay_free(struct eg_conn *c)
{
	if (c->rly == NULL)
		return;
	if (c->rly->fd != -1)
		close(c->rly->fd);
	eg_free(c->rly);
	c->rly = NULL;
}

/* Keep the descriptors of one recvmsg(): the first one, and note more. */
static void
conn_relay_fds(struct eg_relay_hdr *r, struct msghdr *msg)
{
	struct cmsghdr *cm;
	size_t i, n;
	int fd;

	if (msg->msg_flags & MSG_CTRUNC)
		r->extra = 1;
	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS) {
			r->extra = 1;
			continue;
		}
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			    sizeof(fd));
			if (r->fd == -1)
				r->fd = fd;
			else {
				close(fd);
				r->extra = 1;
			}
		}
	}
}

/*
 * A connection on a Unix listener made for egressd's own relay: read
 * its handoff (the header naming the process, and the client's TCP
 * socket), then serve that socket instead of the Unix one, so that a
 * policy close resets the client itself.  OK with the state unchanged
 * once the swap is done (the head is read next, from the TCP socket);
 * OK after a refusal (400: no good handoff), AGAIN, or CLOSED (the
 * relay went away before saying anything).
 */
static enum eg_io_st
conn_do_relay(struct eg_conn *c)
{
	struct eg_relay_hdr *r = c->rly;
	struct eg_relay_id *id;
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(4 * sizeof(int))];
	} cb;
	enum eg_refusal rf = EG_RF_RELAY;
	const char *why;
	size_t need;
	socklen_t sl;
	ssize_t n;
	int rc, v, fd;

	if (r == NULL) {
		conn_bad(c, EG_RF_RELAY_NOMEM, NULL);
		return EG_IO_OK;
	}
	if ((id = eg_malloc(sizeof(*id))) == NULL) {
		conn_relay_free(c);
		conn_bad(c, EG_RF_RELAY_NOMEM, NULL);
		return EG_IO_OK;
	}
	for (;;) {
		rc = eg_relay_hdr_parse(r->buf, r->len, &need, id, &why);
		if (rc != 0)
			break;
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = r->buf + r->len;
		iov.iov_len = need - r->len;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cb.b;
		msg.msg_controllen = sizeof(cb.b);
		n = recvmsg(c->cio.fd, &msg, MSG_CMSG_CLOEXEC);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				eg_free(id);
				return EG_IO_AGAIN;
			}
			n = 0;
		}
		conn_relay_fds(r, &msg);
		if (n == 0) {
			c->c_eof = 1;
			if (r->len == 0 && r->fd == -1) {
				/* the relay gave up before a word */
				eg_free(id);
				conn_relay_free(c);
				eg_conn_close(c, EG_END_CLIENT_CLOSED);
				return EG_IO_CLOSED;
			}
			rc = -1;
			rf = EG_RF_RELAY_INCOMPLETE;
			break;
		}
		r->len += (size_t)n;
	}
	fd = r->fd;
	if (rc == 1 && r->extra) {
		rc = -1;
		rf = EG_RF_RELAY_ANCILLARY;
	} else if (rc == 1 && fd == -1) {
		rc = -1;
		rf = EG_RF_RELAY_NO_SOCKET;
	} else if (rc == 1) {
		sl = sizeof(v);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &sl) == -1 ||
		    v != SOCK_STREAM || (sl = sizeof(v), getsockopt(fd,
		    SOL_SOCKET, SO_DOMAIN, &v, &sl)) == -1 ||
		    (v != AF_INET && v != AF_INET6)) {
			rc = -1;
			rf = EG_RF_RELAY_NOT_TCP;
		}
	}
	if (rc != 1) {
		eg_free(id);
		conn_relay_free(c);
		conn_bad(c, rf, why);
		return EG_IO_OK;
	}
	r->fd = -1;
	conn_relay_free(c);
	/* the relay's part is over: its Unix socket is closed, its TCP
	 * client served from here on */
	(void)fcntl(fd, F_SETFL, O_NONBLOCK | fcntl(fd, F_GETFL));
	eg_io_del(c->w->loop, &c->cio);
	close(c->cio.fd);
	eg_io_set_fd(&c->cio, fd);
	/* what the Unix socket's events said (the relay's FIN: hup) is not
	 * true of the client: a stale hup would end its stream at its
	 * first short read */
	c->c_eof = 0;
	c->c2u.rd = 1;
	c->c2u.hup = 0;
	if (id->pid != 0)
		snprintf(c->rpid, sizeof(c->rpid), "%lu",
		    (unsigned long)id->pid);
	if (id->exelen > 0 && (c->rexe = eg_malloc(id->exelen + 1)) != NULL)
		memcpy(c->rexe, id->exe, id->exelen + 1);
	c->relay = 2;
	eg_free(id);
	return EG_IO_OK;
}

/*
 * A TLS record where a request head should be: a client was told to
 * use an https:// proxy.  It gets the TLS alert protocol_version (it
 * speaks TLS, not HTTP) and the log a BLOCK tls_to_proxy whose host is
 * "-", not the ClientHello's bytes.
 */
static void
conn_tls_to_proxy(struct eg_conn *c)
{
	/* alert record, TLS 1.0 framing: fatal (2), protocol_version (70) */
	static const uint8_t alert[] = { 0x15, 0x03, 0x01, 0x00, 0x02, 0x02,
	    0x46 };

	c->t.host.len = 0;
	c->t.host.name[0] = '\0';
	c->t.port = 0;
	pthread_rwlock_rdlock(&c->ex->lock);
	conn_deny_locked(c, EGRESS_EV_BLOCK, EG_R_TLS_TO_PROXY);
	pthread_rwlock_unlock(&c->ex->lock);
	conn_reply_close(c, alert, sizeof(alert));
}

static enum eg_io_st
conn_do_head(struct eg_conn *c)
{
	struct head *h = c->h;
	enum eg_parse r;
	const char *why = NULL;
	size_t cap = h->cap, hl;	/* c->cfg may be newer than h */
	ssize_t n;

	if (c->relay == 1) {
		enum eg_io_st rr = conn_do_relay(c);

		if (rr != EG_IO_OK || c->state != EG_CS_HEAD)
			return rr;
	}
	for (;;) {
		if (h->len > 0 && !c->kept && h->scan == 0 &&
		    eg_relay_hdr_sig(h->buf, h->len)) {
			if (h->len < EG_RLY_SIGLEN)
				goto more;	/* not decided yet */
			conn_bad(c, EG_RF_PROXY_HEADER, NULL);
			return EG_IO_OK;
		}
		/* a TLS handshake record (0x16): no method begins so */
		if (h->len > 0 && h->buf[0] == 0x16) {
			conn_tls_to_proxy(c);
			return EG_IO_OK;
		}
		if (h->len > 0) {
			r = eg_head_scan(h->buf, h->len, &h->scan, &hl);
			if (r == EG_PARSE_OK)
				break;
			if (r == EG_PARSE_BAD) {
				conn_raw_target(c);
				conn_bad(c, EG_RF_HEAD_MALFORMED, NULL);
				return EG_IO_OK;
			}
		}
more:
		if (h->len == cap) {
			conn_raw_target(c);
			conn_bad(c, EG_RF_HEAD_TOO_LARGE, NULL);
			return EG_IO_OK;
		}
		n = recv(c->cio.fd, h->buf + h->len, cap - h->len, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return EG_IO_AGAIN;
			n = 0;
		}
		if (n == 0) {
			/* gone before a complete request: nothing to log
			 * unless it had started one */
			c->c_eof = 1;
			if (h->len > 0) {
				conn_raw_target(c);
				conn_bad(c, EG_RF_HEAD_INCOMPLETE, NULL);
				return EG_IO_OK;
			}
			eg_conn_close(c, EG_END_CLIENT_CLOSED);
			return EG_IO_CLOSED;
		}
		h->len += (size_t)n;
	}
	memset(&h->req, 0, sizeof(h->req));
	r = eg_req_parse(h->buf, hl, &h->req, &why);
	if (r == EG_PARSE_TOOBIG) {
		conn_bad_target(c);
		conn_bad(c, EG_RF_HEAD_TOO_MANY, NULL);
		return EG_IO_OK;
	}
	if (r != EG_PARSE_OK) {
		conn_bad_target(c);
		conn_bad(c, why != NULL ? EG_RF_REQUEST :
		    EG_RF_REQUEST_MALFORMED, why);
		return EG_IO_OK;
	}
	h->req.head_len = hl;
	c->method = h->req.method;
	if (eg_route_head(c))
		return EG_IO_OK;
	c->t.host = h->req.host;
	c->t.port = h->req.port;
	if (h->req.form == EG_REQ_ABSOLUTE && !c->cfg->plain_http) {
		conn_bad(c, EG_RF_PLAIN_DISABLED, NULL);
		return EG_IO_OK;
	}
	c->kept = 0;
	conn_decide(c);
	return EG_IO_OK;
}

/* --- decision, resolution, connection ------------------------------------ */

static void	conn_dns_done(void *, int, const char *,
		    const struct sockaddr_storage *, size_t);

/*
 * The request head is parsed: decide.  One pass under the read lock: the
 * current snapshot, the session's phase, the match, and for a refusal its
 * BLOCK line.  Then the addresses: literal, pinned, or a DNS query.
 */
static void
conn_decide(struct eg_conn *c)
{
	struct eg_target *t = &c->t;
	enum eg_refusal rf;
	enum eg_match m;
	char body[EG_HOST_MAX + 256];

	pthread_rwlock_rdlock(&c->ex->lock);
	m = conn_match(c);
	if (m != EG_MATCH_ALLOW) {
		conn_policy_deny_locked(c, m);
		pthread_rwlock_unlock(&c->ex->lock);
		conn_policy_reply(c, m, t->phase);
		return;
	}
	if ((rf = conn_budget_refused_locked(c, 0, body, sizeof(body))) !=
	    EG_RF_COUNT) {
		pthread_rwlock_unlock(&c->ex->lock);
		conn_refuse_body(c, rf, body);
		return;
	}
	pthread_rwlock_unlock(&c->ex->lock);
	eg_conn_resolve(c);
}

void
eg_conn_resolve(struct eg_conn *c)
{
	struct eg_target *t = &c->t;

	t->addrs = c->h->addrs;
	t->ai = 0;
	/* operator-written addresses are trusted; a report-mode pass is not */
	t->naddr = eg_cfg_known_addrs(c->cfg, &t->host, t->report, t->addrs,
	    EG_DNS_MAXADDR, &t->trusted);
	if (t->naddr == 0) {
		eg_conn_set_state(c, EG_CS_RESOLVING);
		c->dns_pending = 1;
		c->dns_done = 0;
		c->t_start = eg_clock_us();
		eg_dns_lookup(c->w->dns, t->host.name, conn_dns_done, c);
		return;
	}
	c->dns_done = 1;
	c->dns_status = 0;
	eg_conn_set_state(c, EG_CS_RESOLVING);
}

static void
conn_dns_done(void *arg, int status, const char *reason,
    const struct sockaddr_storage *addrs, size_t n)
{
	struct eg_conn *c = arg;

	c->dns_pending = 0;
	if (c->state != EG_CS_RESOLVING)
		return;		/* closed meanwhile; reaped after the batch */
	c->dns_done = 1;
	c->dns_status = status;
	eg_metrics_observe(c->ex->metrics, EG_HIST_DNS,
	    eg_clock_us() - c->t_start);
	snprintf(c->dns_reason, sizeof(c->dns_reason), "%s",
	    reason ? reason : "");
	if (status == 0) {
		memcpy(c->t.addrs, addrs, n * sizeof(addrs[0]));
		c->t.naddr = n;
	}
	if (!c->in_step)
		conn_step(c);
}

static socklen_t
sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6);
}

static void
sa_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *a;

	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (inet_ntop(ss->ss_family, a, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

static int
conn_is_loop(void *arg, const struct sockaddr *sa)
{
	return eg_ownaddr_is_own(arg, sa);
}

/* Start a non-blocking connect to the next candidate. */
static enum eg_io_st
conn_connect_next(struct eg_conn *c)
{
	struct sockaddr_storage *ss;
	int fd, one = 1;

	while (c->t.ai < c->t.naddr) {
		ss = &c->t.addrs[c->t.ai++];
		sa_text(ss, c->t.addr, sizeof(c->t.addr));
		fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
		if (fd == -1)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (eg_sa_loopback((struct sockaddr *)ss))
			eg_tcp_local(fd);	/* a leg inside this host */
		if (connect(fd, (struct sockaddr *)ss, sa_len(ss)) == -1 &&
		    errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		eg_io_set_fd(&c->uio, fd);
		c->u2c.rd = c->u2c.hup = 0;
		return EG_IO_OK;
	}
	return EG_IO_ERR;		/* no candidate left */
}

static void
conn_fail(struct eg_conn *c, enum eg_reason r)
{
	struct eg_refusal_arg a;
	enum eg_refusal rf;

	if (c->uio.fd != -1) {
		eg_io_del(c->w->loop, &c->uio);
		close(c->uio.fd);
		c->uio.fd = -1;
	}
	conn_rarg(c, &a);
	switch (r) {
	case EG_R_DNS_FAILURE:
		rf = EG_RF_DNS_FAILURE;
		a.why = c->dns_reason;
		break;
	case EG_R_CONNECT_TIMEOUT:
		rf = EG_RF_CONNECT_TIMEOUT;
		a.num = c->cfg->connect_timeout_ms / 1000;
		break;
	case EG_R_PRIVATE_ADDRESS:
		rf = EG_RF_PRIVATE_ADDRESS;
		break;
	case EG_R_LOOP:
		rf = EG_RF_LOOP;
		break;
	default:
		rf = EG_RF_CONNECT_FAILED;
		break;
	}
	conn_deny(c, rf, &a);
}

static void	conn_connected(struct eg_conn *);

static enum eg_io_st
conn_do_resolving(struct eg_conn *c)
{
	struct eg_ownaddr *own;
	enum eg_select sel;
	size_t i;
	int fd;

	if (!c->dns_done)
		return EG_IO_AGAIN;
	if (c->dns_status != 0) {
		conn_fail(c, EG_R_DNS_FAILURE);
		return EG_IO_OK;
	}
	/* the worker's snapshot of our own addresses, held for the check */
	own = eg_ownaddr_ref(c->w->own);
	sel = eg_addr_select(c->t.addrs, c->t.naddr, c->t.port,
	    c->cfg->deny_private, c->t.trusted, conn_is_loop, own,
	    &c->t.naddr);
	eg_ownaddr_unref(own);
	switch (sel) {
	case EG_SELECT_OK:
		break;
	case EG_SELECT_LOOP:
		conn_fail(c, EG_R_LOOP);
		return EG_IO_OK;
	case EG_SELECT_PRIVATE:
		conn_fail(c, EG_R_PRIVATE_ADDRESS);
		return EG_IO_OK;
	}
	/* plain HTTP: an idle upstream of this session, to this host and
	 * port at an address just checked, is as good as a new one */
	if (c->h->req.form == EG_REQ_ABSOLUTE && (fd = eg_upool_get(
	    &c->w->upool, c->sess, EG_UPOOL_HTTP, &c->t.host, c->t.port,
	    c->t.addrs, c->t.naddr, &i)) != -1) {
		c->t.ai = i + 1;
		sa_text(&c->t.addrs[i], c->t.addr, sizeof(c->t.addr));
		eg_io_set_fd(&c->uio, fd);
		c->u2c.rd = c->u2c.hup = 0;
		c->reused = 1;
		conn_connected(c);
		return EG_IO_OK;
	}
	c->t_start = eg_clock_us();
	if (conn_connect_next(c) != EG_IO_OK) {
		conn_fail(c, EG_R_CONNECT_FAILED);
		return EG_IO_OK;
	}
	eg_conn_set_state(c, EG_CS_CONNECTING);
	return EG_IO_AGAIN;
}

int
eg_conn_reconnect(struct eg_conn *c)
{
	if (c->uio.fd != -1) {
		eg_io_del(c->w->loop, &c->uio);
		close(c->uio.fd);
		c->uio.fd = -1;
	}
	c->reused = 0;
	c->t.ai = 0;
	c->t_start = eg_clock_us();
	if (conn_connect_next(c) != EG_IO_OK)
		return -1;
	eg_conn_set_state(c, EG_CS_CONNECTING);
	return 0;
}

static void
conn_connected(struct eg_conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (c->rt != NULL) {
		eg_route_connected(c);
		return;
	}
	if (conn_allow(c) == -1)
		return;
	if (c->h->req.form == EG_REQ_ABSOLUTE) {
		eg_forward_begin(c);
		return;
	}
	if (eg_pend_append(c, &c->u2c, ok, sizeof(ok) - 1) == -1) {
		/* no buffer for the 200 (out of memory): the ALLOW is
		 * written, so the CLOSE says end=error; no tunnel opens */
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	eg_conn_set_state(c, EG_CS_REPLYING);
}

/*
 * CONNECTING: the upstream socket's readiness (c->uev, set by conn_uio(),
 * taken here so that a later connect never sees it).  Writable without an
 * error or hang-up means connected (no SO_ERROR query needed); otherwise
 * SO_ERROR says why.  Client events and timers find nothing to do.
 */
static enum eg_io_st
conn_do_connecting(struct eg_conn *c)
{
	uint32_t events = c->uev;
	int err = 0;
	socklen_t len = sizeof(err);

	c->uev = 0;
	if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0)
		return EG_IO_AGAIN;
	if ((events & (EPOLLERR | EPOLLHUP)) != 0 &&
	    getsockopt(c->uio.fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if ((events & (EPOLLERR | EPOLLHUP)) != 0 && err == 0)
		err = ECONNREFUSED;	/* hung up without a pending error */
	if (err == 0) {
		eg_metrics_observe(c->ex->metrics, EG_HIST_CONNECT,
		    eg_clock_us() - c->t_start);
		if (c->allowed) {
			/* a plain-HTTP retry (eg_conn_reconnect()): its
			 * request is queued in c2u */
			eg_conn_set_state(c, EG_CS_FORWARD);
			return EG_IO_OK;
		}
		conn_connected(c);
		return EG_IO_OK;
	}
	eg_io_del(c->w->loop, &c->uio);
	close(c->uio.fd);
	c->uio.fd = -1;
	if (conn_connect_next(c) == EG_IO_OK)
		return EG_IO_AGAIN;	/* same state; timer keeps running */
	if (c->allowed) {		/* a retry: the ALLOW owes a CLOSE */
		eg_conn_close(c, EG_END_ERROR);
		return EG_IO_CLOSED;
	}
	conn_fail(c, EG_R_CONNECT_FAILED);
	return EG_IO_OK;
}

/* The shorter of idle_timeout and, once a side has ended, fin_timeout. */
unsigned
eg_conn_idle_ms(const struct eg_conn *c)
{
	if (c->fin && c->cfg->fin_timeout_ms < c->cfg->idle_timeout_ms)
		return c->cfg->fin_timeout_ms;
	return c->cfg->idle_timeout_ms;
}

static enum eg_io_st
conn_do_replying(struct eg_conn *c)
{
	enum eg_io_st r;
	size_t extra, cap;

	r = eg_pend_flush(c, &c->u2c, c->cio.fd);
	if (r == EG_IO_AGAIN)
		return EG_IO_AGAIN;
	if (r == EG_IO_ERR) {
		eg_conn_close(c, EG_END_CLIENT_CLOSED);
		return EG_IO_CLOSED;
	}
	if (c->close_after) {
		shutdown(c->cio.fd, SHUT_WR);
		eg_conn_set_state(c, EG_CS_LINGER);
		return EG_IO_AGAIN;
	}
	/*
	 * The 200 is out: the tunnel opens and the head buffer goes away
	 * (c->t.host keeps what the CLOSE line needs).  Bytes the client sent
	 * right behind its CONNECT head belong to the tunnel: they become
	 * the first pending upstream bytes (held for the SNI check first).
	 */
	extra = c->h->len - c->h->req.head_len;
	if (extra > 0) {
		cap = c->cfg->sni_check ? SNIBUF : TUNBUF;
		if (eg_pend_reserve(c, &c->c2u, extra > cap ? extra : cap) ==
		    -1 || eg_pend_append(c, &c->c2u, c->h->buf +
		    c->h->req.head_len, extra) == -1) {
			eg_conn_close(c, EG_END_ERROR);
			return EG_IO_CLOSED;
		}
		if (!c->cfg->sni_check)
			c->up += extra;
	}
	c->method = "CONNECT";	/* c->h->req.method goes with c->h */
	head_put(c->w, c->h);
	c->h = NULL;
	c->t.addrs = NULL;	/* they were in the head */
	c->t.naddr = c->t.ai = 0;
	/* with held bytes, SNI's timer is header_timeout from the start */
	eg_conn_set_state(c, c->cfg->sni_check ? EG_CS_SNI : EG_CS_TUNNEL);
	return EG_IO_OK;
}

static enum eg_io_st
conn_do_linger(struct eg_conn *c)
{
	ssize_t n;

	for (;;) {
		n = recv(c->cio.fd, c->w->scratch, sizeof(c->w->scratch), 0);
		if (n > 0)
			continue;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return EG_IO_AGAIN;
		eg_conn_close(c, EG_END_NONE);
		return EG_IO_CLOSED;
	}
}

/* --- lifecycle -------------------------------------------------------------- */

static void
conn_emit_close(struct eg_conn *c, enum eg_end end)
{
	struct eg_event ev;
	int64_t now = eg_wall_ms();

	if (!c->allowed)
		EG_BUG(c->ex, "a CLOSE line without its ALLOW");
	conn_event(c, &ev, EGRESS_EV_CLOSE);
	ev.up = c->up;
	ev.down = c->down;
	ev.ms = now > c->t0 ? (uint64_t)(now - c->t0) : 0;
	ev.end = end == EG_END_NONE ? EG_END_ERROR : end;
	ev.sni = end == EG_END_SNI_MISMATCH ? c->sni : NULL;
	ev.phase = c->t.phase;
	eg_emit(c->ex, &ev);
	c->allowed = 0;
}

/* After a plain-HTTP response: close the upstream, log CLOSE, and read
 * the next request on the same client connection. */
void
eg_conn_reset_for_next(struct eg_conn *c)
{
	conn_budget_fold(c);
	conn_emit_close(c, EG_END_DONE);
	if (c->uio.fd != -1) {		/* not given to the pool */
		eg_io_del(c->w->loop, &c->uio);
		close(c->uio.fd);
		c->uio.fd = -1;
	}
	c->reused = 0;
	eg_free(c->f);
	c->f = NULL;
	eg_pend_release(c, &c->c2u);
	eg_pend_release(c, &c->u2c);
	c->up = c->down = 0;
	c->bup_mark = c->bdown_mark = UINT64_MAX;
	c->u_eof = c->u_wshut = 0;
	c->decided = 0;
	c->end = EG_END_NONE;
	c->method = NULL;
	c->kept = 1;
	c->id = __atomic_add_fetch(&c->ex->next_id, 1, __ATOMIC_RELAXED);
	eg_conn_set_state(c, EG_CS_HEAD);
}

void
eg_conn_close(struct eg_conn *c, enum eg_end end)
{
	struct eg_worker *w = c->w;

	if (c->state == EG_CS_DEAD)
		return;
	conn_budget_fold(c);
	eg_route_release(c);	/* an idle kept upstream: to the pool */
	if (c->allowed)
		conn_emit_close(c, end);
	eg_conn_set_state(c, EG_CS_DEAD);	/* stops the timer */
	if (c->tres)
		eg_timer_unreserve(w->loop, 1);
	c->tres = 0;
	if (c->cio.fd != -1) {
		eg_io_del(c->w->loop, &c->cio);
		close(c->cio.fd);
		c->cio.fd = -1;
	}
	if (c->uio.fd != -1) {
		eg_io_del(c->w->loop, &c->uio);
		close(c->uio.fd);
		c->uio.fd = -1;
	}
	/* unlink from the live list; free after the batch */
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->next = w->dead;
	c->prev = NULL;
	w->dead = c;
	if (c->sprev != NULL)
		c->sprev->snext = c->snext;
	else
		c->sess->wconns[w->idx] = c->snext;
	if (c->snext != NULL)
		c->snext->sprev = c->sprev;
	c->sprev = c->snext = NULL;
	eg_session_detach(c->sess);
	if (c->counted)
		eg_client_release(c->ex, (struct sockaddr *)&c->cpeer);
	c->counted = 0;
	__atomic_sub_fetch(&c->ex->active, 1, __ATOMIC_RELAXED);
}

void
eg_conn_reset_close(struct eg_conn *c, enum eg_end end)
{
	static const struct linger rst = { 1, 0 };

	if (c->state == EG_CS_DEAD)
		return;
	if (c->cio.fd != -1)
		(void)setsockopt(c->cio.fd, SOL_SOCKET, SO_LINGER, &rst,
		    sizeof(rst));
	if (c->uio.fd != -1)
		(void)setsockopt(c->uio.fd, SOL_SOCKET, SO_LINGER, &rst,
		    sizeof(rst));
	eg_conn_close(c, end);
}

void
eg_conn_close_upstream(struct eg_conn *c, enum eg_end end, int cut)
{
	if (cut && end == EG_END_UPSTREAM_CLOSED)
		eg_conn_reset_close(c, end);
	else
		eg_conn_close(c, end);
}

void
eg_conn_why(struct eg_conn *c, const char *fmt, ...)
{
	struct eg_event ev;
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	memset(&ev, 0, sizeof(ev));
	eg_route_event(c, &ev);		/* ev.route: a route request's */
	if (ev.route != NULL)
		eg_log(c->ex, EGRESS_LOG_WARN, "route %s id=%llu: end=error: "
		    "%s", ev.route, (unsigned long long)c->id, why);
	else
		eg_log(c->ex, EGRESS_LOG_WARN, "tunnel %s:%u id=%llu: "
		    "end=error: %s", c->t.host.name, (unsigned)c->t.port,
		    (unsigned long long)c->id, why);
}

/* A zeroed connection: from the worker's pool, else a new one. */
static struct eg_conn *
conn_get(struct eg_worker *w)
{
	struct eg_conn *c = eg_freelist_get(&w->connpool, &w->nconnpool);

	if (c == NULL)
		return eg_calloc(1, sizeof(*c));
	memset(c, 0, sizeof(*c));
	return c;
}

static void
conn_free(struct eg_conn *c)
{
	struct eg_worker *w = c->w;

	eg_pend_release(c, &c->c2u);
	eg_pend_release(c, &c->u2c);
	eg_pipe_put(c, &c->c2u);
	eg_pipe_put(c, &c->u2c);
	head_put(w, c->h);
	eg_free(c->f);
	conn_relay_free(c);
	eg_free(c->rexe);
	c->rexe = NULL;
	eg_route_free(c);
	eg_cfg_unref(c->cfg);
	eg_session_unref(c->sess);
	c->sess = NULL;
	eg_freelist_put(&w->connpool, &w->nconnpool, c, CONNPOOL_MAX);
}

void
eg_conn_pool_drain(struct eg_worker *w)
{
	eg_freelist_drain(&w->connpool, &w->nconnpool);
	eg_freelist_drain(&w->headpool, &w->nheadpool);
	eg_route_pool_drain(w);
}

void
eg_conn_reap(struct eg_worker *w)
{
	struct eg_conn *c, **cp;

	for (cp = &w->dead; (c = *cp) != NULL;) {
		/* a DNS query still owns c: its callback comes later */
		if (c->dns_pending) {
			cp = &c->next;
			continue;
		}
		*cp = c->next;
		conn_free(c);
	}
}

static void
conn_step(struct eg_conn *c)
{
	enum eg_io_st r = EG_IO_OK;

	c->in_step = 1;
	while (r == EG_IO_OK) {
		switch (c->state) {
		case EG_CS_HEAD:	r = conn_do_head(c);		break;
		case EG_CS_RESOLVING:	r = conn_do_resolving(c);	break;
		case EG_CS_CONNECTING:	r = conn_do_connecting(c);	break;
		case EG_CS_REPLYING:	r = conn_do_replying(c);	break;
		case EG_CS_SNI:		r = eg_tunnel_do_sni(c);		break;
		case EG_CS_TUNNEL:	r = eg_tunnel_do(c);		break;
		case EG_CS_FORWARD:	r = eg_forward_do(c);		break;
		case EG_CS_ROUTE:	r = eg_route_do(c);		break;
		case EG_CS_LINGER:	r = conn_do_linger(c);		break;
		case EG_CS_NEW:
		case EG_CS_DEAD:	r = EG_IO_CLOSED;			break;
		}
	}
	c->in_step = 0;
	if (c->state != EG_CS_DEAD)
		conn_interest(c);
}

/* What epoll says of the socket p reads from: something to read (bytes,
 * the end or an error), its FIN queued (RDHUP without an error). */
static void
conn_pend_events(struct pend *p, uint32_t events)
{
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
		p->rd = 1;
	if ((events & (EPOLLRDHUP | EPOLLERR)) == EPOLLRDHUP)
		p->hup = 1;
}

static void
conn_cio(void *arg, uint32_t events)
{
	struct eg_conn *c = arg;

	conn_pend_events(&c->c2u, events);
	conn_step(c);
}

static void
conn_uio(void *arg, uint32_t events)
{
	struct eg_conn *c = arg;

	conn_pend_events(&c->u2c, events);
	c->uev = events;	/* for CONNECTING; cleared on its entry */
	if (c->state == EG_CS_HEAD)
		eg_route_idle_event(c);
	conn_step(c);
}

static void
conn_timeout(void *arg)
{
	struct eg_conn *c = arg;
	uint64_t now = eg_loop_now(c->w->loop), idle;
	int fin;

	switch (c->state) {
	case EG_CS_HEAD:
		if (c->kept && c->h->len == 0) {
			/* an idle kept-alive client: not a request */
			eg_conn_close(c, EG_END_NONE);
			return;
		}
		conn_raw_target(c);
		conn_bad(c, EG_RF_HEAD_TIMEOUT, NULL);
		break;
	case EG_CS_CONNECTING:
		if (c->allowed) {	/* a plain-HTTP retry */
			eg_conn_close(c, EG_END_ERROR);
			return;
		}
		conn_fail(c, EG_R_CONNECT_TIMEOUT);
		break;
	case EG_CS_SNI:
		if (eg_buf_len(&c->c2u.b) > 0) {
			/* a ClientHello started but did not finish within
			 * header_timeout: a stalling client, not an idle one
			 * (the CLOSE line has no field for why) */
			eg_conn_why(c, "sni_check: the client's "
			    "ClientHello was not complete within "
			    "header_timeout; nothing was forwarded");
			eg_conn_close(c, EG_END_ERROR);
			return;
		}
		/* FALLTHROUGH */
	case EG_CS_ROUTE:
		if (c->state == EG_CS_ROUTE && eg_route_handshaking(c)) {
			conn_fail(c, EG_R_CONNECT_TIMEOUT);
			break;
		}
		/* FALLTHROUGH */
	case EG_CS_TUNNEL:
	case EG_CS_FORWARD:
		idle = eg_conn_idle_ms(c);
		/* half-open, and fin_timeout is what ran out */
		fin = c->fin && c->cfg->fin_timeout_ms <= idle;
		if (now - c->last < idle) {
			/* active since: re-armed for what is left */
			eg_conn_set_state(c, c->state);
			return;
		}
		eg_conn_close(c, fin ? c->end : EG_END_IDLE_TIMEOUT);
		return;
	case EG_CS_LINGER:
		eg_conn_close(c, EG_END_NONE);
		return;
	default:
		return;
	}
	conn_step(c);
}

/* Format the peer for the audit log. */
static void
conn_client_text(struct eg_conn *c, const struct sockaddr *sa)
{
	if (eg_addr_text(sa, c->client, sizeof(c->client)) == -1)
		snprintf(c->client, sizeof(c->client), "%s",
		    c->ex->unix_client);
}

/*
 * No memory for a new client's connection: log the refusal (BLOCK
 * too_many_connections, like a full house) and say 503 at once, as far as
 * the socket takes it, then close.  Best effort: no linger, so a client
 * that sends more may see a reset.
 */
static void
conn_refuse_nomem(struct eg_worker *w, struct eg_lsock *ls, int fd,
    const struct sockaddr *sa)
{
	char reply[EG_REFUSAL_MAX];	/* no allocation: formatted here */
	size_t n;
	struct eg_event ev;
	struct eg_conn tmp;	/* only what conn_event() reads */

	memset(&tmp, 0, sizeof(tmp));
	tmp.w = w;
	tmp.ex = w->ex;
	tmp.sess = ls->sess;
	tmp.id = __atomic_add_fetch(&w->ex->next_id, 1, __ATOMIC_RELAXED);
	conn_client_text(&tmp, sa);
	conn_event(&tmp, &ev, EGRESS_EV_BLOCK);
	ev.reason = EG_R_TOO_MANY;
	pthread_rwlock_rdlock(&w->ex->lock);
	ev.phase = ls->sess->phase;
	eg_emit(w->ex, &ev);
	pthread_rwlock_unlock(&w->ex->lock);
	n = eg_refusal_write(reply, sizeof(reply), EG_RF_NOMEM, NULL);
	(void)send(fd, reply, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(fd, SHUT_WR);
	close(fd);
}

/*
 * A new client.  Over a limit, the refusal is logged and written at once
 * (best effort, non-blocking) and the socket closed.  So it is when
 * memory runs out before the connection is set up (503).
 */
void
eg_conn_accept(struct eg_worker *w, struct eg_lsock *ls, int fd,
    const struct sockaddr *sa, socklen_t salen)
{
	struct egress *ex = w->ex;
	struct eg_conn *c;
	unsigned active;

	if ((c = conn_get(w)) == NULL) {
		conn_refuse_nomem(w, ls, fd, sa);
		return;
	}
	/* its timer's heap slot, so that arming it never allocates */
	if (eg_timer_reserve(w->loop, 1) == -1) {
		eg_free(c);
		conn_refuse_nomem(w, ls, fd, sa);
		return;
	}
	c->tres = 1;
	c->w = w;
	c->ex = ex;
	c->sess = ls->sess;
	c->id = __atomic_add_fetch(&ex->next_id, 1, __ATOMIC_RELAXED);
	eg_io_init(&c->cio, fd, conn_cio, c);
	eg_io_init(&c->uio, -1, conn_uio, c);
	c->c2u.pipe[0] = c->c2u.pipe[1] = -1;
	c->u2c.pipe[0] = c->u2c.pipe[1] = -1;
	c->bup_mark = c->bdown_mark = UINT64_MAX;
	eg_timer_init(&c->tmo, conn_timeout, c);
	if (salen <= sizeof(c->cpeer))
		memcpy(&c->cpeer, sa, salen);
	conn_client_text(c, sa);
	if (ex->unix_relay && ls->kind == EG_LISTEN_UNIX) {
		/* conn_do_relay(); no memory: refused there */
		c->relay = 1;
		if ((c->rly = eg_malloc(sizeof(*c->rly))) != NULL) {
			c->rly->len = 0;
			c->rly->fd = -1;
			c->rly->extra = 0;
		}
	}
	/* the worker's snapshot, no lock: conn_decide() takes the current
	 * one under the lock, with the phase */
	c->cfg = w->cfg;
	eg_cfg_ref(c->cfg);
	c->next = w->conns;
	if (w->conns != NULL)
		w->conns->prev = c;
	w->conns = c;
	/* and on its session's list, holding a reference */
	eg_session_attach(c->sess);
	c->snext = c->sess->wconns[w->idx];
	if (c->snext != NULL)
		c->snext->sprev = c;
	c->sess->wconns[w->idx] = c;
	active = __atomic_add_fetch(&ex->active, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ex->total, 1, __ATOMIC_RELAXED);
	c->h = head_get(w, c->cfg->max_header_bytes);
	if (c->h == NULL) {
		/* refused before any decision (from EG_CS_NEW: no
		 * header_timeout was armed) */
		conn_deny(c, EG_RF_NOMEM, NULL);
		conn_step(c);
		return;
	}
	eg_conn_set_state(c, EG_CS_HEAD);
	/*
	 * Each connection needs a second descriptor for its upstream (and a
	 * pipe pair while splicing): refuse cleanly while there is room to
	 * say so, instead of failing later with EMFILE.  No request has
	 * been read yet, so these bodies can name no target.
	 */
	if (active > c->cfg->max_connections || (ex->fd_limit > 0 &&
	    (unsigned)fd + EG_FD_RESERVE >= ex->fd_limit)) {
		conn_deny(c, EG_RF_TOO_MANY, NULL);
		conn_step(c);
		return;
	}
	if (eg_client_acquire(ex, sa, c->cfg->max_connections_per_client)
	    == -1) {
		conn_deny(c, EG_RF_TOO_MANY_CLIENT, NULL);
		conn_step(c);
		return;
	}
	c->counted = 1;
	conn_step(c);
}

/*
 * After a phase switch or reload: close the open tunnels (and idle
 * kept-alive plain-HTTP clients) of sess that the new phase does not
 * allow.  Runs on the worker's loop thread; the caller does not hold the
 * lock.
 */
unsigned
eg_conn_recheck(struct eg_worker *w, struct eg_session *sess,
    enum eg_end why)
{
	struct eg_conn *c, *next;
	unsigned n = 0;
	enum eg_match m;
	const struct eg_rule *rule;
	struct eg_host *host;
	uint16_t port;
	int report;

	for (c = sess->wconns[w->idx]; c != NULL; c = next) {
		next = c->snext;
		if (!(c->allowed || c->kept))
			continue;
		if (c->state != EG_CS_TUNNEL && c->state != EG_CS_SNI &&
		    c->state != EG_CS_FORWARD && c->state != EG_CS_REPLYING &&
		    !(c->state == EG_CS_HEAD && c->kept) &&
		    !(c->state == EG_CS_CONNECTING && c->allowed))
			continue;
		host = &c->t.host;
		port = c->t.port;
		pthread_rwlock_rdlock(&w->ex->lock);
		m = eg_phase_decide(sess->phase, host, port, w->ex->cfg->ports,
		    w->ex->cfg->nports, &rule, &report);
		if (m == EG_MATCH_ALLOW && c->allowed) {
			/* it stays: its bytes count towards the budgets of
			 * the session's phase now */
			(void)conn_budget_fold_locked(c);
			conn_budget_lease_locked(c);
		}
		pthread_rwlock_unlock(&w->ex->lock);
		if (m == EG_MATCH_ALLOW)
			continue;
		eg_conn_reset_close(c, why);
		n++;
	}
	return n;
}

/* DELETE of a session: every connection of it on this worker. */
unsigned
eg_conn_close_session(struct eg_worker *w, struct eg_session *sess)
{
	struct eg_refusal_arg a;
	struct eg_conn *c;
	unsigned n = 0;

	while ((c = sess->wconns[w->idx]) != NULL) {
		if (!c->decided && (c->state == EG_CS_RESOLVING ||
		    c->state == EG_CS_CONNECTING)) {
			conn_rarg(c, &a);
			a.session = sess->name;
			conn_deny(c, EG_RF_SESSION_CLOSED, &a);
			(void)eg_pend_flush(c, &c->u2c, c->cio.fd);
		}
		if (c->allowed)
			n++;
		if (c->allowed || c->kept)
			eg_conn_reset_close(c, EG_END_SESSION_CLOSED);
		else
			eg_conn_close(c, EG_END_SESSION_CLOSED);
	}
	(void)eg_upool_drop(&w->upool, sess, NULL, NULL);
	return n;
}

void
eg_conn_close_all(struct eg_worker *w, enum eg_end why)
{
	struct eg_refusal_arg a;
	struct eg_conn *c;

	while ((c = w->conns) != NULL) {
		if (!c->decided && (c->state == EG_CS_RESOLVING ||
		    c->state == EG_CS_CONNECTING)) {
			conn_rarg(c, &a);
			conn_deny(c, EG_RF_SHUTDOWN, &a);
			eg_pend_flush(c, &c->u2c, c->cio.fd);
		}
		eg_conn_close(c, why);
	}
	(void)eg_upool_drop(&w->upool, NULL, NULL, NULL);
}

/* --- for route.c ------------------------------------------------------------ */

/* The arguments of a refusal naming c's target ({target}). */
void
eg_conn_refusal_arg(const struct eg_conn *c, struct eg_refusal_arg *a)
{
	conn_rarg(c, a);
}

/* Refusal rf: its audit line, then its reply and linger (conn_deny()). */
void
eg_conn_deny_rf(struct eg_conn *c, enum eg_refusal rf,
    const struct eg_refusal_arg *a)
{
	conn_deny(c, rf, a);
}

/* Its reply and linger only: the audit line is written (conn_refuse()). */
void
eg_conn_refuse_rf(struct eg_conn *c, enum eg_refusal rf,
    const struct eg_refusal_arg *a)
{
	conn_refuse(c, rf, a);
}

void
eg_conn_refuse_body(struct eg_conn *c, enum eg_refusal rf, const char *body)
{
	conn_refuse_body(c, rf, body);
}

void
eg_conn_fail(struct eg_conn *c, enum eg_reason r)
{
	conn_fail(c, r);
}

enum eg_refusal
eg_conn_budget_refused_locked(struct eg_conn *c, char *body, size_t len)
{
	return conn_budget_refused_locked(c, 1, body, len);
}

void
eg_conn_budget_lease_locked(struct eg_conn *c)
{
	conn_budget_lease_locked(c);
}

void
eg_conn_event(struct eg_conn *c, struct eg_event *ev,
    enum egress_event_type t)
{
	conn_event(c, ev, t);
}
