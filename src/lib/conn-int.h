/*
 * conn-int.h: what the three files of a client connection share: conn.c
 * (the state machine), tunnel.c (pending buffers, pipes, the pump, the
 * TUNNEL and SNI handlers) and forward.c (the plain-HTTP forwarder).
 * Private to those three; the rest of the library sees only the eg_conn_*
 * functions in conn.h.
 */
#ifndef EG_CONN_INT_H
#define EG_CONN_INT_H

#include <sys/socket.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "conn.h"
#include "core.h"
#include "dns.h"
#include "event.h"
#include "host.h"
#include "log.h"
#include "loop.h"
#include "reason.h"
#include "reqparse.h"
#include "sni.h"
#include "target.h"

#define TUNBUF		16384		/* a pending buffer per direction */
#define SNIBUF		EG_SNI_BUF_MAX

enum eg_cstate {
	EG_CS_NEW,		/* accepted, not set up yet (a zeroed conn) */
	EG_CS_HEAD,		/* reading the request head; header_timeout */
	EG_CS_RESOLVING,	/* waiting for DNS; no fd interest */
	EG_CS_CONNECTING,	/* connect() in flight; connect_timeout */
	EG_CS_REPLYING,		/* verdict logged; flushing our reply */
	EG_CS_SNI,		/* holding client bytes for the ClientHello */
	EG_CS_TUNNEL,		/* relaying both ways; idle_timeout */
	EG_CS_FORWARD,		/* plain HTTP: request and response relay */
	EG_CS_ROUTE,		/* a route: TLS handshake, then the relay
				   (route.c); connect_timeout, idle_timeout */
	EG_CS_LINGER,		/* refusal sent; draining the client */
	EG_CS_DEAD		/* unlinked; on the worker's dead list */
};

/*
 * What an I/O step came to.  A state handler returns OK (it changed the
 * state: step again), AGAIN (it would block: wait for the next event) or
 * CLOSED (it closed the connection: stop).  A transfer (the pump, the
 * forwarder's halves) returns AGAIN, or EOF (its source ended where it
 * must not) or ERR (a socket failed, or a peer broke the framing) with
 * the end the CLOSE line gives, in a struct eg_io_res.
 */
enum eg_io_st { EG_IO_OK, EG_IO_AGAIN, EG_IO_EOF, EG_IO_ERR, EG_IO_CLOSED };

struct eg_io_res {
	enum eg_io_st	 st;
	enum eg_end	 end;		/* EOF, ERR: why the connection ends */
};

#define EG_IO_RES(st, end)	((struct eg_io_res){ (st), (end) })

/*
 * Bytes read but not yet written, one per direction.  The copied bytes are
 * a struct eg_buf over fixed storage (buf.h's overflow rule): TUNBUF from
 * the worker's pool, or more from eg_malloc() (eg_pend_reserve()); no
 * storage (b.p NULL) while nothing is pending, so an idle tunnel holds
 * none.  The small fields are narrow so that a pend stays 64 bytes.
 */
struct pend {
	struct eg_buf	 b;		/* copied bytes */
	int		 pipe[2];	/* spliced bytes; -1: no pipe */
	uint32_t	 plen;		/* bytes sitting in the pipe, at most
					   PIPE_BYTES */
	uint8_t		 rd;		/* the source may have bytes to read */
	uint8_t		 hup;		/* the source's FIN is queued (EPOLLRDHUP):
					   a short read reaches it */
	uint8_t		 bulk;		/* full reads seen: splice, not copy */
};

/* The request head and its parse; released once a tunnel opens. */
struct head {
	void		*link;		/* first: the link while in the
					   worker's pool (eg_freelist_put) */
	size_t		 cap;		/* of buf: max_header_bytes */
	size_t		 len, scan;
	struct eg_req	 req;		/* its host: copied to c->t.host */
	/* where c->t.addrs points while the request resolves and connects:
	 * here, not in the connection, so an open tunnel does not keep them */
	struct sockaddr_storage addrs[EG_DNS_MAXADDR];
	uint8_t		 buf[];		/* max_header_bytes */
};

