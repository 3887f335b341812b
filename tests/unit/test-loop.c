/*
 * test-loop.c: the event loop drops what a batch still holds for an io
 * whose fd was closed earlier in that batch, even after the io was given
 * a new fd (a kept-alive client's next upstream reuses its eg_io).  And
 * timers under out of memory (eg_alloc_fail_at()): reserved timers arm
 * without allocating, a failed reservation changes nothing, and a failed
 * arm says so instead of leaving the timer silently disarmed.  And an
 * io forgotten and closed while another process holds a copy of its fd
 * (a fork()ed child before its exec: egressd replay -j forks keepers
 * while its proxy runs) hears nothing more of the old socket, also once
 * the io struct is given a new fd (a pooled connection reused; without
 * the pool, freed memory: ASan's heap-use-after-free in eg_loop_run).
 * And eg_io_quiet(): true only for an io in epoll since before the round
 * and not reported in it, whichever order the round's events come in.
 * And the timerfd that holds the earliest timer: set again for a timer
 * armed sooner than it is set for.
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <unistd.h>

#include "alloc.h"
#include "loop.h"
#include "tap.h"

#define NT	300

static void
nop(void *arg)
{
	(void)arg;
}

static void
timers_oom(void)
{
	static struct eg_timer tm[NT + 1];
	struct eg_loop *loop;
	struct eg_err err;
	size_t i, armed;
	int fails;

	eg_alloc_fail_at(0);
	if ((loop = eg_loop_new(&err)) == NULL) {
		ok(0, "loop for the timer tests");
		return;
	}
	for (i = 0; i <= NT; i++)
		eg_timer_init(&tm[i], nop, NULL);
	ok(eg_timer_reserve(loop, NT) == 0, "reserve %d timer slots", NT);
	/* from now on every allocation fails: reserved timers still arm */
	eg_alloc_fail_at(1);
	fails = 0;
	for (i = 0; i < NT; i++) {
		eg_alloc_fail_at(1);
		fails += eg_timer_arm(loop, &tm[i], 1000 + i) != 0;
	}
	is_int(fails, 0, "arming reserved timers never allocates");
	eg_alloc_fail_at(1);
	ok(eg_timer_reserve(loop, 100000) == -1,
	    "a reservation without memory fails");
	for (armed = 0, i = 0; i < NT; i++)
		armed += tm[i].slot != 0;
	is_int((int)armed, NT, "... and every armed timer stays armed");
	/* past the reservation and the spare slots, an arm that needs
	 * memory and gets none says so */
	for (i = 0; i < 1024; i++) {
		static struct eg_timer extra[1024];

		eg_timer_init(&extra[i], nop, NULL);
		eg_alloc_fail_at(1);
		if (eg_timer_arm(loop, &extra[i], 5) == -1)
			break;
	}
	ok(i < 1024, "an unreserved arm that cannot grow the heap fails (-1)");
	for (armed = 0, i = 0; i < NT; i++)
		armed += tm[i].slot != 0;
	is_int((int)armed, NT, "... the other timers are untouched");
	eg_alloc_fail_at(0);
	for (i = 0; i < NT; i++)
		eg_timer_stop(loop, &tm[i]);
	eg_timer_unreserve(loop, NT);
	eg_loop_free(loop);
}

struct t {
	struct eg_loop	*loop;
	struct eg_io	 a, b;
	int		 bpair[2];	/* b's current socketpair */
	struct eg_timer	 stop;		/* ends the test whatever happens */
	int		 na, nb, nb_first, nb_new;
	int		 batches;
};

static void
b_cb(void *arg, uint32_t events)
{
	struct t *t = arg;
	char c;

	(void)events;
	t->nb++;
	if (t->batches == 0)
		t->nb_first++;
	if (t->b.fd == t->bpair[0] && recv(t->b.fd, &c, 1, 0) == 1 &&
	    c == 'n')
		t->nb_new++;
}

/* a's event comes first in the batch: it replaces b's fd, as
 * conn_reset_for_next() and conn_connect_next() do */
static void
a_cb(void *arg, uint32_t events)
{
	struct t *t = arg;
	char c;

	(void)events;
	t->na++;
	(void)recv(t->a.fd, &c, 1, 0);
	eg_io_del(t->loop, &t->b);
	close(t->b.fd);
	close(t->bpair[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, t->bpair) ==
	    -1)
		return;
	t->b.fd = t->bpair[0];
	(void)send(t->bpair[1], "n", 1, 0);
	eg_io_set(t->loop, &t->b, EPOLLIN);
}

static void
after(void *arg)
{
	struct t *t = arg;

	t->batches++;
}

/* ends a test's loop whatever happens (arg: the loop) */
static void
stop(void *arg)
{
	eg_loop_break(arg);
}

/* --- a forgotten fd that a forked child still holds ------------------- */

