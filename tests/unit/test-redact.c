/*
 * test-redact.c: the streaming redactor (src/mod/replay/redact.c) gives
 * the whole-buffer result however the input is split: every split point
 * into two reads, every chunk size, several secrets, overlapping ones
 * (longest first at a position), one value a prefix of another, a value
 * right at the end; rp_redact_fd over a pipe with values spanning the
 * 64 KiB read buffer; the output cap never cuts a value.
 */
#include "config.h"

#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/mod/replay/redact.h"
#include "../fuzz/naive-redact.h"
#include "tap.h"

struct mem {
	unsigned char	*p;
	size_t		 len, cap;
};

static int
mem_emit(void *arg, const void *buf, size_t len)
{
	struct mem *m = arg;

	if (m->len + len > m->cap) {
		errno = ENOSPC;
		return -1;
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

/* Streaming over the given cut points; returns 1 when equal to naive. */
static int
same_as_naive(struct rp_redactor *r, const struct rp_secret *s, size_t ns,
    const unsigned char *in, size_t len, const size_t *cuts, size_t ncuts,
    size_t chunk)
{
	struct rp_rstream st;
	struct mem m;
	unsigned char *want;
	size_t wlen, whits, pos = 0, i, next;
	int eq;

	want = malloc(len * 2 + 16);
	m.p = malloc(len * 2 + 16);
	m.len = 0;
	m.cap = len * 2 + 16;
	wlen = naive_redact(s, ns, in, len, want, &whits);
	if (rp_rstream_init(&st, r, mem_emit, &m) < 0)
		return 0;
	if (chunk > 0) {
		while (pos < len) {
			next = len - pos < chunk ? len : pos + chunk;
			rp_rstream_feed(&st, in + pos, next - pos);
			pos = next;
		}
	} else {
		for (i = 0; i < ncuts; i++) {
			rp_rstream_feed(&st, in + pos, cuts[i] - pos);
			pos = cuts[i];
		}
		rp_rstream_feed(&st, in + pos, len - pos);
	}
	rp_rstream_finish(&st);
	eq = m.len == wlen && memcmp(m.p, want, wlen) == 0 && st.hits == whits;
	if (!eq)
		diag("got %zu bytes (%llu hits), want %zu (%zu hits)", m.len,
		    (unsigned long long)st.hits, wlen, whits);
	rp_rstream_free(&st);
	free(want);
	free(m.p);
	return eq;
}

static void
all_splits(const char *what, const struct rp_secret *s, size_t ns,
    const char *text)
{
	struct rp_redactor *r = rp_redactor_new(s, ns);
	const unsigned char *in = (const unsigned char *)text;
	size_t len = strlen(text), i, j, cuts[2], bad = 0, tried = 0;

	for (i = 0; i <= len; i++) {
		cuts[0] = i;
		tried++;
		if (!same_as_naive(r, s, ns, in, len, cuts, 1, 0))
			bad++;
		for (j = i; j <= len && j < i + 24; j++) {
			cuts[1] = j;
			tried++;
			if (!same_as_naive(r, s, ns, in, len, cuts, 2, 0))
				bad++;
		}
	}
	for (i = 1; i <= len + 1; i++) {
		tried++;
		if (!same_as_naive(r, s, ns, in, len, NULL, 0, i))
			bad++;
	}
	ok(bad == 0, "%s: %zu splittings like the whole buffer (%zu differ)",
	    what, tried, bad);
	rp_redactor_free(r);
}

static void
check_mem(const char *what, const struct rp_secret *s, size_t ns,
    const char *text, const char *want, size_t want_hits)
{
	struct rp_redactor *r = rp_redactor_new(s, ns);
	struct rp_rstream st;
	unsigned char out[512];
	struct mem m = { out, 0, sizeof(out) - 1 };

	rp_rstream_init(&st, r, mem_emit, &m);
	rp_rstream_feed(&st, text, strlen(text));
	rp_rstream_finish(&st);
	out[m.len] = '\0';
	is_str((char *)out, want, "%s", what);
	is_int(st.hits, want_hits, "%s: hits", what);
	rp_rstream_free(&st);
	rp_redactor_free(r);
}

/* rp_redact_fd from a pipe written by a child in odd-sized pieces. */
static void
pipe_test(void)
{
	static const struct rp_secret s[] = {
		{ "A", "sk-ant-0123456789abcdef", 23 },
		{ "B", "hunter22hunter22", 16 },
	};
	struct rp_redactor *r = rp_redactor_new(s, 2);
	size_t len = 3 * 65536 + 1234, i, wlen, whits, pos;
	unsigned char *in = malloc(len), *want = malloc(len * 2 + 16);
	unsigned char *got = malloc(len * 2 + 16);
	char tmpl[] = "/tmp/test-redact.XXXXXX";
	uint64_t hits = 0;
	int p[2], out, trunc;
	ssize_t n;
	pid_t pid;

	for (i = 0; i < len; i++)
		in[i] = (unsigned char)('a' + i % 26);
	/* values across each 64 KiB boundary and at the very end */
	for (pos = 65536 - 5; pos < len - 30; pos += 65536)
		memcpy(in + pos, s[0].val, s[0].len);
	memcpy(in + 7777 * 12 - 8, s[1].val, s[1].len);	/* a write boundary */
	memcpy(in + len - s[1].len, s[1].val, s[1].len);
	wlen = naive_redact(s, 2, in, len, want, &whits);
	ok(pipe(p) == 0, "pipe");
	fflush(stdout);		/* the child must not print our lines again
				   (TSan's _exit flushes stdio) */
	if ((pid = fork()) == 0) {
		close(p[0]);
		for (pos = 0; pos < len; pos += (size_t)n) {
			n = (ssize_t)(len - pos < 7777 ? len - pos : 7777);
			if (write(p[1], in + pos, (size_t)n) != n)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	out = mkstemp(tmpl);
	is_int(rp_redact_fd(r, p[0], out, &hits), 0, "rp_redact_fd");
	close(p[0]);
	waitpid(pid, NULL, 0);
	is_int(hits, whits, "hits %zu (across read boundaries)", whits);
	ok(whits == 5, "five values planted");
	lseek(out, 0, SEEK_SET);
	n = read(out, got, len * 2);
	ok(n == (ssize_t)wlen && memcmp(got, want, wlen) == 0,
	    "file equals the whole-buffer result");
	ok(memmem(got, (size_t)n, s[0].val, s[0].len) == NULL &&
	    memmem(got, (size_t)n, s[1].val, s[1].len) == NULL,
	    "no secret in the output");

	/* the cap: a value straddling it comes out whole or not at all */
	lseek(out, 0, SEEK_SET);
	if (ftruncate(out, 0) != 0)
		diag("ftruncate");
	{
		const char *t = "0123hunter22hunter22tail";
		int q[2];

		if (pipe(q) == 0) {
			if (write(q[1], t, strlen(t)) < 0)
				diag("write");
			close(q[1]);
			is_int(rp_redact_fd_max(r, q[0], out, 9, &hits, &trunc),
			    0, "capped copy");
			close(q[0]);
		}
		n = pread(out, got, 64, 0);
		is_int(n, 9, "9 bytes kept");
		ok(memcmp(got, "0123[REDA", 9) == 0, "cut after redaction");
		is_int(trunc, 1, "truncated");
		lseek(out, 0, SEEK_SET);
		if (ftruncate(out, 0) != 0 || pipe(q) != 0)
			diag("ftruncate/pipe");
		if (write(q[1], t, strlen(t)) < 0)
			diag("write");
		close(q[1]);
		rp_redact_fd_max(r, q[0], out, 18, &hits, &trunc);
		close(q[0]);
		is_int(trunc, 0, "exactly at the cap: not truncated");
		n = pread(out, got, 64, 0);
		is_int(n, 18, "18 bytes");
	}
	close(out);
	unlink(tmpl);
	free(in);
	free(want);
	free(got);
	rp_redactor_free(r);
}

int
main(void)
{
	static const struct rp_secret one[] = { { "K", "SECRETSECRET", 12 } };
	static const struct rp_secret many[] = {
		{ "A", "abcdefgh", 8 },
		{ "B", "abcdefghijkl", 12 },	/* A is its prefix */
		{ "C", "ghijklmnop", 10 },	/* overlaps B's tail */
		{ "D", "short", 5 },		/* < 8: ignored */
		{ "E", "aaaaaaaaa", 9 },	/* self-overlapping */
		{ "F", "abcdefgh", 8 },		/* duplicate of A */
	};
	static const struct rp_secret none[] = { { "X", "tiny", 4 } };

	check_mem("one value", one, 1, "x=SECRETSECRET;", "x=[REDACTED];", 1);
	check_mem("value at start and end", one, 1, "SECRETSECRETmidSECRETSECRET",
	    "[REDACTED]mid[REDACTED]", 2);
	check_mem("longest at a position", many, 6, "--abcdefghijkl--",
	    "--[REDACTED]--", 1);
	check_mem("prefix value alone", many, 6, "--abcdefghij--",
	    "--[REDACTED]ij--", 1);
	check_mem("overlap: leftmost wins, then the rest", many, 6,
	    "abcdefghijklmnop", "[REDACTED]mnop", 1);
	check_mem("overlap starting inside", many, 6, "xxghijklmnop",
	    "xx[REDACTED]", 1);
	check_mem("short values ignored", many, 6, "short", "short", 0);
	check_mem("self-overlapping", many, 6, "aaaaaaaaaaaaaaaaaa",
	    "[REDACTED][REDACTED]", 2);
	check_mem("no usable secret copies", none, 1, "tiny tiny", "tiny tiny", 0);
	check_mem("empty input", one, 1, "", "", 0);
	check_mem("partial value kept", one, 1, "SECRETSECRE", "SECRETSECRE", 0);

	all_splits("one value", one, 1, "ab SECRETSECRET cd SECRETSECRETSECRETSECRET");
	all_splits("several, overlapping", many, 6,
	    "abcdefghijklmnopqabcdefghaaaaaaaaaaaghijklmnopabcdefghijkl");
	all_splits("near misses", many, 6,
	    "abcdefgabcdefghijkaaaaaaaabcdefghijkghijklmnoabcdefgh");
	pipe_test();
	return done_testing();
}
