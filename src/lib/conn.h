/*
 * conn.h: what the workers and the control calls ask of connections
 * (conn.c, and the upstream pools of forward.c and route.c), and the
 * phase budgets' count.  Private to libegress.
 */
#ifndef EG_CONN_H
#define EG_CONN_H

#include <sys/socket.h>

#include "event.h"

struct eg_budget;
struct eg_lsock;
struct eg_phase;
struct eg_session;
struct eg_worker;

/* conn.c */
/* Close every connection of sess on this worker (end=session_closed);
 * returns how many were tunnels (owed a CLOSE). */
unsigned eg_conn_close_session(struct eg_worker *, struct eg_session *);
void	eg_conn_accept(struct eg_worker *, struct eg_lsock *, int fd,
	    const struct sockaddr *, socklen_t);
void	eg_conn_reap(struct eg_worker *);
void	eg_conn_pool_drain(struct eg_worker *);
/* route.c: close the worker's idle upstream connections of routes. */
void	eg_route_pool_drain(struct eg_worker *);
/* Close connections of sess that cfg/phase no longer allow; count. */
unsigned eg_conn_recheck(struct eg_worker *, struct eg_session *,
	    enum eg_end);
void	eg_conn_close_all(struct eg_worker *, enum eg_end);
/* A new count (caller holds egress.lock for writing): after a phase
 * switch, and after a reload when eg_budget_changed(old, new). */
void	eg_budget_reset(struct eg_budget *);
int	eg_budget_changed(const struct eg_phase *, const struct eg_phase *);
/* forward.c: close the idle upstream connections of sess (NULL: every
 * session) kept for plain HTTP whose host its phase no longer allows. */
unsigned eg_forward_pool_recheck(struct eg_worker *, struct eg_session *);

#endif
