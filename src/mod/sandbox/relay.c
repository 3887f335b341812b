/*
 * relay.c: "egressd relay", the one door out of the sandbox.  It listens
 * on 127.0.0.1:PORT inside the sandbox's empty network namespace and
 * copies every accepted connection, byte for byte and with half-closes,
 * to the proxy's Unix socket bound in from outside; it runs the command
 * as its child, under a seccomp filter that leaves it no Unix socket of
 * its own (seccomp.c), and exits with the command's status.  The relay is
 * not filtered, so it makes itself undumpable: the command, under the
 * same uid, cannot ptrace it (or open its /proc/PID/mem) to borrow its
 * sockets.  The same loop serves "egressd run --sandbox none" from a
 * thread, without the filter.
 *
 * With --handoff (the proxy's socket is one egressd made for its own
 * relay: egressd run's in-process proxy, a replay's), the relay copies
 * nothing: for each client it finds the process that connected (its
 * socket's inode in /proc/net/tcp, then /proc/PID/fd; the relay shares
 * the command's PID and network namespaces), and passes the client's
 * TCP socket itself to the proxy with SCM_RIGHTS behind a PROXY
 * protocol v2 header naming that process (src/lib/relayhdr.h).  egressd
 * then serves the TCP client directly: the audit line names pid and
 * exe, and a close for policy resets the client instead of ending its
 * download with a FIN that looks like a complete transfer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* accept4 */
#endif
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relayhdr.h"
#include "module.h"
#include "sandbox.h"

/* One direction of a connection: bytes read from one side, not yet
 * written to the other. */
struct rl_pipe {
	char	 buf[SB_RELAY_BUFSZ];
	size_t	 off, len;	/* pending: buf[off .. off+len) */
	int	 eof;		/* the reading side sent FIN */
	int	 shut;		/* FIN passed on (SHUT_WR done) */
};

struct rl_conn;

/* An epoll registration: which side of which connection. */
struct rl_side {
	struct rl_conn	*c;
	int		 fd;
	int		 idx;		/* 0: TCP client, 1: Unix */
	uint32_t	 events;	/* current interest */
};

struct rl_conn {
	struct rl_side	 side[2];
	struct rl_pipe	 p[2];		/* p[i]: read from side i */
	struct rl_conn	*next;		/* the loop's list */
	int		 dead;
};

struct rl_loop {
	int		 ep;
	int		 lfd;
	int		 handoff;	/* pass clients on, copy nothing */
	const char	*sockpath;
	struct rl_conn	*conns;
	size_t		 nconns;
};

static void
rl_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
rl_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int
sb_relay_listen(uint16_t port, uint16_t *bound, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	socklen_t slen;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		rl_err(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		rl_err(err, errlen, "bind 127.0.0.1:%u: %s", port,
		    strerror(errno));
		goto fail;
	}
	if (listen(fd, 128) == -1) {
		rl_err(err, errlen, "listen: %s", strerror(errno));
		goto fail;
	}
	slen = sizeof(sin);
	if (getsockname(fd, (struct sockaddr *)&sin, &slen) == -1) {
		rl_err(err, errlen, "getsockname: %s", strerror(errno));
		goto fail;
	}
	if (bound != NULL)
		*bound = ntohs(sin.sin_port);
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * Connect to the proxy's Unix socket.  The connect itself blocks (a Unix
 * connect completes at once unless the backlog is full; SO_SNDTIMEO
 * bounds that wait), then the socket becomes non-blocking.
 */
