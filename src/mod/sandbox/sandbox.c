/*
 * sandbox.c: "egressd run -- CMD", the sandbox module's entry point.  It
 * starts the proxy in-process on a private Unix socket (or uses a running
 * egressd's), scrubs the environment, launches CMD inside bubblewrap with
 * egressd relay as the only way out (or directly, with --sandbox none),
 * enforces the timeout and signals on the whole process tree, and exits
 * with CMD's status after a one-line summary of the decisions.  Its
 * other jobs have files of their own (run.h lists them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "../common/procwalk.h"
#include "../common/sig.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 if process pid is named bwrap (comm, always readable). */
static int
is_bwrap(pid_t pid)
{
	char buf[64];

	return mc_proc_read(pid, "comm", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, "bwrap\n") == 0;
}

/*
 * Signal the whole tree below us.  With SIGTERM the bubblewrap processes
 * are spared: killing them tears down the PID namespace at once
 * (--die-with-parent), leaving the command no grace.  pgid is CMD's
 * session leader (the direct child).  We are a child subreaper, so an
 * orphan of our tree is still below us in /proc.
 */
static void
kill_tree(pid_t pgid, int sig, int spare_bwrap)
{
	pid_t *pids;
	size_t n, i;

	if (!spare_bwrap && pgid > 0)
		(void)kill(-pgid, sig);
	pids = mc_proc_descendants(getpid(), &n);
	for (i = 0; pids != NULL && i < n; i++) {
		if (spare_bwrap && is_bwrap(pids[i]))
			continue;
		(void)kill(pids[i], sig);
	}
	eg_free(pids);
}

/* Find CMD in the PATH of envp, as execvp would (before fork). */
static int
resolve_cmd(const char *cmd, char *const *envp, char *out, size_t len)
{
	const char *path = "/usr/local/bin:/usr/bin:/bin", *p, *e;
	size_t i, dl;
	int n;

	if (strchr(cmd, '/') != NULL) {
		n = snprintf(out, len, "%s", cmd);
		return n < 0 || (size_t)n >= len ? -1 : 0;
	}
	for (i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	for (p = path;; p = e + 1) {
		e = strchr(p, ':');
		dl = e == NULL ? strlen(p) : (size_t)(e - p);
		n = snprintf(out, len, "%.*s%s%s", (int)dl, p,
		    dl ? "/" : "", cmd);
		if (n > 0 && (size_t)n < len && access(out, X_OK) == 0)
			return 0;
		if (e == NULL)
			break;
	}
	return -1;
}

/*
 * In the child, before exec: every fd but 0-2 and the two kept ones
 * (-1: none) becomes close-on-exec, so nothing of ours leaks inside.
 */
static void
child_fds(int keep, int keep2, int keep3)
{
	mc_proc_cloexec_fds();
	if (keep != -1)
		(void)fcntl(keep, F_SETFD, 0);
	if (keep2 != -1)
		(void)fcntl(keep2, F_SETFD, 0);
	if (keep3 != -1)
		(void)fcntl(keep3, F_SETFD, 0);
}

/*
 * Start CMD (or bwrap) and supervise it until it exits.  Returns the exit
 * status of egressd run.
 */
static int
supervise(struct run_state *st, const char *execpath, char *const *argv,
    char *const *envp, int sfd, int ready_r, int ready_w, int args_fd,
    int bwrap)
{
	struct signalfd_siginfo si;
	struct sigaction sa;
	struct pollfd pfd[2];
	sigset_t empty;
	double deadline = 0, grace = 0, t;
	pid_t child;
	int status = 0, done = 0, ready = 0, forced = -1, stage = 0;
	int npfd, tmo, e;
	char c;

	child = fork();
	if (child == -1) {
		fprintf(stderr, "egressd: fork: %s\n", strerror(errno));
		return 3;
	}
	if (child == 0) {
		/* async-signal-safe calls only: we have threads */
		(void)setsid();
		sigemptyset(&empty);
		(void)pthread_sigmask(SIG_SETMASK, &empty, NULL);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		(void)sigaction(SIGPIPE, &sa, NULL);
		/* bwrap: the relay inside reports an exec failure; none:
		 * the descriptor stays close-on-exec, ours to report */
		child_fds(ready_w, args_fd, bwrap ? st->o.launch_fd : -1);
		execve(execpath, argv, envp);
		e = errno;
		if (st->o.launch_fd != -1)
			(void)write(st->o.launch_fd, &e, sizeof(e));
		(void)write(2, "egressd: cannot execute ", 24);
		(void)write(2, execpath, strlen(execpath));
		(void)write(2, "\n", 1);
		_exit(e == ENOENT ? 127 : 126);
	}
	if (ready_w != -1)
		close(ready_w);
	if (args_fd != -1)
		close(args_fd);
	if (!bwrap)
		st->launched = 1;
	if (st->o.timeout > 0)
		deadline = now_s() + st->o.timeout;

	while (!done) {
		npfd = 0;
		pfd[npfd].fd = sfd;
		pfd[npfd++].events = POLLIN;
		if (ready_r != -1) {
			pfd[npfd].fd = ready_r;
			pfd[npfd++].events = POLLIN;
		}
		t = stage ? grace : deadline;
		tmo = -1;
		if (t > 0) {
			t -= now_s();
			tmo = t <= 0 ? 0 : (int)(t * 1000) + 1;
		}
		if (poll(pfd, (nfds_t)npfd, tmo) == -1 && errno != EINTR) {
			fprintf(stderr, "egressd: poll: %s\n",
			    strerror(errno));
			forced = 3;
			kill_tree(child, SIGKILL, 0);
			stage = 2;
			(void)poll(NULL, 0, 100);
		}
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			if (forced == -1)
				forced = 128 + (int)si.ssi_signo;
			if (stage == 0) {
				kill_tree(child, SIGTERM, bwrap);
				stage = 1;
				grace = now_s() + 2;
			} else
				grace = now_s();	/* twice: no grace */
		}
		mc_proc_reap(child, &status, &done);
		if (ready_r != -1 && npfd > 1 && pfd[1].revents != 0) {
			if (read(ready_r, &c, 1) == 1)
				ready = 1;
			close(ready_r);
			ready_r = -1;
		}
		if (done)
			break;
		if (stage == 0 && deadline > 0 && now_s() >= deadline) {
			fprintf(stderr, "egressd: timeout after %g s: stopping "
			    "the command\n", st->o.timeout);
			forced = 124;
			kill_tree(child, SIGTERM, bwrap);
			stage = 1;
			grace = now_s() + 2;
		} else if (stage > 0 && now_s() >= grace) {
			kill_tree(child, SIGKILL, 0);
			stage = 2;
			grace = now_s() + 0.2;
		}
	}
	if (ready_r != -1) {
		if (read(ready_r, &c, 1) == 1)
			ready = 1;
		close(ready_r);
	}
	if (bwrap && ready)
		st->launched = 1;
	/* nothing of the run survives it (orphans, daemons) */
	kill_tree(0, SIGTERM, 0);
	for (t = now_s() + 2; now_s() < t;) {
		size_t n;
		pid_t *left = mc_proc_descendants(getpid(), &n);

		eg_free(left);
		mc_proc_reap(-1, &e, &e);
		if (n == 0)
			break;
		(void)poll(NULL, 0, 20);
	}
	kill_tree(0, SIGKILL, 0);
	mc_proc_reap(-1, &e, &e);

	if (forced != -1)
		return forced;
	if (bwrap && !ready) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
			sb_bwrap_explain(execpath);
		else
			fprintf(stderr, "egressd: egressd relay did not start "
			    "inside the sandbox (status %d)\n",
			    WIFEXITED(status) ? WEXITSTATUS(status) :
			    128 + WTERMSIG(status));
		return 3;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 3;
}

