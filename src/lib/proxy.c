/*
 * proxy.c: the public face of libegress (egress.h), and only that:
 * creating a proxy from a configuration, starting and stopping it, and
 * the control operations (reload, audit reopen) that other threads
 * request.  Binding the listeners is listen.c's job; the worker loops,
 * accept and the per-client table are worker.c's; sessions, the default
 * one included, with their phase switches and their part of a reload,
 * session.c's; events event.c's; the logger log.c's.
 */
#include "egress-int.h"

#include <sys/resource.h>
#include <unistd.h>

#include "admin.h"
#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "chain.h"
#include "core.h"
#include "event.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "modrun.h"
#include "ownaddr.h"
#include "session.h"
#include "uuid.h"
#include "worker.h"

const char *
egress_version(void)
{
	return PACKAGE_VERSION;
}

void
egress_set_log_cb(struct egress *ex, egress_log_cb cb, void *arg)
{
	eg_logger_set_cb(&ex->log, cb, arg);
}

void
egress_set_log_level(struct egress *ex, int level)
{
	eg_logger_set_level(&ex->log, level);
}

/* eg_bug()'s way to a proxy's logger (log.h). */
static struct eg_logger *
proxy_logger(struct egress *ex)
{
	return &ex->log;
}

/* --- creation ---------------------------------------------------------- */

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
	eg_sessions_init(ex);
	snprintf(ex->unix_client, sizeof(ex->unix_client), "unix");
	eg_uuid4(ex->run_id);
	eg_logger_init(&ex->log);
	eg_logger_of_set(proxy_logger);
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
		return eg_set_err(ex, 0, "options must be set before "
		    "egress_start()");
	if (strcmp(key, "unix_client") == 0) {
		snprintf(ex->unix_client, sizeof(ex->unix_client), "%s", value);
		return 0;
	}
	if (strcmp(key, "unix_relay") == 0) {
		if (value == NULL || (strcmp(value, "yes") != 0 &&
		    strcmp(value, "no") != 0))
			return eg_set_err(ex, 0, "unix_relay: want yes or no");
		ex->unix_relay = strcmp(value, "yes") == 0;
		return 0;
	}
	if (strcmp(key, "run_id") == 0) {
		if (value == NULL || !eg_uuid_ok(value))
			return eg_set_err(ex, 0, "run_id: '%.80s' is not a "
			    "UUID (8-4-4-4-12 hex digits)", value ? value : "");
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
		return eg_set_err(ex, 0, "%s", err.msg);
	}
	o = eg_realloc(ex->ovr, (ex->novr + 1) * sizeof(*o));
	if (o == NULL) {
		eg_cfg_unref(cfg);
		return eg_set_err(ex, 0, "out of memory");
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
	struct sockaddr_storage adm;
	struct eg_ownaddr *own;
	struct eg_err err;

	if (ex->started)
		return eg_set_err(ex, 0, "already started");
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
		return eg_set_err(ex, 0, "%s", err.msg);
	if (eg_audit_chain_setup(ex, ex->audit, ex->run_id, 0, &err) == -1)
		return eg_set_err(ex, 0, "%s", err.msg);
	if (eg_listen_all(ex, ex->cfg, &ex->ls, &ex->nls, &err) == -1)
		return eg_set_err(ex, 0, "%s", err.msg);
	if (eg_workers_create(ex, &err) == -1)
		return eg_set_err(ex, 0, "%s", err.msg);
	if (eg_sessions_start(ex) == -1)
		return -1;
	ex->started = 1;
	ex->started_ms = eg_wall_ms();
	if (eg_admin_start(ex, &err) == -1) {
		ex->started = 0;
		return eg_set_err(ex, 0, "%s", err.msg);
	}
	/* after the admin API: its TCP listener is one of our addresses */
	if ((own = eg_own_build(ex, ex->ls, ex->nls, NULL, 0,
	    eg_admin_tcp_addr(ex, &adm) == 1 ? &adm : NULL)) == NULL) {
		ex->started = 0;
		return eg_set_err(ex, 0, "out of memory");
	}
	eg_own_publish(ex, own);
	if (ex->nsessions > 0)	/* static sessions' TCP listeners */
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
		return eg_set_err(ex, 0, "egress_start() first");
	if (eg_running(ex))
		return eg_set_err(ex, 0, "already running");
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
			return eg_set_err(ex, 0, "pthread_create: %s",
			    strerror(rc));
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
	eg_errbuf_forget(ex);
	pthread_rwlock_destroy(&ex->lock);
	pthread_mutex_destroy(&ex->ctl);
	pthread_mutex_destroy(&ex->climtx);
	pthread_mutex_destroy(&ex->sesmtx);
	eg_free(ex);
}

/* --- control: phase switch, reload, reopen ------------------------------ */

