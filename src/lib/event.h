/*
 * event.h: audit events inside the library (struct eg_event) and their
 * one way out, eg_emit() (event.c): the audit log, the metrics, the
 * subscribers (egress_subscribe()) and the modules.  Private to
 * libegress.
 */
#ifndef EG_EVENT_H
#define EG_EVENT_H

#include <stdint.h>

#include "egress.h"
#include "reason.h"

struct egress;
struct eg_phase;
struct eg_session;
struct eg_audit_batch;

enum eg_end {
	EG_END_NONE,
	EG_END_CLIENT_CLOSED,
	EG_END_UPSTREAM_CLOSED,
	EG_END_IDLE_TIMEOUT,
	EG_END_PHASE_CHANGE,
	EG_END_RELOAD,
	EG_END_SNI_MISMATCH,
	EG_END_SHUTDOWN,
	EG_END_DONE,
	EG_END_ERROR,
	EG_END_SESSION_CLOSED,
	EG_END_BUDGET,
	EG_END_COUNT		/* (how many; not an end) */
};
extern const char *const eg_end_name[];

/*
 * An audit event inside the library: enums and pointers.  eg_emit()
 * turns it into the public struct egress_event once (names for the
 * enums, the phase's name), for the audit log and the subscribers; the
 * metrics count it by its enums.
 */
struct eg_event {
	enum egress_event_type	 type;
	enum eg_reason		 reason;	/* BLOCK, FAIL */
	enum eg_end		 end;		/* CLOSE */
	int			 report;	/* ALLOW in report mode */
	uint64_t		 id;		/* connection id; 0 for PHASE */
	const char		*host;		/* normalised (escaped) */
	uint16_t		 port;
	const struct eg_phase	*phase;		/* PHASE: the new phase */
	struct eg_session	*sess;		/* NULL: session "default" */
	const char		*client;
	const char		*method;
	const char		*addr;		/* ALLOW: upstream address */
	const char		*rule;		/* ALLOW: the matching entry */
	uint64_t		 up, down;	/* CLOSE: bytes each way */
	uint64_t		 ms;		/* CLOSE: duration */
	const char		*sni;		/* CLOSE sni_mismatch */
	const char		*from;		/* PHASE: previous phase */
	const char		*by;		/* PHASE: admin|api|signal|reload */
	unsigned		 closed;	/* PHASE: tunnels closed */
	const char		*action;	/* SESSION: open|close */
	/* a route's request (route.c) */
	const char		*route;		/* its name */
	const char		*path;		/* /REST, no query */
	const char		*cred;		/* ALLOW: headers added */
	int			 status;	/* CLOSE: the upstream's */
	int64_t			 tokens_in, tokens_out, tokens_cached;
						/* CLOSE: -1 none */
	const char		*pid, *exe;	/* via egressd's own relay */
	struct eg_audit_batch	*batch;		/* the loop thread's, or NULL:
						   the line goes at once */
};

/* Timestamp, write, count, tell the subscribers.  -1 when the audit line
 * could not be written; a failed ALLOW is then not counted or passed on:
 * the caller must refuse the request (EG_R_AUDIT_FAILED) instead. */
int	eg_emit(struct egress *, const struct eg_event *);

/* Write the lines waiting in b (audit.h), on b's loop thread. */
void	eg_emit_flush(struct egress *, struct eg_audit_batch *b);

#endif
