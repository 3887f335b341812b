/*
 * cancel.c: egressd replay --cancel DIR [--reason TEXT].  The request is
 * a file in the run's private folder (the supervisor polls it, and a
 * SIGUSR1 to its identity-checked pid wakes it); with no live
 * supervisor, the running steps' keepers are signalled directly and the
 * next --resume finishes the cancel.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/fsutil.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"
#include "job.h"

/* --- --cancel ---------------------------------------------------------------- */

int
rp_cancel(const char *dir, const char *reason)
{
	struct rp_run run;
	struct rp_receipt r;
	struct dirent *de;
	DIR *d;
	int dfd, privfd, stepsfd, fd, sent = 0;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1 || rp_run_read(dfd, &run) == -1) {
		rp_warn("%s: not a replay record directory", dir);
		if (dfd != -1)
			close(dfd);
		return RP_EX_USAGE;
	}
	privfd = openat(dfd, RP_PRIV, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (privfd == -1 || strcmp(run.state, "running") != 0) {
		rp_warn("%s: the run is not running (%s)", dir, run.state);
		if (privfd != -1)
			close(privfd);
		close(dfd);
		return RP_EX_FAIL;
	}
	if (reason == NULL || reason[0] == '\0')
		reason = "cancelled";
	if (mc_write_atomic(privfd, "cancel", reason, strlen(reason), 0600)
	    == -1) {
		rp_warn("%s/%s/cancel: %s", dir, RP_PRIV, strerror(errno));
		close(privfd);
		close(dfd);
		return RP_EX_RUNTIME;
	}
	close(privfd);
	/* the supervisor, if it is the one that wrote run.json */
	if (run.sup_pid != 0 && rp_ident_signal((pid_t)run.sup_pid,
	    run.sup_start, SIGUSR1) == 0)
		sent = 1;
	if (!sent) {
		/* no supervisor: stop running keepers ourselves */
		stepsfd = openat(dfd, "steps", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		d = stepsfd != -1 ? fdopendir(stepsfd) : NULL;
		while (d != NULL && (de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			fd = openat(dirfd(d), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd == -1)
				continue;
			if (rp_receipt_read(fd, &r) == 0 && r.pid != 0 &&
			    rp_ident_signal((pid_t)r.pid, r.pid_start,
			    SIGTERM) == 0)
				fprintf(stderr, "egressd replay: step %s "
				    "(pid %ld): stopped\n", r.step, r.pid);
			close(fd);
		}
		if (d != NULL)
			closedir(d);
		else if (stepsfd != -1)
			close(stepsfd);
		fprintf(stderr, "egressd replay: %s: no supervisor is "
		    "running; --resume %s finishes the cancel\n", dir, dir);
	}
	close(dfd);
	return RP_EX_OK;
}
