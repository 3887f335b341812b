/*
 * route.c: the request path of credential routes (SPEC "Routes").  An
 * origin-form request "METHOD /NAME/REST" on any proxy listener is for
 * route NAME: decided in the client's session and phase, the upstream
 * resolved and dialled like any target (conn.c), TLS verified (tls.c),
 * the request sent with the route's headers added and the client's
 * credentials stripped, and the response passed back as it arrives, its
 * token usage read on the way (meter.c).  All of it non-blocking in the
 * connection's state machine: state EG_CS_ROUTE, handled by
 * eg_route_do().
 *
 * The upstream connection outlives the request: it is kept on the client
 * connection (c->uio, c->tls, c->uroute) and used again by the client's
 * next request for the same route of the same snapshot; a request for
 * anything else, or a kept connection the upstream closed meanwhile,
 * gets a new one.  While kept on the client connection it stays in epoll
 * (no epoll_ctl per request): an event on it between requests means the
 * upstream spoke unasked or hung up, and it is closed then; before reuse
 * a peek says whether the upstream hung up meanwhile, unless epoll has
 * said so already (up_kept_alive()).  In the worker's pool it is out of
 * epoll and only the peek says.
 *
 * Refusals go through conn.c's refusal function, like a CONNECT's.
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include "alloc.h"
#include "cfg.h"
#include "conn-int.h"
#include "conn.h"
#include "core.h"
#include "event.h"
#include "log.h"
#include "loop.h"
#include "meter.h"
#include "metrics.h"
#include "policy.h"
#include "reqparse.h"
#include "route.h"
#include "tls.h"
#include "worker.h"

#define TLS_WRITE_MAX	16384		/* one record's worth per write */

struct eg_rt {
	const struct eg_route	*route;		/* in c->cfg; NULL: none */
	char			 name[EG_ROUTE_NAME_MAX * 4 + 1];	/* escaped */
	char			*path;		/* /REST, NUL-terminated */
	size_t			 rest_off, rest_len;	/* in h->buf, query too */
	int			 handshaking;
	int			 want;		/* EG_TLS_WANT_*, 0 */
	size_t			 wlen;		/* a TLS write to repeat */
	int			 started;	/* ALLOW written, request out */
	int			 sent_resp;	/* response bytes went out */
	uint64_t		 t_us;		/* eg_clock_us() at ALLOW */
	struct eg_body		 req;		/* the request body */
	/* the response */
	int			 resp_head_done, resp_done;
	int			 is_head, keepalive, up_keepalive;
	struct eg_rframe	 resp_fr;
	struct eg_resp		 resp;
	int			 status;
	struct eg_meter		 meter;
	size_t			 rcap, rlen;
	uint8_t			 rbuf[];	/* the response head */
};

/* --- the kept upstream, the worker's pool ---------------------------------- */

/*
 * Idle upstream connections of routes, per worker (w->routepool): parked when
 * the client connection that held one ends or moves to another route,
 * taken by the next request of the same route of the same snapshot on
 * this worker.  At most UPOOL_ROUTE per route and UPOOL_MAX in all (the
 * oldest goes); each is closed once idle for its snapshot's idle_timeout
 * (one timer per worker).  Out of epoll while parked: a peek on taking
 * says whether the upstream hung up meanwhile.
 */
/* 32 per route: a burst of 32 concurrent clients (an agent's parallel
 * calls) finds its upstream connections again, no handshake each */
#define UPOOL_ROUTE	32
#define UPOOL_MAX	64

/*
 * A request's state (struct eg_rt with its response head buffer,
 * max_header_bytes) is kept for the worker's next request when it ends:
 * zeroing it per request was a fifth of egressd's own instructions per
 * small route request, and freeing a burst of them made the allocator
 * madvise(2).  As many as the pool keeps upstream connections of a route
 * (one per concurrent client).
 */
#ifdef __SANITIZE_ADDRESS__
#define RT_SPARE	0		/* ASan sees every use after free */
#else
#define RT_SPARE	UPOOL_ROUTE
#endif

struct upent {
	struct upent		*next;		/* newest first */
	int			 fd;
	struct eg_tls		*tls;
	const struct eg_route	*route;
	struct eg_cfg		*cfg;		/* a reference */
	uint64_t		 since;		/* loop ms, parked */
	char			 addr[sizeof(((struct eg_target *)0)->addr)];
};

static void	routepool_tick(void *);

struct routepool {
	struct eg_worker	*w;
	struct upent		*head;
	unsigned		 n;
	struct eg_timer		 tmo;
	struct eg_rt		*spare[RT_SPARE + 1];	/* ended requests'
							   (+1: never 0) */
	unsigned		 nspare;
};

static struct routepool *
routepool_get(struct eg_worker *w)
{
	struct routepool *up = w->routepool;

	if (up == NULL) {
		if ((up = eg_calloc(1, sizeof(*up))) == NULL)
			return NULL;
		up->w = w;
		eg_timer_init(&up->tmo, routepool_tick, up);
		w->routepool = up;
	}
	return up;
}

