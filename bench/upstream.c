/*
 * Loopback upstream for the egressd benchmark: one single-threaded epoll
 * loop serving an echo port, a small-HTTP-response port, a bulk source
 * (writes forever) and a bulk sink (reads and discards), each on its own
 * 127.0.0.1 port given on the command line.  Not part of the product.
 */

#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind {
	K_LISTEN,
	K_ECHO,
	K_HTTP,
	K_SOURCE,
	K_SINK,
};

static const char *kind_name[] = { "listen", "echo", "http", "source",
    "sink" };

struct lst {
	int	 kind;		/* K_LISTEN */
	int	 fd;
	int	 serves;	/* kind given to accepted connections */
};

struct conn {
	int	 kind;
	int	 fd;
	uint32_t events;	/* current epoll interest */
	/* echo: bytes read but not yet written back */
	char	*pend;
	size_t	 pendlen;
	size_t	 pendoff;
	size_t	 pendcap;
	/* http: CRLFCRLF matcher state and responses owed */
	int	 crlf;
	uint64_t owed;
	size_t	 respoff;
};

#define SCRATCH_SZ	(256 * 1024)
#define PEND_MAX	(4 * 1024 * 1024)

static char scratch[SCRATCH_SZ];
static char bulk[SCRATCH_SZ];
static int epfd;

static const char http_resp[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 13\r\n"
    "\r\n"
    "hello, bench\n";
#define HTTP_RESP_LEN	(sizeof(http_resp) - 1)

static void
usage(void)
{
	fprintf(stderr, "usage: upstream [--echo PORT] [--http PORT] "
	    "[--source PORT] [--sink PORT]\n");
	exit(2);
}

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int
ep_set(int op, int fd, uint32_t ev, void *ptr)
{
	struct epoll_event e;

	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.ptr = ptr;
	return epoll_ctl(epfd, op, fd, &e);
}

static void
listen_on(int port, int serves)
{
	struct sockaddr_in sin;
	struct lst *l;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		perror("socket");
		exit(1);
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1) {
		fprintf(stderr, "upstream: 127.0.0.1:%d: %s\n", port,
		    strerror(errno));
		exit(1);
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		abort();
	l->kind = K_LISTEN;
	l->fd = fd;
	l->serves = serves;
	if (ep_set(EPOLL_CTL_ADD, fd, EPOLLIN, l) == -1) {
		perror("epoll_ctl");
		exit(1);
	}
	fprintf(stderr, "upstream: %s on 127.0.0.1:%d\n", kind_name[serves],
	    port);
}

static void
conn_close(struct conn *c)
{
	(void)close(c->fd);	/* also drops it from the epoll set */
	free(c->pend);
	free(c);
}

static void
conn_want(struct conn *c, uint32_t ev)
{
	if (c->events == ev)
		return;
	c->events = ev;
	(void)ep_set(EPOLL_CTL_MOD, c->fd, ev, c);
}

static void
do_accept(struct lst *l)
{
	struct conn *c;
	uint32_t ev;
	int fd, one = 1;

	for (;;) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE)
				fprintf(stderr, "upstream: accept: %s\n",
				    strerror(errno));
			return;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		c = calloc(1, sizeof(*c));
		if (c == NULL)
			abort();
		c->kind = l->serves;
		c->fd = fd;
		ev = EPOLLIN | EPOLLRDHUP;
		if (c->kind == K_SOURCE)
			ev |= EPOLLOUT;
		c->events = ev;
		if (ep_set(EPOLL_CTL_ADD, fd, ev, c) == -1) {
			close(fd);
			free(c);
		}
	}
}

/* Write what the echo connection owes; returns -1 when it must close. */
static int
echo_flush(struct conn *c)
{
	ssize_t n;

	while (c->pendoff < c->pendlen) {
		n = write(c->fd, c->pend + c->pendoff,
		    c->pendlen - c->pendoff);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -1;
		}
		c->pendoff += (size_t)n;
	}
	c->pendoff = c->pendlen = 0;
	return 0;
}

static int
echo_read(struct conn *c)
{
	ssize_t n, w;

	for (;;) {
		n = read(c->fd, scratch, sizeof(scratch));
		if (n == 0)
			return -1;
		if (n == -1)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
		w = 0;
		if (c->pendlen == 0) {
			w = write(c->fd, scratch, (size_t)n);
			if (w == -1 && errno != EAGAIN)
				return -1;
			if (w == -1)
				w = 0;
		}
		if (w < n) {
			size_t rest = (size_t)(n - w);

			if (c->pendlen + rest > c->pendcap) {
				size_t cap = c->pendlen + rest;
				char *p;

				if (cap > PEND_MAX)
					return -1;
				p = realloc(c->pend, cap);
				if (p == NULL)
					return -1;
				c->pend = p;
				c->pendcap = cap;
			}
			memcpy(c->pend + c->pendlen, scratch + w, rest);
			c->pendlen += rest;
			/* stop reading until the peer drains us */
			conn_want(c, EPOLLOUT | EPOLLRDHUP);
			return 0;
		}
		/* short read: drained; level-triggered epoll calls again */
		if ((size_t)n < sizeof(scratch))
			return 0;
	}
}

