/*
 * bench-decide.c: how long one allowlist decision takes.  It builds a
 * phase of each size given on the command line (default 10, 1,000 and
 * 100,000 entries: exact names and wildcards), then times parsing a
 * CONNECT head and matching its host, in batches, and prints the median
 * nanoseconds per decision for each size, and how long building the phase
 * took.  With --raw, one machine-readable line per size:
 *   decide entries=N build_ms=.. ns_per_decision=.. ns_per_match=..
 *       p10_ns=.. p90_ns=..
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host.h"
#include "policy.h"
#include "reqparse.h"

struct egress;
void	eg_log_write(struct egress *, int, const char *, ...);

/* err.c's eg_bug() logs through the proxy; nothing logs here */
void
eg_log_write(struct egress *ex, int level, const char *fmt, ...)
{
	(void)ex;
	(void)level;
	(void)fmt;
}

#define BATCH		1000
#define SAMPLES		301
#define NHEADS		64

static const uint16_t ports[] = { 443 };

static void
build(struct eg_phase *p, size_t n)
{
	struct eg_rule r;
	struct eg_err err;
	char pat[128];
	size_t i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		if (i % 4 == 3)
			snprintf(pat, sizeof(pat), "*.svc%zu.example.com", i);
		else if (i % 8 == 1)
			snprintf(pat, sizeof(pat), "**.zone%zu.example.net", i);
		else
			snprintf(pat, sizeof(pat), "api%zu.example.org", i);
		if (eg_rule_parse(pat, strlen(pat), &r, &err) == -1 ||
		    eg_phase_add(p, &r) == -1) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
	}
	if (eg_phase_finish(p) == -1) {
		fprintf(stderr, "eg_phase_finish failed\n");
		exit(1);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/*
 * Median ns per decision (parse + match, or match alone when
 * match_only) and the number allowed in one batch.
 */
static double spread_lo, spread_hi;	/* p10, p90 of the last run() */

static double
run(const struct eg_phase *p, size_t n, int match_only, size_t *allowed)
{
	static struct eg_req pre[NHEADS];
	static char heads[NHEADS][256];
	static size_t lens[NHEADS];
	static struct eg_req req;
	double samples[SAMPLES], t0;
	const struct eg_rule *r;
	const char *why;
	size_t i, s, k;

	/* A mix of hits and misses, spread over the table. */
	for (i = 0; i < NHEADS; i++) {
		k = (i * 7919) % (n ? n : 1);
		if (i % 4 == 0)
			snprintf(heads[i], sizeof(heads[i]),
			    "CONNECT deep.a.svc%zu.example.com:443 HTTP/1.1\r\n"
			    "Host: x\r\nUser-Agent: bench\r\n\r\n", k | 3);
		else if (i % 4 == 1)
			snprintf(heads[i], sizeof(heads[i]),
			    "CONNECT API%zu.Example.org.:443 HTTP/1.1\r\n"
			    "Host: x\r\nUser-Agent: bench\r\n\r\n", k & ~3UL);
		else if (i % 4 == 2)
			snprintf(heads[i], sizeof(heads[i]),
			    "CONNECT www.code.example:443 HTTP/1.1\r\n"
			    "Host: x\r\nUser-Agent: bench\r\n\r\n");
		else
			snprintf(heads[i], sizeof(heads[i]),
			    "CONNECT allowed.test.evil.test:443 HTTP/1.1\r\n"
			    "Host: x\r\nUser-Agent: bench\r\n\r\n");
		lens[i] = strlen(heads[i]);
		if (eg_req_parse((const uint8_t *)heads[i], lens[i], &pre[i],
		    &why) != EG_PARSE_OK) {
			fprintf(stderr, "parse: %s: %s\n", heads[i], why);
			exit(1);
		}
	}
	*allowed = 0;
	/* Sample 0 warms caches and the CPU up; it is not counted. */
	for (s = 0; s <= SAMPLES; s++) {
		t0 = now_ns();
		for (i = 0; i < BATCH; i++) {
			k = i % NHEADS;
			if (match_only) {
				if (eg_phase_match(p, &pre[k].host,
				    pre[k].port, ports, 1, &r) ==
				    EG_MATCH_ALLOW && s == 1)
					(*allowed)++;
				continue;
			}
			if (eg_req_parse((const uint8_t *)heads[k], lens[k],
			    &req, &why) != EG_PARSE_OK) {
				fprintf(stderr, "parse: %s: %s\n", heads[k],
				    why);
				exit(1);
			}
			if (eg_phase_match(p, &req.host, req.port, ports, 1,
			    &r) == EG_MATCH_ALLOW && s == 1)
				(*allowed)++;
		}
		if (s > 0)
			samples[s - 1] = (now_ns() - t0) / BATCH;
	}
	qsort(samples, SAMPLES, sizeof(samples[0]), cmp_double);
	spread_lo = samples[SAMPLES / 10];
	spread_hi = samples[SAMPLES * 9 / 10];
	return samples[SAMPLES / 2];
}

int
main(int argc, char *argv[])
{
	static const size_t defsizes[] = { 10, 1000, 100000 };
	size_t sizes[16], nsizes = 0;
	struct eg_phase p;
	size_t i, allowed;
	double ns, nsm, lo, hi, t0, bms;
	int a, raw = 0;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--raw") == 0)
			raw = 1;
		else if (nsizes < 16 && atol(argv[a]) > 0)
			sizes[nsizes++] = (size_t)atol(argv[a]);
		else {
			fprintf(stderr, "usage: bench-decide [--raw] "
			    "[ENTRIES ...]\n");
			return 2;
		}
	}
	if (nsizes == 0)
		for (; nsizes < sizeof(defsizes) / sizeof(defsizes[0]);
		    nsizes++)
			sizes[nsizes] = defsizes[nsizes];
	for (i = 0; i < nsizes; i++) {
		t0 = now_ns();
		build(&p, sizes[i]);
		bms = (now_ns() - t0) / 1e6;
		ns = run(&p, sizes[i], 0, &allowed);
		lo = spread_lo;
		hi = spread_hi;
		nsm = run(&p, sizes[i], 1, &allowed);
		if (raw)
			printf("decide entries=%zu build_ms=%.1f "
			    "ns_per_decision=%.0f ns_per_match=%.0f "
			    "p10_ns=%.0f p90_ns=%.0f allowed=%zu/%d\n",
			    sizes[i], bms, ns, nsm, lo, hi, allowed, BATCH);
		else {
			printf("%zu entries: median %.0f ns per decision "
			    "(p10-p90 %.0f-%.0f; %zu of %d allowed)\n",
			    sizes[i], ns, lo, hi, allowed, BATCH);
			printf("%zu entries: median %.0f ns per match alone "
			    "(phase built in %.1f ms)\n", sizes[i], nsm, bms);
		}
		eg_phase_clear(&p);
	}
	return 0;
}
