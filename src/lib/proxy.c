/*
 * proxy.c: the public face of libegress (egress.h): creating a proxy from
 * a configuration, binding listeners, running the worker loops, and the
 * control operations (phase switch, reload, audit reopen, stop) that other
 * threads request and the loops carry out.
 */
#include "egress-int.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "admin.h"
#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "dns.h"
#include "metrics.h"
#include "ownaddr.h"
#include "proxy.h"

struct eg_client {			/* per-client connection count */
	struct eg_client	*next;
	uint8_t			 key[17];	/* family byte + address */
	unsigned		 n;
};

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

const char *
egress_errmsg(struct egress *ex)
{
	return ex->errmsg;
}

static int
set_err(struct egress *ex, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
set_err(struct egress *ex, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ex->errmsg, sizeof(ex->errmsg), fmt, ap);
	va_end(ap);
	return -1;
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

/* Timestamp, write, and tell the subscribers. */
void
eg_emit(struct egress *ex, struct egress_event *ev)
{
	size_t i;

	ev->ts_ms = eg_wall_ms();
	eg_metrics_event(ex->metrics, ev);
	if (eg_audit_emit(ex->audit, ev) == -1)
		eg_log(ex, EGRESS_LOG_ERR, "audit log write failed: %s",
		    strerror(errno));
	for (i = 0; i < ex->nsubs; i++)
		ex->subs[i].cb(ev, ex->subs[i].arg);
	eg_modules_event(ex, ev);
}

/* --- per-client accounting ------------------------------------------------ */

static size_t
client_key(const struct sockaddr *sa, uint8_t key[17])
{
	memset(key, 0, 17);
	key[0] = (uint8_t)sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)
		    ->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)(const void *)
		    sa)->sin6_addr, 16);
	/* Unix-socket clients all count as one */
	return 17;
}

