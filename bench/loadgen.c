/*
 * Load generator for the egressd benchmark: one epoll loop driving N
 * client connections that open CONNECT tunnels through a proxy (TCP or
 * Unix socket) or go straight to the upstream, in one of four modes (rate,
 * rr, bulk, idle), and print one machine-readable result line.  A fifth,
 * http, opens no tunnel: each connection sends plain-HTTP requests
 * (absolute form through the proxy, origin form direct) one after the
 * other on a kept-alive connection, and opens a new one only when the
 * proxy ends it (a proxy that does not keep client connections).
 */

#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum mode { M_RATE, M_RR, M_BULK, M_IDLE, M_HTTP };
static const char *mode_name[] = { "rate", "rr", "bulk", "idle", "http" };
#define NMODES	5

/* Client connection states. */
enum st {
	S_FREE,		/* not in use */
	S_CONNECTING,	/* non-blocking connect in progress */
	S_WAIT200,	/* CONNECT sent, reading the proxy's answer head */
	S_HTTPRESP,	/* rate: GET sent, reading the HTTP response */
	S_RR,		/* rr/idle: request sent, reading its echo */
	S_RRREADY,	/* rr: tunnel open, waiting for the start signal */
	S_BULK,		/* bulk: streaming */
	S_IDLE,		/* idle: open and quiet */
};

#define HEAD_MAX	2048
#define IOBUF_SZ	(256 * 1024)
#define MAX_SAMPLES	(32 * 1024 * 1024)

struct cl {
	int	 fd;
	int	 st;
	uint64_t t0;		/* connect() started */
	uint64_t t200;		/* proxy's 200 arrived */
	uint64_t tfb;		/* first response byte */
	uint64_t treq;		/* rr: request sent */
	size_t	 headlen;
	size_t	 need;		/* body or echo bytes still expected */
	int	 gothead;
	int	 closeafter;	/* http: the response said Connection: close */
	int	 served;	/* http: responses on this connection */
	char	 head[HEAD_MAX];
};

struct samples {
	uint32_t *v;
	size_t	 n;
	size_t	 cap;
};

/* Options. */
static int mode = M_RATE;
static int direct;
static struct sockaddr_storage paddr;	/* proxy, or target when direct */
static socklen_t paddrlen;
static const char *target;
static const char *label;
static double duration = 10;
static double warmup = 1;
static int conc = 64;
static size_t rrsize = 64;
static int upload;
static long pid = -1;
static long upid = -1;		/* --upstream-pid: its CPU is reported too */
static int inflight_max = 256;

/* State. */
static int epfd;
static struct cl *cls;
static char connect_req[512];
static size_t connect_len;
static char http_req[768];
static size_t http_len;
static char iobuf[IOBUF_SZ];
static char payload[IOBUF_SZ];
static int measuring;
static uint64_t t_measure;
static uint64_t errors;
static uint64_t done_count;	/* rate: tunnels, rr: requests */
static uint64_t bytes;
static struct samples s_c2s, s_c2fb, s_lat;
static int nopen;		/* rr/bulk/idle: tunnels open */
static int nfailed;		/* idle: tunnels that never opened */
static int nstarted;		/* idle: connects started */
static int inflight;		/* idle: handshakes in progress */
static int nclosed;		/* idle: open tunnels the peer closed */
static uint64_t ok_any;
static uint64_t nconns;		/* http: connections opened while measuring */

static void cl_start(struct cl *);

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: loadgen (--proxy tcp:ADDR:PORT | --proxy unix:PATH | "
	    "--direct)\n"
	    "               --target HOST:PORT [--mode rate|rr|bulk|idle|"
	    "http]\n"
	    "               [--duration SEC] [--concurrency N] [--size BYTES]"
	    "\n"
	    "               [--upload] [--pid PID] [--upstream-pid PID] "
	    "[--label NAME]\n"
	    "               [--warmup SEC] [--inflight N (idle: handshakes "
	    "at once, 256)]\n");
	exit(2);
}

