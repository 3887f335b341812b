/*
 * proxy.c: the public face of libegress (egress.h), and only that:
 * creating a proxy from a configuration, starting and stopping it, and
 * the control operations (phase switch, reload, audit reopen) that other
 * threads request.  Binding the listeners is listen.c's job; the worker
 * loops, accept and the per-client table are worker.c's.
 */
#include "egress-int.h"

#include <sys/random.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "listen.h"
#include "metrics.h"
#include "ownaddr.h"
#include "proxy.h"
#include "session.h"
#include "worker.h"

int64_t
eg_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
egress_version(void)
{
	return PACKAGE_VERSION;
}

static __thread struct {
	const struct egress	*ex;
	char			 msg[EG_ERRMSG_MAX];
} tl_err;

char *
eg_errbuf(struct egress *ex)
{
	if (tl_err.ex != ex) {
		tl_err.ex = ex;
		tl_err.msg[0] = '\0';
	}
	return tl_err.msg;
}

const char *
egress_errmsg(struct egress *ex)
{
	return tl_err.ex == ex ? tl_err.msg : "";
}

static int
set_err(struct egress *ex, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
set_err(struct egress *ex, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(eg_errbuf(ex), EG_ERRMSG_MAX, fmt, ap);
	va_end(ap);
	return -1;
}

void
eg_uuid4(char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[16];
	size_t i, o = 0;
	int fd;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* no getrandom (old kernel): the device, else the clock */
		memset(r, 0, sizeof(r));
		if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) != -1) {
			if (read(fd, r, sizeof(r)) != (ssize_t)sizeof(r))
				memset(r, 0, sizeof(r));
			close(fd);
		}
		for (i = 0; i < sizeof(int64_t); i++)
			r[i] ^= (unsigned char)(eg_wall_ms() >> (8 * i));
		r[8] ^= (unsigned char)getpid();
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);	/* version 4 */
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);	/* RFC 4122 variant */
	for (i = 0; i < sizeof(r); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[r[i] >> 4];
		out[o++] = hex[r[i] & 15];
	}
	out[o] = '\0';
}

int
eg_uuid_ok(const char *s)
{
	size_t i;

	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f') ||
		    (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	}
	return s[36] == '\0';
}

