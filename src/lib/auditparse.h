/*
 * auditparse.h: reading audit lines back (SPEC "Audit log", "### record").
 * The parser itself is public (egress_audit_parse() in egress.h); these
 * are the helpers the audit tools share: splitting a line's target and
 * undoing the writer's escapes.  Pure functions, no allocation, no I/O.
 */
#ifndef EG_AUDITPARSE_H
#define EG_AUDITPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "egress.h"

/* Event names of the grammar, for eg_audit_event(). */
enum eg_audit_ev {
	EG_AEV_ALLOW, EG_AEV_BLOCK, EG_AEV_FAIL, EG_AEV_CLOSE,
	EG_AEV_PHASE, EG_AEV_SESSION, EG_AEV_START, EG_AEV_CHECKPOINT
};

/* The event of a parsed line. */
enum eg_audit_ev eg_audit_event(const struct egress_audit_line *l);

/*
 * Undo the writer's escaping of a value (text \xHH, JSON \" \\ \u00HH):
 * the bytes go to out (cap bytes, NUL-terminated).  Returns the length,
 * or -1 when the value does not fit (or is not a valid escaped value).
 * A text "-" is returned as "-" (the caller knows when it means none).
 */
int	eg_audit_unescape(const char *v, size_t len, int json, char *out,
	    size_t cap);

/* A value of decimal digits (no sign, no leading zero) as a number;
 * -1 when it is not one or exceeds max. */
int	eg_audit_u64(const char *v, size_t len, uint64_t max, uint64_t *out);

#endif