static unsigned
client_hash(const uint8_t key[17])
{
	unsigned h = 2166136261u;
	size_t i;

	for (i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return h;
}

int
eg_client_acquire(struct egress *ex, const struct sockaddr *sa, unsigned max)
{
	uint8_t key[17];
	struct eg_client *cl, **head;
	int rc = 0;

	client_key(sa, key);
	head = &ex->clients[client_hash(key) % nitems(ex->clients)];
	pthread_mutex_lock(&ex->climtx);
	for (cl = *head; cl != NULL; cl = cl->next)
		if (memcmp(cl->key, key, sizeof(key)) == 0)
			break;
	if (cl == NULL && (cl = calloc(1, sizeof(*cl))) != NULL) {
		memcpy(cl->key, key, sizeof(key));
		cl->next = *head;
		*head = cl;
	}
	if (cl == NULL || cl->n >= max)
		rc = -1;
	else
		cl->n++;
	pthread_mutex_unlock(&ex->climtx);
	return rc;
}

void
eg_client_release(struct egress *ex, const struct sockaddr *sa)
{
	uint8_t key[17];
	struct eg_client *cl, **cp;

	client_key(sa, key);
	cp = &ex->clients[client_hash(key) % nitems(ex->clients)];
	pthread_mutex_lock(&ex->climtx);
	for (; (cl = *cp) != NULL; cp = &cl->next)
		if (memcmp(cl->key, key, sizeof(key)) == 0)
			break;
	if (cl != NULL && --cl->n == 0) {
		*cp = cl->next;
		free(cl);
	}
	pthread_mutex_unlock(&ex->climtx);
}

/* --- creation ---------------------------------------------------------------- */

static struct egress *
proxy_alloc(void)
{
	struct egress *ex;

	if ((ex = calloc(1, sizeof(*ex))) == NULL)
		return NULL;
	if ((ex->metrics = eg_metrics_new()) == NULL) {
		free(ex);
		return NULL;
	}
	pthread_rwlock_init(&ex->lock, NULL);
	pthread_mutex_init(&ex->ctl, NULL);
	pthread_mutex_init(&ex->climtx, NULL);
	snprintf(ex->def.name, sizeof(ex->def.name), "default");
	ex->def.is_default = 1;
	snprintf(ex->unix_client, sizeof(ex->unix_client), "unix");
	ex->log_level = EGRESS_LOG_INFO;
	ex->log_max = -1;		/* no callback yet */
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
		eg_errs_join(&errs, ex->errmsg, sizeof(ex->errmsg));
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
	    (path != NULL && (ex->cfg_path = strdup(path)) == NULL) ||
	    (text != NULL && (ex->cfg_text = strdup(text)) == NULL)) {
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
	/* apply to a fresh copy first so a bad value changes nothing */
	if ((cfg = proxy_parse(ex, &errs, 0)) == NULL) {
		eg_errs_join(&errs, ex->errmsg, sizeof(ex->errmsg));
		eg_errs_clear(&errs);
		return -1;
	}
	if (eg_cfg_override(cfg, key, value, &err) == -1) {
		eg_cfg_unref(cfg);
		return set_err(ex, "%s", err.msg);
	}
	o = realloc(ex->ovr, (ex->novr + 1) * sizeof(*o));
	if (o == NULL) {
		eg_cfg_unref(cfg);
		return set_err(ex, "out of memory");
	}
	ex->ovr = o;
	o[ex->novr].key = strdup(key);
	o[ex->novr].value = strdup(value);
	ex->novr++;
	eg_cfg_unref(ex->cfg);
	ex->cfg = cfg;
	return 0;
}

/* --- listeners ---------------------------------------------------------------- */

static int
bind_tcp(struct egress *ex, struct eg_lsock *ls, const struct eg_listen *l)
{
	int fd, one = 1;

	fd = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		return set_err(ex, "listen %s: %s", l->text, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* accepted sockets inherit it: no setsockopt per connection */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (l->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->ss, l->sslen) == -1 ||
	    listen(fd, 4096) == -1) {
		set_err(ex, "listen %s: %s", l->text, strerror(errno));
		close(fd);
		return -1;
	}
	ls->sslen = sizeof(ls->ss);
	getsockname(fd, (struct sockaddr *)&ls->ss, &ls->sslen);
	ls->fd = fd;
	return 0;
}

/*
 * A Unix listener.  A stale socket file (nobody listening) is replaced; a
 * live one, or anything that is not a socket, is an error.
 */
static int
bind_unix(struct egress *ex, struct eg_lsock *ls, const char *path,
    mode_t mode)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd, probe;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return set_err(ex, "unix %s: path too long", path);
	memcpy(sun.sun_path, path, strlen(path));
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return set_err(ex, "unix %s: exists and is not a "
			    "socket", path);
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe != -1 && connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0) {
			close(probe);
			return set_err(ex, "unix %s: another server is "
			    "listening there", path);
		}
		if (probe != -1)
			close(probe);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return set_err(ex, "unix %s: %s", path, strerror(errno));
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, mode) == -1 || listen(fd, 4096) == -1) {
		set_err(ex, "unix %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	ls->fd = fd;
	ls->path = strdup(path);
	return 0;
}

static void
lsock_clear(struct eg_lsock *ls)
{
	if (ls->fd != -1)
		close(ls->fd);
	if (ls->path != NULL)
		unlink(ls->path);
	free(ls->path);
	free(ls->text);
	ls->fd = -1;
	ls->path = ls->text = NULL;
}

/* Bind every listener of cfg; on error nothing stays bound. */
static int
bind_all(struct egress *ex, const struct eg_cfg *cfg, struct eg_lsock **out,
    size_t *nout)
{
	struct eg_lsock *ls;
	size_t i;
	int rc;

	if ((ls = calloc(cfg->nlisten ? cfg->nlisten : 1, sizeof(*ls))) ==
	    NULL)
		return set_err(ex, "out of memory");
	for (i = 0; i < cfg->nlisten; i++) {
		ls[i].fd = -1;
		ls[i].kind = cfg->listen[i].kind;
		ls[i].sess = &ex->def;
		ls[i].text = strdup(cfg->listen[i].text);
		if (cfg->listen[i].kind == EG_LISTEN_TCP)
			rc = bind_tcp(ex, &ls[i], &cfg->listen[i]);
		else
			rc = bind_unix(ex, &ls[i], cfg->listen[i].text,
			    cfg->unix_mode);
		if (rc == -1) {
			lsock_clear(&ls[i]);	/* its text */
			while (i-- > 0)
				lsock_clear(&ls[i]);
			free(ls);
			return -1;
		}
	}
	*out = ls;
	*nout = cfg->nlisten;
	return 0;
}

/* --- workers ----------------------------------------------------------------- */

/*
 * Accept a few connections per wake-up, not the whole queue: each one is
 * read and decided at once, and a long burst would hold back the replies
 * and bytes of the connections already open (the listener is
 * level-triggered, so the rest come on the next turn of the loop).
 */
#define ACCEPT_BATCH	8

static void
worker_accept(void *arg, uint32_t events)
{
	struct eg_lio *lio = arg;
	struct eg_worker *w = lio->w;
	struct sockaddr_storage ss;
	socklen_t len;
	uint64_t now, last;
	size_t k;
	int fd, i;

	(void)events;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof(ss);
		fd = accept4(lio->ls->fd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/*
				 * Pause accepting instead of spinning on a
				 * level-triggered listener; log at most once a
				 * minute.  (An EPOLLEXCLUSIVE
				 * registration cannot be modified, only
				 * deleted and added again.)
				 */
				/* one clock for every worker; loops' cached
				 * times differ and must not underflow */
				now = eg_clock_ms();
				last = __atomic_load_n(&w->ex->accept_logged,
				    __ATOMIC_RELAXED);
				if ((last == 0 || now >= last + 60000) &&
				    __atomic_compare_exchange_n(
				    &w->ex->accept_logged, &last, now, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
					eg_log(w->ex, EGRESS_LOG_WARN,
					    "accept: %s; pausing new "
					    "connections", strerror(errno));
				w->paused = 1;
				for (k = 0; k < w->nlio; k++)
					eg_io_del(w->loop, &w->lio[k].io);
				eg_timer_arm(w->loop, &w->accept_pause, 200);
			}
			return;
		}
		eg_conn_accept(w, lio->ls, fd, (struct sockaddr *)&ss, len);
	}
}

static void
worker_listen(struct eg_worker *w)
{
	size_t k;

	for (k = 0; k < w->nlio; k++)
		eg_io_set(w->loop, &w->lio[k].io, EPOLLIN | EPOLLEXCLUSIVE);
}

static void
worker_resume(void *arg)
{
	struct eg_worker *w = arg;

	w->paused = 0;
	worker_listen(w);
}

/* (Re)build the worker's listener interest from ex->ls (loop thread). */
static void
worker_set_listeners(struct eg_worker *w)
{
	struct egress *ex = w->ex;
	size_t k;

	for (k = 0; k < w->nlio; k++)
		eg_io_del(w->loop, &w->lio[k].io);
	/* an event of this batch may still point into it: worker_after()
	 * frees it (reloads are serialised, so one is pending at most) */
	free(w->lio_dead);
	w->lio_dead = w->lio;
	w->lio = NULL;
	w->nlio = 0;
	if (eg_stopping(ex) || ex->nls == 0)
		return;
	if ((w->lio = calloc(ex->nls, sizeof(*w->lio))) == NULL)
		return;
	for (k = 0; k < ex->nls; k++) {
		w->lio[k].ls = &ex->ls[k];
		w->lio[k].w = w;
		eg_io_init(&w->lio[k].io, ex->ls[k].fd, worker_accept,
		    &w->lio[k]);
	}
	w->nlio = ex->nls;
	if (!w->paused)
		worker_listen(w);
}

/* --- own addresses (loop protection) ------------------------------------ */

/*
 * A snapshot of egressd's own addresses: the TCP listeners ls and ls2 (as
 * bound; ls2 may be NULL), the admin API's TCP listener, and the
 * interface addresses.  NULL when out of memory.  Without the interface
 * list (getifaddrs() failed) a wildcard listener still covers loopback;
 * the failure is logged.
 */
static struct eg_ownaddr *
own_build(struct egress *ex, const struct eg_lsock *ls, size_t nls,
    const struct eg_lsock *ls2, size_t nls2)
{
	struct sockaddr_storage *tcp, *ifs;
	struct eg_ownaddr *own;
	size_t i, n = 0, nifs;

	if ((tcp = calloc(nls + nls2 + 1, sizeof(*tcp))) == NULL)
		return NULL;
	for (i = 0; i < nls; i++)
		if (ls[i].kind == EG_LISTEN_TCP)
			tcp[n++] = ls[i].ss;
	for (i = 0; i < nls2; i++)
		if (ls2[i].kind == EG_LISTEN_TCP)
			tcp[n++] = ls2[i].ss;
	if (eg_admin_tcp_addr(ex, &tcp[n]) == 1)
		n++;
	if (eg_ownaddr_ifaddrs(&ifs, &nifs) == -1) {
		eg_log(ex, EGRESS_LOG_WARN, "getifaddrs: %s; loop protection "
		    "of wildcard listeners covers loopback only",
		    strerror(errno));
		ifs = NULL;
		nifs = 0;
	}
	own = eg_ownaddr_new(tcp, n, ifs, nifs);
	free(tcp);
	free(ifs);
	return own;
}

struct own_set {
	struct eg_worker	*w;
	struct eg_ownaddr	*own;
};

static void
own_cmd(void *arg)
{
	struct own_set *s = arg;
	struct eg_ownaddr *old = s->w->own;

	s->w->own = eg_ownaddr_ref(s->own);
	eg_ownaddr_unref(old);
}

/*
 * Publish own (taking over the caller's reference): every worker swaps
 * its snapshot on its own loop thread, between events, so a decision in
 * progress keeps the one it started with (it holds a reference).
 */
static void
own_publish(struct egress *ex, struct eg_ownaddr *own)
{
	struct own_set s;
	size_t i;

	for (i = 0; i < ex->nw; i++) {
		s.w = &ex->w[i];
		s.own = own;
		if (ex->running)
			eg_loop_call(ex->w[i].loop, own_cmd, &s);
		else
			own_cmd(&s);
	}
	eg_ownaddr_unref(ex->own);
	ex->own = own;
}

static void
worker_after(void *arg)
{
	struct eg_worker *w = arg;

	size_t k;

	if (eg_stopping(w->ex) && !w->stopped) {
		w->stopped = 1;
		for (k = 0; k < w->nlio; k++)
			eg_io_del(w->loop, &w->lio[k].io);
		eg_conn_close_all(w, EG_END_SHUTDOWN);
		eg_loop_break(w->loop);
	}
	eg_conn_reap(w);
	eg_dns_reap(w->dns);
	free(w->lio_dead);
	w->lio_dead = NULL;
}

static void *
worker_main(void *arg)
{
	struct eg_worker *w = arg;

	eg_loop_run(w->loop);
	return NULL;
}

static int
workers_create(struct egress *ex)
{
	struct eg_err err;
	long ncpu;
	size_t i, n;

	n = ex->cfg->workers;
	if (n == 0) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		n = ncpu > 0 ? (size_t)ncpu : 1;
	}
	if ((ex->w = calloc(n, sizeof(*ex->w))) == NULL)
		return set_err(ex, "out of memory");
	for (i = 0; i < n; i++) {
		struct eg_worker *w = &ex->w[i];

		w->ex = ex;
		w->idx = (unsigned)i;
		if ((w->loop = eg_loop_new(&err)) == NULL ||
		    (w->dns = eg_dns_new(w->loop, ex->cfg->dns_servers,
		    ex->cfg->dns_timeout_ms, ex->cfg->dns_tries,
		    &err)) == NULL) {
			ex->nw = i + 1;
			return set_err(ex, "%s", err.msg);
		}
		eg_timer_init(&w->accept_pause, worker_resume, w);
		eg_loop_set_after(w->loop, worker_after, w);
		worker_set_listeners(w);
	}
	ex->nw = n;
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
	if (eg_modules_init(ex, ex->errmsg, sizeof(ex->errmsg)) == -1)
		return -1;
	raise_nofile(ex);
	ex->audit = eg_audit_open(ex->cfg->audit_log, ex->cfg->audit_json,
	    ex->cfg->audit_ring, &err);
	if (ex->audit == NULL)
		return set_err(ex, "%s", err.msg);
	if (bind_all(ex, ex->cfg, &ex->ls, &ex->nls) == -1)
		return -1;
	ex->def.phase = eg_cfg_phase(ex->cfg, ex->cfg->phase);
	if (ex->def.phase == NULL)
		return set_err(ex, "phase '%s' does not exist", ex->cfg->phase);
	ex->def.gen = 1;
	if (workers_create(ex) == -1)
		return -1;
	ex->started = 1;
	ex->started_ms = eg_wall_ms();
	if (eg_admin_start(ex, &err) == -1) {
		ex->started = 0;
		return set_err(ex, "%s", err.msg);
	}
	/* after the admin API: its TCP listener is one of our addresses */
	if ((own = own_build(ex, ex->ls, ex->nls, NULL, 0)) == NULL) {
		ex->started = 0;
		return set_err(ex, "out of memory");
	}
	own_publish(ex, own);
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
	if (ex->running)
		return set_err(ex, "already running");
	/* from now on control calls go through the loops' command queues
	 * (they wait until each loop thread is up) */
	ex->running = 1;
	for (i = 0; i < ex->nw; i++) {
		rc = pthread_create(&ex->w[i].thr, NULL, worker_main,
		    &ex->w[i]);
		if (rc != 0) {
			__atomic_store_n(&ex->stopping, 1, __ATOMIC_RELEASE);
			egress_join(ex);
			return set_err(ex, "pthread_create: %s", strerror(rc));
		}
		ex->w[i].thr_started = 1;
	}
	return 0;
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
	ex->running = 0;
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
	struct eg_client *cl;
	unsigned long nalloc, failat;

	if (ex == NULL)
		return;
	eg_admin_stop(ex);
	if (ex->running) {
		egress_stop(ex);
		egress_join(ex);
	}
	for (i = 0; i < ex->nw; i++) {
		struct eg_worker *w = &ex->w[i];

		if (w->loop == NULL)
			continue;
		eg_conn_close_all(w, EG_END_SHUTDOWN);
		eg_dns_free(w->dns);
		eg_conn_reap(w);
		eg_conn_pool_drain(w);
		while (w->npipes > 0) {
			w->npipes--;
			close(w->pipes[w->npipes][0]);
			close(w->pipes[w->npipes][1]);
		}
		while (w->bufpool != NULL) {
			void *b = w->bufpool;

			w->bufpool = *(void **)b;
			free(b);
		}
		free(w->lio);
		free(w->lio_dead);
		eg_ownaddr_unref(w->own);
		eg_loop_free(w->loop);
	}
	free(ex->w);
	for (i = 0; i < ex->nls; i++)
		lsock_clear(&ex->ls[i]);
	free(ex->ls);
	eg_modules_fini(ex);
	eg_audit_close(ex->audit);
	eg_metrics_free(ex->metrics);
	eg_cfg_unref(ex->cfg);
	for (i = 0; i < ex->novr; i++) {
		free(ex->ovr[i].key);
		free(ex->ovr[i].value);
	}
	free(ex->ovr);
	for (i = 0; i < nitems(ex->clients); i++)
		while ((cl = ex->clients[i]) != NULL) {
			ex->clients[i] = cl->next;
			free(cl);
		}
	eg_ownaddr_unref(ex->own);
	free(ex->cfg_path);
	free(ex->cfg_text);
	/* for tests/integ/failalloc.test: how far the injection got */
	if (eg_alloc_stats(&nalloc, &failat))
		eg_log(ex, EGRESS_LOG_INFO, "EGRESS_FAIL_ALLOC=%lu: %lu "
		    "allocations counted", failat, nalloc);
	pthread_rwlock_destroy(&ex->lock);
	pthread_mutex_destroy(&ex->ctl);
	pthread_mutex_destroy(&ex->climtx);
	free(ex);
}