static int
rl_unix_connect(const char *path)
{
	struct sockaddr_un sun;
	struct timeval tv = { 2, 0 };
	size_t len;
	int fd;

	len = strlen(path);
	if (len >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static void
rl_conn_kill(struct rl_loop *l, struct rl_conn *c)
{
	int i;

	if (c->dead)
		return;
	for (i = 0; i < 2; i++) {
		if (c->side[i].events != 0)
			(void)epoll_ctl(l->ep, EPOLL_CTL_DEL, c->side[i].fd,
			    NULL);
		close(c->side[i].fd);
		c->side[i].fd = -1;
	}
	c->dead = 1;
}

/*
 * Interest follows from the buffers: read side i while p[i] has room
 * and no FIN came; write side i while p[1-i] holds bytes for it.
 */
static int
rl_conn_arm(struct rl_loop *l, struct rl_conn *c)
{
	struct epoll_event ev;
	struct rl_side *s;
	uint32_t want;
	int i, op;

	for (i = 0; i < 2; i++) {
		s = &c->side[i];
		want = 0;
		if (!c->p[i].eof && c->p[i].len < sizeof(c->p[i].buf))
			want |= EPOLLIN;
		if (c->p[1 - i].len > 0)
			want |= EPOLLOUT;
		if (want == s->events)
			continue;
		/*
		 * A side with nothing to do leaves the set: EPOLLHUP is
		 * reported whatever the interest, and would spin.
		 */
		memset(&ev, 0, sizeof(ev));
		ev.events = want;
		ev.data.ptr = s;
		if (want == 0)
			op = EPOLL_CTL_DEL;
		else if (s->events == 0)
			op = EPOLL_CTL_ADD;
		else
			op = EPOLL_CTL_MOD;
		if (epoll_ctl(l->ep, op, s->fd, &ev) == -1)
			return -1;
		s->events = want;
	}
	return 0;
}

/*
 * Move bytes as far as possible without blocking.  Returns 0 while the
 * connection lives, -1 when it is finished or broken.
 */
static int
rl_conn_pump(struct rl_conn *c)
{
	struct rl_pipe *p;
	ssize_t n;
	int i, progress;

	do {
		progress = 0;
		for (i = 0; i < 2; i++) {
			p = &c->p[i];
			/* read from side i into p */
			if (!p->eof && p->len < sizeof(p->buf)) {
				if (p->off > 0 && p->len > 0)
					memmove(p->buf, p->buf + p->off,
					    p->len);
				p->off = 0;
				n = read(c->side[i].fd, p->buf + p->len,
				    sizeof(p->buf) - p->len);
				if (n > 0) {
					p->len += (size_t)n;
					progress = 1;
				} else if (n == 0) {
					p->eof = 1;
					progress = 1;
				} else if (errno != EAGAIN &&
				    errno != EWOULDBLOCK && errno != EINTR)
					return -1;
			}
			/* write p to the other side */
			if (p->len > 0) {
				n = send(c->side[1 - i].fd, p->buf + p->off,
				    p->len, MSG_NOSIGNAL);
				if (n > 0) {
					p->off += (size_t)n;
					p->len -= (size_t)n;
					if (p->len == 0)
						p->off = 0;
					progress = 1;
				} else if (n == -1 && errno != EAGAIN &&
				    errno != EWOULDBLOCK && errno != EINTR)
					return -1;
			}
			/* pass a FIN on once everything before it is out */
			if (p->eof && p->len == 0 && !p->shut) {
				(void)shutdown(c->side[1 - i].fd, SHUT_WR);
				p->shut = 1;
			}
		}
	} while (progress && !(c->p[0].shut && c->p[1].shut));
	if (c->p[0].shut && c->p[1].shut)
		return -1;
	return 0;
}

/*
 * The inode of the client's end of the connection accepted as cfd: the
 * line of /proc/net/tcp (or tcp6, for a dual-stack socket) whose local
 * address is cfd's peer and whose remote address is cfd's own.  0 when
 * there is none (the client is gone).
 */
static unsigned long
rl_client_inode(int cfd)
{
	static const char *const files[] = { "/proc/net/tcp",
	    "/proc/net/tcp6" };
	struct sockaddr_in me, peer;
	socklen_t sl;
	char want4[40], want6[80], line[512], loc[80], rem[80];
	unsigned long ino;
	size_t i;
	FILE *f;

	sl = sizeof(me);
	if (getsockname(cfd, (struct sockaddr *)&me, &sl) == -1 ||
	    me.sin_family != AF_INET)
		return 0;
	sl = sizeof(peer);
	if (getpeername(cfd, (struct sockaddr *)&peer, &sl) == -1 ||
	    peer.sin_family != AF_INET)
		return 0;
	/* the kernel prints each 32-bit word of the address as %08X */
	for (i = 0; i < nitems(files); i++) {
		if ((f = fopen(files[i], "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (sscanf(line, " %*u: %79[0-9A-Fa-f:] "
			    "%79[0-9A-Fa-f:] %*x %*x:%*x %*x:%*x %*x %*u %*u "
			    "%lu", loc, rem, &ino) != 3 || ino == 0)
				continue;
			snprintf(want4, sizeof(want4), "%s%08X:%04X",
			    i == 0 ? "" : "0000000000000000FFFF0000",
			    (unsigned)peer.sin_addr.s_addr,
			    ntohs(peer.sin_port));
			snprintf(want6, sizeof(want6), "%s%08X:%04X",
			    i == 0 ? "" : "0000000000000000FFFF0000",
			    (unsigned)me.sin_addr.s_addr, ntohs(me.sin_port));
			if (strcasecmp(loc, want4) == 0 &&
			    strcasecmp(rem, want6) == 0) {
				fclose(f);
				return ino;
			}
		}
		fclose(f);
	}
	return 0;
}

/*
 * The process holding the socket with inode ino (the lowest PID of
 * those that do: a forked child shares its parent's), and its
 * executable.  0 when none is found or readable.
 */
static pid_t
rl_inode_owner(unsigned long ino, char *exe, size_t exelen)
{
	char want[64], path[64], link[64];
	struct dirent *de, *fe;
	DIR *pd, *fd;
	pid_t best = 0;
	long pid;
	ssize_t n;
	char *end;

	exe[0] = '\0';
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	if ((pd = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(pd)) != NULL) {
		errno = 0;
		pid = strtol(de->d_name, &end, 10);
		if (errno != 0 || *end != '\0' || pid <= 0 ||
		    pid == (long)getpid() || (best != 0 && pid >= best))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		if ((fd = opendir(path)) == NULL)
			continue;
		while ((fe = readdir(fd)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/fd/%.20s", pid,
			    fe->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strcmp(link, want) == 0) {
				best = (pid_t)pid;
				break;
			}
		}
		closedir(fd);
	}
	closedir(pd);
	if (best != 0) {
		snprintf(path, sizeof(path), "/proc/%ld/exe", (long)best);
		n = readlink(path, exe, exelen - 1);
		exe[n > 0 ? n : 0] = '\0';
	}
	return best;
}

/*
 * Hand the client cfd over to the proxy: connect, send the header with
 * cfd attached, close our copies.  A client that cannot be handed over
 * is reset.
 */
static void
rl_handoff(struct rl_loop *l, int cfd)
{
	struct sockaddr_in me, peer;
	struct linger lg = { 1, 0 };
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int))];
	} cb;
	struct cmsghdr *cm;
	uint8_t *hdr = NULL;
	char *exe = NULL;
	unsigned long ino;
	socklen_t sl;
	size_t len;
	pid_t pid = 0;
	int ufd = -1, ok = 0;

	if ((hdr = eg_malloc(EG_RLY_MAX)) == NULL ||
	    (exe = eg_malloc(PATH_MAX + 1)) == NULL)
		goto out;
	exe[0] = '\0';
	sl = sizeof(me);
	if (getsockname(cfd, (struct sockaddr *)&me, &sl) == -1)
		goto out;
	sl = sizeof(peer);
	if (getpeername(cfd, (struct sockaddr *)&peer, &sl) == -1)
		goto out;
	if ((ino = rl_client_inode(cfd)) != 0)
		pid = rl_inode_owner(ino, exe, PATH_MAX + 1);
	len = eg_relay_hdr_build(hdr, EG_RLY_MAX, peer.sin_addr.s_addr,
	    peer.sin_port, me.sin_addr.s_addr, me.sin_port, (uint32_t)pid,
	    exe);
	if (len == 0 || (ufd = rl_unix_connect(l->sockpath)) == -1)
		goto out;
	(void)fcntl(ufd, F_SETFL, fcntl(ufd, F_GETFL) & ~O_NONBLOCK);
	memset(&msg, 0, sizeof(msg));
	memset(&cb, 0, sizeof(cb));
	iov.iov_base = hdr;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cb.b;
	msg.msg_controllen = sizeof(cb.b);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &cfd, sizeof(int));
	/* one message: the proxy reads the descriptor with its first byte
	 * (a blocked send times out after SO_SNDTIMEO) */
	ok = sendmsg(ufd, &msg, MSG_NOSIGNAL) == (ssize_t)len;
