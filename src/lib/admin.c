/*
 * admin.c: the admin API on libmicrohttpd (the only file that includes
 * microhttpd.h).  MHD runs it on threads of its own, one per connection,
 * so a phase switch that waits for the loops to close tunnels never holds
 * up /healthz; connections are capped (admin_max_connections) and closed
 * when idle (admin_idle_timeout), so idle ones cannot lock it out.
 * Handlers change the proxy only through egress.h's control calls and
 * read the configuration under egress.lock.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include <microhttpd.h>

#include "admin.h"
#include "audit.h"
#include "buf.h"
#include "cfg.h"
#include "core.h"
#include "event.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "sessbody.h"
#include "session.h"
#include "shared.h"

#define JSON_MAX	(16u << 20)	/* largest response we build */
/*
 * The answers of the routes that change something (PUT /v1/phase, POST
 * /v1/reload, POST /v1/sessions, DELETE /v1/sessions/NAME, PUT
 * /v1/sessions/NAME/phase) are built in ANSWER_MAX bytes on the stack,
 * never on the heap: once the change is made, its answer cannot fail for
 * want of memory.  They hold names (phase and session names are plain
 * ASCII, at most 64 bytes), a socket path under 128 bytes (6 bytes per
 * byte escaped at worst), an address under 80 bytes and counters.
 */
#define ANSWER_MAX	2048
#define OOM_BODY	"{\"error\":\"out of memory\"}\n"
#define RELOAD_OOM	"{\"errors\":[\"out of memory\"]}\n"

struct eg_admin {
	struct egress		*ex;
	struct MHD_Daemon	*d;
	int			 fd;	/* ours until MHD owns it */
	char			*path;	/* Unix: unlinked at stop */
	char			*where;	/* for messages */
	char			*conf;	/* cfg->admin at start */
	int			 tcp;
	char			*token;	/* TCP: the bearer token */
	size_t			 toklen;
	pthread_mutex_t		 mtx;	/* one switch or reload at once */
};

struct req {				/* one request's upload state */
	size_t			 len;
	int			 too_big;
	char			 body[EG_ADMIN_BODY_MAX];
};

enum method { M_GET, M_PUT, M_POST, M_DELETE, M_OTHER };

/* --- PUT /v1/phase body -------------------------------------------------- */

static size_t
skip_ws(const char *s, size_t i, size_t len)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	    s[i] == '\r'))
		i++;
	return i;
}

#define STR_(x)	#x
#define STR(x)	STR_(x)
#define NAME_RULE "a phase name is 1 to " STR(EG_PHASE_NAME_MAX) \
	" of A-Z a-z 0-9 _ . -"

int
eg_admin_parse_phase(const char *body, size_t len, char *name, size_t cap,
    const char **why)
{
	static const char key[] = "\"phase\"";
	size_t i, start;

	*why = "expected {\"phase\":\"NAME\"}";
	i = skip_ws(body, 0, len);
	if (i >= len || body[i] != '{')
		return -1;
	i = skip_ws(body, i + 1, len);
	if (len - i < sizeof(key) - 1 || memcmp(body + i, key,
	    sizeof(key) - 1) != 0)
		return -1;
	i = skip_ws(body, i + sizeof(key) - 1, len);
	if (i >= len || body[i] != ':')
		return -1;
	i = skip_ws(body, i + 1, len);
	if (i >= len || body[i] != '"')
		return -1;
	start = ++i;
	while (i < len && body[i] != '"')
		i++;
	/* one grammar, shared.h's, for the config, egressctl and here */
	if (i >= len || !eg_phase_name_ok(body + start, i - start) ||
	    i - start >= cap) {
		*why = NAME_RULE;
		return -1;
	}
	memcpy(name, body + start, i - start);
	name[i - start] = '\0';
	i = skip_ws(body, i + 1, len);
	if (i >= len || body[i] != '}')
		return -1;
	i = skip_ws(body, i + 1, len);
	if (i != len)
		return -1;
	*why = NULL;
	return 0;
}

/* --- responses ----------------------------------------------------------- */

