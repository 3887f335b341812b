/*
 * session.c: sessions (session.h, SPEC "Sessions") and their registry.
 * A session is a group of listeners with its own phase, counters and
 * audit ring; a client's session is that of the listener it reached,
 * fixed at accept.  The registry (ex->sessions) holds the session
 * "default" first (embedded in ex, its listeners ex->ls) and the others
 * after it; it is guarded by ex->sesmtx and changed only under ex->ctl as
 * well, so control calls see a stable registry.  Here: references and
 * counters, the registry, creation, deletion, the ttl reaper; phases and
 * reloads are sessphase.c's, labels, redaction and audit files
 * sessattr.c's.  Each worker keeps a list of every session's connections
 * (wconns[idx]), so a switch or a delete costs what that session has
 * open.
 */
#include "egress-int.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "core.h"
#include "event.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "routecfg.h"
#include "session.h"
#include "sessref.h"
#include "sessreg.h"
#include "shared.h"
#include "worker.h"

#define SUN_MAX	sizeof(((struct sockaddr_un *)0)->sun_path)

/* --- a session's end (its last reference: sessref.c) -------------------- */

void
eg_sess_free(struct eg_session *s)
{
	size_t i;

	for (i = 0; i < s->nls; i++)
		eg_lsock_clear(&s->ls[i]);
	eg_free(s->ls);
	eg_free(s->lio);
	for (i = 0; i < s->nphases; i++)
		eg_phase_clear(&s->phases[i]);
	eg_free(s->phases);
	eg_ring_free(s->ring);
	/* after its last line (the connections held references) */
	eg_audit_close(s->audit_file);
	eg_labels_free(s->labels);
	eg_redacts_free(s->redacts);
	eg_free(s->wconns);
	eg_free(s->dnext);
	eg_free(s->sock);
	eg_free(s->cfg_phase);
	eg_free(s);
}

/* --- the registry -------------------------------------------------------- */

/* The registry's first entry, the session "default" (embedded in ex,
 * never freed); the others are appended. */
void
eg_sessions_init(struct egress *ex)
{
	snprintf(ex->def.name, sizeof(ex->def.name), "default");
	ex->def.is_default = 1;
	ex->sessions = &ex->def;
}

/* Caller holds sesmtx. */
struct eg_session *
eg_sess_find(struct egress *ex, const char *name, size_t len)
{
	struct eg_session *s;

	for (s = ex->sessions; s != NULL; s = s->next)
		if (strlen(s->name) == len && memcmp(s->name, name, len) == 0)
			return s;
	return NULL;
}

struct eg_session *
eg_session_get(struct egress *ex, const char *name, size_t len)
{
	struct eg_session *s;

	pthread_mutex_lock(&ex->sesmtx);
	s = eg_sess_find(ex, name, len);
	eg_session_ref(s);
	pthread_mutex_unlock(&ex->sesmtx);
	return s;
}

struct eg_session *
eg_sess_named(struct egress *ex, const char *session)
{
	struct eg_session *s;

	if (session == NULL)
		session = "default";
	if ((s = eg_session_get(ex, session, strlen(session))) == NULL)
		eg_set_err(ex, ENOENT, "session '%.80s' does not exist",
		    session);
	return s;
}

struct eg_session *
eg_sess_lock(struct egress *ex, const char *session)
{
	struct eg_session *s;

	pthread_mutex_lock(&ex->ctl);
	if ((s = eg_sess_named(ex, session)) == NULL)
		pthread_mutex_unlock(&ex->ctl);
	return s;
}

void
eg_sessions_foreach(struct egress *ex,
    void (*fn)(struct eg_session *, void *), void *arg)
{
	struct eg_session *s;

	pthread_mutex_lock(&ex->sesmtx);
	for (s = ex->sessions; s != NULL; s = s->next)
		fn(s, arg);
	pthread_mutex_unlock(&ex->sesmtx);
}

void
eg_sess_register(struct egress *ex, struct eg_session *s)
{
	struct eg_session **sp;

	/* appended: GET /v1/sessions lists them in creation order */
	pthread_mutex_lock(&ex->sesmtx);
	for (sp = &ex->sessions; *sp != NULL; sp = &(*sp)->next)
		;
	*sp = s;
	__atomic_add_fetch(&ex->nsessions, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ex->sesmtx);
}

