/*
 * Sessions benchmark for egressd (issue 12); not part of `make check`.
 * It starts its own egressd (-e PATH) on Unix sockets in a temp folder,
 * with an in-process loopback upstream that holds every connection open,
 * and drives the SPEC's session API over the admin socket:
 *
 *  1. create N sessions (POST /v1/sessions), timed; RSS per idle session;
 *  2. one CONNECT in flight in every session, then every session's phase
 *     switched concurrently (J threads): the switched-away tunnel must be
 *     closed by the time the 200 arrives, the new phase's host allowed and
 *     the old one blocked; afterwards every audit line of every session is
 *     checked against that session's own phase timeline (no decision made
 *     with another session's phase);
 *  3. delete the N sessions (DELETE), timed; no descriptor left behind in
 *     egressd and no socket file left in session_dir;
 *  4. the p99 time to the admin 200 of one session's phase switch, with
 *     nothing open and then with T tunnels open in nine other sessions.
 *
 * Exit status: 0 every check passed, 1 a check failed, 2 it could not
 * run (no sessions in this egressd, a limit, a bad option).  Every socket
 * operation has a timeout, so a daemon that does not answer fails the run
 * instead of hanging it.
 */

#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_S	30
#define RESP_MAX	(1u << 20)
#define NAME_MAX_	64
#define BUSY_SESSIONS	9

static int n_sess = 1000;	/* -n */
static int n_tun = 9000;	/* -t */
static int n_switch = 200;	/* -k */
static int n_thr = 8;		/* -j */
static const char *egressd_bin;	/* -e */
static int keep;		/* --keep */
static int switch_only;		/* --switch: only step 4, interleaved */
static int n_rounds = 10;	/* -r: rounds of --switch */
static int counts[8] = { 0, 1000, 9000 };	/* -T: tunnels open elsewhere */
static int n_counts = 3;

static char work[256], admin_path[320], sdir[320], audit_path[320];
static pid_t eg_pid = -1;
static uint16_t up_port;
static int failures;

static void
fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void
cleanup(void)
{
	char cmd[400];
	int st;

	if (eg_pid > 0) {
		kill(eg_pid, SIGTERM);
		waitpid(eg_pid, &st, 0);
		eg_pid = -1;
	}
	if (!keep && work[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
		if (system(cmd) != 0)
			fprintf(stderr, "sessions: could not remove %s\n", work);
	} else if (work[0] != '\0')
		fprintf(stderr, "sessions: kept %s\n", work);
}

static void
fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("sessions: FATAL: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup();
	exit(2);
}

static void
check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok    " : "FAILED");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failures++;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* --- the upstream: accept and hold, discard what arrives --------------- */

static void *
upstream_main(void *arg)
{
	struct epoll_event ev, evs[256];
	int lfd = *(int *)arg, ep, n, i, fd;
	char buf[4096];

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return NULL;
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		n = epoll_wait(ep, evs, 256, -1);
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd == lfd) {
				while ((fd = accept4(lfd, NULL, NULL,
				    SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
					ev.events = EPOLLIN | EPOLLRDHUP;
					ev.data.fd = fd;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			fd = evs[i].data.fd;
			if (read(fd, buf, sizeof(buf)) <= 0 ||
			    (evs[i].events & (EPOLLRDHUP | EPOLLHUP))) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
	}
	return NULL;
}

static void
start_upstream(void)
{
	static int lfd;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	pthread_t t;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 4096) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) == -1)
		fatal("upstream: %s", strerror(errno));
	up_port = ntohs(sin.sin_port);
	if (pthread_create(&t, NULL, upstream_main, &lfd) != 0)
		fatal("upstream thread");
	pthread_detach(t);
}

/* --- Unix-socket clients ------------------------------------------------ */