/* Only through eg_log(), which has checked the level. */
void
eg_log_write(struct egress *ex, int level, const char *fmt, ...)
{
	egress_log_cb cb = ex->logcb;
	char msg[1024];
	va_list ap;

	if (cb == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cb(level, msg, ex->logarg);
}

static void
log_update(struct egress *ex)
{
	__atomic_store_n(&ex->log_max, ex->logcb != NULL ? ex->log_level : -1,
	    __ATOMIC_RELAXED);
}

void
egress_set_log_cb(struct egress *ex, egress_log_cb cb, void *arg)
{
	ex->logcb = cb;
	ex->logarg = arg;
	log_update(ex);
}

void
egress_set_log_level(struct egress *ex, int level)
{
	if (level < -1)
		level = -1;
	if (level > EGRESS_LOG_DEBUG)
		level = EGRESS_LOG_DEBUG;
	ex->log_level = level;
	log_update(ex);
}

int
egress_subscribe(struct egress *ex, egress_event_cb cb, void *arg)
{
	if (ex->nsubs == nitems(ex->subs))
		return set_err(ex, "too many subscribers");
	if (ex->started)
		return set_err(ex, "subscribe before egress_start()");
	ex->subs[ex->nsubs].cb = cb;
	ex->subs[ex->nsubs].arg = arg;
	ex->nsubs++;
	return 0;
}

/* Timestamp, write, count and tell the subscribers (see proxy.h). */
/* The public form of e: the enums' names, the phase's name. */
static void
emit_public(const struct eg_event *e, struct egress_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = e->type;
	ev->ts_ms = eg_wall_ms();
	ev->id = e->id;
	ev->host = e->host;
	ev->port = e->port;
	ev->phase = e->phase != NULL ? e->phase->name : NULL;
	ev->session = e->sess != NULL && !e->sess->is_default ?
	    e->sess->name : NULL;
	ev->client = e->client;
	ev->method = e->method;
	ev->addr = e->addr;
	ev->rule = e->rule;
	if (e->reason != EG_R_NONE && (unsigned)e->reason < EG_R_COUNT)
		ev->reason = eg_reason_name[e->reason];
	ev->report = e->report ? eg_reason_name[EG_R_NOT_ALLOWED] : NULL;
	ev->up = e->up;
	ev->down = e->down;
	ev->ms = e->ms;
	if (e->type == EGRESS_EV_CLOSE)
		ev->end = eg_end_name[e->end == EG_END_NONE ||
		    (unsigned)e->end >= EG_END_COUNT ? EG_END_ERROR : e->end];
	ev->sni = e->sni;
	ev->from = e->from;
	ev->by = e->by;
	ev->closed = e->closed;
	ev->action = e->action;
	ev->pid = e->pid;
	ev->exe = e->exe;
	ev->route = e->route;
	ev->path = e->path;
	ev->cred = e->cred;
	ev->status = e->route != NULL ? e->status : 0;
	ev->tokens_in = e->route != NULL ? e->tokens_in : -1;
	ev->tokens_out = e->route != NULL ? e->tokens_out : -1;
	ev->tokens_cached = e->route != NULL ? e->tokens_cached : -1;
}

/*
 * egress_session_set_redact(): every string field of ev with the values
 * replaced, the new strings carved out of buf (a field that finds no
 * room left is "[REDACTED]" whole: nothing of a value gets through).
 */
static void
redact_event(const struct eg_redact *rd, struct egress_event *ev, char *buf,
    size_t cap)
{
	const char **f[] = { &ev->host, &ev->phase, &ev->session,
	    &ev->client, &ev->method, &ev->addr, &ev->rule, &ev->reason,
	    &ev->report, &ev->end, &ev->sni, &ev->from, &ev->by,
	    &ev->action, &ev->step, &ev->exe };
	const char *r;
	size_t i, used = 0;

	for (i = 0; i < nitems(f); i++) {
		if (*f[i] == NULL)
			continue;
		r = eg_redact_str(rd, *f[i], buf + used, cap - used);
		if (r == buf + used)
			used += strlen(r) + 1;
		*f[i] = r;
	}
}

/* The file an event of s goes to: its own, or the main log. */
static struct eg_audit *
event_audit(struct egress *ex, struct eg_session *s)
{
	struct eg_audit *a;

	if (s == NULL)
		s = &ex->def;
	a = __atomic_load_n(&s->audit, __ATOMIC_ACQUIRE);
	return a != NULL ? a : ex->audit;
}

int
eg_emit(struct egress *ex, const struct eg_event *e)
{
	struct egress_event ev;
	const struct eg_redact *rd;
	char rbuf[2 * EG_AUDIT_LINE];
	size_t i;
	int rc, change;

	emit_public(e, &ev);
	ev.step = __atomic_load_n(e->sess != NULL ? &e->sess->step :
	    &ex->def.step, __ATOMIC_ACQUIRE);
	rd = __atomic_load_n(e->sess != NULL ? &e->sess->redact :
	    &ex->def.redact, __ATOMIC_ACQUIRE);
	if (rd != NULL)
		redact_event(rd, &ev, rbuf, sizeof(rbuf));
	/* counted against its session, kept in its ring, written to its
	 * file (egress_session_set_audit()) or the main log */
	rc = eg_audit_emit_ring(event_audit(ex, e->sess), &ev,
	    eg_session_event(ex, e), &change);
	/* the first failure and the recovery are logged, not every line */
	if (change > 0)
		eg_log(ex, EGRESS_LOG_ERR, "audit log write failed: %s; "
		    "refusing what would be allowed until it works again",
		    strerror(errno));
	else if (change < 0)
		eg_log(ex, EGRESS_LOG_INFO, "audit log writes work again");
	if (rc == -1 && e->type == EGRESS_EV_ALLOW)
		return -1;
	eg_metrics_event(ex->metrics, e);
	for (i = 0; i < ex->nsubs; i++)
		ex->subs[i].cb(&ev, ex->subs[i].arg);
	eg_modules_event(ex, &ev);
	return rc;
}

/* --- audit chaining (the record module) -------------------------------------- */

int
eg_audit_chain_setup(struct egress *ex, struct eg_audit *a, const char *run,
    int force, struct eg_err *err)
{
	const struct eg_audit_ops *ops = eg_module_audit_ops();
	struct eg_chain_params p;
	const struct eg_cfg *cfg = ex->cfg;
	size_t len = 0;

	if (ops == NULL || (!cfg->audit_chain && cfg->audit_key == NULL &&
	    !force))
		return 0;
	memset(&p, 0, sizeof(p));
	p.run = run;
	p.key = cfg->audit_key;
	p.checkpoint_lines = cfg->checkpoint_lines;
	/* config=: the bytes of the file (the text given, the default) */
	if (cfg->src != NULL) {
		p.config = cfg->src;
		len = cfg->src_len;
	} else if (ex->cfg_text != NULL) {
		p.config = ex->cfg_text;
		len = strlen(ex->cfg_text);
	} else {
		p.config = eg_cfg_default_text;
		len = strlen(eg_cfg_default_text);
	}
	p.config_len = len;
	/* the identity of the configuration is its redacted text (routes'
	 * literal header values): what a record keeps of it */
	{
		size_t rlen;
		char *red = eg_cfg_redact(p.config, len, &rlen);
		int rc;

		if (red == NULL) {
			return eg_err_set(err, ENOMEM, "out of memory");
		}
		p.config = red;
		p.config_len = rlen;
		rc = eg_audit_chain(a, ops, &p, p.key != NULL ?
		    cfg->checkpoint_interval_ms : 0, err);
		eg_free(red);
		return rc;
	}
}

/* --- creation ---------------------------------------------------------------- */

static struct egress *
proxy_alloc(void)
{
	struct egress *ex;

	if ((ex = eg_calloc(1, sizeof(*ex))) == NULL)
		return NULL;
	if ((ex->metrics = eg_metrics_new()) == NULL) {
		eg_free(ex);
		return NULL;
	}
	pthread_rwlock_init(&ex->lock, NULL);
	pthread_mutex_init(&ex->ctl, NULL);
	pthread_mutex_init(&ex->climtx, NULL);
	pthread_mutex_init(&ex->sesmtx, NULL);
	snprintf(ex->def.name, sizeof(ex->def.name), "default");
	ex->def.is_default = 1;
	snprintf(ex->unix_client, sizeof(ex->unix_client), "unix");
	eg_uuid4(ex->run_id);
	ex->log_level = EGRESS_LOG_INFO;
	ex->log_max = -1;		/* no callback yet */
	ex->admin_fd = -1;		/* none adopted */
	return ex;
}

/* Parse the configuration source of ex (file, text or default). */
static struct eg_cfg *
proxy_parse(struct egress *ex, struct eg_errs *errs, int check)
{
	struct eg_cfg *cfg;
	struct eg_err err;
	size_t i;

	if (ex->cfg_path != NULL)
		cfg = eg_cfg_load(ex->cfg_path, errs);
	else if (ex->cfg_text != NULL)
		cfg = eg_cfg_parse(ex->cfg_text, strlen(ex->cfg_text),
		    "(string)", errs);
	else
		cfg = eg_cfg_default(errs);
	if (cfg == NULL)
		return NULL;
	for (i = 0; i < ex->novr; i++)
		if (eg_cfg_override(cfg, ex->ovr[i].key, ex->ovr[i].value,
		    &err) == -1) {
			eg_errs_add(errs, "%s", err.msg);
			eg_cfg_unref(cfg);
			return NULL;
		}
	if ((check && eg_cfg_check(cfg, errs) == -1) || errs->n > 0) {
		eg_cfg_unref(cfg);
		return NULL;
	}
	return cfg;
}

int
egress_check(struct egress *ex)
{
	struct eg_errs errs = { 0 };

	if (eg_cfg_check(ex->cfg, &errs) == -1 || errs.n > 0) {
		eg_errs_join(&errs, eg_errbuf(ex), EG_ERRMSG_MAX);
		eg_errs_clear(&errs);
		return -1;
	}
	return 0;
}

static struct egress *
proxy_new(const char *path, const char *text, char *errbuf, size_t errlen)
{
	struct egress *ex;
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;

	if ((ex = proxy_alloc()) == NULL ||
	    (path != NULL && (ex->cfg_path = eg_strdup(path)) == NULL) ||
	    (text != NULL && (ex->cfg_text = eg_strdup(text)) == NULL)) {
		if (errbuf != NULL && errlen > 0)
			snprintf(errbuf, errlen, "out of memory");
		egress_free(ex);
		return NULL;
	}
	/* Parse once now so errors surface at creation; the whole-file
	 * checks wait for the overrides (egress_check, egress_start). */
	if ((cfg = proxy_parse(ex, &errs, 0)) == NULL) {
		if (errbuf != NULL)
			eg_errs_join(&errs, errbuf, errlen);
		eg_errs_clear(&errs);
		egress_free(ex);
		return NULL;
	}
	ex->cfg = cfg;
	return ex;
}

struct egress *
egress_new_from_file(const char *path, char *errbuf, size_t errlen)
{
	return proxy_new(path, NULL, errbuf, errlen);
}

struct egress *
egress_new_from_string(const char *text, char *errbuf, size_t errlen)
{
	if (text == NULL) {
		if (errbuf != NULL && errlen > 0)
			snprintf(errbuf, errlen, "no configuration text");
		return NULL;
	}
	return proxy_new(NULL, text, errbuf, errlen);
}

int
egress_set_option(struct egress *ex, const char *key, const char *value)
{
	struct eg_ovr *o;
	struct eg_err err;
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;

	if (ex->started)
		return set_err(ex, "options must be set before egress_start()");
	if (strcmp(key, "unix_client") == 0) {
		snprintf(ex->unix_client, sizeof(ex->unix_client), "%s", value);
		return 0;
	}
	if (strcmp(key, "unix_relay") == 0) {
		if (value == NULL || (strcmp(value, "yes") != 0 &&
		    strcmp(value, "no") != 0))
			return set_err(ex, "unix_relay: want yes or no");
		ex->unix_relay = strcmp(value, "yes") == 0;
		return 0;
	}
	if (strcmp(key, "run_id") == 0) {
		if (value == NULL || !eg_uuid_ok(value))
			return set_err(ex, "run_id: '%.80s' is not a UUID "
			    "(8-4-4-4-12 hex digits)", value ? value : "");
		snprintf(ex->run_id, sizeof(ex->run_id), "%s", value);
		ex->run_id_set = 1;
		return 0;
	}
	/* apply to a fresh copy first so a bad value changes nothing */
	if ((cfg = proxy_parse(ex, &errs, 0)) == NULL) {
		eg_errs_join(&errs, eg_errbuf(ex), EG_ERRMSG_MAX);
		eg_errs_clear(&errs);
		return -1;
	}
	if (eg_cfg_override(cfg, key, value, &err) == -1) {
		eg_cfg_unref(cfg);
		return set_err(ex, "%s", err.msg);
	}
	o = eg_realloc(ex->ovr, (ex->novr + 1) * sizeof(*o));
	if (o == NULL) {
		eg_cfg_unref(cfg);
		return set_err(ex, "out of memory");
	}
	ex->ovr = o;
	o[ex->novr].key = eg_strdup(key);
	o[ex->novr].value = eg_strdup(value);
	ex->novr++;
	eg_cfg_unref(ex->cfg);
	ex->cfg = cfg;
	return 0;
}

static void
raise_nofile(struct egress *ex)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
			eg_log(ex, EGRESS_LOG_WARN, "setrlimit: %s",
			    strerror(errno));
			getrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	ex->fd_limit = rl.rlim_cur > 1u << 30 ? 1u << 30 :
	    (unsigned)rl.rlim_cur;
}