/* A request body on its way upstream (forward.c's relay, routes' too). */
struct eg_body {
	int64_t		 left;		/* Content-Length bytes still to send
					   (-1: chunked) */
	struct eg_chunk	 chunk;
	int		 chunked, done;
	uint64_t	 bytes;		/* relayed so far */
};

/* A response body's framing (forward.c's relay, routes' too). */
struct eg_rframe {
	int64_t		 left;		/* Content-Length bytes still to come */
	struct eg_chunk	 chunk;
	int		 chunked, eof_delim;	/* eof_delim: ends at EOF */
};

/* Plain-HTTP response framing, for one forwarded request. */
struct fwd {
	struct eg_body	 req;
	int		 resp_head_done, resp_done;
	struct eg_rframe resp_fr;
	int		 keepalive, is_head;
	int		 resp_extra;	/* bytes past the response: the
					   upstream is not reused */
	int		 interim;	/* a 1xx was passed on */
	size_t		 rlen, rcap;
	size_t		 retry_len;	/* the request head kept at
					   rbuf + rcap for one retry (0: none) */
	struct eg_resp	 resp;
	uint8_t		 rbuf[];	/* response head (rcap =
					   max_header_bytes), then retry_len */
};

struct eg_conn {
	struct eg_worker	*w;
	struct egress		*ex;
	struct eg_conn		*prev, *next;
	struct eg_conn		*sprev, *snext;	/* the session's list on w */
	struct eg_cfg		*cfg;		/* the snapshot it was decided
						   under (a reference) */
	struct eg_session	*sess;
	enum eg_cstate		 state;
	uint64_t		 id;
	int64_t			 t0;		/* wall ms at ALLOW */
	uint64_t		 last;		/* loop ms of last activity */
	struct eg_io		 cio, uio;
	struct eg_timer		 tmo;
	char			 client[64];
	struct sockaddr_storage	 cpeer;		/* for the per-client cap */
	int			 counted;	/* holds a per-client slot */
	int			 tres;		/* holds a timer slot */

	struct head		*h;		/* until the tunnel opens */
	struct fwd		*f;
	struct eg_target	 t;		/* the request's target and
						   its decision */
	int			 kept;		/* plain HTTP: between requests */
	int			 reused;	/* plain HTTP: the upstream came
						   from the worker's pool */
	const char		*method;	/* static or in h */
	int			 dns_pending, dns_done, in_step;
	uint32_t		 uev;		/* upstream events for CONNECTING */
	uint64_t		 t_start;	/* eg_clock_us() of DNS/connect */
	int			 dns_status;
	char			 dns_reason[64];

	struct pend		 c2u, u2c;
	int			 c_eof, u_eof;	/* read side saw EOF */
	int			 c_wshut, u_wshut;
	int			 fin;		/* a side ended: fin_timeout */
	uint64_t		 up, down;
	int			 allowed;	/* ALLOW written: owes a CLOSE */
	int			 decided;	/* a verdict was written */
	int			 close_after;	/* close once u2c is flushed */
	int			 nosplice;	/* copy, do not splice */
	enum eg_end		 end;		/* tunnel: the side that ended first */
	/* budget lease (conn.c): c->up and c->down past their marks are
	   folded into the session's counts; UINT64_MAX: no byte budget */
	uint64_t		 bup_mark, bdown_mark;
	uint64_t		 bup_base, bdown_base;	/* folded so far */
	uint64_t		 bepoch;	/* the count it leased from */
	int			 bleased;
	char			 sni[256];

	/* credential routes (route.c) */
	struct eg_rt		*rt;		/* the route request in hand */
	struct eg_tls		*tls;		/* c->uio's TLS, if https */
	const struct eg_route	*uroute;	/* c->uio kept alive for it */
	struct eg_cfg		*ucfg;		/* the snapshot it lives in */
	/* egressd's own relay (option unix_relay): its handoff is read
	 * first (conn.c), then the client's TCP socket it passed replaces
	 * the Unix one; pid and exe name the process that connected */
	struct eg_relay_hdr	*rly;		/* while the handoff is read */
	int			 relay;		/* 1: handoff due, 2: done */
	char			 rpid[12];
	char			*rexe;		/* eg_malloc'd, or NULL */
};

