/*
 * sessphase.c: the phases of sessions, the default one as any other: the
 * one phase switch (egress_session_set_phase(), egress_set_phase() for
 * the default one) and its PHASE line; the static sessions of the
 * configuration ([session:NAME]) at start; a reload's part for every
 * session (check, swap, close what the new phases forbid, static
 * sessions added, changed or removed).  Under ex->ctl; phases are read
 * and switched under ex->lock.
 */
#include "egress-int.h"

#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "conn.h"
#include "core.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "session.h"
#include "sessref.h"
#include "sessreg.h"
#include "worker.h"

/* --- phase --------------------------------------------------------------- */

int
egress_session_set_phase(struct egress *ex, const char *session,
    const char *phase, const char *by, unsigned *closed)
{
	struct eg_session *s;
	const struct eg_phase *p;
	const char *from;
	unsigned n;

	if (!ex->started)
		return eg_set_err(ex, EINVAL, "egress_start() first");
	if (phase == NULL)
		return eg_set_err(ex, EINVAL, "no phase given");
	if ((s = eg_sess_lock(ex, session)) == NULL)
		return -1;
	pthread_rwlock_wrlock(&ex->lock);
	if ((p = eg_sess_phase(ex, s, phase)) == NULL) {
		eg_set_err(ex, ENOENT, "phase '%.80s' does not exist%s", phase,
		    s->phases != NULL ? " in this session" : "");
		pthread_rwlock_unlock(&ex->lock);
		pthread_mutex_unlock(&ex->ctl);
		eg_session_unref(s);
		errno = ENOENT;
		return -1;
	}
	/* the old phase lives in ex->cfg or s->phases, neither of which
	 * changes while we hold ctl */
	from = s->phase->name;
	s->phase = p;
	s->gen++;
	eg_budget_reset(&s->bud);	/* a new count, even to the same */
	pthread_rwlock_unlock(&ex->lock);
	n = eg_workers_close_forbidden(ex, s, EG_END_PHASE_CHANGE);
	eg_sess_emit(ex, s, NULL, s->phase, from, by ? by : "api", n);
	pthread_mutex_unlock(&ex->ctl);
	eg_session_unref(s);
	if (closed != NULL)
		*closed = n;
	return 0;
}

int
egress_session_phase(struct egress *ex, const char *session, char *buf,
    size_t len)
{
	struct eg_session *s;
	const struct eg_phase *p;

	if ((s = eg_sess_named(ex, session)) == NULL)
		return -1;
	pthread_rwlock_rdlock(&ex->lock);
	/* (the default one has none before egress_start()) */
	p = s->phase != NULL ? s->phase : eg_cfg_phase(ex->cfg,
	    ex->cfg->phase);
	snprintf(buf, len, "%s", p != NULL ? p->name : "");
	pthread_rwlock_unlock(&ex->lock);
	eg_session_unref(s);
	return 0;
}

/* --- static sessions ([session:NAME]) ------------------------------------ */

/* Bind a static session from cs (not registered yet); NULL with errmsg. */
static struct eg_session *
static_new(struct egress *ex, const struct eg_cfg *cfg,
    const struct eg_cfg_session *cs)
{
	struct eg_session *s;
	struct eg_lsock *ls;
	struct eg_err err;
	const char *a;
	size_t i;
	int rc;

	if ((s = eg_sess_alloc(ex, cs->name)) == NULL ||
	    (s->ls = eg_calloc(cs->nlisten, sizeof(*s->ls))) == NULL ||
	    (s->lio = eg_calloc(cs->nlisten * (ex->nw ? ex->nw : 1),
	    sizeof(*s->lio))) == NULL ||
	    (s->ring = eg_ring_new(cfg->audit_ring)) == NULL ||
	    (cs->phase != NULL && (s->cfg_phase = eg_strdup(cs->phase)) ==
	    NULL)) {
		if (s != NULL)
			eg_sess_free(s);
		eg_set_err(ex, ENOMEM, "out of memory");
		return NULL;
	}
	s->is_static = 1;
	for (i = 0; i < cs->nlisten; i++) {
		ls = &s->ls[i];
		ls->sess = s;
		a = cs->listen[i].text;
		if (cs->listen[i].kind == EG_LISTEN_UNIX)
			rc = eg_listen_bind_unix(ls, a, cfg->unix_mode, &err);
		else
			rc = eg_listen_bind_tcp(ls, a, &err);
		if (rc == -1) {
			eg_sess_free(s);
			eg_set_err(ex, err.code, "%s:%d: [session:%s]: %s",
			    cfg->file ? cfg->file : "(config)",
			    cs->listen[i].line, cs->name, err.msg);
			return NULL;
		}
		s->nls++;
		if ((ls->text = eg_strdup(a)) == NULL) {
			eg_sess_free(s);
			eg_set_err(ex, ENOMEM, "out of memory");
			return NULL;
		}
		if (ls->kind == EG_LISTEN_TCP && s->listen[0] == '\0')
			eg_sess_listen_text(s, ls);
		/* the socket the API shows: a copy, as ls->path goes at
		 * delete while a reader may still hold s */
		if (ls->kind == EG_LISTEN_UNIX && s->sock == NULL &&
		    (s->sock = eg_strdup(a)) == NULL) {
			eg_sess_free(s);
			eg_set_err(ex, ENOMEM, "out of memory");
			return NULL;
		}
	}
	return s;
}