static int
dial_unix(const char *path)
{
	struct sockaddr_un sun;
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int
send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * One admin request over the Unix socket; the status (or -1 when the
 * daemon could not be reached or did not answer in time), the body in
 * body (NUL-terminated, truncated to blen).
 */
static int
admin_req(const char *method, const char *path, const char *json,
    char *body, size_t blen)
{
	char head[512], *buf, *b;
	size_t len = 0;
	ssize_t n;
	int fd, hn, st;

	if ((fd = dial_unix(admin_path)) == -1)
		return -1;
	hn = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: egressd\r\n"
	    "Connection: close\r\n%sContent-Length: %zu\r\n\r\n", method, path,
	    json ? "Content-Type: application/json\r\n" : "",
	    json ? strlen(json) : 0);
	if (send_all(fd, head, (size_t)hn) == -1 ||
	    (json && send_all(fd, json, strlen(json)) == -1)) {
		close(fd);
		return -1;
	}
	if ((buf = malloc(RESP_MAX + 1)) == NULL)
		fatal("out of memory");
	while (len < RESP_MAX) {
		n = recv(fd, buf + len, RESP_MAX - len, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 ||
	    (b = strstr(buf, "\r\n\r\n")) == NULL) {
		free(buf);
		return -1;
	}
	st = atoi(buf + 9);
	if (body != NULL && blen > 0)
		snprintf(body, blen, "%s", b + 4);
	free(buf);
	return st;
}

/* A JSON string member "key":"…" of a flat object, copied to out. */
static int
json_strval(const char *j, const char *key, char *out, size_t olen)
{
	char pat[80];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	if ((p = strstr(j, pat)) == NULL)
		return -1;
	p += strlen(pat);
	if ((e = strchr(p, '"')) == NULL || (size_t)(e - p) >= olen)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

/*
 * CONNECT host:up_port through the proxy socket at path; the status
 * code, with the tunnel's descriptor in *fdp when it is 200 (closed
 * otherwise); -1 if the proxy could not be reached or did not answer.
 */
static int
tunnel(const char *path, const char *host, int *fdp)
{
	char req[256], head[2048];
	size_t len = 0;
	ssize_t n;
	int fd, st;

	*fdp = -1;
	if ((fd = dial_unix(path)) == -1)
		return -1;
	n = snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: "
	    "%s:%u\r\n\r\n", host, up_port, host, up_port);
	if (send_all(fd, req, (size_t)n) == -1) {
		close(fd);
		return -1;
	}
	while (len < sizeof(head) - 1) {
		if ((n = recv(fd, head + len, 1, 0)) <= 0)
			break;
		len++;
		if (len >= 4 && memcmp(head + len - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[len] = '\0';
	if (len < 12 || strncmp(head, "HTTP/1.", 7) != 0) {
		close(fd);
		return -1;
	}
	st = atoi(head + 9);
	if (st == 200)
		*fdp = fd;
	else
		close(fd);
	return st;
}

/* 1 when the peer has closed fd (EOF or reset) within ms milliseconds. */
static int
closed_within(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char c;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* --- egressd ------------------------------------------------------------ */

static long
proc_rss_kib(void)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)eg_pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

static int
count_dir(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int
proc_fds(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)eg_pid);
	return count_dir(path);
}

static void
start_egressd(void)
{
	char conf[320], errf[320], proxy[320], line[512];
	int i, st, maxc = n_tun + 4 * n_sess + 1000;
	FILE *f;

	snprintf(conf, sizeof(conf), "%s/egressd.ini", work);
	snprintf(errf, sizeof(errf), "%s/egressd.err", work);
	snprintf(proxy, sizeof(proxy), "%s/proxy.sock", work);
	if ((f = fopen(conf, "w")) == NULL)
		fatal("%s: %s", conf, strerror(errno));
	fprintf(f, "[proxy]\nunix = %s\nadmin = %s\nsession_dir = %s\n"
	    "max_sessions = %d\naudit_log = %s\naudit_format = text\n"
	    "phase = a\nmax_connections = %d\nmax_connections_per_client = %d\n"
	    "admin_max_connections = 4096\nidle_timeout = 3600\n"
	    "[hosts]\na.bench.test = 127.0.0.1\nb.bench.test = 127.0.0.1\n"
	    "[phase:a]\nallow = a.bench.test:%u\n"
	    "[phase:b]\nallow = b.bench.test:%u\n",
	    proxy, admin_path, sdir, n_sess + BUSY_SESSIONS + 8, audit_path,
	    maxc, maxc, up_port, up_port);
	fclose(f);
	if ((eg_pid = fork()) == -1)
		fatal("fork: %s", strerror(errno));
	if (eg_pid == 0) {
		int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(egressd_bin, egressd_bin, "-c", conf, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {	/* 10 s */
		if (waitpid(eg_pid, &st, WNOHANG) == eg_pid) {
			eg_pid = -1;
			fprintf(stderr, "sessions: egressd exited (%s %d) before "
			    "its admin socket appeared; its output:\n",
			    WIFEXITED(st) ? "status" : "signal",
			    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			if ((f = fopen(errf, "r")) != NULL) {
				while (fgets(line, sizeof(line), f) != NULL)
					fprintf(stderr, "  %s", line);
				fclose(f);
			}
			fatal("this egressd does not take the sessions "
			    "configuration ([proxy] session_dir, max_sessions):"
			    " is it built without sessions (issue 12)?");
		}
		if (admin_req("GET", "/healthz", NULL, NULL, 0) == 200)
			return;
		usleep(100000);
	}
	fatal("egressd did not answer on %s within 10 s", admin_path);
}

/* --- sessions ----------------------------------------------------------- */

struct sess {
	char	 name[NAME_MAX_ + 1];
	char	 sock[400];
	int	 phase;		/* 0 = a, 1 = b: the current one */
	int	 held;		/* a tunnel in flight */
};

static struct sess *ss;
static const char *phase_name[] = { "a", "b" };
static const char *phase_host[] = { "a.bench.test", "b.bench.test" };

/* Create session s in phase ph; the status, after fatal() for a daemon
 * without the route. */
static int
sess_create(struct sess *s, int ph)
{
	char json[160], body[1024];
	int st;

	snprintf(json, sizeof(json), "{\"name\":\"%s\",\"phase\":\"%s\"}",
	    s->name, phase_name[ph]);
	st = admin_req("POST", "/v1/sessions", json, body, sizeof(body));
	if (st == 404 || st == 405 || st == 501)
		if (strstr(body, "phase") == NULL)
			fatal("POST /v1/sessions answered %d (%s): this "
			    "egressd has no sessions API (issue 12)", st, body);
	if (st == -1)
		fatal("POST /v1/sessions: no answer from egressd");
	if (st == 201) {
		if (json_strval(body, "socket", s->sock, sizeof(s->sock)) == -1)
			snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", sdir,
			    s->name);
		s->phase = ph;
	}
	return st;
}

static int
sess_delete(struct sess *s)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/sessions/%.64s", s->name);
	return admin_req("DELETE", path, NULL, NULL, 0);
}

static int
sess_set_phase(struct sess *s, int ph)
{
	char path[128], json[64];
	int st;

	snprintf(path, sizeof(path), "/v1/sessions/%.64s/phase", s->name);
	snprintf(json, sizeof(json), "{\"phase\":\"%s\"}", phase_name[ph]);
	if ((st = admin_req("PUT", path, json, NULL, 0)) == 200)
		s->phase = ph;
	return st;
}

/* --- 2: concurrent switches --------------------------------------------- */

struct wres {
	int	 bad_open, bad_switch, not_closed, bad_new, bad_old;
};

static pthread_barrier_t bar;

struct warg {
	int		 t;
	struct wres	 r;
	int		*held;	/* per session: the held tunnel */
};

static void *
switch_main(void *arg)
{
	struct warg *w = arg;
	struct sess *s;
	int i, st, fd, ph;

	/* every session gets a tunnel in flight, in its current phase */
	for (i = w->t; i < n_sess; i += n_thr) {
		s = &ss[i];
		st = tunnel(s->sock, phase_host[s->phase], &w->held[i]);
		if (st != 200)
			w->r.bad_open++;
	}
	pthread_barrier_wait(&bar);
	/* all in flight: switch every session, concurrently across threads */
	for (i = w->t; i < n_sess; i += n_thr) {
		s = &ss[i];
		ph = !s->phase;
		if (sess_set_phase(s, ph) != 200) {
			w->r.bad_switch++;
			continue;
		}
		/* the old phase's tunnel is closed before the 200 */
		if (w->held[i] != -1) {
			if (!closed_within(w->held[i], 0) &&
			    !closed_within(w->held[i], 2000))
				w->r.not_closed++;
			close(w->held[i]);
			w->held[i] = -1;
		}
		if ((st = tunnel(s->sock, phase_host[ph], &fd)) != 200)
			w->r.bad_new++;
		if (fd != -1)
			close(fd);
		if ((st = tunnel(s->sock, phase_host[!ph], &fd)) != 403)
			w->r.bad_old++;
		if (fd != -1)
			close(fd);
	}
	return NULL;
}

/* The value of key= in a text audit line (up to a space), or NULL. */
static const char *
kv(const char *line, const char *key, char *out, size_t olen)
{
	char pat[32];
	const char *p, *e;
	size_t n;

	snprintf(pat, sizeof(pat), " %s=", key);
	if ((p = strstr(line, pat)) == NULL)
		return NULL;
	p += strlen(pat);
	e = p + strcspn(p, " \n");
	n = (size_t)(e - p) < olen - 1 ? (size_t)(e - p) : olen - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return out;
}

static int
sess_index(const char *name)
{
	int i;

	if (name[0] != 's' || strlen(name) != 5)
		return -1;
	i = atoi(name + 1);
	return i >= 0 && i < n_sess && strcmp(ss[i].name, name) == 0 ? i : -1;
}

/*
 * Every audit line of a session sN: SESSION open sets its phase, each
 * ALLOW/BLOCK must carry the session's phase at that point and the
 * verdict that phase gives its host, each PHASE line must come from it.
 */
static void
check_audit(void)
{
	char line[2048], ev[16], tgt[256], v[128], name[80];
	int *cur, i, lines = 0, bad = 0, nses = 0, shown = 0, ph;
	FILE *f;

	if ((cur = malloc(sizeof(int) * (size_t)n_sess)) == NULL)
		fatal("out of memory");
	for (i = 0; i < n_sess; i++)
		cur[i] = -1;
	if ((f = fopen(audit_path, "r")) == NULL)
		fatal("%s: %s", audit_path, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%*s %15s %255s", ev, tgt) != 2)
			continue;
		if (strcmp(ev, "SESSION") == 0) {
			if ((i = sess_index(tgt)) < 0)
				continue;
			if (kv(line, "action", v, sizeof(v)) != NULL &&
			    strcmp(v, "open") == 0) {
				nses++;
				cur[i] = kv(line, "phase", v, sizeof(v)) &&
				    strcmp(v, "b") == 0;
			}
			continue;
		}
		if (kv(line, "session", name, sizeof(name)) == NULL ||
		    (i = sess_index(name)) < 0)
			continue;
		lines++;
		if (cur[i] < 0) {
			bad++;
			if (shown++ < 5)
				printf("  before its SESSION open: %s", line);
			continue;
		}
		if (strcmp(ev, "PHASE") == 0) {
			ph = strcmp(tgt, "b") == 0;
			if (kv(line, "from", v, sizeof(v)) == NULL ||
			    strcmp(v, phase_name[cur[i]]) != 0) {
				bad++;
				if (shown++ < 5)
					printf("  PHASE from another phase: "
					    "%s", line);
			}
			cur[i] = ph;
			continue;
		}
		if (strcmp(ev, "ALLOW") != 0 && strcmp(ev, "BLOCK") != 0)
			continue;
		if (kv(line, "phase", v, sizeof(v)) == NULL ||
		    strcmp(v, phase_name[cur[i]]) != 0 ||
		    (strcmp(ev, "ALLOW") == 0) !=
		    (strncmp(tgt, phase_host[cur[i]],
		    strlen(phase_host[cur[i]])) == 0)) {
			bad++;
			if (shown++ < 5)
				printf("  decided with the wrong phase (session "
				    "in %s): %s", phase_name[cur[i]], line);
		}
	}
	fclose(f);
	free(cur);
	check(nses == n_sess, "audit: %d SESSION open lines for %d sessions",
	    nses, n_sess);
	check(lines >= n_sess * 4 && bad == 0, "audit: %d lines carrying "
	    "session=, %d decided or switched with another phase", lines,
	    bad);
}

static void
run_isolation(void)
{
	struct warg *w;
	pthread_t *th;
	struct wres sum = { 0, 0, 0, 0, 0 };
	int i, *held;
	uint64_t t0;

	w = calloc((size_t)n_thr, sizeof(*w));
	th = calloc((size_t)n_thr, sizeof(*th));
	held = malloc(sizeof(int) * (size_t)n_sess);
	if (w == NULL || th == NULL || held == NULL)
		fatal("out of memory");
	for (i = 0; i < n_sess; i++)
		held[i] = -1;
	pthread_barrier_init(&bar, NULL, (unsigned)n_thr);
	t0 = now_us();
	for (i = 0; i < n_thr; i++) {
		w[i].t = i;
		w[i].held = held;
		if (pthread_create(&th[i], NULL, switch_main, &w[i]) != 0)
			fatal("pthread_create");
	}
	for (i = 0; i < n_thr; i++) {
		pthread_join(th[i], NULL);
		sum.bad_open += w[i].r.bad_open;
		sum.bad_switch += w[i].r.bad_switch;
		sum.not_closed += w[i].r.not_closed;
		sum.bad_new += w[i].r.bad_new;
		sum.bad_old += w[i].r.bad_old;
	}
	pthread_barrier_destroy(&bar);
	printf("isolation: %d sessions, %d threads, %.2f s\n", n_sess, n_thr,
	    (double)(now_us() - t0) / 1e6);
	check(sum.bad_open == 0, "a CONNECT in flight in every session (%d "
	    "not opened)", sum.bad_open);
	check(sum.bad_switch == 0, "every session's phase switched (%d "
	    "refused)", sum.bad_switch);
	check(sum.not_closed == 0, "the switched-away tunnel closed before "
	    "the 200 (%d still open)", sum.not_closed);
	check(sum.bad_new == 0 && sum.bad_old == 0, "after the switch: new "
	    "phase's host 200 (%d wrong), old phase's host 403 (%d wrong)",
	    sum.bad_new, sum.bad_old);
	for (i = 0; i < n_sess; i++)
		if (held[i] != -1)
			close(held[i]);
	free(held);
	free(th);
	free(w);
	usleep(300000);		/* CLOSE lines of our own closes */
	check_audit();
}

/* --- 4: switch latency -------------------------------------------------- */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* p50 and p99 (µs) of n_switch switches of s. */
static void
switch_latency(struct sess *s, uint64_t *p50, uint64_t *p99, int *bad)
{
	uint64_t *lat, t0;
	int i;

	if ((lat = malloc(sizeof(uint64_t) * (size_t)n_switch)) == NULL)
		fatal("out of memory");
	for (i = 0; i < n_switch; i++) {
		t0 = now_us();
		if (sess_set_phase(s, !s->phase) != 200)
			(*bad)++;
		lat[i] = now_us() - t0;
	}
	qsort(lat, (size_t)n_switch, sizeof(*lat), cmp_u64);
	*p50 = lat[n_switch / 2];
	*p99 = lat[(n_switch * 99) / 100 >= n_switch ? n_switch - 1 :
	    (n_switch * 99) / 100];
	free(lat);
}

static void
run_latency(void)
{
	struct sess q, busy[BUSY_SESSIONS];
	uint64_t p50a, p99a, p50b, p99b;
	int *fds, i, k, st, bad = 0, opened = 0;

	memset(&q, 0, sizeof(q));
	snprintf(q.name, sizeof(q.name), "quiet");
	if (sess_create(&q, 0) != 201)
		fatal("cannot create session quiet");
	for (k = 0; k < BUSY_SESSIONS; k++) {
		memset(&busy[k], 0, sizeof(busy[k]));
		snprintf(busy[k].name, sizeof(busy[k].name), "busy%d", k);
		if (sess_create(&busy[k], 0) != 201)
			fatal("cannot create session %s", busy[k].name);
	}
	switch_latency(&q, &p50a, &p99a, &bad);
	if ((fds = malloc(sizeof(int) * (size_t)n_tun)) == NULL)
		fatal("out of memory");
	for (i = 0; i < n_tun; i++) {
		st = tunnel(busy[i % BUSY_SESSIONS].sock, phase_host[0],
		    &fds[i]);
		if (st == 200)
			opened++;
	}
	check(opened == n_tun, "%d of %d tunnels open in %d other sessions",
	    opened, n_tun, BUSY_SESSIONS);
	switch_latency(&q, &p50b, &p99b, &bad);
	check(bad == 0, "%d switches of session quiet answered 200 (%d not)",
	    2 * n_switch, bad);
	printf("switch latency, nothing open:      p50 %6.3f ms  p99 %6.3f "
	    "ms\n", p50a / 1e3, p99a / 1e3);
	printf("switch latency, %5d open elsewhere: p50 %6.3f ms  p99 %6.3f "
	    "ms\n", opened, p50b / 1e3, p99b / 1e3);
	check(p99b <= 2 * p99a, "p99 with %d tunnels open in other sessions "
	    "within 2x of nothing open (%.2fx; target <= 2x)", opened,
	    p99a ? (double)p99b / (double)p99a : 0.0);
	for (i = 0; i < n_tun; i++)
		if (fds[i] != -1)
			close(fds[i]);
	free(fds);
	sess_delete(&q);
	for (k = 0; k < BUSY_SESSIONS; k++)
		sess_delete(&busy[k]);
}

/*
 * --switch: the p50/p99 time to the admin 200 of one session's phase
 * switch with counts[] tunnels open in nine other sessions, interleaved:
 * every round visits each count (forward on odd rounds, backward on even
 * ones, so a drift of the machine hits every count alike), opens or closes
 * tunnels to reach it, waits until egressd is idle, and times n_switch
 * switches.  Prints one line per count: p50 and p99 over all its samples,
 * the [min-max] of the per-round p99s, and the ratio of p99s to count 0.
 */
static int
fds_settle(int want)
{
	int i, n = -1, last = -1;

	/* egressd's descriptors: stable for 300 ms, and at want if given */
	for (i = 0; i < 300; i++) {
		n = proc_fds();
		if (n == last && (want < 0 || n <= want))
			break;
		last = n;
		usleep(100000);
	}
	return n;
}

static void
run_switch_interleaved(void)
{
	struct sess q, busy[BUSY_SESSIONS];
	uint64_t **lat, *rp99, *all, p50, p99, p99_0 = 0;
	int *fds, nopen = 0, r, ci, c, i, k, st, bad = 0, fd0, maxc = 0;
	double rmin, rmax;

	memset(&q, 0, sizeof(q));
	snprintf(q.name, sizeof(q.name), "quiet");
	if (sess_create(&q, 0) != 201)
		fatal("cannot create session quiet");
	for (k = 0; k < BUSY_SESSIONS; k++) {
		memset(&busy[k], 0, sizeof(busy[k]));
		snprintf(busy[k].name, sizeof(busy[k].name), "busy%d", k);
		if (sess_create(&busy[k], 0) != 201)
			fatal("cannot create session %s", busy[k].name);
	}
	for (ci = 0; ci < n_counts; ci++)
		if (counts[ci] > maxc)
			maxc = counts[ci];
	lat = calloc((size_t)n_counts, sizeof(*lat));
	rp99 = calloc((size_t)n_counts * (size_t)n_rounds, sizeof(*rp99));
	all = malloc(sizeof(uint64_t) * (size_t)n_switch * (size_t)n_rounds);
	fds = malloc(sizeof(int) * (size_t)(maxc + 1));
	if (lat == NULL || rp99 == NULL || all == NULL || fds == NULL)
		fatal("out of memory");
	for (ci = 0; ci < n_counts; ci++)
		if ((lat[ci] = malloc(sizeof(uint64_t) * (size_t)n_switch *
		    (size_t)n_rounds)) == NULL)
			fatal("out of memory");
	fd0 = fds_settle(-1);
	for (r = 0; r < n_rounds; r++) {
		for (c = 0; c < n_counts; c++) {
			ci = r % 2 ? n_counts - 1 - c : c;
			while (nopen > counts[ci])
				close(fds[--nopen]);
			while (nopen < counts[ci]) {
				st = tunnel(busy[nopen % BUSY_SESSIONS].sock,
				    phase_host[0], &fds[nopen]);
				if (st != 200)
					fatal("tunnel %d: %d", nopen, st);
				nopen++;
			}
			/* egressd: 2 descriptors per tunnel, then quiet */
			fds_settle(fd0 + 2 * nopen);
			for (i = 0; i < n_switch; i++) {
				uint64_t t0 = now_us();

				if (sess_set_phase(&q, !q.phase) != 200)
					bad++;
				lat[ci][r * n_switch + i] = now_us() - t0;
			}
			memcpy(all, lat[ci] + r * n_switch,
			    sizeof(uint64_t) * (size_t)n_switch);
			qsort(all, (size_t)n_switch, sizeof(*all), cmp_u64);
			rp99[ci * n_rounds + r] = all[(n_switch * 99) / 100];
		}
	}
	check(bad == 0, "%d switches of session quiet answered 200 (%d not)",
	    n_switch * n_rounds * n_counts, bad);
	for (ci = 0; ci < n_counts; ci++) {
		size_t n = (size_t)n_switch * (size_t)n_rounds;

		qsort(lat[ci], n, sizeof(uint64_t), cmp_u64);
		p50 = lat[ci][n / 2];
		p99 = lat[ci][(n * 99) / 100];
		rmin = rmax = (double)rp99[ci * n_rounds];
		for (r = 1; r < n_rounds; r++) {
			double v = (double)rp99[ci * n_rounds + r];

			rmin = v < rmin ? v : rmin;
			rmax = v > rmax ? v : rmax;
		}
		if (ci == 0)
			p99_0 = p99;
		printf("switch open=%d samples=%zu p50_ms=%.3f p99_ms=%.3f "
		    "round_p99_min_ms=%.3f round_p99_max_ms=%.3f "
		    "p99_vs_first=%.2f\n", counts[ci], n, p50 / 1e3,
		    p99 / 1e3, rmin / 1e3, rmax / 1e3,
		    p99_0 ? (double)p99 / (double)p99_0 : 0.0);
		if (ci > 0 && counts[ci] >= 9000)
			check(p99 <= 2 * p99_0, "p99 with %d tunnels open in "
			    "other sessions within 2x of %d open (%.2fx; "
			    "target <= 2x)", counts[ci], counts[0],
			    p99_0 ? (double)p99 / (double)p99_0 : 0.0);
	}
	while (nopen > 0)
		close(fds[--nopen]);
	for (ci = 0; ci < n_counts; ci++)
		free(lat[ci]);
	free(lat);
	free(rp99);
	free(all);
	free(fds);
	sess_delete(&q);
	for (k = 0; k < BUSY_SESSIONS; k++)
		sess_delete(&busy[k]);
}

/* --- main --------------------------------------------------------------- */

static void
usage(void)
{
	fprintf(stderr, "usage: sessions -e EGRESSD [-n SESSIONS] "
	    "[-t TUNNELS] [-k SWITCHES] [-j THREADS] [--keep]\n"
	    "       sessions -e EGRESSD --switch [-T N,N,...] [-k SWITCHES] "
	    "[-r ROUNDS] [--keep]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "egressd", required_argument, NULL, 'e' },
		{ "keep", no_argument, NULL, 'K' },
		{ "switch", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	struct rlimit rl;
	long rss0, rss1;
	uint64_t t0, dt;
	int c, i, st, bad, fds0, fds1, need;

	while ((c = getopt_long(argc, argv, "e:n:t:k:j:r:T:", lo, NULL)) != -1)
		switch (c) {
		case 'S': switch_only = 1; break;
		case 'r': n_rounds = atoi(optarg); break;
		case 'T': {
			char *e = optarg;

			for (n_counts = 0; n_counts < 8 && *e != '\0';) {
				counts[n_counts++] = (int)strtol(e, &e, 10);
				if (*e == ',')
					e++;
				else if (*e != '\0')
					usage();
			}
			break;
		}
		case 'e': egressd_bin = optarg; break;
		case 'n': n_sess = atoi(optarg); break;
		case 't': n_tun = atoi(optarg); break;
		case 'k': n_switch = atoi(optarg); break;
		case 'j': n_thr = atoi(optarg); break;
		case 'K': keep = 1; break;
		default: usage();
		}
	if (egressd_bin == NULL || n_sess < 1 || n_sess > 9999 || n_tun < 0 ||
	    n_switch < 1 || n_thr < 1 || n_thr > 256 || n_rounds < 1 ||
	    n_counts < 1)
		usage();
	if (switch_only)
		for (n_tun = i = 0; i < n_counts; i++) {
			if (counts[i] < 0)
				usage();
			if (counts[i] > n_tun)
				n_tun = counts[i];
		}
	if (access(egressd_bin, X_OK) == -1)
		fatal("%s: %s", egressd_bin, strerror(errno));
	signal(SIGPIPE, SIG_IGN);

	/*
	 * The bench holds both ends of every tunnel; egressd two fds each.
	 * The isolation step's tunnels (at most two per session) are all
	 * closed before the latency step opens its n_tun: the larger of the
	 * two is what is open at once.
	 */
	need = 2 * (n_tun > 2 * n_sess ? n_tun : 2 * n_sess) + 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)need ? rl.rlim_max :
		    (rlim_t)need;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need)
		fatal("RLIMIT_NOFILE is %lu, %d are needed (ulimit -n, or "
		    "lower -t)", (unsigned long)rl.rlim_cur, need);

	snprintf(work, sizeof(work), "%s/egressd-sessions.XXXXXX",
	    getenv("BENCH_TMP") ? getenv("BENCH_TMP") : "/tmp");
	if (mkdtemp(work) == NULL) {
		work[0] = '\0';
		fatal("mkdtemp: %s", strerror(errno));
	}
	snprintf(admin_path, sizeof(admin_path), "%s/admin.sock", work);
	snprintf(sdir, sizeof(sdir), "%s/sessions", work);
	snprintf(audit_path, sizeof(audit_path), "%s/audit.log", work);
	start_upstream();
	start_egressd();
	if ((ss = calloc((size_t)n_sess, sizeof(*ss))) == NULL)
		fatal("out of memory");
	for (i = 0; i < n_sess; i++)
		snprintf(ss[i].name, sizeof(ss[i].name), "s%04d", i);
	if (switch_only) {
		run_switch_interleaved();
		printf("%s: %d check%s failed\n", failures ? "FAILED" :
		    "PASSED", failures, failures == 1 ? "" : "s");
		cleanup();
		return failures ? 1 : 0;
	}

	/* 1: create */
	fds0 = proc_fds();
	rss0 = proc_rss_kib();
	t0 = now_us();
	for (i = bad = 0; i < n_sess; i++)
		if ((st = sess_create(&ss[i], i % 2)) != 201 && bad++ < 3)
			printf("  POST %s: %d\n", ss[i].name, st);
	dt = now_us() - t0;
	rss1 = proc_rss_kib();
	check(bad == 0, "create %d sessions: %.3f s (%d refused; target "
	    "well under 1 s)", n_sess, (double)dt / 1e6, bad);
	check(rss1 - rss0 <= 8L * n_sess, "RSS per idle session: %.2f KiB "
	    "(%ld KiB -> %ld KiB; target <= 8 KiB)",
	    (double)(rss1 - rss0) / n_sess, rss0, rss1);
	if (bad)
		fatal("sessions could not be created");

	/* 2: isolation under concurrent switches */
	run_isolation();

	/* 3: delete */
	t0 = now_us();
	for (i = bad = 0; i < n_sess; i++)
		if ((st = sess_delete(&ss[i])) != 200 && bad++ < 3)
			printf("  DELETE %s: %d\n", ss[i].name, st);
	dt = now_us() - t0;
	check(bad == 0, "delete %d sessions: %.3f s (%d refused; target "
	    "well under 1 s)", n_sess, (double)dt / 1e6, bad);
	for (i = 0; i < 50 && (fds1 = proc_fds()) > fds0; i++)
		usleep(100000);
	check(fds1 <= fds0, "egressd descriptors after deleting all: %d "
	    "(%d before creating)", fds1, fds0);
	check(count_dir(sdir) == 0, "session_dir empty after deleting all "
	    "(%d left)", count_dir(sdir));

	/* 4: switch latency with tunnels open elsewhere */
	run_latency();

	printf("%s: %d check%s failed\n", failures ? "FAILED" : "PASSED",
	    failures, failures == 1 ? "" : "s");
	cleanup();
	return failures ? 1 : 0;
}
