/*
 * worker.c: the worker threads (worker.h): each one's loop, its interest
 * in the shared listeners and accept(2), its snapshot of egressd's own
 * addresses, the commands the control calls run on every loop, and the
 * per-client connection table that conn.c consults.
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "cfg.h"
#include "conn.h"
#include "core.h"
#include "dns.h"
#include "event.h"
#include "log.h"
#include "ownaddr.h"
#include "sessref.h"
#include "worker.h"

struct eg_client {			/* per-client connection count */
	struct eg_client	*next;
	uint8_t			 key[17];	/* family byte + address */
	unsigned		 n;
};

/* --- per-client accounting ------------------------------------------------ */

static size_t
client_key(const struct sockaddr *sa, uint8_t key[17])
{
	memset(key, 0, 17);
	key[0] = (uint8_t)sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)
		    ->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)(const void *)
		    sa)->sin6_addr, 16);
	/* Unix-socket clients all count as one */
	return 17;
}

static unsigned
client_hash(const uint8_t key[17])
{
	unsigned h = 2166136261u;
	size_t i;

	for (i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return h;
}

int
eg_client_acquire(struct egress *ex, const struct sockaddr *sa, unsigned max)
{
	uint8_t key[17];
	struct eg_client *cl, **head;
	int rc = 0;

	client_key(sa, key);
	head = &ex->clients[client_hash(key) % nitems(ex->clients)];
	pthread_mutex_lock(&ex->climtx);
	for (cl = *head; cl != NULL; cl = cl->next)
		if (memcmp(cl->key, key, sizeof(key)) == 0)
			break;
	if (cl == NULL && (cl = eg_calloc(1, sizeof(*cl))) != NULL) {
		memcpy(cl->key, key, sizeof(key));
		cl->next = *head;
		*head = cl;
	}
	if (cl == NULL || cl->n >= max)
		rc = -1;
	else
		cl->n++;
	pthread_mutex_unlock(&ex->climtx);
	return rc;
}

void
eg_client_release(struct egress *ex, const struct sockaddr *sa)
{
	uint8_t key[17];
	struct eg_client *cl, **cp;

	client_key(sa, key);
	cp = &ex->clients[client_hash(key) % nitems(ex->clients)];
	pthread_mutex_lock(&ex->climtx);
	for (; (cl = *cp) != NULL; cp = &cl->next)
		if (memcmp(cl->key, key, sizeof(key)) == 0)
			break;
	if (cl != NULL && --cl->n == 0) {
		*cp = cl->next;
		eg_free(cl);
	}
	pthread_mutex_unlock(&ex->climtx);
}

void
eg_clients_free(struct egress *ex)
{
	struct eg_client *cl;
	size_t i;

	for (i = 0; i < nitems(ex->clients); i++)
		while ((cl = ex->clients[i]) != NULL) {
			ex->clients[i] = cl->next;
			eg_free(cl);
		}
}

/* --- workers ----------------------------------------------------------------- */

/*
 * Accept a few connections per wake-up, not the whole queue: each one is
 * read and decided at once, and a long burst would hold back the replies
 * and bytes of the connections already open (the listener is
 * level-triggered, so the rest come on the next turn of the loop).
 */
#define ACCEPT_BATCH	8

static void
worker_accept(void *arg, uint32_t events)
{
	struct eg_lio *lio = arg, *sl;
	struct eg_worker *w = lio->w;
	struct sockaddr_storage ss;
	socklen_t len;
	uint64_t now, last;
	size_t k;
	int fd, i;

	(void)events;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof(ss);
		fd = accept4(lio->ls->fd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/*
				 * Pause accepting instead of spinning on a
				 * level-triggered listener; log at most once a
				 * minute.  (An EPOLLEXCLUSIVE
				 * registration cannot be modified, only
				 * deleted and added again.)
				 */
				/* one clock for every worker; loops' cached
				 * times differ and must not underflow */
				now = eg_clock_ms();
				last = __atomic_load_n(&w->ex->accept_logged,
				    __ATOMIC_RELAXED);
				if ((last == 0 || now >= last + 60000) &&
				    __atomic_compare_exchange_n(
				    &w->ex->accept_logged, &last, now, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
					eg_log(w->ex, EGRESS_LOG_WARN,
					    "accept: %s; pausing new "
					    "connections", strerror(errno));
				w->paused = 1;
				for (k = 0; k < w->nlio; k++)
					eg_io_del(w->loop, &w->lio[k].io);
				for (sl = w->slio; sl != NULL; sl = sl->snext)
					eg_io_del(w->loop, &sl->io);
				eg_timer_arm(w->loop, &w->accept_pause, 200);
			}
			return;
		}
		eg_conn_accept(w, lio->ls, fd, (struct sockaddr *)&ss, len);
	}
}

static void
worker_listen(struct eg_worker *w)
{
	struct eg_lio *sl;
	size_t k;

	for (k = 0; k < w->nlio; k++)
		eg_io_set(w->loop, &w->lio[k].io, EPOLLIN | EPOLLEXCLUSIVE);
	for (sl = w->slio; sl != NULL; sl = sl->snext)
		eg_io_set(w->loop, &sl->io, EPOLLIN | EPOLLEXCLUSIVE);
}

static void
worker_resume(void *arg)
{
	struct eg_worker *w = arg;

	w->paused = 0;
	worker_listen(w);
}

/* (Re)build the worker's listener interest from ex->ls (loop thread). */
static int
worker_set_listeners(struct eg_worker *w)
{
	struct egress *ex = w->ex;
	struct eg_lio *next;
	size_t k;

	next = w->lio_next;
	w->lio_next = NULL;
	for (k = 0; k < w->nlio; k++)
		eg_io_del(w->loop, &w->lio[k].io);
	/* an event of this batch may still point into it: worker_after()
	 * frees it (reloads are serialised, so one is pending at most) */
	eg_free(w->lio_dead);
	w->lio_dead = w->lio;
	w->lio = NULL;
	w->nlio = 0;
	if (eg_stopping(ex) || ex->nls == 0) {
		eg_free(next);
		return 0;
	}
	if (next == NULL && (next = eg_calloc(ex->nls, sizeof(*next))) == NULL)
		return -1;
	w->lio = next;
	for (k = 0; k < ex->nls; k++) {
		w->lio[k].ls = &ex->ls[k];
		w->lio[k].w = w;
		eg_io_init(&w->lio[k].io, ex->ls[k].fd, worker_accept,
		    &w->lio[k]);
	}
	w->nlio = ex->nls;
	if (!w->paused)
		worker_listen(w);
	return 0;
}

/* --- own addresses (loop protection) ------------------------------------ */

/*
 * A snapshot of egressd's own addresses: the TCP listeners ls and ls2 (as
 * bound; ls2 may be NULL), the admin API's TCP listener (admin, the
 * caller's eg_admin_tcp_addr(); NULL: none), and the interface
 * addresses.  NULL when out of memory.  Without the interface
 * list (getifaddrs() failed) a wildcard listener still covers loopback;
 * the failure is logged.
 */
struct eg_ownaddr *
eg_own_build(struct egress *ex, const struct eg_lsock *ls, size_t nls,
    const struct eg_lsock *ls2, size_t nls2,
    const struct sockaddr_storage *admin)
{
	struct sockaddr_storage *tcp, *ifs;
	struct eg_ownaddr *own;
	size_t i, n = 0, nifs;

	if ((tcp = eg_calloc(nls + nls2 + 1, sizeof(*tcp))) == NULL)
		return NULL;
	for (i = 0; i < nls; i++)
		if (ls[i].kind == EG_LISTEN_TCP)
			tcp[n++] = ls[i].ss;
	for (i = 0; i < nls2; i++)
		if (ls2[i].kind == EG_LISTEN_TCP)
			tcp[n++] = ls2[i].ss;
	if (admin != NULL)
		tcp[n++] = *admin;
	if (eg_ownaddr_ifaddrs(&ifs, &nifs) == -1) {
		eg_log(ex, EGRESS_LOG_WARN, "getifaddrs: %s; loop protection "
		    "of wildcard listeners covers loopback only",
		    strerror(errno));
		ifs = NULL;
		nifs = 0;
	}
	own = eg_ownaddr_new(tcp, n, ifs, nifs);
	eg_free(tcp);
	eg_free(ifs);
	return own;
}

struct own_set {
	struct eg_worker	*w;
	struct eg_ownaddr	*own;
};

static void
own_cmd(void *arg)
{
	struct own_set *s = arg;
	struct eg_ownaddr *old = s->w->own;

	s->w->own = eg_ownaddr_ref(s->own);
	eg_ownaddr_unref(old);
}

/*
 * Run fn(arg) on w's loop thread and wait for it; here, on this thread,
 * while the loops do not run.  A loop that has ended runs nothing.
 */
static void
worker_call(struct egress *ex, struct eg_worker *w, eg_cmd_fn *fn,
    void *arg)
{
	if (eg_running(ex))
		(void)eg_loop_call(w->loop, fn, arg);
	else
		fn(arg);
}

/*
 * Publish own (taking over the caller's reference): every worker swaps
 * its snapshot on its own loop thread, between events, so a decision in
 * progress keeps the one it started with (it holds a reference).
 */
void
eg_own_publish(struct egress *ex, struct eg_ownaddr *own)
{
	struct own_set s;
	size_t i;

	for (i = 0; i < ex->nw; i++) {
		s.w = &ex->w[i];
		s.own = own;
		worker_call(ex, &ex->w[i], own_cmd, &s);
	}
	eg_ownaddr_unref(ex->own);
	ex->own = own;
}

/* Release the sessions whose listeners this loop dropped (an event of
 * the batch may still have named one of their eg_lio). */
static void
worker_sess_reap(struct eg_worker *w)
{
	struct eg_session *s;

	while ((s = w->sdead) != NULL) {
		w->sdead = s->dnext[w->idx];
		s->dnext[w->idx] = NULL;
		eg_session_unref(s);
	}
}

static void
worker_after(void *arg)
{
	struct eg_worker *w = arg;
	struct eg_lio *sl;
	size_t k;

	if (eg_stopping(w->ex) && !w->stopped) {
		w->stopped = 1;
		for (k = 0; k < w->nlio; k++)
			eg_io_del(w->loop, &w->lio[k].io);
		for (sl = w->slio; sl != NULL; sl = sl->snext)
			eg_io_del(w->loop, &sl->io);
		eg_conn_close_all(w, EG_END_SHUTDOWN);
		eg_loop_break(w->loop);
	}
	/* the lines of this round that wait go out within
	 * EG_AUDIT_BATCH_MS (or with the next line), or now if no timer
	 * can be armed */
	if (w->batch.len > 0 && !eg_timer_armed(&w->batch_flush) &&
	    eg_timer_arm(w->loop, &w->batch_flush, EG_AUDIT_BATCH_MS) == -1)
		eg_emit_flush(w->ex, &w->batch);
	eg_conn_reap(w);
	eg_dns_reap(w->dns);
	eg_free(w->lio_dead);
	w->lio_dead = NULL;
	worker_sess_reap(w);
}

static void
worker_batch_flush(void *arg)
{
	struct eg_worker *w = arg;

	eg_emit_flush(w->ex, &w->batch);
}

void *
eg_worker_main(void *arg)
{
	struct eg_worker *w = arg;

	eg_loop_run(w->loop);
	eg_emit_flush(w->ex, &w->batch);
	return NULL;
}

int
eg_workers_create(struct egress *ex, struct eg_err *errp)
{
	struct eg_err err;
	long ncpu;
	size_t i, n;

	n = ex->cfg->workers;
	if (n == 0) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		n = ncpu > 0 ? (size_t)ncpu : 1;
	}
	if ((ex->w = eg_calloc(n, sizeof(*ex->w))) == NULL)
		return eg_err_set(errp, ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		struct eg_worker *w = &ex->w[i];

		w->ex = ex;
		w->idx = (unsigned)i;
		if ((w->loop = eg_loop_new(&err)) == NULL ||
		    (w->dns = eg_dns_new(w->loop, ex->cfg->dns_servers,
		    ex->cfg->dns_timeout_ms, ex->cfg->dns_tries,
		    &err)) == NULL) {
			ex->nw = i + 1;
			return eg_err_set(errp, err.code, "%s", err.msg);
		}
		w->cfg = ex->cfg;
		eg_cfg_ref(w->cfg);
		eg_upool_init(&w->upool, w->loop);
		eg_timer_init(&w->accept_pause, worker_resume, w);
		eg_timer_init(&w->batch_flush, worker_batch_flush, w);
		eg_loop_set_after(w->loop, worker_after, w);
		if (worker_set_listeners(w) == -1) {
			ex->nw = i + 1;
			return eg_err_set(errp, ENOMEM, "out of memory");
		}
	}
	ex->nw = n;
	return 0;
}

