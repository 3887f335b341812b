/*
 * keeper.c: "egressd replay --keeper", the small process that runs one
 * step's command and outlives the supervisor.  The supervisor forks it
 * in a session and process group of its own and execs it (so it holds
 * none of the supervisor's threads or locks), with the step's exact
 * environment.  The keeper
 *  - becomes a subreaper, so that descendants that setsid() away stay
 *    its children and can be found and killed;
 *  - writes its identity (keeper.json) into the step folder;
 *  - runs the command in workdir, stdin /dev/null, stdout and stderr on
 *    pipes it copies into RAW/stdout and RAW/stderr up to a cap (beyond
 *    it, bytes are dropped and RAW/truncated names the stream);
 *  - on SIGTERM/SIGINT (a cancel: the supervisor checked our identity)
 *    or at the deadline: SIGTERM to the whole tree, 2 s, SIGKILL;
 *  - when the command exits: what it left running is stopped the same
 *    way, the output drained, and exit.json written atomically (exit
 *    code or signal, termination, times) before the keeper exits 0.
 * It never reads anything from the supervisor after the exec.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/sig.h"
#include "alloc.h"
#include "clock.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"

struct stream {
	int		 in;		/* pipe read end, -1 at EOF */
	int		 out;		/* RAW/NAME */
	uint64_t	 n;
	int		 truncated;
	const char	*name;
};

/* One read: 1 data, 0 EOF (closed), -1 nothing now. */
static int
pump(struct stream *s, uint64_t cap)
{
	char buf[65536];
	ssize_t n, w, off;
	size_t keep;

	n = read(s->in, buf, sizeof(buf));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return -1;
	if (n <= 0) {
		close(s->in);
		s->in = -1;
		return 0;
	}
	keep = (size_t)n;
	if (s->n + keep > cap) {
		keep = s->n >= cap ? 0 : (size_t)(cap - s->n);
		s->truncated = 1;
	}
	for (off = 0; off < (ssize_t)keep; off += w) {
		w = write(s->out, buf + off, keep - (size_t)off);
		if (w == -1 && errno == EINTR) {
			w = 0;
			continue;
		}
		if (w <= 0)
			break;	/* disk full: counted as written, dropped */
	}
	s->n += keep;
	return 1;
}

static void
reap_all(pid_t child, int *status, int *done)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == child) {
			*status = st;
			*done = 1;
		}
	}
}

static int
tree_empty(void)
{
	size_t n;
	pid_t *d = eg_rp_descendants(getpid(), &n);

	eg_free(d);
	return n == 0;
}

/*
 * argv: --keeper STEPDIR RAWDIR WORKDIR CAP DEADLINE_MS [--launch-fd] --
 * CMD ARGS... (argv[0] is "replay").  With --launch-fd, CMD (egressd run
 * for a sandboxed step) gets the launch-status pipe as descriptor 3 and
 * reports there when the step's own command was never started (no
 * sandbox, exec failure inside it): launch_failed, not the exit status
 * of egressd run.
 */
