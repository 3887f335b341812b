/*
 * print.c: what egressctl writes (print.h): messages on standard error,
 * the server's JSON made harmless with --json, and the text forms of its
 * answers (rows, allowlists, audit events) on standard output.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared.h"

#include "ctl.h"
#include "json.h"
#include "print.h"

/* --- terminal safety (eg_put_esc(), eg_utf8_seq(): shared.h) ---------- */

/*
 * Write a JSON text received from the server (n bytes) so that it stays
 * the same JSON but cannot drive a terminal: inside strings, control
 * characters (C0, DEL, C1) become \u00XX and bytes that are not UTF-8
 * become \ufffd; outside strings only JSON white space passes, anything
 * else that is not printable ASCII becomes '?'.
 */
void
put_json(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long cp;
	size_t i = 0, len;
	int in_str = 0, esc = 0;

	while (i < n) {
		len = eg_utf8_seq(p + i, n - i, &cp);
		if (len == 0) {
			fputs(in_str ? "\\ufffd" : "?", f);
			i++;
			esc = 0;
			continue;
		}
		if (!in_str) {
			if (cp == '"')
				in_str = 1;
			if ((cp >= 0x20 && cp < 0x7f) || cp == '\n' ||
			    cp == '\t' || cp == '\r')
				putc((int)cp, f);
			else
				putc('?', f);
		} else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			/* after a lone backslash (not valid JSON anyway)
			 * this reads as an escaped backslash: still JSON */
			fprintf(f, "\\u%04lx", cp);
			esc = 0;
		} else {
			fwrite(p + i, 1, len, f);
			if (esc)
				esc = 0;
			else if (cp == '\\')
				esc = 1;
			else if (cp == '"')
				in_str = 0;
		}
		i += len;
	}
}

/* --- errors -------------------------------------------------------------- */

/* Messages carry the server's words and the user's: escaped too. */
static void
vwarnx_(const char *fmt, va_list ap)
{
	char buf[4096];
	int n;

	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	fputs("egressctl: ", stderr);
	eg_put_esc(stderr, buf, (size_t)n, 0);
	fputc('\n', stderr);
}

void
warnx_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx_(fmt, ap);
	va_end(ap);
}

int
usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx_(fmt, ap);
	va_end(ap);
	fputs("(see egressctl --help)\n", stderr);
	return EX_USAGE;
}

/* --- output -------------------------------------------------------------- */

/* Print s with control characters escaped (eg_put_esc()), so answers
 * cannot drive the terminal. */
void
put_safe(const char *s)
{
	eg_put_esc(stdout, s, strlen(s), 0);
}

void
put_bold(const char *s)
{
	if (ctl_tty_bold)
		fputs("\033[1m", stdout);
	put_safe(s);
	if (ctl_tty_bold)
		fputs("\033[0m", stdout);
}

void
put_pad(const char *s, size_t w)
{
	size_t n = strlen(s);

	put_safe(s);
	while (n++ < w)
		putchar(' ');
}

void
row(const char *k, const char *v)
{
	printf("%-12s ", k);
	put_safe(v);
	putchar('\n');
}

const char *
dash(const char *s)
{
	return *s == '\0' ? "-" : s;
}

void
put_uptime(uint64_t s)
{
	char b[64];

	if (s >= 86400)
		snprintf(b, sizeof(b), "%llud%02lluh%02llum",
		    (unsigned long long)(s / 86400),
		    (unsigned long long)(s / 3600 % 24),
		    (unsigned long long)(s / 60 % 60));
	else if (s >= 3600)
		snprintf(b, sizeof(b), "%lluh%02llum%02llus",
		    (unsigned long long)(s / 3600),
		    (unsigned long long)(s / 60 % 60),
		    (unsigned long long)(s % 60));
	else
		snprintf(b, sizeof(b), "%llum%02llus",
		    (unsigned long long)(s / 60),
		    (unsigned long long)(s % 60));
	row("uptime", b);
}

/*
 * The "budget" object of a status or session answer, one row:
 * "up USED / LIMIT bytes, down ..., requests USED / LIMIT", each
 * "(spent)" once it is; nothing when the phase has no budget.
 */
