/*
 * embed.c: libegress embedded in a program, through egress.h only.  It
 * starts a proxy from an inline configuration on 127.0.0.1, prints every
 * decision the proxy makes, and switches phases from a second thread
 * while a client thread asks for a pinned loopback upstream in each one.
 *
 * Build against the installed library:
 *	cc -o embed embed.c $(pkg-config --cflags --libs libegress)
 * Run:
 *	./embed [PROXY_PORT [UPSTREAM_PORT]]	(defaults 18431 18432)
 * It prints one line per audit event and exits 0 when the decisions were
 * the expected ones: ALLOW in "setup", BLOCK in "judge".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <egress.h>

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static int nallow, nblock, nphase;

/* Called on a loop thread: print, count, never block. */
static void
on_event(const struct egress_event *ev, void *arg)
{
	static const char *const names[] = {
		"ALLOW", "BLOCK", "FAIL", "CLOSE", "PHASE"
	};

	(void)arg;
	pthread_mutex_lock(&mtx);
	if (ev->type == EGRESS_EV_PHASE) {
		printf("event PHASE %s from=%s by=%s closed=%u\n", ev->phase,
		    ev->from ? ev->from : "-", ev->by ? ev->by : "-",
		    ev->closed);
		nphase++;
	} else {
		printf("event %s %s:%u id=%llu phase=%s%s%s method=%s\n",
		    names[ev->type], ev->host ? ev->host : "-", ev->port,
		    (unsigned long long)ev->id, ev->phase ? ev->phase : "-",
		    ev->reason ? " reason=" : "", ev->reason ? ev->reason : "",
		    ev->method ? ev->method : "-");
		if (ev->type == EGRESS_EV_ALLOW)
			nallow++;
		else if (ev->type == EGRESS_EV_BLOCK)
			nblock++;
	}
	fflush(stdout);
	pthread_mutex_unlock(&mtx);
}

static void
on_log(int level, const char *msg, void *arg)
{
	(void)arg;
	if (level <= EGRESS_LOG_WARN)
		fprintf(stderr, "embed: egress: %s\n", msg);
}

/* A one-connection-at-a-time loopback server that accepts and closes. */
static void *
upstream(void *arg)
{
	int lfd = *(int *)arg, fd;

	while ((fd = accept(lfd, NULL, NULL)) != -1)
		close(fd);
	return NULL;
}

/* CONNECT through the proxy; returns the HTTP status or -1. */
static int
try_connect(int proxy_port, int up_port)
{
	struct sockaddr_in sin;
	char req[128], resp[256];
	ssize_t n;
	int fd, status = -1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)proxy_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	snprintf(req, sizeof(req), "CONNECT upstream.test:%d HTTP/1.1\r\n"
	    "Host: upstream.test:%d\r\n\r\n", up_port, up_port);
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req) &&
	    (n = read(fd, resp, sizeof(resp) - 1)) > 12) {
		resp[n] = '\0';
		status = atoi(resp + 9);
	}
	close(fd);
	return status;
}

struct switcher {
	struct egress	*ex;
	int		 proxy_port, up_port;
	int		 ok;
};

/* The control thread: one request per phase, switching in between. */
static void *
switch_phases(void *arg)
{
	static const char *const phases[] = { "setup", "judge", "setup" };
	static const int want[] = { 200, 403, 200 };
	struct switcher *s = arg;
	unsigned closed;
	size_t i;
	int st;

	s->ok = 1;
	for (i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		if (egress_set_phase(s->ex, phases[i], "api", &closed) == -1) {
			fprintf(stderr, "embed: %s\n", egress_errmsg(s->ex));
			s->ok = 0;
			break;
		}
		st = try_connect(s->proxy_port, s->up_port);
		printf("phase %s: CONNECT answered %d\n", phases[i], st);
		fflush(stdout);
		if (st != want[i])
			s->ok = 0;
	}
	if (egress_set_phase(s->ex, "no-such-phase", "api", NULL) == 0)
		s->ok = 0;
	return NULL;
}

int
main(int argc, char *argv[])
{
	char cfg[1024], err[2048];
	struct sockaddr_in sin;
	struct switcher sw;
	struct egress *ex;
	pthread_t up, ctl;
	int proxy_port = argc > 1 ? atoi(argv[1]) : 18431;
	int up_port = argc > 2 ? atoi(argv[2]) : 18432;
	int lfd, one = 1;

	/* the pinned upstream: upstream.test is 127.0.0.1 */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)up_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 16) == -1) {
		perror("embed: upstream");
		return 1;
	}
	pthread_create(&up, NULL, upstream, &lfd);

	snprintf(cfg, sizeof(cfg),
	    "[proxy]\n"
	    "listen = 127.0.0.1:%d\n"
	    "admin = none\n"
	    "audit_log = none\n"
	    "deny_private = yes\n"
	    "workers = 1\n"
	    "[hosts]\n"
	    "upstream.test = 127.0.0.1\n"
	    "[phase:setup]\n"
	    "allow = upstream.test:%d\n"
	    "[phase:judge]\n", proxy_port, up_port);
	if ((ex = egress_new_from_string(cfg, err, sizeof(err))) == NULL) {
		fprintf(stderr, "embed: configuration:\n%s\n", err);
		return 1;
	}
	egress_set_log_cb(ex, on_log, NULL);
	if (egress_subscribe(ex, on_event, NULL) == -1 ||
	    egress_start(ex) == -1 || egress_run_thread(ex) == -1) {
		fprintf(stderr, "embed: %s\n", egress_errmsg(ex));
		egress_free(ex);
		return 1;
	}
	printf("libegress %s running on 127.0.0.1:%d\n", egress_version(),
	    proxy_port);

	sw.ex = ex;
	sw.proxy_port = proxy_port;
	sw.up_port = up_port;
	pthread_create(&ctl, NULL, switch_phases, &sw);
	pthread_join(ctl, NULL);

	egress_stop(ex);
	egress_join(ex);
	egress_free(ex);
	shutdown(lfd, SHUT_RDWR);
	close(lfd);
	pthread_join(up, NULL);
	printf("allow=%d block=%d phase=%d: %s\n", nallow, nblock, nphase,
	    sw.ok && nallow == 2 && nblock == 1 && nphase == 3 ? "ok" :
	    "FAILED");
	return sw.ok && nallow == 2 && nblock == 1 && nphase == 3 ? 0 : 1;
}