int
rp_keeper_main(int argc, char *argv[])
{
	static const int waited[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };
	struct stream s[2];
	struct rp_exit x;
	struct signalfd_siginfo si;
	struct pollfd pfd[4];
	sigset_t mask, empty;
	char ident[RP_IDENT_MAX];
	const char *stepdir, *rawdir, *workdir;
	uint64_t cap;
	int64_t deadline, grace = 0, t, now;
	pid_t child;
	int po[2], pe[2], px[2], sfd, stepfd, rawfd, status = 0, done = 0;
	int stage = 0, i, npfd, tmo, exec_errno = 0, nul, tfd, lfd = 0, c0;
	char *end;
	ssize_t n;

	if (argc >= 10 && strcmp(argv[7], "--launch-fd") == 0 &&
	    strcmp(argv[8], "--") == 0)
		lfd = 1;
	else if (argc < 9 || strcmp(argv[7], "--") != 0)
		return 2;
	c0 = lfd ? 9 : 8;	/* the command */
	stepdir = argv[2];
	rawdir = argv[3];
	workdir = argv[4];
	cap = strtoull(argv[5], &end, 10);
	deadline = strtoll(argv[6], &end, 10);
	memset(&x, 0, sizeof(x));
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	(void)signal(SIGPIPE, SIG_IGN);

	stepfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rawfd = open(rawdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (stepfd == -1 || rawfd == -1)
		return 3;
	if (rp_ident_of(getpid(), ident, sizeof(ident)) == -1 ||
	    rp_keeper_write(stepfd, getpid(), ident, 0, NULL) == -1)
		return 3;
	for (i = 0; i < 2; i++) {
		s[i].name = i == 0 ? "stdout" : "stderr";
		s[i].n = 0;
		s[i].truncated = 0;
		s[i].out = openat(rawfd, s[i].name, O_WRONLY | O_CREAT |
		    O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (s[i].out == -1)
			return 3;
	}
	/* our own messages go where the command's stderr goes */
	(void)dup2(s[1].out, 2);
	if (pipe2(po, O_CLOEXEC) == -1 || pipe2(pe, O_CLOEXEC) == -1 ||
	    pipe2(px, O_CLOEXEC) == -1)
		return 3;
	(void)mc_sig_block(&mask, waited, sizeof(waited) / sizeof(waited[0]));
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd == -1)
		return 3;

	x.pid = 0;
	rp_ts_now(x.started);
	if (chdir(workdir) == -1) {
		dprintf(2, "egressd replay: %s: %s\n", workdir,
		    strerror(errno));
		exec_errno = errno;
		child = -1;
		goto finish;
	}
	child = fork();
	if (child == -1) {
		exec_errno = errno;
		goto finish;
	}
	if (child == 0) {
		sigemptyset(&empty);
		sigprocmask(SIG_SETMASK, &empty, NULL);
		(void)signal(SIGPIPE, SIG_DFL);
		nul = open("/dev/null", O_RDONLY);
		if (nul == -1 || dup2(nul, 0) == -1 || dup2(po[1], 1) == -1 ||
		    dup2(pe[1], 2) == -1)
			_exit(127);
		/* fd 3 without close-on-exec: the launcher's to write */
		if (lfd && (px[1] == 3 ? fcntl(3, F_SETFD, 0) :
		    dup2(px[1], 3)) == -1)
			_exit(127);
		execvp(argv[c0], argv + c0);
		i = errno;
		dprintf(2, "egressd replay: cannot execute %s: %s\n", argv[c0],
		    strerror(i));
		(void)write(px[1], &i, sizeof(i));
		_exit(i == ENOENT ? 127 : 126);
	}
	x.pid = child;
	/* the command's identity too: if we die, --resume can still wait */
	{
		char cid[RP_IDENT_MAX];

		if (rp_ident_of(child, cid, sizeof(cid)) == 0)
			(void)rp_keeper_write(stepfd, getpid(), ident, child,
			    cid);
	}
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	s[0].in = po[0];
	s[1].in = pe[0];
	fcntl(s[0].in, F_SETFL, O_NONBLOCK);
	fcntl(s[1].in, F_SETFL, O_NONBLOCK);

	for (;;) {
		npfd = 0;
		pfd[npfd].fd = sfd;
		pfd[npfd++].events = POLLIN;
		for (i = 0; i < 2; i++) {
			pfd[npfd].fd = s[i].in;
			pfd[npfd++].events = POLLIN;
		}
		pfd[npfd].fd = px[0];
		pfd[npfd++].events = POLLIN;
		now = eg_wall_ms();
		t = stage > 0 ? grace : deadline;
		if (done && stage == 0)
			t = now + 100;	/* the leftovers: look again soon */
		tmo = t > 0 ? (t <= now ? 0 : (int)(t - now)) : -1;
		if (tmo > 1000 || tmo == -1)
			tmo = 1000;
		(void)poll(pfd, (nfds_t)npfd, tmo);
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD || si.ssi_signo == SIGHUP)
				continue;
			if (x.termination[0] == '\0' && !done)
				snprintf(x.termination, sizeof(x.termination),
				    "cancelled");
			if (stage == 0) {
				eg_rp_kill_descendants(getpid(), SIGTERM);
				stage = 1;
				grace = eg_wall_ms() + RP_GRACE_MS;
			}
		}
		for (i = 0; i < 2; i++)
			if (s[i].in != -1 && (pfd[1 + i].revents != 0))
				(void)pump(&s[i], cap);
		if (px[0] != -1 && pfd[3].revents != 0) {
			n = read(px[0], &i, sizeof(i));
			if (n == (ssize_t)sizeof(i))
				exec_errno = i;
			close(px[0]);
			px[0] = -1;
		}
		reap_all(child, &status, &done);
		now = eg_wall_ms();
		if (stage == 0 && !done && deadline > 0 && now >= deadline) {
			snprintf(x.termination, sizeof(x.termination),
			    "timeout");
			eg_rp_kill_descendants(getpid(), SIGTERM);
			stage = 1;
			grace = now + RP_GRACE_MS;
		} else if (stage == 0 && done && !tree_empty()) {
			/* the command is gone; what it left is stopped too */
			eg_rp_kill_descendants(getpid(), SIGTERM);
			stage = 1;
			grace = now + RP_GRACE_MS;
		} else if (stage == 1 && now >= grace) {
			eg_rp_kill_descendants(getpid(), SIGKILL);
			stage = 2;
			grace = now + 200;
		} else if (stage == 2 && now >= grace) {
			eg_rp_kill_descendants(getpid(), SIGKILL);
			grace = now + 200;
		}
		if (done && tree_empty()) {
			/* every writer is gone: drain to EOF */
			for (i = 0; i < 2; i++)
				while (s[i].in != -1 && pump(&s[i], cap) == 1)
					;
			break;
		}
	}
	if (px[0] != -1) {
		if (read(px[0], &i, sizeof(i)) == (ssize_t)sizeof(i))
			exec_errno = i;
		close(px[0]);
	}