/* Count complete request heads (CRLFCRLF) in buf, carrying state. */
static uint64_t
count_heads(struct conn *c, const char *buf, size_t len)
{
	uint64_t heads = 0;
	size_t i;
	int st = c->crlf;

	for (i = 0; i < len; i++) {
		char ch = buf[i];

		if (ch == '\r')
			st = (st == 0 || st == 2) ? st + 1 : 1;
		else if (ch == '\n' && (st == 1 || st == 3)) {
			st++;
			if (st == 4) {
				heads++;
				st = 0;
			}
		} else
			st = 0;
	}
	c->crlf = st;
	return heads;
}

static int
http_flush(struct conn *c)
{
	char out[HTTP_RESP_LEN * 64];
	size_t len, k, cnt;
	ssize_t n;

	while (c->owed > 0) {
		cnt = c->owed < 64 ? (size_t)c->owed : 64;
		len = 0;
		for (k = 0; k < cnt; k++) {
			memcpy(out + len, http_resp, HTTP_RESP_LEN);
			len += HTTP_RESP_LEN;
		}
		n = write(c->fd, out + c->respoff, len - c->respoff);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				conn_want(c, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
				return 0;
			}
			return -1;
		}
		n += (ssize_t)c->respoff;
		c->owed -= (uint64_t)n / HTTP_RESP_LEN;
		c->respoff = (size_t)n % HTTP_RESP_LEN;
	}
	conn_want(c, EPOLLIN | EPOLLRDHUP);
	return 0;
}

static int
http_read(struct conn *c)
{
	ssize_t n;

	for (;;) {
		n = read(c->fd, scratch, sizeof(scratch));
		if (n == 0)
			return -1;
		if (n == -1)
			break;
		c->owed += count_heads(c, scratch, (size_t)n);
		if (c->owed > 100000)
			return -1;
		if ((size_t)n < sizeof(scratch))
			return http_flush(c);
	}
	if (errno != EAGAIN && errno != EINTR)
		return -1;
	return http_flush(c);
}

static int
drain(struct conn *c)
{
	ssize_t n;

	for (;;) {
		n = read(c->fd, scratch, sizeof(scratch));
		if (n == 0)
			return -1;
		if (n == -1)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	}
}

static int
source_write(struct conn *c)
{
	ssize_t n;

	for (;;) {
		n = write(c->fd, bulk, sizeof(bulk));
		if (n == -1)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	}
}

static void
conn_event(struct conn *c, uint32_t ev)
{
	int r = 0;

	if (ev & EPOLLERR) {
		conn_close(c);
		return;
	}
	switch (c->kind) {
	case K_ECHO:
		if (ev & EPOLLOUT) {
			r = echo_flush(c);
			if (r == 0 && c->pendlen == 0) {
				conn_want(c, EPOLLIN | EPOLLRDHUP);
				r = echo_read(c);
			}
		} else if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
			r = echo_read(c);
		break;
	case K_HTTP:
		if (ev & EPOLLOUT)
			r = http_flush(c);
		if (r == 0 && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
			r = http_read(c);
		break;
	case K_SOURCE:
		if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
			r = drain(c);
		if (r == 0 && (ev & EPOLLOUT))
			r = source_write(c);
		break;
	case K_SINK:
		r = drain(c);
		break;
	}
	if (r == -1)
		conn_close(c);
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "echo", required_argument, NULL, 'e' },
		{ "http", required_argument, NULL, 'H' },
		{ "source", required_argument, NULL, 's' },
		{ "sink", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct epoll_event evs[256];
	size_t i;
	int ch, n, k, port, any = 0;

	raise_nofile();
	(void)signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(bulk); i++)
		bulk[i] = (char)('a' + i % 26);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd == -1) {
		perror("epoll_create1");
		return 1;
	}
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (optarg == NULL)
			usage();
		port = atoi(optarg);
		if (port <= 0 || port > 65535)
			usage();
		switch (ch) {
		case 'e':
			listen_on(port, K_ECHO);
			break;
		case 'H':
			listen_on(port, K_HTTP);
			break;
		case 's':
			listen_on(port, K_SOURCE);
			break;
		case 'k':
			listen_on(port, K_SINK);
			break;
		default:
			usage();
		}
		any = 1;
	}
	if (!any || optind != argc)
		usage();
	for (;;) {
		n = epoll_wait(epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
		    -1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			return 1;
		}
		for (k = 0; k < n; k++) {
			int *kind = evs[k].data.ptr;

			if (*kind == K_LISTEN)
				do_accept(evs[k].data.ptr);
			else
				conn_event(evs[k].data.ptr, evs[k].events);
		}
	}
}
