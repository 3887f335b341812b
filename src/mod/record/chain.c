/*
 * chain.c: the audit chain and its checkpoints (SPEC "### record"), as
 * the core's writer uses them through struct eg_audit_ops (module.h).
 *
 * A text line ends with " chain=H", a JSON line with ,"chain":"H"} where
 * H = SHA-256(previous H as 64 hex || the line's bytes before " chain=" /
 * ,"chain":).  The H before a file's START is 64 zeros.  With a key, a
 * CHECKPOINT signs (run, seq, lines, head) with ECDSA P-256 / SHA-256.
 *
 * Every function here runs under the writer's lock of its file (one
 * thread at a time per state); what a call makes is staged and becomes
 * the chain's state only on commit(ok), so a line the write(2) lost
 * does not advance the chain.
 *
 * Signing under that lock must be short: every worker's next line waits
 * for it.  An ECDSA signature is a scalar multiplication k*G (about a
 * millisecond with mbedTLS 2.28's P-256), which depends on nothing but a
 * fresh random k, and then s = k^-1 (e + r d) mod n, which is cheap.  So
 * a thread of the chain's own keeps a few (k^-1, r) pairs ready, made
 * with its own random generator outside the lock; a checkpoint takes one
 * (each is used once and then zeroed) and only does the cheap part.  When
 * none is ready it signs the whole way (mbedtls_pk_sign()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/asn1write.h>
#include <mbedtls/base64.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/error.h>
#include <mbedtls/sha256.h>

#include "record.h"

static const char zeros[RC_HEX_LEN + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

struct chain_pos {
	char		 head[RC_HEX_LEN + 1];	/* last line's chain value */
	uint64_t	 lines;		/* of the current file */
	uint64_t	 seq;		/* checkpoints in it */
	uint64_t	 since;		/* other lines since the last one */
};

#define RC_NONCES	4		/* (k^-1, r) pairs kept ready */

struct rc_nonce {
	mbedtls_mpi		 kinv, r;
};

struct rc_chain {
	char			 run[37];
	char			 config[RC_HEX_LEN + 1];
	unsigned		 ck_lines;
	int			 keyed;
	mbedtls_pk_context	 pk;
	mbedtls_entropy_context	 ent;
	mbedtls_ctr_drbg_context drbg;
	struct chain_pos	 cur, next;	/* committed, staged */

	/* nonce precomputation (keyed only) */
	pthread_t		 thr;
	int			 thr_on;
	pthread_mutex_t		 nm;		/* pool, npool, stop */
	pthread_cond_t		 ncv;
	int			 stop;
	struct rc_nonce		 pool[RC_NONCES];
	unsigned		 npool;
	mbedtls_ecp_group	 grp;		/* the thread's copy */
	mbedtls_entropy_context	 ent2;
	mbedtls_ctr_drbg_context drbg2;
	uint64_t		 fast, slow;	/* signatures of each kind */
};

/* One (k^-1 mod n, r = (kG).x mod n) with a fresh k; 0 or -1. */
static int
nonce_make(mbedtls_ecp_group *grp, mbedtls_ctr_drbg_context *drbg,
    struct rc_nonce *out)
{
	mbedtls_mpi k;
	mbedtls_ecp_point R;
	int rc;

	mbedtls_mpi_init(&k);
	mbedtls_ecp_point_init(&R);
	do {
		rc = mbedtls_ecp_gen_privkey(grp, &k, mbedtls_ctr_drbg_random,
		    drbg);
		if (rc == 0)
			rc = mbedtls_ecp_mul(grp, &R, &k, &grp->G,
			    mbedtls_ctr_drbg_random, drbg);
		if (rc == 0)
			rc = mbedtls_mpi_mod_mpi(&out->r, &R.X, &grp->N);
	} while (rc == 0 && mbedtls_mpi_cmp_int(&out->r, 0) == 0);
	if (rc == 0)
		rc = mbedtls_mpi_inv_mod(&out->kinv, &k, &grp->N);
	mbedtls_mpi_free(&k);		/* zeroes it */
	mbedtls_ecp_point_free(&R);
	return rc == 0 ? 0 : -1;
}

