/*
 * tunnel.c: the bytes of an open tunnel.  The pending buffers (struct pend:
 * what a peer would not take yet, from a per-worker pool), the splice pipes,
 * the pump that moves bytes from one socket to the other, and the handlers
 * of the TUNNEL and SNI states, called by conn_step() in conn.c.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include "alloc.h"
#include "conn-int.h"
#include "conn.h"
#include "core.h"
#include "event.h"
#include "log.h"
#include "loop.h"
#include "sni.h"
#include "worker.h"

#define BUFPOOL_MAX	256
#define PIPE_BYTES	(256 * 1024)	/* splice pipe capacity */

/* --- buffers -------------------------------------------------------------- */

static void *
buf_get(struct eg_worker *w)
{
	void *b = eg_freelist_get(&w->bufpool, &w->nbufpool);

	return b != NULL ? b : eg_malloc(TUNBUF);
}

static void
buf_put(struct eg_worker *w, void *b)
{
	eg_freelist_put(&w->bufpool, &w->nbufpool, b, BUFPOOL_MAX);
}

/*
 * Give p's storage back (pooled storage to the pool, a larger one to
 * free()); p is then empty, with no storage and no error.
 */
void
eg_pend_release(struct eg_conn *c, struct pend *p)
{
	if (p->b.p != NULL) {
		if (p->b.cap == TUNBUF)
			buf_put(c->w, p->b.p);
		else
			eg_free(p->b.p);	/* larger: not kept in the pool */
	}
	eg_buf_init(&p->b, NULL, 0);
}

/*
 * Make an empty p hold at least n bytes (a rewritten head and the body
 * bytes read with it may exceed TUNBUF; n is bounded by the caller).
 */
int
eg_pend_reserve(struct eg_conn *c, struct pend *p, size_t n)
{
	void *b;

	if (n <= TUNBUF || eg_pend_busy(p))
		return 0;
	if ((b = eg_malloc(n)) == NULL)
		return -1;
	eg_pend_release(c, p);
	eg_buf_init(&p->b, b, n);
	return 0;
}

/* Bytes are waiting for the peer (copied or in a pipe). */
int
eg_pend_busy(const struct pend *p)
{
	return eg_buf_len(&p->b) > 0 || p->plen > 0;
}