static void
sess_unregister(struct egress *ex, struct eg_session *s)
{
	struct eg_session **sp;

	pthread_mutex_lock(&ex->sesmtx);
	for (sp = &ex->sessions; *sp != NULL; sp = &(*sp)->next)
		if (*sp == s) {
			*sp = s->next;
			__atomic_sub_fetch(&ex->nsessions, 1,
			    __ATOMIC_RELAXED);
			break;
		}
	s->next = NULL;
	pthread_mutex_unlock(&ex->sesmtx);
}

/* --- events on a loop thread -------------------------------------------- */

struct emit_cmd {
	struct egress		*ex;
	struct eg_event		*ev;
};

static void
emit_cmd(void *arg)
{
	struct emit_cmd *c = arg;

	pthread_rwlock_rdlock(&c->ex->lock);
	eg_emit(c->ex, c->ev);
	pthread_rwlock_unlock(&c->ex->lock);
}

/*
 * The SESSION and PHASE lines of s, like every event on a loop thread
 * (egress.h): SESSION action= (phase NULL for close), or PHASE to
 * s->phase (stable: under ctl) from the phase named from.
 */
void
eg_sess_emit(struct egress *ex, struct eg_session *s, const char *action,
    const struct eg_phase *phase, const char *from, const char *by,
    unsigned closed)
{
	struct eg_event ev = {
		.type = action != NULL ? EGRESS_EV_SESSION : EGRESS_EV_PHASE,
		.sess = s,
		.action = action,
		.phase = phase,
		.from = from,
		.closed = closed,
		.by = by
	};
	struct emit_cmd c = { ex, &ev };

	if (!eg_running(ex) || ex->nw == 0 ||
	    eg_loop_call(ex->w[0].loop, emit_cmd, &c) == -1)
		emit_cmd(&c);
}


/* --- own addresses ------------------------------------------------------- */

/* Rebuild egressd's own addresses with every session's TCP listeners
 * (loop protection).  Under ctl. */
void
eg_sessions_own_refresh(struct egress *ex)
{
	struct sockaddr_storage adm;
	struct eg_session *s;
	struct eg_lsock *tcp;
	struct eg_ownaddr *own;
	size_t n = 0, i;

	pthread_mutex_lock(&ex->sesmtx);
	for (s = ex->sessions; s != NULL; s = s->next)
		n += s->nls;
	tcp = eg_calloc(n + 1, sizeof(*tcp));
	n = 0;
	for (s = ex->sessions; tcp != NULL && s != NULL; s = s->next)
		for (i = 0; i < s->nls; i++)
			if (s->ls[i].kind == EG_LISTEN_TCP)
				tcp[n++] = s->ls[i];	/* kind and ss only */
	pthread_mutex_unlock(&ex->sesmtx);
	if (tcp == NULL)
		return;
	own = eg_own_build(ex, ex->ls, ex->nls, tcp, n,
	    eg_admin_tcp_addr(ex, &adm) == 1 ? &adm : NULL);
	eg_free(tcp);
	if (own != NULL)
		eg_own_publish(ex, own);
}

static int
sess_has_tcp(const struct eg_session *s)
{
	size_t i;

	for (i = 0; i < s->nls; i++)
		if (s->ls[i].kind == EG_LISTEN_TCP)
			return 1;
	return 0;
}

/* --- session_dir --------------------------------------------------------- */

/* ex->session_dir: cfg session_dir, or "sessions" next to the admin
 * socket (the default admin folder when admin is on TCP or none). */