int
egress_start(struct egress *ex)
{
	struct eg_ownaddr *own;
	struct eg_err err;

	if (ex->started)
		return set_err(ex, "already started");
	if (egress_check(ex) == -1)
		return -1;
	/* before any event: each phase gets its row of counters */
	eg_metrics_register(ex->metrics, ex->cfg->phases, ex->cfg->nphases);
	if (eg_modules_init(ex, eg_errbuf(ex), EG_ERRMSG_MAX) == -1)
		return -1;
	raise_nofile(ex);
	ex->audit = eg_audit_open(ex->cfg->audit_log, ex->cfg->audit_json,
	    ex->cfg->audit_ring, &err);
	if (ex->audit == NULL)
		return set_err(ex, "%s", err.msg);
	if (eg_audit_chain_setup(ex, ex->audit, ex->run_id, 0, &err) == -1)
		return set_err(ex, "%s", err.msg);
	if (eg_listen_all(ex, ex->cfg, &ex->ls, &ex->nls, &err) == -1)
		return set_err(ex, "%s", err.msg);
	ex->def.phase = eg_cfg_phase(ex->cfg, ex->cfg->phase);
	if (ex->def.phase == NULL)
		return set_err(ex, "phase '%s' does not exist", ex->cfg->phase);
	ex->def.gen = 1;
	if (eg_workers_create(ex, &err) == -1)
		return set_err(ex, "%s", err.msg);
	if (eg_sessions_start(ex) == -1)
		return -1;
	ex->started = 1;
	ex->started_ms = eg_wall_ms();
	if (eg_admin_start(ex, &err) == -1) {
		ex->started = 0;
		return set_err(ex, "%s", err.msg);
	}
	/* after the admin API: its TCP listener is one of our addresses */
	if ((own = eg_own_build(ex, ex->ls, ex->nls, NULL, 0)) == NULL) {
		ex->started = 0;
		return set_err(ex, "out of memory");
	}
	eg_own_publish(ex, own);
	if (ex->sessions != NULL)	/* static sessions' TCP listeners */
		eg_sessions_own_refresh(ex);
	return 0;
}

