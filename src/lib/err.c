/*
 * err.c: formatting of error messages for struct eg_err and struct eg_errs,
 * and the calling thread's message of the public API (egress_errmsg()).
 */
/* the bottom floor, as alloc.c: egress-int.h includes err.h */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "egress.h"
#include "err.h"

int
eg_err_set(struct eg_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int
eg_errs_add(struct eg_errs *errs, const char *fmt, ...)
{
	va_list ap;
	char buf[EG_ERR_MSGLEN];

	if (errs == NULL)
		return -1;
	if (errs->n == EG_ERRS_MAX) {
		errs->dropped++;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	errs->msg[errs->n] = eg_strdup(buf);
	if (errs->msg[errs->n] == NULL)
		errs->dropped++;
	else
		errs->n++;
	return -1;
}

void
eg_errs_clear(struct eg_errs *errs)
{
	if (errs == NULL)
		return;
	eg_strv_clear(errs->msg, errs->n);
	errs->n = 0;
	errs->dropped = 0;
}

void
eg_errs_join(const struct eg_errs *errs, char *buf, size_t len)
{
	size_t i, off = 0;
	int n;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < errs->n && off < len; i++) {
		n = snprintf(buf + off, len - off, "%s%s", i ? "\n" : "",
		    errs->msg[i]);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (errs->dropped && off < len)
		snprintf(buf + off, len - off, "\n(%zu more errors)",
		    errs->dropped);
}

const char *
eg_quote(const char *s, size_t len, size_t max, char *buf, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;
	unsigned char c;

	if (cap == 0)
		return buf;
	for (i = 0; i < len && i < max && o + 5 < cap; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			buf[o++] = (char)c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	if (i < len && o + 4 < cap) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static __thread struct {
	const struct egress	*ex;
	char			 msg[EG_ERRMSG_MAX];
} tl_err;

char *
eg_errbuf(struct egress *ex)
{
	if (tl_err.ex != ex) {
		tl_err.ex = ex;
		tl_err.msg[0] = '\0';
	}
	return tl_err.msg;
}

void
eg_errbuf_forget(struct egress *ex)
{
	if (tl_err.ex == ex)	/* a later handle may have its address */
		tl_err.ex = NULL;
}

const char *
egress_errmsg(struct egress *ex)
{
	return tl_err.ex == ex ? tl_err.msg : "";
}

int
eg_set_err(struct egress *ex, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(eg_errbuf(ex), EG_ERRMSG_MAX, fmt, ap);
	va_end(ap);
	if (e != 0)
		errno = e;
	return -1;
}