finish:
	rp_ts_now(x.ended);
	if (exec_errno != 0 && x.termination[0] == '\0') {
		snprintf(x.termination, sizeof(x.termination),
		    "launch_failed");
	} else {
		if (x.termination[0] == '\0')
			snprintf(x.termination, sizeof(x.termination),
			    "exited");
		if (WIFEXITED(status)) {
			x.has_exit = 1;
			x.exit_code = WEXITSTATUS(status);
		} else if (WIFSIGNALED(status)) {
			x.has_signal = 1;
			x.signal = WTERMSIG(status);
		}
	}
	if (exec_errno != 0) {
		/* the launcher's status when it ran (egressd run: 127, or 3
		 * for no sandbox), else what an exec failure gives */
		x.has_exit = 1;
		x.has_signal = 0;
		if (child != -1 && done && WIFEXITED(status))
			x.exit_code = WEXITSTATUS(status);
		else
			x.exit_code = exec_errno == ENOENT ? 127 : 126;
	}
	if (s[0].truncated || s[1].truncated) {
		char buf[32];
		int len;

		len = snprintf(buf, sizeof(buf), "%s%s",
		    s[0].truncated ? "stdout\n" : "",
		    s[1].truncated ? "stderr\n" : "");
		tfd = openat(rawfd, "truncated", O_WRONLY | O_CREAT | O_TRUNC |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (tfd != -1) {
			(void)write(tfd, buf, (size_t)len);
			(void)fsync(tfd);
			close(tfd);
		}
	}
	for (i = 0; i < 2; i++) {
		(void)fsync(s[i].out);
		close(s[i].out);
	}
	(void)fsync(rawfd);
	if (rp_exit_write(stepfd, &x) == -1)
		return 3;
	return 0;
}