out:
	if (!ok)
		(void)setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	if (ufd != -1)
		close(ufd);
	close(cfd);
	eg_free(hdr);
	eg_free(exe);
}

static void
rl_accept(struct rl_loop *l)
{
	struct epoll_event ev;
	struct rl_conn *c;
	int cfd, ufd, i;

	for (;;) {
		cfd = accept4(l->lfd, NULL, NULL,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd == -1)
			return;		/* EAGAIN, or try again later */
		if (l->handoff) {
			rl_handoff(l, cfd);
			continue;
		}
		if (l->nconns >= SB_RELAY_MAXCONN) {
			close(cfd);
			continue;
		}
		ufd = rl_unix_connect(l->sockpath);
		if (ufd == -1) {
			/* the client sees a reset; nothing else to say */
			close(cfd);
			continue;
		}
		c = eg_calloc(1, sizeof(*c));
		if (c == NULL) {
			close(cfd);
			close(ufd);
			continue;
		}
		c->side[0].fd = cfd;
		c->side[1].fd = ufd;
		for (i = 0; i < 2; i++) {
			c->side[i].c = c;
			c->side[i].idx = i;
			c->side[i].events = EPOLLIN;
			memset(&ev, 0, sizeof(ev));
			ev.events = EPOLLIN;
			ev.data.ptr = &c->side[i];
			if (epoll_ctl(l->ep, EPOLL_CTL_ADD, c->side[i].fd,
			    &ev) == -1) {
				if (i == 1)
					(void)epoll_ctl(l->ep, EPOLL_CTL_DEL,
					    cfd, NULL);
				close(cfd);
				close(ufd);
				eg_free(c);
				c = NULL;
				break;
			}
		}
		if (c == NULL)
			continue;
		c->next = l->conns;
		l->conns = c;
		l->nconns++;
	}
}

