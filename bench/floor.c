/*
 * floor: the "physical floor" for the egressd benchmarks.  A measuring
 * stick, not a proxy anyone should run: the cheapest HTTP CONNECT proxy we
 * could write, with no policy, no logging, no DNS and no timeouts, only the
 * system calls any proxy must make, so we can see how many tunnels/s and
 * round trips/s this machine allows.  It connects wherever the client asks,
 * but never outside 127.0.0.0/8: the host must be a numeric 127.x.x.x or
 * the NAME of --map NAME=IP (without --map, any name means 127.0.0.1);
 * anything else gets 403.  N threads, each with its own epoll and its own
 * SO_REUSEPORT listener; every fd is registered once, edge-triggered, and
 * per-fd "readable"/"writable" flags remember edges until EAGAIN or a
 * short read.  A partial write parks the rest in a pending buffer and stops
 * reading the other side until it drains.
 */

#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEAD_MAX	4096
#define SCRATCH		16384
#define EV		(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
#define RESP(s)		("HTTP/1.1 " s "\r\n\r\n")

enum { S_HEAD, S_CONNECTING, S_RELAY, S_DEAD };

struct half {
	struct conn	*c;
	int		 fd;
	unsigned	 rd:1, wr:1;	/* may read / may write (edge memory) */
	unsigned	 fin:1;		/* peer sends no more (RDHUP/HUP/ERR) */
	unsigned	 hup:1;		/* HUP/ERR: read on to 0 or error */
	unsigned	 eof:1;		/* we saw the end of what it sends */
	char		*pend;		/* bytes still to be written to fd */
	size_t		 poff, plen;
};

struct conn {
	struct half	 h[2];		/* [0] client, [1] upstream */
	int		 st;
	char		*head;		/* CONNECT head, until the 200 */
	size_t		 hlen;
	struct conn	*next;		/* closed this round, freed after it */
};

struct worker {
	int		 ep, lfd;
	struct conn	*dead;
	char		 buf[SCRATCH];
};

static const char *map_name;
static struct in_addr map_ip;

static void
conn_close(struct worker *w, struct conn *c, const char *resp)
{
	if (resp != NULL)
		(void)send(c->h[0].fd, resp, strlen(resp), MSG_NOSIGNAL);
	for (int i = 0; i < 2; i++) {
		if (c->h[i].fd >= 0)
			close(c->h[i].fd);
		free(c->h[i].pend);
	}
	free(c->head);
	c->st = S_DEAD;
	c->next = w->dead;
	w->dead = c;
}

/* Send p to h, keeping what the socket does not take as h's pending bytes. */
static int
xmit(struct half *h, const char *p, size_t n)
{
	ssize_t k = 0;

	if (h->wr && (k = send(h->fd, p, n, MSG_NOSIGNAL)) < 0) {
		if (errno != EAGAIN)
			return -1;
		k = 0;
	}
	if ((size_t)k == n)
		return 0;
	h->wr = 0;
	if ((h->pend = malloc(n - k)) == NULL)
		return -1;
	memcpy(h->pend, p + k, n - k);
	h->poff = 0;
	h->plen = n - k;
	return 0;
}

/* Move s's bytes to d.  Returns -1 on error, 1 once both sides hit EOF. */
static int
pump(struct worker *w, struct half *s, struct half *d)
{
	ssize_t n;

	if (d->plen && d->wr) {
		if ((n = send(d->fd, d->pend + d->poff, d->plen,
		    MSG_NOSIGNAL)) < 0 && errno != EAGAIN)
			return -1;
		n = n < 0 ? 0 : n;
		d->poff += n;
		if ((d->plen -= n) != 0)
			d->wr = 0;
		else {
			free(d->pend);
			d->pend = NULL;
		}
	}
	while (!s->eof && !d->plen) {
		if (!s->rd && !s->fin)
			return 0;	/* drained, peer still open */
		if (!s->rd)
			break;		/* drained after FIN: EOF */
		if ((n = recv(s->fd, w->buf, SCRATCH, 0)) < 0) {
			if (errno != EAGAIN)
				return -1;
			s->rd = 0;
			continue;
		}
		if (n == 0)
			break;
		if (n < SCRATCH && !s->hup)
			s->rd = 0;	/* short read: drained */
		if (xmit(d, w->buf, (size_t)n) < 0)
			return -1;
	}
	if (s->eof || d->plen)
		return 0;
	s->eof = 1;
	if (d->eof)
		return 1;
	return shutdown(d->fd, SHUT_WR) < 0 ? -1 : 0;
}

/* Parse "CONNECT host:port HTTP/1.x" and start connecting upstream. */
static void
start(struct worker *w, struct conn *c, char *body)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev = { .events = EV, .data.ptr = &c->h[1] };
	char *host = c->head + 8, *sp, *colon, *e = "";
	const char *err = NULL;
	struct in_addr a, none = { 0 };
	unsigned long port = 0;
	int fd, one = 1;

	*(char *)memchr(c->head, '\r', c->hlen) = '\0';
	if (strncmp(c->head, "CONNECT ", 8) == 0 &&
	    (sp = strchr(host, ' ')) != NULL &&
	    strncmp(sp, " HTTP/1.", 8) == 0 && (*sp = '\0', 1) &&
	    (colon = strrchr(host, ':')) != NULL && colon != host &&
	    colon[1] >= '0' && colon[1] <= '9') {
		port = strtoul(colon + 1, &e, 10);
		*colon = '\0';
	}
	if (inet_pton(AF_INET, host, &a) == 1)
		sa.sin_addr = a;
	else if (map_name != NULL)
		sa.sin_addr = strcmp(host, map_name) ? none : map_ip;
	sa.sin_port = htons((unsigned short)port);
	if (port == 0 || port > 65535 || *e != '\0')
		err = RESP("400 Bad Request");
	else if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) /* stay in 127/8 */
		err = RESP("403 Forbidden");
	else if ((c->h[1].fd = fd = socket(AF_INET, SOCK_STREAM |
	    SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) ||
	    epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ||
	    xmit(&c->h[1], body, (size_t)(c->head + c->hlen - body)) < 0)
		err = RESP("502 Bad Gateway");
	if (err != NULL)
		conn_close(w, c, err);
	else
		c->st = S_CONNECTING;
}