void
eg_workers_free(struct egress *ex)
{
	size_t i;

	for (i = 0; i < ex->nw; i++) {
		struct eg_worker *w = &ex->w[i];

		if (w->loop == NULL)
			continue;
		eg_conn_close_all(w, EG_END_SHUTDOWN);
		eg_emit_flush(ex, &w->batch);
		eg_upool_free(&w->upool);
		eg_dns_free(w->dns);
		eg_conn_reap(w);
		worker_sess_reap(w);
		eg_conn_pool_drain(w);
		while (w->npipes > 0) {
			w->npipes--;
			close(w->pipes[w->npipes][0]);
			close(w->pipes[w->npipes][1]);
		}
		eg_freelist_drain(&w->bufpool, &w->nbufpool);
		eg_free(w->lio);
		eg_free(w->lio_dead);
		eg_free(w->lio_next);
		eg_ownaddr_unref(w->own);
		if (w->cfg != NULL)
			eg_cfg_unref(w->cfg);
		eg_loop_free(w->loop);
	}
	eg_free(ex->w);
}

/* --- commands on every loop: phase switch, reload ---------------------- */

/* The head of a command that closes connections on every loop in turn. */
struct each_cmd {
	struct eg_worker	*w;		/* the loop it runs on */
	unsigned		 closed;	/* what it closed there */
	eg_cmd_fn		*fn;		/* the command */
};