static void
die(const char *msg)
{
	fprintf(stderr, "loadgen: %s\n", msg);
	exit(1);
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

/* Parse a numeric "1.2.3.4:80" or "[::1]:80"; never resolves names. */
static int
parse_inet(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *colon, *h;
	size_t hl;
	long port;
	char *end;

	colon = strrchr(s, ':');
	if (colon == NULL)
		return -1;
	h = s;
	hl = (size_t)(colon - s);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port <= 0 || port > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr)
	    == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		*len = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, host,
	    &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*len = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -1;
}

static void
set_proxy(const char *s)
{
	struct sockaddr_un *sun;

	if (strncmp(s, "tcp:", 4) == 0) {
		if (parse_inet(s + 4, &paddr, &paddrlen) == -1)
			die("--proxy tcp: needs a numeric ADDR:PORT");
	} else if (strncmp(s, "unix:", 5) == 0) {
		sun = (struct sockaddr_un *)&paddr;
		memset(&paddr, 0, sizeof(paddr));
		if (strlen(s + 5) >= sizeof(sun->sun_path))
			die("unix socket path too long");
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, s + 5);
		paddrlen = sizeof(*sun);
	} else
		die("--proxy must be tcp:ADDR:PORT or unix:PATH");
}

static void
sample_add(struct samples *s, uint64_t ns)
{
	uint64_t us = ns / 1000;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 65536;
		uint32_t *v;

		if (cap > MAX_SAMPLES)
			return;
		v = realloc(s->v, cap * sizeof(*v));
		if (v == NULL)
			return;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile, p in (0,1]; 0 when there are no samples. */
static uint32_t
pct(struct samples *s, double p)
{
	size_t i;

	if (s->n == 0)
		return 0;
	i = (size_t)(p * (double)s->n + 0.999999);
	if (i == 0)
		i = 1;
	if (i > s->n)
		i = s->n;
	return s->v[i - 1];
}

static long
read_rss_kib(void)
{
	char path[64], line[256];
	FILE *f;
	long kib = -1;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

/*
 * CPU time (user + system, all threads, and reaped children) of process p
 * in microseconds, from /proc/p/stat; -1 when it cannot be read.  Ticks
 * are 10 ms at worst: over a 10 s run of a busy proxy, well under 1%.
 */
static double
proc_cpu_us(long p)
{
	char path[64], buf[1024], *s;
	unsigned long long ut, st;
	long long cut, cst;
	FILE *f;
	size_t n;
	long hz = sysconf(_SC_CLK_TCK);

	if (p <= 0 || hz <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", p);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: after the last */
	if ((s = strrchr(buf, ')')) == NULL)
		return -1;
	if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	    "%llu %llu %lld %lld", &ut, &st, &cut, &cst) != 4)
		return -1;
	return (double)(ut + st + (unsigned long long)(cut + cst)) * 1e6 /
	    (double)hz;
}

/* This process's own CPU time in microseconds. */
static double
self_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) == -1)
		return -1;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static double cpu0_proxy = -1, cpu0_up = -1, cpu0_self = -1;

static void
cpu_mark(void)
{
	cpu0_proxy = proc_cpu_us(pid);
	cpu0_up = proc_cpu_us(upid);
	cpu0_self = self_cpu_us();
}

/*
 * " proxy_cpu_ms=.. cpu_us_per_UNIT=.. up_cpu_ms=.. lg_cpu_ms=.." for the
 * measured window: UNIT is tunnel, rt (round trip) or mb; fields whose
 * process was not given (or gone) are left out.
 */
static void
cpu_report(char *out, size_t len, const char *unit, double units)
{
	double a, b, c;
	int n = 0;

	out[0] = '\0';
	a = proc_cpu_us(pid);
	if (cpu0_proxy >= 0 && a >= 0) {
		n += snprintf(out + n, len - (size_t)n, " proxy_cpu_ms=%.0f",
		    (a - cpu0_proxy) / 1e3);
		if (units > 0)
			n += snprintf(out + n, len - (size_t)n,
			    " cpu_us_per_%s=%.2f", unit,
			    (a - cpu0_proxy) / units);
	}
	b = proc_cpu_us(upid);
	if (cpu0_up >= 0 && b >= 0)
		n += snprintf(out + n, len - (size_t)n, " up_cpu_ms=%.0f",
		    (b - cpu0_up) / 1e3);
	c = self_cpu_us();
	if (cpu0_self >= 0 && c >= 0)
		snprintf(out + n, len - (size_t)n, " lg_cpu_ms=%.0f",
		    (c - cpu0_self) / 1e3);
}

