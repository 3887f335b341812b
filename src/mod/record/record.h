/*
 * record.h: what the record module's files share (SPEC "### record"):
 * hex, base64 and timestamps as the audit log writes them, the random
 * generator, the key loader, and the entry points of its commands.
 * Private to src/mod/record/.
 */
#ifndef RC_RECORD_H
#define RC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>

#include "alloc.h"
#include "module.h"

#define RC_HEX_LEN	64		/* a SHA-256 in hex */
#define RC_SIG_MAX	MBEDTLS_ECDSA_MAX_LEN	/* DER ECDSA P-256 */
#define RC_B64_MAX	((RC_SIG_MAX + 2) / 3 * 4 + 1)

extern const struct eg_audit_ops rc_audit_ops;	/* chain.c */

/* Lower-case hex of n bytes (out: 2n + 1). */
void	rc_hex(const unsigned char *in, size_t n, char *out);
/* SHA-256 of prev (64 hex) || buf[0..len), as 64 hex + NUL. */
void	rc_chain_hash(const char *prev, const char *buf, size_t len,
	    char out[RC_HEX_LEN + 1]);
/*
 * The chain field that ends an audit line p[0..n) (no newline, perhaps
 * only its tail): text "... chain=H" or JSON ...,"chain":"H"}.  The 64
 * lower-case hex digits of H, or NULL when the line has none; *body: the
 * length of what precedes the field, *json: which form it is (either may
 * be NULL).
 */
const char *rc_line_chain(const char *p, size_t n, size_t *body,
	    int *json);
/* 2026-11-29T18:00:00.123Z (24 chars + NUL). */
void	rc_ts(int64_t ms, char out[32]);

/* A CTR-DRBG seeded from the system's entropy; 0 or -1 (err). */
int	rc_drbg_init(mbedtls_entropy_context *, mbedtls_ctr_drbg_context *,
	    char *err, size_t errlen);
/* An ECDSA P-256 private key (PEM) / public key (PEM); 0 or -1. */
int	rc_load_key(mbedtls_pk_context *, const char *path, int private,
	    char *err, size_t errlen);
/* "egressd-checkpoint\n" RUN "\n" N "\n" K "\n" H into buf; length. */
size_t	rc_ck_message(char *buf, size_t cap, const char *run, size_t runlen,
	    uint64_t seq, uint64_t lines, const char *head);

/* The commands (argv[0] "keygen" ..., "audit-verify"). */
int	rc_keygen_main(int argc, char *argv[]);
int	rc_verify_main(int argc, char *argv[]);

/*
 * "egressd record seal|check": record-run's files (seal.c, check.c; see
 * seal.h).  Not weak: a weak reference does not pull a member out of the
 * static core archive, so egressd would link without them.
 */
int	rc_seal_main(int argc, char *argv[]);
int	rc_check_main(int argc, char *argv[]);

#endif
