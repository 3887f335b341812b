/*
 * egress-int.h: the private umbrella header, first include of every
 * library file but the bottom floor's (alloc.c, err.c, which it
 * includes).  It pulls in config.h, the standard headers everyone uses,
 * the allocator and error helpers, and EG_BUG (log.c).
 */
#ifndef EG_EGRESS_INT_H
#define EG_EGRESS_INT_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/types.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

struct egress;

/*
 * An impossible state: a bug in egressd, never a property of its input.
 * EG_BUG(ex, msg) logs "BUG at FILE:LINE: msg" at EGRESS_LOG_ERR through
 * ex's logger (log.h; ex may be NULL).  In debug builds (NDEBUG not
 * defined) it then writes that line to standard error and aborts; in
 * release builds it returns, and the caller goes on as before.
 */
void	eg_bug(struct egress *, const char *file, int line, const char *msg,
	    int fatal);
#ifdef NDEBUG
#define EG_BUG(ex, msg)	eg_bug((ex), __FILE__, __LINE__, (msg), 0)
#else
#define EG_BUG(ex, msg)	eg_bug((ex), __FILE__, __LINE__, (msg), 1)
#endif

#endif