/* --- control: phase switch, reload, reopen --------------------------------- */

struct recheck {
	struct eg_worker	*w;
	struct eg_session	*sess;
	enum eg_end		 why;
	unsigned		 closed;
};

static void
recheck_cmd(void *arg)
{
	struct recheck *r = arg;

	r->closed = eg_conn_recheck(r->w, r->sess, r->why);
}

/* On every loop: close what the session's new phase forbids. */
static unsigned
close_forbidden(struct egress *ex, struct eg_session *sess, enum eg_end why)
{
	struct recheck r;
	unsigned n = 0;
	size_t i;

	if (!ex->cfg->close_on_phase_change)
		return 0;
	for (i = 0; i < ex->nw; i++) {
		r.w = &ex->w[i];
		r.sess = sess;
		r.why = why;
		r.closed = 0;
		if (ex->running)
			eg_loop_call(ex->w[i].loop, recheck_cmd, &r);
		else
			recheck_cmd(&r);
		n += r.closed;
	}
	return n;
}

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
	struct egress_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = EGRESS_EV_PHASE;
	pthread_rwlock_rdlock(&ex->lock);
	ev.phase = ex->def.phase->name;
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

	if (!ex->running || ex->nw == 0 ||
	    eg_loop_call(ex->w[0].loop, phase_cmd, &pe) == -1)
		phase_cmd(&pe);
}

