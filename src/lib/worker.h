/*
 * worker.h: the worker threads: creating and freeing them, their loop's
 * entry point, the snapshot of own addresses they hold, and the commands
 * the control calls run on every loop.  The per-client table (also in
 * worker.c) is declared here too, for conn.c.  Private to libegress.
 */
#ifndef EG_WORKER_H
#define EG_WORKER_H

#include <stddef.h>

#include "core.h"
#include "err.h"
#include "event.h"

struct eg_ownaddr;

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
 * may be NULL), the admin API's TCP listener and the interface
 * addresses; NULL when out of memory.
 */
struct eg_ownaddr *eg_own_build(struct egress *, const struct eg_lsock *ls,
	    size_t nls, const struct eg_lsock *ls2, size_t nls2);

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
