/*
 * sessref.h: what connections, the upstream pools and eg_emit() do with
 * the session they belong to (struct eg_session, session-int.h): take and
 * drop references, count connections and verdicts, redact its values.
 * The registry itself (creation, phase switch, reload, delete) is
 * session.h's.  Private to libegress.
 */
#ifndef EG_SESSREF_H
#define EG_SESSREF_H

#include <stddef.h>

#include "egress.h"

struct egress;
struct eg_redact;
struct eg_ring;
struct eg_session;

/* A connection accepted on one of s's listeners (loop thread): takes a
 * reference and counts it active; detach when it closes (the reference
 * stays until eg_session_unref(), when the connection is freed). */
void	eg_session_attach(struct eg_session *s);
void	eg_session_detach(struct eg_session *s);
void	eg_session_ref(struct eg_session *s);
/* NULL and default ok; the last reference calls s->release(s). */
void	eg_session_unref(struct eg_session *s);

/* Count an event of type against its session sess (NULL: the default
 * session) and pick the ring it goes to (NULL: the default ring). */
struct eg_ring *eg_session_event(struct egress *ex, struct eg_session *sess,
	    enum egress_event_type type);

/* s with every value of r replaced by "[REDACTED]" (ASCII case ignored),
 * written to out (cap bytes); s itself when nothing matched; when the
 * result does not fit, "[REDACTED]" alone (nothing of a value leaks). */
const char *eg_redact_str(const struct eg_redact *r, const char *s,
	    char *out, size_t cap);

#endif
