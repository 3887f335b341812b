/*
 * admin-routes.c: the admin API's routes (SPEC "Admin API"): a table of
 * paths with a handler per method, the session routes below
 * /v1/sessions/NAME, and the JSON answers.  Handlers change the proxy
 * only through egress.h's control calls and read the configuration under
 * egress.lock; the server around them is admin.c.
 */
#include "egress-int.h"

#include <dirent.h>
#include <pthread.h>
#include <strings.h>

#include <microhttpd.h>

#include "admin-int.h"
#include "audit.h"
#include "buf.h"
#include "cfg.h"
#include "core.h"
#include "event.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "sessbody.h"
#include "session.h"
#include "sessref.h"
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

/* GET of s's phase: {"phase":NAME,"mode":...,"allow":[...]}. */
static enum MHD_Result
reply_phase(struct egress *ex, struct MHD_Connection *con,
    struct eg_session *s)
{
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);
	const struct eg_phase *p;

	pthread_rwlock_rdlock(&ex->lock);
	p = s->phase;
	eg_buf_str(&j, "{\"phase\":");
	eg_buf_json_str(&j, p->name);
	eg_buf_add(&j, ",", 1);
	json_allow(&j, p);
	eg_buf_add(&j, "}", 1);
	pthread_rwlock_unlock(&ex->lock);
	return reply_json(con, 200, &j);
}

static enum MHD_Result
get_phase(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	(void)rq;
	return reply_phase(ad->ex, con, &ad->ex->def);
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

/*
 * The 200 of a phase switch, built on the stack (ANSWER_MAX): once the
 * switch is made, its answer cannot fail for want of memory.
 */
static enum MHD_Result
reply_switched(struct MHD_Connection *con, const char *name,
    const char *prev, unsigned closed)
{
	char answer[ANSWER_MAX];
	struct eg_buf j;

	eg_buf_init(&j, answer, sizeof(answer));
	eg_buf_str(&j, "{\"phase\":");
	eg_buf_json_str(&j, name);
	eg_buf_str(&j, ",\"previous\":");
	eg_buf_json_str(&j, prev);
	eg_buf_str(&j, ",\"closed\":");
	eg_buf_u64(&j, closed);
	eg_buf_add(&j, "}", 1);
	return reply_json(con, 200, &j);
}

/* The body of a PUT .../phase: the phase's name into name, or NULL and
 * *why (the 400's message). */
static const char *
read_phase(struct MHD_Connection *con, const struct req *rq, char *name,
    size_t cap, const char **why)
{
	if ((*why = json_body_refusal(con, rq)) != NULL)
		return NULL;
	if (eg_admin_parse_phase(rq->body, rq->len, name, cap, why) == -1)
		return NULL;
	return name;
}

/*
 * PUT /v1/phase (sess NULL: the proxy's phase, refused while shutting
 * down) and PUT /v1/sessions/NAME/phase (sess: NAME).
 */
static enum MHD_Result
switch_phase(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq, const char *sess)
{
	struct egress *ex = ad->ex;
	char name[EG_PHASE_NAME_MAX + 1], prev[EG_PHASE_NAME_MAX + 1];
	char msg[600];
	const char *why;
	unsigned closed = 0;
	int rc, e;

	if (read_phase(con, rq, name, sizeof(name), &why) == NULL)
		return reply_err(con, 400, why, NULL, NULL);
	if (sess == NULL && eg_stopping(ex))
		return reply_err(con, 503, "shutting down", NULL, NULL);
	pthread_mutex_lock(&ad->mtx);
	if (sess == NULL)
		egress_phase(ex, prev, sizeof(prev));
	else
		egress_session_phase(ex, sess, prev, sizeof(prev));
	errno = 0;
	rc = sess == NULL ? egress_set_phase(ex, name, "admin", &closed) :
	    egress_session_set_phase(ex, sess, name, "admin", &closed);
	e = errno;
	if (rc == -1)
		snprintf(msg, sizeof(msg), "%s", egress_errmsg(ex));
	pthread_mutex_unlock(&ad->mtx);
	if (rc == -1)
		return reply_err(con, e == ENOENT ? 404 : 500, msg, NULL,
		    NULL);
	return reply_switched(con, name, prev, closed);
}

static enum MHD_Result
put_phase(struct eg_admin *ad, struct MHD_Connection *con, struct req *rq)
{
	return switch_phase(ad, con, rq, NULL);
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

/*
 * GET .../audit: the lines after since= (a seq), at most limit= of them,
 * from s's ring, or the audit log's when s is NULL or has none.
 */
static enum MHD_Result
reply_audit(struct eg_admin *ad, struct MHD_Connection *con,
    struct eg_session *s)
{
	const char *q;
	uint64_t since = 0, limit = 100;
	enum MHD_Result rc;
	size_t cap, n;
	char *buf;

	q = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "since");
	if (q != NULL && parse_u64(q, &since) == -1)
		return reply_err(con, 400, "since: expected a decimal seq",
		    NULL, NULL);
	q = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "limit");
	if (q != NULL && (parse_u64(q, &limit) == -1 || limit == 0 ||
	    limit > EG_ADMIN_AUDIT_MAX))
		return reply_err(con, 400, "limit: expected 1 to 1000",
		    NULL, NULL);
	cap = (size_t)limit * (EG_AUDIT_LINE + 32) + 16;
	if ((buf = eg_malloc(cap)) == NULL)
		return reply_err(con, 500, "out of memory", NULL, NULL);
	n = s != NULL && s->ring != NULL ? eg_ring_json(s->ring, since,
	    (unsigned)limit, buf, cap - 1) : eg_audit_ring_json(ad->ex->audit,
	    since, (unsigned)limit, buf, cap - 1);
	buf[n++] = '\n';
	rc = reply(con, 200, "application/json", buf, n, NULL, NULL);
	eg_free(buf);
	return rc;
}

