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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

struct rc_chain {
	char			 run[37];
	char			 config[RC_HEX_LEN + 1];
	unsigned		 ck_lines;
	int			 keyed;
	mbedtls_pk_context	 pk;
	mbedtls_entropy_context	 ent;
	mbedtls_ctr_drbg_context drbg;
	struct chain_pos	 cur, next;	/* committed, staged */
};

/* --- shared helpers ------------------------------------------------------ */

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

	if ((c = calloc(1, sizeof(*c))) == NULL) {
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
			free(c);
			return NULL;
		}
		if (rc_drbg_init(&c->ent, &c->drbg, err, errlen) == -1) {
			mbedtls_pk_free(&c->pk);
			free(c);
			return NULL;
		}
		c->keyed = 1;
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
		mbedtls_pk_free(&c->pk);
		mbedtls_ctr_drbg_free(&c->drbg);
		mbedtls_entropy_free(&c->ent);
	}
	free(c);
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
	    mbedtls_sha256_ret((const unsigned char *)msg, mlen, hash, 0) ||
	    mbedtls_pk_sign(&c->pk, MBEDTLS_MD_SHA256, hash, sizeof(hash),
	    sig, &slen, mbedtls_ctr_drbg_random, &c->drbg) != 0 ||
	    mbedtls_base64_encode((unsigned char *)b64, cap, &olen, sig,
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
	return chain_one(&c->next, json, buf, (size_t)n, cap);
}

static size_t
line(void *st, int json, int64_t ts_ms, char *buf, size_t len, size_t cap)
{
	struct rc_chain *c = st;
	size_t n, k;

	c->next = c->cur;
	if ((n = chain_one(&c->next, json, buf, len, cap)) == 0)
		return 0;
	c->next.since++;
	/* every checkpoint_lines other lines: one in the same write */
	if (c->keyed && c->ck_lines > 0 && c->next.since >= c->ck_lines &&
	    (k = checkpoint_at(c, &c->next, json, ts_ms, buf + n,
	    cap - n)) > 0)
		n += k;
	return n;
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

static int
hex64(const char *s)
{
	size_t i;

	for (i = 0; i < RC_HEX_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int
line_head(const char *l, size_t len, char out[65])
{
	const char *h;

	/* " chain=" H "\n" or ,"chain":" H "}\n" */
	if (len >= RC_HEX_LEN + 8 && l[len - 1] == '\n' &&
	    memcmp(l + len - RC_HEX_LEN - 8, " chain=", 7) == 0)
		h = l + len - RC_HEX_LEN - 1;
	else if (len >= RC_HEX_LEN + 13 && memcmp(l + len - 3, "\"}\n", 3) ==
	    0 && memcmp(l + len - RC_HEX_LEN - 13, ",\"chain\":\"", 10) == 0)
		h = l + len - RC_HEX_LEN - 3;
	else
		return -1;
	if (!hex64(h))
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