static int
run_main(int argc, char *argv[])
{
	static const int waited[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP };
	struct run_state st;
	struct mc_strv envp = { 0 }, cargv = { 0 }, xargv = { 0 };
	struct stat sst;
	sigset_t mask;
	char cwd[PATH_MAX], url[64], execpath[PATH_MAX];
	char hostcmd[PATH_MAX], hint[4 * PATH_MAX];
	int rc, sfd = -1, rp[2] = { -1, -1 }, afd = -1, bwrap, fd;
	uint16_t port;
	size_t i;

	memset(&st, 0, sizeof(st));
	hint[0] = '\0';
	st.o.mode = SB_AUTO;
	st.o.launch_fd = -1;
	rc = sb_run_opts(argc, argv, &st.o);
	if (rc != -1)
		goto done;
	if (st.o.proxy == NULL && (rc = sb_proxy_load(&st)) != 0)
		goto done;
	rc = 3;
	/* keep 0-2 open so no pipe or socket of ours lands there */
	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		fprintf(stderr, "egressd: getcwd: %s\n", strerror(errno));
		goto done;
	}
	bwrap = st.o.mode != SB_NONE;
	if (bwrap && sb_check_cwd(&st.o, cwd) == -1) {
		rc = 2;
		goto done;
	}
	for (i = 0; i < st.o.hide.n; i++) {
		if (strcmp(st.o.hide.v[i], cwd) == 0) {
			fprintf(stderr, "egressd run: --hide %s: that is the "
			    "working directory\n", cwd);
			rc = 2;
			goto done;
		}
	}
	if (st.o.proxy != NULL && (realpath(st.o.proxy, st.proxyrp) == NULL ||
	    stat(st.proxyrp, &sst) == -1 || !S_ISSOCK(sst.st_mode))) {
		fprintf(stderr, "egressd: --proxy %s: not a Unix socket\n",
		    st.o.proxy);
		goto done;
	}
	if (st.o.proxy != NULL && bwrap && sb_check_proxydir(&st, cwd) == -1) {
		rc = 2;
		goto done;
	}
	if (!bwrap)
		fprintf(stderr, "egressd: warning: sandbox none: no "
		    "isolation; the command can reach the network and your "
		    "files directly, only programs that honour HTTPS_PROXY "
		    "go through egressd\n");

	if (sb_privdir(&st.o, bwrap ? cwd : NULL, st.privdir,
	    sizeof(st.privdir)) == -1)
		goto done;
	snprintf(st.sockdir, sizeof(st.sockdir), "%s/sock", st.privdir);
	snprintf(st.sock, sizeof(st.sock), "%s/proxy.sock", st.sockdir);
	if (mkdir(st.sockdir, 0700) == -1) {
		fprintf(stderr, "egressd: mkdir %s: %s\n", st.sockdir,
		    strerror(errno));
		goto done;
	}

	/* signals become events; threads started from here inherit this */
	if (mc_sig_block(&mask, waited, sizeof(waited) / sizeof(waited[0])) ==
	    -1)
		goto done;
	(void)signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd == -1) {
		fprintf(stderr, "egressd: signalfd: %s\n", strerror(errno));
		goto done;
	}
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	if (st.o.proxy == NULL) {
		rc = sb_proxy_start(&st);
		if (rc != 0)
			goto done;
		rc = 3;
	}

	if (bwrap) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", SB_IN_PORT);
		if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) == -1) {
			fprintf(stderr, "egressd: pipe: %s\n",
			    strerror(errno));
			goto done;
		}
		rc = sb_bwrap_prepare(&st, cwd, rp[1], &cargv);
		if (rc != 0)
			goto done;
		rc = 3;
		snprintf(execpath, sizeof(execpath), "%s", cargv.v[0]);
		afd = sb_args_memfd(&cargv, &xargv);
		if (afd == -1)
			goto done;
	} else {
		if (sb_relay_thread(&st, &port) == -1)
			goto done;
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
		mc_strv_add(&cargv, "");	/* placeholder for argv[0] */
	}
	if (sb_env_build(&st.o, st.o.proxy == NULL ? st.ex : NULL, url,
	    &envp) == -1) {
		fprintf(stderr, "egressd: out of memory\n");
		goto done;
	}
	if (bwrap && resolve_cmd(st.o.cmd[0], envp.v, hostcmd,
	    sizeof(hostcmd)) == 0)
		sb_cmd_hint(&st, cwd, st.o.cmd[0], hostcmd, hint, sizeof(hint));
	if (!bwrap) {
		mc_strv_free(&cargv);
		if (resolve_cmd(st.o.cmd[0], envp.v, execpath,
		    sizeof(execpath)) == -1) {
			fprintf(stderr, "egressd: %s: command not found\n",
			    st.o.cmd[0]);
			rc = 127;
			goto done;
		}
	}
	rc = supervise(&st, execpath, bwrap ? xargv.v : st.o.cmd, envp.v,
	    sfd, rp[0], rp[1], afd, bwrap);
	rp[0] = rp[1] = afd = -1;	/* supervise() closed them */
	if (rc == 127 && hint[0] != '\0')
		fputs(hint, stderr);

	sb_run_cleanup(&st);
	if (st.o.proxy == NULL)
		fprintf(stderr, "egressd: %llu allowed, %llu blocked, %llu "
		    "failed \xe2\x80\x94 audit: %s\n", st.cnt.allow,
		    st.cnt.block, st.cnt.fail, st.audit_tmp ?
		    "not kept (--audit PATH or audit_log keeps it)" :
		    strcmp(st.auditpath, "-") == 0 ? "standard output" :
		    st.auditpath);
	if (st.o.proxy == NULL)
		sb_print_blocked(&st.cnt);
done:
	sb_run_cleanup(&st);
	/* CMD never ran: say so to the launcher (egressd replay) */
	if (st.o.launch_fd != -1 && !st.launched) {
		fd = -1;
		(void)write(st.o.launch_fd, &fd, sizeof(fd));
	}
	if (rp[0] != -1)
		close(rp[0]);
	if (rp[1] != -1)
		close(rp[1]);
	if (afd != -1)
		close(afd);
	if (sfd != -1)
		close(sfd);
	mc_strv_free(&envp);
	mc_strv_free(&cargv);
	mc_strv_free(&xargv);
	mc_strv_free(&st.o.rw);
	mc_strv_free(&st.o.ro);
	mc_strv_free(&st.o.env);
	mc_strv_free(&st.o.hide);
	return rc;
}

int
sb_main(int argc, char *argv[])
{
	if (argc > 0 && strcmp(argv[0], "relay") == 0)
		return sb_relay_main(argc, argv);
	return run_main(argc, argv);
}