static enum MHD_Result
get_audit(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	(void)rq;
	return reply_audit(ad, con, NULL);
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

/* Let go of the request's session (before a change that may wait for
 * its connections); idempotent. */
static void
sess_drop(struct req *rq)
{
	eg_session_unref(rq->sess);
	rq->sess = NULL;
}

/* GET /v1/sessions/NAME */
static enum MHD_Result
sess_get(struct eg_admin *ad, struct MHD_Connection *con, struct req *rq)
{
	struct eg_buf j = EG_BUF_HEAP(JSON_MAX);

	pthread_rwlock_rdlock(&ad->ex->lock);
	json_session(&j, rq->sess);
	pthread_rwlock_unlock(&ad->ex->lock);
	sess_drop(rq);
	return reply_json(con, 200, &j);
}

/* DELETE /v1/sessions/NAME: the 200 is built on the stack (no heap). */
static enum MHD_Result
sess_delete(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	struct egress *ex = ad->ex;
	char msg[600], answer[ANSWER_MAX];
	unsigned closed = 0;
	struct eg_buf j;
	int rc, e;

	sess_drop(rq);
	pthread_mutex_lock(&ad->mtx);
	errno = 0;
	rc = egress_session_delete(ex, rq->name, "admin", &closed);
	e = errno;
	if (rc == -1)
		snprintf(msg, sizeof(msg), "%s", egress_errmsg(ex));
	pthread_mutex_unlock(&ad->mtx);
	if (rc == -1)
		return reply_err(con, session_status(e), msg, NULL, NULL);
	eg_buf_init(&j, answer, sizeof(answer));
	eg_buf_str(&j, "{\"name\":");
	eg_buf_json_str(&j, rq->name);
	eg_buf_str(&j, ",\"closed\":");
	eg_buf_u64(&j, closed);
	eg_buf_add(&j, "}", 1);
	return reply_json(con, 200, &j);
}

/* GET /v1/sessions/NAME/phase */
static enum MHD_Result
sess_phase_get(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	return reply_phase(ad->ex, con, rq->sess);
}

/* PUT /v1/sessions/NAME/phase */
static enum MHD_Result
sess_phase_put(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	sess_drop(rq);
	return switch_phase(ad, con, rq, rq->name);
}

/* GET /v1/sessions/NAME/audit: its own ring, else the audit log's. */
static enum MHD_Result
sess_audit(struct eg_admin *ad, struct MHD_Connection *con,
    struct req *rq)
{
	return reply_audit(ad, con, rq->sess);
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

/* A route: a handler per method (by enum method), NULL for a 405. */
struct route {
	const char	*path;
	int		 open;		/* answered without the bearer token */
	route_fn	*fn[M_OTHER];	/* GET (and HEAD), PUT, POST, DELETE */
};

/* The routes with a fixed path. */
static const struct route routes[] = {
	{ "/healthz",		1, { healthz } },
	{ "/v1/status",		0, { get_status } },
	{ "/v1/phase",		0, { get_phase, put_phase } },
	{ "/v1/phases",		0, { get_phases } },
	{ "/v1/audit",		0, { get_audit } },
	{ "/v1/reload",		0, { NULL, NULL, post_reload } },
	{ "/v1/sessions",	0, { get_sessions, NULL, post_session } },
	{ "/metrics",		0, { get_metrics } },
};

/* The routes below /v1/sessions/NAME (SPEC "Sessions"): rq->sess is
 * NAME's, held until the handler calls sess_drop() (or it returns). */
static const struct route sess_routes[] = {
	{ "",		0, { sess_get, NULL, NULL, sess_delete } },
	{ "phase",	0, { sess_phase_get, sess_phase_put } },
	{ "audit",	0, { sess_audit } },
};

static const struct route *
route_find(const struct route *r, size_t n, const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(path, r[i].path) == 0)
			return &r[i];
	return NULL;
}

/* 405, naming the methods the route has ("use GET or PUT", Allow). */
static enum MHD_Result
not_allowed(struct MHD_Connection *con, const struct route *r)
{
	static const char *const names[M_OTHER] = { "GET", "PUT", "POST",
	    "DELETE" };
	char msg[48], allow[48];	/* "use GET or PUT or POST or DELETE" */
	int nm, na = 0;
	size_t i;

	nm = snprintf(msg, sizeof(msg), "use");
	allow[0] = '\0';
	for (i = 0; i < M_OTHER; i++) {
		if (r->fn[i] == NULL)
			continue;
		nm += snprintf(msg + nm, sizeof(msg) - (size_t)nm, "%s %s",
		    na > 0 ? " or" : "", names[i]);
		na += snprintf(allow + na, sizeof(allow) - (size_t)na, "%s%s",
		    na > 0 ? ", " : "", names[i]);
	}
	return reply_err(con, 405, msg, "Allow", allow);
}

/* Route r's handler for method m, or its 405. */
static enum MHD_Result
route_call(struct eg_admin *ad, struct MHD_Connection *con,
    const struct route *r, enum method m, struct req *rq)
{
	route_fn *fn = m < M_OTHER ? r->fn[m] : NULL;

	return fn != NULL ? fn(ad, con, rq) : not_allowed(con, r);
}

/* /v1/sessions/REST: NAME, NAME/phase or NAME/audit. */
static enum MHD_Result
session_route(struct eg_admin *ad, struct MHD_Connection *con,
    const char *rest, enum method m, struct req *rq)
{
	const char *slash = strchr(rest, '/');
	size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
	const struct route *r;
	enum MHD_Result rc;
	char msg[600];

	r = route_find(sess_routes, nitems(sess_routes), slash ? slash + 1 :
	    "");
	if (r == NULL)
		return reply_err(con, 404, "no such route", NULL, NULL);
	if (!(len == 7 && memcmp(rest, "default", 7) == 0) &&
	    !eg_session_name_ok(rest, len))
		return reply_err(con, 404, "no such session (a session name "
		    "is 1 to 64 of A-Z a-z 0-9 _ . -, not beginning with . "
		    "or -)", NULL, NULL);
	memcpy(rq->name, rest, len);
	rq->name[len] = '\0';
	if ((rq->sess = eg_session_get(ad->ex, rq->name, len)) == NULL) {
		snprintf(msg, sizeof(msg), "session '%s' does not exist",
		    rq->name);
		return reply_err(con, 404, msg, NULL, NULL);
	}
	rc = route_call(ad, con, r, m, rq);
	sess_drop(rq);
	return rc;
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

enum MHD_Result
eg_admin_dispatch(struct eg_admin *ad, struct MHD_Connection *con,
    const char *url, enum method m, struct req *rq)
{
	const struct route *r;

	/* before any route or name is looked up: "keep%00x" is no "keep" */
	if (path_has_ctl(url))
		return reply_err(con, 400, "bad path: NUL or another control "
		    "character (after %-decoding)", NULL, NULL);
	r = route_find(routes, nitems(routes), url);
	if ((r == NULL || !r->open) && !authorized(ad, con))
		return reply_err(con, 401, "missing or wrong bearer token "
		    "(Authorization: Bearer TOKEN from admin_token_file)",
		    "WWW-Authenticate", "Bearer");
	if (r == NULL) {
		if (strncmp(url, "/v1/sessions/", 13) == 0)
			return session_route(ad, con, url + 13, m, rq);
		return reply_err(con, 404, "no such route", NULL, NULL);
	}
	return route_call(ad, con, r, m, rq);
}

enum MHD_Result
eg_admin_oom(struct MHD_Connection *con)
{
	return reply(con, 503, "application/json", OOM_BODY,
	    sizeof(OOM_BODY) - 1, MHD_HTTP_HEADER_CONNECTION, "close");
}

void
eg_admin_req_free(struct req *rq)
{
	if (rq == NULL)
		return;
	sess_drop(rq);
	eg_free(rq);
}