/* Has the connection passed a budget mark (eg_conn_budget_check() due)? */
#define EG_BUDGET_DUE(c)						\
	((c)->up > (c)->bup_mark || (c)->down > (c)->bdown_mark)

/* conn.c */
/*
 * The only writer of c->state, and the only place that arms or stops the
 * connection's timer.  A change of state runs the new state's entry
 * actions; with to == c->state it only re-arms the state's timer, after
 * what it depends on moved (the first byte of a ClientHello, the first
 * EOF of a tunnel, activity since the last expiry).
 */
void	eg_conn_set_state(struct eg_conn *, enum eg_cstate);
/* CLOSE line if owed, close both sockets, unlink; freed after the batch. */
void	eg_conn_close(struct eg_conn *, enum eg_end);
/*
 * Reset close: both sockets are reset (SO_LINGER {1, 0}), not closed with
 * a FIN, so that a client in the middle of a transfer sees an error, then
 * the connection is closed as eg_conn_close() does.  For the policy ends
 * (end=phase_change, session_closed, reload, budget), and for an upstream
 * that fails in the middle of a plain-HTTP or route response (a short
 * close-delimited body would otherwise look complete).
 */
void	eg_conn_reset_close(struct eg_conn *, enum eg_end);
/*
 * The upstream ended an exchange (end): close, with a reset when it ended
 * in the middle of an answer the client was getting (cut: its head sent,
 * not its end), so that a short body cannot look complete behind a FIN.
 */
void	eg_conn_close_upstream(struct eg_conn *, enum eg_end, int cut);
/*
 * Why c is about to end with end=error, as a warning in the error log (the
 * CLOSE line has no field for it): "route NAME id=N" or "tunnel
 * HOST:PORT id=N", then the reason.
 */