static enum MHD_Result
reply(struct MHD_Connection *con, unsigned status, const char *type,
    const char *body, size_t len, const char *hname, const char *hval)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (hname != NULL)
		MHD_add_response_header(r, hname, hval);
	rc = MHD_queue_response(con, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result
reply_json(struct MHD_Connection *con, unsigned status, struct eg_buf *j)
{
	enum MHD_Result rc;

	eg_buf_add(j, "\n", 1);
	if (eg_buf_failed(j)) {
		eg_buf_clear(j);
		return reply(con, 500, "application/json", OOM_BODY,
		    sizeof(OOM_BODY) - 1, NULL, NULL);
	}
	rc = reply(con, status, "application/json", eg_buf_data(j),
	    eg_buf_len(j), NULL, NULL);
	eg_buf_clear(j);
	return rc;
}

static enum MHD_Result
reply_err(struct MHD_Connection *con, unsigned status, const char *msg,
    const char *hname, const char *hval)
{
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	enum MHD_Result rc;

	eg_buf_str(&j, "{\"error\":");
	eg_buf_json_str(&j, msg);
	eg_buf_str(&j, "}\n");
	if (eg_buf_failed(&j)) {
		/* out of memory: the status stands, with a fixed body */
		eg_buf_clear(&j);
		return reply(con, status, "application/json", OOM_BODY,
		    sizeof(OOM_BODY) - 1, hname, hval);
	}
	rc = reply(con, status, "application/json", eg_buf_data(&j),
	    eg_buf_len(&j), hname, hval);
	eg_buf_clear(&j);
	return rc;
}

/* --- routes -------------------------------------------------------------- */

static void
json_allow(struct eg_buf *j, const struct eg_phase *p)
{
	size_t i;

	eg_buf_str(j, "\"mode\":");
	eg_buf_json_str(j, p->report ? "report" : "enforce");
	eg_buf_str(j, ",\"allow\":[");
	for (i = 0; i < p->nrules; i++) {
		if (i)
			eg_buf_add(j, ",", 1);
		eg_buf_json_str(j, p->rules[i].text);
	}
	eg_buf_add(j, "]", 1);
}

/* ,"budget":{"up":[USED,LIMIT],...} of a session whose phase has one
 * (caller holds the lock); nothing otherwise. */
static void
json_budget(struct eg_buf *j, struct eg_session *s)
{
	static const struct {
		const char	*name;
		unsigned	 bit;
	} kinds[] = { { "up", EG_BUDGET_UP }, { "down", EG_BUDGET_DOWN },
	    { "requests", EG_BUDGET_REQ } };
	const struct eg_phase *p = s->phase;
	const uint64_t *used[3], *lim[3];
	size_t i, n = 0;

	if (p == NULL || p->budget_has == 0)
		return;
	used[0] = &s->bud.up;
	used[1] = &s->bud.down;
	used[2] = &s->bud.req;
	lim[0] = &p->budget_up;
	lim[1] = &p->budget_down;
	lim[2] = &p->budget_requests;
	eg_buf_str(j, ",\"budget\":{");
	for (i = 0; i < nitems(kinds); i++) {
		if (!(p->budget_has & kinds[i].bit))
			continue;
		if (n++)
			eg_buf_add(j, ",", 1);
		eg_buf_json_str(j, kinds[i].name);
		eg_buf_str(j, ":[");
		eg_buf_u64(j, __atomic_load_n(used[i], __ATOMIC_RELAXED));
		eg_buf_add(j, ",", 1);
		eg_buf_u64(j, *lim[i]);
		eg_buf_add(j, "]", 1);
	}
	eg_buf_add(j, "}", 1);
}

static enum MHD_Result
get_status(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct egress *ex = ad->ex;
	const char *const *m;
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	char phase[EG_PHASE_NAME_MAX + 1];
	uint64_t aerr;
	int64_t up;
	int failing;

	(void)rq;
	egress_phase(ex, phase, sizeof(phase));
	eg_audit_health(ex->audit, &aerr, &failing);
	up = eg_wall_ms() - ex->started_ms;
	eg_buf_str(&j, "{\"version\":");
	eg_buf_json_str(&j, egress_version());
	eg_buf_str(&j, ",\"phase\":");
	eg_buf_json_str(&j, phase);
	eg_buf_str(&j, ",\"uptime_s\":");
	eg_buf_u64(&j, up > 0 ? (uint64_t)up / 1000 : 0);
	eg_buf_str(&j, ",\"connections\":{\"active\":");
	eg_buf_u64(&j, __atomic_load_n(&ex->active, __ATOMIC_RELAXED));
	eg_buf_str(&j, ",\"total\":");
	eg_buf_u64(&j, __atomic_load_n(&ex->total, __ATOMIC_RELAXED));
	eg_buf_str(&j, "},\"modules\":[");
	for (m = egress_modules(); *m != NULL; m++) {
		if (m != egress_modules())
			eg_buf_add(&j, ",", 1);
		eg_buf_json_str(&j, *m);
	}
	eg_buf_str(&j, "],\"audit\":{\"write_errors\":");
	eg_buf_u64(&j, aerr);
	eg_buf_str(&j, failing ? ",\"failing\":true}" : ",\"failing\":false}");
	pthread_rwlock_rdlock(&ex->lock);
	json_budget(&j, &ex->def);
	pthread_rwlock_unlock(&ex->lock);
	eg_buf_add(&j, "}", 1);
	return reply_json(con, 200, &j);
}

static enum MHD_Result
get_phase(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct egress *ex = ad->ex;
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);

	(void)rq;
	pthread_rwlock_rdlock(&ex->lock);
	eg_buf_str(&j, "{\"phase\":");
	eg_buf_json_str(&j, ex->def.phase->name);
	eg_buf_add(&j, ",", 1);
	json_allow(&j, ex->def.phase);
	eg_buf_add(&j, "}", 1);
	pthread_rwlock_unlock(&ex->lock);
	return reply_json(con, 200, &j);
}

static enum MHD_Result
get_phases(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct egress *ex = ad->ex;
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	size_t i;

	(void)rq;
	pthread_rwlock_rdlock(&ex->lock);
	eg_buf_str(&j, "{\"phase\":");
	eg_buf_json_str(&j, ex->def.phase->name);
	eg_buf_str(&j, ",\"phases\":[");
	for (i = 0; i < ex->cfg->nphases; i++) {
		if (i)
			eg_buf_add(&j, ",", 1);
		eg_buf_str(&j, "{\"name\":");
		eg_buf_json_str(&j, ex->cfg->phases[i].name);
		eg_buf_add(&j, ",", 1);
		json_allow(&j, &ex->cfg->phases[i]);
		eg_buf_add(&j, "}", 1);
	}
	eg_buf_str(&j, "]}");
	pthread_rwlock_unlock(&ex->lock);
	return reply_json(con, 200, &j);
}

/* Does the Content-Type name application/json (parameters allowed)? */
static int
is_json_type(const char *ct)
{
	static const char t[] = "application/json";

	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, t, sizeof(t) - 1) != 0)
		return 0;
	ct += sizeof(t) - 1;
	return *ct == '\0' || *ct == ';' || *ct == ' ' || *ct == '\t';
}

/* Why a request's JSON body cannot be read (400), or NULL. */
static const char *
json_body_refusal(struct MHD_Connection *con, const struct req *rq)
{
	if (!is_json_type(MHD_lookup_connection_value(con, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_TYPE)))
		return "Content-Type must be application/json";
	if (rq->too_big)
		return "request body over 4096 bytes";
	return NULL;
}