static int
ep_set(int op, struct cl *c, uint32_t ev)
{
	struct epoll_event e;

	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.ptr = c;
	return epoll_ctl(epfd, op, c->fd, &e);
}

static void
cl_close(struct cl *c)
{
	if (c->fd != -1)
		(void)close(c->fd);
	c->fd = -1;
	c->st = S_FREE;
}

/* Count an error; give up when nothing has ever worked. */
static void
cl_fail(struct cl *c)
{
	int was = c->st;

	errors++;
	if (ok_any == 0 && errors > 2000)
		die("too many errors and no success: is the proxy up?");
	cl_close(c);
	switch (mode) {
	case M_RATE:
		break;		/* the main loop restarts free slots */
	case M_IDLE:
		if (was == S_IDLE) {
			nclosed++;
			nopen--;
		} else {
			inflight--;
			nfailed++;
		}
		break;
	default:
		/* rr/bulk: the main loop reopens the tunnel */
		if (was == S_RR || was == S_BULK || was == S_RRREADY)
			nopen--;
		break;
	}
}

static int
send_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;	/* EAGAIN on a fresh socket: give up */
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void
rr_send(struct cl *c)
{
	c->st = S_RR;
	c->need = rrsize;
	c->treq = now_ns();
	if (send_all(c->fd, payload, rrsize) == -1)
		cl_fail(c);
}

static void handle_data(struct cl *, const char *, size_t);

/* The tunnel (or direct connection) is open; extra is what followed. */
static void
tunnel_ready(struct cl *c, const char *extra, size_t extralen)
{
	c->t200 = now_ns();
	c->headlen = 0;
	c->gothead = 0;
	c->tfb = 0;
	ok_any++;
	switch (mode) {
	case M_HTTP:
		c->treq = c->t200;
		/* FALLTHROUGH */
	case M_RATE:
		c->st = S_HTTPRESP;
		if (send_all(c->fd, http_req, http_len) == -1) {
			cl_fail(c);
			return;
		}
		break;
	case M_RR:
		nopen++;
		c->st = S_RRREADY;
		if (measuring)
			rr_send(c);
		break;
	case M_BULK:
		nopen++;
		c->st = S_BULK;
		if (upload)
			(void)ep_set(EPOLL_CTL_MOD, c, EPOLLOUT | EPOLLRDHUP);
		break;
	case M_IDLE:
		rr_send(c);
		break;
	}
	if (extralen > 0 && c->fd != -1)
		handle_data(c, extra, extralen);
}

static void
on_connected(struct cl *c)
{
	(void)ep_set(EPOLL_CTL_MOD, c, EPOLLIN | EPOLLRDHUP);
	if (direct || mode == M_HTTP) {
		tunnel_ready(c, NULL, 0);
		return;
	}
	c->st = S_WAIT200;
	c->headlen = 0;
	if (send_all(c->fd, connect_req, connect_len) == -1)
		cl_fail(c);
}

static void
cl_start(struct cl *c)
{
	int fd, one = 1;

	fd = socket(paddr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE)
			die("out of file descriptors");
		errors++;
		if (mode == M_IDLE) {
			nstarted++;
			nfailed++;
		}
		return;
	}
	if (paddr.ss_family != AF_UNIX)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
	c->fd = fd;
	c->st = S_CONNECTING;
	c->served = 0;
	c->t0 = now_ns();
	if (mode == M_HTTP && measuring)
		nconns++;
	if (mode == M_IDLE) {
		inflight++;
		nstarted++;
	}
	if (connect(fd, (struct sockaddr *)&paddr, paddrlen) == 0) {
		(void)ep_set(EPOLL_CTL_ADD, c, EPOLLIN | EPOLLRDHUP);
		on_connected(c);
		return;
	}
	if (errno != EINPROGRESS) {
		c->st = S_CONNECTING;
		cl_fail(c);
		return;
	}
	(void)ep_set(EPOLL_CTL_ADD, c, EPOLLOUT);
}