int
egress_run(struct egress *ex)
{
	if (egress_run_thread(ex) == -1)
		return -1;
	return egress_join(ex);
}

int
egress_run_thread(struct egress *ex)
{
	size_t i;
	int rc;

	if (!ex->started)
		return set_err(ex, "egress_start() first");
	if (eg_running(ex))
		return set_err(ex, "already running");
	/*
	 * From now on control calls go through the loops' command queues
	 * (they wait until each loop thread is up).  ctl is held while the
	 * threads start: the admin API is already up, and a control call
	 * either runs wholly before (on its own thread, no loop running) or
	 * wholly after.
	 */
	pthread_mutex_lock(&ex->ctl);
	__atomic_store_n(&ex->running, 1, __ATOMIC_RELEASE);
	for (i = 0; i < ex->nw; i++) {
		rc = pthread_create(&ex->w[i].thr, NULL, eg_worker_main,
		    &ex->w[i]);
		if (rc != 0) {
			pthread_mutex_unlock(&ex->ctl);
			__atomic_store_n(&ex->stopping, 1, __ATOMIC_RELEASE);
			egress_join(ex);
			return set_err(ex, "pthread_create: %s", strerror(rc));
		}
		ex->w[i].thr_started = 1;
	}
	pthread_mutex_unlock(&ex->ctl);
	/* the ttl reaper; without it sessions only lack their ttl */
	if (eg_sessions_run(ex) == -1)
		eg_log(ex, EGRESS_LOG_WARN, "%s", eg_errbuf(ex));
	return 0;
}

