/*
 * proc.c: process identity (pid + boot id + start time) and process
 * trees from /proc; signals through a pidfd after the identity check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/syscall.h>
#include <sys/types.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "proc.h"
#include "../common/procwalk.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif

static int
boot_id(char out[40])
{
	static char cached[40];
	size_t n;

	if (cached[0] == '\0') {
		if (mc_proc_read_file("/proc/sys/kernel/random/boot_id", cached,
		    sizeof(cached)) <= 0)
			return -1;
		n = strcspn(cached, "\n");
		cached[n] = '\0';
	}
	memcpy(out, cached, sizeof(cached));
	return 0;
}

/* State, ppid and start time of pid; -1 when gone. */
static int
proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p, *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (mc_proc_read_file(path, buf, sizeof(buf)) <= 0) {
		errno = ESRCH;
		return -1;
	}
	/* comm may hold anything: the fields follow the last ')' */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ') {
		errno = ESRCH;
		return -1;
	}
	p += 2;
	for (i = 3; i <= 22; i++) {
		f = p;
		p = strchr(p, ' ');
		if (p != NULL)
			*p++ = '\0';
		if (i == 3 && state != NULL)
			*state = f[0];
		else if (i == 4 && ppid != NULL)
			*ppid = (pid_t)strtol(f, NULL, 10);
		else if (i == 22 && start != NULL)
			*start = strtoull(f, NULL, 10);
		if (p == NULL && i < 22) {
			errno = ESRCH;
			return -1;
		}
	}
	return 0;
}

int
rp_ident_of(pid_t pid, char *out, size_t len)
{
	unsigned long long start;
	char bid[40];

	if (pid <= 0 || boot_id(bid) == -1 ||
	    proc_stat(pid, NULL, NULL, &start) == -1) {
		errno = ESRCH;
		return -1;
	}
	snprintf(out, len, "%s:%llu", bid, start);
	return 0;
}

int
rp_ident_alive(pid_t pid, const char *start)
{
	char now[RP_IDENT_MAX], st = 0;

	if (start == NULL || pid <= 0 || rp_ident_of(pid, now, sizeof(now))
	    == -1 || strcmp(now, start) != 0)
		return 0;
	if (proc_stat(pid, &st, NULL, NULL) == -1 || st == 'Z' || st == 'X')
		return 0;
	return 1;
}

int
rp_ident_signal(pid_t pid, const char *start, int sig)
{
	char now[RP_IDENT_MAX];
	int pfd, rc;

	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd == -1 && errno != ENOSYS) {
		errno = ESRCH;
		return -1;
	}
	if (rp_ident_of(pid, now, sizeof(now)) == -1 ||
	    strcmp(now, start) != 0) {
		if (pfd != -1)
			close(pfd);
		errno = ESRCH;
		return -1;
	}
	if (pfd == -1)
		return kill(pid, sig);	/* no pidfd: checked just above */
	rc = (int)syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
	close(pfd);
	return rc;
}

pid_t *
eg_rp_descendants(pid_t root, size_t *np)
{
	return mc_proc_descendants(root, np);
}

void
eg_rp_kill_descendants(pid_t root, int sig)
{
	pid_t *d;
	size_t n, i;

	d = eg_rp_descendants(root, &n);
	for (i = 0; i < n; i++)
		(void)kill(d[i], sig);
	eg_free(d);
}
