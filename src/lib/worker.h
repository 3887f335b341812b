/*
 * worker.h: the worker threads (struct eg_worker): creating and freeing them, their loop's
 * entry point, the snapshot of own addresses they hold, and the commands
 * the control calls run on every loop.  The per-client table (also in
 * worker.c) is declared here too, for conn.c.  Private to libegress.
 */
#ifndef EG_WORKER_H
#define EG_WORKER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "core.h"
#include "err.h"
#include "event.h"
#include "loop.h"
#include "upool.h"

struct eg_cfg;
struct eg_conn;
struct eg_dns;
struct eg_lio;
struct eg_ownaddr;
struct eg_session;

/* A worker thread: its loop, its connections and pools (loop thread
 * only, unless said). */
struct eg_worker {
	struct egress		*ex;
	unsigned		 idx;
	pthread_t		 thr;
	int			 thr_started;
	struct eg_loop		*loop;
	struct eg_dns		*dns;
	struct eg_ownaddr	*own;	/* own addresses: loop thread only */
	struct eg_cfg		*cfg;	/* a reference on the snapshot new
					   connections start with (until
					   their decision): loop thread only */
	struct eg_lio		*lio;
	size_t			 nlio;
	struct eg_lio		*lio_dead;	/* replaced; freed after the
						   batch (events may name it) */
	struct eg_lio		*slio;		/* sessions' listeners */
	struct eg_session	*sdead;		/* released after the batch
						   (linked by dnext[idx]) */
	struct eg_lio		*lio_next;	/* a reload's, allocated
						   before its swap */
	struct eg_timer		 accept_pause;
	int			 paused;
	struct eg_audit_batch	 batch;		/* lines waiting (audit.h) */
	struct eg_timer		 batch_flush;	/* ...at most this long */
	struct eg_conn		*conns;		/* every live connection */
	struct eg_conn		*dead;		/* freed after the batch */
	/* free lists (eg_freelist_get()) */
	void			*connpool;	/* freed ones, for reuse */
	unsigned		 nconnpool;
	void			*headpool;	/* request head buffers */
	unsigned		 nheadpool;
	void			*bufpool;	/* free tunnel buffers */
	unsigned		 nbufpool;
	void			*routepool;	/* route.c: idle upstream
						   connections of routes */
	int			 pipes[64][2];	/* free splice pipes */
	unsigned		 npipes;
	int			 stopped;
	struct eg_upool		 upool;		/* idle upstream connections */
	uint8_t			 scratch[65536];
};

/* ex->cfg->workers loops (0: one per CPU), each with its DNS channel and
 * its interest in ex->ls.  On error ex->nw counts the ones to free. */
int	eg_workers_create(struct egress *, struct eg_err *);

/* pthread entry point of worker arg: runs its loop until egress_stop(). */
void	*eg_worker_main(void *arg);

/* Close every connection and free the workers (threads joined). */
void	eg_workers_free(struct egress *);

/* Free the per-client table. */
void	eg_clients_free(struct egress *);

/*
 * A snapshot of egressd's own addresses from the listeners ls (and ls2,
 * may be NULL), the admin API's TCP listener (admin: its bound address,
 * eg_admin_tcp_addr(); NULL: none) and the interface addresses; NULL
 * when out of memory.
 */
struct eg_ownaddr *eg_own_build(struct egress *, const struct eg_lsock *ls,
	    size_t nls, const struct eg_lsock *ls2, size_t nls2,
	    const struct sockaddr_storage *admin);

/* Give own (the caller's reference) to every worker and to ex->own. */
void	eg_own_publish(struct egress *, struct eg_ownaddr *own);

/* On every loop: close what sess's current phase forbids; the count. */
unsigned eg_workers_close_forbidden(struct egress *, struct eg_session *,
	    enum eg_end);

/*
 * On every loop: start accepting on session s's listeners (on), or stop
 * and close every connection of s (end=session_closed); returns the
 * tunnels closed.  Each loop keeps a reference to s until its batch ends.
 */
unsigned eg_workers_session(struct egress *, struct eg_session *s, int on);

/*
 * Before a reload's swap: each worker's array for n listeners (so that
 * taking them up cannot fail).  -1 (nothing allocated) out of memory.
 */
int	eg_workers_prepare(struct egress *, size_t n);
/* A failed reload: drop what eg_workers_prepare() allocated. */
void	eg_workers_unprepare(struct egress *);
/* On every loop: take up the new ex->ls and DNS servers (a reload). */
void	eg_workers_reconfigure(struct egress *);

/* worker.c: the per-client connection table */
int	eg_client_acquire(struct egress *, const struct sockaddr *,
	    unsigned max);
void	eg_client_release(struct egress *, const struct sockaddr *);

#endif