static void
on_head(struct worker *w, struct conn *c)
{
	struct half *cl = &c->h[0];
	size_t old = c->hlen, room = HEAD_MAX - old, from;
	ssize_t n = recv(cl->fd, c->head + old, room, 0);
	char *end;

	if (n < 0 && errno == EAGAIN)
		cl->rd = 0;
	if (n <= 0) {
		if (cl->rd)
			conn_close(w, c, NULL);	/* EOF or error */
		return;
	}
	c->hlen += (size_t)n;
	if ((size_t)n < room && !cl->hup)
		cl->rd = 0;
	from = old > 3 ? old - 3 : 0;
	if ((end = memmem(c->head + from, c->hlen - from, "\r\n\r\n", 4)))
		start(w, c, end + 4);
	else if (c->hlen == HEAD_MAX || cl->fin)	/* cannot complete */
		conn_close(w, c, NULL);
}

static void
on_event(struct worker *w, struct half *h, uint32_t e)
{
	struct conn *c = h->c;
	socklen_t len = sizeof(int);
	int err = 0;

	if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		h->rd = 1;
	if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		h->wr = 1;
	if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		h->fin = 1;
	if (e & (EPOLLHUP | EPOLLERR))
		h->hup = 1;
	if (c->st == S_HEAD && h->rd) {
		on_head(w, c);
	} else if (c->st == S_CONNECTING && h == &c->h[1]) {
		if ((e & (EPOLLERR | EPOLLHUP)) && (getsockopt(h->fd,
		    SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0))
			conn_close(w, c, RESP("502 Bad Gateway"));
		else if (h->wr) {		/* connected: open the tunnel */
			free(c->head);
			c->head = NULL;
			c->st = S_RELAY;
			if (xmit(&c->h[0], RESP("200 Connection established"),
			    sizeof(RESP("200 Connection established")) - 1) < 0)
				conn_close(w, c, NULL);
		}
	}
	if (c->st == S_RELAY && ((e & EPOLLERR) ||
	    pump(w, &c->h[0], &c->h[1]) != 0 ||
	    pump(w, &c->h[1], &c->h[0]) != 0))
		conn_close(w, c, NULL);
}

static void
on_accept(struct worker *w)
{
	struct epoll_event ev = { .events = EV };
	struct conn *c;
	int fd;

	for (;;) {
		fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0)
			return;
		if ((c = calloc(1, sizeof(*c))) == NULL ||
		    (c->head = malloc(HEAD_MAX)) == NULL) {
			free(c);
			close(fd);
			continue;
		}
		c->h[0] = (struct half){ .c = c, .fd = fd };
		c->h[1] = (struct half){ .c = c, .fd = -1 };
		ev.data.ptr = &c->h[0];
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			conn_close(w, c, NULL);
	}
}

static void *
run(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[256];
	struct half *h;
	struct conn *c;
	int i, n;

	for (;;) {
		n = epoll_wait(w->ep, ev, 256, -1);
		for (i = 0; i < n; i++) {
			if ((h = ev[i].data.ptr) == NULL)
				on_accept(w);
			else if (h->c->st != S_DEAD)	/* closed this round */
				on_event(w, h, ev[i].events);
		}
		while ((c = w->dead) != NULL) {
			w->dead = c->next;
			free(c);
		}
	}
	return NULL;
}

static void
on_signal(int sig)
{
	(void)sig;
	_exit(0);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	struct worker *w;
	struct rlimit rl;
	pthread_t t;
	char *eq;
	int i, one = 1, port = 0, nw = 2, bad = (argc % 2) == 0;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--listen") == 0)
			port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--workers") == 0)
			nw = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--map") == 0 &&
		    (eq = strchr(argv[i + 1], '=')) != NULL && (*eq = '\0',
		    inet_pton(AF_INET, eq + 1, &map_ip) == 1) &&
		    (ntohl(map_ip.s_addr) >> 24) == 127)
			map_name = argv[i + 1];
		else
			bad = 1;
	}
	if (bad || port <= 0 || port > 65535 || nw < 1) {
		fprintf(stderr, "usage: floor --listen PORT [--workers N] "
		    "[--map NAME=127.x.x.x]\n");
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGTERM, on_signal);
	(void)signal(SIGINT, on_signal);
	sa.sin_port = htons((unsigned short)port);
	if ((w = calloc((size_t)nw, sizeof(*w))) == NULL)
		return 1;
	for (i = 0; i < nw; i++) {
		if ((w[i].lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) < 0 ||
		    setsockopt(w[i].lfd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one)) < 0 ||
		    setsockopt(w[i].lfd, SOL_SOCKET, SO_REUSEPORT, &one,
		    sizeof(one)) < 0 ||
		    bind(w[i].lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(w[i].lfd, 4096) < 0 ||
		    (w[i].ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
		    epoll_ctl(w[i].ep, EPOLL_CTL_ADD, w[i].lfd, &ev) < 0 ||
		    (i > 0 &&
		    (errno = pthread_create(&t, NULL, run, &w[i])) != 0)) {
			fprintf(stderr, "floor: port %d: %s\n", port,
			    strerror(errno));
			return 1;
		}
	}
	run(&w[0]);
	return 0;
}
