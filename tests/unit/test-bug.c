/*
 * test-bug.c: EG_BUG, the assertion for impossible states (a second
 * verdict on one connection, a CLOSE without its ALLOW).  It logs
 * "BUG at FILE:LINE: msg" at EGRESS_LOG_ERR; in a debug build (NDEBUG not
 * defined, as make check builds) it then aborts with that line on
 * standard error; non-fatal (the release path), it returns.
 */
#include "egress-int.h"

#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "core.h"
#include "tap.h"

static int ncalls, last_level;
static char last_msg[256];

static void
on_log(int level, const char *msg, void *cb_arg)
{
	(void)cb_arg;
	ncalls++;
	last_level = level;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

/* Fire EG_BUG (fire != 0), or say on which line it fires. */
static int
bug_site(struct egress *ex, int fire)
{
	if (fire)
		EG_BUG(ex, "impossible");
	return __LINE__ - 1;
}

int
main(void)
{
	static const char ini[] =
	    "[proxy]\nlisten = 127.0.0.1:1\nadmin = none\n"
	    "[phase:a]\nallow = a.test:443\n";
	struct egress *ex;
	char err[1024], out[512], want[64];
	int fds[2], status, line;
	ssize_t n;
	size_t len = 0;
	pid_t pid;

	ex = egress_new_from_string(ini, err, sizeof(err));
	ok(ex != NULL, "egress_new_from_string: %s", ex != NULL ? "ok" : err);
	if (ex == NULL)
		return done_testing();
	egress_set_log_cb(ex, on_log, NULL);

	/* the release path: logged, then the caller goes on */
	eg_bug(ex, "conn.c", 42, "a second verdict", 0);
	is_int(ncalls, 1, "non-fatal: logged once");
	is_int(last_level, EGRESS_LOG_ERR, "non-fatal: at EGRESS_LOG_ERR");
	is_str(last_msg, "BUG at conn.c:42: a second verdict",
	    "non-fatal: names file:line and the message");
	eg_bug(NULL, "conn.c", 43, "no egress", 0);
	is_int(ncalls, 1, "non-fatal, no egress: nothing logged, returns");

	/* the debug build: EG_BUG aborts, saying where on stderr */
#ifdef NDEBUG
	ok(1, "# SKIP built with NDEBUG: EG_BUG does not abort");
#else
	/* nothing buffered for the child to write again as it dies (TSan
	 * flushes stdio on the abort) */
	fflush(stdout);
	if (pipe(fds) == -1 || (pid = fork()) == -1) {
		ok(0, "pipe/fork: %s", strerror(errno));
		return done_testing();
	}
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		bug_site(ex, 1);
		_exit(0);	/* not reached in a debug build */
	}
	line = bug_site(ex, 0);
	close(fds[1]);
	while (len < sizeof(out) - 1 &&
	    (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	    "debug build: EG_BUG aborts (status %#x)", (unsigned)status);
	snprintf(want, sizeof(want), "test-bug.c:%d: impossible\n", line);
	ok(strstr(out, want) != NULL, "debug build: stderr says %s", want);
	ok(strncmp(out, "BUG at ", 7) == 0, "debug build: the line starts "
	    "with 'BUG at' (%s)", out);
#endif
	egress_free(ex);
	return done_testing();
}