struct f {
	struct eg_loop	*loop;
	struct eg_io	 x;
	int		 heard, spurious;
};

static void
x_cb(void *arg, uint32_t events)
{
	struct f *f = arg;
	char c;

	(void)events;
	f->heard++;
	if (recv(f->x.fd, &c, 1, 0) != 1)
		f->spurious++;		/* nothing to read on the new fd */
}

/* --- the timerfd: a timer armed sooner than the one it is set for ------- */

struct tfd {
	struct eg_loop	*loop;
	struct eg_io	 p;		/* a pipe's read end */
	struct eg_timer	 late, soon, stopped;
	int		 fired_soon, fired_stopped;
};

static void
tfd_soon(void *arg)
{
	struct tfd *t = arg;

	t->fired_soon++;
	eg_loop_break(t->loop);
}

static void
tfd_stopped(void *arg)
{
	((struct tfd *)arg)->fired_stopped++;
}

/* The pipe speaks once the loop waits with its timerfd set for the late
 * timer: a sooner timer is armed, and one armed earlier is stopped. */
static void
tfd_pipe(void *arg, uint32_t events)
{
	struct tfd *t = arg;
	char c;

	(void)events;
	(void)read(t->p.fd, &c, 1);
	eg_io_del(t->loop, &t->p);
	eg_timer_stop(t->loop, &t->stopped);
	eg_timer_arm(t->loop, &t->soon, 50);
}

static void
timers_timerfd(void)
{
	struct tfd t;
	struct eg_err err;
	uint64_t t0, el;
	int p[2];

	memset(&t, 0, sizeof(t));
	if ((t.loop = eg_loop_new(&err)) == NULL || pipe(p) == -1) {
		ok(0, "loop and pipe for the timerfd test");
		return;
	}
	eg_io_init(&t.p, p[0], tfd_pipe, &t);
	eg_io_set(t.loop, &t.p, EPOLLIN);
	eg_timer_init(&t.late, nop, NULL);
	eg_timer_init(&t.soon, tfd_soon, &t);
	eg_timer_init(&t.stopped, tfd_stopped, &t);
	eg_timer_arm(t.loop, &t.late, 5000);
	eg_timer_arm(t.loop, &t.stopped, 2000);
	(void)write(p[1], "x", 1);
	t0 = eg_clock_ms();
	ok(eg_loop_run(t.loop) == 0, "the loop ran");
	el = eg_clock_ms() - t0;
	ok(t.fired_soon == 1 && el >= 50 && el < 1500,
	    "a timer armed sooner than the timerfd's fires on time (%llu ms, "
	    "not at the 5 s timer)", (unsigned long long)el);
	is_int(t.fired_stopped, 0, "a stopped timer does not fire");
	eg_timer_stop(t.loop, &t.late);
	close(p[0]);
	close(p[1]);
	eg_loop_free(t.loop);
}

static void
forget_shared(void)
{
	struct f f;
	struct eg_timer tm;
	struct eg_err err;
	int oldp[2], newp[2], hold[2], st;
	pid_t pid;
	char c;

	memset(&f, 0, sizeof(f));
	if ((f.loop = eg_loop_new(&err)) == NULL ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, oldp) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, newp) == -1 ||
	    pipe(hold) == -1) {
		ok(0, "loop, socketpairs and pipe for the fork test");
		return;
	}
	eg_io_init(&f.x, oldp[0], x_cb, &f);
	eg_io_set(f.loop, &f.x, EPOLLIN);
	/* the child holds copies of every fd until told to go */
	fflush(stdout);
	if ((pid = fork()) == 0) {
		close(hold[1]);
		while (read(hold[0], &c, 1) == -1)
			;
		_exit(0);
	}
	close(hold[0]);
	ok(pid > 0, "a child holds a copy of the registered fd");
	/* the connection ends; its struct is reused for another socket */
	eg_io_del(f.loop, &f.x);
	close(oldp[0]);
	eg_io_set_fd(&f.x, newp[0]);
	eg_io_set(f.loop, &f.x, EPOLLIN);
	/* the old socket's peer speaks: its file lives on in the child */
	(void)send(oldp[1], "o", 1, 0);
	eg_timer_init(&tm, stop, f.loop);
	eg_timer_arm(f.loop, &tm, 200);
	ok(eg_loop_run(f.loop) == 0, "the loop ran");
	is_int(f.spurious, 0, "no event of the forgotten socket reached the "
	    "io's new fd");
	is_int(f.heard, 0, "... nor any event at all");
	close(hold[1]);
	if (pid > 0)
		(void)waitpid(pid, &st, 0);
	eg_io_del(f.loop, &f.x);
	close(oldp[1]);
	close(newp[0]);
	close(newp[1]);
	eg_loop_free(f.loop);
}

/* --- eg_io_quiet() ----------------------------------------------------- */