/* Take a pipe for splicing: from the worker's pool, else a new one. */
static int
pipe_get(struct eg_conn *c, struct pend *p)
{
	struct eg_worker *w = c->w;

	if (p->pipe[0] != -1)
		return 0;
	if (w->npipes > 0) {
		w->npipes--;
		p->pipe[0] = w->pipes[w->npipes][0];
		p->pipe[1] = w->pipes[w->npipes][1];
		return 0;
	}
	if (pipe2(p->pipe, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	/* a larger pipe moves bulk data in fewer calls; its pages are
	 * only allocated while bytes sit in it */
	fcntl(p->pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
	return 0;
}

/* An empty pipe goes back to the pool; a non-empty one is closed. */
void
eg_pipe_put(struct eg_conn *c, struct pend *p)
{
	struct eg_worker *w = c->w;

	if (p->pipe[0] == -1)
		return;
	if (p->plen == 0 && w->npipes < nitems(w->pipes)) {
		w->pipes[w->npipes][0] = p->pipe[0];
		w->pipes[w->npipes][1] = p->pipe[1];
		w->npipes++;
	} else {
		close(p->pipe[0]);
		close(p->pipe[1]);
	}
	p->pipe[0] = p->pipe[1] = -1;
	p->plen = 0;
}

/*
 * Queue n bytes on p (reply text, heads, what a peer would not take):
 * storage from the pool first if p has none.  -1 when that fails, or
 * under buf.h's overflow rule (then p is failed until released, and
 * eg_pend_flush() reports EG_IO_ERR rather than send a gap).
 */
int
eg_pend_append(struct eg_conn *c, struct pend *p, const void *d, size_t n)
{
	void *s;

	if (p->b.p == NULL) {
		if ((s = buf_get(c->w)) == NULL)
			return -1;
		eg_buf_init(&p->b, s, TUNBUF);
	}
	return eg_buf_add(&p->b, d, n);
}

/*
 * Write what is pending on p to fd; once all of it is out the storage is
 * released.  EG_IO_OK when empty, EG_IO_AGAIN, EG_IO_ERR on a write error
 * (peer gone) or when an append to p failed (bytes are missing).
 */
enum eg_io_st
eg_pend_flush(struct eg_conn *c, struct pend *p, int fd)
{
	ssize_t n;

	if (eg_buf_failed(&p->b))
		return EG_IO_ERR;
	while (eg_buf_len(&p->b) > 0) {
		n = send(fd, eg_buf_data(&p->b), eg_buf_len(&p->b),
		    MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return EG_IO_AGAIN;
			return EG_IO_ERR;
		}
		eg_buf_consume(&p->b, (size_t)n);
	}
	eg_pend_release(c, p);
	return EG_IO_OK;
}

/* --- tunnel ---------------------------------------------------------------- */

/*
 * The zero-copy path of pump(): src -> pipe -> dst with splice(2).  A pipe
 * is held only while it has bytes the peer did not take yet; an idle
 * tunnel holds none.  Returns EG_IO_AGAIN (done for now), EG_IO_ERR (a side
 * failed; for a write failure the end says which side), or EG_IO_OK when
 * splice does not apply to these sockets and the caller should copy instead.
 */
static struct eg_io_res
pump_splice(struct eg_conn *c, int src, int dst, struct pend *p,
    int *src_eof, uint64_t *count)
{
	const unsigned fl = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;
	ssize_t n;
	int rounds = 0;

	for (;;) {
		while (p->plen > 0) {
			n = splice(p->pipe[0], NULL, dst, NULL, p->plen, fl);
			if (n == -1) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN)
					return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
				return EG_IO_RES(EG_IO_ERR, dst == c->cio.fd ?
				    EG_END_CLIENT_CLOSED :
				    EG_END_UPSTREAM_CLOSED);
			}
			p->plen -= (uint32_t)n;
		}
		if (*src_eof || !p->rd || rounds++ == 4) {
			eg_pipe_put(c, p);
			return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
		}
		if (pipe_get(c, p) == -1)
			return EG_IO_RES(EG_IO_OK, EG_END_NONE);
		n = splice(src, NULL, p->pipe[1], NULL, PIPE_BYTES, fl);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				p->rd = 0;
				eg_pipe_put(c, p);
				return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
			}
			eg_pipe_put(c, p);
			if (errno == EINVAL && *count == 0)
				return EG_IO_RES(EG_IO_OK, EG_END_NONE);
			return EG_IO_RES(EG_IO_ERR, EG_END_NONE);
		}
		if (n == 0) {
			*src_eof = 1;
			eg_pipe_put(c, p);
			return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
		}
		c->last = eg_loop_now(c->w->loop);
		*count += (uint64_t)n;
		p->plen = (uint32_t)n;	/* <= PIPE_BYTES */
		if (n < TUNBUF) {
			/* small messages again: copying is cheaper */
			p->bulk = 0;
			p->rd = 0;
		}
	}
}

/*
 * Move bytes from src to dst: read into the worker's scratch buffer, write
 * at once, and keep only what dst would not take (then stop reading src
 * until it drains: backpressure).  At src's EOF, dst's write side is shut
 * once everything is through, unless dst_eof says dst has ended too (the
 * tunnel is about to close, and close(2) sends the FIN).  Returns EG_IO_ERR
 * with the end to close with when the tunnel must end, else EG_IO_AGAIN
 * (src's EOF included: it is passed on, not an end).
 */
static struct eg_io_res
pump(struct eg_conn *c, int src, int dst, struct pend *p, int *src_eof,
    int dst_eof, int *dst_wshut, uint64_t *count, enum eg_end src_end,
    enum eg_end dst_end)
{
	uint8_t *s = c->w->scratch;
	ssize_t n, m;
	int rounds = 0;
	struct eg_io_res r;

