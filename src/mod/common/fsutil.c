/*
 * fsutil.c: atomic writes, canonical JSON files, symlink-free opens under
 * a directory and SHA-256 digests, for the replay and record modules.
 */
#include "config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/openat2.h>
#endif

#include "alloc.h"
#include "crypto.h"
#include "fsutil.h"

int mc_open_beneath_no_openat2;

void
mc_close_errno(int fd)
{
	int e = errno;

	(void)close(fd);
	errno = e;
}

ssize_t
mc_read(int fd, void *buf, size_t len)
{
	ssize_t n;

	while ((n = read(fd, buf, len)) == -1 && errno == EINTR)
		;
	return n;
}

char *
mc_read_fd(int fd, size_t max, size_t *len)
{
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0;
	ssize_t r;
	int saved;

	/* read until EOF, at most max + 1 bytes (one more is "too big") */
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				errno = EFBIG;
				goto fail;
			}
			cap = cap ? cap * 2 : 8192;
			if (cap > max + 1)
				cap = max + 1;
			if ((nb = eg_realloc(buf, cap + 1)) == NULL)
				goto fail;
			buf = nb;
		}
		if ((r = mc_read(fd, buf + n, cap - n)) == -1)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		errno = EFBIG;
		goto fail;
	}
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
fail:
	saved = errno;
	eg_free(buf);
	errno = saved;
	return NULL;
}

int
mc_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
mc_tmp_finish(int dirfd, const char *tmp, const char *name, int fd,
    int (*fill)(int fd, void *arg), void *arg)
{
	int e;

	if (fill(fd, arg) < 0 || fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		goto fail;
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	errno = e;
	return -1;
}

struct write_buf {
	const void	*buf;
	size_t		 len;
	mode_t		 mode;
};

static int
fill_buf(int fd, void *arg)
{
	const struct write_buf *wb = arg;

	if (mc_write_all(fd, wb->buf, wb->len) < 0 ||
	    fchmod(fd, wb->mode) < 0)
		return -1;
	return 0;
}

int
mc_write_atomic(int dirfd, const char *name, const void *buf, size_t len,
    mode_t mode)
{
	struct write_buf wb;
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd, dfd, own = 0, e;
	size_t nlen;

	if (name == NULL || (nlen = strlen(name)) == 0 ||
	    strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0 || nlen > NAME_MAX - 24) {
		errno = EINVAL;
		return -1;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			errno = ELOOP;
			return -1;
		}
		if (S_ISDIR(st.st_mode)) {
			errno = EISDIR;
			return -1;
		}
	} else if (errno != ENOENT)
		return -1;
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST) {
		/* left by a crashed process that had our pid */
		if (unlinkat(dirfd, tmp, 0) < 0)
			return -1;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, mode);
	}
	if (fd < 0)
		return -1;
	wb.buf = buf;
	wb.len = len;
	wb.mode = mode;
	if (mc_tmp_finish(dirfd, tmp, name, fd, fill_buf, &wb) < 0)
		return -1;
	dfd = dirfd;
	if (dirfd == AT_FDCWD) {
		if ((dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -1;
		own = 1;
	}
	e = fsync(dfd);
	if (e < 0 && errno == EBADF && !own) {
		/* an O_PATH dirfd: fsync it through a real descriptor */
		if ((dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC)) < 0)
			return -1;
		own = 1;
		e = fsync(dfd);
	}
	if (own) {
		int se = errno;

		close(dfd);
		errno = se;
	}
	return e < 0 ? -1 : 0;
}

int
mc_write_json(int dirfd, const char *name, const json_t *v)
{
	const size_t flags = JSON_COMPACT | JSON_SORT_KEYS;
	char *s;
	size_t n;
	int rc, e;

	if (v == NULL || (n = json_dumpb(v, NULL, 0, flags)) == 0) {
		errno = EINVAL;
		return -1;
	}
	if ((s = eg_malloc(n)) == NULL)
		return -1;
	if (json_dumpb(v, s, n, flags) != n) {
		eg_free(s);
		errno = EINVAL;
		return -1;
	}
	rc = mc_write_atomic(dirfd, name, s, n, 0644);
	e = errno;
	eg_free(s);
	errno = e;
	return rc;
}

