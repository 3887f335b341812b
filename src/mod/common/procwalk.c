/*
 * procwalk.c: the process tree below a process, from /proc: one pass
 * over /proc/PID/stat for every process's parent, then the transitive
 * closure from the root (few processes: quadratic is fine).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "procwalk.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range		436
#endif

ssize_t
mc_proc_read_file(const char *path, char *buf, size_t cap)
{
	ssize_t r;
	int fd;

	if (cap == 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	r = read(fd, buf, cap - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = '\0';
	return r;
}

ssize_t
mc_proc_read(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return mc_proc_read_file(path, buf, cap);
}

pid_t
mc_proc_ppid(pid_t pid)
{
	char buf[512], *p, *end;
	long v;

	if (mc_proc_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return -1;
	/* "PID (COMM) S PPID ...": comm may hold anything, even ") " */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
		return -1;
	v = strtol(p + 4, &end, 10);
	if (end == p + 4 || *end != ' ' || v < 0)
		return -1;
	return (pid_t)v;
}

pid_t *
mc_proc_descendants(pid_t root, size_t *np)
{
	struct { pid_t pid, ppid; } *all = NULL, *na;
	pid_t *out, ppid;
	size_t n = 0, cap = 0, nout = 0, i, j;
	struct dirent *de;
	char *end;
	long v;
	int in, grew;
	DIR *d;

	*np = 0;
	if ((d = opendir("/proc")) == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL) {
		v = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end != '\0' || v <= 0 ||
		    (pid_t)v == root)
			continue;
		if ((ppid = mc_proc_ppid((pid_t)v)) == -1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			na = eg_reallocarray(all, cap, sizeof(*all));
			if (na == NULL)
				break;
			all = na;
		}
		all[n].pid = (pid_t)v;
		all[n].ppid = ppid;
		n++;
	}
	closedir(d);
	if (n == 0 || (out = eg_calloc(n, sizeof(*out))) == NULL) {
		eg_free(all);
		return NULL;
	}
	/* breadth first: a pass adds the children of what is already in */
	do {
		grew = 0;
		for (i = 0; i < n; i++) {
			if (all[i].pid == 0)
				continue;	/* taken */
			in = all[i].ppid == root;
			for (j = 0; !in && j < nout; j++)
				in = all[i].ppid == out[j];
			if (!in)
				continue;
			out[nout++] = all[i].pid;
			all[i].pid = 0;
			grew = 1;
		}
	} while (grew);
	eg_free(all);
	if (nout == 0) {
		eg_free(out);
		return NULL;
	}
	*np = nout;
	return out;
}

void
mc_proc_reap(pid_t child, int *status, int *done)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid == child) {
			*status = st;
			*done = 1;
		}
	}
}

void
mc_proc_cloexec_fds(void)
{
	long fd, max;

	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = 3; fd < max; fd++)
		(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
}