static int
session_dir(struct egress *ex)
{
	char def[SUN_MAX], dir[SUN_MAX + 16];
	const char *admin = ex->cfg->admin, *slash;
	struct stat st;

	if (ex->session_dir != NULL)
		goto check;
	if (ex->cfg->session_dir != NULL)
		snprintf(dir, sizeof(dir), "%s", ex->cfg->session_dir);
	else {
		if (admin == NULL || strchr(admin, '/') == NULL) {
			if (eg_admin_default_path(def, sizeof(def)) == -1)
				return eg_set_err(ex, ENAMETOOLONG,
				    "session_dir: the default admin path is "
				    "too long");
			admin = def;
		}
		slash = strrchr(admin, '/');
		snprintf(dir, sizeof(dir), "%.*s/sessions",
		    (int)(slash - admin), admin);
	}
	if ((ex->session_dir = eg_malloc(strlen(dir) + 1)) == NULL)
		return eg_set_err(ex, ENOMEM, "out of memory");
	memcpy(ex->session_dir, dir, strlen(dir) + 1);
check:
	if (mkdir(ex->session_dir, 0711) == 0) {
		/* the umask may have narrowed it; 0711 exactly */
		(void)chmod(ex->session_dir, 0711);
	} else if (errno != EEXIST)
		return eg_set_err(ex, errno, "session_dir %s: cannot create "
		    "it: %s", ex->session_dir, strerror(errno));
	if (lstat(ex->session_dir, &st) == -1)
		return eg_set_err(ex, errno, "session_dir %s: %s",
		    ex->session_dir, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return eg_set_err(ex, EPERM, "session_dir %s is a symlink; "
		    "refusing to use it", ex->session_dir);
	if (!S_ISDIR(st.st_mode))
		return eg_set_err(ex, ENOTDIR, "session_dir %s is not a folder",
		    ex->session_dir);
	if (st.st_uid != getuid() || (st.st_mode & 022) != 0)
		return eg_set_err(ex, EPERM, "session_dir %s must be owned by "
		    "uid %lu and writable by nobody else (it is mode %04o); "
		    "refusing to use it", ex->session_dir,
		    (unsigned long)getuid(), (unsigned)(st.st_mode & 07777));
	return 0;
}

/* --- creation ------------------------------------------------------------ */

const struct eg_phase *
eg_sess_phase(struct egress *ex, const struct eg_session *s, const char *name)
{
	size_t i;

	if (s->phases == NULL)
		return eg_cfg_phase(ex->cfg, name);
	for (i = 0; i < s->nphases; i++)
		if (strcmp(s->phases[i].name, name) == 0)
			return &s->phases[i];
	return NULL;
}

static int
sess_inline_phases(struct egress *ex, struct eg_session *s,
    const struct egress_phase_spec *ps, size_t n)
{
	struct eg_rule r;
	struct eg_err err;
	size_t i, j, len;

	if (n == 0)
		return eg_set_err(ex, EINVAL, "phases: at least one phase");
	if ((s->phases = eg_calloc(n, sizeof(*s->phases))) == NULL)
		return eg_set_err(ex, ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		if (ps[i].name == NULL || !eg_phase_name_ok(ps[i].name,
		    strlen(ps[i].name)))
			return eg_set_err(ex, EINVAL, "phases: bad phase name "
			    "'%.80s': 1 to %d of A-Z a-z 0-9 _ . -",
			    ps[i].name ? ps[i].name : "", EG_PHASE_NAME_MAX);
		for (j = 0; j < i; j++)
			if (strcmp(s->phases[j].name, ps[i].name) == 0)
				return eg_set_err(ex, EINVAL, "phases: phase "
				    "'%s' given twice", ps[i].name);
		len = strlen(ps[i].name);
		if ((s->phases[i].name = eg_malloc(len + 1)) == NULL)
			return eg_set_err(ex, ENOMEM, "out of memory");
		memcpy(s->phases[i].name, ps[i].name, len + 1);
		s->nphases = i + 1;
		for (j = 0; ps[i].allow != NULL && ps[i].allow[j] != NULL;
		    j++) {
			/* route:NAME, a credential route (route.h) */
			if (strncmp(ps[i].allow[j], "route:", 6) == 0 &&
			    eg_session_name_ok(ps[i].allow[j] + 6,
			    strlen(ps[i].allow[j] + 6))) {
				if (eg_phase_add_route(&s->phases[i],
				    ps[i].allow[j] + 6,
				    strlen(ps[i].allow[j] + 6), 0) == -1)
					return eg_set_err(ex, ENOMEM,
					    "out of memory");
				continue;
			}
			if (eg_rule_parse(ps[i].allow[j],
			    strlen(ps[i].allow[j]), &r, &err) == -1)
				return eg_set_err(ex, EINVAL, "phases: %s: %s",
				    ps[i].name, err.msg);
			if (eg_phase_add(&s->phases[i], &r) == -1) {
				eg_rule_clear(&r);
				return eg_set_err(ex, ENOMEM, "out of memory");
			}
		}
		if (eg_phase_finish(&s->phases[i]) == -1)
			return eg_set_err(ex, ENOMEM, "out of memory");
	}
	/* decisions under these phases count in egressd_decisions_total */
	eg_metrics_register(ex->metrics, s->phases, s->nphases);
	return 0;
}

struct eg_session *
eg_sess_alloc(struct egress *ex, const char *name)
{
	struct eg_session *s;

	if ((s = eg_calloc(1, sizeof(*s))) == NULL)
		return NULL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->refs = 1;		/* the registry's */
	s->release = eg_sess_free;
	s->nw = ex->nw;
	s->created_ms = s->idle_since_ms = eg_wall_ms();
	s->wconns = eg_calloc(ex->nw ? ex->nw : 1, sizeof(*s->wconns));
	s->dnext = eg_calloc(ex->nw ? ex->nw : 1, sizeof(*s->dnext));
	if (s->wconns == NULL || s->dnext == NULL) {
		eg_sess_free(s);
		return NULL;
	}
	return s;
}

/* s->listen: the bound address of its TCP listener ls. */
void
eg_sess_listen_text(struct eg_session *s, const struct eg_lsock *ls)
{
	char a[INET6_ADDRSTRLEN];

	if (ls->ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)&ls->ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(s->listen, sizeof(s->listen), "%s:%u", a,
		    ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const void *)&ls->ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(s->listen, sizeof(s->listen), "[%s]:%u", a,
		    ntohs(s6->sin6_port));
	}
}

