/*
 * print.h: what egressctl writes (print.c).  Everything the server or
 * the user said is escaped on the way out (eg_put_esc(), shared.h), so
 * an answer cannot drive the terminal.
 */
#ifndef EGRESSCTL_PRINT_H
#define EGRESSCTL_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"

/* "egressctl: MESSAGE" on standard error. */
void		 warnx_(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));
/* The same and "(see egressctl --help)"; returns EX_USAGE. */
int		 usage_err(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));

/* A JSON text received (n bytes), still JSON but harmless to a terminal. */
void		 put_json(FILE *f, const char *s, size_t n);
void		 put_safe(const char *s);
/* Bold on a terminal (ctl_tty_bold). */
void		 put_bold(const char *s);
/* s, then spaces up to w columns. */
void		 put_pad(const char *s, size_t w);
/* "KEY          value" (the key in 12 columns). */
void		 row(const char *k, const char *v);
/* s, or "-" when it is empty. */
const char	*dash(const char *s);

/* Rows and lines of an answer. */
void		 put_uptime(uint64_t s);
void		 put_budget(const struct jv *v);
void		 put_allow(const struct jv *p, const char *indent);
void		 put_event(const struct jv *e);

#endif
