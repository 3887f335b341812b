/*
 * tcpopt.c: no pacing between two ends on this host.
 *
 * BBR, a common fleet default, paces every segment with a timer so as not
 * to overrun a queue on the path.  Between two ends on one host there is
 * no such queue, yet Linux paces loopback connections all the same, and a
 * bulk tunnel then waits on those timers: on a bbr host, unpaced, one
 * tunnel went from 0.65-0.76x to 0.97-1.10x a direct connection and
 * egressd's CPU per MB from 216-299 us to 130-182 (doc/PERFORMANCE.md,
 * "The wait, found").  So the legs egressd owns inside this host (its loopback
 * listeners, whose accepted sockets inherit the listener's choice, and
 * connections to a loopback upstream) use cubic, Linux's own default,
 * when the host's default is something else.  The legs that leave the
 * host keep the host's choice.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <unistd.h>

#include "tcpopt.h"

static const char	*local_cc = "";	/* "" leaves the host's default */
static pthread_once_t	 local_once = PTHREAD_ONCE_INIT;

static int
cc_is(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* Once per process: which algorithm local legs get, if any. */
static void
local_probe(void)
{
	static const char *const cand[] = { "cubic", "reno" };
	char cur[16];			/* TCP_CA_NAME_MAX */
	socklen_t len = sizeof(cur);
	size_t i, n;
	int fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cur, &len) == 0) {
		n = strnlen(cur, len);
		if (cc_is(cur, n, "cubic") || cc_is(cur, n, "reno")) {
			close(fd);
			return;
		}
	}
	for (i = 0; i < nitems(cand); i++)
		if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cand[i],
		    (socklen_t)strlen(cand[i])) == 0) {
			local_cc = cand[i];
			break;
		}
	close(fd);
}

void
eg_tcp_local(int fd)
{
	pthread_once(&local_once, local_probe);
	if (*local_cc != '\0')
		setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, local_cc,
		    (socklen_t)strlen(local_cc));
}