/* A request's state, zeroed but for the head buffer (rcap bytes). */
static struct eg_rt *
rt_new(struct eg_worker *w, size_t rcap)
{
	struct routepool *up = routepool_get(w);
	struct eg_rt *rt;

	if (up != NULL && up->nspare > 0 &&
	    up->spare[up->nspare - 1]->rcap == rcap)
		rt = up->spare[--up->nspare];
	else if ((rt = eg_malloc(sizeof(*rt) + rcap)) == NULL)
		return NULL;
	/* all but resp.hdr[] (3 KiB), which eg_resp_parse() writes up to
	 * resp.nhdr */
	memset(rt, 0, offsetof(struct eg_rt, resp.hdr));
	memset(&rt->resp.hdr[EG_MAX_HEADERS], 0, sizeof(*rt) -
	    offsetof(struct eg_rt, resp.hdr[EG_MAX_HEADERS]));
	rt->rcap = rcap;
	return rt;
}

/* The request is over: its state is kept for the next one, or freed. */
static void
rt_free(struct eg_worker *w, struct eg_rt *rt)
{
	struct routepool *up = w->routepool;

	if (rt == NULL)
		return;
	eg_free(rt->path);
	rt->path = NULL;
	if (up == NULL || up->nspare + 1 > RT_SPARE) {	/* (0 under ASan) */
		eg_free(rt);
		return;
	}
	up->spare[up->nspare++] = rt;
}

static void
upent_free(struct upent *e)
{
	eg_tls_free(e->tls);
	close(e->fd);
	eg_cfg_unref(e->cfg);
	eg_free(e);
}

static void	routepool_arm(struct routepool *);

static void
routepool_tick(void *arg)
{
	struct routepool *up = arg;
	struct upent **pp, *e;
	uint64_t now = eg_loop_now(up->w->loop);

	for (pp = &up->head; (e = *pp) != NULL;) {
		if (now - e->since >= e->cfg->idle_timeout_ms) {
			*pp = e->next;
			upent_free(e);
			up->n--;
		} else
			pp = &e->next;
	}
	routepool_arm(up);
}

/* The timer, for the entry that expires first. */
static void
routepool_arm(struct routepool *up)
{
	uint64_t now = eg_loop_now(up->w->loop), left = UINT64_MAX, el;
	struct upent *e;

	for (e = up->head; e != NULL; e = e->next) {
		el = now - e->since;
		el = el < e->cfg->idle_timeout_ms ?
		    e->cfg->idle_timeout_ms - el : 0;
		if (el < left)
			left = el;
	}
	if (left == UINT64_MAX)
		eg_timer_stop(up->w->loop, &up->tmo);
	else
		(void)eg_timer_arm(up->w->loop, &up->tmo, left);
}

void
eg_route_pool_drain(struct eg_worker *w)
{
	struct routepool *up = w->routepool;
	struct upent *e;

	if (up == NULL)
		return;
	eg_timer_stop(w->loop, &up->tmo);
	while ((e = up->head) != NULL) {
		up->head = e->next;
		upent_free(e);
	}
	while (up->nspare > 0)
		eg_free(up->spare[--up->nspare]);
	eg_free(up);
	w->routepool = NULL;
}

/* Park c's kept upstream (it must be idle: no request on it). */
static void
up_park(struct eg_conn *c)
{
	struct eg_worker *w = c->w;
	struct routepool *up = w->routepool;
	struct upent *e, **pp, **oldest = NULL;
	unsigned same = 0;

	if ((up = routepool_get(w)) == NULL)
		return;
	if ((e = eg_calloc(1, sizeof(*e))) == NULL)
		return;
	/* full: the oldest of the route, else the oldest of all, goes */
	for (pp = &up->head; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->route == c->uroute && ++same >= UPOOL_ROUTE)
			oldest = pp;
	if (oldest == NULL && up->n >= UPOOL_MAX)
		for (pp = &up->head; *pp != NULL; pp = &(*pp)->next)
			oldest = pp;
	if (oldest != NULL) {
		struct upent *o = *oldest;

		*oldest = o->next;
		upent_free(o);
		up->n--;
	}
	eg_io_del(w->loop, &c->uio);
	e->fd = c->uio.fd;
	e->tls = c->tls;
	e->route = c->uroute;
	e->cfg = c->ucfg;
	e->since = eg_loop_now(w->loop);
	snprintf(e->addr, sizeof(e->addr), "%s", c->t.addr);
	c->uio.fd = -1;
	c->tls = NULL;
	c->uroute = NULL;
	c->ucfg = NULL;
	e->next = up->head;
	up->head = e;
	up->n++;
	routepool_arm(up);
}

