/*
 * util.c: small helpers of the supervisor (messages, folders, files,
 * the run id, record paths).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "egress.h"
#include "module.h"
#include "../common/fsutil.h"
#include "alloc.h"
#include "capture.h"
#include "plan.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"
#include "job.h"

atomic_int rp_signal;
char rp_exe[PATH_MAX];

/* --- small helpers --------------------------------------------------------- */

void
rp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void
rp_warn(const char *fmt, ...)
{
	va_list ap;
	char buf[2048];

	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "egressd replay: %s\n", buf);
}

int
rp_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, mode);
}

int
rp_rmtree(int dfd, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (rp_rmtree(dirfd(d), de->d_name) == -1)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == -1)
		rc = -1;
	return rc;
}

/* Read a whole (small) file; eg_malloc'd, NUL-terminated. */
char *
rp_slurp(int dirfd, const char *path, size_t max, size_t *lenp)
{
	char *buf;
	int fd;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	buf = mc_read_fd(fd, max, lenp);
	mc_close_errno(fd);
	return buf;
}

const char *
rp_getenv(const char *name)
{
	return getenv(name);
}

void
rp_uuid4(char out[37])
{
	unsigned char b[16];
	int fd, i, o = 0;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd == -1 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b)) {
		for (i = 0; i < 16; i++)
			b[i] = (unsigned char)(rand() ^ getpid());
	}
	if (fd != -1)
		close(fd);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		o += snprintf(out + o, 37 - (size_t)o, "%02x", b[i]);
	}
	out[36] = '\0';
}

void
rp_step_dirname(const struct rp_plan *p, size_t i, char *out, size_t len)
{
	snprintf(out, len, "%02zu-%s", i + 1, p->steps[i].name);
}

int
rp_has_module(const char *name)
{
	const char *const *m;

	for (m = egress_modules(); *m != NULL; m++)
		if (strcmp(*m, name) == 0)
			return 1;
	return 0;
}

/* Expand %n, %t, %% of the record template; -1 on another %. */
int
rp_expand_record(const char *tmpl, const char *base, time_t t, char *out,
    size_t len)
{
	struct tm tm;
	char ts[32];
	size_t o = 0;
	const char *s;
	int n;

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
	for (s = tmpl; *s != '\0'; s++) {
		if (o + 1 >= len)
			return -1;
		if (*s != '%') {
			out[o++] = *s;
			continue;
		}
		s++;
		if (*s == 'n')
			n = snprintf(out + o, len - o, "%s", base);
		else if (*s == 't')
			n = snprintf(out + o, len - o, "%s", ts);
		else if (*s == '%')
			n = snprintf(out + o, len - o, "%%");
		else
			return -1;
		if (n < 0 || (size_t)n >= len - o)
			return -1;
		o += (size_t)n;
	}
	out[o] = '\0';
	return 0;
}

/* --- the record directory: where it is, its lock ---------------------------- */

/* The path the directory open at fd has now (readlink /proc/self/fd/N,
 * which follows renames); "(unknown)" when it cannot be read. */
void
rp_fd_path(int fd, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = fd < 0 ? -1 : readlink(link, out, len > 0 ? len - 1 : 0);
	if (n <= 0 || (size_t)n >= len - 1)
		snprintf(out, len, "(unknown)");
	else
		out[n] = '\0';
}

/* 1 when path (its last component not followed) no longer names the
 * directory open at dirfd: it was renamed, removed or replaced. */
int
rp_dir_moved(int dirfd, const char *path)
{
	struct stat a, b;

	if (fstat(dirfd, &a) == -1 || lstat(path, &b) == -1)
		return 1;
	return !S_ISDIR(b.st_mode) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino;
}

/* The pid holding a flock(2) lock on fd's file, from /proc/locks (the
 * lock file stays empty: record check takes it as it is); 0: unknown. */
static long
lock_holder(int fd)
{
	struct stat st;
	char line[256], type[16];
	unsigned maj, min;
	unsigned long long ino;
	long pid, found = 0;
	FILE *f;

	if (fstat(fd, &st) == -1 || (f = fopen("/proc/locks", "re")) == NULL)
		return 0;
	while (found == 0 && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "->") != NULL)
			continue;	/* a waiter */
		if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", type, &pid,
		    &maj, &min, &ino) != 5)
			continue;
		if (strcmp(type, "FLOCK") == 0 && maj == major(st.st_dev) &&
		    min == minor(st.st_dev) && ino == (unsigned long long)
		    st.st_ino && pid > 0)
			found = pid;
	}
	fclose(f);
	return found;
}

/*
 * Take the record directory's lock: flock(LOCK_EX|LOCK_NB) on DIR/.lock
 * (made empty, mode 0600, never through a symlink; O_CLOEXEC, so that no
 * keeper or step holds it after exec).  0: taken, *lockfd is kept open
 * for the supervisor's life; 1: another process holds it (*holder: its
 * pid, 0 when unknown); -1: error (errno).
 */
int
rp_lock(int dirfd, int *lockfd, long *holder)
{
	struct stat st;
	int fd, e;

	*holder = 0;
	fd = openat(dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK, 0600);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		mc_close_errno(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EINTR)
			continue;
		e = errno;
		if (e == EWOULDBLOCK)
			*holder = lock_holder(fd);
		close(fd);
		errno = e;
		return e == EWOULDBLOCK ? 1 : -1;
	}
	*lockfd = fd;
	return 0;
}