int
egress_set_phase(struct egress *ex, const char *name, const char *by,
    unsigned *closed)
{
	const struct eg_phase *p;
	char from[64];
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
	snprintf(from, sizeof(from), "%s", ex->def.phase->name);
	/* after this, every decision uses the new phase */
	ex->def.phase = p;
	ex->def.gen++;
	pthread_rwlock_unlock(&ex->lock);
	n = close_forbidden(ex, &ex->def, EG_END_PHASE_CHANGE);
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

static void
relisten_cmd(void *arg)
{
	worker_set_listeners(arg);
}

static void
dns_cmd(void *arg)
{
	struct eg_worker *w = arg;
	struct eg_err err;

	if (eg_dns_configure(&w->dns, w->ex->cfg->dns_servers,
	    w->ex->cfg->dns_timeout_ms, w->ex->cfg->dns_tries, &err) == -1)
		eg_log(w->ex, EGRESS_LOG_WARN, "%s", err.msg);
}

static int
listen_same(const struct eg_lsock *ls, const struct eg_listen *l)
{
	return ls->kind == l->kind && strcmp(ls->text, l->text) == 0;
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
	size_t i, j, nn = 0, onls;
	char from[64];

	if (!ex->started)
		return set_err(ex, "egress_start() first");
	pthread_mutex_lock(&ex->ctl);
	if ((cfg = proxy_parse(ex, &errs, 1)) == NULL) {
		eg_errs_join(&errs, ex->errmsg, sizeof(ex->errmsg));
		eg_errs_clear(&errs);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		return -1;
	}
	pthread_rwlock_rdlock(&ex->lock);
	snprintf(from, sizeof(from), "%s", ex->def.phase->name);
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
	/* listeners: keep the ones still configured, bind the new ones */
	if ((nls = calloc(cfg->nlisten ? cfg->nlisten : 1, sizeof(*nls))) ==
	    NULL)
		goto oom;
	for (i = 0; i < ex->nls; i++)
		ex->ls[i].keep = 0;
	for (j = 0; j < cfg->nlisten; j++) {
		for (i = 0; i < ex->nls; i++)
			if (!ex->ls[i].keep && listen_same(&ex->ls[i],
			    &cfg->listen[j]))
				break;
		if (i < ex->nls) {
			ex->ls[i].keep = 1;
			nls[nn] = ex->ls[i];	/* shares fd and strings */
			nn++;
			continue;
		}
		nls[nn].fd = -1;
		nls[nn].kind = cfg->listen[j].kind;
		nls[nn].sess = &ex->def;
		nls[nn].text = strdup(cfg->listen[j].text);
		if ((cfg->listen[j].kind == EG_LISTEN_TCP ?
		    bind_tcp(ex, &nls[nn], &cfg->listen[j]) :
		    bind_unix(ex, &nls[nn], cfg->listen[j].text,
		    cfg->unix_mode)) == -1) {
			/* ex->errmsg names the listener and the cause */
			lsock_clear(&nls[nn]);
			for (i = 0; i < nn; i++)
				if (!nls[i].keep)
					lsock_clear(&nls[i]);
			free(nls);
			eg_cfg_unref(cfg);
			eg_metrics_reload(ex->metrics, 0);
			pthread_mutex_unlock(&ex->ctl);
			return -1;
		}
		nn++;
	}
	/* own addresses: old and new listeners while both may accept */
	own = own_build(ex, nls, nn, NULL, 0);
	both = own_build(ex, nls, nn, ex->ls, ex->nls);
	if (own == NULL || both == NULL ||
	    eg_audit_reconfigure(ex->audit, cfg->audit_log, cfg->audit_json,
	    &err) == -1) {
		for (i = 0; i < nn; i++)
			if (!nls[i].keep)
				lsock_clear(&nls[i]);
		free(nls);
		eg_cfg_unref(cfg);
		eg_metrics_reload(ex->metrics, 0);
		pthread_mutex_unlock(&ex->ctl);
		if (own == NULL || both == NULL) {
			eg_ownaddr_unref(own);
			eg_ownaddr_unref(both);
			return set_err(ex, "out of memory");
		}
		eg_ownaddr_unref(own);
		eg_ownaddr_unref(both);
		return set_err(ex, "%s", err.msg);
	}

	/* the swap: from here on every decision uses cfg */
	pthread_rwlock_wrlock(&ex->lock);
	old = ex->cfg;
	ex->cfg = cfg;
	ex->def.phase = p;
	ex->def.gen++;
	ols = ex->ls;
	onls = ex->nls;
	ex->ls = nls;
	ex->nls = nn;
	pthread_rwlock_unlock(&ex->lock);

	own_publish(ex, both);
	for (i = 0; i < ex->nw; i++) {
		if (ex->running) {
			eg_loop_call(ex->w[i].loop, relisten_cmd, &ex->w[i]);
			eg_loop_call(ex->w[i].loop, dns_cmd, &ex->w[i]);
		} else {
			relisten_cmd(&ex->w[i]);
			dns_cmd(&ex->w[i]);
		}
	}
	for (i = 0; i < onls; i++)
		if (!ols[i].keep)
			lsock_clear(&ols[i]);
	free(ols);
	own_publish(ex, own);
	close_forbidden(ex, &ex->def, EG_END_RELOAD);
	eg_cfg_unref(old);
	eg_metrics_reload(ex->metrics, 1);
	pthread_mutex_unlock(&ex->ctl);
	eg_log(ex, EGRESS_LOG_INFO, "configuration reloaded (by %s)",
	    by ? by : "api");
	return 0;
oom:
	eg_cfg_unref(cfg);
	pthread_mutex_unlock(&ex->ctl);
	return set_err(ex, "out of memory");
}