/* Take an idle upstream of route r (snapshot cfg) into c; 1 if one was. */
static int
up_take(struct eg_conn *c, const struct eg_route *r, struct eg_cfg *cfg)
{
	struct routepool *up = c->w->routepool;
	struct upent **pp, *e;
	uint8_t b;
	ssize_t n;

	if (up == NULL)
		return 0;
	for (pp = &up->head; (e = *pp) != NULL;) {
		if (e->route != r || e->cfg != cfg) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		up->n--;
		n = recv(e->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (!(n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) ||
		    (e->tls != NULL && eg_tls_buffered(e->tls))) {
			upent_free(e);		/* it hung up meanwhile */
			continue;
		}
		eg_io_set_fd(&c->uio, e->fd);
		c->tls = e->tls;
		c->uroute = e->route;
		c->ucfg = e->cfg;	/* the reference moves */
		snprintf(c->t.addr, sizeof(c->t.addr), "%s", e->addr);
		eg_free(e);
		routepool_arm(up);
		return 1;
	}
	return 0;
}

static int	up_alive(struct eg_conn *);

/* Can c's kept upstream go to the pool: a route's, and still there? */
static int
up_parkable(struct eg_conn *c)
{
	if (c->uroute == NULL || c->ucfg == NULL ||
	    (c->uroute->https && c->tls == NULL))
		return 0;
	return up_alive(c);
}

void
eg_route_release(struct eg_conn *c)
{
	/* only between requests: a request in flight owns the connection */
	if ((c->state == EG_CS_HEAD || c->state == EG_CS_LINGER ||
	    c->state == EG_CS_REPLYING) && c->rt == NULL && up_parkable(c))
		up_park(c);
}

static void
up_close(struct eg_conn *c)
{
	eg_tls_free(c->tls);
	c->tls = NULL;
	if (c->uio.fd != -1) {
		eg_io_del(c->w->loop, &c->uio);
		close(c->uio.fd);
		c->uio.fd = -1;
	}
	c->uroute = NULL;
	eg_cfg_unref(c->ucfg);
	c->ucfg = NULL;
}

/* Is the kept upstream still there (no EOF, no error, nothing unasked)? */
static int
up_alive(struct eg_conn *c)
{
	uint8_t b;
	ssize_t n;

	if (c->uio.fd == -1)
		return 0;
	if (c->tls != NULL && eg_tls_buffered(c->tls))
		return 0;	/* bytes the upstream sent unasked */
	n = recv(c->uio.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/*
 * up_alive() for the kept upstream of a request about to start, without
 * its peek where epoll already answered: in epoll with its read interest
 * since before this round and not reported in it, the upstream had not
 * spoken or hung up when the round began (an event of an earlier round
 * was handled by eg_route_idle_event()).  What it does after that is the
 * same race as after a peek.  This is a system call less per request.
 */
static int
up_kept_alive(struct eg_conn *c)
{
	if (eg_io_quiet(c->w->loop, &c->uio, EPOLLIN | EPOLLRDHUP) &&
	    (c->tls == NULL || !eg_tls_buffered(c->tls)))
		return 1;	/* (in epoll: it has its socket) */
	return up_alive(c);
}

void
eg_route_free(struct eg_conn *c)
{
	rt_free(c->w, c->rt);
	c->rt = NULL;
	eg_tls_free(c->tls);
	c->tls = NULL;
	c->uroute = NULL;
	eg_cfg_unref(c->ucfg);
	c->ucfg = NULL;
}

int
eg_route_handshaking(const struct eg_conn *c)
{
	return c->rt != NULL && c->rt->handshaking;
}

void
eg_route_event(const struct eg_conn *c, struct eg_event *ev)
{
	const struct eg_rt *rt = c->rt;

	if (rt == NULL)
		return;
	ev->route = rt->route != NULL ? rt->route->name : rt->name;
	ev->path = rt->path;
	ev->status = rt->status;
	ev->tokens_in = ev->tokens_out = ev->tokens_cached = -1;
	if (rt->route == NULL)
		return;
	if (ev->type == EGRESS_EV_ALLOW) {
		ev->cred = rt->route->nhdr > 0 ? rt->route->cred : NULL;
		ev->rule = rt->route->rule;
	}
	if (ev->type == EGRESS_EV_CLOSE) {
		ev->tokens_in = rt->meter.in;
		ev->tokens_out = rt->meter.out;
		ev->tokens_cached = rt->meter.cached;
	}
}

/* --- upstream I/O: TLS or plain ------------------------------------------------ */

/* >0 bytes, 0 EOF, -2 would block (rt->want says on what), -1 error. */
static ssize_t
up_recv(struct eg_conn *c, void *buf, size_t n)
{
	ssize_t r;

	c->rt->want = 0;
	if (c->tls != NULL) {
		r = eg_tls_read(c->tls, buf, n);
		if (r == EG_TLS_WANT_READ || r == EG_TLS_WANT_WRITE) {
			c->rt->want = (int)r;
			return -2;
		}
		return r;
	}
	do
		r = recv(c->uio.fd, buf, n, 0);
	while (r == -1 && errno == EINTR);
	if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -2;
	return r;
}

/* Write c2u's bytes upstream: EG_IO_OK (all out), AGAIN, ERR. */
static enum eg_io_st
up_flush(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	struct eg_buf *b = &c->c2u.b;
	ssize_t n;
	size_t len;

	if (c->tls == NULL)
		return eg_pend_flush(c, &c->c2u, c->uio.fd);
	if (eg_buf_failed(b))
		return EG_IO_ERR;
	rt->want = 0;
	while (eg_buf_len(b) > 0) {
		len = eg_buf_len(b);
		if (len > TLS_WRITE_MAX)
			len = TLS_WRITE_MAX;
		if (rt->wlen != 0)	/* the library wants the same call */
			len = rt->wlen;
		n = eg_tls_write(c->tls, eg_buf_data(b), len);
		if (n == EG_TLS_WANT_READ || n == EG_TLS_WANT_WRITE) {
			rt->wlen = len;
			rt->want = (int)n;
			return EG_IO_AGAIN;
		}
		rt->wlen = 0;
		if (n < 0)
			return EG_IO_ERR;
		eg_buf_consume(b, (size_t)n);
	}
	eg_pend_release(c, &c->c2u);
	return EG_IO_OK;
}

/* --- decision ---------------------------------------------------------------- */

static void
esc_name(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 5 < cap; i++) {
		if (p[i] > 0x20 && p[i] < 0x7f && p[i] != '\\')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x",
			    p[i]);
	}
	out[o] = '\0';
}

static void	route_start(struct eg_conn *);

void
eg_route_split(const uint8_t *tg, size_t len, size_t *nl, size_t *pl)
{
	size_t n, p;

	for (n = 1; n < len && tg[n] != '/' && tg[n] != '?'; n++)
		;
	n--;			/* the name is tg[1..1+n) */
	for (p = 0; 1 + n + p < len && tg[1 + n + p] != '?'; p++)
		;
	*nl = n;
	*pl = p;
}

int
eg_route_head(struct eg_conn *c)
{
	struct head *h = c->h;
	struct eg_req *q = &h->req;
	const uint8_t *tg = h->buf + q->path_off, *e;
	const struct eg_phase *ph;
	const struct eg_route *r;
	struct eg_cfg *cfg;
	struct eg_rt *rt;
	const char *why = NULL;
	struct eg_refusal_arg ra;
	char qp[200];
	size_t nl, pl, i;
	int verdict = 0;

	if (q->form != EG_REQ_ORIGIN) {
		/* anything else takes c->uio: the kept upstream goes to
		 * the pool */
		if (up_parkable(c))
			up_park(c);
		else if (c->uroute != NULL || c->tls != NULL)
			up_close(c);
		return 0;
	}
	e = tg + q->path_len;
	eg_route_split(tg, (size_t)(e - tg), &nl, &pl);
	rt = rt_new(c->w, c->cfg->max_header_bytes);
	if (rt == NULL) {
		eg_conn_close(c, EG_END_ERROR);
		return 1;
	}
	rt_free(c->w, c->rt);
	c->rt = rt;
	esc_name(tg + 1, nl > EG_ROUTE_NAME_MAX ? EG_ROUTE_NAME_MAX + 1 : nl,
	    rt->name, sizeof(rt->name));
	rt->rest_off = q->path_off + 1 + nl;
	rt->rest_len = q->path_len - 1 - nl;
	/* the path for the log and the match: "/" when REST is empty */
	if ((rt->path = eg_malloc(pl + 2)) == NULL) {
		eg_conn_close(c, EG_END_ERROR);
		return 1;
	}
	if (pl == 0)
		memcpy(rt->path, "/", 2);
	else {
		memcpy(rt->path, tg + 1 + nl, pl);
		rt->path[pl] = '\0';
	}
	/* the snapshot and the phase, as conn_match() takes them */
	pthread_rwlock_rdlock(&c->ex->lock);
	cfg = c->ex->cfg;
	if (c->cfg != cfg) {
		eg_cfg_ref(cfg);
		eg_cfg_unref(c->cfg);
		c->cfg = cfg;
	}
	ph = c->sess->phase;
	c->t.gen = c->sess->gen;
	c->t.phase = ph;
	c->t.rule = NULL;
	c->t.report = 0;
	r = eg_session_name_ok((const char *)tg + 1, nl) ?
	    eg_cfg_route(cfg, (const char *)tg + 1, nl) : NULL;
	rt->route = r;
	c->t.host.len = 0;
	c->t.port = 0;
	if (r != NULL) {
		c->t.host = r->host;
		c->t.port = r->port;
		if ((why = eg_route_path_bad(rt->path, strlen(rt->path))) !=
		    NULL || (pl > 0 && tg[1 + nl] != '/'))
			verdict = 400;
		else if (!eg_phase_allows_route(ph, r->name))
			verdict = 403;
		else if (!eg_route_allows(r, q->method, rt->path,
		    strlen(rt->path)))
			verdict = -403;
		else if (q->content_length > 0 &&
		    (uint64_t)q->content_length > r->max_request_bytes)
			verdict = 413;
		else if (q->chunked && h->len > q->head_len) {
			/* a chunked body: what came with the head counts */
			struct eg_chunk ck;
			ssize_t k;
			int dn = 0;

			eg_chunk_init(&ck);
			k = eg_chunk_feed(&ck, h->buf + q->head_len,
			    h->len - q->head_len, &dn);
			if (k > 0 && (uint64_t)k > r->max_request_bytes)
				verdict = 413;
		}
	} else
		verdict = 404;
	pthread_rwlock_unlock(&c->ex->lock);
	/* the log's path and the bodies: client bytes, escaped */
	for (i = 0; rt->path[i] != '\0'; i++)
		if ((unsigned char)rt->path[i] <= 0x20 ||
		    (unsigned char)rt->path[i] >= 0x7f)
			rt->path[i] = '?';
	c->kept = 0;
	eg_conn_refusal_arg(c, &ra);
	ra.route = r != NULL ? r->name : rt->name;
	ra.phase = ph != NULL ? ph->name : NULL;
	ra.method = q->method;
	ra.path = qp;
	ra.why = why;
	ra.num = r != NULL ? r->max_request_bytes : 0;
	switch (verdict) {
	case 404:
		ra.route = rt->name;
		eg_conn_deny_rf(c, EG_RF_NO_ROUTE, &ra);
		return 1;
	case 400:
		eg_conn_deny_rf(c, why != NULL ? EG_RF_ROUTE_BAD :
		    EG_RF_ROUTE_NO_SLASH, &ra);
		return 1;
	case 403:
		eg_conn_deny_rf(c, EG_RF_ROUTE_PHASE, &ra);
		return 1;
	case -403:
		esc_name((const uint8_t *)rt->path, strlen(rt->path), qp,
		    sizeof(qp));
		eg_conn_deny_rf(c, EG_RF_ROUTE_NOT_ALLOWED, &ra);
		return 1;
	case 413:
		eg_conn_deny_rf(c, EG_RF_ROUTE_BODY, &ra);
		return 1;
	default:
		break;
	}
	/* the kept upstream, if it is this route's and still there */
	if (c->uroute == r && c->ucfg == cfg && up_kept_alive(c)) {
		route_start(c);
		return 1;
	}
	if (up_parkable(c))
		up_park(c);
	else if (c->uroute != NULL || c->tls != NULL || c->uio.fd != -1)
		up_close(c);
	/* an idle one of this worker's pool */
	if (up_take(c, r, cfg)) {
		route_start(c);
		return 1;
	}
	eg_conn_resolve(c);
	return 1;
}

/* --- connected: TLS, ALLOW, the request -------------------------------------- */

void
eg_route_connected(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	char err[256];

	eg_cfg_ref(c->cfg);
	eg_cfg_unref(c->ucfg);
	c->ucfg = c->cfg;
	c->uroute = rt->route;
	if (!rt->route->https) {
		route_start(c);
		return;
	}
	c->tls = eg_tls_new(rt->route->tls, c->uio.fd, rt->route->host.name,
	    err, sizeof(err));
	if (c->tls == NULL) {
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	rt->handshaking = 1;
	eg_conn_set_state(c, EG_CS_ROUTE);
}

/*
 * The upstream head: the request line with REST (query kept), Host, the
 * client's end-to-end headers but the credentials (x-api-key,
 * authorization), the strip list and the names the route sets, then the
 * route's header lines and Connection: keep-alive.
 */
ssize_t
eg_route_upstream_head(const struct eg_route *r, const uint8_t *buf,
    const struct eg_req *q, size_t rest_off, size_t rest_len, char *out,
    size_t cap)
{
	const struct eg_hdr *hd;
	struct eg_buf o;
	size_t i, j;
	int skip;

	eg_buf_init(&o, out, cap);
	eg_buf_str(&o, q->method);
	eg_buf_str(&o, " ");
	if (rest_len == 0 || buf[rest_off] == '?')
		eg_buf_str(&o, "/");
	eg_buf_add(&o, buf + rest_off, rest_len);
	eg_buf_str(&o, " HTTP/1.1\r\nHost: ");
	eg_buf_str(&o, r->authority);
	eg_buf_str(&o, "\r\n");
	for (i = 0; i < q->nhdr; i++) {
		hd = &q->hdr[i];
		if (eg_hdr_hop_by_hop(buf, q->hdr, q->nhdr, hd))
			continue;
#define IS(s)	(hd->name_len == strlen(s) && strncasecmp((const char *) \
		    buf + hd->name_off, (s), hd->name_len) == 0)
		if (IS("host") || IS("x-api-key") || IS("authorization"))
			continue;
		skip = 0;
		for (j = 0; j < r->nstrip && !skip; j++)
			skip = IS(r->strip[j]);
		for (j = 0; j < r->nhdr && !skip; j++)
			skip = IS(r->hdr[j].name);
#undef IS
		if (skip)
			continue;
		eg_buf_add(&o, buf + hd->name_off, hd->name_len);
		eg_buf_str(&o, ": ");
		eg_buf_add(&o, buf + hd->value_off, hd->value_len);
		eg_buf_str(&o, "\r\n");
	}
	for (j = 0; j < r->nhdr; j++) {
		eg_buf_add(&o, r->hdr[j].name, r->hdr[j].name_len);
		eg_buf_str(&o, ": ");
		eg_buf_add(&o, r->hdr[j].value, r->hdr[j].value_len);
		eg_buf_str(&o, "\r\n");
	}
	eg_buf_str(&o, "Connection: keep-alive\r\n\r\n");
	if (eg_buf_failed(&o))
		return -1;
	return (ssize_t)eg_buf_len(&o);
}