/* Refuse absolute paths and ".." before the kernel sees them. */
static int
path_check(const char *path)
{
	const char *p, *q;

	if (path == NULL || *path == '\0') {
		errno = ENOENT;
		return -1;
	}
	if (*path == '/') {
		errno = EXDEV;
		return -1;
	}
	for (p = path; *p != '\0'; p = q) {
		while (*p == '/')
			p++;
		q = p;
		while (*q != '\0' && *q != '/')
			q++;
		if (q - p == 2 && p[0] == '.' && p[1] == '.') {
			errno = EXDEV;
			return -1;
		}
		if (q - p > NAME_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
	}
	return 0;
}

/* O_NOFOLLOW on every component, with O_PATH walks of the directories. */
static int
open_walk(int dirfd, const char *path, int flags)
{
	char comp[NAME_MAX + 1];
	const char *p, *q, *r;
	struct stat st;
	int cur = dirfd, fd, e;
	size_t n;

	p = path;
	for (;;) {
		while (*p == '/')
			p++;
		q = p;
		while (*q != '\0' && *q != '/')
			q++;
		n = (size_t)(q - p);
		r = q;
		while (*r == '/')
			r++;
		if (n == 0 || (n == 1 && *p == '.')) {
			if (*r == '\0') {
				/* "." or trailing slash: the directory itself */
				fd = openat(cur, ".", (flags & ~(O_CREAT |
				    O_EXCL)) | O_CLOEXEC);
				goto out;
			}
			p = r;
			continue;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (*r == '\0') {
			/* last component */
			fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC,
			    0600);
			if (fd >= 0 && (flags & O_PATH) != 0 &&
			    fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
				close(fd);
				fd = -1;
				errno = ELOOP;
			}
			if (fd >= 0 && *q == '/' && fstat(fd, &st) == 0 &&
			    !S_ISDIR(st.st_mode)) {
				close(fd);
				fd = -1;
				errno = ENOTDIR;
			}
			goto out;
		}
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			goto out;
		if (fstat(fd, &st) < 0) {
			e = errno;
			close(fd);
			fd = -1;
			errno = e;
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			fd = -1;
			errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
			goto out;
		}
		if (cur != dirfd)
			close(cur);
		cur = fd;
		p = r;
	}
out:
	if (cur != dirfd) {
		mc_close_errno(cur);
	}
	return fd;
}

int
mc_open_beneath(int dirfd, const char *path, int flags)
{
	int fd;

	if (path_check(path) < 0)
		return -1;
#if defined(__linux__) && defined(SYS_openat2)
	if (!mc_open_beneath_no_openat2) {
		struct open_how how;

		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_CLOEXEC);
		/* O_TMPFILE holds O_DIRECTORY's bit: test it whole */
		how.mode = ((flags & O_CREAT) != 0 ||
		    (flags & O_TMPFILE) == O_TMPFILE) ? 0600 : 0;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		    RESOLVE_NO_MAGICLINKS;
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		/* no openat2 (old kernel, seccomp profile): the walk */
		if (errno != ENOSYS && errno != E2BIG && errno != EPERM)
			return -1;
	}
#endif
	fd = open_walk(dirfd, path, flags);
	return fd;
}

static void
hex32(const unsigned char d[32], char out[65])
{
	static const char hx[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}

void
mc_sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char d[EG_SHA256_LEN];

	eg_sha256(buf, len, d);
	hex32(d, out);
}

int
mc_sha256_fd(int fd, char out[65], uint64_t *size)
{
	struct eg_sha256 c;
	unsigned char buf[65536], d[EG_SHA256_LEN];
	uint64_t total = 0;
	ssize_t n;
	int e;

	eg_sha256_init(&c);
	for (;;) {
		n = mc_read(fd, buf, sizeof(buf));
		if (n < 0) {
			e = errno;
			eg_sha256_free(&c);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		eg_sha256_update(&c, buf, (size_t)n);
		total += (uint64_t)n;
	}
	eg_sha256_final(&c, d);
	hex32(d, out);
	if (size != NULL)
		*size = total;
	return 0;
}
