/*
 * bench-audit.c: how many audit lines per second the writer sustains.
 * It opens the audit log the way egressd does (eg_audit_open(): a file,
 * O_APPEND, one write(2) per line, the ring of recent events kept too),
 * then emits ALLOW and CLOSE events (alternating, realistic fields) from
 * one or more threads for a fixed time, and prints one result line:
 *
 *   audit format=text threads=1 secs=2.00 lines=... lines_per_s=...
 *       mb_per_s=... bytes_per_line=... cpu_us_per_line=...
 *
 * Usage: bench-audit [--format text|json|chained] [--threads N]
 *                    [--seconds S] [--path FILE] [--ring N]
 * The default path is a file in $BENCH_TMP (or /tmp), removed at the end.
 * "chained" is the record module's hash-chained log; until that module is
 * in the tree it reports "available=0" and exits 3, so scale.sh can skip it.
 */
#include <sys/resource.h>

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"

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

static struct eg_audit *audit;
static volatile int stop;
static double seconds = 2;

struct worker {
	pthread_t	 t;
	int		 idx;
	uint64_t	 lines;
	uint64_t	 errors;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct egress_event ev;
	struct timespec ts;
	char client[32], host[64];
	uint64_t i;

	snprintf(client, sizeof(client), "127.0.0.1:%d", 40000 + w->idx);
	for (i = 0; !stop; i++) {
		memset(&ev, 0, sizeof(ev));
		clock_gettime(CLOCK_REALTIME, &ts);
		ev.ts_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		ev.id = ((uint64_t)w->idx << 40) | (i / 2);
		snprintf(host, sizeof(host), "api%llu.example.org",
		    (unsigned long long)(i % 1000));
		ev.host = host;
		ev.port = 443;
		ev.phase = "build";
		ev.client = client;
		ev.method = "CONNECT";
		if (i % 2 == 0) {
			ev.type = EGRESS_EV_ALLOW;
			ev.addr = "192.0.2.10:443";
			ev.rule = "*.example.org";
		} else {
			ev.type = EGRESS_EV_CLOSE;
			ev.up = 1234;
			ev.down = 56789;
			ev.ms = 42;
			ev.end = "client_closed";
		}
		if (eg_audit_emit(audit, &ev, NULL) == -1)
			w->errors++;
		else
			w->lines++;
	}
	return NULL;
}

static double
cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench-audit [--format text|json|chained] "
	    "[--threads N] [--seconds S] [--path FILE] [--ring N]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "path", required_argument, NULL, 'p' },
		{ "ring", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	const char *format = "text", *path = NULL, *dir;
	char tmpl[512];
	struct worker *w;
	struct eg_err err;
	uint64_t lines = 0, errors = 0;
	double t0, t1, c0, c1;
	long size;
	FILE *f;
	int c, i, nthr = 1, json, fd, made = 0;
	unsigned ring = 1000;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
		switch (c) {
		case 'f': format = optarg; break;
		case 't': nthr = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'p': path = optarg; break;
		case 'r': ring = (unsigned)atoi(optarg); break;
		default: usage();
		}
	if (nthr < 1 || nthr > 64 || seconds <= 0)
		usage();
	if (strcmp(format, "text") == 0)
		json = 0;
	else if (strcmp(format, "json") == 0)
		json = 1;
	else if (strcmp(format, "chained") == 0) {
		/* the hook for the record module: nothing to measure yet */
		printf("audit format=chained available=0\n");
		return 3;
	} else
		usage();
	if (path == NULL) {
		dir = getenv("BENCH_TMP") ? getenv("BENCH_TMP") : "/tmp";
		snprintf(tmpl, sizeof(tmpl), "%s/bench-audit.XXXXXX", dir);
		if ((fd = mkstemp(tmpl)) == -1) {
			perror(tmpl);
			return 2;
		}
		close(fd);
		path = tmpl;
		made = 1;
	}
	if ((audit = eg_audit_open(path, json, ring, &err)) == NULL) {
		fprintf(stderr, "bench-audit: %s\n", err.msg);
		return 2;
	}
	if ((w = calloc((size_t)nthr, sizeof(*w))) == NULL)
		return 2;
	c0 = cpu_us();
	t0 = now_s();
	for (i = 0; i < nthr; i++) {
		w[i].idx = i;
		if (pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0)
			return 2;
	}
	while (now_s() - t0 < seconds)
		usleep(10000);
	stop = 1;
	for (i = 0; i < nthr; i++) {
		pthread_join(w[i].t, NULL);
		lines += w[i].lines;
		errors += w[i].errors;
	}
	t1 = now_s();
	c1 = cpu_us();
	eg_audit_close(audit);
	size = -1;
	if ((f = fopen(path, "r")) != NULL) {
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
	}
	if (made)
		unlink(path);
	printf("audit format=%s threads=%d secs=%.2f lines=%llu "
	    "lines_per_s=%.0f mb_per_s=%.1f bytes_per_line=%.0f "
	    "cpu_us_per_line=%.2f errors=%llu\n", format, nthr, t1 - t0,
	    (unsigned long long)lines, (double)lines / (t1 - t0),
	    size > 0 ? (double)size / (t1 - t0) / 1e6 : 0.0,
	    size > 0 && lines > 0 ? (double)size / (double)lines : 0.0,
	    lines > 0 ? (c1 - c0) / (double)lines : 0.0,
	    (unsigned long long)errors);
	return errors ? 1 : 0;
}
