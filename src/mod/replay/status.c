/*
 * status.c: egressd replay --status [--json] DIR.  One line per step
 * (index, name, phase, state, termination, exit, seconds,
 * allowed/blocked/failed) under a line for the run; --json prints
 * {"run":RUN,"steps":[RECEIPTS]}, RUN being run.json with the state
 * --status decided.  A run.json that says "running" is believed only
 * while its supervisor (pid and start identity) lives: otherwise the run
 * is "interrupted" and the exit status 3.  Reads only; works while the
 * run is going.
 */
#include <sys/types.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc.h"
#include "clock.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"

/* steps/NN-NAME in index order, NN from 01 up to the first missing. */
static int
step_fd(int stepsfd, int idx, const char *name)
{
	char d[RP_NAME_MAX + 8];

	snprintf(d, sizeof(d), "%02d-%s", idx, name);
	return openat(stepsfd, d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* The folder of step idx, found by its NN- prefix. */
static int
find_step(int stepsfd, int idx)
{
	char pre[16];
	int fd, dfd, found = -1;
	DIR *d;
	struct dirent *de;

	snprintf(pre, sizeof(pre), "%02d-", idx);
	if ((dfd = dup(stepsfd)) == -1 || (d = fdopendir(dfd)) == NULL) {
		if (dfd != -1)
			close(dfd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, pre, 3) != 0)
			continue;
		fd = step_fd(stepsfd, idx, de->d_name + 3);
		if (fd != -1) {
			found = fd;
			break;
		}
	}
	closedir(d);
	return found;
}

static void
secs(const char *a, const char *b, char *out, size_t len)
{
	int64_t s = rp_ts_parse(a), e = b[0] != '\0' ? rp_ts_parse(b) :
	    eg_wall_ms();

	if (s < 0 || e < s)
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.1f", (double)(e - s) / 1000.0);
}

int
rp_status(const char *dir, int json)
{
	struct rp_run run;
	struct rp_receipt r;
	json_t *arr = NULL, *o, *top = NULL, *ro = NULL;
	char ex[16], sc[32], *s;
	int dirfd, stepsfd, fd, i, rc = RP_EX_OK, fdj;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd == -1 || rp_run_read(dirfd, &run) == -1) {
		fprintf(stderr, "egressd replay: %s: not a replay record "
		    "directory\n", dir);
		if (dirfd != -1)
			close(dirfd);
		return RP_EX_USAGE;
	}
	/* SPEC guarantee 10: "running" only while its supervisor lives */
	if (strcmp(run.state, "running") == 0 && (run.sup_pid <= 0 ||
	    !rp_ident_alive((pid_t)run.sup_pid, run.sup_start))) {
		snprintf(run.state, sizeof(run.state), "interrupted");
		rc = RP_EX_RUNTIME;
	}
	stepsfd = openat(dirfd, "steps", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (json) {
		arr = json_array();
		top = json_object();
		fdj = openat(dirfd, "run.json", O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fdj != -1) {
			ro = json_loadfd(fdj, 0, NULL);
			close(fdj);
		}
		if (!json_is_object(ro)) {
			json_decref(ro);
			ro = json_object();
		}
		json_object_set_new(ro, "state", json_string(run.state));
		json_object_set_new(top, "run", ro);
		json_object_set(top, "steps", arr);
	} else {
		printf("run %s %s: %s", run.name, run.id, run.state);
		if (rc == RP_EX_RUNTIME)
			printf(" (its supervisor, pid %ld, is gone; --resume "
			    "finishes it)", run.sup_pid);
		if (run.force_reason[0] != '\0')
			printf(", forced: %s", run.force_reason);
		if (run.has_exit)
			printf(", exit %d", run.exit);
		if (run.cancel_reason[0] != '\0')
			printf(", cancelled: %s", run.cancel_reason);
		secs(run.started, run.ended, sc, sizeof(sc));
		printf(" (started %s, %s s)\n", run.started, sc);
		printf("%2s  %-16s %-12s %-10s %-22s %5s %8s  %s\n", "#",
		    "step", "phase", "state", "termination", "exit", "seconds",
		    "allowed/blocked/failed");
	}
	for (i = 1; stepsfd != -1 && i <= run.steps; i++) {
		if ((fd = find_step(stepsfd, i)) == -1)
			break;
		if (json) {
			o = rp_receipt_json_read(fd);
			if (o != NULL)
				json_array_append_new(arr, o);
		} else if (rp_receipt_read(fd, &r) == 0) {
			if (r.has_exit)
				snprintf(ex, sizeof(ex), "%d", r.exit_code);
			else if (r.has_signal)
				snprintf(ex, sizeof(ex), "sig%d", r.signal);
			else
				snprintf(ex, sizeof(ex), "-");
			if (r.started[0] != '\0')
				secs(r.started, r.ended, sc, sizeof(sc));
			else
				snprintf(sc, sizeof(sc), "-");
			printf("%2d  %-16s %-12s %-10s %-22s %5s %8s  %llu/%llu/"
			    "%llu%s%s\n", r.index, r.step, r.phase,
			    rp_step_state_name(r.state),
			    r.termination[0] != '\0' ? r.termination : "-", ex,
			    sc, (unsigned long long)r.allowed,
			    (unsigned long long)r.blocked,
			    (unsigned long long)r.failed,
			    r.note[0] != '\0' ? "  " : "", r.note);
		}
		close(fd);
	}
	if (json) {
		s = json_dumps(top, JSON_COMPACT | JSON_SORT_KEYS);
		if (s != NULL)
			printf("%s\n", s);
		eg_free(s);
		json_decref(arr);
		json_decref(top);
	}
	if (stepsfd != -1)
		close(stepsfd);
	close(dirfd);
	return rc;
}
