/*
 * forward.c: plain-HTTP forwarding (absolute-form requests, plain_http = on):
 * the request is rewritten to origin form and relayed with its body, the
 * response head is rewritten and its body relayed as its framing says.  The
 * FORWARD state's handler, called by conn_step() in conn.c.
 */
#include "egress-int.h"

#include <sys/socket.h>

#include "alloc.h"
#include "cfg.h"
#include "conn-int.h"
#include "conn.h"
#include "core.h"
#include "event.h"
#include "log.h"
#include "loop.h"
#include "policy.h"
#include "reqparse.h"
#include "upool.h"
#include "worker.h"

/* --- plain HTTP ------------------------------------------------------------ */

/* RFC 9110 9.2.2: a request that may be sent twice. */
static int
fwd_idempotent(const char *m)
{
	static const char *const idem[] = {
		"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"
	};
	size_t i;

	for (i = 0; i < nitems(idem); i++)
		if (strcmp(m, idem[i]) == 0)
			return 1;
	return 0;
}

void
eg_forward_begin(struct eg_conn *c)
{
	struct head *h = c->h;
	struct eg_req *q = &h->req;
	struct fwd *f;
	char *out = (char *)c->w->scratch;
	ssize_t n;
	size_t extra, retry;

	/*
	 * The upstream is asked to keep the connection (the worker's pool
	 * takes it back after a cleanly delimited response), whatever the
	 * client said about its own.
	 */
	n = eg_req_origin_head(h->buf, q, 1, out, sizeof(c->w->scratch));
	/* a pooled upstream may have closed just as it was taken: a request
	 * that can be sent again as it is (idempotent, no body) keeps its
	 * head for one retry on a fresh connection */
	retry = c->reused && n > 0 && !q->chunked && q->content_length <= 0 &&
	    fwd_idempotent(q->method) ? (size_t)n : 0;
	f = eg_calloc(1, sizeof(*f) + c->cfg->max_header_bytes + retry);
	if (f == NULL) {
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	c->f = f;
	f->rcap = c->cfg->max_header_bytes;
	f->retry_len = retry;
	memcpy(f->rbuf + f->rcap, out, retry);
	f->is_head = strcmp(q->method, "HEAD") == 0;
	f->keepalive = !q->close;
	/* body bytes already read with the head; with the rewritten head
	 * they may exceed TUNBUF (at most max_header_bytes + the rewrite) */
	extra = h->len - q->head_len;
	if (n < 0 || eg_pend_reserve(c, &c->c2u, (size_t)n + extra) == -1 ||
	    eg_pend_append(c, &c->c2u, out, (size_t)n) == -1) {
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	if (eg_body_begin(c, &f->req) == -1) {
		eg_conn_close(c, EG_END_ERROR);
		return;
	}
	eg_conn_set_state(c, EG_CS_FORWARD);
}

struct eg_io_res
eg_flush_res(enum eg_io_st st, enum eg_end end)
{
	return EG_IO_RES(st, st == EG_IO_ERR ? end : EG_END_NONE);
}

int
eg_body_begin(struct eg_conn *c, struct eg_body *b)
{
	struct head *h = c->h;
	const struct eg_req *q = &h->req;
	size_t extra = h->len - q->head_len;
	int64_t nb = 0;
	ssize_t k;

	memset(b, 0, sizeof(*b));
	if (q->chunked) {
		b->chunked = 1;
		eg_chunk_init(&b->chunk);
		b->left = -1;
	} else
		b->left = q->content_length > 0 ? q->content_length : 0;
	if (extra > 0 && (b->chunked || b->left > 0)) {
		if (b->chunked) {
			k = eg_chunk_feed(&b->chunk, h->buf + q->head_len,
			    extra, &b->done);
			if (k < 0)
				return -1;
			nb = k;
		} else {
			nb = (int64_t)extra < b->left ? (int64_t)extra :
			    b->left;
			b->left -= nb;
		}
		if (eg_pend_append(c, &c->c2u, h->buf + q->head_len,
		    (size_t)nb) == -1)
			return -1;
		c->up += (uint64_t)nb;
		b->bytes += (uint64_t)nb;
	}
	if (!b->chunked && b->left == 0)
		b->done = 1;
	/* keep what follows (a pipelined request) at the buffer start */
	memmove(h->buf, h->buf + q->head_len + nb, extra - (size_t)nb);
	h->len = extra - (size_t)nb;
	h->scan = 0;
	return 0;
}

/* Relay the request body: bounded by Content-Length or chunk framing. */
struct eg_io_res
eg_body_pump(struct eg_conn *c, struct eg_body *b, uint64_t limit,
    enum eg_io_st (*flush)(struct eg_conn *), enum eg_end flush_end)
{
	uint8_t *s = c->w->scratch;
	struct eg_io_res r;
	enum eg_io_st st;
	ssize_t n, k;
	int done = 0;

	r = eg_flush_res(flush(c), flush_end);
	if (r.st != EG_IO_OK)
		return r;
	while (!b->done) {
		size_t want = TUNBUF;

		if (!b->chunked && (uint64_t)b->left < want)
			want = (size_t)b->left;
		/* what follows the last chunk is the next request's head,
		 * kept in c->h: never read more than it holds */
		if (b->chunked && c->h->cap < want)
			want = c->h->cap;
		n = recv(c->cio.fd, s, want, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
		if (n <= 0) {
			c->c_eof = 1;
			return EG_IO_RES(n == 0 ? EG_IO_EOF : EG_IO_ERR,
			    EG_END_CLIENT_CLOSED);
		}
		c->last = eg_loop_now(c->w->loop);
		if (b->chunked) {
			k = eg_chunk_feed(&b->chunk, s, (size_t)n, &done);
			if (k < 0)
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
			/* bytes past the body: the next request's head */
			if (k < n) {
				memcpy(c->h->buf, s + k, (size_t)(n - k));
				c->h->len = (size_t)(n - k);
			}
			n = k;
			b->done = done;
		} else {
			b->left -= n;
			if (b->left == 0)
				b->done = 1;
		}
		b->bytes += (uint64_t)n;
		/* a chunked body grew past the limit: the caller abandons
		 * the upstream request (never completed) */
		if (b->bytes > limit)
			return EG_IO_RES(EG_IO_ERR, EG_END_NONE);
		c->up += (uint64_t)n;
		if (eg_pend_append(c, &c->c2u, s, (size_t)n) == -1 ||
		    (st = flush(c)) == EG_IO_ERR)
			return EG_IO_RES(EG_IO_ERR, flush_end);
		if (st == EG_IO_AGAIN)
			return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
	}
	return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
}

enum eg_io_st
eg_resp_head_get(const uint8_t *buf, size_t len, size_t cap,
    struct eg_resp *r, size_t *hl)
{
	const char *why;
	size_t scan = 0;
	enum eg_parse p;

	if (len > 0) {
		if ((p = eg_head_scan(buf, len, &scan, hl)) == EG_PARSE_BAD)
			return EG_IO_ERR;
		if (p == EG_PARSE_OK)
			return eg_resp_parse(buf, *hl, r, &why) ==
			    EG_PARSE_OK && r->status != 101 ? EG_IO_OK :
			    EG_IO_ERR;
	}
	return len == cap ? EG_IO_ERR : EG_IO_AGAIN;
}

struct eg_io_res
eg_resp_interim(struct eg_conn *c, uint8_t *buf, size_t *len, size_t hl)
{
	if (eg_pend_reserve(c, &c->u2c, hl) == -1 ||
	    eg_pend_append(c, &c->u2c, buf, hl) == -1)
		return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
	*len -= hl;
	memmove(buf, buf + hl, *len);
	return eg_flush_res(eg_pend_flush(c, &c->u2c, c->cio.fd),
	    EG_END_CLIENT_CLOSED);
}

void
eg_rframe_init(struct eg_rframe *fr, const struct eg_resp *r, int is_head)
{
	memset(fr, 0, sizeof(*fr));
	if (is_head || r->nobody)
		fr->left = 0;
	else if (r->chunked) {
		fr->chunked = 1;
		eg_chunk_init(&fr->chunk);
	} else if (r->content_length >= 0)
		fr->left = r->content_length;
	else
		fr->eof_delim = 1;
}

int
eg_rframe_ended(const struct eg_rframe *fr)
{
	return !fr->eof_delim && !fr->chunked && fr->left == 0;
}

ssize_t
eg_rframe_feed(struct eg_rframe *fr, const uint8_t *p, ssize_t n, int *done,
    int *extra)
{
	ssize_t k;

	if (fr->chunked) {
		if ((k = eg_chunk_feed(&fr->chunk, p, (size_t)n, done)) < 0)
			return -1;
		if (k < n)	/* past the last chunk */
			*extra = 1;
		return k;
	}
	if (!fr->eof_delim) {
		if (n > fr->left) {
			n = (ssize_t)fr->left;
			*extra = 1;
		}
		fr->left -= n;
	}
	return n;
}

static enum eg_io_st
fwd_flush(struct eg_conn *c)
{
	return eg_pend_flush(c, &c->c2u, c->uio.fd);
}

/* Read the response head, then relay the body as its framing says. */
static struct eg_io_res
fwd_response(struct eg_conn *c)
{
	struct fwd *f = c->f;
	size_t cap = f->rcap, hl = 0, extra;
	char *out = (char *)c->w->scratch;
	struct eg_io_res res;
	enum eg_io_st st;
	ssize_t n, k;
	int done = 0, ka;

	res = eg_flush_res(eg_pend_flush(c, &c->u2c, c->cio.fd),
	    EG_END_CLIENT_CLOSED);
	if (res.st != EG_IO_OK)
		return res;
	while (!f->resp_head_done) {
		/* (an upgrade, 101, is not for plain HTTP) */
		st = eg_resp_head_get(f->rbuf, f->rlen, cap, &f->resp, &hl);
		if (st == EG_IO_ERR)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (st == EG_IO_AGAIN) {
			n = recv(c->uio.fd, f->rbuf + f->rlen, cap - f->rlen,
			    0);
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && (errno == EAGAIN ||
			    errno == EWOULDBLOCK))
				return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
			if (n <= 0)
				return EG_IO_RES(n == 0 ? EG_IO_EOF :
				    EG_IO_ERR, EG_END_UPSTREAM_CLOSED);
			f->rlen += (size_t)n;
			continue;
		}
		if (f->resp.status < 200) {
			/*
			 * An interim response (100 Continue to a client that
			 * sent Expect, 103 Early Hints): passed on as it came,
			 * then the next head is read.
			 */
			f->interim = 1;
			res = eg_resp_interim(c, f->rbuf, &f->rlen, hl);
			if (res.st != EG_IO_OK)
				return res;
			continue;
		}
		f->resp_head_done = 1;
		eg_rframe_init(&f->resp_fr, &f->resp, f->is_head);
		if (f->resp_fr.eof_delim)
			f->keepalive = 0;
		ka = f->keepalive;
		k = eg_resp_head(f->rbuf, &f->resp, ka, out,
		    sizeof(c->w->scratch));
		if (k < 0 || eg_pend_reserve(c, &c->u2c, (size_t)k) == -1 ||
		    eg_pend_append(c, &c->u2c, out, (size_t)k) == -1)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		extra = f->rlen - hl;
		if (extra > 0) {
			memmove(f->rbuf, f->rbuf + hl, extra);
			f->rlen = extra;
		} else
			f->rlen = 0;
	}
	/* body bytes that came with the head are in rbuf[0..rlen) */
	for (;;) {
		uint8_t *p;

		/* the rewritten head (or earlier body) must go out first:
		 * u2c holds at most TUNBUF */
		st = eg_pend_flush(c, &c->u2c, c->cio.fd);
		if (st == EG_IO_ERR)
			return EG_IO_RES(EG_IO_ERR, EG_END_CLIENT_CLOSED);
		if (st == EG_IO_AGAIN)
			break;
		if (eg_rframe_ended(&f->resp_fr)) {
			f->resp_done = 1;
			break;
		}
		if (f->rlen > 0) {
			/* body bytes that came with the head, a pending
			 * buffer's worth at a time */
			n = f->rlen > TUNBUF ? TUNBUF : (ssize_t)f->rlen;
			memcpy(c->w->scratch, f->rbuf, (size_t)n);
			memmove(f->rbuf, f->rbuf + n, f->rlen - (size_t)n);
			f->rlen -= (size_t)n;
			p = c->w->scratch;
		} else {
			n = recv(c->uio.fd, c->w->scratch, TUNBUF, 0);
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && (errno == EAGAIN ||
			    errno == EWOULDBLOCK))
				break;
			if (n <= 0) {
				/* EOF ends a close-delimited body; a read
				 * error (a reset) cuts it short */
				if (n == 0 && f->resp_fr.eof_delim) {
					f->resp_done = 1;
					break;
				}
				return EG_IO_RES(n == 0 ? EG_IO_EOF :
				    EG_IO_ERR, EG_END_UPSTREAM_CLOSED);
			}
			p = c->w->scratch;
		}
		c->last = eg_loop_now(c->w->loop);
		/* bytes past the body: the upstream is not kept */
		if ((n = eg_rframe_feed(&f->resp_fr, p, n, &done,
		    &f->resp_extra)) < 0)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (done)
			f->resp_done = 1;
		c->down += (uint64_t)n;
		if (eg_pend_append(c, &c->u2c, p, (size_t)n) == -1)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		st = eg_pend_flush(c, &c->u2c, c->cio.fd);
		if (st == EG_IO_ERR)
			return EG_IO_RES(EG_IO_ERR, EG_END_CLIENT_CLOSED);
		if (f->resp_done || st == EG_IO_AGAIN)
			break;
	}
	return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
}

/*
 * The response is complete: give the upstream back to the worker's pool
 * when the exchange was cleanly delimited at both ends (the request sent
 * whole, the response framed by length or chunks, not closing, nothing
 * behind it, no EOF seen); else it is closed with the request.
 */
static void
fwd_keep_upstream(struct eg_conn *c)
{
	struct fwd *f = c->f;
	struct egress *ex = c->ex;
	int fd = c->uio.fd;
	size_t limit;

	if (fd == -1 || c->t.addrs == NULL || c->t.ai == 0 || !f->req.done ||
	    f->resp_fr.eof_delim || f->resp.close || f->resp_extra ||
	    f->rlen > 0 || c->u_eof || c->u2c.hup || eg_pend_busy(&c->c2u))
		return;
	/* idle upstreams must not take the descriptors that refusals need
	 * (conn.c keeps 32 back for those) */
	if (ex->fd_limit > 0 && (unsigned)fd + 64 >= ex->fd_limit)
		return;
	/* every worker its share of max_connections, at most EG_UPOOL_MAX */
	limit = c->cfg->max_connections / (ex->nw > 0 ? ex->nw : 1);
	if (limit == 0)
		limit = 1;
	eg_io_del(c->w->loop, &c->uio);
	c->uio.fd = -1;
	(void)eg_upool_put(&c->w->upool, c->sess, EG_UPOOL_HTTP, &c->t.host,
	    c->t.port, &c->t.addrs[c->t.ai - 1], fd, c->cfg->idle_timeout_ms,
	    limit > EG_UPOOL_MAX ? EG_UPOOL_MAX : (unsigned)limit);
}

/*
 * A reused upstream failed before a byte of its response came back (it
 * closed while idle, as a keep-alive server may at any time): send the
 * request once more on a fresh connection, as curl and haproxy do, when
 * that is safe: the head was kept (idempotent, no body) and nothing of a
 * response, not even a 1xx, reached the client.  1: retrying.
 */
static int
fwd_retry(struct eg_conn *c, struct eg_io_res r)
{
	struct fwd *f = c->f;
	size_t len = f->retry_len;

	if (!c->reused || len == 0 || f->resp_head_done || f->rlen > 0 ||
	    f->interim || c->down > 0 || eg_pend_busy(&c->u2c) ||
	    (r.end != EG_END_UPSTREAM_CLOSED && r.end != EG_END_ERROR))
		return 0;
	c->reused = 0;
	f->retry_len = 0;
	eg_pend_release(c, &c->c2u);
	if (eg_pend_reserve(c, &c->c2u, len) == -1 ||
	    eg_pend_append(c, &c->c2u, f->rbuf + f->rcap, len) == -1)
		return 0;
	c->u_eof = c->u_wshut = 0;
	return eg_conn_reconnect(c) == 0;
}

enum eg_io_st
eg_forward_do(struct eg_conn *c)
{
	struct fwd *f = c->f;
	struct eg_io_res r;

	r = eg_body_pump(c, &f->req, UINT64_MAX, fwd_flush, EG_END_ERROR);
	if (r.st == EG_IO_AGAIN)
		r = fwd_response(c);
	if (r.st != EG_IO_AGAIN) {
		if (fwd_retry(c, r))
			return EG_IO_AGAIN;	/* CONNECTING */
		eg_conn_close_upstream(c, r.end,
		    f->resp_head_done && !f->resp_done);
		return EG_IO_CLOSED;
	}
	if (EG_BUDGET_DUE(c) && eg_conn_budget_check(c) == -1)
		return EG_IO_CLOSED;
	if (!f->resp_done || eg_pend_busy(&c->u2c))
		return EG_IO_AGAIN;
	fwd_keep_upstream(c);
	if (!f->req.done || !f->keepalive) {
		eg_conn_close(c, EG_END_DONE);
		return EG_IO_CLOSED;
	}
	eg_conn_reset_for_next(c);
	return c->state == EG_CS_HEAD ? EG_IO_OK : EG_IO_CLOSED;
}

/* --- the pool after a phase switch or reload ------------------------------ */

struct fwd_recheck {
	struct egress		*ex;
};

/* Does the session's phase still allow the entry's host?  (Lock held.) */
static int
fwd_pool_allowed(void *arg, const struct eg_upent *e)
{
	struct fwd_recheck *r = arg;
	const struct eg_rule *rule;
	int report;

	if (e->kind != EG_UPOOL_HTTP)
		return 1;
	return eg_phase_decide(e->sess->phase, &e->host, e->port,
	    r->ex->cfg->ports, r->ex->cfg->nports, &rule, &report) ==
	    EG_MATCH_ALLOW;
}

unsigned
eg_forward_pool_recheck(struct eg_worker *w, struct eg_session *sess)
{
	struct fwd_recheck r;
	unsigned n;

	r.ex = w->ex;
	pthread_rwlock_rdlock(&w->ex->lock);
	n = eg_upool_drop(&w->upool, sess, fwd_pool_allowed, &r);
	pthread_rwlock_unlock(&w->ex->lock);
	return n;
}
