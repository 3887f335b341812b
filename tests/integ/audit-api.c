/*
 * audit-api.c: a driver for tests/integ/session-audit.test (and the
 * record tests): one proxy, three sessions (default, s1, s2), through
 * egress.h only.  Exercises egress_session_set_step(),
 * egress_session_set_audit(), egress_session_audit_head() and the
 * run_id option, and prints what each call returned; the test reads
 * the log files it leaves in DIR.
 *
 *	audit-api DIR text|json [CHAIN]
 *
 * DIR/main.log is the main log, DIR/s1.log session s1's own file
 * (egress_session_set_audit(..., chain = CHAIN)).  $AUDIT_API_EXTRA is
 * added to [proxy] (e.g. "audit_chain = yes"); $AUDIT_API_RUN is s1's
 * run id and $AUDIT_API_MAIN_RUN the main log's (option run_id).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"

static int lfd = -1;

static void *
upstream(void *arg)
{
	int fd;

	(void)arg;
	while ((fd = accept(lfd, NULL, NULL)) != -1)
		close(fd);
	return NULL;
}

/* CONNECT through "unix:PATH" or "IP:PORT"; the HTTP status or -1. */
static int
try_connect(const char *addr, int up_port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
	socklen_t sl;
	const char *colon;
	char req[128], resp[256];
	ssize_t n;
	int fd, status = -1;

	memset(&ss, 0, sizeof(ss));
	if (strncmp(addr, "unix:", 5) == 0) {
		sun->sun_family = AF_UNIX;
		snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", addr + 5);
		sl = sizeof(*sun);
	} else {
		if ((colon = strrchr(addr, ':')) == NULL)
			return -1;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)atoi(colon + 1));
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sl = sizeof(*sin);
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, sl) == -1) {
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

static void
head(struct egress *ex, const char *s)
{
	char h[65];
	uint64_t lines = 0;
	int rc;

	errno = 0;
	rc = egress_session_audit_head(ex, s, h, &lines);
	if (rc == 0)
		printf("head %s: %s lines=%llu\n", s ? s : "default", h,
		    (unsigned long long)lines);
	else
		printf("head %s: rc=%d errno=%s\n", s ? s : "default", rc,
		    errno == ENOTSUP ? "ENOTSUP" : errno == ENOENT ? "ENOENT" :
		    strerror(errno));
	fflush(stdout);
}

int
main(int argc, char *argv[])
{
	char cfg[4096], err[2048], sock[2][128], addr[2][64], path[512];
	char dsock[600], run[64];
	const char *extra = getenv("AUDIT_API_EXTRA");
	const char *mrun = getenv("AUDIT_API_MAIN_RUN");
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct egress *ex;
	pthread_t up;
	int up_port, one = 1, ok = 1, chain, rc;

	if (argc < 3) {
		fprintf(stderr, "usage: audit-api DIR text|json [CHAIN]\n");
		return 2;
	}
	chain = argc > 3 ? atoi(argv[3]) : 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 16) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) == -1) {
		perror("audit-api: upstream");
		return 1;
	}
	up_port = ntohs(sin.sin_port);
	pthread_create(&up, NULL, upstream, NULL);

	snprintf(cfg, sizeof(cfg),
	    "[proxy]\n"
	    "unix = %s/default.sock\n"
	    "admin = none\n"
	    "audit_log = %s/main.log\n"
	    "audit_format = %s\n"
	    "session_dir = %s\n"
	    "workers = 2\n"
	    "%s\n"
	    "[hosts]\n"
	    "upstream.test = 127.0.0.1\n"
	    "[phase:a]\n"
	    "allow = upstream.test:%d\n"
	    "[phase:b]\n", argv[1], argv[1], argv[2], argv[1],
	    extra ? extra : "", up_port);
	snprintf(dsock, sizeof(dsock), "unix:%s/default.sock", argv[1]);
	if ((ex = egress_new_from_string(cfg, err, sizeof(err))) == NULL) {
		fprintf(stderr, "audit-api: configuration:\n%s\n", err);
		return 1;
	}
	if (egress_set_option(ex, "run_id", "not-a-uuid") == 0) {
		printf("run_id: a bad one was accepted\n");
		ok = 0;
	}
	if (mrun != NULL && egress_set_option(ex, "run_id", mrun) == -1) {
		fprintf(stderr, "audit-api: %s\n", egress_errmsg(ex));
		ok = 0;
	}
	rc = egress_get_option(ex, "run_id", run, sizeof(run));
	printf("run_id: %s (%s)\n", run, rc == 1 ? "set" : "default");
	if (egress_start(ex) == -1 || egress_run_thread(ex) == -1) {
		fprintf(stderr, "audit-api: %s\n", egress_errmsg(ex));
		egress_free(ex);
		return 1;
	}
	if (egress_session_create(ex, "s1", "a", "127.0.0.1:0", 0, NULL, 0,
	    sock[0], sizeof(sock[0]), addr[0], sizeof(addr[0])) == -1 ||
	    egress_session_create(ex, "s2", "a", "127.0.0.1:0", 0, NULL, 0,
	    sock[1], sizeof(sock[1]), addr[1], sizeof(addr[1])) == -1) {
		fprintf(stderr, "audit-api: %s\n", egress_errmsg(ex));
		ok = 0;
		goto out;
	}
	/* bad names and sessions change nothing */
	errno = 0;
	rc = egress_session_set_step(ex, "s1", "bad name");
	printf("set_step bad name: rc=%d %s\n", rc,
	    errno == EINVAL ? "EINVAL" : strerror(errno));
	errno = 0;
	rc = egress_session_set_step(ex, "nope", "x");
	printf("set_step unknown session: rc=%d %s\n", rc,
	    errno == ENOENT ? "ENOENT" : strerror(errno));
	errno = 0;
	rc = egress_session_set_audit(ex, "nope", "/nonexistent", NULL, 0);
	printf("set_audit unknown session: rc=%d %s\n", rc,
	    errno == ENOENT ? "ENOENT" : strerror(errno));

	if (egress_session_set_step(ex, NULL, "warmup") == -1 ||
	    egress_session_set_step(ex, "s1", "build") == -1) {
		fprintf(stderr, "audit-api: %s\n", egress_errmsg(ex));
		ok = 0;
	}
	snprintf(path, sizeof(path), "%s/s1.log", argv[1]);
	if (egress_session_set_audit(ex, "s1", path, getenv("AUDIT_API_RUN"),
	    chain) == -1) {
		fprintf(stderr, "audit-api: set_audit: %s\n",
		    egress_errmsg(ex));
		ok = 0;
	}
	ok &= expect("s1 build", addr[0], up_port, 200);
	ok &= expect("s2", addr[1], up_port, 200);
	ok &= expect("default warmup", dsock, up_port, 200);
	if (egress_session_set_phase(ex, "s1", "b", "api", NULL) == -1)
		ok = 0;
	ok &= expect("s1 in b", addr[0], up_port, 403);
	egress_session_set_step(ex, "s1", NULL);
	ok &= expect("s1 no step", addr[0], up_port, 403);
	head(ex, "s1");
	head(ex, NULL);
	head(ex, "nope");
	if (egress_session_delete(ex, "s1", "api", NULL) == -1 ||
	    egress_session_delete(ex, "s2", "api", NULL) == -1) {
		fprintf(stderr, "audit-api: %s\n", egress_errmsg(ex));
		ok = 0;
	}
out:
	egress_stop(ex);
	egress_join(ex);
	egress_free(ex);
	shutdown(lfd, SHUT_RDWR);
	close(lfd);
	pthread_join(up, NULL);
	printf("audit-api: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