/* Free the connections marked dead during the last batch of events. */
static void
rl_reap(struct rl_loop *l)
{
	struct rl_conn **pp, *c;

	pp = &l->conns;
	while (*pp != NULL) {
		c = *pp;
		if (c->dead) {
			*pp = c->next;
			eg_free(c);
			l->nconns--;
		} else
			pp = &c->next;
	}
}

int
sb_relay_loop(int lfd, const char *sockpath, int handoff,
    const struct sb_relay_ctl *ctl, char *err, size_t errlen)
{
	struct epoll_event ev, evs[64];
	struct rl_loop l;
	struct rl_side *s;
	struct rl_conn *c;
	int n, i, stop = 0;
	static char lmark, cmark;	/* epoll tags for lfd and ctl->fd */

	memset(&l, 0, sizeof(l));
	l.lfd = lfd;
	l.handoff = handoff;
	l.sockpath = sockpath;
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	if (l.ep == -1) {
		rl_err(err, errlen, "epoll_create1: %s", strerror(errno));
		return -1;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &lmark;
	if (epoll_ctl(l.ep, EPOLL_CTL_ADD, lfd, &ev) == -1)
		goto fail;
	if (ctl != NULL && ctl->fd != -1) {
		ev.data.ptr = &cmark;
		if (epoll_ctl(l.ep, EPOLL_CTL_ADD, ctl->fd, &ev) == -1)
			goto fail;
	}
	while (!stop) {
		n = epoll_wait(l.ep, evs, (int)nitems(evs), -1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &lmark) {
				rl_accept(&l);
				continue;
			}
			if (evs[i].data.ptr == &cmark) {
				if (ctl->cb(ctl->arg))
					stop = 1;
				continue;
			}
			s = evs[i].data.ptr;
			c = s->c;
			if (c->dead)
				continue;
			if ((evs[i].events & EPOLLERR) != 0 ||
			    rl_conn_pump(c) == -1 || rl_conn_arm(&l, c) == -1)
				rl_conn_kill(&l, c);
		}
		rl_reap(&l);
	}
	for (c = l.conns; c != NULL; c = c->next)
		rl_conn_kill(&l, c);
	rl_reap(&l);
	close(l.ep);
	return 0;
fail:
	rl_err(err, errlen, "epoll: %s", strerror(errno));
	for (c = l.conns; c != NULL; c = c->next)
		rl_conn_kill(&l, c);
	rl_reap(&l);
	close(l.ep);
	return -1;
}

