/*
 * record-sign.c: what one CHECKPOINT costs the audit writer, through the
 * record module's own ops (src/mod/record/chain.c) as audit.c calls them
 * under the log's lock, and a bare signature through the core's
 * crypto.h (the library's deterministic ECDSA) for comparison.
 *
 *   paced:  one checkpoint every 5 ms
 *   burst:  checkpoints back to back
 *
 * (Before issue 22 chain.c kept precomputed nonces, so the two differed;
 * now every checkpoint is one library signature and they should not.)
 *
 * Build from the top of a configured tree (build dir B, default _build):
 *   cc -O2 -Isrc/lib -Isrc/include -IB -o /tmp/record-sign \
 *       bench/record-sign.c B/src/lib/.libs/libegress-core.a \
 *       $(pkg-config --libs libcares libmicrohttpd inih libseccomp \
 *       jansson libsystemd) -lmbedcrypto -lpthread
 *   /tmp/record-sign tests/data/record/test.key [N]
 * (the key must be mode 0600: install -m 600 it to a copy first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "module.h"

const struct eg_audit_ops *eg_module_audit_ops(void);

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
show(const char *what, double *t, size_t n)
{
	qsort(t, n, sizeof(*t), cmp);
	printf("%-44s median %8.1f us  p90 %8.1f us  p99 %8.1f us  (%zu)\n",
	    what, t[n / 2], t[n * 9 / 10], t[n * 99 / 100], n);
}

int
main(int argc, char *argv[])
{
	const struct eg_audit_ops *ops = eg_module_audit_ops();
	struct eg_chain_params p;
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	char err[256], buf[8192];
	size_t i, n = argc > 2 ? (size_t)atoi(argv[2]) : 500, len;
	double *t, t0;
	void *st;
	struct eg_key *key;
	unsigned char hash[EG_SHA256_LEN], sig[EG_SIG_MAX];
	size_t slen;

	if (argc < 2 || ops == NULL || (t = calloc(n, sizeof(*t))) == NULL) {
		fprintf(stderr, "usage: record-sign KEY.pem [N] (a build with "
		    "the record module)\n");
		return 2;
	}
	memset(&p, 0, sizeof(p));
	p.run = "0d5e5a6b-1c2d-4e3f-8a9b-0c1d2e3f4a5b";
	p.config = "";
	p.key = argv[1];
	if ((st = ops->chain_new(&p, err, sizeof(err))) == NULL) {
		fprintf(stderr, "record-sign: %s\n", err);
		return 1;
	}
	nanosleep(&pause, NULL);
	for (int mode = 0; mode < 2; mode++) {
		for (i = 0; i < n; i++) {
			/* a line, then the checkpoint after it */
			len = (size_t)snprintf(buf, sizeof(buf), "2026-12-01T"
			    "17:00:00.000Z BLOCK x.example:443 id=%zu phase=a "
			    "reason=not_allowed\n", i);
			ops->line(st, 0, 0, buf, len, sizeof(buf));
			ops->commit(st, 1);
			if (mode == 0)
				nanosleep(&pause, NULL);
			t0 = now_us();
			len = ops->checkpoint(st, 0, 0, buf, sizeof(buf));
			t[i] = now_us() - t0;
			ops->commit(st, len > 0);
		}
		show(mode == 0 ? "checkpoint(), paced (one every 5 ms)" :
		    "checkpoint(), burst (back to back)", t, n);
	}
	ops->chain_free(st);

	if ((key = eg_key_load(argv[1], 1, err, sizeof(err))) == NULL) {
		fprintf(stderr, "record-sign: %s\n", err);
		return 1;
	}
	for (i = 0; i < n; i++) {
		memset(hash, (int)i, sizeof(hash));
		t0 = now_us();
		eg_key_sign(key, hash, sig, &slen);
		t[i] = now_us() - t0;
	}
	show("bare eg_key_sign() (ECDSA P-256, RFC 6979)", t, n);
	eg_key_free(key);
	for (i = 0; i < n; i++) {
		len = (size_t)snprintf(buf, sizeof(buf), "%064zu2026-12-01T"
		    "17:00:00.000Z BLOCK x.example:443 id=%zu phase=a client="
		    "127.0.0.1:40000 method=CONNECT reason=not_allowed", i, i);
		t0 = now_us();
		eg_sha256(buf, len, hash);
		t[i] = now_us() - t0;
	}
	show("one chain step (SHA-256, ~180 bytes)", t, n);
	return 0;
}
