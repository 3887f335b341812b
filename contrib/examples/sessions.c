/*
 * sessions.c: one libegress proxy serving two runs at once, each in a
 * session of its own (egress_session_create()), through egress.h only.
 * Run "a" starts in phase setup, run "b" in judge; each gets a Unix
 * socket in SESSION_DIR and a TCP listener on 127.0.0.1 (port chosen by
 * the kernel).  A client asks each for the same pinned loopback upstream,
 * then run "a" alone is switched to judge, and both are deleted.
 *
 * Build against the installed library:
 *	cc -o sessions sessions.c $(pkg-config --cflags --libs libegress)
 * Run:
 *	./sessions SESSION_DIR [UPSTREAM_PORT]	(default 18433)
 * It prints each session's addresses, each answer and every event that
 * names a session, and exits 0 when every answer was the expected one.
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

/* Called on a loop thread: print, never block. */
static void
on_event(const struct egress_event *ev, void *arg)
{
	(void)arg;
	if (ev->session == NULL)
		return;
	if (ev->type == EGRESS_EV_SESSION)
		printf("event SESSION %s action=%s by=%s\n", ev->session,
		    ev->action, ev->by);
	else if (ev->type == EGRESS_EV_PHASE)
		printf("event PHASE %s session=%s from=%s\n", ev->phase,
		    ev->session, ev->from);
	else if (ev->type == EGRESS_EV_ALLOW || ev->type == EGRESS_EV_BLOCK)
		printf("event %s %s:%u phase=%s session=%s\n",
		    ev->type == EGRESS_EV_ALLOW ? "ALLOW" : "BLOCK", ev->host,
		    ev->port, ev->phase, ev->session);
	fflush(stdout);
}

static void *
upstream(void *arg)
{
	int lfd = *(int *)arg, fd;

	while ((fd = accept(lfd, NULL, NULL)) != -1)
		close(fd);
	return NULL;
}

/* CONNECT through addr ("127.0.0.1:PORT"); the HTTP status or -1. */
static int
try_connect(const char *addr, int up_port)
{
	struct sockaddr_in sin;
	const char *colon = strrchr(addr, ':');
	char req[128], resp[256];
	ssize_t n;
	int fd, status = -1;

	if (colon == NULL)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(colon + 1));
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

static int
expect(const char *what, const char *addr, int up_port, int want)
{
	int st = try_connect(addr, up_port);

	printf("%s: CONNECT answered %d\n", what, st);
	fflush(stdout);
	return st == want;
}

int
main(int argc, char *argv[])
{
	char cfg[1024], err[2048], sock[2][128], addr[2][64];
	static const char *const names[] = { "a", "b" };
	static const char *const start[] = { "setup", "judge" };
	struct sockaddr_in sin;
	struct egress *ex;
	pthread_t up;
	unsigned closed;
	int up_port = argc > 2 ? atoi(argv[2]) : 18433;
	int lfd, one = 1, ok = 1, i;

	if (argc < 2) {
		fprintf(stderr, "usage: sessions SESSION_DIR "
		    "[UPSTREAM_PORT]\n");
		return 2;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)up_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 16) == -1) {
		perror("sessions: upstream");
		return 1;
	}
	pthread_create(&up, NULL, upstream, &lfd);

	/* the default session's own listener is a Unix socket nobody uses */
	snprintf(cfg, sizeof(cfg),
	    "[proxy]\n"
	    "unix = %s/default.sock\n"
	    "admin = none\n"
	    "audit_log = none\n"
	    "session_dir = %s\n"
	    "workers = 2\n"
	    "[hosts]\n"
	    "upstream.test = 127.0.0.1\n"
	    "[phase:setup]\n"
	    "allow = upstream.test:%d\n"
	    "[phase:judge]\n", argv[1], argv[1], up_port);
	if ((ex = egress_new_from_string(cfg, err, sizeof(err))) == NULL) {
		fprintf(stderr, "sessions: configuration:\n%s\n", err);
		return 1;
	}
	if (egress_subscribe(ex, on_event, NULL) == -1 ||
	    egress_start(ex) == -1 || egress_run_thread(ex) == -1) {
		fprintf(stderr, "sessions: %s\n", egress_errmsg(ex));
		egress_free(ex);
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (egress_session_create(ex, names[i], start[i], "127.0.0.1:0",
		    0, NULL, 0, sock[i], sizeof(sock[i]), addr[i],
		    sizeof(addr[i])) == -1) {
			fprintf(stderr, "sessions: %s\n", egress_errmsg(ex));
			ok = 0;
			goto out;
		}
		printf("session %s: socket %s listen %s\n", names[i], sock[i],
		    addr[i]);
	}
	/* the name is taken now: refused, nothing changes */
	if (egress_session_create(ex, "a", NULL, NULL, 0, NULL, 0, NULL, 0,
	    NULL, 0) == 0)
		ok = 0;
	ok &= expect("a in setup", addr[0], up_port, 200);
	ok &= expect("b in judge", addr[1], up_port, 403);
	if (egress_session_set_phase(ex, "a", "judge", "api", &closed) == -1) {
		fprintf(stderr, "sessions: %s\n", egress_errmsg(ex));
		ok = 0;
	}
	ok &= expect("a in judge", addr[0], up_port, 403);
	/* a switch of b never touches a, and the reverse */
	if (egress_session_set_phase(ex, "b", "setup", "api", NULL) == -1)
		ok = 0;
	ok &= expect("b in setup", addr[1], up_port, 200);
	ok &= expect("a still in judge", addr[0], up_port, 403);
	for (i = 0; i < 2; i++)
		if (egress_session_delete(ex, names[i], "api", &closed) == -1) {
			fprintf(stderr, "sessions: %s\n", egress_errmsg(ex));
			ok = 0;
		}
	if (access(sock[0], F_OK) == 0 || access(sock[1], F_OK) == 0)
		ok = 0;		/* the socket files are removed */
	if (egress_session_delete(ex, "default", "api", NULL) == 0)
		ok = 0;
out:
	egress_stop(ex);
	egress_join(ex);
	egress_free(ex);
	shutdown(lfd, SHUT_RDWR);
	close(lfd);
	pthread_join(up, NULL);
	printf("sessions: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
