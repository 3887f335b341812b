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
#include "session.h"
#include "upool.h"

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
	int64_t body;

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
	if (q->chunked) {
		f->req_chunked = 1;
		eg_chunk_init(&f->req_chunk);
		f->req_left = -1;
	} else
		f->req_left = q->content_length > 0 ? q->content_length : 0;
	body = 0;
	if (extra > 0 && !f->req_done) {
		if (f->req_chunked) {
			int done = 0;
			ssize_t k = eg_chunk_feed(&f->req_chunk,
			    h->buf + q->head_len, extra, &done);
			if (k < 0) {
				eg_conn_close(c, EG_END_ERROR);
				return;
			}
			body = k;
			f->req_done = done;
		} else {
			body = (int64_t)extra < f->req_left ? (int64_t)extra :
			    f->req_left;
			f->req_left -= body;
		}
		if (eg_pend_append(c, &c->c2u, h->buf + q->head_len,
		    (size_t)body) == -1) {
			eg_conn_close(c, EG_END_ERROR);
			return;
		}
		c->up += (uint64_t)body;
	}
	if (!f->req_chunked && f->req_left == 0)
		f->req_done = 1;
	/* keep what follows (a pipelined request) at the buffer start */
	memmove(h->buf, h->buf + q->head_len + body,
	    extra - (size_t)body);
	h->len = extra - (size_t)body;
	h->scan = 0;
	eg_conn_set_state(c, EG_CS_FORWARD);
}

/* Relay the request body: bounded by Content-Length or chunk framing. */
static struct eg_io_res
fwd_request(struct eg_conn *c)
{
	struct fwd *f = c->f;
	uint8_t *s = c->w->scratch;
	enum eg_io_st st;
	ssize_t n, k;
	int done = 0;

	switch (eg_pend_flush(c, &c->c2u, c->uio.fd)) {
	case EG_IO_OK:
		break;
	case EG_IO_AGAIN:
		return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
	default:
		return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
	}
	while (!f->req_done) {
		size_t want = TUNBUF;

		if (!f->req_chunked && (uint64_t)f->req_left < want)
			want = (size_t)f->req_left;
		/* what follows the last chunk is the next request's head,
		 * kept in c->h: never read more than it holds */
		if (f->req_chunked && c->h->cap < want)
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
		if (f->req_chunked) {
			k = eg_chunk_feed(&f->req_chunk, s, (size_t)n, &done);
			if (k < 0)
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
			/* bytes past the body: the next request's head */
			if (k < n) {
				memcpy(c->h->buf, s + k, (size_t)(n - k));
				c->h->len = (size_t)(n - k);
			}
			n = k;
			f->req_done = done;
		} else {
			f->req_left -= n;
			if (f->req_left == 0)
				f->req_done = 1;
		}
		c->up += (uint64_t)n;
		if (eg_pend_append(c, &c->c2u, s, (size_t)n) == -1 ||
		    (st = eg_pend_flush(c, &c->c2u, c->uio.fd)) == EG_IO_ERR)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (st == EG_IO_AGAIN)
			return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
	}
	return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
}

/* Read the response head, then relay the body as its framing says. */
static struct eg_io_res
fwd_response(struct eg_conn *c)
{
	struct fwd *f = c->f;
	size_t cap = f->rcap, hl = 0, scan = 0, extra;
	char *out = (char *)c->w->scratch;
	const char *why;
	enum eg_parse r;
	enum eg_io_st st;
	ssize_t n, k;
	int done = 0, ka;

	switch (eg_pend_flush(c, &c->u2c, c->cio.fd)) {
	case EG_IO_OK:
		break;
	case EG_IO_AGAIN:
		return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
	default:
		return EG_IO_RES(EG_IO_ERR, EG_END_CLIENT_CLOSED);
	}
	while (!f->resp_head_done) {
		r = EG_PARSE_AGAIN;
		if (f->rlen > 0) {
			scan = 0;
			r = eg_head_scan(f->rbuf, f->rlen, &scan, &hl);
			if (r == EG_PARSE_BAD)
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		}
		if (r != EG_PARSE_OK) {
			if (f->rlen == cap)
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
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
		memset(&f->resp, 0, sizeof(f->resp));
		if (eg_resp_parse(f->rbuf, hl, &f->resp, &why) != EG_PARSE_OK)
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (f->resp.status == 101)
			/* an upgrade: not for plain HTTP */
			return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
		if (f->resp.status < 200) {
			/*
			 * An interim response (100 Continue to a client that
			 * sent Expect, 103 Early Hints): passed on as it came,
			 * then the next head is read.
			 */
			if (eg_pend_reserve(c, &c->u2c, hl) == -1 ||
			    eg_pend_append(c, &c->u2c, f->rbuf, hl) == -1)
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
			f->interim = 1;
			f->rlen -= hl;
			memmove(f->rbuf, f->rbuf + hl, f->rlen);
			st = eg_pend_flush(c, &c->u2c, c->cio.fd);
			if (st == EG_IO_ERR)
				return EG_IO_RES(EG_IO_ERR, EG_END_CLIENT_CLOSED);
			if (st == EG_IO_AGAIN)
				return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
			continue;
		}
		f->resp_head_done = 1;
		if (f->is_head || f->resp.nobody)
			f->resp_left = 0;
		else if (f->resp.chunked) {
			f->resp_chunked = 1;
			eg_chunk_init(&f->resp_chunk);
		} else if (f->resp.content_length >= 0)
			f->resp_left = f->resp.content_length;
		else {
			f->resp_eof_delim = 1;
			f->keepalive = 0;
		}
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
		if (f->resp_eof_delim == 0 && !f->resp_chunked &&
		    f->resp_left == 0) {
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
				if (f->resp_eof_delim) {
					f->resp_done = 1;
					break;
				}
				return EG_IO_RES(n == 0 ? EG_IO_EOF :
				    EG_IO_ERR, EG_END_UPSTREAM_CLOSED);
			}
			p = c->w->scratch;
		}
		c->last = eg_loop_now(c->w->loop);
		if (f->resp_chunked) {
			k = eg_chunk_feed(&f->resp_chunk, p, (size_t)n, &done);
			if (k < 0)
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
			if (k < n)	/* past the last chunk */
				f->resp_extra = 1;
			n = k;
			if (done)
				f->resp_done = 1;
		} else if (!f->resp_eof_delim) {
			if (n > f->resp_left) {
				n = (ssize_t)f->resp_left;
				f->resp_extra = 1;
			}
			f->resp_left -= n;
		}
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

	if (fd == -1 || c->t.addrs == NULL || c->t.ai == 0 || !f->req_done ||
	    f->resp_eof_delim || f->resp.close || f->resp_extra ||
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

	r = fwd_request(c);
	if (r.st == EG_IO_AGAIN)
		r = fwd_response(c);
	if (r.st != EG_IO_AGAIN) {
		if (fwd_retry(c, r))
			return EG_IO_AGAIN;	/* CONNECTING */
		eg_conn_close(c, r.end);
		return EG_IO_CLOSED;
	}
	if (EG_BUDGET_DUE(c) && eg_conn_budget_check(c) == -1)
		return EG_IO_CLOSED;
	if (!f->resp_done || eg_pend_busy(&c->u2c))
		return EG_IO_AGAIN;
	fwd_keep_upstream(c);
	if (!f->req_done || !f->keepalive) {
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