/*
 * On the loop: the lines waiting in its batch go first.  The line of the
 * action behind the command (PHASE, SESSION) is written after every loop
 * ran it, so the log shows what ended before the action before its line.
 */
static void
each_cmd(void *arg)
{
	struct each_cmd *e = arg;

	eg_emit_flush(e->w->ex, &e->w->batch);
	e->fn(arg);
}

/*
 * Run fn on every loop, one after the other, with arg: a struct whose
 * first member is e.  The connections closed, summed over the loops.
 */
static unsigned
workers_each(struct egress *ex, eg_cmd_fn *fn, struct each_cmd *e)
{
	unsigned n = 0;
	size_t i;

	e->fn = fn;
	for (i = 0; i < ex->nw; i++) {
		e->w = &ex->w[i];
		e->closed = 0;	/* stays 0 if that loop has ended */
		worker_call(ex, &ex->w[i], each_cmd, e);
		n += e->closed;
	}
	return n;
}

struct recheck {
	struct each_cmd		 e;		/* first */
	struct eg_session	*sess;
	enum eg_end		 why;
	int			 close;		/* on_phase_change = close */
};

static void
recheck_cmd(void *arg)
{
	struct recheck *r = arg;

	/* idle pooled upstreams never outlive their host's permission,
	 * whatever on_phase_change says about open tunnels */
	(void)eg_forward_pool_recheck(r->e.w, r->sess);
	if (r->close)
		r->e.closed = eg_conn_recheck(r->e.w, r->sess, r->why);
}

