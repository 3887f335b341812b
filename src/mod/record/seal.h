/*
 * seal.h: the run record (SPEC "### record", "Run record"): "egressd
 * record seal" writes DIR/record.json and DIR/record.sig from a replay's
 * record directory, "egressd record check" verifies one.  The record
 * module's dispatcher (record.c) calls rec_seal_main() and rec_check_main()
 * (declared in record.h) with argv[0] = the subcommand ("seal",
 * "check").  Private to src/mod/record/.
 */
#ifndef REC_SEAL_H
#define REC_SEAL_H

#include <sys/stat.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* rec_seal_main(): "seal [--key KEY] [--fd N] DIR": exit status 0
 * sealed, 1 failed, 2 usage.  rec_check_main(): "check [--pubkey PUB]
 * DIR": 0 every check passed, 1 not, 2 usage.  Both in record.h. */

/*
 * Seal the record directory open at dirfd: record.json (canonical,
 * atomic) and, with key (an ECDSA P-256 private key, PEM), record.sig;
 * without a key a stale record.sig is removed.  Every file is reached
 * relative to dirfd, without following a symlink; every regular file of
 * the directory is listed by digest (record.json's "files" and each
 * step's "files", the manifests' files apart) except record.json,
 * record.sig, the supervisor's REC_LOCK and REC_PRIV; any other kind of
 * file refuses the seal.  0, or -1 with a message in err.
 */
int	rec_seal_at(int dirfd, const char *key, char *err, size_t errlen);
/* The same for the directory dir, opened once without following a
 * symlink (a symlink is refused). */
int	rec_seal(const char *dir, const char *key, char *err,
	    size_t errlen);
/* open(2) of a record directory as seal and check do it: O_DIRECTORY,
 * O_NOFOLLOW, O_NONBLOCK.  An fd, or -1 with errno (ELOOP: a symlink). */
int	rec_open_dir(const char *dir);

/* The supervisor's files at DIR's top that the record does not list:
 * its lock (regular and empty) and its private folder (removed when
 * every step is final; record check reports one still there). */
#define REC_LOCK		".lock"
#define REC_PRIV		".private"
/* Longest path under a record directory that seal and check walk. */
#define REC_PATH_MAX	4096

/* --- shared by seal.c and check.c --------------------------------------- */

/* Largest JSON file of a record directory read into memory. */
#define REC_JSON_MAX	(16u << 20)

/*
 * Open the regular file path under dirfd for reading without blocking
 * and without following a symlink (no ".." either): an O_PATH look and
 * its type first, so that a FIFO or a device is never opened, then
 * O_RDONLY|O_NONBLOCK, the same file (device and inode) again.  An fd,
 * or -1 with errno (EINVAL: not a regular file, its type in *type when
 * type is not NULL; ELOOP: a symlink).
 */
int	rec_open_reg(int dirfd, const char *path, mode_t *type);
/* "a FIFO", "a symbolic link", ... for a st_mode. */
const char *rec_ftype(mode_t mode);
/* What went wrong in rec_open_reg (errno, *type), for a message. */
const char *rec_open_error(int err, mode_t type);
/*
 * The whole regular file path under dirfd (rec_open_reg), at most max
 * bytes, NUL-terminated, in a malloc'd buffer.  NULL with errno (EFBIG
 * beyond max, EINVAL not a regular file: *type, when not NULL, says
 * what it is).
 */
char	*rec_read_file(int dirfd, const char *path, size_t max,
	    size_t *len, mode_t *type);

/*
 * Walk every entry under dirfd, depth first, each folder's names sorted,
 * never following a symlink and opening nothing but directories.  fn
 * gets the path relative to dirfd and its lstat (or st NULL and an
 * errno when an entry cannot be read); it returns 1 to enter a
 * directory, 0 to go on, -1 to stop (rec_walk then returns -1).
 */
typedef int (*rec_walk_fn)(const char *path, const struct stat *st,
	    int err, void *arg);
int	rec_walk(int dirfd, rec_walk_fn fn, void *arg);
/* path under dirfd parsed as JSON (duplicate keys refused); NULL with a
 * message "PATH: reason" in err. */
json_t	*rec_load_json(int dirfd, const char *path, char *err,
	    size_t errlen);

/*
 * The receipt as the record holds it: the SPEC's fields plus env_sha256,
 * secrets (names) and note; command and env only when public; no entry
 * named in secrets, not even hashed; any other key left out.  A new
 * reference.
 */
json_t	*rec_receipt_filter(const json_t *receipt, int public);
/* A manifest ([{"path","size","sha256"}]) reduced to those keys. */
json_t	*rec_manifest_filter(const json_t *manifest);

/*
 * Count the lines of an audit log (a final line without its newline
 * counts) and give the chain= value of its last line (text " chain=H" at
 * the end, JSON ,"chain":"H"} at the end); head is "" when that line has
 * none.  Streams.  0, or -1 with errno.
 */
int	rec_audit_tail(int fd, uint64_t *lines, char head[65]);

/* The step folder names under dirfd/steps ("NN-NAME"), sorted; *n of
 * them.  NULL and *n = 0 when there is no steps folder; NULL with errno
 * otherwise on failure (*n then (size_t)-1).  eg_strv_free() frees them. */
char	**rec_step_dirs(int dirfd, size_t *n);

/* argv[1..] of "record CMD": the options --NAME VALUE for each NAME of
 * names (NULL-terminated) into values[i]; the index of the operand, -1
 * usage error (printed), -2 --help.  Thread-safe (no getopt). */
int	rec_opts(int argc, char *argv[], const char *cmd,
	    const char *const *names, const char **values);
/* rec_opts() for a command of one operand: its index, or -1 with usage
 * printed (--help: on stdout, *rc 0; a usage error: stderr, *rc 2). */
int	rec_opts1(int argc, char *argv[], const char *cmd, const char *usage,
	    const char *const *names, const char **values, int *rc);

#endif