/* Parse a complete response head: 0 ok, -1 bad. Sets need from CL. */
static int
parse_http_head(struct cl *c, size_t headend)
{
	size_t i;
	const char *h = c->head;

	int cl = 0;

	if (headend < 12 || memcmp(h, "HTTP/1.", 7) != 0 ||
	    memcmp(h + 9, "200", 3) != 0)
		return -1;
	c->need = 0;
	/* HTTP/1.0 closes unless it says keep-alive */
	c->closeafter = h[7] == '0' && strcasestr(h, "\nconnection: keep-alive")
	    == NULL;
	for (i = 0; i + 16 < headend; i++) {
		if (h[i] != '\n')
			continue;
		if (strncasecmp(h + i + 1, "content-length:", 15) == 0) {
			c->need = strtoul(h + i + 16, NULL, 10);
			cl = 1;
		} else if (strncasecmp(h + i + 1, "connection:", 11) == 0 &&
		    strncasecmp(h + i + 12 + strspn(h + i + 12, " \t"),
		    "close", 5) == 0)
			c->closeafter = 1;
	}
	return cl ? 0 : -1;
}

static const char *
find_crlf2(const char *p, size_t len)
{
	return memmem(p, len, "\r\n\r\n", 4);
}

/* http: a response is complete; the next request on the same
 * connection, or a new connection when the proxy ends this one. */
static void
http_done(struct cl *c)
{
	if (measuring) {
		done_count++;
		sample_add(&s_lat, now_ns() - c->treq);
	}
	c->served++;
	if (c->closeafter) {
		cl_close(c);
		cl_start(c);
		return;
	}
	c->headlen = 0;
	c->gothead = 0;
	c->tfb = 0;
	c->treq = now_ns();
	if (send_all(c->fd, http_req, http_len) == -1)
		cl_fail(c);
}

static void
rate_done(struct cl *c)
{
	if (measuring) {
		done_count++;
		sample_add(&s_c2s, c->t200 - c->t0);
		sample_add(&s_c2fb, c->tfb - c->t0);
	}
	cl_close(c);
	cl_start(c);
}

/* Bytes arrived on an open tunnel (or a direct connection). */
static void
handle_data(struct cl *c, const char *p, size_t len)
{
	const char *e;
	size_t take, headend, prev;

	switch (c->st) {
	case S_HTTPRESP:
		if (c->tfb == 0)
			c->tfb = now_ns();
		if (!c->gothead) {
			prev = c->headlen;
			take = HEAD_MAX - c->headlen;
			if (take > len)
				take = len;
			memcpy(c->head + c->headlen, p, take);
			c->headlen += take;
			e = find_crlf2(c->head, c->headlen);
			if (e == NULL) {
				if (c->headlen == HEAD_MAX)
					cl_fail(c);
				return;
			}
			headend = (size_t)(e - c->head) + 4;
			c->head[headend - 1] = '\0';	/* for strcasestr */
			if (parse_http_head(c, headend) == -1) {
				cl_fail(c);
				return;
			}
			c->gothead = 1;
			/* bytes of this chunk beyond the head */
			len -= headend - prev;
		}
		if (len > c->need) {
			cl_fail(c);	/* more than asked for */
			return;
		}
		c->need -= len;
		if (c->need == 0) {
			if (mode == M_HTTP)
				http_done(c);
			else
				rate_done(c);
		}
		return;
	case S_RR:
		if (len > c->need) {
			cl_fail(c);
			return;
		}
		c->need -= len;
		if (c->need > 0)
			return;
		if (mode == M_IDLE) {
			c->st = S_IDLE;
			nopen++;
			inflight--;
			return;
		}
		if (measuring) {
			done_count++;
			sample_add(&s_lat, now_ns() - c->treq);
		}
		rr_send(c);
		return;
	case S_BULK:
		if (measuring)
			bytes += len;
		return;
	case S_IDLE:
	case S_RRREADY:
		cl_fail(c);	/* unexpected bytes */
		return;
	default:
		return;
	}
}

