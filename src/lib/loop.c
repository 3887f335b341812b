/*
 * loop.c: epoll readiness, a binary min-heap of timers, and a command
 * queue other threads use to run a function on this loop and wait for
 * it (how the admin side switches phases without sharing state).
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <pthread.h>
#include <unistd.h>

#include "alloc.h"
#include "loop.h"

#define LOOP_MAXEV	256
#define LOOP_TIMERS	64	/* heap slots allocated with the loop */
#define LOOP_SPARE	8	/* slots kept beyond the reserved ones, for the
				   few long-lived unreserved timers (DNS,
				   accept pause) */

struct loop_cmd {
	eg_cmd_fn	*fn;
	void		*arg;
	int		 done;
	struct loop_cmd	*next;
};

struct eg_loop {
	int		  epfd;
	struct eg_io	  wake;		/* eventfd */
	struct eg_io	  tick;		/* timerfd: the earliest timer */
	uint64_t	  tick_when;	/* what it is set for (ms), 0: not */
	int		  stop;
	uint64_t	  now;
	uint64_t	  batch;	/* epoll_wait() rounds, from 1 */
	uint64_t	  rounds;	/* atomic: batch, once it is done
					   (eg_loop_rounds) */
	struct eg_timer	**heap;
	size_t		  nheap, capheap;
	size_t		  nreserved;	/* eg_timer_reserve() */
	void		(*after)(void *);
	void		 *after_arg;

	pthread_mutex_t	  mtx;		/* guards cmds and done flags */
	pthread_cond_t	  cv;
	struct loop_cmd	 *cmds, **cmds_tail;
	int		  closed;
};

static void
loop_run_cmds(struct eg_loop *loop)
{
	struct loop_cmd *c, *next;

	pthread_mutex_lock(&loop->mtx);
	c = loop->cmds;
	loop->cmds = NULL;
	loop->cmds_tail = &loop->cmds;
	pthread_mutex_unlock(&loop->mtx);
	for (; c != NULL; c = next) {
		next = c->next;
		c->fn(c->arg);
		pthread_mutex_lock(&loop->mtx);
		c->done = 1;
		pthread_cond_broadcast(&loop->cv);
		pthread_mutex_unlock(&loop->mtx);
	}
}

/* Read the 8-byte count of an eventfd or a timerfd: it stops reporting. */
static void
counter_read(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == -1 && errno == EINTR)
		;
}

static void
loop_wake_cb(void *arg, uint32_t events)
{
	struct eg_loop *loop = arg;

	(void)events;
	counter_read(loop->wake.fd);
	loop_run_cmds(loop);
}

/* The timerfd fired: the timers due run after the round's events. */
static void
loop_tick_cb(void *arg, uint32_t events)
{
	struct eg_loop *loop = arg;

	(void)events;
	counter_read(loop->tick.fd);
	loop->tick_when = 0;
}

struct eg_loop *
eg_loop_new(struct eg_err *err)
{
	struct eg_loop *loop;
	int fd, tfd;

	if ((loop = eg_calloc(1, sizeof(*loop))) == NULL) {
		eg_err_set(err, errno, "out of memory");
		return NULL;
	}
	if ((loop->heap = eg_calloc(LOOP_TIMERS, sizeof(*loop->heap))) ==
	    NULL) {
		eg_err_set(err, errno, "out of memory");
		eg_free(loop);
		return NULL;
	}
	loop->capheap = LOOP_TIMERS;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (loop->epfd == -1 || fd == -1 || tfd == -1) {
		eg_err_set(err, errno, "epoll/eventfd/timerfd: %s",
		    strerror(errno));
		if (tfd != -1)
			close(tfd);
		if (fd != -1)
			close(fd);
		if (loop->epfd != -1)
			close(loop->epfd);
		eg_free(loop->heap);
		eg_free(loop);
		return NULL;
	}
	pthread_mutex_init(&loop->mtx, NULL);
	pthread_cond_init(&loop->cv, NULL);
	loop->cmds_tail = &loop->cmds;
	loop->now = eg_clock_ms();
	eg_io_init(&loop->wake, fd, loop_wake_cb, loop);
	eg_io_set(loop, &loop->wake, EPOLLIN);
	eg_io_init(&loop->tick, tfd, loop_tick_cb, loop);
	eg_io_set(loop, &loop->tick, EPOLLIN);
	return loop;
}

void
eg_loop_free(struct eg_loop *loop)
{
	if (loop == NULL)
		return;
	/* Anyone still waiting in eg_loop_call() is released. */
	pthread_mutex_lock(&loop->mtx);
	loop->closed = 1;
	pthread_mutex_unlock(&loop->mtx);
	loop_run_cmds(loop);
	close(loop->wake.fd);
	close(loop->tick.fd);
	close(loop->epfd);
	eg_free(loop->heap);
	pthread_mutex_destroy(&loop->mtx);
	pthread_cond_destroy(&loop->cv);
	eg_free(loop);
}