int
egress_ping(struct egress *ex, unsigned timeout_ms)
{
	uint64_t seen[64], start = eg_clock_ms();
	size_t i, n, left;

	if (!eg_running(ex) || eg_stopping(ex))
		return -1;
	n = ex->nw < nitems(seen) ? ex->nw : nitems(seen);
	for (i = 0; i < n; i++) {
		seen[i] = eg_loop_rounds(ex->w[i].loop);
		eg_loop_wake(ex->w[i].loop);
	}
	for (;;) {
		for (i = 0, left = 0; i < n; i++)
			if (eg_loop_rounds(ex->w[i].loop) == seen[i])
				left++;
		if (left == 0)
			return 1;
		if (eg_clock_ms() - start >= timeout_ms)
			return 0;
		usleep(5000);
	}
}

int
egress_join(struct egress *ex)
{
	size_t i;

	for (i = 0; i < ex->nw; i++)
		if (ex->w[i].thr_started) {
			if (eg_stopping(ex))
				eg_loop_wake(ex->w[i].loop);
			pthread_join(ex->w[i].thr, NULL);
			ex->w[i].thr_started = 0;
		}
	eg_sessions_join(ex);
	__atomic_store_n(&ex->running, 0, __ATOMIC_RELEASE);
	return 0;
}