/* On every loop: close what the session's new phase forbids. */
unsigned
eg_workers_close_forbidden(struct egress *ex, struct eg_session *sess,
    enum eg_end why)
{
	struct recheck r;

	r.sess = sess;
	r.why = why;
	r.close = ex->cfg->close_on_phase_change;
	return workers_each(ex, recheck_cmd, &r.e);
}

static void
relisten_cmd(void *arg)
{
	(void)worker_set_listeners(arg);	/* prepared: cannot fail */
}

/* The new snapshot for new connections, and its DNS servers.  Reads
 * ex->cfg without the lock: the reloading thread, which waits for this,
 * is the only writer. */
static void
cfg_cmd(void *arg)
{
	struct eg_worker *w = arg;
	struct eg_err err;

	if (w->cfg != w->ex->cfg) {
		eg_cfg_ref(w->ex->cfg);
		eg_cfg_unref(w->cfg);
		w->cfg = w->ex->cfg;
	}
	if (eg_dns_configure(&w->dns, w->ex->cfg->dns_servers,
	    w->ex->cfg->dns_timeout_ms, w->ex->cfg->dns_tries, &err) == -1)
		eg_log(w->ex, EGRESS_LOG_WARN, "%s", err.msg);
}

int
eg_workers_prepare(struct egress *ex, size_t n)
{
	size_t i;

	for (i = 0; i < ex->nw && n > 0; i++) {
		if ((ex->w[i].lio_next = eg_calloc(n,
		    sizeof(*ex->w[i].lio_next))) == NULL) {
			eg_workers_unprepare(ex);
			return -1;
		}
	}
	return 0;
}