static void *
nonce_main(void *arg)
{
	struct rc_chain *c = arg;
	struct rc_nonce n;

	mbedtls_mpi_init(&n.kinv);
	mbedtls_mpi_init(&n.r);
	pthread_mutex_lock(&c->nm);
	while (!c->stop) {
		if (c->npool == RC_NONCES) {
			pthread_cond_wait(&c->ncv, &c->nm);
			continue;
		}
		pthread_mutex_unlock(&c->nm);
		if (nonce_make(&c->grp, &c->drbg2, &n) == -1) {
			pthread_mutex_lock(&c->nm);
			break;		/* the slow path still signs */
		}
		pthread_mutex_lock(&c->nm);
		mbedtls_mpi_swap(&c->pool[c->npool].kinv, &n.kinv);
		mbedtls_mpi_swap(&c->pool[c->npool].r, &n.r);
		c->npool++;
	}
	pthread_mutex_unlock(&c->nm);
	mbedtls_mpi_free(&n.kinv);
	mbedtls_mpi_free(&n.r);
	return NULL;
}

/*
 * The cheap half of ECDSA with a precomputed nonce: DER (r, s) into sig.
 * 0, or -1 when no nonce is ready (or s came out 0).
 */
static int
sign_fast(struct rc_chain *c, const unsigned char hash[32],
    unsigned char *sig, size_t *slen)
{
	const mbedtls_ecp_keypair *kp = mbedtls_pk_ec(c->pk);
	struct rc_nonce n;
	mbedtls_mpi e, s;
	unsigned char der[RC_SIG_MAX], *p = der + sizeof(der);
	size_t len = 0;
	int rc, got = 0, w;

	mbedtls_mpi_init(&n.kinv);
	mbedtls_mpi_init(&n.r);
	pthread_mutex_lock(&c->nm);
	if (c->npool > 0) {
		c->npool--;
		mbedtls_mpi_swap(&c->pool[c->npool].kinv, &n.kinv);
		mbedtls_mpi_swap(&c->pool[c->npool].r, &n.r);
		got = 1;
		pthread_cond_signal(&c->ncv);
	}
	pthread_mutex_unlock(&c->nm);
	if (!got) {
		mbedtls_mpi_free(&n.kinv);
		mbedtls_mpi_free(&n.r);
		return -1;
	}
	mbedtls_mpi_init(&e);
	mbedtls_mpi_init(&s);
	/* P-256 and SHA-256: e is the whole hash (same bit length as n) */
	rc = mbedtls_mpi_read_binary(&e, hash, 32);
	if (rc == 0)
		rc = mbedtls_mpi_mul_mpi(&s, &n.r, &kp->d);
	if (rc == 0)
		rc = mbedtls_mpi_add_mpi(&s, &s, &e);
	if (rc == 0)
		rc = mbedtls_mpi_mod_mpi(&s, &s, &kp->grp.N);
	if (rc == 0)
		rc = mbedtls_mpi_mul_mpi(&s, &s, &n.kinv);
	if (rc == 0)
		rc = mbedtls_mpi_mod_mpi(&s, &s, &kp->grp.N);
	if (rc == 0 && mbedtls_mpi_cmp_int(&s, 0) == 0)
		rc = -1;
	/* SEQUENCE { INTEGER r, INTEGER s }, written backwards */
	if (rc == 0 && (w = mbedtls_asn1_write_mpi(&p, der, &s)) > 0)
		len += (size_t)w;
	else
		rc = -1;
	if (rc == 0 && (w = mbedtls_asn1_write_mpi(&p, der, &n.r)) > 0)
		len += (size_t)w;
	else
		rc = -1;
	if (rc == 0 && (w = mbedtls_asn1_write_len(&p, der, len)) > 0)
		len += (size_t)w;
	else
		rc = -1;
	if (rc == 0 && (w = mbedtls_asn1_write_tag(&p, der,
	    MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) > 0)
		len += (size_t)w;
	else
		rc = -1;
	if (rc == 0) {
		memcpy(sig, p, len);
		*slen = len;
	}
	mbedtls_mpi_free(&e);
	mbedtls_mpi_free(&s);
	mbedtls_mpi_free(&n.kinv);	/* used once, zeroed */
	mbedtls_mpi_free(&n.r);
	return rc == 0 ? 0 : -1;
}

/* Start the nonce thread (keyed chains); failure only loses speed. */
static void
nonce_start(struct rc_chain *c)
{
	char err[128];
	unsigned i;

	pthread_mutex_init(&c->nm, NULL);
	pthread_cond_init(&c->ncv, NULL);
	for (i = 0; i < RC_NONCES; i++) {
		mbedtls_mpi_init(&c->pool[i].kinv);
		mbedtls_mpi_init(&c->pool[i].r);
	}
	mbedtls_ecp_group_init(&c->grp);
	if (mbedtls_ecp_group_copy(&c->grp, &mbedtls_pk_ec(c->pk)->grp) != 0 ||
	    rc_drbg_init(&c->ent2, &c->drbg2, err, sizeof(err)) == -1)
		return;
	if (pthread_create(&c->thr, NULL, nonce_main, c) == 0)
		c->thr_on = 1;
	else {
		mbedtls_ctr_drbg_free(&c->drbg2);
		mbedtls_entropy_free(&c->ent2);
	}
}

static void
nonce_stop(struct rc_chain *c)
{
	unsigned i;

	pthread_mutex_lock(&c->nm);
	c->stop = 1;
	pthread_cond_signal(&c->ncv);
	pthread_mutex_unlock(&c->nm);
	if (c->thr_on) {
		pthread_join(c->thr, NULL);
		mbedtls_ctr_drbg_free(&c->drbg2);
		mbedtls_entropy_free(&c->ent2);
	}
	for (i = 0; i < RC_NONCES; i++) {
		mbedtls_mpi_free(&c->pool[i].kinv);
		mbedtls_mpi_free(&c->pool[i].r);
	}
	mbedtls_ecp_group_free(&c->grp);
	pthread_mutex_destroy(&c->nm);
	pthread_cond_destroy(&c->ncv);
}

/* --- shared helpers ------------------------------------------------------ */

const char *
rc_line_chain(const char *p, size_t n, size_t *body, int *json)
{
	static const char tkey[] = " chain=", jkey[] = ",\"chain\":\"";
	const size_t tl = sizeof(tkey) - 1, jl = sizeof(jkey) - 1;
	const char *h;
	size_t b, i;
	int j;

	/* the two forms exclude each other: '}' is not a hex digit */
	if ((j = n >= 2 && memcmp(p + n - 2, "\"}", 2) == 0)) {
		if (n < RC_HEX_LEN + jl + 2 ||
		    memcmp(p + n - RC_HEX_LEN - 2 - jl, jkey, jl) != 0)
			return NULL;
		h = p + n - RC_HEX_LEN - 2;
		b = n - RC_HEX_LEN - 2 - jl;
	} else {
		if (n < RC_HEX_LEN + tl ||
		    memcmp(p + n - RC_HEX_LEN - tl, tkey, tl) != 0)
			return NULL;
		h = p + n - RC_HEX_LEN;
		b = n - RC_HEX_LEN - tl;
	}
	for (i = 0; i < RC_HEX_LEN; i++)
		if (!((h[i] >= '0' && h[i] <= '9') ||
		    (h[i] >= 'a' && h[i] <= 'f')))
			return NULL;
	if (body != NULL)
		*body = b;
	if (json != NULL)
		*json = j;
	return h;
}

void
rc_hex(const unsigned char *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void
rc_chain_hash(const char *prev, const char *buf, size_t len,
    char out[RC_HEX_LEN + 1])
{
	mbedtls_sha256_context c;
	unsigned char d[32];

	mbedtls_sha256_init(&c);
	mbedtls_sha256_starts_ret(&c, 0);
	mbedtls_sha256_update_ret(&c, (const unsigned char *)prev,
	    RC_HEX_LEN);
	mbedtls_sha256_update_ret(&c, (const unsigned char *)buf, len);
	mbedtls_sha256_finish_ret(&c, d);
	mbedtls_sha256_free(&c);
	rc_hex(d, sizeof(d), out);
}

void
rc_ts(int64_t ms, char out[32])
{
	time_t t;
	struct tm tm;
	size_t n;

	if (ms < 0)
		ms = 0;
	t = (time_t)(ms / 1000);
	gmtime_r(&t, &tm);
	n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

int
rc_drbg_init(mbedtls_entropy_context *ent, mbedtls_ctr_drbg_context *drbg,
    char *err, size_t errlen)
{
	static const char pers[] = "egressd-record";
	int rc;

	mbedtls_entropy_init(ent);
	mbedtls_ctr_drbg_init(drbg);
	rc = mbedtls_ctr_drbg_seed(drbg, mbedtls_entropy_func, ent,
	    (const unsigned char *)pers, sizeof(pers) - 1);
	if (rc != 0) {
		snprintf(err, errlen, "cannot seed the random generator "
		    "(mbedTLS -0x%04x)", (unsigned)-rc);
		mbedtls_ctr_drbg_free(drbg);
		mbedtls_entropy_free(ent);
		return -1;
	}
	return 0;
}

int
rc_load_key(mbedtls_pk_context *pk, const char *path, int private,
    char *err, size_t errlen)
{
	const mbedtls_ecp_keypair *ec;
	int rc;

	mbedtls_pk_init(pk);
	rc = private ? mbedtls_pk_parse_keyfile(pk, path, NULL) :
	    mbedtls_pk_parse_public_keyfile(pk, path);
	if (rc != 0) {
		char why[128];

		mbedtls_strerror(rc, why, sizeof(why));
		snprintf(err, errlen, "%s: cannot read the %s key: %s", path,
		    private ? "private" : "public", why);
		mbedtls_pk_free(pk);
		return -1;
	}
	if (!mbedtls_pk_can_do(pk, MBEDTLS_PK_ECKEY) ||
	    (ec = mbedtls_pk_ec(*pk)) == NULL ||
	    ec->grp.id != MBEDTLS_ECP_DP_SECP256R1) {
		snprintf(err, errlen, "%s: not an ECDSA P-256 key", path);
		mbedtls_pk_free(pk);
		return -1;
	}
	return 0;
}

size_t
rc_ck_message(char *buf, size_t cap, const char *run, size_t runlen,
    uint64_t seq, uint64_t lines, const char *head)
{
	int n;

	n = snprintf(buf, cap, "egressd-checkpoint\n%.*s\n%llu\n%llu\n%.64s",
	    (int)runlen, run, (unsigned long long)seq,
	    (unsigned long long)lines, head);
	return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

/* --- the ops ------------------------------------------------------------- */

static void *
chain_new(const struct eg_chain_params *p, char *err, size_t errlen)
{
	struct rc_chain *c;
	unsigned char d[32];

	if ((c = eg_calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(c->run, sizeof(c->run), "%s", p->run);
	mbedtls_sha256_ret(p->config, p->config_len, d, 0);
	rc_hex(d, sizeof(d), c->config);
	c->ck_lines = p->checkpoint_lines;
	memcpy(c->cur.head, zeros, sizeof(zeros));
	if (p->key != NULL) {
		if (rc_load_key(&c->pk, p->key, 1, err, errlen) == -1) {
			eg_free(c);
			return NULL;
		}
		if (rc_drbg_init(&c->ent, &c->drbg, err, errlen) == -1) {
			mbedtls_pk_free(&c->pk);
			eg_free(c);
			return NULL;
		}
		c->keyed = 1;
		nonce_start(c);
	}
	c->next = c->cur;
	return c;
}

static void
chain_free(void *st)
{
	struct rc_chain *c = st;

	if (c == NULL)
		return;
	if (c->keyed) {
		nonce_stop(c);
		mbedtls_pk_free(&c->pk);
		mbedtls_ctr_drbg_free(&c->drbg);
		mbedtls_entropy_free(&c->ent);
	}
	eg_free(c);
}

static int
keyed(void *st)
{
	return ((struct rc_chain *)st)->keyed;
}

/*
 * Chain buf[0..len) (a line with its '\n') after pos->head, in place:
 * the bytes before the newline (a JSON line: before its final '}') are
 * hashed and " chain=H" / ,"chain":"H"} appended.  The new length, 0
 * when it does not fit.
 */
static size_t
chain_one(struct chain_pos *pos, int json, char *buf, size_t len,
    size_t cap)
{
	char h[RC_HEX_LEN + 1];
	size_t body;
	int n;

	if (len < 2 || buf[len - 1] != '\n' ||
	    (json && buf[len - 2] != '}'))
		return 0;
	body = len - (json ? 2 : 1);
	if (cap - body < RC_HEX_LEN + 16)
		return 0;
	rc_chain_hash(pos->head, buf, body, h);
	n = snprintf(buf + body, cap - body, json ? ",\"chain\":\"%s\"}\n" :
	    " chain=%s\n", h);
	memcpy(pos->head, h, sizeof(h));
	pos->lines++;
	return body + (size_t)n;
}

/* Sign the checkpoint after pos; base64 in b64.  0 or -1. */
static int
sign(struct rc_chain *c, const struct chain_pos *pos, uint64_t seq,
    char *b64, size_t cap)
{
	char msg[256];
	unsigned char hash[32], sig[RC_SIG_MAX];
	size_t mlen, slen = 0, olen = 0;

	mlen = rc_ck_message(msg, sizeof(msg), c->run, strlen(c->run), seq,
	    pos->lines, pos->head);
	if (mlen == 0 ||
	    mbedtls_sha256_ret((const unsigned char *)msg, mlen, hash, 0))
		return -1;
	if (sign_fast(c, hash, sig, &slen) == 0)
		c->fast++;
	else if (mbedtls_pk_sign(&c->pk, MBEDTLS_MD_SHA256, hash,
	    sizeof(hash), sig, &slen, mbedtls_ctr_drbg_random, &c->drbg) == 0)
		c->slow++;
	else
		return -1;
	if (mbedtls_base64_encode((unsigned char *)b64, cap, &olen, sig,
	    slen) != 0)
		return -1;
	b64[olen] = '\0';
	return 0;
}

/* A CHECKPOINT line after pos, chained, at buf (cap); its length. */
static size_t
checkpoint_at(struct rc_chain *c, struct chain_pos *pos, int json,
    int64_t ts_ms, char *buf, size_t cap)
{
	char ts[32], b64[RC_B64_MAX];
	uint64_t seq = pos->seq + 1;
	int n;

	if (sign(c, pos, seq, b64, sizeof(b64)) == -1)
		return 0;
	rc_ts(ts_ms, ts);
	if (json)
		n = snprintf(buf, cap, "{\"ts\":\"%s\",\"event\":\"CHECKPOINT\","
		    "\"seq\":%llu,\"lines\":%llu,\"head\":\"%s\",\"sig\":"
		    "\"%s\"}\n", ts, (unsigned long long)seq,
		    (unsigned long long)pos->lines, pos->head, b64);
	else
		n = snprintf(buf, cap, "%s CHECKPOINT - seq=%llu lines=%llu "
		    "head=%s sig=%s\n", ts, (unsigned long long)seq,
		    (unsigned long long)pos->lines, pos->head, b64);
	if (n < 0 || (size_t)n >= cap)
		return 0;
	pos->seq = seq;
	pos->since = 0;
	return chain_one(pos, json, buf, (size_t)n, cap);
}

/* Every checkpoint_lines other lines: the CHECKPOINT after buf[0..n),
 * in the same buffer (the same write).  The new length. */
static size_t
due(struct rc_chain *c, int json, int64_t ts_ms, char *buf, size_t n,
    size_t cap)
{
	size_t k;

	if (n > 0 && c->keyed && c->ck_lines > 0 &&
	    c->next.since >= c->ck_lines &&
	    (k = checkpoint_at(c, &c->next, json, ts_ms, buf + n,
	    cap - n)) > 0)
		n += k;
	return n;
}

static size_t
start(void *st, int json, int64_t ts_ms, const char *prev, char *buf,
    size_t cap)
{
	struct rc_chain *c = st;
	char ts[32];
	int n;

	c->next = c->cur;
	memcpy(c->next.head, zeros, sizeof(zeros));
	rc_ts(ts_ms, ts);
	if (json)
		n = snprintf(buf, cap, "{\"ts\":\"%s\",\"event\":\"START\","
		    "\"run\":\"%s\",\"config\":\"%s\",\"prev\":\"%s\"}\n", ts,
		    c->run, c->config, prev != NULL ? prev : "-");
	else
		n = snprintf(buf, cap, "%s START - run=%s config=%s "
		    "prev=%s\n", ts, c->run, c->config,
		    prev != NULL ? prev : "-");
	if (n < 0 || (size_t)n >= cap)
		return 0;
	c->next.since++;
	return due(c, json, ts_ms, buf, chain_one(&c->next, json, buf,
	    (size_t)n, cap), cap);
}

static size_t
line(void *st, int json, int64_t ts_ms, char *buf, size_t len, size_t cap)
{
	struct rc_chain *c = st;
	size_t n;

	c->next = c->cur;
	if ((n = chain_one(&c->next, json, buf, len, cap)) == 0)
		return 0;
	c->next.since++;
	return due(c, json, ts_ms, buf, n, cap);
}

static size_t
checkpoint(void *st, int json, int64_t ts_ms, char *buf, size_t cap)
{
	struct rc_chain *c = st;

	c->next = c->cur;
	if (!c->keyed || c->next.since == 0)
		return 0;
	return checkpoint_at(c, &c->next, json, ts_ms, buf, cap);
}

static void
commit(void *st, int ok)
{
	struct rc_chain *c = st;

	if (ok)
		c->cur = c->next;
	else
		c->next = c->cur;
}

static void
head(void *st, char out[65], uint64_t *lines)
{
	struct rc_chain *c = st;

	memcpy(out, c->cur.head, RC_HEX_LEN + 1);
	*lines = c->cur.lines;
}

static void
new_file(void *st)
{
	struct rc_chain *c = st;

	c->cur.lines = c->cur.seq = c->cur.since = 0;
	c->next = c->cur;
}

/* ops->line_head: the head a file's last line (with its newline) ends in */
static int
line_head(const char *l, size_t len, char out[65])
{
	const char *h;

	if (len == 0 || l[len - 1] != '\n' ||
	    (h = rc_line_chain(l, len - 1, NULL, NULL)) == NULL)
		return -1;
	memcpy(out, h, RC_HEX_LEN);
	out[RC_HEX_LEN] = '\0';
	return 0;
}

const struct eg_audit_ops rc_audit_ops = {
	.chain_new	= chain_new,
	.chain_free	= chain_free,
	.keyed		= keyed,
	.start		= start,
	.line		= line,
	.checkpoint	= checkpoint,
	.commit		= commit,
	.head		= head,
	.new_file	= new_file,
	.line_head	= line_head,
};