static enum MHD_Result
put_phase(struct eg_admin *ad, struct MHD_Connection *con, struct req *rq)
{
	struct egress *ex = ad->ex;
	char name[EG_PHASE_NAME_MAX + 1], prev[EG_PHASE_NAME_MAX + 1];
	char msg[600], answer[ANSWER_MAX];
	const char *why;
	struct eg_buf j;
	unsigned closed = 0;
	int rc, e;

	eg_buf_init(&j, answer, sizeof(answer));

	if ((why = json_body_refusal(con, rq)) != NULL)
		return reply_err(con, 400, why, NULL, NULL);
	if (eg_admin_parse_phase(rq->body, rq->len, name, sizeof(name),
	    &why) == -1)
		return reply_err(con, 400, why, NULL, NULL);
	if (eg_stopping(ex))
		return reply_err(con, 503, "shutting down", NULL, NULL);
	pthread_mutex_lock(&ad->mtx);
	egress_phase(ex, prev, sizeof(prev));
	errno = 0;
	rc = egress_set_phase(ex, name, "admin", &closed);
	e = errno;
	if (rc == -1)
		snprintf(msg, sizeof(msg), "%s", egress_errmsg(ex));
	pthread_mutex_unlock(&ad->mtx);
	if (rc == -1)
		return reply_err(con, e == ENOENT ? 404 : 500, msg, NULL,
		    NULL);
	eg_buf_str(&j, "{\"phase\":");
	eg_buf_json_str(&j, name);
	eg_buf_str(&j, ",\"previous\":");
	eg_buf_json_str(&j, prev);
	eg_buf_str(&j, ",\"closed\":");
	eg_buf_u64(&j, closed);
	eg_buf_add(&j, "}", 1);
	return reply_json(con, 200, &j);
}

/* A decimal query value: 1 to 20 digits, no overflow.  0 or -1. */
static int
parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s == NULL || *s == '\0' || strlen(s) > 20)
		return -1;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static enum MHD_Result
get_audit(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	const char *s;
	uint64_t since = 0, limit = 100;
	enum MHD_Result rc;
	size_t cap, n;
	char *buf;

	(void)rq;
	s = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "since");
	if (s != NULL && parse_u64(s, &since) == -1)
		return reply_err(con, 400, "since: expected a decimal seq",
		    NULL, NULL);
	s = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "limit");
	if (s != NULL && (parse_u64(s, &limit) == -1 || limit == 0 ||
	    limit > EG_ADMIN_AUDIT_MAX))
		return reply_err(con, 400, "limit: expected 1 to 1000",
		    NULL, NULL);
	cap = (size_t)limit * (EG_AUDIT_LINE + 32) + 16;
	if ((buf = eg_malloc(cap)) == NULL)
		return reply_err(con, 500, "out of memory", NULL, NULL);
	n = eg_audit_ring_json(ad->ex->audit, since, (unsigned)limit, buf,
	    cap - 1);
	buf[n++] = '\n';
	rc = reply(con, 200, "application/json", buf, n, NULL, NULL);
	eg_free(buf);
	return rc;
}

static enum MHD_Result
post_reload(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct egress *ex = ad->ex;
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	const char *p, *nl;
	char *msg, phase[EG_PHASE_NAME_MAX + 1], line[1024];
	char answer[ANSWER_MAX];
	size_t n, nerr = 0;
	int rc;

	(void)rq;
	if (eg_stopping(ex))
		return reply_err(con, 503, "shutting down", NULL, NULL);
	/* a reload that fails, for want of memory too, is a 422 (SPEC) */
	if ((msg = eg_malloc(EG_ERRMSG_MAX)) == NULL)
		return reply(con, 422, "application/json", RELOAD_OOM,
		    sizeof(RELOAD_OOM) - 1, NULL, NULL);
	pthread_mutex_lock(&ad->mtx);
	rc = egress_reload(ex, "admin");
	if (rc == -1)
		snprintf(msg, EG_ERRMSG_MAX, "%s", egress_errmsg(ex));
	pthread_mutex_unlock(&ad->mtx);
	if (rc == -1) {
		eg_buf_str(&j, "{\"errors\":[");
		for (p = msg; *p != '\0'; p = *nl ? nl + 1 : nl) {
			if ((nl = strchr(p, '\n')) == NULL)
				nl = p + strlen(p);
			n = (size_t)(nl - p);
			if (n == 0)
				continue;
			if (n >= sizeof(line))
				n = sizeof(line) - 1;
			memcpy(line, p, n);
			line[n] = '\0';
			if (nerr++)
				eg_buf_add(&j, ",", 1);
			eg_buf_json_str(&j, line);
		}
		eg_buf_str(&j, "]}");
		eg_free(msg);
		if (eg_buf_failed(&j)) {
			eg_buf_clear(&j);
			return reply(con, 422, "application/json",
			    RELOAD_OOM, sizeof(RELOAD_OOM) - 1, NULL, NULL);
		}
		return reply_json(con, 422, &j);
	}
	eg_free(msg);
	eg_buf_init(&j, answer, sizeof(answer));	/* the 200: no heap */
	pthread_rwlock_rdlock(&ex->lock);
	if (ex->cfg->admin == NULL ? ad->conf != NULL : ad->conf == NULL ||
	    strcmp(ex->cfg->admin, ad->conf) != 0)
		eg_log(ex, EGRESS_LOG_WARN, "admin: the admin listener "
		    "changes only at restart");
	pthread_rwlock_unlock(&ex->lock);
	egress_phase(ex, phase, sizeof(phase));
	eg_buf_str(&j, "{\"reloaded\":true,\"phase\":");
	eg_buf_json_str(&j, phase);
	eg_buf_add(&j, "}", 1);
	return reply_json(con, 200, &j);
}

/* Open descriptors (entries of /proc/self/fd, less the one reading it);
 * -1 when unknown. */
static int64_t
count_fds(void)
{
	struct dirent *de;
	int64_t n = 0;
	DIR *d;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0;
}