/*
 * The errno a session's failed TCP bind is reported with: an address the
 * caller chose that this host cannot take (not one of its addresses, a
 * privileged port, a family it lacks) is the caller's mistake (EINVAL,
 * 400), a port in use is a conflict (EADDRINUSE, 409); what is left (no
 * descriptor, no memory) stays the server's.
 */
static int
tcp_bind_code(int code)
{
	switch (code) {
	case EADDRNOTAVAIL:
	case EACCES:
	case EPERM:
	case EAFNOSUPPORT:
		return EINVAL;
	default:
		return code;
	}
}

/* Bind s's Unix socket at path and, if listen != NULL, its TCP one. */
static int
sess_bind(struct egress *ex, struct eg_session *s, const char *path,
    const char *listen)
{
	struct eg_err err;
	struct eg_lsock *ls = &s->ls[s->nls];

	if (path != NULL) {
		memset(ls, 0, sizeof(*ls));
		ls->sess = s;
		if (eg_listen_bind_unix(ls, path, ex->cfg->unix_mode,
		    &err) == -1)
			return eg_set_err(ex, err.code, "%s", err.msg);
		s->nls++;
		ls++;
	}
	if (listen != NULL) {
		memset(ls, 0, sizeof(*ls));
		ls->sess = s;
		if (eg_listen_bind_tcp(ls, listen, &err) == -1)
			return eg_set_err(ex, tcp_bind_code(err.code), "%s",
			    err.msg);
		s->nls++;
		eg_sess_listen_text(s, ls);
	}
	return 0;
}

int
egress_session_create(struct egress *ex, const char *name,
    const char *phase, const char *listen, unsigned ttl_s,
    const struct egress_phase_spec *phases, size_t nphases,
    char *sock, size_t socklen, char *addr, size_t addrlen)
{
	return eg_session_create(ex, "api", name, phase, listen, ttl_s,
	    phases, nphases, sock, socklen, addr, addrlen);
}