void
egress_stop(struct egress *ex)
{
	size_t i;

	/* async-signal-safe: a flag and eventfd writes */
	__atomic_store_n(&ex->stopping, 1, __ATOMIC_RELEASE);
	for (i = 0; i < ex->nw; i++)
		if (ex->w[i].loop != NULL)
			eg_loop_wake(ex->w[i].loop);
}

void
egress_free(struct egress *ex)
{
	size_t i;
	unsigned long nalloc, failat;

	if (ex == NULL)
		return;
	eg_admin_stop(ex);
	if (eg_running(ex)) {
		egress_stop(ex);
		egress_join(ex);
	}
	eg_workers_free(ex);
	eg_sessions_free(ex);
	for (i = 0; i < ex->nls; i++)
		eg_lsock_clear(&ex->ls[i]);
	eg_free(ex->ls);
	eg_listen_adopt_free(ex);
	eg_modules_fini(ex);
	eg_audit_close(ex->def.audit_file);
	eg_labels_free(ex->def.labels);
	eg_redacts_free(ex->def.redacts);
	eg_audit_close(ex->audit);
	eg_metrics_free(ex->metrics);
	eg_cfg_unref(ex->cfg);
	for (i = 0; i < ex->novr; i++) {
		eg_free(ex->ovr[i].key);
		eg_free(ex->ovr[i].value);
	}
	eg_free(ex->ovr);
	eg_clients_free(ex);
	eg_ownaddr_unref(ex->own);
	eg_free(ex->cfg_path);
	eg_free(ex->cfg_text);
	/* for tests/integ/failalloc.test: how far the injection got */
	if (eg_alloc_stats(&nalloc, &failat))
		eg_log(ex, EGRESS_LOG_INFO, "EGRESS_FAIL_ALLOC=%lu: %lu "
		    "allocations counted", failat, nalloc);
	if (tl_err.ex == ex)	/* a later handle may have its address */
		tl_err.ex = NULL;
	pthread_rwlock_destroy(&ex->lock);
	pthread_mutex_destroy(&ex->ctl);
	pthread_mutex_destroy(&ex->climtx);
	pthread_mutex_destroy(&ex->sesmtx);
	eg_free(ex);
}

/* --- control: phase switch, reload, reopen --------------------------------- */

struct phase_ev {
	struct egress	*ex;
	const char	*from, *by;
	unsigned	 closed;
};

static void
phase_cmd(void *arg)
{
	struct phase_ev *pe = arg;
	struct egress *ex = pe->ex;
	struct eg_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_PHASE;
	pthread_rwlock_rdlock(&ex->lock);
	ev.phase = ex->def.phase;
	ev.from = pe->from;
	ev.by = pe->by;
	ev.closed = pe->closed;
	eg_emit(ex, &ev);
	pthread_rwlock_unlock(&ex->lock);
}

