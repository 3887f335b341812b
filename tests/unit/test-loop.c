/*
 * test-loop.c: the event loop drops what a batch still holds for an io
 * whose fd was closed earlier in that batch, even after the io was given
 * a new fd (a kept-alive client's next upstream reuses its eg_io).
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <unistd.h>

#include "loop.h"
#include "tap.h"

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
	eg_io_forget(t->loop, &t->b);
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

static void
stop(void *arg)
{
	struct t *t = arg;

	eg_loop_break(t->loop);
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
	eg_timer_init(&t.stop, stop, &t);
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
	return done_testing();
}
