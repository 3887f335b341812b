/*
 * upool.c: idle upstream connections kept for reuse (upool.h).  One pool
 * per worker, on its loop thread.  An idle entry keeps read interest: the
 * upstream closing it, resetting it, or sending anything at all while no
 * request is outstanding ends it at once (an HTTP server's stray 408 is
 * not the answer to the next request).  One timer for the pool, armed at
 * the earliest deadline; the pool is small, so expiry sweeps all of it.
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "session-int.h"
#include "sessref.h"
#include "upool.h"

static void	upool_timeout(void *);

static void
upent_io(void *arg, uint32_t events)
{
	struct eg_upent *e = arg;

	(void)events;	/* EOF, a reset or stray bytes: not reusable */
	(void)eg_upool_drop_one(e);
}

void
eg_upool_init(struct eg_upool *p, struct eg_loop *loop)
{
	size_t i;

	memset(p, 0, sizeof(*p));
	p->loop = loop;
	for (i = EG_UPOOL_MAX; i > 0; i--) {
		struct eg_upent *e = &p->ent[i - 1];

		e->pool = p;
		eg_io_init(&e->io, -1, upent_io, e);
		e->next = p->free;
		p->free = e;
	}
	eg_timer_init(&p->tmo, upool_timeout, p);
}

/* Unlink e, close its socket, release its session, put the slot back. */
/* Unlink e from the pool's idle list (out of epoll, its session let go)
 * and put it on the free list; its socket is left to the caller. */
static void
upent_unlink(struct eg_upent *e)
{
	struct eg_upool *p = e->pool;

	eg_io_del(p->loop, &e->io);
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		p->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		p->tail = e->prev;
	eg_session_unref(e->sess);
	e->sess = NULL;
	e->prev = NULL;
	e->next = p->free;
	p->free = e;
	p->n--;
}

int
eg_upool_drop_one(struct eg_upent *e)
{
	int fd = e->io.fd;

	if (fd == -1)
		return 0;
	upent_unlink(e);
	close(fd);
	e->io.fd = -1;
	return 1;
}

/* Take e out with its socket open (for reuse): the fd is returned. */
static int
upent_take(struct eg_upent *e)
{
	int fd = e->io.fd;

	upent_unlink(e);
	e->io.fd = -1;		/* not closed by the drop */
	return fd;
}

static void
upool_arm(struct eg_upool *p)
{
	struct eg_upent *e;
	uint64_t now = eg_loop_now(p->loop), first = UINT64_MAX;

	for (e = p->head; e != NULL; e = e->next)
		if (e->deadline < first)
			first = e->deadline;
	if (first == UINT64_MAX) {
		eg_timer_stop(p->loop, &p->tmo);
		return;
	}
	(void)eg_timer_arm(p->loop, &p->tmo, first > now ? first - now : 0);
}

static void
upool_timeout(void *arg)
{
	struct eg_upool *p = arg;
	struct eg_upent *e, *next;
	uint64_t now = eg_loop_now(p->loop);

	for (e = p->head; e != NULL; e = next) {
		next = e->next;
		if (e->deadline <= now)
			(void)eg_upool_drop_one(e);
	}
	upool_arm(p);
}

void
eg_upool_free(struct eg_upool *p)
{
	if (p->loop == NULL)
		return;
	(void)eg_upool_drop(p, NULL, NULL, NULL);
	eg_timer_stop(p->loop, &p->tmo);
	if (p->tres)
		eg_timer_unreserve(p->loop, 1);
	p->tres = 0;
}

static int
sa_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a;
		const struct sockaddr_in *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		    x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a;
		const struct sockaddr_in6 *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		    x->sin6_scope_id == y->sin6_scope_id &&
		    memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
	}
	return 0;
}

static int
upent_is(const struct eg_upent *e, struct eg_session *sess, unsigned kind,
    const struct eg_host *host, uint16_t port)
{
	return e->sess == sess && e->kind == kind && e->port == port &&
	    e->host.len == host->len &&
	    memcmp(e->host.name, host->name, host->len) == 0;
}

int
eg_upool_put(struct eg_upool *p, struct eg_session *sess, unsigned kind,
    const struct eg_host *host, uint16_t port,
    const struct sockaddr_storage *addr, int fd, unsigned idle_ms,
    unsigned limit)
{
	struct eg_upent *e;

	if (limit > EG_UPOOL_MAX)
		limit = EG_UPOOL_MAX;
	if (limit == 0 || idle_ms == 0 || host->len > EG_HOST_MAX ||
	    (!p->tres && eg_timer_reserve(p->loop, 1) == -1)) {
		close(fd);
		return -1;
	}
	p->tres = 1;
	while (p->n >= limit && p->tail != NULL)
		(void)eg_upool_drop_one(p->tail);	/* the oldest */
	e = p->free;
	p->free = e->next;
	e->sess = sess;
	eg_session_ref(sess);
	e->kind = kind;
	e->port = port;
	e->addr = *addr;
	e->host = *host;
	e->deadline = eg_loop_now(p->loop) + idle_ms;
	eg_io_set_fd(&e->io, fd);
	e->prev = NULL;
	e->next = p->head;
	if (p->head != NULL)
		p->head->prev = e;
	else
		p->tail = e;
	p->head = e;
	p->n++;
	p->stored++;
	if (eg_io_set(p->loop, &e->io, EPOLLIN | EPOLLRDHUP) == -1) {
		(void)eg_upool_drop_one(e);
		return -1;
	}
	if (!eg_timer_armed(&p->tmo) || e->deadline < p->tmo.when)
		(void)eg_timer_arm(p->loop, &p->tmo, idle_ms);
	return 0;
}

int
eg_upool_get(struct eg_upool *p, struct eg_session *sess, unsigned kind,
    const struct eg_host *host, uint16_t port,
    const struct sockaddr_storage *addrs, size_t naddr, size_t *which)
{
	struct eg_upent *e, *next;
	uint8_t b;
	ssize_t n;
	size_t i;

	for (e = p->head; e != NULL; e = next) {
		next = e->next;
		if (!upent_is(e, sess, kind, host, port))
			continue;
		for (i = 0; i < naddr; i++)
			if (sa_same(&e->addr, &addrs[i]))
				break;
		if (i == naddr)
			continue;
		/* closed or talking since the loop last looked: not it (no
		 * peek where epoll has said so: eg_io_quiet()) */
		if (!eg_io_quiet(p->loop, &e->io, EPOLLIN | EPOLLRDHUP) &&
		    ((n = recv(e->io.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT)) !=
		    -1 || (errno != EAGAIN && errno != EWOULDBLOCK))) {
			(void)eg_upool_drop_one(e);
			continue;
		}
		*which = i;
		p->reused++;
		return upent_take(e);
	}
	return -1;
}

unsigned
eg_upool_drop(struct eg_upool *p, struct eg_session *sess,
    int (*keep)(void *, const struct eg_upent *), void *arg)
{
	struct eg_upent *e, *next;
	unsigned n = 0;

	for (e = p->head; e != NULL; e = next) {
		next = e->next;
		if (sess != NULL && e->sess != sess)
			continue;
		if (keep != NULL && keep(arg, e))
			continue;
		n += (unsigned)eg_upool_drop_one(e);
	}
	if (p->loop != NULL && p->head == NULL)
		eg_timer_stop(p->loop, &p->tmo);
	return n;
}