int
eg_session_create(struct egress *ex, const char *by, const char *name,
    const char *phase, const char *listen, unsigned ttl_s,
    const struct egress_phase_spec *phases, size_t nphases,
    char *sock, size_t socklen, char *addr, size_t addrlen)
{
	struct eg_session *s = NULL, *dup;
	const struct eg_phase *p;
	char path[SUN_MAX + 64];
	int n;

	if (!ex->started)
		return eg_set_err(ex, EINVAL, "egress_start() first");
	if (name == NULL || !eg_session_name_ok(name, strlen(name)))
		return eg_set_err(ex, EINVAL, "bad session name '%.80s': 1 to "
		    "%d of A-Z a-z 0-9 _ . -, not beginning with . or -",
		    name ? name : "", EG_SESSION_NAME_MAX);
	if (strcmp(name, "default") == 0)
		return eg_set_err(ex, EEXIST, "session 'default' exists");
	if (phase != NULL && !eg_phase_name_ok(phase, strlen(phase)))
		return eg_set_err(ex, EINVAL, "bad phase name '%.80s'", phase);
	if (eg_stopping(ex))
		return eg_set_err(ex, ESHUTDOWN, "shutting down");
	pthread_mutex_lock(&ex->ctl);
	pthread_mutex_lock(&ex->sesmtx);
	dup = eg_sess_find(ex, name, strlen(name));
	n = ex->nsessions >= ex->cfg->max_sessions;
	pthread_mutex_unlock(&ex->sesmtx);
	if (dup != NULL) {
		eg_set_err(ex, EEXIST, "session '%s' exists", name);
		goto fail;
	}
	if (n) {
		eg_set_err(ex, ENOSPC, "max_sessions (%u) reached",
		    ex->cfg->max_sessions);
		goto fail;
	}
	if ((s = eg_sess_alloc(ex, name)) == NULL ||
	    (s->ls = eg_calloc(2, sizeof(*s->ls))) == NULL ||
	    (s->lio = eg_calloc(2 * (ex->nw ? ex->nw : 1),
	    sizeof(*s->lio))) == NULL ||
	    (s->ring = eg_ring_new(ex->cfg->audit_ring)) == NULL) {
		eg_set_err(ex, ENOMEM, "out of memory");
		goto fail;
	}
	s->ttl_s = ttl_s;
	if (phases != NULL && sess_inline_phases(ex, s, phases, nphases) ==
	    -1)
		goto fail;
	if (phase == NULL)
		phase = s->phases != NULL ? s->phases[0].name : ex->cfg->phase;
	/* ex->cfg changes only under ctl, which we hold */
	if ((p = eg_sess_phase(ex, s, phase)) == NULL) {
		eg_set_err(ex, ENOENT, "phase '%s' does not exist", phase);
		goto fail;
	}
	if (session_dir(ex) == -1)
		goto fail;
	n = snprintf(path, sizeof(path), "%s/%s.sock", ex->session_dir, name);
	if (n < 0 || (size_t)n >= SUN_MAX) {
		eg_set_err(ex, ENAMETOOLONG, "session socket %s/%s.sock: path "
		    "too long", ex->session_dir, name);
		goto fail;
	}
	if ((s->sock = eg_malloc((size_t)n + 1)) == NULL) {
		eg_set_err(ex, ENOMEM, "out of memory");
		goto fail;
	}
	memcpy(s->sock, path, (size_t)n + 1);
	if (sess_bind(ex, s, path, listen) == -1)
		goto fail;
	pthread_rwlock_wrlock(&ex->lock);
	s->phase = p;
	s->gen = 1;
	pthread_rwlock_unlock(&ex->lock);
	eg_sess_register(ex, s);
	eg_workers_session(ex, s, 1);
	if (sess_has_tcp(s))
		eg_sessions_own_refresh(ex);
	eg_sess_emit(ex, s, "open", p, NULL, by, 0);
	if (sock != NULL && socklen > 0)
		snprintf(sock, socklen, "%s", s->sock);
	if (addr != NULL && addrlen > 0)
		snprintf(addr, addrlen, "%s", s->listen);
	/* (before ctl goes: a DELETE may free s right after) */
	eg_log(ex, EGRESS_LOG_INFO, "session %s opened on %s%s%s", s->name,
	    s->sock, s->listen[0] ? " and " : "", s->listen);
	pthread_mutex_unlock(&ex->ctl);
	return 0;
fail:
	n = errno;
	pthread_mutex_unlock(&ex->ctl);
	if (s != NULL)
		eg_sess_free(s);	/* closes and unlinks what was bound */
	errno = n;
	return -1;
}

/* --- deletion ------------------------------------------------------------ */

/* Under ctl: s is in the registry. */
unsigned
eg_sess_delete(struct egress *ex, struct eg_session *s, const char *by)
{
	unsigned n;
	size_t i;
	int tcp = sess_has_tcp(s);

	sess_unregister(ex, s);
	s->closing = 1;
	/* no loop accepts on its listeners after this; its connections are
	 * closed, CLOSE end=session_closed */
	n = eg_workers_session(ex, s, 0);
	for (i = 0; i < s->nls; i++)
		eg_lsock_clear(&s->ls[i]);	/* socket files removed */
	if (tcp)
		eg_sessions_own_refresh(ex);
	eg_sess_emit(ex, s, "close", NULL, NULL, by, n);
	eg_log(ex, EGRESS_LOG_INFO, "session %s closed by %s (%u tunnels)",
	    s->name, by, n);
	eg_session_unref(s);	/* the registry's reference */
	return n;
}

