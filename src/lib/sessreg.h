/*
 * sessreg.h: the session registry's own functions (session.c), for its
 * neighbours sessphase.c and sessattr.c only.  Under ex->ctl unless said.
 */
#ifndef EG_SESSREG_H
#define EG_SESSREG_H

#include <stddef.h>

struct egress;
struct eg_lsock;
struct eg_phase;
struct eg_session;

/* A new session (one reference, the registry's; not registered): NULL. */
struct eg_session *eg_sess_alloc(struct egress *ex, const char *name);
/* Close its listeners, free it (its last reference went). */
void	eg_sess_free(struct eg_session *s);
/* Register a bound session (appended; the count of sessions). */
void	eg_sess_register(struct egress *ex, struct eg_session *s);
/* Find by name (len bytes); caller holds ex->sesmtx.  No reference. */
struct eg_session *eg_sess_find(struct egress *ex, const char *name,
	    size_t len);
/* The session named (NULL: "default"), referenced; NULL with ENOENT's
 * message.  eg_sess_lock() also takes ex->ctl (held only on success). */
struct eg_session *eg_sess_named(struct egress *ex, const char *session);
struct eg_session *eg_sess_lock(struct egress *ex, const char *session);
/* Its phase called name: in its own phases, else ex->cfg's; NULL. */
const struct eg_phase *eg_sess_phase(struct egress *ex,
	    const struct eg_session *s, const char *name);
/* s->listen: the bound address of its TCP listener ls. */
void	eg_sess_listen_text(struct eg_session *s, const struct eg_lsock *ls);
/* Delete s (in the registry): listeners, connections (counted: the
 * tunnels), the SESSION close line, the registry's reference. */
unsigned eg_sess_delete(struct egress *ex, struct eg_session *s,
	    const char *by);
/*
 * The SESSION and PHASE lines of s, like every event on a loop thread
 * (egress.h): SESSION action= (phase NULL for close), or, action NULL,
 * PHASE to phase from the phase named from.
 */
void	eg_sess_emit(struct egress *ex, struct eg_session *s,
	    const char *action, const struct eg_phase *phase,
	    const char *from, const char *by, unsigned closed);

#endif