static enum MHD_Result
get_metrics(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct egress *ex = ad->ex;
	struct eg_metrics_gauges g;
	enum MHD_Result rc;
	char phase[EG_PHASE_NAME_MAX + 1];
	struct eg_buf b = EG_BUF_HEAP(JSON_MAX);
	int64_t up;
	int failing;

	(void)rq;
	egress_phase(ex, phase, sizeof(phase));
	eg_audit_health(ex->audit, &g.audit_write_errors, &failing);
	up = eg_wall_ms() - ex->started_ms;
	g.phase = phase;
	g.active = __atomic_load_n(&ex->active, __ATOMIC_RELAXED);
	g.total = __atomic_load_n(&ex->total, __ATOMIC_RELAXED);
	g.uptime_s = up > 0 ? (uint64_t)up / 1000 : 0;
	g.sessions = __atomic_load_n(&ex->nsessions, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&ex->lock);	/* ex->cfg: a reload swaps it */
	g.max_connections = ex->cfg->max_connections;
	pthread_rwlock_unlock(&ex->lock);
	g.open_fds = count_fds();
	g.max_fds = ex->fd_limit;
	eg_buf_reserve(&b, 65536);	/* the usual size in one go */
	if (eg_metrics_render(ex->metrics, &g, &b) == -1) {
		eg_buf_clear(&b);
		return reply_err(con, 500, "out of memory", NULL, NULL);
	}
	rc = reply(con, 200, "text/plain; version=0.0.4; charset=utf-8",
	    eg_buf_data(&b), eg_buf_len(&b), NULL, NULL);
	eg_buf_clear(&b);
	return rc;
}

/* --- dispatch ------------------------------------------------------------ */

/* Constant-time check of "Authorization: Bearer TOKEN". */
static int
authorized(struct eg_admin *ad, struct MHD_Connection *con)
{
	const char *h, *tok;
	size_t n, i;
	unsigned char diff;

	if (!ad->tcp)
		return 1;
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	if (h == NULL)
		return 0;
	while (*h == ' ' || *h == '\t')
		h++;
	if (strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] !=
	    '\t'))
		return 0;
	tok = h + 6;
	while (*tok == ' ' || *tok == '\t')
		tok++;
	n = strlen(tok);
	while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
		n--;
	/* every byte of the secret is visited whatever the input */
	diff = n != ad->toklen;
	for (i = 0; i < ad->toklen; i++)
		diff |= (unsigned char)(ad->token[i] ^ (i < n ? tok[i] : 0));
	return diff == 0;
}

/* --- sessions (SPEC "Sessions") ------------------------------------------ */

static void
json_session(struct eg_buf *j, struct eg_session *s)
{
	eg_buf_str(j, "{\"name\":");
	eg_buf_json_str(j, s->name);
	eg_buf_str(j, ",\"phase\":");
	eg_buf_json_str(j, s->phase != NULL ? s->phase->name : "");
	eg_buf_str(j, ",\"socket\":");
	if (s->sock != NULL)
		eg_buf_json_str(j, s->sock);
	else
		eg_buf_str(j, "null");
	eg_buf_str(j, ",\"listen\":");
	if (s->listen[0] != '\0')
		eg_buf_json_str(j, s->listen);
	else
		eg_buf_str(j, "null");
	eg_buf_str(j, ",\"active\":");
	eg_buf_u64(j, __atomic_load_n(&s->active, __ATOMIC_RELAXED));
	eg_buf_str(j, ",\"total\":");
	eg_buf_u64(j, __atomic_load_n(&s->total, __ATOMIC_RELAXED));
	eg_buf_str(j, ",\"allowed\":");
	eg_buf_u64(j, __atomic_load_n(&s->allowed, __ATOMIC_RELAXED));
	eg_buf_str(j, ",\"blocked\":");
	eg_buf_u64(j, __atomic_load_n(&s->blocked, __ATOMIC_RELAXED));
	eg_buf_str(j, ",\"failed\":");
	eg_buf_u64(j, __atomic_load_n(&s->failed, __ATOMIC_RELAXED));
	eg_buf_str(j, ",\"created\":");
	eg_buf_u64(j, s->created_ms > 0 ? (uint64_t)s->created_ms / 1000 : 0);
	eg_buf_str(j, ",\"ttl_s\":");
	eg_buf_u64(j, s->ttl_s);
	json_budget(j, s);
	eg_buf_add(j, "}", 1);
}

struct list_arg {
	struct egress	*ex;
	struct eg_buf	*j;
	int		 n;
};

static void
list_one(struct eg_session *s, void *arg)
{
	struct list_arg *la = arg;

	if (la->n++)
		eg_buf_add(la->j, ",", 1);
	/* sesmtx, then the lock (session.c's order) */
	pthread_rwlock_rdlock(&la->ex->lock);
	json_session(la->j, s);
	pthread_rwlock_unlock(&la->ex->lock);
}

static enum MHD_Result
get_sessions(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	struct list_arg la = { ad->ex, &j, 0 };

	(void)rq;
	eg_buf_str(&j, "{\"sessions\":[");
	eg_sessions_foreach(ad->ex, list_one, &la);
	eg_buf_str(&j, "]}");
	return reply_json(con, 200, &j);
}

static unsigned
session_status(int e)
{
	switch (e) {
	case EEXIST:
	case EADDRINUSE:	/* a live server owns NAME.sock */
		return 409;
	case EINVAL:
		return 400;
	case ENOENT:
		return 404;
	case ENOSPC:
	case ESHUTDOWN:
		return 503;
	case EPERM:
		return 409;
	default:
		return 500;
	}
}