static void
on_readable(struct cl *c)
{
	ssize_t n;
	const char *e;
	size_t headend;
	int loops = 0;

	for (;;) {
		if (c->st == S_WAIT200) {
			n = read(c->fd, c->head + c->headlen,
			    HEAD_MAX - c->headlen);
		} else
			n = read(c->fd, iobuf, sizeof(iobuf));
		if (n == 0 && mode == M_HTTP && c->st == S_HTTPRESP &&
		    c->served > 0 && c->headlen == 0) {
			/*
			 * The proxy ended a connection it had answered on
			 * without saying Connection: close (tinyproxy does):
			 * not an error, as for curl, the request goes again
			 * on a new connection.
			 */
			cl_close(c);
			cl_start(c);
			return;
		}
		if (n == 0) {
			cl_fail(c);
			return;
		}
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			cl_fail(c);
			return;
		}
		if (c->st == S_WAIT200) {
			c->headlen += (size_t)n;
			e = find_crlf2(c->head, c->headlen);
			if (e == NULL) {
				if (c->headlen == HEAD_MAX)
					cl_fail(c);
				if (c->fd == -1 || c->headlen == HEAD_MAX)
					return;
				continue;
			}
			headend = (size_t)(e - c->head) + 4;
			if (c->headlen < 12 ||
			    memcmp(c->head, "HTTP/1.", 7) != 0 ||
			    memcmp(c->head + 9, "200", 3) != 0) {
				cl_fail(c);
				return;
			}
			{
				char extra[HEAD_MAX];
				size_t el = c->headlen - headend;

				memcpy(extra, c->head + headend, el);
				tunnel_ready(c, extra, el);
			}
		} else {
			handle_data(c, iobuf, (size_t)n);
			/* short read: drained; epoll says when there is more */
			if ((size_t)n < sizeof(iobuf))
				return;
		}
		/* handle_data may have closed or restarted c */
		if (c->fd == -1 || c->st == S_CONNECTING)
			return;
		/* be fair to other connections in bulk mode */
		if (c->st == S_BULK && ++loops >= 4)
			return;
		if (c->st == S_IDLE || c->st == S_RRREADY)
			return;
	}
}

static void
on_writable(struct cl *c)
{
	ssize_t n;
	int err = 0;
	socklen_t el = sizeof(err);

	if (c->st == S_CONNECTING) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) == -1 ||
		    err != 0) {
			cl_fail(c);
			return;
		}
		on_connected(c);
		return;
	}
	if (c->st == S_BULK && upload) {
		n = write(c->fd, payload, sizeof(payload));
		if (n == -1) {
			if (errno != EAGAIN && errno != EINTR)
				cl_fail(c);
			return;
		}
		if (measuring)
			bytes += (uint64_t)n;
	}
}

static void
start_measuring(uint64_t t)
{
	int i;

	measuring = 1;
	t_measure = t;
	if (mode != M_IDLE)
		cpu_mark();
	if (mode == M_RR)
		for (i = 0; i < conc; i++)
			if (cls[i].st == S_RRREADY)
				rr_send(&cls[i]);
}

