/*
 * test-procwalk.c: src/mod/common/procwalk, the /proc walker of the
 * sandbox and replay.  A child and a grandchild (named with ") " in their
 * comm, as a hostile command may) are found, parents first, and root is
 * not; the parent is read after the last ')'; an orphan re-parented to us
 * (child subreaper) is still found; a process with no children has none;
 * reads are bounded by the caller's buffer; a child's descriptors from 3
 * up become close-on-exec; mc_proc_reap reaps with the status.  No
 * timing: pipes and waitid(WNOWAIT) order it.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "../../src/mod/common/procwalk.h"
#include "tap.h"

#define NAME	"x) Z 1 (y"		/* a forged "state ppid" in comm */

int
main(void)
{
	int pc[2], rc[2], rg[2];
	pid_t c, g, *d;
	char buf[64], cmp[64], path[64];
	siginfo_t si;
	size_t n;
	int status, done;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1 || pipe(pc) == -1 ||
	    pipe(rc) == -1 || pipe(rg) == -1) {
		printf("1..0 # SKIP no subreaper or pipes\n");
		return 0;
	}
	/* nothing buffered for a child to write again (TSan's _exit()
	 * flushes stdio) */
	fflush(stdout);
	if ((c = fork()) == -1)
		return 1;
	if (c == 0) {
		close(pc[0]);
		close(rc[1]);
		close(rg[1]);
		(void)prctl(PR_SET_NAME, NAME);
		if ((g = fork()) == 0) {
			close(pc[1]);
			(void)read(rg[0], buf, 1);	/* until released */
			_exit(0);
		}
		(void)write(pc[1], &g, sizeof(g));
		(void)read(rc[0], buf, 1);
		_exit(0);
	}
	close(pc[1]);
	close(rc[0]);
	close(rg[0]);
	if (read(pc[0], &g, sizeof(g)) != (ssize_t)sizeof(g))
		g = -1;
	ok(g > 0, "the grandchild started (%d)", (int)g);

	is_int(mc_proc_ppid(c), getpid(), "the child's parent is us");
	is_int(mc_proc_ppid(g), c, "the grandchild's parent is the child, "
	    "read after the last ')' of its comm '%s'", NAME);
	ok(mc_proc_read(c, "comm", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, NAME "\n") == 0, "comm read whole: %s", buf);
	is_int(mc_proc_read(c, "comm", buf, 4), 3,
	    "a read stops at the buffer: 3 bytes and a NUL in 4");
	is_int(strlen(buf), 3, "... NUL-terminated");
	is_int(mc_proc_read(c, "comm", buf, 0), -1, "no buffer: -1");

	d = mc_proc_descendants(getpid(), &n);
	is_int(n, 2, "two descendants");
	ok(d != NULL && n == 2 && d[0] == c && d[1] == g,
	    "the child, then the grandchild (parents first)");
	eg_free(d);
	d = mc_proc_descendants(g, &n);
	ok(d == NULL && n == 0, "the grandchild has none: NULL, 0");
	eg_free(d);

	close(rc[1]);				/* the child exits */
	ok(waitpid(c, NULL, 0) == c, "the child exited");
	is_int(mc_proc_ppid(c), -1, "a reaped process has no parent: -1");
	ok(mc_proc_read(c, "comm", buf, sizeof(buf)) == -1,
	    "nor a comm: -1");
	is_int(mc_proc_ppid(g), getpid(), "the orphan is re-parented to us");
	d = mc_proc_descendants(getpid(), &n);
	ok(d != NULL && n == 1 && d[0] == g, "the orphan is still below us");
	eg_free(d);

	close(rg[1]);				/* the grandchild exits */
	ok(waitpid(g, NULL, 0) == g, "the grandchild exited");
	d = mc_proc_descendants(getpid(), &n);
	ok(d == NULL && n == 0, "nothing left below us");
	eg_free(d);

	/* a child: descriptors from 3 up close-on-exec, 0-2 left alone */
	if (pipe(pc) == -1)
		return 1;
	fflush(stdout);
	if ((c = fork()) == 0) {
		int bad = 0;

		(void)fcntl(pc[1], F_SETFD, 0);
		mc_proc_cloexec_fds();
		bad |= !(fcntl(pc[0], F_GETFD) & FD_CLOEXEC);
		bad |= !(fcntl(pc[1], F_GETFD) & FD_CLOEXEC);
		bad |= (fcntl(2, F_GETFD) & FD_CLOEXEC) != 0;
		_exit(bad ? 1 : 7);
	}
	close(pc[1]);
	ok(c > 0 && waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT) == 0,
	    "the fd child exited (not reaped yet)");
	status = done = 0;
	mc_proc_reap(c, &status, &done);
	ok(done && WIFEXITED(status) && WEXITSTATUS(status) == 7,
	    "mc_proc_reap reaps it with its status: fds 3+ close-on-exec, "
	    "2 not (%d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	ok(waitpid(c, NULL, WNOHANG) == -1, "... and it is gone");
	done = 0;
	mc_proc_reap(c, &status, &done);
	ok(!done, "nothing more to reap: done stays 0");
	close(pc[0]);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)getpid());
	ok(mc_proc_read_file(path, buf, sizeof(buf)) > 0 &&
	    mc_proc_read(getpid(), "comm", cmp, sizeof(cmp)) > 0 &&
	    strcmp(buf, cmp) == 0, "a file by its path: %s", buf);
	ok(mc_proc_read_file("/proc/self/no-such-file", buf, sizeof(buf))
	    == -1, "a missing file: -1");
	return done_testing();
}