static enum MHD_Result
post_session(struct eg_admin *ad, struct MHD_Connection *con, struct req *rq)
{
	struct egress *ex = ad->ex;
	struct eg_sess_body *b;
	struct egress_phase_spec ps[EG_SB_PHASES_MAX];
	char why[256], msg[600], sock[128], addr[80], answer[ANSWER_MAX];
	struct eg_buf j;
	const char *bad;
	size_t i;
	int rc, e;

	eg_buf_init(&j, answer, sizeof(answer));

	if ((bad = json_body_refusal(con, rq)) != NULL)
		return reply_err(con, 400, bad, NULL, NULL);
	if ((b = eg_malloc(sizeof(*b))) == NULL)
		return reply_err(con, 500, "out of memory", NULL, NULL);
	if (eg_sess_body_parse(rq->body, rq->len, b, why, sizeof(why)) ==
	    -1) {
		eg_free(b);
		return reply_err(con, 400, why, NULL, NULL);
	}
	for (i = 0; i < b->nphases; i++) {
		ps[i].name = b->phases[i].name;
		ps[i].allow = b->phases[i].allow;
	}
	pthread_mutex_lock(&ad->mtx);
	errno = 0;
	rc = eg_session_create(ex, "admin", b->name,
	    b->phase[0] ? b->phase : NULL,
	    b->listen[0] ? b->listen : NULL, b->ttl_s,
	    b->has_phases ? ps : NULL, b->nphases, sock, sizeof(sock), addr,
	    sizeof(addr));
	e = errno;
	if (rc == -1)
		snprintf(msg, sizeof(msg), "%s", egress_errmsg(ex));
	pthread_mutex_unlock(&ad->mtx);
	if (rc == -1) {
		eg_free(b);
		return reply_err(con, session_status(e), msg, NULL, NULL);
	}
	eg_buf_str(&j, "{\"name\":");
	eg_buf_json_str(&j, b->name);
	eg_buf_str(&j, ",\"phase\":");
	egress_session_phase(ex, b->name, why, sizeof(why));
	eg_buf_json_str(&j, why);
	eg_buf_str(&j, ",\"socket\":");
	eg_buf_json_str(&j, sock);
	eg_buf_str(&j, ",\"listen\":");
	if (addr[0] != '\0')
		eg_buf_json_str(&j, addr);
	else
		eg_buf_str(&j, "null");
	eg_buf_add(&j, "}", 1);
	eg_free(b);
	return reply_json(con, 201, &j);
}

static enum MHD_Result
session_route(struct eg_admin *ad, struct MHD_Connection *con,
    const char *rest, enum method m, struct req *rq)
{
	struct egress *ex = ad->ex;
	const char *slash = strchr(rest, '/'), *sub;
	char name[EG_SESSION_NAME_MAX + 1], prev[EG_PHASE_NAME_MAX + 1];
	char pname[EG_PHASE_NAME_MAX + 1], msg[600];
	size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
	struct eg_session *s;
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	char answer[ANSWER_MAX];
	const struct eg_phase *p;
	const char *why, *q;
	uint64_t since = 0, limit = 100;
	unsigned closed = 0;
	enum MHD_Result r;
	size_t cap, n;
	char *buf;
	int rc, e;

	sub = slash ? slash + 1 : "";
	if (strcmp(sub, "") != 0 && strcmp(sub, "phase") != 0 &&
	    strcmp(sub, "audit") != 0)
		return reply_err(con, 404, "no such route", NULL, NULL);
	if (!(len == 7 && memcmp(rest, "default", 7) == 0) &&
	    !eg_session_name_ok(rest, len))
		return reply_err(con, 404, "no such session (a session name "
		    "is 1 to 64 of A-Z a-z 0-9 _ . -, not beginning with . "
		    "or -)", NULL, NULL);
	memcpy(name, rest, len);
	name[len] = '\0';
	if ((s = eg_session_get(ex, name, len)) == NULL) {
		snprintf(msg, sizeof(msg), "session '%s' does not exist",
		    name);
		return reply_err(con, 404, msg, NULL, NULL);
	}
	if (*sub == '\0' && m == M_GET) {
		pthread_rwlock_rdlock(&ex->lock);
		json_session(&j, s);
		pthread_rwlock_unlock(&ex->lock);
		eg_session_unref(s);
		return reply_json(con, 200, &j);
	}
	if (*sub == '\0' && m == M_DELETE) {
		eg_session_unref(s);
		pthread_mutex_lock(&ad->mtx);
		errno = 0;
		rc = egress_session_delete(ex, name, "admin", &closed);
		e = errno;
		if (rc == -1)
			snprintf(msg, sizeof(msg), "%s", egress_errmsg(ex));
		pthread_mutex_unlock(&ad->mtx);
		if (rc == -1)
			return reply_err(con, session_status(e), msg, NULL,
			    NULL);
		eg_buf_init(&j, answer, sizeof(answer));	/* no heap */
		eg_buf_str(&j, "{\"name\":");
		eg_buf_json_str(&j, name);
		eg_buf_str(&j, ",\"closed\":");
		eg_buf_u64(&j, closed);
		eg_buf_add(&j, "}", 1);
		return reply_json(con, 200, &j);
	}
	if (*sub == '\0') {
		eg_session_unref(s);
		return reply_err(con, 405, "use GET or DELETE", "Allow",
		    "GET, DELETE");
	}
	if (strcmp(sub, "phase") == 0 && m == M_GET) {
		pthread_rwlock_rdlock(&ex->lock);
		p = s->phase;
		eg_buf_str(&j, "{\"phase\":");
		eg_buf_json_str(&j, p->name);
		eg_buf_add(&j, ",", 1);
		json_allow(&j, p);
		eg_buf_add(&j, "}", 1);
		pthread_rwlock_unlock(&ex->lock);
		eg_session_unref(s);
		return reply_json(con, 200, &j);
	}
	if (strcmp(sub, "phase") == 0 && m == M_PUT) {
		eg_session_unref(s);
		if ((why = json_body_refusal(con, rq)) != NULL)
			return reply_err(con, 400, why, NULL, NULL);
		if (eg_admin_parse_phase(rq->body, rq->len, pname,
		    sizeof(pname), &why) == -1)
			return reply_err(con, 400, why, NULL, NULL);
		pthread_mutex_lock(&ad->mtx);
		egress_session_phase(ex, name, prev, sizeof(prev));
		errno = 0;
		rc = egress_session_set_phase(ex, name, pname, "admin",
		    &closed);
		e = errno;
		if (rc == -1)
			snprintf(msg, sizeof(msg), "%s", egress_errmsg(ex));
		pthread_mutex_unlock(&ad->mtx);
		if (rc == -1)
			return reply_err(con, e == ENOENT ? 404 : 500, msg,
			    NULL, NULL);
		eg_buf_init(&j, answer, sizeof(answer));	/* no heap */
		eg_buf_str(&j, "{\"phase\":");
		eg_buf_json_str(&j, pname);
		eg_buf_str(&j, ",\"previous\":");
		eg_buf_json_str(&j, prev);
		eg_buf_str(&j, ",\"closed\":");
		eg_buf_u64(&j, closed);
		eg_buf_add(&j, "}", 1);
		return reply_json(con, 200, &j);
	}
	if (strcmp(sub, "phase") == 0) {
		eg_session_unref(s);
		return reply_err(con, 405, "use GET or PUT", "Allow",
		    "GET, PUT");
	}
	/* audit */
	if (m != M_GET) {
		eg_session_unref(s);
		return reply_err(con, 405, "use GET", "Allow", "GET");
	}
	q = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "since");
	if (q != NULL && parse_u64(q, &since) == -1) {
		eg_session_unref(s);
		return reply_err(con, 400, "since: expected a decimal seq",
		    NULL, NULL);
	}
	q = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "limit");
	if (q != NULL && (parse_u64(q, &limit) == -1 || limit == 0 ||
	    limit > EG_ADMIN_AUDIT_MAX)) {
		eg_session_unref(s);
		return reply_err(con, 400, "limit: expected 1 to 1000",
		    NULL, NULL);
	}
	cap = (size_t)limit * (EG_AUDIT_LINE + 32) + 16;
	if ((buf = eg_malloc(cap)) == NULL) {
		eg_session_unref(s);
		return reply_err(con, 500, "out of memory", NULL, NULL);
	}
	n = s->ring != NULL ? eg_ring_json(s->ring, since, (unsigned)limit,
	    buf, cap - 1) : eg_audit_ring_json(ex->audit, since,
	    (unsigned)limit, buf, cap - 1);
	eg_session_unref(s);
	buf[n++] = '\n';
	r = reply(con, 200, "application/json", buf, n, NULL, NULL);
	eg_free(buf);
	return r;
}

