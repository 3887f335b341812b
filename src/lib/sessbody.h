/*
 * sessbody.h: the body of POST /v1/sessions (SPEC "Sessions"), parsed
 * with explicit lengths into fixed buffers: hostile input is normal, and
 * nothing here allocates.  Pure; exposed for tests and
 * tests/fuzz/fuzz-session-body.c.
 */
#ifndef EG_SESSBODY_H
#define EG_SESSBODY_H

#include <stddef.h>

#include "shared.h"

#define EG_SB_BODY_MAX		4096	/* = EG_ADMIN_BODY_MAX */
#define EG_SB_PHASES_MAX	64	/* inline phases */
#define EG_SB_ALLOW_MAX		512	/* patterns over all phases */

struct eg_sess_body {
	char	 name[EG_SESSION_NAME_MAX + 1];
	char	 phase[EG_PHASE_NAME_MAX + 1];	/* "" when not given */
	char	 listen[128];			/* "" when not given */
	unsigned ttl_s;
	int	 has_phases;
	size_t	 nphases;
	struct {
		const char	*name;		/* in arena */
		const char	**allow;	/* NULL-terminated, in ptrs */
	}	 phases[EG_SB_PHASES_MAX];
	const char *ptrs[EG_SB_ALLOW_MAX + EG_SB_PHASES_MAX];
	char	 arena[EG_SB_BODY_MAX + EG_SB_PHASES_MAX];
};

/*
 * Parse len bytes at body: one JSON object with "name" (required, a
 * session name), and optionally "phase" (a phase name), "listen"
 * (ADDR:PORT text, or null), "ttl_s" (0 to 31536000) and "phases" (an
 * object mapping phase names to arrays of pattern strings).  Patterns are
 * only collected here; they are checked when the session is made.
 * Returns 0, or -1 with a message naming what was wrong in why.
 */
int	eg_sess_body_parse(const char *body, size_t len,
	    struct eg_sess_body *b, char *why, size_t whylen);

#endif
