/*
 * crypto.c: every mbedTLS call of egressd (crypto.h says what and why).
 *
 * Written against the public API of mbedTLS 2.28 (Debian 12) and 3.6
 * (Debian 13); the differences are the four #if blocks below, and this
 * is the only file that tests MBEDTLS_VERSION_NUMBER:
 *
 *   - SHA-256: 2.28 has the *_ret() calls (the plain names are
 *     deprecated there), 3.x only the plain names;
 *   - mbedtls_pk_parse_key() and mbedtls_pk_sign() gained arguments in
 *     3.0 (a random generator; the signature buffer's size);
 *   - the curve of an EC key: 2.28's keypair has a public grp.id, 3.6 has
 *     mbedtls_ecp_keypair_get_group_id() (3.0 to 3.5 have neither without
 *     MBEDTLS_PRIVATE, so they are refused at compile time);
 *   - 3.x wants psa_crypto_init() before anything that may dispatch to
 *     PSA.
 *
 * No struct internals, no MBEDTLS_PRIVATE.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/version.h>
#include <mbedtls/base64.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#include <psa/crypto.h>
#endif

#include "alloc.h"
#include "crypto.h"
#include "shared.h"

#if MBEDTLS_VERSION_NUMBER < 0x02100000 || \
    (MBEDTLS_VERSION_NUMBER >= 0x03000000 && \
    MBEDTLS_VERSION_NUMBER < 0x03060000)
#error "egressd needs mbedTLS 2.16 to 2.28, or 3.6 or later"
#endif

_Static_assert(sizeof(mbedtls_sha256_context) <=
    sizeof(((struct eg_sha256 *)0)->u.b),
    "struct eg_sha256 is too small for mbedtls_sha256_context");
_Static_assert(MBEDTLS_ECDSA_MAX_LEN <= EG_SIG_MAX,
    "EG_SIG_MAX is smaller than an mbedTLS ECDSA signature");

#define KEY_FILE_MAX	(64 * 1024)	/* a PEM key is a few hundred bytes */

struct eg_key {
	mbedtls_pk_context	 pk;
	mbedtls_entropy_context	 ent;
	mbedtls_ctr_drbg_context drbg;
	int			 rng;	/* ent and drbg are set up */
};

/* --- version differences --------------------------------------------------- */

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#define sha_starts(c)		mbedtls_sha256_starts((c), 0)
#define sha_update(c, b, n)	mbedtls_sha256_update((c), (b), (n))
#define sha_finish(c, o)	mbedtls_sha256_finish((c), (o))
#define sha_oneshot(b, n, o)	mbedtls_sha256((b), (n), (o), 0)
#else
#define sha_starts(c)		mbedtls_sha256_starts_ret((c), 0)
#define sha_update(c, b, n)	mbedtls_sha256_update_ret((c), (b), (n))
#define sha_finish(c, o)	mbedtls_sha256_finish_ret((c), (o))
#define sha_oneshot(b, n, o)	mbedtls_sha256_ret((b), (n), (o), 0)
#endif

static int
parse_private(struct eg_key *k, const unsigned char *buf, size_t len)
{
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	return mbedtls_pk_parse_key(&k->pk, buf, len, NULL, 0,
	    mbedtls_ctr_drbg_random, &k->drbg);
#else
	return mbedtls_pk_parse_key(&k->pk, buf, len, NULL, 0);
#endif
}

static int
pk_sign(struct eg_key *k, const unsigned char *hash, unsigned char *sig,
    size_t *len)
{
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	return mbedtls_pk_sign(&k->pk, MBEDTLS_MD_SHA256, hash, EG_SHA256_LEN,
	    sig, EG_SIG_MAX, len, mbedtls_ctr_drbg_random, &k->drbg);
#else
	return mbedtls_pk_sign(&k->pk, MBEDTLS_MD_SHA256, hash, EG_SHA256_LEN,
	    sig, len, mbedtls_ctr_drbg_random, &k->drbg);
#endif
}