void
put_budget(const struct jv *v)
{
	static const char *const kinds[] = { "up", "down", "requests" };
	const struct jv *b = jget(v, "budget"), *a;
	unsigned long long used, lim;
	size_t i, n = 0;

	if (b == NULL || b->t != J_OBJ)
		return;
	printf("%-12s ", "budget");
	for (i = 0; i < 3; i++) {
		a = jget(b, kinds[i]);
		if (a == NULL || a->t != J_ARR || a->n != 2 ||
		    a->kids[0].t != J_NUM || a->kids[1].t != J_NUM)
			continue;
		used = strtoull(a->kids[0].s, NULL, 10);
		lim = strtoull(a->kids[1].s, NULL, 10);
		printf("%s%s %llu / %llu%s%s", n++ ? ", " : "", kinds[i], used,
		    lim, i < 2 ? " bytes" : "", (i < 2 ? used > lim :
		    used >= lim) ? " (spent)" : "");
	}
	if (n == 0)
		fputs("-", stdout);
	putchar('\n');
}

/* The allowlist of a phase object, space-separated; "(nothing)" if none. */
void
put_allow(const struct jv *p, const char *indent)
{
	const struct jv *a = jget(p, "allow");
	size_t i;

	if (a == NULL || a->t != J_ARR || a->n == 0) {
		fputs("(nothing)\n", stdout);
		return;
	}
	for (i = 0; i < a->n; i++) {
		if (i)
			fputs(indent, stdout);
		if (a->kids[i].t == J_STR)
			put_safe(a->kids[i].s);
		putchar('\n');
	}
}

/*
 * An audit event's name padded to 5 columns; on a terminal (and without
 * NO_COLOR) ALLOW is green, BLOCK red and FAIL yellow, the padding left
 * outside the colour.
 */
static void
put_event_name(const char *ev)
{
	const char *col = NULL;
	size_t n;

	if (ctl_tty_bold) {
		if (strcmp(ev, "ALLOW") == 0)
			col = "\033[32m";
		else if (strcmp(ev, "BLOCK") == 0)
			col = "\033[31m";
		else if (strcmp(ev, "FAIL") == 0)
			col = "\033[33m";
	}
	if (col == NULL) {
		put_pad(ev, 5);
		return;
	}
	fputs(col, stdout);
	put_safe(ev);
	fputs("\033[0m", stdout);
	for (n = strlen(ev); n < 5; n++)
		putchar(' ');
}

/* One audit event as an aligned text line. */
void
put_event(const struct jv *e)
{
	static const char *const keys[] = {
		"id", "phase", "session", "client", "method", "addr", "rule",
		"reason", "report", "up", "down", "ms", "end", "sni", "from",
		"by", "closed", NULL
	};
	/* SESSION NAME action=… phase=… closed=… by=…, as in the log */
	static const char *const skeys[] = {
		"action", "phase", "closed", "by", NULL
	};
	const char *ev = jstr(e, "event"), *v;
	const char *const *kl = keys;
	char target[300];
	size_t i;

	for (i = strlen(jstr(e, "seq")); i < 6; i++)
		putchar(' ');
	put_pad(jstr(e, "seq"), 0);
	fputs("  ", stdout);
	put_pad(jstr(e, "ts"), 24);
	fputs("  ", stdout);
	put_event_name(ev);
	putchar(' ');
	if (strcmp(ev, "PHASE") == 0)
		snprintf(target, sizeof(target), "%s", jstr(e, "phase"));
	else if (strcmp(ev, "SESSION") == 0) {
		snprintf(target, sizeof(target), "%s", jstr(e, "session"));
		kl = skeys;
	} else if (jnum(e, "port") == 0)	/* a target that did not parse */
		snprintf(target, sizeof(target), "%s", jstr(e, "host"));
	else
		snprintf(target, sizeof(target), "%s:%s", jstr(e, "host"),
		    jstr(e, "port"));
	put_safe(target);
	for (i = 0; kl[i] != NULL; i++) {
		if (strcmp(ev, "PHASE") == 0 && strcmp(kl[i], "phase") == 0)
			continue;
		if (jget(e, kl[i]) == NULL || *(v = jstr(e, kl[i])) == '\0')
			continue;
		printf(" %s=", kl[i]);
		put_safe(v);
	}
	putchar('\n');
}
