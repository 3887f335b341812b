/*
 * session.h: sessions (SPEC "Sessions"), the registry and their life:
 * creation with their listeners, phase switches, deletion, the ttl
 * reaper, reloads.  The public face is egress_session_*() (egress.h).
 * Private to libegress.
 */
#ifndef EG_SESSION_H
#define EG_SESSION_H

#include <stddef.h>
#include <stdint.h>

struct egress;
struct eg_cfg;
struct eg_label;
struct eg_redact;
struct eg_session;
struct egress_phase_spec;

/* References and counters (attach, ref, unref, event) and
 * eg_redact_str(): sessref.h. */

/* At creation: the registry holds the session "default". */
void	eg_sessions_init(struct egress *ex);
/* egress_start(), after the workers exist: the default session's
 * per-worker lists; the static sessions of ex->cfg.  0 or -1 (errmsg). */
int	eg_sessions_start(struct egress *ex);
/* egress_run_thread() / egress_join(): the ttl reaper thread. */
int	eg_sessions_run(struct egress *ex);
void	eg_sessions_join(struct egress *ex);
/* egress_free(), after the workers: close every listener (socket files
 * removed) and free every session. */
void	eg_sessions_free(struct egress *ex);

/*
 * Reload (under ex->ctl): check that every session that uses the
 * configuration's phases finds its phase in cfg, else an error naming
 * the session in buf and -1.  eg_sessions_reload_swap() (under the write
 * lock) points them at cfg's phases; eg_sessions_reload_done() (after)
 * closes what the new phases forbid and republishes own addresses.
 */
int	eg_sessions_reload_check(struct egress *ex, const struct eg_cfg *cfg,
	    char *buf, size_t len);
/* Before the swap: bind the static sessions cfg adds (kept pending);
 * -1 with errmsg and nothing bound.  _abort() gives them up. */
int	eg_sessions_reload_prepare(struct egress *ex, const struct eg_cfg *cfg);
void	eg_sessions_reload_abort(struct egress *ex);
void	eg_sessions_reload_swap(struct egress *ex, const struct eg_cfg *cfg);
/* After the swap: close the static sessions cfg removed or changed,
 * open the new ones, recheck the rest. */
void	eg_sessions_reload_done(struct egress *ex, const struct eg_cfg *cfg);

/* Publish egressd's own addresses with every session's TCP listeners
 * (loop protection); under ex->ctl or before the loops run. */
void	eg_sessions_own_refresh(struct egress *ex);

/* egress_session_create() with the SESSION line's by= ("admin" for the
 * admin API; the public function says "api"). */
int	eg_session_create(struct egress *ex, const char *by, const char *name,
	    const char *phase, const char *listen, unsigned ttl_s,
	    const struct egress_phase_spec *phases, size_t nphases,
	    char *sock, size_t socklen, char *addr, size_t addrlen);

/* The registry, for the admin API: call fn for every session (default
 * first) under the registry lock; fn must not call into sessions. */
void	eg_sessions_foreach(struct egress *ex,
	    void (*fn)(struct eg_session *, void *), void *arg);
/* Find a session by name (len bytes) and take a reference; NULL. */
struct eg_session *eg_session_get(struct egress *ex, const char *name,
	    size_t len);

/* Step labels and redaction lists (session-int.h), freed with their
 * session. */
void	eg_labels_free(struct eg_label *);
void	eg_redacts_free(struct eg_redact *);

#endif