/* The PHASE line, on a loop thread like every event (egress.h). */
static void
emit_phase(struct egress *ex, const char *from, const char *by,
    unsigned closed)
{
	struct phase_ev pe = { ex, from, by, closed };

	if (!eg_running(ex) || ex->nw == 0 ||
	    eg_loop_call(ex->w[0].loop, phase_cmd, &pe) == -1)
		phase_cmd(&pe);
}

int
egress_set_phase(struct egress *ex, const char *name, const char *by,
    unsigned *closed)
{
	const struct eg_phase *p;
	const char *from;
	unsigned n;

	if (!ex->started)
		return set_err(ex, "egress_start() first");
	pthread_mutex_lock(&ex->ctl);
	pthread_rwlock_wrlock(&ex->lock);
	p = eg_cfg_phase(ex->cfg, name);
	if (p == NULL) {
		pthread_rwlock_unlock(&ex->lock);
		pthread_mutex_unlock(&ex->ctl);
		errno = ENOENT;
		return set_err(ex, "phase '%s' does not exist", name);
	}
	/* the old phase stays in ex->cfg, which only a reload (under ctl,
	 * which we hold) replaces: the name needs no copy */
	from = ex->def.phase->name;
	/* after this, every decision uses the new phase */
	ex->def.phase = p;
	ex->def.gen++;
	eg_budget_reset(&ex->def.bud);	/* a new count, even to the same */
	pthread_rwlock_unlock(&ex->lock);
	n = eg_workers_close_forbidden(ex, &ex->def, EG_END_PHASE_CHANGE);
	emit_phase(ex, from, by ? by : "api", n);
	pthread_mutex_unlock(&ex->ctl);
	if (closed != NULL)
		*closed = n;
	return 0;
}

int
egress_get_option(struct egress *ex, const char *key, char *buf, size_t len)
{
	int n, set;

	if (strcmp(key, "run_id") == 0) {
		if (len < sizeof(ex->run_id))
			return set_err(ex, "egress_get_option: buffer too "
			    "small for 'run_id'");
		memcpy(buf, ex->run_id, sizeof(ex->run_id));
		return ex->run_id_set;
	}
	if (strcmp(key, "audit_log") != 0)
		return set_err(ex, "egress_get_option: unknown key '%s'", key);
	pthread_rwlock_rdlock(&ex->lock);
	n = snprintf(buf, len, "%s", ex->cfg->audit_log);
	set = ex->cfg->audit_log_set;
	pthread_rwlock_unlock(&ex->lock);
	if (n < 0 || (size_t)n >= len)
		return set_err(ex, "egress_get_option: buffer too small for "
		    "'%s'", key);
	return set;
}

int
egress_phase(struct egress *ex, char *buf, size_t len)
{
	const struct eg_phase *p;

	pthread_rwlock_rdlock(&ex->lock);
	p = ex->def.phase != NULL ? ex->def.phase :
	    eg_cfg_phase(ex->cfg, ex->cfg->phase);
	snprintf(buf, len, "%s", p != NULL ? p->name : "");
	pthread_rwlock_unlock(&ex->lock);
	return 0;
}

int
egress_reopen_audit(struct egress *ex)
{
	struct eg_err err;

	if (ex->audit == NULL)
		return set_err(ex, "not started");
	if (eg_audit_reopen(ex->audit, &err) == -1)
		return set_err(ex, "%s", err.msg);
	return 0;
}

/*
 * Reload: parse and check the new snapshot, bind the listeners it adds,
 * then swap it in under the write lock, close what it forbids, and retire
 * the listeners it dropped.  Any error before the swap changes nothing.
 */