static int
static_same(const struct eg_session *s, const struct eg_cfg_session *cs)
{
	size_t i;

	if (s->nls != cs->nlisten)
		return 0;
	for (i = 0; i < s->nls; i++)
		if (s->ls[i].kind != cs->listen[i].kind ||
		    strcmp(s->ls[i].text, cs->listen[i].text) != 0)
			return 0;
	return 1;
}

static const struct eg_cfg_session *
cfg_session(const struct eg_cfg *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nsessions; i++)
		if (strcmp(cfg->sessions[i].name, name) == 0)
			return &cfg->sessions[i];
	return NULL;
}

/* Register and start a bound session (under ctl). */
static void
sess_open(struct egress *ex, struct eg_session *s, const char *by)
{
	eg_sess_register(ex, s);
	eg_workers_session(ex, s, 1);
	eg_sess_emit(ex, s, "open", s->phase, NULL, by, 0);
}

/* --- start, reload, free ------------------------------------------------- */

int
eg_sessions_start(struct egress *ex)
{
	const struct eg_cfg_session *cs;
	struct eg_session *s;
	size_t i;

	ex->def.phase = eg_cfg_phase(ex->cfg, ex->cfg->phase);
	if (ex->def.phase == NULL)
		return eg_set_err(ex, 0, "phase '%s' does not exist",
		    ex->cfg->phase);
	ex->def.gen = 1;
	ex->def.nw = ex->nw;
	ex->def.created_ms = ex->def.idle_since_ms = eg_wall_ms();
	ex->def.wconns = eg_calloc(ex->nw ? ex->nw : 1,
	    sizeof(*ex->def.wconns));
	ex->def.dnext = eg_calloc(ex->nw ? ex->nw : 1,
	    sizeof(*ex->def.dnext));
	if (ex->def.wconns == NULL || ex->def.dnext == NULL)
		return eg_set_err(ex, ENOMEM, "out of memory");
	for (i = 0; i < ex->cfg->nsessions; i++) {
		cs = &ex->cfg->sessions[i];
		if ((s = static_new(ex, ex->cfg, cs)) == NULL)
			/* eg_sessions_free() unbinds the rest */
			return -1;
		s->phase = eg_cfg_phase(ex->cfg, cs->phase ? cs->phase :
		    ex->cfg->phase);
		s->gen = 1;
		if (s->phase == NULL) {
			eg_sess_free(s);
			return eg_set_err(ex, ENOENT, "[session:%s]: phase "
			    "'%s' does not exist", cs->name, cs->phase);
		}
		sess_open(ex, s, "config");
	}
	if (ex->cfg->nsessions > 0)
		eg_sessions_own_refresh(ex);
	return 0;
}

int
eg_sessions_reload_check(struct egress *ex, const struct eg_cfg *cfg,
    char *buf, size_t len)
{
	const struct eg_cfg_session *cs;
	const char *file = cfg->file ? cfg->file : "(config)";
	struct eg_session *s;
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&ex->sesmtx);
	pthread_rwlock_rdlock(&ex->lock);
	/* a session on the configuration's phases keeps its phase (the
	 * default one, first, is named by its phase alone) */
	for (s = ex->sessions; s != NULL && rc == 0; s = s->next) {
		if (s->is_static) {
			cs = cfg_session(cfg, s->name);
			/* removed, or sent to its new phase = */
			if (cs == NULL || (cs->phase != NULL &&
			    (s->cfg_phase == NULL ||
			    strcmp(cs->phase, s->cfg_phase) != 0)))
				continue;
		}
		if (s->phases != NULL || eg_cfg_phase(cfg, s->phase->name) !=
		    NULL)
			continue;
		if (s->is_default)
			snprintf(buf, len, "%s: the current phase '%s' is not "
			    "in the new configuration; reload refused", file,
			    s->phase->name);
		else
			snprintf(buf, len, "%s: session '%s' is in phase "
			    "'%s', which is not in the new configuration; "
			    "reload refused", file, s->name, s->phase->name);
		rc = -1;
	}
	for (i = 0; i < cfg->nsessions && rc == 0; i++) {
		s = eg_sess_find(ex, cfg->sessions[i].name,
		    strlen(cfg->sessions[i].name));
		if (s != NULL && !s->is_static) {
			snprintf(buf, len, "%s:%d: [session:%s]: a session of "
			    "that name was made over the API; reload refused",
			    file, cfg->sessions[i].line, s->name);
			rc = -1;
		}
	}
	pthread_rwlock_unlock(&ex->lock);
	pthread_mutex_unlock(&ex->sesmtx);
	return rc;
}