	if (eg_buf_len(&p->b) > 0) {
		switch (eg_pend_flush(c, p, dst)) {
		case EG_IO_OK:
			break;
		case EG_IO_AGAIN:
			return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
		default:
			return EG_IO_RES(EG_IO_ERR, dst_end);
		}
	}
	if (!c->nosplice && c->state == EG_CS_TUNNEL &&
	    (p->bulk || p->plen > 0)) {
		r = pump_splice(c, src, dst, p, src_eof, count);
		switch (r.st) {
		case EG_IO_OK:		/* splice does not apply: copy */
			c->nosplice = 1;
			break;
		case EG_IO_AGAIN:
			goto out;
		default:
			/* a read failure: the side that ended first, else src */
			if (r.end == EG_END_NONE)
				r.end = c->end ? c->end : src_end;
			return r;
		}
	}
	while (!*src_eof && p->rd && rounds++ < 4) {
		/* never more than a pending buffer can hold, in case dst
		 * takes none of it */
		n = recv(src, s, TUNBUF, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				p->rd = 0;
				break;
			}
			return EG_IO_RES(EG_IO_ERR, src_end);
		}
		if (n == 0) {
			*src_eof = 1;
			break;
		}
		c->last = eg_loop_now(c->w->loop);
		*count += (uint64_t)n;
		/*
		 * A short read emptied the socket: do not spend a recv() to
		 * hear EAGAIN (level-triggered epoll tells us if more came),
		 * nor one to hear the EOF of a FIN already queued behind
		 * these bytes.  A full read suggests bulk: splice next time.
		 */
		if (n < TUNBUF) {
			p->rd = 0;
			if (p->hup)
				*src_eof = 1;
		} else
			p->bulk = 1;
		m = send(dst, s, (size_t)n, MSG_NOSIGNAL);
		if (m == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				return EG_IO_RES(EG_IO_ERR, dst_end);
			m = 0;
		}
		if (m < n) {
			if (eg_pend_append(c, p, s + m, (size_t)(n - m)) ==
			    -1) {
				eg_conn_why(c, "out of memory for bytes the "
				    "peer did not take yet");
				return EG_IO_RES(EG_IO_ERR, EG_END_ERROR);
			}
			break;
		}
	}
out:
	/* pass the EOF on, unless dst ended too: then close() says it */
	if (*src_eof && !dst_eof && !*dst_wshut && !eg_pend_busy(p)) {
		shutdown(dst, SHUT_WR);
		*dst_wshut = 1;
	}
	return EG_IO_RES(EG_IO_AGAIN, EG_END_NONE);
}

/* Client to upstream (up), or upstream to client. */
static struct eg_io_res
pump_dir(struct eg_conn *c, int up)
{
	if (up)
		return pump(c, c->cio.fd, c->uio.fd, &c->c2u, &c->c_eof,
		    c->u_eof, &c->u_wshut, &c->up, EG_END_CLIENT_CLOSED,
		    EG_END_UPSTREAM_CLOSED);
	return pump(c, c->uio.fd, c->cio.fd, &c->u2c, &c->u_eof, c->c_eof,
	    &c->c_wshut, &c->down, EG_END_UPSTREAM_CLOSED,
	    EG_END_CLIENT_CLOSED);
}

/*
 * After a pump: -1 when the connection is closed, at the end r says or
 * by a byte budget now spent; else 0.  One comparison per event: the
 * budgets' bytes fold in per lease.
 */
static int
pumped(struct eg_conn *c, struct eg_io_res r)
{
	if (r.st != EG_IO_AGAIN) {
		eg_conn_close(c, r.end);
		return -1;
	}
	if (EG_BUDGET_DUE(c) && eg_conn_budget_check(c) == -1)
		return -1;
	return 0;
}

/*
 * After the first EOF of a tunnel (passed on to the other side): it is
 * half-open from now on, and the other side has fin_timeout of silence
 * (from this EOF or its last byte) to finish; conn_timeout() then closes
 * with c->end, the side that ended first.  While a ClientHello is half
 * held, its header_timeout deadline stays.
 */
static void
conn_half_open(struct eg_conn *c)
{
	if (c->fin || !(c->c_eof || c->u_eof))
		return;
	c->fin = 1;
	if (c->end == EG_END_NONE)
		c->end = c->c_eof ? EG_END_CLIENT_CLOSED :
		    EG_END_UPSTREAM_CLOSED;
	c->last = eg_loop_now(c->w->loop);
	if (!(c->state == EG_CS_SNI && eg_buf_len(&c->c2u.b) > 0))
		eg_conn_set_state(c, c->state);	/* re-arms: fin_timeout */
}

