/*
 * session-int.h: what a session (SPEC "Sessions") is made of: struct
 * eg_session, its budgets, step labels and redaction lists.  The
 * functions on sessions are session.h's.  Private to libegress.
 */
#ifndef EG_SESSION_INT_H
#define EG_SESSION_INT_H

#include <stddef.h>
#include <stdint.h>

#include "shared.h"

struct eg_audit;
struct eg_conn;
struct eg_lio;
struct eg_lsock;
struct eg_phase;
struct eg_ring;

/*
 * A session's budgets of its current phase (SPEC "Configuration"): what
 * it used since it entered the phase.  The limits are the phase's.  A
 * connection folds its bytes in (conn.c) when it passes the mark of its
 * lease, when it closes, and when a plain-HTTP request ends, not per
 * transfer; ALLOW decisions count at once.  epoch and a reset
 * (eg_budget_reset()) change under egress.lock held for writing; the
 * counts are atomics, added to under the read lock.
 */
struct eg_budget {
	uint64_t		 epoch;
	uint64_t		 up, down, req;	/* atomic */
	unsigned		 spent;	/* atomic: EG_BUDGET_* bits counted in
					   egressd_budget_exhausted_total */
};

/*
 * A session (SPEC "Sessions"): a group of listeners with its own phase,
 * counters and audit ring.  ex->def is the default one (embedded, never
 * freed); the others live in the registry ex->sessions (guarded by
 * ex->sesmtx; changed only under ex->ctl too) and are reference counted:
 * the registry holds one reference, every connection accepted on one of
 * its listeners another (session.c).
 */
struct eg_session {
	char			 name[EG_SESSION_NAME_MAX + 1];
	int			 is_default;
	/* Guarded by egress.lock: the phase, in ex->cfg or in phases. */
	const struct eg_phase	*phase;
	uint64_t		 gen;	/* bumped by every phase/cfg swap */
	struct eg_budget	 bud;	/* its phase's budgets, used */

	unsigned		 refs;		/* atomic */
	/* the last reference went (sessref.c): the registry's
	 * eg_sess_free() */
	void			(*release)(struct eg_session *);
	struct eg_session	*next;		/* registry */
	int			 is_static;	/* from [session:NAME] */
	int			 closing;	/* deleted: no new listeners */
	struct eg_phase		*phases;	/* inline; NULL: ex->cfg's */
	size_t			 nphases;
	/* atomics */
	unsigned		 active;
	uint64_t		 total, allowed, blocked, failed;
	int64_t			 idle_since_ms;	/* wall ms active went 0 */
	int64_t			 created_ms;
	unsigned		 ttl_s;		/* 0: none */
	struct eg_ring		*ring;		/* NULL: ex->audit's */
	struct eg_lsock		*ls;		/* its own listeners */
	size_t			 nls;
	struct eg_lio		*lio;		/* nw * nls, by worker */
	struct eg_conn		**wconns;	/* per worker: its live
						   connections (conn.c) */
	struct eg_session	**dnext;	/* per worker: w->sdead */
	size_t			 nw;
	char			*sock;		/* API: its socket path */
	char			*cfg_phase;	/* static: phase = as written */
	int			 gone;		/* static: not in the reloaded
						   file */
	char			 listen[64];	/* TCP: the bound address */
	/* egress_session_set_step(): the step= label (atomic pointer to
	 * a label's name, NULL: none); labels are kept until the session
	 * is freed, as a loop thread may still be formatting one */
	const char		*step;
	struct eg_label		*labels;
	/* egress_session_set_redact(): the values replaced in its events
	 * (atomic pointer, NULL: none); kept until the session is freed,
	 * like the labels */
	const struct eg_redact	*redact;
	struct eg_redact	*redacts;
	/* egress_session_set_audit(): its own file (atomic; NULL: the main
	 * log), and the file, kept open until the session is freed */
	struct eg_audit		*audit;
	struct eg_audit		*audit_file;
};

struct eg_label {
	struct eg_label		*next;
	char			 name[];
};

/* egress_session_set_redact(): values ([n]), each at least
 * EG_REDACT_MIN bytes; maxlen the longest. */
#define EG_REDACT_MIN	8
struct eg_redact {
	struct eg_redact	*next;
	size_t			 n, maxlen;
	size_t			*len;
	char			**val;
};

#endif
