/*
 * record.h: what the record module's files share (SPEC "### record"):
 * hex and timestamps as the audit log writes them, the checkpoint
 * message, and the entry points of its commands (keys, hashes, Base64 and
 * signatures come from the core's crypto.h).  Private to src/mod/record/.
 */
#ifndef REC_RECORD_H
#define REC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "crypto.h"
#include "module.h"

#define REC_HEX_LEN	64		/* a SHA-256 in hex */
#define REC_SIG_MAX	EG_SIG_MAX	/* DER ECDSA */
#define REC_B64_MAX	EG_SIG_B64_MAX

extern const struct eg_audit_ops rec_audit_ops;	/* chain.c */

/* Lower-case hex of n bytes (out: 2n + 1). */
void	rec_hex(const unsigned char *in, size_t n, char *out);
/* SHA-256 of prev (64 hex) || buf[0..len), as 64 hex + NUL. */
void	rec_chain_hash(const char *prev, const char *buf, size_t len,
	    char out[REC_HEX_LEN + 1]);
/*
 * The chain field that ends an audit line p[0..n) (no newline, perhaps
 * only its tail): text "... chain=H" or JSON ...,"chain":"H"}.  The 64
 * lower-case hex digits of H, or NULL when the line has none; *body: the
 * length of what precedes the field, *json: which form it is (either may
 * be NULL).
 */
const char *rec_line_chain(const char *p, size_t n, size_t *body,
	    int *json);
/* 2026-11-29T18:00:00.123Z (24 chars + NUL). */
void	rec_ts(int64_t ms, char out[32]);

/* "egressd-checkpoint\n" RUN "\n" N "\n" K "\n" H into buf; length. */
size_t	rec_ck_message(char *buf, size_t cap, const char *run, size_t runlen,
	    uint64_t seq, uint64_t lines, const char *head);

/* The commands (argv[0] "keygen" ..., "audit-verify"). */
int	rec_keygen_main(int argc, char *argv[]);
int	rec_verify_main(int argc, char *argv[]);

/*
 * "egressd record seal|check": record-run's files (seal.c, check.c; see
 * seal.h).  Not weak: a weak reference does not pull a member out of the
 * static core archive, so egressd would link without them.
 */
int	rec_seal_main(int argc, char *argv[]);
int	rec_check_main(int argc, char *argv[]);

#endif