int
eg_sessions_reload_prepare(struct egress *ex, const struct eg_cfg *cfg)
{
	const struct eg_cfg_session *cs;
	struct eg_session *s, *o, **tail = &ex->sess_pending;
	size_t i;

	/* under ctl: the registry does not change meanwhile */
	for (o = ex->sessions; o != NULL; o = o->next)
		o->gone = o->is_static && ((cs = cfg_session(cfg, o->name)) ==
		    NULL || !static_same(o, cs));
	for (i = 0; i < cfg->nsessions; i++) {
		cs = &cfg->sessions[i];
		o = eg_sess_find(ex, cs->name, strlen(cs->name));
		if (o != NULL && !o->gone)
			continue;
		if (o != NULL) {
			/* its listeners changed: rebound after the old ones
			 * are closed (eg_sessions_reload_done) */
			continue;
		}
		if ((s = static_new(ex, cfg, cs)) == NULL) {
			eg_sessions_reload_abort(ex);
			return -1;
		}
		*tail = s;
		tail = &s->next;
	}
	return 0;
}

void
eg_sessions_reload_abort(struct egress *ex)
{
	struct eg_session *s, *o;

	while ((s = ex->sess_pending) != NULL) {
		ex->sess_pending = s->next;
		eg_sess_free(s);
	}
	for (o = ex->sessions; o != NULL; o = o->next)
		o->gone = 0;
}

void
eg_sessions_reload_swap(struct egress *ex, const struct eg_cfg *cfg)
{
	struct eg_session *s;

	/* no sesmtx (the lock order is sesmtx, then ex->lock): the registry
	 * changes only under ctl, which the reload holds */
	const struct eg_cfg_session *cs;
	const struct eg_phase *p;

	for (s = ex->sessions; s != NULL; s = s->next) {
		if (s->phases != NULL || s->gone)
			continue;	/* (a gone one closes at once) */
		p = NULL;
		cs = s->is_static ? cfg_session(cfg, s->name) : NULL;
		if (cs != NULL && cs->phase != NULL && (s->cfg_phase == NULL ||
		    strcmp(cs->phase, s->cfg_phase) != 0)) {
			p = eg_cfg_phase(cfg, cs->phase);
			eg_free(s->cfg_phase);
			s->cfg_phase = eg_strdup(cs->phase);
		}
		if (p == NULL)
			p = eg_cfg_phase(cfg, s->phase->name);
		if (eg_budget_changed(s->phase, p))
			eg_budget_reset(&s->bud);
		s->phase = p;
		s->gen++;
	}
	for (s = ex->sess_pending; s != NULL; s = s->next) {
		cs = cfg_session(cfg, s->name);
		s->phase = eg_cfg_phase(cfg, cs->phase ? cs->phase :
		    cfg->phase);
		s->gen = 1;
	}
}

void
eg_sessions_reload_done(struct egress *ex, const struct eg_cfg *cfg)
{
	struct eg_session *s, *next;
	const struct eg_cfg_session *cs;
	size_t i;

	/* under ctl: the registry does not change meanwhile.  What the new
	 * phases forbid closes (default first); the sessions cfg removes
	 * close whole just below */
	for (s = ex->sessions; s != NULL; s = s->next)
		if (s->phases == NULL && !s->gone)
			eg_workers_close_forbidden(ex, s, EG_END_RELOAD);
	/* static sessions removed (or with other listeners): closed */
	for (s = ex->sessions; s != NULL; s = next) {
		next = s->next;
		if (s->gone) {
			eg_session_ref(s);
			eg_sess_delete(ex, s, "reload");
			eg_session_unref(s);
		}
	}
	/* new ones, bound before the swap; changed ones, bound now */
	while ((s = ex->sess_pending) != NULL) {
		ex->sess_pending = s->next;
		s->next = NULL;
		sess_open(ex, s, "reload");
	}
	for (i = 0; i < cfg->nsessions; i++) {
		cs = &cfg->sessions[i];
		if ((s = eg_session_get(ex, cs->name, strlen(cs->name))) !=
		    NULL) {
			eg_session_unref(s);
			continue;
		}
		if ((s = static_new(ex, cfg, cs)) == NULL) {
			eg_log(ex, EGRESS_LOG_ERR, "reload: %s", eg_errbuf(ex));
			continue;
		}
		pthread_rwlock_wrlock(&ex->lock);
		s->phase = eg_cfg_phase(cfg, cs->phase ? cs->phase :
		    cfg->phase);
		s->gen = 1;
		pthread_rwlock_unlock(&ex->lock);
		sess_open(ex, s, "reload");
	}
	eg_sessions_own_refresh(ex);
}