void	eg_conn_why(struct eg_conn *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* After EG_BUDGET_DUE(): fold the bytes into the session's counts; 0, or
 * -1 when a byte budget is crossed: then the connection is reset and
 * closed (end=budget). */
int	eg_conn_budget_check(struct eg_conn *);
/* For route.c, with egress.lock held: a request about to be allowed
 * takes one of budget_requests, or is refused (its BLOCK line written,
 * its refusal returned and its body written in body; EG_RF_COUNT when
 * allowed); then the lease on the byte budgets. */
enum eg_refusal	eg_conn_budget_refused_locked(struct eg_conn *, char *body,
	    size_t len);
void	eg_conn_budget_lease_locked(struct eg_conn *);
/* The shorter of idle_timeout and, once a side has ended, fin_timeout. */
unsigned eg_conn_idle_ms(const struct eg_conn *);
/* After a plain-HTTP response: CLOSE, then HEAD for the next request. */
void	eg_conn_reset_for_next(struct eg_conn *);
/*
 * Plain HTTP, after its ALLOW: close the upstream and connect afresh to
 * the request's checked addresses (CONNECTING, then FORWARD with what c2u
 * holds).  0, or -1 with no candidate left (the upstream closed).
 */
int	eg_conn_reconnect(struct eg_conn *);

/* tunnel.c */
int	eg_pend_busy(const struct pend *);
void	eg_pend_release(struct eg_conn *, struct pend *);
int	eg_pend_reserve(struct eg_conn *, struct pend *, size_t);
void	eg_pipe_put(struct eg_conn *, struct pend *);
int	eg_pend_append(struct eg_conn *, struct pend *, const void *, size_t);
enum eg_io_st eg_pend_flush(struct eg_conn *, struct pend *, int);
enum eg_io_st eg_tunnel_do(struct eg_conn *);
enum eg_io_st eg_tunnel_do_sni(struct eg_conn *);

/*
 * conn.c, for route.c: the refusal and failure paths of every request.
 * eg_conn_refusal_arg(): the fields of a refusal, zeroed but {target}
 * (c's host and port).  eg_conn_deny_rf(): refusal rf of reason.c's
 * table, its BLOCK or FAIL line then its reply; eg_conn_refuse_rf():
 * the reply only (the line is written).  eg_conn_refuse_body(): the
 * reply of rf with its body written already (under the lock, by
 * eg_conn_budget_refused_locked()).
 */
void	eg_conn_refusal_arg(const struct eg_conn *,
	    struct eg_refusal_arg *);
void	eg_conn_deny_rf(struct eg_conn *, enum eg_refusal,
	    const struct eg_refusal_arg *);
void	eg_conn_refuse_rf(struct eg_conn *, enum eg_refusal,
	    const struct eg_refusal_arg *);
void	eg_conn_refuse_body(struct eg_conn *, enum eg_refusal,
	    const char *body);
void	eg_conn_fail(struct eg_conn *, enum eg_reason);
void	eg_conn_event(struct eg_conn *, struct eg_event *,
	    enum egress_event_type);
/* Decided: the target's addresses (pinned, literal or DNS), then
 * RESOLVING. */
void	eg_conn_resolve(struct eg_conn *);

/* route.c */
/* After a parsed head: 1 if it is a route's (taken), else 0. */
int	eg_route_head(struct eg_conn *);
/* The upstream is connected (RESOLVING/CONNECTING led here). */
void	eg_route_connected(struct eg_conn *);
enum eg_io_st eg_route_do(struct eg_conn *);
void	eg_route_interest(struct eg_conn *, uint32_t *ce, uint32_t *ue);
/* The kept upstream between requests (state HEAD): its interest, and an
 * event on it (it spoke unasked or hung up: closed). */
uint32_t eg_route_idle_interest(const struct eg_conn *);
void	eg_route_idle_event(struct eg_conn *);
int	eg_route_handshaking(const struct eg_conn *);
/* Route fields of an audit event (NULL-safe). */
void	eg_route_event(const struct eg_conn *, struct eg_event *);
/* Frees the route request and the kept upstream's TLS. */
void	eg_route_free(struct eg_conn *);
/* The client connection ends: a kept upstream goes to the worker's pool. */
void	eg_route_release(struct eg_conn *);

/* forward.c */
void	eg_forward_begin(struct eg_conn *);
enum eg_io_st eg_forward_do(struct eg_conn *);
/* A flush's result as a relay step's: OK (go on), AGAIN, or ERR with end. */
struct eg_io_res eg_flush_res(enum eg_io_st, enum eg_end);
/* The request body's framing, and its bytes read with the head queued on
 * c2u (room reserved); -1: a bad chunk. */
int	eg_body_begin(struct eg_conn *, struct eg_body *);
/* The rest of the body from the client, through flush (its failure: the
 * end flush_end); a body over limit: ERR with EG_END_NONE. */
struct eg_io_res eg_body_pump(struct eg_conn *, struct eg_body *,
	    uint64_t limit, enum eg_io_st (*flush)(struct eg_conn *),
	    enum eg_end flush_end);
/* The response head at buf's start (len bytes read of cap): OK when complete
 * and parsed into r (its length in *hl), AGAIN when more is to be read,
 * ERR when malformed, over cap or a 101. */
enum eg_io_st eg_resp_head_get(const uint8_t *buf, size_t len, size_t cap,
	    struct eg_resp *, size_t *hl);
/* An interim (1xx) head of hl bytes at buf's start passed on to the client
 * as it came, what follows moved up (*len): OK, AGAIN or ERR. */
struct eg_io_res eg_resp_interim(struct eg_conn *, uint8_t *buf, size_t *len,
	    size_t hl);
/* The body's framing from the response head (none for a HEAD's). */
void	eg_rframe_init(struct eg_rframe *, const struct eg_resp *, int is_head);
/* Ended by its length (not chunked, not at EOF)? */
int	eg_rframe_ended(const struct eg_rframe *);
/* n bytes from the upstream through the framing: how many are the body's
 * (*extra set if bytes follow it), *done at the last chunk; -1: bad. */
ssize_t	eg_rframe_feed(struct eg_rframe *, const uint8_t *p, ssize_t n,
	    int *done, int *extra);

#endif