int
egress_session_delete(struct egress *ex, const char *name, const char *by,
    unsigned *closed)
{
	struct eg_session *s;
	unsigned n;

	if (!ex->started)
		return eg_set_err(ex, EINVAL, "egress_start() first");
	if (name != NULL && strcmp(name, "default") == 0)
		return eg_set_err(ex, EPERM, "the session 'default' cannot be "
		    "deleted");
	pthread_mutex_lock(&ex->ctl);
	if (name == NULL || (s = eg_session_get(ex, name, strlen(name))) ==
	    NULL) {
		pthread_mutex_unlock(&ex->ctl);
		return eg_set_err(ex, ENOENT, "session '%.80s' does not exist",
		    name ? name : "");
	}
	if (s->is_static) {
		eg_set_err(ex, EPERM, "session '%s' comes from the "
		    "configuration file; remove its [session:%s] section and "
		    "reload", s->name, s->name);
		pthread_mutex_unlock(&ex->ctl);
		eg_session_unref(s);
		errno = EPERM;
		return -1;
	}
	n = eg_sess_delete(ex, s, by ? by : "api");
	pthread_mutex_unlock(&ex->ctl);
	eg_session_unref(s);
	if (closed != NULL)
		*closed = n;
	return 0;
}

/* --- ttl ----------------------------------------------------------------- */

/* One pass: delete the first session idle past its ttl; 1 if one was. */
static int
ttl_pass(struct egress *ex)
{
	struct eg_session *s;
	char name[EG_SESSION_NAME_MAX + 1];
	int64_t now = eg_wall_ms(), idle;

	name[0] = '\0';
	pthread_mutex_lock(&ex->sesmtx);
	for (s = ex->sessions; s != NULL; s = s->next) {
		if (s->ttl_s == 0 || s->is_static ||
		    __atomic_load_n(&s->active, __ATOMIC_RELAXED) != 0)
			continue;
		idle = __atomic_load_n(&s->idle_since_ms, __ATOMIC_RELAXED);
		if (now - idle >= (int64_t)s->ttl_s * 1000) {
			snprintf(name, sizeof(name), "%s", s->name);
			break;
		}
	}
	pthread_mutex_unlock(&ex->sesmtx);
	if (name[0] == '\0')
		return 0;
	pthread_mutex_lock(&ex->ctl);
	if ((s = eg_session_get(ex, name, strlen(name))) != NULL) {
		/* still idle? (a client may have come meanwhile) */
		if (!s->closing && __atomic_load_n(&s->active,
		    __ATOMIC_RELAXED) == 0 && !eg_stopping(ex))
			eg_sess_delete(ex, s, "ttl");
		eg_session_unref(s);
	}
	pthread_mutex_unlock(&ex->ctl);
	return 1;
}

static void *
ttl_main(void *arg)
{
	struct egress *ex = arg;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	int i;

	while (!eg_stopping(ex)) {
		/* bounded work: at most a few deletions per tick */
		for (i = 0; i < 16 && !eg_stopping(ex) && ttl_pass(ex); i++)
			;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int
eg_sessions_run(struct egress *ex)
{
	int rc;

	if (ex->ttl_started)
		return 0;
	if ((rc = pthread_create(&ex->ttl_thr, NULL, ttl_main, ex)) != 0)
		return eg_set_err(ex, rc, "pthread_create: %s", strerror(rc));
	ex->ttl_started = 1;
	return 0;
}

void
eg_sessions_join(struct egress *ex)
{
	if (!ex->ttl_started)
		return;
	pthread_join(ex->ttl_thr, NULL);
	ex->ttl_started = 0;
}

/* --- free ---------------------------------------------------------------- */

void
eg_sessions_free(struct egress *ex)
{
	struct eg_session *s;

	while ((s = ex->sessions) != NULL) {
		ex->sessions = s->next;
		eg_session_unref(s);	/* its sockets are removed */
	}
	ex->nsessions = 0;
	eg_audit_close(ex->def.audit_file);
	eg_labels_free(ex->def.labels);
	eg_redacts_free(ex->def.redacts);
	eg_free(ex->def.wconns);
	eg_free(ex->def.dnext);
	ex->def.wconns = NULL;
	ex->def.dnext = NULL;
	eg_free(ex->session_dir);
	ex->session_dir = NULL;
}
