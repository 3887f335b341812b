/*
 * seal.h: the run record (SPEC "### record", "Run record"): "egressd
 * record seal" writes DIR/record.json and DIR/record.sig from a replay's
 * record directory, "egressd record check" verifies one.  The record
 * module's dispatcher (record.c) calls rc_seal_main() and rc_check_main()
 * (declared in record.h) with argv[0] = the subcommand ("seal",
 * "check").  Private to src/mod/record/.
 */
#ifndef RR_SEAL_H
#define RR_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* rc_seal_main(): "seal [--key KEY] DIR": exit status 0 sealed, 1
 * failed, 2 usage.  rc_check_main(): "check [--pubkey PUB] DIR": 0 every
 * check passed, 1 not, 2 usage.  Both in record.h. */

/*
 * Seal the record directory dir: record.json (canonical, atomic) and,
 * with key (an ECDSA P-256 private key, PEM), record.sig; without a key
 * a stale record.sig is removed.  0, or -1 with a message in err.
 */
int	eg_rr_seal(const char *dir, const char *key, char *err, size_t errlen);

/* --- shared by seal.c and check.c ----------------------------------------- */

/* Largest JSON file of a record directory read into memory. */
#define RR_JSON_MAX	(16u << 20)

/*
 * The whole regular file path under dirfd (no symlinks, no ".."), at
 * most max bytes, NUL-terminated, in a malloc'd buffer.  NULL with errno
 * (EFBIG beyond max, EINVAL not a regular file).
 */
char	*eg_rr_read_file(int dirfd, const char *path, size_t max, size_t *len);
/* path under dirfd parsed as JSON (duplicate keys refused); NULL with a
 * message "PATH: reason" in err. */
json_t	*eg_rr_load_json(int dirfd, const char *path, char *err, size_t errlen);

/*
 * The receipt as the record holds it: the SPEC's fields plus env_sha256,
 * secrets (names) and note; command and env only when public; no entry
 * named in secrets, not even hashed; any other key left out.  A new
 * reference.
 */
json_t	*eg_rr_receipt_filter(const json_t *receipt, int public);
/* A manifest ([{"path","size","sha256"}]) reduced to those keys. */
json_t	*eg_rr_manifest_filter(const json_t *manifest);

/*
 * Count the lines of an audit log (a final line without its newline
 * counts) and give the chain= value of its last line (text " chain=H" at
 * the end, JSON ,"chain":"H"} at the end); head is "" when that line has
 * none.  Streams.  0, or -1 with errno.
 */
int	eg_rr_audit_tail(int fd, uint64_t *lines, char head[65]);

/* The step folder names under dirfd/steps ("NN-NAME"), sorted; *n of
 * them.  NULL and *n = 0 when there is no steps folder; NULL with errno
 * otherwise on failure (*n then (size_t)-1). */
char	**eg_rr_step_dirs(int dirfd, size_t *n);
void	eg_rr_strv_free(char **v, size_t n);

/* argv[1..] of "record CMD": the one option --NAME VALUE into *value;
 * the index of the operand, -1 usage error (printed), -2 --help.
 * Thread-safe (no getopt). */
int	eg_rr_opts(int argc, char *argv[], const char *cmd, const char *name,
	    const char **value);

#endif