void
eg_loop_set_after(struct eg_loop *loop, void (*fn)(void *), void *arg)
{
	loop->after = fn;
	loop->after_arg = arg;
}

uint64_t
eg_loop_now(const struct eg_loop *loop)
{
	return loop->now;
}

void
eg_loop_break(struct eg_loop *loop)
{
	loop->stop = 1;
}

uint64_t
eg_loop_rounds(const struct eg_loop *loop)
{
	return __atomic_load_n(&loop->rounds, __ATOMIC_RELAXED);
}

void
eg_loop_wake(struct eg_loop *loop)
{
	uint64_t one = 1;
	ssize_t n;

	/* async-signal-safe: a single write(2) */
	n = write(loop->wake.fd, &one, sizeof(one));
	(void)n;
}

int
eg_loop_call(struct eg_loop *loop, eg_cmd_fn *fn, void *arg)
{
	struct loop_cmd c = { fn, arg, 0, NULL };

	pthread_mutex_lock(&loop->mtx);
	if (loop->closed) {
		pthread_mutex_unlock(&loop->mtx);
		return -1;
	}
	*loop->cmds_tail = &c;
	loop->cmds_tail = &c.next;
	pthread_mutex_unlock(&loop->mtx);
	eg_loop_wake(loop);
	pthread_mutex_lock(&loop->mtx);
	while (!c.done)
		pthread_cond_wait(&loop->cv, &loop->mtx);
	pthread_mutex_unlock(&loop->mtx);
	return 0;
}

void
eg_io_init(struct eg_io *io, int fd, eg_io_fn *fn, void *arg)
{
	io->fd = fd;
	io->events = 0;
	io->added = 0;
	io->dropped = 0;
	io->since = 0;
	io->seen = 0;
	io->fn = fn;
	io->arg = arg;
}

