/*
 * record-sign.c: what one CHECKPOINT costs the writer (the record
 * module's chain.c does exactly this under the audit file's lock): SHA-256
 * of the checkpoint message, an ECDSA P-256 signature with mbedTLS's
 * CTR-DRBG, base64.  Also one chain step (SHA-256 over 64 hex + a 200-byte
 * line).  Prints microseconds per operation (median of N runs).
 *
 *	cc -O2 -o record-sign record-sign.c -lmbedcrypto
 *	./record-sign KEY.pem [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/base64.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>

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

int
main(int argc, char *argv[])
{
	mbedtls_pk_context pk;
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	unsigned char hash[32], sig[MBEDTLS_ECDSA_MAX_LEN], b64[256];
	char msg[256], line[265];
	size_t slen, olen, i, n = argc > 2 ? (size_t)atoi(argv[2]) : 2000;
	double *t, t0;

	if (argc < 2 || (t = calloc(n, sizeof(*t))) == NULL) {
		fprintf(stderr, "usage: record-sign KEY.pem [N]\n");
		return 2;
	}
	mbedtls_pk_init(&pk);
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	if (mbedtls_pk_parse_keyfile(&pk, argv[1], NULL) != 0 ||
	    mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent,
	    (const unsigned char *)"bench", 5) != 0) {
		fprintf(stderr, "record-sign: cannot load %s\n", argv[1]);
		return 1;
	}
	for (i = 0; i < n; i++) {
		int m = snprintf(msg, sizeof(msg), "egressd-checkpoint\n"
		    "0d5e5a6b-1c2d-4e3f-8a9b-0c1d2e3f4a5b\n%zu\n%zu\n"
		    "%064x", i + 1, (i + 1) * 1000, (unsigned)i);

		t0 = now_us();
		mbedtls_sha256_ret((unsigned char *)msg, (size_t)m, hash, 0);
		mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, 32, sig, &slen,
		    mbedtls_ctr_drbg_random, &drbg);
		mbedtls_base64_encode(b64, sizeof(b64), &olen, sig, slen);
		t[i] = now_us() - t0;
	}
	qsort(t, n, sizeof(*t), cmp);
	printf("checkpoint signature: median %.1f us, p99 %.1f us (%zu runs)\n",
	    t[n / 2], t[n * 99 / 100], n);
	memset(line, 'x', sizeof(line));
	for (i = 0; i < n; i++) {
		t0 = now_us();
		mbedtls_sha256_ret((unsigned char *)line, sizeof(line), hash, 0);
		t[i] = now_us() - t0;
	}
	qsort(t, n, sizeof(*t), cmp);
	printf("chain step (SHA-256 of 64 hex + 200 bytes): median %.2f us\n",
	    t[n / 2]);
	return 0;
}
