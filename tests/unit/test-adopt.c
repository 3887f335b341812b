/*
 * test-adopt.c: egress_adopt_fd() (sockets handed in, as systemd's
 * socket activation does) and egress_ping() (the watchdog's liveness
 * check), through the public API: what is refused and why, an adopted
 * listener that replaces the configured one at the same address, and a
 * ping that fails while a loop thread is stuck (in an event callback)
 * and succeeds again once it is not.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "egress.h"
#include "tap.h"

static int stuck_ms;			/* the callback sleeps this long */

static void
on_event(const struct egress_event *ev, void *arg)
{
	int ms = __atomic_load_n(&stuck_ms, __ATOMIC_RELAXED);

	(void)ev;
	(void)arg;
	if (ms > 0)
		usleep((useconds_t)ms * 1000);
}

/* A listening TCP socket on 127.0.0.1, any port; *port gets it. */
static int
tcp_listener(unsigned *port, int do_listen)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    (do_listen && listen(fd, 16) == -1) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

static int
connect_to(unsigned port)
{
	struct sockaddr_in sin;
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int
main(void)
{
	static const char req[] = "CONNECT nope.test:443 HTTP/1.1\r\n\r\n";
	char ini[512], buf[256];
	struct egress *ex;
	unsigned port, p2;
	int fd, fd2, c, fl;
	ssize_t n;

	fd = tcp_listener(&port, 1);
	ok(fd != -1, "a listening socket to hand in (port %u)", port);
	snprintf(ini, sizeof(ini), "[proxy]\nlisten = 127.0.0.1:%u\n"
	    "admin = none\naudit_log = none\nworkers = 2\n"
	    "[phase:a]\nallow = a.test:443\n", port);
	ex = egress_new_from_string(ini, buf, sizeof(buf));
	ok(ex != NULL, "egress_new_from_string: %s", ex ? "ok" : buf);
	if (ex == NULL)
		return done_testing();

	/* refusals: the caller keeps the descriptor */
	is_int(egress_adopt_fd(ex, fd, "web"), -1, "unknown role refused");
	ok(errno == EINVAL && strstr(egress_errmsg(ex), "unknown role 'web'"),
	    "EINVAL, and the message names the role: %s", egress_errmsg(ex));
	is_int(egress_adopt_fd(ex, 0 + 1000, "proxy"), -1,
	    "a descriptor that is not open is refused");
	fd2 = tcp_listener(&p2, 0);
	is_int(egress_adopt_fd(ex, fd2, "proxy"), -1,
	    "a bound socket that does not listen is refused");
	ok(strstr(egress_errmsg(ex), "not a listening stream socket") !=
	    NULL, "... as not listening: %s", egress_errmsg(ex));
	is_int(egress_adopt_fd(ex, fd2, "admin"), -1,
	    "... for the admin API too");
	close(fd2);
	ok(fcntl(fd, F_GETFD) != -1, "a refused descriptor stays open");

	is_int(egress_ping(ex, 100), -1, "egress_ping before running: -1");

	/* the configured 127.0.0.1:PORT is this socket: no bind(), no
	 * EADDRINUSE */
	is_int(egress_adopt_fd(ex, fd, "proxy"), 0, "adopt a proxy listener");
	fl = fcntl(fd, F_GETFL);
	ok(fl != -1 && (fl & O_NONBLOCK), "it is made non-blocking");
	ok((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "and close-on-exec");
	egress_subscribe(ex, on_event, NULL);
	ok(egress_start(ex) == 0, "egress_start with the configured address "
	    "adopted: %s", egress_errmsg(ex));
	is_int(egress_adopt_fd(ex, 1000, "proxy"), -1,
	    "adopting after egress_start is refused");
	ok(egress_run_thread(ex) == 0, "egress_run_thread");

	is_int(egress_ping(ex, 1000), 1, "every loop answers a ping");

	/* a loop stuck in an event callback: the ping says so */
	__atomic_store_n(&stuck_ms, 1500, __ATOMIC_RELAXED);
	c = connect_to(port);
	ok(c != -1, "connect to the adopted listener");
	n = write(c, req, sizeof(req) - 1);
	ok(n == (ssize_t)sizeof(req) - 1, "send a CONNECT (blocked host)");
	usleep(200 * 1000);	/* the BLOCK callback is sleeping now */
	is_int(egress_ping(ex, 200), 0, "a loop stuck for 1.5 s does not "
	    "answer a 200 ms ping");
	__atomic_store_n(&stuck_ms, 0, __ATOMIC_RELAXED);
	n = read(c, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	ok(strncmp(buf, "HTTP/1.1 403 ", 13) == 0,
	    "the adopted listener served the request (403)");
	close(c);
	is_int(egress_ping(ex, 2000), 1, "once unstuck, the ping answers");

	egress_stop(ex);
	egress_join(ex);
	is_int(egress_ping(ex, 100), -1, "egress_ping after stop: -1");
	egress_free(ex);
	ok(fcntl(fd, F_GETFD) == -1 && errno == EBADF,
	    "egress_free closed the adopted descriptor");
	return done_testing();
}
