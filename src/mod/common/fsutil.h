/*
 * fsutil.h: file helpers shared by the replay and record modules
 * (src/mod/common/libmodcommon.la, built when either is enabled).
 * libc, jansson and mbedTLS only; no printing, no exit().
 */
#ifndef MC_FSUTIL_H
#define MC_FSUTIL_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * Write buf to dirfd/name atomically: a temp file ".NAME.PID.tmp"
 * (O_EXCL|O_NOFOLLOW, mode), fsync, renameat, fsync(dirfd).  name is one
 * path component; an existing dirfd/name that is a symlink is refused
 * (ELOOP), a directory too (EISDIR).  On failure the temp file is gone.
 * dirfd may be AT_FDCWD.  0 or -1 with errno.
 */
/* read(2), again after EINTR: the bytes read, 0 at EOF, or -1. */
ssize_t	mc_read(int fd, void *buf, size_t len);
/*
 * The rest of fd (to EOF) in a buffer from eg_malloc(), NUL-terminated,
 * *len (when not NULL) its bytes without the NUL.  NULL with errno EFBIG
 * when fd holds more than max bytes (at most max + 1 are read), else as
 * read(2), or ENOMEM.  fd stays open.
 */
char	*mc_read_fd(int fd, size_t max, size_t *len);
/* close(2) fd and leave errno as it was (on a failure path). */
void	mc_close_errno(int fd);
/* write(2) all of buf, again after EINTR and short writes.  0 or -1. */
int	mc_write_all(int fd, const void *buf, size_t len);
int	mc_write_atomic(int dirfd, const char *name, const void *buf,
	    size_t len, mode_t mode);
/*
 * The end of an atomic write into the temp file dirfd/tmp, open as fd:
 * fill(fd, arg) writes it, then fsync, close, renameat to dirfd/name
 * (the caller fsyncs dirfd).  On failure fd is closed and tmp removed.
 * 0 or -1 with errno.
 */
int	mc_tmp_finish(int dirfd, const char *tmp, const char *name, int fd,
	    int (*fill)(int fd, void *arg), void *arg);
/*
 * jansson value -> compact sorted JSON (JSON_COMPACT|JSON_SORT_KEYS, UTF-8
 * unescaped, no final newline), written with mc_write_atomic mode 0644.
 */
int	mc_write_json(int dirfd, const char *name, const json_t *v);
/*
 * Open path under dirfd refusing symlinks and ".." in every component
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, else O_NOFOLLOW per
 * component).  flags as for openat(2) (O_CLOEXEC is added; with O_CREAT
 * the mode is 0600).  -1 with errno: EXDEV for an absolute path or a
 * ".." component, ELOOP for a symlink anywhere, ENOENT for an empty
 * path, else what the kernel says.
 */
int	mc_open_beneath(int dirfd, const char *path, int flags);
/* Test knob: nonzero makes mc_open_beneath skip openat2 (the fallback). */
extern int mc_open_beneath_no_openat2;

/* Lower-case hex SHA-256 (mbedTLS) of a buffer / of an fd's bytes (from
 * its current offset to EOF; *size, when not NULL, gets their count).
 * mc_sha256_fd: 0 or -1 with errno. */
void	mc_sha256_hex(const void *buf, size_t len, char out[65]);
int	mc_sha256_fd(int fd, char out[65], uint64_t *size);

#endif