/* ALLOW (after a last look at the phase), then the request is queued. */
static void
route_start(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	struct head *h = c->h;
	struct eg_req *q = &h->req;
	struct eg_event ev;
	char *out = (char *)c->w->scratch, body[512];
	struct eg_refusal_arg ra;
	enum eg_refusal rf;
	ssize_t n;
	int ok;

	rt->handshaking = 0;
	pthread_rwlock_rdlock(&c->ex->lock);
	ok = c->t.gen == c->sess->gen ||
	    eg_phase_allows_route(c->sess->phase, rt->route->name);
	/* a spent budget: 429 (SPEC "Configuration", budgets count route
	 * requests and their bytes like any other) */
	if (ok && (rf = eg_conn_budget_refused_locked(c, body,
	    sizeof(body))) != EG_RF_COUNT) {
		pthread_rwlock_unlock(&c->ex->lock);
		up_close(c);
		eg_conn_refuse_body(c, rf, body);
		return;
	}
	if (ok) {
		eg_conn_event(c, &ev, EGRESS_EV_ALLOW);
		ev.phase = c->t.phase;
		ev.addr = c->t.addr;
		if (eg_emit(c->ex, &ev) == -1)
			ok = -1;
		else
			eg_conn_budget_lease_locked(c);
	}
	pthread_rwlock_unlock(&c->ex->lock);
	if (ok != 1) {
		up_close(c);
		eg_conn_refusal_arg(c, &ra);
		ra.route = rt->route->name;
		ra.phase = c->sess->phase->name;
		eg_conn_deny_rf(c, ok == 0 ? EG_RF_ROUTE_PHASE :
		    EG_RF_ROUTE_AUDIT_FAILED, &ra);
		return;
	}
	c->decided = 1;
	c->allowed = 1;
	c->t0 = eg_wall_ms();
	rt->t_us = eg_clock_us();
	rt->started = 1;
	rt->is_head = strcmp(q->method, "HEAD") == 0;
	rt->keepalive = !q->close;
	eg_meter_init(&rt->meter, rt->route->meter, 0);
	n = eg_route_upstream_head(rt->route, h->buf, q, rt->rest_off,
	    rt->rest_len, out, sizeof(c->w->scratch));
	if (n < 0 || eg_pend_reserve(c, &c->c2u, (size_t)n + h->len -
	    q->head_len) == -1 ||
	    eg_pend_append(c, &c->c2u, out, (size_t)n) == -1) {
		explicit_bzero(out, sizeof(c->w->scratch));
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	/* the scratch held the credential: not left there */
	explicit_bzero(out, (size_t)n);
	if (eg_body_begin(c, &rt->req) == -1) {
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	c->last = eg_loop_now(c->w->loop);
	if (c->state == EG_CS_ROUTE)
		eg_conn_set_state(c, EG_CS_ROUTE);	/* the idle timer now */
	else
		eg_conn_set_state(c, EG_CS_ROUTE);
}

/* --- the relay ------------------------------------------------------------------ */

static struct eg_io_res
route_response(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	char *out = (char *)c->w->scratch;
	size_t hl = 0, extra, room;
	struct eg_io_res res;
	enum eg_io_st st;
	ssize_t n, k;
	int done = 0, past = 0;
	uint8_t *p;

	res = eg_flush_res(eg_pend_flush(c, &c->u2c, c->cio.fd),
	    EG_END_CLIENT_CLOSED);
	if (res.st != EG_IO_OK)
		return res;
	while (!rt->resp_head_done) {
		st = eg_resp_head_get(rt->rbuf, rt->rlen, rt->rcap, &rt->resp,
		    &hl);
		if (st == EG_IO_ERR)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (st == EG_IO_AGAIN) {
			/* nothing from the upstream since the request went
			 * (epoll says when): no read that can only fail */
			if (rt->rlen == 0 && !c->u2c.rd &&
			    (c->tls == NULL || !eg_tls_buffered(c->tls)))
				return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
			n = up_recv(c, rt->rbuf + rt->rlen, rt->rcap -
			    rt->rlen);
			if (n == -2)
				return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
			if (n <= 0)
				return EG_IO_RES(n == 0 ? EG_IO_EOF :
				    EG_IO_ERR, EG_END_UPSTREAM_CLOSED);
			rt->rlen += (size_t)n;
			continue;
		}
		if (rt->resp.status < 200) {
			/* 100 Continue, 103: passed on, then the next head */
			res = eg_resp_interim(c, rt->rbuf, &rt->rlen, hl);
			if (res.st != EG_IO_OK)
				return res;
			continue;
		}
		rt->resp_head_done = 1;
		rt->status = rt->resp.status;
		rt->up_keepalive = !rt->resp.close;
		eg_rframe_init(&rt->resp_fr, &rt->resp, rt->is_head);
		if (rt->resp_fr.eof_delim) {
			rt->keepalive = 0;
			rt->up_keepalive = 0;
		}
		eg_meter_init(&rt->meter, rt->route->meter,
		    rt->resp_fr.chunked);
		k = eg_resp_head(rt->rbuf, &rt->resp, rt->keepalive, out,
		    sizeof(c->w->scratch));
		if (k < 0 || eg_pend_reserve(c, &c->u2c, (size_t)k) == -1 ||
		    eg_pend_append(c, &c->u2c, out, (size_t)k) == -1)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		rt->sent_resp = 1;
		extra = rt->rlen - hl;
		memmove(rt->rbuf, rt->rbuf + hl, extra);
		rt->rlen = extra;
	}
	/*
	 * The head and what came with it go to the client in one send: the
	 * pending bytes are flushed before the next read from the upstream
	 * (which bounds them to the head buffer and one read) and once at
	 * the end, not after every append.
	 */
	for (;;) {
		if (eg_rframe_ended(&rt->resp_fr)) {
			rt->resp_done = 1;
			break;
		}
		/*
		 * As much as the pending buffer still takes.  It is flushed
		 * first when full or, before a read from the upstream, unless
		 * more is already received (a body record after the head's:
		 * it joins the pending bytes, no send between).
		 */
		room = c->u2c.b.p == NULL ? TUNBUF : eg_buf_space(&c->u2c.b);
		if (room > TUNBUF)
			room = TUNBUF;
		if (rt->rlen > 0 ? room == 0 : c->tls == NULL || room < 1024 ||
		    !eg_tls_buffered(c->tls)) {
			st = eg_pend_flush(c, &c->u2c, c->cio.fd);
			if (st == EG_IO_ERR)
				return EG_IO_RES(EG_IO_ERR,
				    EG_END_CLIENT_CLOSED);
			if (st == EG_IO_AGAIN)
				break;
			room = TUNBUF;
		}
		if (rt->rlen > 0) {
			n = rt->rlen > room ? (ssize_t)room : (ssize_t)rt->rlen;
			memcpy(c->w->scratch, rt->rbuf, (size_t)n);
			memmove(rt->rbuf, rt->rbuf + n, rt->rlen - (size_t)n);
			rt->rlen -= (size_t)n;
		} else {
			n = up_recv(c, c->w->scratch, room);
			if (n == -2)
				break;
			if (n <= 0) {
				if (rt->resp_fr.eof_delim && n == 0) {
					rt->resp_done = 1;
					break;
				}
				return EG_IO_RES(n == 0 ? EG_IO_EOF :
				    EG_IO_ERR, EG_END_UPSTREAM_CLOSED);
			}
		}
		p = c->w->scratch;
		c->last = eg_loop_now(c->w->loop);
		/* bytes past the body are not passed on */
		if ((n = eg_rframe_feed(&rt->resp_fr, p, n, &done,
		    &past)) < 0)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (done)
			rt->resp_done = 1;
		eg_meter_feed(&rt->meter, p, (size_t)n);
		c->down += (uint64_t)n;
		if (eg_pend_append(c, &c->u2c, p, (size_t)n) == -1)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (rt->resp_done)
			break;
	}
	if (eg_pend_flush(c, &c->u2c, c->cio.fd) == EG_IO_ERR)
		return EG_IO_RES(EG_IO_ERR, EG_END_CLIENT_CLOSED);
	return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
}

/* The TLS handshake; on success ALLOW and the request. */
static enum eg_io_st
route_handshake(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	char err[300];
	struct eg_refusal_arg ra;
	int verify, r;

	r = eg_tls_handshake(c->tls, &verify, err, sizeof(err));
	if (r == EG_TLS_WANT_READ || r == EG_TLS_WANT_WRITE) {
		rt->want = r;
		return EG_IO_AGAIN;
	}
	if (r == 0) {
		eg_metrics_observe(c->ex->metrics, EG_HIST_CONNECT,
		    eg_clock_us() - c->t_start);
		route_start(c);
		return EG_IO_OK;
	}
	eg_conn_refusal_arg(c, &ra);
	ra.why = err;
	up_close(c);
	rt->handshaking = 0;
	eg_conn_deny_rf(c, verify ? EG_RF_TLS_FAILED :
	    EG_RF_TLS_CONNECT_FAILED, &ra);
	return EG_IO_OK;
}

/* The response is out: CLOSE, then the next request or the end. */
static enum eg_io_st
route_done(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	int fd;

	eg_metrics_route(c->ex->metrics, rt->route->name, rt->status,
	    eg_clock_us() - rt->t_us);
	if (!rt->up_keepalive || !rt->req.done)
		up_close(c);
	if (!rt->keepalive || !rt->req.done) {
		if (up_parkable(c))
			up_park(c);	/* the next client may use it */
		eg_conn_close(c, EG_END_DONE);
		return EG_IO_CLOSED;
	}
	/*
	 * eg_conn_reset_for_next() closes c->uio: the kept one is hidden
	 * from it.  It stays in epoll with its interest (no epoll_ctl per
	 * request): between requests an event on it means the upstream
	 * spoke unasked or hung up, and eg_route_idle_event() closes it.
	 */
	fd = c->uio.fd;
	c->uio.fd = -1;
	eg_conn_reset_for_next(c);
	if (fd != -1)
		eg_io_set_fd(&c->uio, fd);
	rt_free(c->w, rt);
	c->rt = NULL;
	if (c->state != EG_CS_HEAD)
		return EG_IO_CLOSED;
	/* a pipelined request already read is parsed now; else epoll says
	 * when the next one comes (no read that would only fail) */
	return c->h->len > 0 ? EG_IO_OK : EG_IO_AGAIN;
}

enum eg_io_st
eg_route_do(struct eg_conn *c)
{
	struct eg_rt *rt = c->rt;
	struct eg_io_res r;
	struct eg_refusal_arg ra;

	if (rt->handshaking)
		return route_handshake(c);
	/* a client gone while its answer streams: the upstream request
	 * is cancelled (its connection closed) */
	if (rt->req.done && c->c2u.hup && !eg_pend_busy(&c->c2u)) {
		up_close(c);
		eg_conn_close(c, EG_END_CLIENT_CLOSED);
		return EG_IO_CLOSED;
	}
	r = eg_body_pump(c, &rt->req, rt->route->max_request_bytes, up_flush,
	    EG_END_UPSTREAM_CLOSED);
	if (r.st == EG_IO_ERR && r.end == EG_END_NONE) {
		/* a chunked body over max_request_bytes, found only after
		 * the ALLOW (one over it before is a BLOCK): the CLOSE line
		 * will say end=error, the error log says why */
		up_close(c);
		eg_conn_why(c, "the chunked request body passed "
		    "max_request_bytes (%llu) after the ALLOW: %s",
		    (unsigned long long)rt->route->max_request_bytes,
		    rt->sent_resp ? "the answer had begun, both connections "
		    "closed" : "413, the upstream request cancelled");
		if (!rt->sent_resp) {
			eg_conn_refusal_arg(c, &ra);
			ra.route = rt->route->name;
			ra.num = rt->route->max_request_bytes;
			eg_conn_refuse_rf(c, EG_RF_ROUTE_BODY_CHUNKED, &ra);
			return EG_IO_OK;
		}
		eg_conn_close(c, EG_END_ERROR);
		return EG_IO_CLOSED;
	}
	if (r.st == EG_IO_AGAIN)
		r = route_response(c);
	if (r.st != EG_IO_AGAIN) {
		up_close(c);
		if (!rt->sent_resp && r.end == EG_END_UPSTREAM_CLOSED &&
		    c->cio.fd != -1) {
			/* nothing answered yet: say so */
			eg_conn_refusal_arg(c, &ra);
			eg_conn_refuse_rf(c, EG_RF_UPSTREAM_CLOSED, &ra);
			return EG_IO_OK;
		}
		eg_conn_close_upstream(c, r.end, rt->sent_resp &&
		    !rt->resp_done);
		return EG_IO_CLOSED;
	}
	/* a byte budget crossed mid-request: reset (end=budget) */
	if (EG_BUDGET_DUE(c) && eg_conn_budget_check(c) == -1)
		return EG_IO_CLOSED;
	if (!rt->resp_done || eg_pend_busy(&c->u2c))
		return EG_IO_AGAIN;
	return route_done(c);
}

uint32_t
eg_route_idle_interest(const struct eg_conn *c)
{
	return c->uroute != NULL && c->uio.fd != -1 ?
	    EPOLLIN | EPOLLRDHUP : 0;
}

void
eg_route_idle_event(struct eg_conn *c)
{
	/* a stale event of the last answer's (read meanwhile) is not one */
	if (c->uroute != NULL && c->uio.fd != -1 && !up_alive(c)) {
		up_close(c);
		c->u2c.rd = c->u2c.hup = 0;	/* not the next one's */
	}
}

void
eg_route_interest(struct eg_conn *c, uint32_t *ce, uint32_t *ue)
{
	struct eg_rt *rt = c->rt;

	*ce = *ue = 0;
	if (rt == NULL)
		return;
	if (rt->handshaking) {
		*ue = rt->want == EG_TLS_WANT_WRITE ? EPOLLOUT : EPOLLIN;
		return;
	}
	if (eg_pend_busy(&c->u2c))
		*ce |= EPOLLOUT;
	else if (!rt->resp_done && c->uio.fd != -1)
		*ue |= EPOLLIN | EPOLLRDHUP;
	if (eg_pend_busy(&c->c2u))
		*ue |= rt->want == EG_TLS_WANT_READ ? EPOLLIN : EPOLLOUT;
	else if (!c->c_eof && !rt->req.done)
		*ce |= EPOLLIN | EPOLLRDHUP;
	else if (!c->c_eof && !c->c2u.hup)
		/*
		 * a client that goes away.  Its EPOLLIN stays as it was in
		 * state HEAD (no epoll_ctl per request) until the client
		 * sends while its answer is pending: then it is muted, the
		 * bytes (a pipelined request) left unread until then.
		 */
		*ce |= c->c2u.rd ? EPOLLRDHUP : EPOLLIN | EPOLLRDHUP;
	if (rt->want == EG_TLS_WANT_WRITE && c->uio.fd != -1)
		*ue |= EPOLLOUT;
}