int
eg_io_set(struct eg_loop *loop, struct eg_io *io, uint32_t events)
{
	struct epoll_event ev;
	int op;

	if (io->added && io->events == events)
		return 0;
	/*
	 * No interest leaves epoll rather than stay with an empty mask:
	 * epoll reports EPOLLHUP and EPOLLERR whatever the mask, so a muted
	 * socket that is reset would be reported on every round (a busy
	 * loop), and the close that follows needs no second call.
	 */
	if (events == 0) {
		eg_io_del(loop, io);
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = io;
	if (!io->added)
		op = EPOLL_CTL_ADD;
	else
		op = EPOLL_CTL_MOD;
	if (epoll_ctl(loop->epfd, op, io->fd, &ev) == -1)
		return -1;
	io->added = 1;
	io->events = events;
	io->since = loop->batch;
	return 0;
}

void
eg_io_del(struct eg_loop *loop, struct eg_io *io)
{
	if (!io->added)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->added = 0;
	io->events = 0;
	io->dropped = loop->batch;
}

int
eg_io_quiet(const struct eg_loop *loop, const struct eg_io *io,
    uint32_t mask)
{
	return io->added && (io->events & mask) == mask &&
	    io->since < loop->batch && io->seen != loop->batch;
}

void
eg_io_set_fd(struct eg_io *io, int fd)
{
	io->fd = fd;
}

/* --- timers: binary min-heap on (when), slots are 1-based --------------- */

static void
heap_swap(struct eg_loop *loop, size_t a, size_t b)
{
	struct eg_timer *t = loop->heap[a];

	loop->heap[a] = loop->heap[b];
	loop->heap[b] = t;
	loop->heap[a]->slot = a + 1;
	loop->heap[b]->slot = b + 1;
}

static void
heap_up(struct eg_loop *loop, size_t i)
{
	while (i > 0 && loop->heap[(i - 1) / 2]->when > loop->heap[i]->when) {
		heap_swap(loop, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
heap_down(struct eg_loop *loop, size_t i)
{
	size_t l, r, m;

	for (;;) {
		l = 2 * i + 1;
		r = l + 1;
		m = i;
		if (l < loop->nheap && loop->heap[l]->when < loop->heap[m]->when)
			m = l;
		if (r < loop->nheap && loop->heap[r]->when < loop->heap[m]->when)
			m = r;
		if (m == i)
			return;
		heap_swap(loop, i, m);
		i = m;
	}
}

void
eg_timer_init(struct eg_timer *t, eg_timer_fn *fn, void *arg)
{
	t->when = 0;
	t->slot = 0;
	t->fn = fn;
	t->arg = arg;
}

void
eg_timer_stop(struct eg_loop *loop, struct eg_timer *t)
{
	size_t i;

	if (t->slot == 0)
		return;
	i = t->slot - 1;
	t->slot = 0;
	loop->nheap--;
	if (i == loop->nheap)
		return;
	loop->heap[i] = loop->heap[loop->nheap];
	loop->heap[i]->slot = i + 1;
	heap_up(loop, i);
	heap_down(loop, i);
}

/* Make the heap hold at least want slots; -1 (nothing changed) if not. */
static int
heap_grow(struct eg_loop *loop, size_t want)
{
	struct eg_timer **nh;
	size_t ncap = loop->capheap ? loop->capheap : LOOP_TIMERS;

	if (want <= loop->capheap)
		return 0;
	while (ncap < want) {
		if (ncap > SIZE_MAX / 2 / sizeof(*nh))
			return -1;
		ncap *= 2;
	}
	if ((nh = eg_realloc(loop->heap, ncap * sizeof(*nh))) == NULL)
		return -1;
	loop->heap = nh;
	loop->capheap = ncap;
	return 0;
}

int
eg_timer_reserve(struct eg_loop *loop, size_t n)
{
	if (n > SIZE_MAX - LOOP_SPARE - loop->nreserved ||
	    heap_grow(loop, loop->nreserved + n + LOOP_SPARE) == -1)
		return -1;
	loop->nreserved += n;
	return 0;
}

void
eg_timer_unreserve(struct eg_loop *loop, size_t n)
{
	loop->nreserved -= n < loop->nreserved ? n : loop->nreserved;
}

int
eg_timer_arm(struct eg_loop *loop, struct eg_timer *t, uint64_t ms)
{
	eg_timer_stop(loop, t);
	/* never for a reserved timer: the heap has a slot for each */
	if (loop->nheap == loop->capheap &&
	    heap_grow(loop, loop->nheap + 1) == -1)
		return -1;	/* disarmed, and the caller is told */
	t->when = loop->now + ms;
	loop->heap[loop->nheap] = t;
	t->slot = ++loop->nheap;
	heap_up(loop, loop->nheap - 1);
	return 0;
}

/*
 * The timeout of the next epoll_wait(): 0 when a timer is due, else none,
 * the earliest timer being on the timerfd.  A timeout makes the kernel
 * start and cancel a timer at every wait: 0.4 us here, and 1.8 us when
 * the deadline is nearer than its clock tick, for it then programs its
 * timer device each time (bench/epoll-timeout.c).  The timerfd is set
 * again only when the earliest timer is sooner than what it is set for;
 * set for a timer since stopped or moved on, it fires for nothing once.
 */
static int
loop_timeout(struct eg_loop *loop)
{
	struct itimerspec its;
	uint64_t w;

	if (loop->nheap == 0)
		return -1;
	w = loop->heap[0]->when;
	if (w <= loop->now)
		return 0;
	if (loop->tick_when != 0 && loop->tick_when <= w)
		return -1;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(w / 1000);
	its.it_value.tv_nsec = (long)(w % 1000) * 1000000;
	if (timerfd_settime(loop->tick.fd, TFD_TIMER_ABSTIME, &its,
	    NULL) == -1)	/* (cannot fail with a valid time) */
		return w - loop->now > 60000 ? 60000 : (int)(w - loop->now);
	loop->tick_when = w;
	return -1;
}

static void
loop_fire_timers(struct eg_loop *loop)
{
	struct eg_timer *t;

	while (loop->nheap > 0 && loop->heap[0]->when <= loop->now) {
		t = loop->heap[0];
		eg_timer_stop(loop, t);
		t->fn(t->arg);
	}
}

int
eg_loop_run(struct eg_loop *loop)
{
	struct epoll_event ev[LOOP_MAXEV];
	struct eg_io *io;
	int i, n;

	loop->stop = 0;
	while (!loop->stop) {
		n = epoll_wait(loop->epfd, ev, LOOP_MAXEV, loop_timeout(loop));
		if (n == -1 && errno != EINTR)
			return -1;
		loop->now = eg_clock_ms();
		loop->batch++;
		/* every io reported is registered, so its owner is alive */
		for (i = 0; i < n; i++)
			((struct eg_io *)ev[i].data.ptr)->seen = loop->batch;
		for (i = 0; i < n; i++) {
			io = ev[i].data.ptr;
			/*
			 * Interest dropped earlier in this batch: skip, even
			 * when io was given a new fd since (a kept-alive
			 * client's next upstream): the event is the old one's.
			 */
			if (io->fd == -1 || !io->added ||
			    io->dropped == loop->batch)
				continue;
			io->fn(io->arg, ev[i].events);
		}
		loop_fire_timers(loop);
		if (loop->after != NULL)
			loop->after(loop->after_arg);
		__atomic_store_n(&loop->rounds, loop->batch, __ATOMIC_RELAXED);
	}
	/* nobody runs commands on this loop any more: refuse new ones and
	 * release the callers already waiting */
	pthread_mutex_lock(&loop->mtx);
	loop->closed = 1;
	pthread_mutex_unlock(&loop->mtx);
	loop_run_cmds(loop);
	return 0;
}
