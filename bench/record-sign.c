/*
 * record-sign.c: what one CHECKPOINT costs the audit writer, through the
 * record module's own ops (src/mod/record/chain.c) as audit.c calls them
 * under the log's lock, and a bare mbedtls_pk_sign() for comparison.
 *
 *   paced:  one checkpoint every 5 ms (the nonce pool refills between
 *           them: the steady state of any real log)
 *   burst:  checkpoints back to back (the pool runs dry: the fallback
 *           signs the whole way)
 *
 * Build from the top of a configured tree (build dir B, default _build):
 *   cc -O2 -Isrc/lib -Isrc/include -IB -o /tmp/record-sign \
 *       bench/record-sign.c B/src/lib/.libs/libegress-core.a \
 *       $(pkg-config --libs libcares libmicrohttpd inih libseccomp) \
 *       -lmbedcrypto -lpthread
 *   /tmp/record-sign tests/data/record/test.key [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>

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
	mbedtls_pk_context pk;
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	unsigned char hash[32], sig[MBEDTLS_ECDSA_MAX_LEN];
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
		show(mode == 0 ? "checkpoint(), paced (nonce ready)" :
		    "checkpoint(), burst (pool dry)", t, n);
	}
	ops->chain_free(st);

	mbedtls_pk_init(&pk);
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	if (mbedtls_pk_parse_keyfile(&pk, argv[1], NULL) != 0 ||
	    mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent,
	    (const unsigned char *)"bench", 5) != 0)
		return 1;
	for (i = 0; i < n; i++) {
		memset(hash, (int)i, sizeof(hash));
		t0 = now_us();
		mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, 32, sig, &slen,
		    mbedtls_ctr_drbg_random, &drbg);
		t[i] = now_us() - t0;
	}
	show("bare mbedtls_pk_sign() (ECDSA P-256)", t, n);
	for (i = 0; i < n; i++) {
		len = (size_t)snprintf(buf, sizeof(buf), "%064zu2026-12-01T"
		    "17:00:00.000Z BLOCK x.example:443 id=%zu phase=a client="
		    "127.0.0.1:40000 method=CONNECT reason=not_allowed", i, i);
		t0 = now_us();
		mbedtls_sha256_ret((unsigned char *)buf, len, hash, 0);
		t[i] = now_us() - t0;
	}
	show("one chain step (SHA-256, ~180 bytes)", t, n);
	return 0;
}