static int
is_p256(mbedtls_pk_context *pk)
{
	const mbedtls_ecp_keypair *ec;

	if (!mbedtls_pk_can_do(pk, MBEDTLS_PK_ECKEY) ||
	    (ec = mbedtls_pk_ec(*pk)) == NULL)
		return 0;
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	return mbedtls_ecp_keypair_get_group_id(ec) ==
	    MBEDTLS_ECP_DP_SECP256R1;
#else
	return ec->grp.id == MBEDTLS_ECP_DP_SECP256R1;
#endif
}

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
static pthread_once_t psa_once = PTHREAD_ONCE_INIT;
static int psa_rc;

static void
psa_init(void)
{
	psa_rc = (int)psa_crypto_init();
}

static int
lib_init(char *err, size_t errlen)
{
	pthread_once(&psa_once, psa_init);
	if (psa_rc != 0) {
		snprintf(err, errlen, "cannot initialise mbedTLS's PSA "
		    "crypto (%d)", psa_rc);
		return -1;
	}
	return 0;
}
#else
static int
lib_init(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}
#endif

/* --- SHA-256 and Base64 ------------------------------------------------------ */

void
eg_sha256(const void *buf, size_t len, unsigned char out[EG_SHA256_LEN])
{
	/* cannot fail for SHA-256 without a hardware driver */
	if (sha_oneshot(buf, len, out) != 0)
		memset(out, 0, EG_SHA256_LEN);
}

void
eg_sha256_init(struct eg_sha256 *s)
{
	mbedtls_sha256_context *c = (mbedtls_sha256_context *)s->u.b;

	mbedtls_sha256_init(c);
	(void)sha_starts(c);
}

void
eg_sha256_update(struct eg_sha256 *s, const void *buf, size_t len)
{
	(void)sha_update((mbedtls_sha256_context *)s->u.b, buf, len);
}

void
eg_sha256_final(struct eg_sha256 *s, unsigned char out[EG_SHA256_LEN])
{
	mbedtls_sha256_context *c = (mbedtls_sha256_context *)s->u.b;

	if (sha_finish(c, out) != 0)
		memset(out, 0, EG_SHA256_LEN);
	mbedtls_sha256_free(c);
}

void
eg_sha256_free(struct eg_sha256 *s)
{
	mbedtls_sha256_free((mbedtls_sha256_context *)s->u.b);
}

int
eg_b64_encode(const void *in, size_t n, char *out, size_t cap)
{
	size_t olen = 0;

	if (mbedtls_base64_encode((unsigned char *)out, cap, &olen, in,
	    n) != 0 || olen >= cap)
		return -1;
	out[olen] = '\0';
	return 0;
}

int
eg_b64_decode(const char *in, size_t n, unsigned char *out, size_t cap,
    size_t *olen)
{
	return mbedtls_base64_decode(out, cap, olen,
	    (const unsigned char *)in, n) == 0 ? 0 : -1;
}

/* --- keys ---------------------------------------------------------------------- */