enum eg_io_st
eg_tunnel_do(struct eg_conn *c)
{
	struct eg_io_res r;

	r = pump_dir(c, 1);
	if (r.st == EG_IO_AGAIN)
		r = pump_dir(c, 0);
	if (pumped(c, r) == -1)
		return EG_IO_CLOSED;
	if (c->end == EG_END_NONE && (c->c_eof || c->u_eof))
		c->end = c->c_eof ? EG_END_CLIENT_CLOSED :
		    EG_END_UPSTREAM_CLOSED;
	if (c->c_eof && c->u_eof && !eg_pend_busy(&c->c2u) &&
	    !eg_pend_busy(&c->u2c)) {
		eg_conn_close(c, c->end);
		return EG_IO_CLOSED;
	}
	conn_half_open(c);
	return EG_IO_AGAIN;
}

/*
 * SNI check: hold the client's first bytes until they are a complete
 * ClientHello (or clearly not TLS).  Upstream bytes flow meanwhile, for
 * protocols where the server speaks first.
 */
enum eg_io_st
eg_tunnel_do_sni(struct eg_conn *c)
{
	struct pend *p = &c->c2u;
	struct eg_io_res io;
	enum eg_sni r;
	size_t nlen = 0, held;
	ssize_t n;

	io = pump_dir(c, 0);
	if (pumped(c, io) == -1)
		return EG_IO_CLOSED;
	conn_half_open(c);	/* the upstream may end while we wait */
	/* the ClientHello is held whole: SNIBUF at least */
	if (p->b.p == NULL && eg_pend_reserve(c, p, SNIBUF) == -1) {
		eg_conn_why(c, "out of memory for the ClientHello hold "
		    "buffer");
		eg_conn_close(c, EG_END_ERROR);
		return EG_IO_CLOSED;
	}
	for (;;) {
		/* bytes held already (sent right behind the CONNECT, or
		 * read before) are parsed before waiting for more */
		if ((held = eg_buf_len(&p->b)) > 0) {
			r = eg_sni_parse((const uint8_t *)eg_buf_data(&p->b),
			    held, c->sni, sizeof(c->sni), &nlen);
			if (r != EG_SNI_AGAIN || held >= SNIBUF)
				break;
		}
		/* the storage is SNIBUF (more only when as many bytes came
		 * behind the CONNECT head, and those were parsed above) */
		n = recv(c->cio.fd, eg_buf_tail(&p->b), eg_buf_space(&p->b),
		    0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return EG_IO_AGAIN;
		if (n == 0 && held == 0) {
			/*
			 * EOF before the first byte: there is no hello to
			 * check, and none can follow.  The wait ends and the
			 * EOF is passed on like any half-close (the upstream
			 * gets the FIN; what it sends still reaches the
			 * client).
			 */
			c->c_eof = 1;
			eg_conn_set_state(c, EG_CS_TUNNEL);
			return EG_IO_OK;
		}
		if (n <= 0) {
			/* gone in the middle of a hello (or reset): nothing
			 * was forwarded */
			eg_conn_close(c, EG_END_CLIENT_CLOSED);
			return EG_IO_CLOSED;
		}
		c->last = eg_loop_now(c->w->loop);
		eg_buf_commit(&p->b, (size_t)n);
		if (held == 0)			/* the first byte of a hello: */
			eg_conn_set_state(c, EG_CS_SNI);	/* header_timeout */
	}
	if (r == EG_SNI_FOUND && !eg_sni_match(c->sni, nlen,
	    c->t.host.name, c->t.host.len)) {
		eg_conn_close(c, EG_END_SNI_MISMATCH);
		return EG_IO_CLOSED;
	}
	if (r == EG_SNI_BAD || r == EG_SNI_AGAIN) {
		/* a stream whose first byte is 22 is held as TLS (sni_check):
		 * a hello egressd cannot read whole is refused, not guessed */
		c->sni[0] = '\0';
		eg_conn_why(c, r == EG_SNI_BAD ? "sni_check: the client's "
		    "first bytes begin a TLS handshake record but are not a "
		    "well-formed ClientHello; nothing was forwarded" :
		    "sni_check: the client's ClientHello is larger than "
		    "egressd holds; nothing was forwarded");
		eg_conn_close(c, EG_END_ERROR);
		return EG_IO_CLOSED;
	}
	/* the held bytes become the pending upstream data; the hold buffer
	 * (SNIBUF or more) is freed, not pooled, once flushed */
	c->sni[0] = '\0';
	c->up += eg_buf_len(&p->b);
	eg_conn_set_state(c, EG_CS_TUNNEL);
	return EG_IO_OK;
}