static void
run(void)
{
	struct epoll_event evs[512];
	uint64_t t_start, t_end = 0, t, setup_deadline;
	long rss0 = -1, rss1 = -1;
	double secs;
	char cpu[256];
	int i, n, k, timeout;

	t_start = now_ns();
	setup_deadline = t_start + 120ull * 1000000000ull;
	if (mode == M_IDLE) {
		rss0 = read_rss_kib();
		if (pid > 0 && rss0 < 0)
			die("cannot read VmRSS of --pid");
	}
	if (mode == M_RATE || mode == M_HTTP)
		t_end = t_start + (uint64_t)((warmup + duration) * 1e9);
	for (;;) {
		t = now_ns();
		if ((mode == M_RATE || mode == M_HTTP) && !measuring &&
		    t >= t_start + (uint64_t)(warmup * 1e9))
			start_measuring(t);
		if ((mode == M_RR || mode == M_BULK) && !measuring &&
		    nopen == conc) {
			start_measuring(t);
			t_end = t + (uint64_t)(duration * 1e9);
		}
		if (mode != M_IDLE)
			for (i = 0; i < conc; i++)
				if (cls[i].st == S_FREE)
					cl_start(&cls[i]);
		if (mode == M_IDLE) {
			while (inflight < inflight_max && nstarted < conc)
				cl_start(&cls[nstarted]);
			if (!measuring && nopen + nfailed + nclosed == conc) {
				start_measuring(t);
				t_end = t + (uint64_t)(duration * 1e9);
			}
		}
		if (!measuring && t > setup_deadline)
			die("tunnels did not open within 120 s");
		if (measuring && t >= t_end)
			break;
		timeout = 100;
		if (measuring && (t_end - t) / 1000000 < 100)
			timeout = (int)((t_end - t) / 1000000) + 1;
		n = epoll_wait(epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
		    timeout);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			die("epoll_wait failed");
		}
		for (k = 0; k < n; k++) {
			struct cl *c = evs[k].data.ptr;

			if (c->fd == -1)
				continue;
			if (c->st == S_CONNECTING) {
				on_writable(c);
				continue;
			}
			if (evs[k].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP |
			    EPOLLERR)) {
				on_readable(c);
			}
			if (c->fd != -1 && (evs[k].events & EPOLLOUT))
				on_writable(c);
		}
	}
	t = now_ns();
	secs = (double)(t - t_measure) / 1e9;
	switch (mode) {
	case M_RATE:
		cpu_report(cpu, sizeof(cpu), "tunnel", (double)done_count);
		break;
	case M_RR:
		cpu_report(cpu, sizeof(cpu), "rt", (double)done_count);
		break;
	case M_HTTP:
		cpu_report(cpu, sizeof(cpu), "req", (double)done_count);
		break;
	case M_BULK:
		cpu_report(cpu, sizeof(cpu), "mb", (double)bytes / 1e6);
		break;
	default:
		cpu[0] = '\0';
	}
	if (label == NULL)
		label = direct ? "direct" : "proxy";
	switch (mode) {
	case M_RATE:
		qsort(s_c2s.v, s_c2s.n, sizeof(uint32_t), cmp_u32);
		qsort(s_c2fb.v, s_c2fb.n, sizeof(uint32_t), cmp_u32);
		printf("mode=rate proxy=%s conc=%d secs=%.2f tunnels=%" PRIu64
		    " tunnels_per_s=%.0f c2s_p50_us=%u c2s_p90_us=%u "
		    "c2s_p99_us=%u c2fb_p50_us=%u c2fb_p90_us=%u "
		    "c2fb_p99_us=%u errors=%" PRIu64 "%s\n",
		    label, conc, secs, done_count, (double)done_count / secs,
		    pct(&s_c2s, .5), pct(&s_c2s, .9), pct(&s_c2s, .99),
		    pct(&s_c2fb, .5), pct(&s_c2fb, .9), pct(&s_c2fb, .99),
		    errors, cpu);
		break;
	case M_RR:
		qsort(s_lat.v, s_lat.n, sizeof(uint32_t), cmp_u32);
		printf("mode=rr proxy=%s conc=%d size=%zu secs=%.2f reqs=%"
		    PRIu64 " reqs_per_s=%.0f lat_p50_us=%u lat_p90_us=%u "
		    "lat_p99_us=%u errors=%" PRIu64 "%s\n",
		    label, conc, rrsize, secs, done_count,
		    (double)done_count / secs, pct(&s_lat, .5),
		    pct(&s_lat, .9), pct(&s_lat, .99), errors, cpu);
		break;
	case M_HTTP:
		qsort(s_lat.v, s_lat.n, sizeof(uint32_t), cmp_u32);
		printf("mode=http proxy=%s conc=%d secs=%.2f reqs=%" PRIu64
		    " reqs_per_s=%.0f lat_p50_us=%u lat_p90_us=%u "
		    "lat_p99_us=%u conns=%" PRIu64 " errors=%" PRIu64 "%s\n",
		    label, conc, secs, done_count, (double)done_count / secs,
		    pct(&s_lat, .5), pct(&s_lat, .9), pct(&s_lat, .99), nconns,
		    errors, cpu);
		break;
	case M_BULK:
		printf("mode=bulk dir=%s proxy=%s conc=%d secs=%.2f bytes=%"
		    PRIu64 " mb_per_s=%.1f errors=%" PRIu64 "%s\n",
		    upload ? "up" : "down", label, conc, secs, bytes,
		    (double)bytes / secs / 1e6, errors, cpu);
		break;
	case M_IDLE:
		rss1 = read_rss_kib();
		printf("mode=idle proxy=%s conc=%d open=%d failed=%d "
		    "closed=%d rss_base_kib=%ld rss_kib=%ld "
		    "kib_per_tunnel=%.2f errors=%" PRIu64 "\n",
		    label, conc, nopen, nfailed, nclosed, rss0, rss1,
		    (rss0 >= 0 && rss1 >= 0 && nopen > 0) ?
		    (double)(rss1 - rss0) / nopen : -1.0, errors);
		break;
	}
	fflush(stdout);
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "proxy", required_argument, NULL, 'p' },
		{ "direct", no_argument, NULL, 'D' },
		{ "target", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "upload", no_argument, NULL, 'u' },
		{ "pid", required_argument, NULL, 'P' },
		{ "upstream-pid", required_argument, NULL, 'U' },
		{ "inflight", required_argument, NULL, 'I' },
		{ "label", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *proxy = NULL;
	size_t i;
	int ch, n;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			proxy = optarg;
			break;
		case 'D':
			direct = 1;
			break;
		case 't':
			target = optarg;
			break;
		case 'm':
			for (n = 0; n < NMODES; n++)
				if (strcmp(optarg, mode_name[n]) == 0)
					break;
			if (n == NMODES)
				usage();
			mode = n;
			break;
		case 'd':
			duration = atof(optarg);
			break;
		case 'w':
			warmup = atof(optarg);
			break;
		case 'c':
			conc = atoi(optarg);
			break;
		case 's':
			rrsize = (size_t)atol(optarg);
			break;
		case 'u':
			upload = 1;
			break;
		case 'P':
			pid = atol(optarg);
			break;
		case 'U':
			upid = atol(optarg);
			break;
		case 'I':
			inflight_max = atoi(optarg);
			break;
		case 'l':
			label = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || target == NULL || (direct == (proxy != NULL)))
		usage();
	if (duration <= 0 || warmup < 0 || conc <= 0 || conc > 1000000 ||
	    rrsize == 0 || rrsize > IOBUF_SZ || inflight_max < 1)
		usage();
	if (direct) {
		if (parse_inet(target, &paddr, &paddrlen) == -1)
			die("--direct needs a numeric --target ADDR:PORT");
	} else
		set_proxy(proxy);
	if (strlen(target) > 255)
		die("target too long");
	connect_len = (size_t)snprintf(connect_req, sizeof(connect_req),
	    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	if (mode == M_HTTP && !direct)
		http_len = (size_t)snprintf(http_req, sizeof(http_req),
		    "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target,
		    target);
	else if (mode == M_HTTP)
		http_len = (size_t)snprintf(http_req, sizeof(http_req),
		    "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", target);
	else
		http_len = (size_t)snprintf(http_req, sizeof(http_req),
		    "GET / HTTP/1.1\r\nHost: bench.test\r\n\r\n");
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (char)('A' + i % 26);

	raise_nofile();
	(void)signal(SIGPIPE, SIG_IGN);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd == -1)
		die("epoll_create1 failed");
	cls = calloc((size_t)conc, sizeof(*cls));
	if (cls == NULL)
		die("out of memory");
	for (n = 0; n < conc; n++) {
		cls[n].fd = -1;
		cls[n].st = S_FREE;
	}
	run();
	return 0;
}