static struct eg_key *
key_new(int rng, char *err, size_t errlen)
{
	static const char pers[] = "egressd-key";
	struct eg_key *k;
	int rc;

	if (lib_init(err, errlen) == -1)
		return NULL;
	if ((k = eg_calloc(1, sizeof(*k))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	mbedtls_pk_init(&k->pk);
	if (!rng)
		return k;
	mbedtls_entropy_init(&k->ent);
	mbedtls_ctr_drbg_init(&k->drbg);
	k->rng = 1;
	rc = mbedtls_ctr_drbg_seed(&k->drbg, mbedtls_entropy_func, &k->ent,
	    (const unsigned char *)pers, sizeof(pers) - 1);
	if (rc != 0) {
		snprintf(err, errlen, "cannot seed the random generator "
		    "(mbedTLS -0x%04x)", (unsigned)-rc);
		eg_key_free(k);
		return NULL;
	}
	return k;
}

void
eg_key_free(struct eg_key *k)
{
	if (k == NULL)
		return;
	mbedtls_pk_free(&k->pk);		/* zeroes the key */
	if (k->rng) {
		mbedtls_ctr_drbg_free(&k->drbg);
		mbedtls_entropy_free(&k->ent);
	}
	explicit_bzero(k, sizeof(*k));
	eg_free(k);
}

/* The whole file (private: under the secret-file rule) into buf, NUL
 * after it; its length, or -1 with err. */
static ssize_t
read_key_file(const char *path, int private, unsigned char *buf,
    size_t cap, char *err, size_t errlen)
{
	char why[256];
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1 ||
	    fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: cannot read the %s key: %s", path,
		    private ? "private" : "public", strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (private) {
		if (eg_secret_mode_why(&st, path, "the private key", why,
		    sizeof(why)) != NULL) {
			snprintf(err, errlen, "%s: %s", path, why);
			close(fd);
			return -1;
		}
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	while (len < cap - 1) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s: cannot read the %s key: %s",
			    path, private ? "private" : "public",
			    strerror(errno));
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len == cap - 1) {
		snprintf(err, errlen, "%s: longer than %zu bytes: not a key",
		    path, cap - 2);
		return -1;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

struct eg_key *
eg_key_load(const char *path, int private, char *err, size_t errlen)
{
	unsigned char *buf;
	struct eg_key *k;
	ssize_t len;
	size_t plen;
	int rc;

	if ((buf = eg_malloc(KEY_FILE_MAX + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((len = read_key_file(path, private, buf, KEY_FILE_MAX + 1, err,
	    errlen)) == -1) {
		eg_free(buf);
		return NULL;
	}
	if ((k = key_new(private, err, errlen)) == NULL) {
		explicit_bzero(buf, (size_t)len);
		eg_free(buf);
		return NULL;
	}
	/* PEM is parsed with its NUL counted, DER without */
	plen = (size_t)len + (strstr((char *)buf, "-----BEGIN") != NULL);
	rc = private ? parse_private(k, buf, plen) :
	    mbedtls_pk_parse_public_key(&k->pk, buf, plen);
	explicit_bzero(buf, (size_t)len);
	eg_free(buf);
	if (rc != 0) {
		char why[128];

		mbedtls_strerror(rc, why, sizeof(why));
		snprintf(err, errlen, "%s: cannot read the %s key: %s", path,
		    private ? "private" : "public", why);
		eg_key_free(k);
		return NULL;
	}
	if (!is_p256(&k->pk)) {
		snprintf(err, errlen, "%s: not an ECDSA P-256 key", path);
		eg_key_free(k);
		return NULL;
	}
	return k;
}

struct eg_key *
eg_key_generate(char *err, size_t errlen)
{
	struct eg_key *k;
	int rc;

	if ((k = key_new(1, err, errlen)) == NULL)
		return NULL;
	rc = mbedtls_pk_setup(&k->pk,
	    mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (rc == 0)
		rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1,
		    mbedtls_pk_ec(k->pk), mbedtls_ctr_drbg_random, &k->drbg);
	if (rc != 0) {
		char why[128];

		mbedtls_strerror(rc, why, sizeof(why));
		snprintf(err, errlen, "cannot generate the key: %s", why);
		eg_key_free(k);
		return NULL;
	}
	return k;
}

int
eg_key_pem(struct eg_key *k, int private, char *buf, size_t cap)
{
	int rc;

	rc = private ? mbedtls_pk_write_key_pem(&k->pk, (unsigned char *)buf,
	    cap) : mbedtls_pk_write_pubkey_pem(&k->pk, (unsigned char *)buf,
	    cap);
	return rc == 0 ? 0 : -1;
}

int
eg_key_sign(struct eg_key *k, const unsigned char hash[EG_SHA256_LEN],
    unsigned char *sig, size_t *len)
{
	/*
	 * mbedtls_pk_sign() on an EC key is mbedtls_ecdsa_write_signature(),
	 * which is RFC 6979 deterministic ECDSA when the library is built
	 * with MBEDTLS_ECDSA_DETERMINISTIC (the generator only blinds).
	 */
	if (!k->rng)
		return -1;		/* a public key */
	return pk_sign(k, hash, sig, len) == 0 ? 0 : -1;
}

int
eg_key_verify(struct eg_key *k, const unsigned char hash[EG_SHA256_LEN],
    const unsigned char *sig, size_t len)
{
	return mbedtls_pk_verify(&k->pk, MBEDTLS_MD_SHA256, hash,
	    EG_SHA256_LEN, sig, len) == 0 ? 0 : -1;
}
