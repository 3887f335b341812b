/*
 * test-pend.c: a tunnel's pending buffer (eg_pend_* in tunnel.c, a
 * struct eg_buf inside) over a real socketpair: a failed append is never
 * flushed as success (issue 11, defect 3's rule: a gap is never sent),
 * a partial send keeps the rest in order, pooled storage goes back to the
 * worker's pool and a larger one (eg_pend_reserve) is freed, and a
 * released buffer works again.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include "alloc.h"
#include "conn-int.h"
#include "core.h"
#include "tap.h"
#include "worker.h"

static struct eg_worker *w;
static struct eg_conn c;
static int fd[2];			/* fd[0]: egressd's side; fd[1]: peer */

/* Everything the peer can read now, up to n bytes, into out. */
static size_t
drain(uint8_t *out, size_t n)
{
	size_t got = 0;
	ssize_t k;

	while (got < n) {
		k = recv(fd[1], out + got, n - got, MSG_DONTWAIT);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

static void
test_failed_append(void)
{
	static uint8_t big[TUNBUF];
	struct pend *p = &c.u2c;
	uint8_t out[64];

	memset(big, 'x', sizeof(big));
	is_int(eg_pend_append(&c, p, "hello", 5), 0, "append: fits");
	is_int(eg_pend_append(&c, p, big, sizeof(big)), -1,
	    "append: past the storage fails");
	ok(eg_pend_busy(p), "failed: the earlier bytes are still pending");
	is_int(eg_pend_flush(&c, p, fd[0]), EG_IO_ERR,
	    "flush after a failed append is an error, not success");
	is_int(drain(out, sizeof(out)), 0,
	    "... and sends nothing (no reply with a gap in it)");
	is_int(eg_pend_append(&c, p, "!", 1), -1,
	    "a later append fails too (the error is sticky)");
	eg_pend_release(&c, p);
	ok(!eg_pend_busy(p), "release: empty");
	is_int(w->nbufpool, 1, "release: the storage is back in the pool");
	is_int(eg_pend_append(&c, p, "abc", 3), 0,
	    "after release: an append works again");
	is_int(w->nbufpool, 0, "... on the pooled storage");
	is_int(eg_pend_flush(&c, p, fd[0]), EG_IO_OK, "flush: all out");
	is_int(drain(out, sizeof(out)), 3, "the peer gets 3 bytes");
	ok(memcmp(out, "abc", 3) == 0, "... abc");
	is_int(w->nbufpool, 1, "flushed: the storage is back in the pool");
}

static void
test_partial(void)
{
	static uint8_t in[TUNBUF], out[TUNBUF + 1];
	struct pend *p = &c.u2c;
	enum eg_io_st r;
	size_t got = 0, i;
	int again = 0, rounds = 0;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + i / 251);
	is_int(eg_pend_append(&c, p, in, sizeof(in)), 0,
	    "partial: a full buffer's worth fits");
	while ((r = eg_pend_flush(&c, p, fd[0])) == EG_IO_AGAIN &&
	    rounds++ < 10000) {
		again = 1;
		got += drain(out + got, sizeof(out) - got);
	}
	is_int(r, EG_IO_OK, "partial: flushed in the end");
	ok(again, "partial: the peer took it in pieces (EG_IO_AGAIN seen)");
	got += drain(out + got, sizeof(out) - got);
	is_int(got, sizeof(in), "partial: every byte arrived");
	ok(memcmp(out, in, sizeof(in)) == 0, "partial: in order");
	ok(!eg_pend_busy(p), "partial: nothing pending");
	is_int(w->nbufpool, 1, "partial: the storage is back in the pool");
}

static void
test_reserve(void)
{
	static uint8_t in[3 * TUNBUF], out[3 * TUNBUF];
	struct pend *p = &c.c2u;
	size_t got = 0, i;
	int rounds = 0;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i % 253);
	is_int(eg_pend_reserve(&c, p, sizeof(in)), 0,
	    "reserve: more than TUNBUF");
	is_int(w->nbufpool, 1, "reserve: not from the pool");
	is_int(eg_pend_append(&c, p, in, sizeof(in)), 0,
	    "reserve: that many bytes fit");
	is_int(eg_pend_append(&c, p, "x", 1), -1, "reserve: one more does not");
	eg_pend_release(&c, p);
	is_int(w->nbufpool, 1, "release: a larger buffer is freed, not pooled");

	is_int(eg_pend_reserve(&c, p, sizeof(in)), 0, "reserve again");
	is_int(eg_pend_append(&c, p, in, sizeof(in)), 0, "... and fill it");
	while (eg_pend_flush(&c, p, fd[0]) == EG_IO_AGAIN && rounds++ < 10000)
		got += drain(out + got, sizeof(out) - got);
	got += drain(out + got, sizeof(out) - got);
	is_int(got, sizeof(in), "reserve: every byte arrived");
	ok(memcmp(out, in, sizeof(in)) == 0, "reserve: in order");
	is_int(w->nbufpool, 1, "flushed: the larger buffer is freed");

	is_int(eg_pend_append(&c, p, "0123456789", 10), 0, "busy: 10 bytes");
	is_int(eg_pend_reserve(&c, p, sizeof(in)), 0,
	    "reserve on a busy buffer: a no-op");
	is_int(eg_pend_append(&c, p, in, TUNBUF), -1,
	    "... it still holds TUNBUF only");
	eg_pend_release(&c, p);
	is_int(w->nbufpool, 1, "released to the pool");
}

int
main(void)
{
	int sz = 4096;
	void *b;

	if ((w = eg_calloc(1, sizeof(*w))) == NULL)
		return 1;
	c.w = w;
	c.c2u.pipe[0] = c.c2u.pipe[1] = -1;
	c.u2c.pipe[0] = c.u2c.pipe[1] = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == -1)
		return 1;
	/* small socket buffers, so that a flush is partial */
	setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	fcntl(fd[0], F_SETFL, O_NONBLOCK);

	test_failed_append();
	test_partial();
	test_reserve();

	while ((b = w->bufpool) != NULL) {
		w->bufpool = *(void **)b;
		eg_free(b);
	}
	eg_free(w);
	close(fd[0]);
	close(fd[1]);
	return done_testing();
}
