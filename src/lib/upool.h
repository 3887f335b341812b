/*
 * upool.h: idle upstream connections kept for reuse, one pool per worker
 * (loop thread only, no lock).  An entry is an open socket to one
 * (session, kind, host, port, address): never shared across sessions,
 * never handed out for another host or address.  Bounded (at most
 * EG_UPOOL_MAX entries, and the caller's smaller limit; the oldest goes
 * first), each closed after its idle time, or at once when its peer
 * closes or says anything while idle.  Generic on purpose: plain HTTP
 * uses kind EG_UPOOL_HTTP; another forwarder (routes) takes its own kind.
 * Private to libegress.
 */
#ifndef EG_UPOOL_H
#define EG_UPOOL_H

#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "loop.h"

#define EG_UPOOL_MAX	64	/* entries per worker, whatever the limit */

enum eg_upool_kind {
	EG_UPOOL_HTTP = 1	/* plain HTTP (forward.c) */
};

struct eg_session;

struct eg_upent {
	struct eg_upent		*prev, *next;	/* in use: most recent first;
						   free: next only */
	struct eg_upool		*pool;
	struct eg_session	*sess;		/* a reference */
	unsigned		 kind;
	uint16_t		 port;
	struct sockaddr_storage	 addr;
	struct eg_io		 io;		/* read interest: any event
						   while idle closes it */
	uint64_t		 deadline;	/* loop ms */
	struct eg_host		 host;		/* as the request named it */
};

struct eg_upool {
	struct eg_loop		*loop;
	/*
	 * Fixed slots, never freed while the loop runs: an event of the
	 * current batch may still name an entry's io after it was taken or
	 * closed (loop.c skips it by its dropped mark).
	 */
	struct eg_upent		 ent[EG_UPOOL_MAX];
	struct eg_upent		*head, *tail;	/* in use */
	struct eg_upent		*free;
	unsigned		 n;
	struct eg_timer		 tmo;		/* the earliest deadline */
	int			 tres;		/* holds a timer slot */
	uint64_t		 reused, stored;	/* counts, for tests */
};

void	eg_upool_init(struct eg_upool *, struct eg_loop *);
/* Close every entry and give the timer slot back. */
void	eg_upool_free(struct eg_upool *);

/*
 * Keep fd (connected to addr, for sess/kind/host/port) for idle_ms.
 * limit (at most EG_UPOOL_MAX) bounds the entries; a full pool closes its
 * oldest.  The pool owns fd either way: 0 kept, -1 closed (no limit, no
 * timer slot).
 */
int	eg_upool_put(struct eg_upool *, struct eg_session *, unsigned kind,
	    const struct eg_host *, uint16_t port,
	    const struct sockaddr_storage *addr, int fd, unsigned idle_ms,
	    unsigned limit);

/*
 * An idle socket for sess/kind/host/port to one of addrs[0..naddr), most
 * recent first, still open (a peek finds neither EOF nor bytes): its fd,
 * now the caller's, with *which the index of its address; or -1.
 */
int	eg_upool_get(struct eg_upool *, struct eg_session *, unsigned kind,
	    const struct eg_host *, uint16_t port,
	    const struct sockaddr_storage *addrs, size_t naddr, size_t *which);

/* Close e (an entry in use): 1, or 0 if it was not in use. */
int	eg_upool_drop_one(struct eg_upent *);

/*
 * Close the entries of sess (NULL: all) for which keep() (NULL: none)
 * returns 0; the count closed.
 */
unsigned eg_upool_drop(struct eg_upool *, struct eg_session *,
	    int (*keep)(void *arg, const struct eg_upent *), void *arg);

#endif
