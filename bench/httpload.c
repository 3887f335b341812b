/*
 * httpload.c: a small keep-alive HTTP/1.1 load generator for
 * bench/routes.sh (no wrk or ab needed): C connections to ADDR:PORT, each
 * sending the same request again as soon as the previous answer (with
 * Content-Length) is complete, until N answers in all.  Prints requests
 * per second and the latency percentiles (microseconds) of one request.
 *
 *   httpload ADDR PORT CONNECTIONS TOTAL 'REQUEST (with \r\n)'
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct c {
	int	 fd;
	char	 buf[65536];
	size_t	 len;
	long	 t0;
};

static long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static int
cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* Length of a complete response at the start of b, or 0. */
static size_t
complete(const char *b, size_t n)
{
	const char *e = memmem(b, n, "\r\n\r\n", 4), *cl;
	size_t hl, body;

	if (e == NULL)
		return 0;
	hl = (size_t)(e - b) + 4;
	cl = memmem(b, hl, "Content-Length: ", 16);
	if (cl == NULL)
		cl = memmem(b, hl, "content-length: ", 16);
	body = cl != NULL ? strtoul(cl + 16, NULL, 10) : 0;
	return n >= hl + body ? hl + body : 0;
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in sa;
	struct epoll_event ev, evs[256];
	struct c *cs;
	long *lat, t0, total, sent = 0, done = 0;
	size_t reqlen, i, k;
	char *req, *p, *o;
	int ep, nc, n, one = 1;

	if (argc != 6) {
		fprintf(stderr, "usage: httpload ADDR PORT CONNS TOTAL REQ\n");
		return 2;
	}
	nc = atoi(argv[3]);
	total = atol(argv[4]);
	/* the request, with \r \n escapes */
	req = malloc(strlen(argv[5]) + 1);
	for (p = argv[5], o = req; *p; p++) {
		if (p[0] == '\\' && p[1] == 'r') { *o++ = '\r'; p++; }
		else if (p[0] == '\\' && p[1] == 'n') { *o++ = '\n'; p++; }
		else *o++ = *p;
	}
	reqlen = (size_t)(o - req);
	cs = calloc((size_t)nc, sizeof(*cs));
	lat = calloc((size_t)total, sizeof(*lat));
	ep = epoll_create1(0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	t0 = now_us();
	for (i = 0; i < (size_t)nc; i++) {
		cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		if (connect(cs[i].fd, (struct sockaddr *)&sa, sizeof(sa)) ==
		    -1) {
			perror("connect");
			return 1;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = &cs[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
		if (sent < total) {
			cs[i].t0 = now_us();
			(void)write(cs[i].fd, req, reqlen);
			sent++;
		}
	}
	while (done < total) {
		n = epoll_wait(ep, evs, 256, 10000);
		if (n <= 0) {
			fprintf(stderr, "httpload: stalled at %ld\n", done);
			return 1;
		}
		for (k = 0; k < (size_t)n; k++) {
			struct c *c = evs[k].data.ptr;
			ssize_t r = read(c->fd, c->buf + c->len,
			    sizeof(c->buf) - c->len);
			size_t m;

			if (r <= 0) {
				fprintf(stderr, "httpload: connection closed "
				    "at %ld\n", done);
				return 1;
			}
			c->len += (size_t)r;
			while ((m = complete(c->buf, c->len)) > 0) {
				lat[done++] = now_us() - c->t0;
				memmove(c->buf, c->buf + m, c->len - m);
				c->len -= m;
				if (sent < total) {
					c->t0 = now_us();
					(void)write(c->fd, req, reqlen);
					sent++;
				}
			}
		}
	}
	t0 = now_us() - t0;
	qsort(lat, (size_t)total, sizeof(*lat), cmp);
	printf("rps %.0f p50_us %ld p99_us %ld\n", total * 1e6 / (double)t0,
	    lat[total / 2], lat[total * 99 / 100]);
	return 0;
}