/*
 * The relay process: signals arrive on a signalfd; SIGTERM, SIGINT and
 * SIGHUP are passed on to the command, SIGCHLD ends the loop once the
 * command has exited.
 */
struct rl_proc {
	int	sfd;
	pid_t	child;
	int	status;
	int	done;
};

static int
rl_proc_cb(void *arg)
{
	struct rl_proc *rp = arg;
	struct signalfd_siginfo si;
	pid_t pid;
	int st;

	while (read(rp->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		if (rp->child > 0 && !rp->done)
			(void)kill(rp->child, (int)si.ssi_signo);
	}
	/* reap everything: orphans may be re-parented to us */
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid == rp->child) {
			rp->status = st;
			rp->done = 1;
		}
	}
	return rp->done;
}

static const char relay_usage[] =
"usage: egressd relay --socket PATH --port N [--ready-fd FD] [--exec-fd FD]\n"
"                     [--handoff] -- CMD [ARGS]\n"
"\n"
"Listen on 127.0.0.1:N, forward every connection to the Unix socket PATH\n"
"(--handoff: pass it there, with the process that connected, when PATH\n"
"is a socket egressd made for its own relay),\n"
"run CMD with HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (and lower case) set to\n"
"http://127.0.0.1:N, and exit with its status (128+N for a signal).\n"
"--exec-fd FD: when CMD cannot be executed, its errno (an int) is written\n"
"there, so that the launcher tells that apart from CMD's own exit.\n"
"egressd run starts this inside the sandbox; it is seldom run by hand.\n";

/* The number optarg of option what in [lo, hi]: 0, or -1 said. */
static int
opt_num(const char *what, long lo, long hi, long *out)
{
	if (sb_num(optarg, lo, hi, out) == 0)
		return 0;
	fprintf(stderr, "egressd relay: bad %s '%s'\n", what, optarg);
	return -1;
}

