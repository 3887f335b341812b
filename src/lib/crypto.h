/*
 * crypto.h: the one seam between egressd and mbedTLS (issue 22).  Every
 * cryptographic call of the core and the modules goes through here:
 * SHA-256 (one-shot and streaming), Base64, and ECDSA P-256 keys (load
 * with the secret-file permission check, generate, write as PEM, sign
 * and verify DER signatures).  crypto.c is written against the public
 * API of both mbedTLS 2.28 (Debian 12) and 3.6 (Debian 13); it is the
 * only file that tests MBEDTLS_VERSION_NUMBER, and nothing outside it
 * includes an mbedTLS header.
 *
 * A leaf helper (doc/internals/MODULES.md): no state of the proxy, so
 * modules may use it.  Library rules: nothing here prints or exits;
 * errors are -1/NULL with a message in err naming the file.
 *
 * Signatures are deterministic ECDSA (RFC 6979) where the library offers
 * it (MBEDTLS_ECDSA_DETERMINISTIC, on in Debian's builds of both): the
 * same key and hash give the same signature, and no signature depends on
 * the quality of a random nonce.  There is no hand-made signature
 * arithmetic anywhere in the tree: the library signs.
 *
 * (The TLS client session a later issue needs comes here when it is
 * written; there is no stub for it.)
 */
#ifndef EG_CRYPTO_H
#define EG_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define EG_SHA256_LEN	32
/* a DER ECDSA signature, any curve mbedTLS knows (MBEDTLS_ECDSA_MAX_LEN) */
#define EG_SIG_MAX	141
/* its Base64 with the NUL */
#define EG_SIG_B64_MAX	((EG_SIG_MAX + 2) / 3 * 4 + 1)

/* A streaming SHA-256: storage for the library's context (crypto.c checks
 * that it fits), to be used only through the calls below. */
struct eg_sha256 {
	union {
		unsigned char	 b[512];
		uint64_t	 align;
		void		*p;
	} u;
};

/* SHA-256 of buf[0..len) into out. */
void	eg_sha256(const void *buf, size_t len,
	    unsigned char out[EG_SHA256_LEN]);
void	eg_sha256_init(struct eg_sha256 *);
void	eg_sha256_update(struct eg_sha256 *, const void *buf, size_t len);
/* The digest; the context is wiped (init again to reuse it). */
void	eg_sha256_final(struct eg_sha256 *, unsigned char out[EG_SHA256_LEN]);
/* Wipe a context that will not be finished (an error path). */
void	eg_sha256_free(struct eg_sha256 *);

/* Base64 of in[0..n) into out (cap bytes with the NUL); 0 or -1. */
int	eg_b64_encode(const void *in, size_t n, char *out, size_t cap);
/* in[0..n) decoded into out (cap); *olen; 0, or -1 (bad or too long). */
int	eg_b64_decode(const char *in, size_t n, unsigned char *out,
	    size_t cap, size_t *olen);

struct eg_key;			/* an ECDSA P-256 key pair or public key */

/*
 * An ECDSA P-256 key from a PEM (or DER) file.  A private key file must
 * be a regular file that neither group nor others may access (the rule of
 * the admin token file, eg_secret_mode_why() in shared.h): "PATH:
 * permissions 0644 are too open: ...; run 'chmod 600 PATH'".  NULL with
 * err ("PATH: why") on any error.
 */
struct eg_key	*eg_key_load(const char *path, int private, char *err,
		    size_t errlen);
/* A fresh P-256 key pair; NULL with err. */
struct eg_key	*eg_key_generate(char *err, size_t errlen);
/* The key (private: the pair) as PEM with its NUL into buf; 0 or -1. */
int	eg_key_pem(struct eg_key *, int private, char *buf, size_t cap);
/* Sign a SHA-256 hash: a DER signature into sig (EG_SIG_MAX), *len; 0/-1. */
int	eg_key_sign(struct eg_key *, const unsigned char hash[EG_SHA256_LEN],
	    unsigned char *sig, size_t *len);
/* 0 when sig[0..len) is a valid DER signature of hash by the key, else -1. */
int	eg_key_verify(struct eg_key *, const unsigned char hash[EG_SHA256_LEN],
	    const unsigned char *sig, size_t len);
/* Frees and wipes; NULL is allowed. */
void	eg_key_free(struct eg_key *);

#endif