/* The default session's phase: session.c switches every session's. */
int
egress_set_phase(struct egress *ex, const char *name, const char *by,
    unsigned *closed)
{
	return egress_session_set_phase(ex, NULL, name, by, closed);
}

int
egress_get_option(struct egress *ex, const char *key, char *buf, size_t len)
{
	int n, set;

	if (strcmp(key, "run_id") == 0) {
		if (len < sizeof(ex->run_id))
			return eg_set_err(ex, 0, "egress_get_option: buffer "
			    "too small for 'run_id'");
		memcpy(buf, ex->run_id, sizeof(ex->run_id));
		return ex->run_id_set;
	}
	if (strcmp(key, "audit_log") != 0)
		return eg_set_err(ex, 0, "egress_get_option: unknown key "
		    "'%s'", key);
	pthread_rwlock_rdlock(&ex->lock);
	n = snprintf(buf, len, "%s", ex->cfg->audit_log);
	set = ex->cfg->audit_log_set;
	pthread_rwlock_unlock(&ex->lock);
	if (n < 0 || (size_t)n >= len)
		return eg_set_err(ex, 0, "egress_get_option: buffer too "
		    "small for '%s'", key);
	return set;
}

int
egress_phase(struct egress *ex, char *buf, size_t len)
{
	return egress_session_phase(ex, NULL, buf, len);
}

int
egress_reopen_audit(struct egress *ex)
{
	struct eg_err err;

	if (ex->audit == NULL)
		return eg_set_err(ex, 0, "not started");
	if (eg_audit_reopen(ex->audit, &err) == -1)
		return eg_set_err(ex, 0, "%s", err.msg);
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
	struct eg_lsock *nls = NULL, *ols;
	struct sockaddr_storage adm, *admp;
	struct eg_ownaddr *own, *both;
	struct eg_err err;
	int prep;
	size_t nn = 0, onls;

	if (!ex->started)
		return eg_set_err(ex, 0, "egress_start() first");
	pthread_mutex_lock(&ex->ctl);
	if ((cfg = proxy_parse(ex, &errs, 1)) == NULL) {
		eg_errs_join(&errs, eg_errbuf(ex), EG_ERRMSG_MAX);
		eg_errs_clear(&errs);
		goto fail;
	}
	/* every session on the configuration's phases (default too) finds
	 * its phase in cfg */
	if (eg_sessions_reload_check(ex, cfg, eg_errbuf(ex),
	    EG_ERRMSG_MAX) == -1)
		goto fail;
	/* listeners: keep the ones still configured, bind the new ones */
	if (eg_listen_rebind(ex, cfg, &nls, &nn, &err) == -1) {
		/* err names the listener and the cause */
		eg_set_err(ex, 0, "%s", err.msg);
		goto fail;
	}
	/* static sessions the file adds: bound now, opened after the swap */
	if (eg_sessions_reload_prepare(ex, cfg) == -1)
		goto fail_listen;
	/* own addresses: old and new listeners while both may accept */
	admp = eg_admin_tcp_addr(ex, &adm) == 1 ? &adm : NULL;
	own = eg_own_build(ex, nls, nn, NULL, 0, admp);
	both = eg_own_build(ex, nls, nn, ex->ls, ex->nls, admp);
	/* and the workers' listener arrays: taking them up cannot fail */
	prep = own != NULL && both != NULL && eg_workers_prepare(ex, nn) == 0;
	if (!prep ||
	    eg_audit_reconfigure(ex->audit, cfg->audit_log, cfg->audit_json,
	    &err) == -1) {
		eg_sessions_reload_abort(ex);
		if (prep) {
			eg_workers_unprepare(ex);
			eg_set_err(ex, 0, "%s", err.msg);
		} else
			eg_set_err(ex, 0, "out of memory");
		eg_ownaddr_unref(own);
		eg_ownaddr_unref(both);
		goto fail_listen;
	}

	/* its phases' counters, before any decision can use them */
	eg_metrics_register(ex->metrics, cfg->phases, cfg->nphases);
	/* the swap: from here on every decision uses cfg */
	pthread_rwlock_wrlock(&ex->lock);
	old = ex->cfg;
	ex->cfg = cfg;
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
	eg_sessions_reload_done(ex, cfg);
	eg_cfg_unref(old);
	eg_metrics_reload(ex->metrics, 1);
	pthread_mutex_unlock(&ex->ctl);
	eg_log(ex, EGRESS_LOG_INFO, "configuration reloaded (by %s)",
	    by ? by : "api");
	return 0;
fail_listen:
	eg_listen_drop(nls, nn);
fail:
	/* nothing changed */
	eg_cfg_unref(cfg);
	eg_metrics_reload(ex->metrics, 0);
	pthread_mutex_unlock(&ex->ctl);
	return -1;
}