int
sb_relay_main(int argc, char *argv[])
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "handoff", no_argument, NULL, 'H' },
		{ "exec-fd", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const char *const pvars[] = {
		"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
		"ALL_PROXY", "all_proxy"
	};
	struct sb_relay_ctl ctl;
	struct sb_filter *filt;
	struct rl_proc rp;
	sigset_t mask, omask;
	const char *sock = NULL;
	char err[256], url[64];
	long port = -1, rfd = -1, xfd = -1;
	uint16_t bound;
	size_t i;
	int ch, lfd, handoff = 0;

	optind = 0;	/* glibc: full re-initialisation */
	while ((ch = getopt_long(argc, argv, "+h", lopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'p':
			if (opt_num("port", 1, 65535, &port) == -1)
				return 2;
			break;
		case 'r':
			if (opt_num("--ready-fd", 3, 1023, &rfd) == -1)
				return 2;
			break;
		case 'H':
			handoff = 1;
			break;
		case 'x':
			if (opt_num("--exec-fd", 3, 1023, &xfd) == -1)
				return 2;
			break;
		case 'h':
			fputs(relay_usage, stdout);
			return 0;
		default:
			fputs(relay_usage, stderr);
			return 2;
		}
	}
	if (sock == NULL || port == -1 || optind >= argc) {
		fputs(relay_usage, stderr);
		return 2;
	}
	if (rfd != -1)
		(void)fcntl((int)rfd, F_SETFD, FD_CLOEXEC);
	/* closed by a successful exec: the command never holds it */
	if (xfd != -1)
		(void)fcntl((int)xfd, F_SETFD, FD_CLOEXEC);
	/* nothing the command executes gains privileges (setuid, caps) */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		fprintf(stderr, "egressd relay: prctl(PR_SET_NO_NEW_PRIVS): "
		    "%s\n", strerror(errno));
		return 3;
	}

	lfd = sb_relay_listen((uint16_t)port, &bound, err, sizeof(err));
	if (lfd == -1) {
		fprintf(stderr, "egressd relay: %s\n", err);
		return 3;
	}
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		fprintf(stderr, "egressd relay: PR_SET_DUMPABLE: %s\n",
		    strerror(errno));
		close(lfd);
		return 3;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", bound);
	for (i = 0; i < nitems(pvars); i++)
		(void)setenv(pvars[i], url, 1);
	(void)setenv("NO_PROXY", EG_SANDBOX_NO_PROXY, 1);
	(void)setenv("no_proxy", EG_SANDBOX_NO_PROXY, 1);

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &omask) == -1)
		return 3;
	memset(&rp, 0, sizeof(rp));
	rp.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (rp.sfd == -1) {
		fprintf(stderr, "egressd relay: signalfd: %s\n",
		    strerror(errno));
		return 3;
	}
	/*
	 * Our sockets exist (the listener; each proxy connection is made
	 * by this process, never by the command): now the filter for the
	 * command, built before fork so that a failure is reported plainly.
	 */
	filt = sb_filter_new(err, sizeof(err));
	if (filt == NULL) {
		fprintf(stderr, "egressd relay: %s\n", err);
		return 3;
	}
	rp.child = fork();
	if (rp.child == -1) {
		fprintf(stderr, "egressd relay: fork: %s\n", strerror(errno));
		sb_filter_free(filt);
		return 3;
	}
	if (rp.child == 0) {
		(void)sigprocmask(SIG_SETMASK, &omask, NULL);
		(void)signal(SIGPIPE, SIG_DFL);
		/* fail closed: never run the command unfiltered */
		if (sb_filter_load(filt, err, sizeof(err)) == -1) {
			fprintf(stderr, "egressd relay: %s\n", err);
			ch = -1;	/* not launched: no sandbox */
			if (xfd != -1)
				(void)write((int)xfd, &ch, sizeof(ch));
			_exit(3);
		}
		execvp(argv[optind], argv + optind);
		ch = errno;
		fprintf(stderr, "egressd: %s: %s\n", argv[optind],
		    strerror(ch));
		if (xfd != -1)
			(void)write((int)xfd, &ch, sizeof(ch));
		_exit(ch == ENOENT ? 127 : 126);
	}
	if (xfd != -1)
		close((int)xfd);
	sb_filter_free(filt);
	/* the sandbox is up and the door is open */
	if (rfd != -1) {
		(void)write((int)rfd, "1", 1);
		close((int)rfd);
	}
	ctl.fd = rp.sfd;
	ctl.cb = rl_proc_cb;
	ctl.arg = &rp;
	if (sb_relay_loop(lfd, sock, handoff, &ctl, err, sizeof(err)) ==
	    -1) {
		fprintf(stderr, "egressd relay: %s\n", err);
		(void)kill(rp.child, SIGKILL);
		while (waitpid(rp.child, &rp.status, 0) == -1 &&
		    errno == EINTR)
			;
		return 3;
	}
	close(lfd);
	close(rp.sfd);
	if (WIFEXITED(rp.status))
		return WEXITSTATUS(rp.status);
	if (WIFSIGNALED(rp.status))
		return 128 + WTERMSIG(rp.status);
	return 3;
}