/* 200 ok; 503 while the audit log is failing (its last write failed). */
static enum MHD_Result
healthz(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	static const char bad[] = "audit log failing\n";
	uint64_t n;
	int failing;

	(void)rq;
	eg_audit_health(ad->ex->audit, &n, &failing);
	if (failing)
		return reply(con, 503, "text/plain; charset=utf-8", bad,
		    sizeof(bad) - 1, NULL, NULL);
	return reply(con, 200, "text/plain; charset=utf-8", "ok\n", 3,
	    NULL, NULL);
}


typedef enum MHD_Result route_fn(struct eg_admin *, struct MHD_Connection *,
    struct req *);

/* The routes with a fixed path: a handler per method, NULL for a 405. */
static const struct route {
	const char	*path;
	int		 open;		/* answered without the bearer token */
	route_fn	*get, *put, *post;
} routes[] = {
	{ "/healthz",		1, healthz,	 NULL,	    NULL },
	{ "/v1/status",		0, get_status,	 NULL,	    NULL },
	{ "/v1/phase",		0, get_phase,	 put_phase, NULL },
	{ "/v1/phases",		0, get_phases,	 NULL,	    NULL },
	{ "/v1/audit",		0, get_audit,	 NULL,	    NULL },
	{ "/v1/reload",		0, NULL,	 NULL,	    post_reload },
	{ "/v1/sessions",	0, get_sessions, NULL,	    post_session },
	{ "/metrics",		0, get_metrics,	 NULL,	    NULL },
};

/* 405, naming the methods the route has ("use GET or PUT", Allow). */
static enum MHD_Result
not_allowed(struct MHD_Connection *con, const struct route *r)
{
	route_fn *const fns[] = { r->get, r->put, r->post };
	static const char *const names[] = { "GET", "PUT", "POST" };
	char msg[32], allow[32];	/* "use GET or PUT or POST" at most */
	int nm, na = 0;
	size_t i;

	nm = snprintf(msg, sizeof(msg), "use");
	allow[0] = '\0';
	for (i = 0; i < nitems(fns); i++) {
		if (fns[i] == NULL)
			continue;
		nm += snprintf(msg + nm, sizeof(msg) - (size_t)nm, "%s %s",
		    na > 0 ? " or" : "", names[i]);
		na += snprintf(allow + na, sizeof(allow) - (size_t)na, "%s%s",
		    na > 0 ? ", " : "", names[i]);
	}
	return reply_err(con, 405, msg, "Allow", allow);
}

/*
 * libmicrohttpd's own unescaping, but a NUL it decodes (%00) becomes DEL:
 * the handler gets the URL as a C string, and "/v1/sessions/keep%00x"
 * would otherwise reach it as "/v1/sessions/keep".  DEL is a control
 * character, which dispatch() refuses in a path like any other.
 */
static size_t
unescape(void *cls, struct MHD_Connection *con, char *s)
{
	size_t i, n;

	(void)cls;
	(void)con;
	n = MHD_http_unescape(s);
	for (i = 0; i < n; i++)
		if (s[i] == '\0')
			s[i] = 0x7f;
	return n;
}

