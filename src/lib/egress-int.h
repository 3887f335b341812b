/*
 * egress-int.h: the private umbrella header, first include of every
 * library file.  It pulls in config.h, the standard headers everyone uses,
 * error and logging helpers.
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

#include "err.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#endif