int
egress_reload(struct egress *ex, const char *by)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg, *old;
	const struct eg_phase *p;
	struct eg_lsock *nls = NULL, *ols;
	struct eg_ownaddr *own, *both;
	struct eg_err err;
	int prep;
	size_t nn = 0, onls;
	const char *from;

	if (!ex->started)
		return set_err(ex, "egress_start() first");
	pthread_mutex_lock(&ex->ctl);
	if ((cfg = proxy_parse(ex, &errs, 1)) == NULL) {
		eg_errs_join(&errs, eg_errbuf(ex), EG_ERRMSG_MAX);
		eg_errs_clear(&errs);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		return -1;
	}
	/* ex->cfg, where the name lives, changes only under ctl (held) */
	pthread_rwlock_rdlock(&ex->lock);
	from = ex->def.phase->name;
	pthread_rwlock_unlock(&ex->lock);
	if ((p = eg_cfg_phase(cfg, from)) == NULL) {
		set_err(ex, "%s: the current phase '%s' is not in the "
		    "new configuration; reload refused", cfg->file ?
		    cfg->file : "(config)", from);
		eg_cfg_unref(cfg);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		return -1;
	}
	/* sessions on the configuration's phases keep theirs too */
	if (eg_sessions_reload_check(ex, cfg, eg_errbuf(ex),
	    EG_ERRMSG_MAX) == -1) {
		eg_cfg_unref(cfg);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		return -1;
	}
	/* listeners: keep the ones still configured, bind the new ones */
	if (eg_listen_rebind(ex, cfg, &nls, &nn, &err) == -1) {
		/* err names the listener and the cause */
		eg_cfg_unref(cfg);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		return set_err(ex, "%s", err.msg);
	}
	/* static sessions the file adds: bound now, opened after the swap */
	if (eg_sessions_reload_prepare(ex, cfg) == -1) {
		eg_listen_drop(nls, nn);
		eg_cfg_unref(cfg);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		return -1;
	}
	/* own addresses: old and new listeners while both may accept */
	own = eg_own_build(ex, nls, nn, NULL, 0);
	both = eg_own_build(ex, nls, nn, ex->ls, ex->nls);
	/* and the workers' listener arrays: taking them up cannot fail */
	prep = own != NULL && both != NULL && eg_workers_prepare(ex, nn) == 0;
	if (!prep ||
	    eg_audit_reconfigure(ex->audit, cfg->audit_log, cfg->audit_json,
	    &err) == -1) {
		eg_sessions_reload_abort(ex);
		if (prep)
			eg_workers_unprepare(ex);
		eg_listen_drop(nls, nn);
		eg_cfg_unref(cfg);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		if (!prep) {
			eg_ownaddr_unref(own);
			eg_ownaddr_unref(both);
			return set_err(ex, "out of memory");
		}
		eg_ownaddr_unref(own);
		eg_ownaddr_unref(both);
		return set_err(ex, "%s", err.msg);
	}

	/* its phases' counters, before any decision can use them */
	eg_metrics_register(ex->metrics, cfg->phases, cfg->nphases);
	/* the swap: from here on every decision uses cfg */
	pthread_rwlock_wrlock(&ex->lock);
	old = ex->cfg;
	ex->cfg = cfg;
	if (eg_budget_changed(ex->def.phase, p))
		eg_budget_reset(&ex->def.bud);
	ex->def.phase = p;
	ex->def.gen++;
	eg_sessions_reload_swap(ex, cfg);
	ols = ex->ls;
	onls = ex->nls;
	ex->ls = nls;
	ex->nls = nn;
	pthread_rwlock_unlock(&ex->lock);

	eg_own_publish(ex, both);
	eg_workers_reconfigure(ex);
	eg_listen_drop(ols, onls);
	eg_own_publish(ex, own);
	eg_workers_close_forbidden(ex, &ex->def, EG_END_RELOAD);
	eg_sessions_reload_done(ex, cfg);
	eg_cfg_unref(old);
	eg_metrics_reload(ex->metrics, 1);
	pthread_mutex_unlock(&ex->ctl);
	eg_log(ex, EGRESS_LOG_INFO, "configuration reloaded (by %s)",
	    by ? by : "api");
	return 0;
}
