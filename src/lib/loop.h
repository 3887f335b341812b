/*
 * loop.h: the event loop, one per worker thread: epoll fd interest,
 * millisecond timers on a min-heap (the earliest on a timerfd, so that
 * epoll_wait() needs no timeout), and a cross-thread command queue woken
 * through an eventfd.  Small and closed on purpose (redis ae.h).
 */
#ifndef EG_LOOP_H
#define EG_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "err.h"

struct eg_loop;

/* Readiness callback: events are EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP bits. */
typedef void	eg_io_fn(void *arg, uint32_t events);
typedef void	eg_timer_fn(void *arg);
typedef void	eg_cmd_fn(void *arg);

struct eg_io {			/* embedded in its owner */
	int		 fd;
	uint32_t	 events;	/* current interest; 0 = not added */
	int		 added;
	uint64_t	 dropped;	/* the batch it was last dropped in */
	uint64_t	 since;		/* the batch its interest was set in */
	uint64_t	 seen;		/* the last batch epoll reported it in */
	eg_io_fn	*fn;
	void		*arg;
};

struct eg_timer {		/* embedded in its owner */
	uint64_t	 when;		/* monotonic ms */
	size_t		 slot;		/* heap index + 1; 0 = not armed */
	eg_timer_fn	*fn;
	void		*arg;
};

struct eg_loop	*eg_loop_new(struct eg_err *);
void		 eg_loop_free(struct eg_loop *);

/* Run until eg_loop_break(); returns 0, or -1 if epoll fails. */
int		 eg_loop_run(struct eg_loop *);
/* Make eg_loop_run() return after the current batch (loop thread). */
void		 eg_loop_break(struct eg_loop *);
/* Wake the loop from any thread or a signal handler (eventfd write). */
void		 eg_loop_wake(struct eg_loop *);
/* Rounds (batches) the loop has finished so far; any thread (a
 * watchdog: wake the loop, see this advance). */
uint64_t	 eg_loop_rounds(const struct eg_loop *);
/* Called after every batch of events, on the loop thread. */
void		 eg_loop_set_after(struct eg_loop *, void (*)(void *), void *);

uint64_t	 eg_loop_now(const struct eg_loop *);	/* cached, ms */
/* eg_clock_ms(), eg_wall_ms(), eg_clock_us(): clock.h */

void		 eg_io_init(struct eg_io *, int fd, eg_io_fn *, void *);
/* Set the interest of io to events; 0 removes it from epoll (as
 * eg_io_del(): HUP and ERR, which epoll reports whatever the mask, are
 * not heard either). */
int		 eg_io_set(struct eg_loop *, struct eg_io *, uint32_t events);
/*
 * Take io out of epoll; call it before closing io's fd too.  close()
 * alone keeps the registration while a fork()ed child of the program that
 * embeds the library holds a copy of the fd, and epoll would then report
 * the old file to io after io is freed or reused.  Whatever the current
 * batch still holds for io is dropped, even if io is given a new fd
 * meanwhile.
 */
void		 eg_io_del(struct eg_loop *, struct eg_io *);
/*
 * Has epoll had io with (at least) the interest mask since before the
 * current batch began, and not reported it in this batch?  Then nothing
 * mask listens for had happened to io's fd when the batch's epoll_wait()
 * returned: a caller may skip a system call that would only ask the
 * same (a peek at a kept connection before it is used again).
 */
int		 eg_io_quiet(const struct eg_loop *, const struct eg_io *,
		    uint32_t mask);
/* A deleted io takes a new fd; unlike eg_io_init(), events the batch
 * still holds for the old one stay dropped. */
void		 eg_io_set_fd(struct eg_io *, int fd);

void		 eg_timer_init(struct eg_timer *, eg_timer_fn *, void *);
/*
 * (Re)arm t to fire ms from the loop's cached now.  Returns 0, or -1 with
 * t disarmed when the heap could not grow (out of memory).  Arming cannot
 * fail while the armed timers are covered by eg_timer_reserve() (plus a
 * few spare slots the loop keeps for its long-lived timers).
 */
int		 eg_timer_arm(struct eg_loop *, struct eg_timer *, uint64_t ms);
void		 eg_timer_stop(struct eg_loop *, struct eg_timer *);
static inline int
eg_timer_armed(const struct eg_timer *t)
{
	return t->slot != 0;
}
/*
 * Make room in the heap for n more timers, so that arming them never
 * allocates: a connection reserves its timer when it is accepted and
 * unreserves it when it is closed.  Returns 0, or -1 (out of memory;
 * nothing reserved).
 */
int		 eg_timer_reserve(struct eg_loop *, size_t n);
void		 eg_timer_unreserve(struct eg_loop *, size_t n);

/*
 * Run fn(arg) on the loop thread and wait until it has returned.  From
 * any thread but the loop's own.  Returns 0, or -1 if the loop is gone.
 */
int		 eg_loop_call(struct eg_loop *, eg_cmd_fn *, void *arg);

#endif