void
eg_workers_unprepare(struct egress *ex)
{
	size_t i;

	for (i = 0; i < ex->nw; i++) {
		eg_free(ex->w[i].lio_next);
		ex->w[i].lio_next = NULL;
	}
}

/* After a reload's swap: every worker takes the new listeners, snapshot
 * and DNS servers. */
void
eg_workers_reconfigure(struct egress *ex)
{
	size_t i;

	for (i = 0; i < ex->nw; i++) {
		worker_call(ex, &ex->w[i], relisten_cmd, &ex->w[i]);
		worker_call(ex, &ex->w[i], cfg_cmd, &ex->w[i]);
	}
}

/* --- sessions' listeners ------------------------------------------------- */

struct sess_cmd {
	struct each_cmd		 e;		/* first */
	struct eg_session	*s;
	int			 on;
};

static void
sess_cmd(void *arg)
{
	struct sess_cmd *c = arg;
	struct eg_worker *w = c->e.w;
	struct eg_session *s = c->s;
	struct eg_lio *lio, **lp;
	size_t k;

	for (k = 0; k < s->nls; k++) {
		lio = &s->lio[w->idx * s->nls + k];
		if (c->on) {
			lio->ls = &s->ls[k];
			lio->w = w;
			eg_io_init(&lio->io, s->ls[k].fd, worker_accept, lio);
			lio->snext = w->slio;
			w->slio = lio;
			if (!w->paused && !w->stopped)
				eg_io_set(w->loop, &lio->io,
				    EPOLLIN | EPOLLEXCLUSIVE);
			continue;
		}
		eg_io_del(w->loop, &lio->io);
		for (lp = &w->slio; *lp != NULL; lp = &(*lp)->snext)
			if (*lp == lio) {
				*lp = lio->snext;
				break;
			}
		lio->snext = NULL;
	}
	if (c->on)
		return;
	c->e.closed = eg_conn_close_session(w, s);
	/* keep s (and its lio) until this batch is over */
	eg_session_ref(s);
	s->dnext[w->idx] = w->sdead;
	w->sdead = s;
}

unsigned
eg_workers_session(struct egress *ex, struct eg_session *s, int on)
{
	struct sess_cmd c;

	c.s = s;
	c.on = on;
	return workers_each(ex, sess_cmd, &c.e);
}