struct q {
	struct eg_loop	*loop;
	struct eg_io	 p, k, late;	/* a trigger, a kept one, a new one */
	int		 ppair[2], kpair[2], lpair[2];
	int		 round;
	int		 quiet[3], late_quiet;
};

static void
q_drain(int fd)
{
	char b[16];

	while (recv(fd, b, sizeof(b), 0) > 0)
		;
}

/* p is heard in rounds 1 and 2; k has a byte waiting in round 2 only */
static void
q_p_cb(void *arg, uint32_t events)
{
	struct q *q = arg;

	(void)events;
	q_drain(q->p.fd);
	q->quiet[q->round] = eg_io_quiet(q->loop, &q->k, EPOLLIN);
	if (q->round == 0) {
		/* an interest set in this round: epoll has not been asked */
		eg_io_set(q->loop, &q->late, EPOLLIN);
		q->late_quiet = eg_io_quiet(q->loop, &q->late, EPOLLIN);
		/* p first: epoll reports k after p's callback has run */
		(void)send(q->ppair[1], "p", 1, 0);
		(void)send(q->kpair[1], "k", 1, 0);
	} else if (q->round == 1) {
		(void)send(q->ppair[1], "p", 1, 0);
	} else {
		eg_loop_break(q->loop);
	}
	q->round++;
}

static void
q_k_cb(void *arg, uint32_t events)
{
	struct q *q = arg;

	(void)events;
	q_drain(q->k.fd);
}

static void
quiet(void)
{
	struct q q;
	struct eg_err err;

	memset(&q, 0, sizeof(q));
	if ((q.loop = eg_loop_new(&err)) == NULL ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, q.ppair) ==
	    -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, q.kpair) ==
	    -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, q.lpair) ==
	    -1) {
		ok(0, "loop and socketpairs for eg_io_quiet()");
		return;
	}
	eg_io_init(&q.p, q.ppair[0], q_p_cb, &q);
	eg_io_init(&q.k, q.kpair[0], q_k_cb, &q);
	eg_io_init(&q.late, q.lpair[0], q_k_cb, &q);
	eg_io_set(q.loop, &q.p, EPOLLIN);
	eg_io_set(q.loop, &q.k, EPOLLIN | EPOLLRDHUP);
	(void)send(q.ppair[1], "p", 1, 0);
	ok(eg_loop_run(q.loop) == 0 && q.round == 3, "three rounds ran");
	is_int(q.quiet[0], 1, "an io in epoll, not reported: quiet");
	is_int(q.late_quiet, 0, "an interest set in this round: not quiet");
	is_int(q.quiet[1], 0,
	    "an io reported in this round, still to be handled: not quiet");
	is_int(q.quiet[2], 1, "... and quiet again once read");
	ok(!eg_io_quiet(q.loop, &q.k, EPOLLIN | EPOLLOUT),
	    "not quiet for an interest it does not have");
	eg_io_del(q.loop, &q.k);
	ok(!eg_io_quiet(q.loop, &q.k, EPOLLIN), "not quiet out of epoll");
	close(q.ppair[0]);
	close(q.ppair[1]);
	close(q.kpair[0]);
	close(q.kpair[1]);
	close(q.lpair[0]);
	close(q.lpair[1]);
	eg_loop_free(q.loop);
}

int
main(void)
{
	struct t t;
	struct eg_err err;
	int apair[2];

	memset(&t, 0, sizeof(t));
	t.loop = eg_loop_new(&err);
	ok(t.loop != NULL, "loop created");
	if (t.loop == NULL)
		return done_testing();
	ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, apair) == 0 &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, t.bpair) == 0,
	    "socketpairs");
	eg_io_init(&t.a, apair[0], a_cb, &t);
	eg_io_init(&t.b, t.bpair[0], b_cb, &t);
	eg_io_set(t.loop, &t.a, EPOLLIN);
	eg_io_set(t.loop, &t.b, EPOLLIN);
	/* a ready before b: epoll reports them in that order */
	(void)send(apair[1], "x", 1, 0);
	(void)send(t.bpair[1], "o", 1, 0);
	eg_loop_set_after(t.loop, after, &t);
	eg_timer_init(&t.stop, stop, t.loop);
	eg_timer_arm(t.loop, &t.stop, 300);
	ok(eg_loop_run(t.loop) == 0, "the loop ran");
	is_int(t.na, 1, "a's event was handled");
	/* batch 1: b's event is for the old socket and must be dropped;
	 * a later batch: the new socket's event is handled */
	is_int(t.nb_first, 0, "the stale event of b's old socket was dropped");
	is_int(t.nb, 1, "b's new socket was heard once");
	is_int(t.nb_new, 1, "... with its byte");

	close(apair[0]);
	close(apair[1]);
	close(t.bpair[0]);
	close(t.bpair[1]);
	eg_loop_free(t.loop);

	timers_oom();
	timers_timerfd();
	forget_shared();
	quiet();
	return done_testing();
}
