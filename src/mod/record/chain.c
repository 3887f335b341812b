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
 * A checkpoint is signed under that lock by the library's own call
 * (eg_key_sign(): the library's ECDSA, deterministic), about 0.6 ms
 * with mbedTLS 2.28 once every checkpoint_lines lines or
 * checkpoint_interval seconds: well under a microsecond per line
 * amortised (doc/PERFORMANCE.md "Record").  Nothing here does signature
 * arithmetic of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record.h"

static const char zeros[REC_HEX_LEN + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

struct chain_pos {
	char		 head[REC_HEX_LEN + 1];	/* last line's chain value */
	uint64_t	 lines;		/* of the current file */
	uint64_t	 seq;		/* checkpoints in it */
	uint64_t	 since;		/* other lines since the last one */
};

struct rec_chain {
	char			 run[37];
	char			 config[REC_HEX_LEN + 1];
	unsigned		 ck_lines;
	struct eg_key		*key;		/* NULL: chain only */
	struct chain_pos	 cur, next;	/* committed, staged */
};

/* --- shared helpers ------------------------------------------------------ */

const char *
rec_line_chain(const char *p, size_t n, size_t *body, int *json)
{
	static const char tkey[] = " chain=", jkey[] = ",\"chain\":\"";
	const size_t tl = sizeof(tkey) - 1, jl = sizeof(jkey) - 1;
	const char *h;
	size_t b, i;
	int j;

	/* the two forms exclude each other: '}' is not a hex digit */
	if ((j = n >= 2 && memcmp(p + n - 2, "\"}", 2) == 0)) {
		if (n < REC_HEX_LEN + jl + 2 ||
		    memcmp(p + n - REC_HEX_LEN - 2 - jl, jkey, jl) != 0)
			return NULL;
		h = p + n - REC_HEX_LEN - 2;
		b = n - REC_HEX_LEN - 2 - jl;
	} else {
		if (n < REC_HEX_LEN + tl ||
		    memcmp(p + n - REC_HEX_LEN - tl, tkey, tl) != 0)
			return NULL;
		h = p + n - REC_HEX_LEN;
		b = n - REC_HEX_LEN - tl;
	}
	for (i = 0; i < REC_HEX_LEN; i++)
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
rec_hex(const unsigned char *in, size_t n, char *out)
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
rec_chain_hash(const char *prev, const char *buf, size_t len,
    char out[REC_HEX_LEN + 1])
{
	struct eg_sha256 c;
	unsigned char d[EG_SHA256_LEN];

	eg_sha256_init(&c);
	eg_sha256_update(&c, prev, REC_HEX_LEN);
	eg_sha256_update(&c, buf, len);
	eg_sha256_final(&c, d);
	rec_hex(d, sizeof(d), out);
}

void
rec_ts(int64_t ms, char out[32])
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

size_t
rec_ck_message(char *buf, size_t cap, const char *run, size_t runlen,
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
	struct rec_chain *c;
	unsigned char d[32];

	if ((c = eg_calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(c->run, sizeof(c->run), "%s", p->run);
	eg_sha256(p->config, p->config_len, d);
	rec_hex(d, sizeof(d), c->config);
	c->ck_lines = p->checkpoint_lines;
	memcpy(c->cur.head, zeros, sizeof(zeros));
	if (p->key != NULL &&
	    (c->key = eg_key_load(p->key, 1, err, errlen)) == NULL) {
		eg_free(c);
		return NULL;
	}
	c->next = c->cur;
	return c;
}

static void
chain_free(void *st)
{
	struct rec_chain *c = st;

	if (c == NULL)
		return;
	eg_key_free(c->key);
	eg_free(c);
}

static int
keyed(void *st)
{
	return ((struct rec_chain *)st)->key != NULL;
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
	char h[REC_HEX_LEN + 1];
	size_t body;
	int n;

	if (len < 2 || buf[len - 1] != '\n' ||
	    (json && buf[len - 2] != '}'))
		return 0;
	body = len - (json ? 2 : 1);
	if (cap - body < REC_HEX_LEN + 16)
		return 0;
	rec_chain_hash(pos->head, buf, body, h);
	n = snprintf(buf + body, cap - body, json ? ",\"chain\":\"%s\"}\n" :
	    " chain=%s\n", h);
	memcpy(pos->head, h, sizeof(h));
	pos->lines++;
	return body + (size_t)n;
}

/* Sign the checkpoint after pos; base64 in b64.  0 or -1. */
static int
sign(struct rec_chain *c, const struct chain_pos *pos, uint64_t seq,
    char *b64, size_t cap)
{
	char msg[256];
	unsigned char hash[EG_SHA256_LEN], sig[EG_SIG_MAX];
	size_t mlen, slen = 0;

	mlen = rec_ck_message(msg, sizeof(msg), c->run, strlen(c->run), seq,
	    pos->lines, pos->head);
	if (mlen == 0)
		return -1;
	eg_sha256(msg, mlen, hash);
	if (eg_key_sign(c->key, hash, sig, &slen) != 0)
		return -1;
	return eg_b64_encode(sig, slen, b64, cap);
}

/* A CHECKPOINT line after pos, chained, at buf (cap); its length. */
static size_t
checkpoint_at(struct rec_chain *c, struct chain_pos *pos, int json,
    int64_t ts_ms, char *buf, size_t cap)
{
	char ts[32], b64[REC_B64_MAX];
	uint64_t seq = pos->seq + 1;
	int n;

	if (sign(c, pos, seq, b64, sizeof(b64)) == -1)
		return 0;
	rec_ts(ts_ms, ts);
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
due(struct rec_chain *c, int json, int64_t ts_ms, char *buf, size_t n,
    size_t cap)
{
	size_t k;

	if (n > 0 && c->key != NULL && c->ck_lines > 0 &&
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
	struct rec_chain *c = st;
	char ts[32];
	int n;

	c->next = c->cur;
	memcpy(c->next.head, zeros, sizeof(zeros));
	rec_ts(ts_ms, ts);
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
	struct rec_chain *c = st;
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
	struct rec_chain *c = st;

	c->next = c->cur;
	if (c->key == NULL || c->next.since == 0)
		return 0;
	return checkpoint_at(c, &c->next, json, ts_ms, buf, cap);
}

static void
commit(void *st, int ok)
{
	struct rec_chain *c = st;

	if (ok)
		c->cur = c->next;
	else
		c->next = c->cur;
}

static void
head(void *st, char out[65], uint64_t *lines)
{
	struct rec_chain *c = st;

	memcpy(out, c->cur.head, REC_HEX_LEN + 1);
	*lines = c->cur.lines;
}

static void
new_file(void *st)
{
	struct rec_chain *c = st;

	c->cur.lines = c->cur.seq = c->cur.since = 0;
	c->next = c->cur;
}

/* ops->line_head: the head a file's last line (with its newline) ends in */
static int
line_head(const char *l, size_t len, char out[65])
{
	const char *h;

	if (len == 0 || l[len - 1] != '\n' ||
	    (h = rec_line_chain(l, len - 1, NULL, NULL)) == NULL)
		return -1;
	memcpy(out, h, REC_HEX_LEN);
	out[REC_HEX_LEN] = '\0';
	return 0;
}

const struct eg_audit_ops rec_audit_ops = {
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