/* Does the (unescaped) path hold a control character (C0 or DEL)? */
static int
path_has_ctl(const char *url)
{
	const unsigned char *p;

	for (p = (const unsigned char *)url; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 1;
	return 0;
}

static enum MHD_Result
dispatch(struct eg_admin *ad, struct MHD_Connection *con, const char *url,
    enum method m, struct req *rq)
{
	const struct route *r = NULL;
	route_fn *fn;
	size_t i;

	/* before any route or name is looked up: "keep%00x" is no "keep" */
	if (path_has_ctl(url))
		return reply_err(con, 400, "bad path: NUL or another control "
		    "character (after %-decoding)", NULL, NULL);
	for (i = 0; i < nitems(routes) && r == NULL; i++)
		if (strcmp(url, routes[i].path) == 0)
			r = &routes[i];
	if ((r == NULL || !r->open) && !authorized(ad, con))
		return reply_err(con, 401, "missing or wrong bearer token "
		    "(Authorization: Bearer TOKEN from admin_token_file)",
		    "WWW-Authenticate", "Bearer");
	if (r == NULL) {
		if (strncmp(url, "/v1/sessions/", 13) == 0)
			return session_route(ad, con, url + 13, m, rq);
		return reply_err(con, 404, "no such route", NULL, NULL);
	}
	fn = m == M_GET ? r->get : m == M_PUT ? r->put : m == M_POST ?
	    r->post : NULL;
	return fn != NULL ? fn(ad, con, rq) : not_allowed(con, r);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *con, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct eg_admin *ad = cls;
	struct req *rq = *con_cls;
	enum method m;
	size_t n;

	(void)version;
	if (rq == NULL) {
		/* out of memory: refuse the request, not the connection
		 * (the client learns that nothing was done) */
		if ((rq = eg_calloc(1, sizeof(*rq))) == NULL)
			return reply(con, 503, "application/json", OOM_BODY,
			    sizeof(OOM_BODY) - 1, MHD_HTTP_HEADER_CONNECTION,
			    "close");
		*con_cls = rq;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		/* keep the first EG_ADMIN_BODY_MAX bytes; drop the rest */
		n = *upload_data_size;
		if (rq->len + n > sizeof(rq->body)) {
			rq->too_big = 1;
		} else {
			memcpy(rq->body + rq->len, upload_data, n);
			rq->len += n;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		m = M_GET;
	else if (strcmp(method, "PUT") == 0)
		m = M_PUT;
	else if (strcmp(method, "POST") == 0)
		m = M_POST;
	else if (strcmp(method, "DELETE") == 0)
		m = M_DELETE;
	else
		m = M_OTHER;
	return dispatch(ad, con, url, m, rq);
}

static void
on_completed(void *cls, struct MHD_Connection *con, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)con;
	(void)toe;
	eg_free(*con_cls);
	*con_cls = NULL;
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct eg_admin *ad = cls;
	char msg[512];
	size_t n;

	if (!eg_log_enabled(ad->ex, EGRESS_LOG_DEBUG))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	eg_log(ad->ex, EGRESS_LOG_DEBUG, "admin: %s", msg);
}

/* --- listeners ------------------------------------------------------------ */

int
eg_admin_default_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (xdg != NULL && *xdg != '\0')
		n = snprintf(buf, len, "%s/egressd/admin.sock", xdg);
	else
		n = snprintf(buf, len, "/tmp/egressd-%lu/admin.sock",
		    (unsigned long)getuid());
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Create the default socket's folder 0700, or check the existing one. */
static int
default_dir(const char *path, struct eg_err *err)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash;
	struct stat st;

	slash = strrchr(path, '/');
	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
		return eg_err_set(err, EINVAL, "admin %s: bad path", path);
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return eg_err_set(err, errno, "admin: cannot create %s: %s",
		    dir, strerror(errno));
	if (lstat(dir, &st) == -1)
		return eg_err_set(err, errno, "admin: %s: %s", dir,
		    strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0)
		return eg_err_set(err, EPERM, "admin: %s must be a folder "
		    "owned by uid %lu with mode 0700; refusing to use it",
		    dir, (unsigned long)getuid());
	return 0;
}

/* 1 live server (not an error for the default), 0 bound, -1 error. */
static int
listen_unix(struct eg_admin *ad, const char *path, mode_t mode,
    struct eg_err *err)
{
	int fd, rc;

	rc = eg_listen_unix("admin", path, mode, SOMAXCONN, 0, &fd, err);
	if (rc != 0)
		return rc;
	ad->fd = fd;
	ad->path = eg_strdup(path);
	if (ad->path == NULL) {
		unlink(path);	/* admin_free() cannot: it has no path */
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int
listen_tcp(struct eg_admin *ad, const char *text, struct eg_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (eg_cfg_parse_addr(text, strlen(text), &ss, &sl) == -1)
		return eg_err_set(err, EINVAL, "admin %s: expected ADDR:PORT",
		    text);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return eg_err_set(err, errno, "admin %s: %s", text,
		    strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(fd, SOMAXCONN) == -1) {
		eg_err_set(err, errno, "admin %s: %s", text, strerror(errno));
		close(fd);
		return -1;
	}
	ad->fd = fd;
	ad->tcp = 1;
	return 0;
}

/* Read the bearer token (eg_token_read(): the same rules as egressctl). */
static int
read_token(struct eg_admin *ad, const char *file, struct eg_err *err)
{
	char buf[EG_TOKEN_MAX + 1], msg[512];
	const char *why;
	size_t len;

	if (file == NULL)
		return eg_err_set(err, EINVAL, "admin on TCP requires "
		    "admin_token_file");
	if ((why = eg_token_read(file, buf, msg, sizeof(msg))) != NULL)
		return eg_err_set(err, EINVAL, "admin_token_file %s: %s",
		    file, why);
	len = strlen(buf);
	ad->token = eg_strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	if (ad->token == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	ad->toklen = len;
	return 0;
}

static void
admin_free(struct eg_admin *ad)
{
	if (ad == NULL)
		return;
	if (ad->d != NULL)
		MHD_stop_daemon(ad->d);		/* closes ad->fd */
	else if (ad->fd != -1)
		close(ad->fd);
	if (ad->path != NULL)
		unlink(ad->path);
	eg_free(ad->path);
	eg_free(ad->where);
	eg_free(ad->conf);
	if (ad->token != NULL) {
		explicit_bzero(ad->token, ad->toklen);
		eg_free(ad->token);
	}
	pthread_mutex_destroy(&ad->mtx);
	eg_free(ad);
}

static int	admin_adopted(struct egress *, struct eg_err *);
static int	admin_serve(struct egress *, struct eg_admin *,
		    struct eg_err *);

int
eg_admin_start(struct egress *ex, struct eg_err *err)
{
	struct eg_admin *ad;
	const char *admin = ex->cfg->admin;
	char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int rc;

	if (ex->admin != NULL)
		return 0;
	if (ex->admin_fd != -1)
		return admin_adopted(ex, err);
	if (admin != NULL && strcmp(admin, "none") == 0)
		return 0;
	if ((ad = eg_calloc(1, sizeof(*ad))) == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	ad->ex = ex;
	ad->fd = -1;
	pthread_mutex_init(&ad->mtx, NULL);
	if (admin == NULL) {
		if (eg_admin_default_path(def, sizeof(def)) == -1) {
			admin_free(ad);
			return eg_err_set(err, ENAMETOOLONG, "admin: the "
			    "default socket path is too long; set admin =");
		}
		if (default_dir(def, err) == -1) {
			admin_free(ad);
			return -1;
		}
		rc = listen_unix(ad, def, ex->cfg->admin_mode, err);
		if (rc == 1) {
			eg_log(ex, EGRESS_LOG_WARN, "%s; running without an "
			    "admin API (set admin = PATH to have one)",
			    err->msg);
			admin_free(ad);
			return 0;
		}
	} else if (strchr(admin, '/') != NULL)
		rc = listen_unix(ad, admin, ex->cfg->admin_mode, err);
	else {
		rc = read_token(ad, ex->cfg->admin_token_file, err);
		if (rc == 0)
			rc = listen_tcp(ad, admin, err);
	}
	if (rc != 0) {
		admin_free(ad);
		return -1;
	}
	ad->where = eg_strdup(admin != NULL ? admin : def);
	if (admin != NULL && (ad->conf = eg_strdup(admin)) == NULL) {
		admin_free(ad);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return admin_serve(ex, ad, err);
}

/*
 * The admin API on the socket egress_adopt_fd(ex, fd, "admin") handed in
 * (socket activation): admin = is not bound; a TCP socket still needs
 * the token.  The fd is the admin API's from here on (closed by
 * admin_free(), even on failure).
 */
static int
admin_adopted(struct egress *ex, struct eg_err *err)
{
	struct eg_admin *ad;
	struct eg_lsock ls;
	int fd = ex->admin_fd;

	ex->admin_fd = -1;
	if ((ad = eg_calloc(1, sizeof(*ad))) == NULL) {
		close(fd);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	ad->ex = ex;
	ad->fd = fd;
	pthread_mutex_init(&ad->mtx, NULL);
	if (eg_listen_adopt(&ls, fd, err) == -1) {
		admin_free(ad);
		return -1;
	}
	/* MHD's own sockets block; the listener must too (MHD polls it) */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	ad->where = ls.text;	/* not ad->path: never unlinked */
	if (ls.kind == EG_LISTEN_TCP) {
		ad->tcp = 1;
		if (read_token(ad, ex->cfg->admin_token_file, err) == -1) {
			admin_free(ad);
			return -1;
		}
	}
	if (ex->cfg->admin != NULL && (ad->conf = eg_strdup(ex->cfg->admin))
	    == NULL) {
		admin_free(ad);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return admin_serve(ex, ad, err);
}

/* Start the HTTP server on ad->fd (ad->where names it); ad is freed on
 * failure. */
static int
admin_serve(struct egress *ex, struct eg_admin *ad, struct eg_err *err)
{
	unsigned maxc;

	/*
	 * Idle connections must not lock the control plane: up to
	 * admin_max_connections at once (within the descriptor limit), each
	 * closed after admin_idle_timeout seconds without a byte.  poll(),
	 * not select(): descriptors above FD_SETSIZE are normal here.
	 */
	maxc = ex->cfg->admin_max_connections;
	if (ex->fd_limit > 0 && maxc > ex->fd_limit / 4) {
		maxc = ex->fd_limit / 4 > 0 ? ex->fd_limit / 4 : 1;
		eg_log(ex, EGRESS_LOG_WARN, "admin: admin_max_connections "
		    "%u is more than a quarter of the descriptor limit (%u); "
		    "using %u", ex->cfg->admin_max_connections, ex->fd_limit,
		    maxc);
	}
	ad->d = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
	    0, NULL, NULL, on_request, ad,
	    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)ad->fd,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, ad,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape, ad,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, ad,
	    MHD_OPTION_CONNECTION_LIMIT, maxc,
	    MHD_OPTION_CONNECTION_TIMEOUT, ex->cfg->admin_idle_timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
	    MHD_OPTION_END);
	if (ad->d == NULL || ad->where == NULL) {
		eg_err_set(err, EIO, "admin %s: cannot start the HTTP server",
		    ad->where != NULL ? ad->where : "(out of memory)");
		admin_free(ad);
		return -1;
	}
	ex->admin = ad;
	eg_log(ex, EGRESS_LOG_INFO, "admin API on %s", ad->where);
	return 0;
}

int
eg_admin_tcp_addr(const struct egress *ex, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if (ex->admin == NULL || !ex->admin->tcp)
		return 0;
	memset(ss, 0, sizeof(*ss));
	if (getsockname(ex->admin->fd, (struct sockaddr *)ss, &len) == -1)
		return 0;
	return 1;
}

void
eg_admin_stop(struct egress *ex)
{
	struct eg_admin *ad;

	if (ex == NULL || (ad = ex->admin) == NULL)
		return;
	ex->admin = NULL;
	admin_free(ad);
}
