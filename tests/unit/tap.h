/*
 * tap.h: a minimal Test Anything Protocol emitter for unit tests.
 */
#ifndef EG_TAP_H
#define EG_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_fail;

static void
tap_report(int pass, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
tap_report(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!pass)
		tap_fail++;
	printf("%s %d - ", pass ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass)
		printf("#   failed at %s:%d\n", file, line);
}

#define ok(cond, ...)	tap_report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) do {					\
	long long g_ = (long long)(got), w_ = (long long)(want);	\
	tap_report(g_ == w_, __FILE__, __LINE__, __VA_ARGS__);		\
	if (g_ != w_)							\
		printf("#   got %lld, want %lld\n", g_, w_);		\
} while (0)
#define is_str(got, want, ...) do {					\
	const char *g_ = (got), *w_ = (want);				\
	int p_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;		\
	tap_report(p_, __FILE__, __LINE__, __VA_ARGS__);		\
	if (!p_)							\
		printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)",	\
		    w_ ? w_ : "(null)");				\
} while (0)
#define diag(...)	(printf("# "), printf(__VA_ARGS__), printf("\n"))
#define done_testing()	(printf("1..%d\n", tap_n), tap_fail ? 1 : 0)

#endif
