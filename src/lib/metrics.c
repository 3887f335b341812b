/*
 * metrics.c: the counters and histograms behind GET /metrics, rendered as
 * Prometheus text exposition format 0.0.4.  Loop threads update them:
 * plain counters with relaxed atomics, the labelled decision and close
 * counters too, in arrays indexed by the event's enums (verdict and
 * reason, end); the phase label, only known at run time, by a row per
 * phase name that each phase of a snapshot points at
 * (eg_metrics_register()).
 */
#include "egress-int.h"

#include <pthread.h>

#include "audit.h"
#include "buf.h"
#include "event.h"
#include "metrics.h"
#include "policy.h"
#include "shared.h"

/* longest label value kept (a phase name, whole), with its NUL */
#define LABEL_MAX	(EG_PHASE_NAME_MAX + 1)
#define TABLE_MAX	4096	/* phase names kept (rows of counters) */

/* Histogram bucket upper bounds, in microseconds (0.001 s .. 10 s). */
static const uint64_t bucket_us[] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000
};
#define NBUCKET	nitems(bucket_us)

struct hist {
	uint64_t	 le[NBUCKET];	/* per bucket; summed on render */
	uint64_t	 inf;		/* above the last bound */
	uint64_t	 sum_us;
};

#define NVERDICT	3	/* EGRESS_EV_ALLOW, _BLOCK, _FAIL */
_Static_assert(EGRESS_EV_ALLOW == 0 && EGRESS_EV_BLOCK == 1 &&
    EGRESS_EV_FAIL == 2, "verdicts index the counters");

/*
 * egressd_decisions_total for one phase name: by verdict and reason.
 * ALLOW counts at EG_R_NONE, or at EG_R_NOT_ALLOWED in report mode
 * (labelled report:not_allowed).  Rows are never freed before the
 * metrics: a phase of any snapshot may point at its row.
 */
struct eg_mrow {
	struct eg_mrow	*next;		/* in the order names were seen */
	char		 phase[LABEL_MAX];
	uint64_t	 n[NVERDICT][EG_R_COUNT];	/* atomic */
};

/* egressd_route_requests_total for one route name and status */
#define RROW_MAX	4096
struct rrow {
	struct rrow	*next;
	char		 route[65];
	int		 status;
	uint64_t	 n;		/* under the metrics' mtx */
};

struct eg_metrics {
	pthread_mutex_t	 mtx;		/* guards the row list */
	struct eg_mrow	*rows, **tail;
	size_t		 nrows;
	uint64_t	 dec_dropped;	/* atomic: a phase without a row */
	uint64_t	 ends[EG_END_COUNT];	/* atomic: CLOSE by end */

	uint64_t	 bytes_up, bytes_down;	/* atomic */
	uint64_t	 phase_switches;	/* atomic */
	uint64_t	 budget_exhausted;	/* atomic */
	uint64_t	 reloads_ok, reloads_err;	/* atomic */
	struct hist	 hist[3];		/* atomic fields */
	struct rrow	*rrows;		/* routes' requests; under mtx */
	size_t		 nrrows;
};

struct eg_metrics *
eg_metrics_new(void)
{
	struct eg_metrics *m;

	if ((m = eg_calloc(1, sizeof(*m))) == NULL)
		return NULL;
	pthread_mutex_init(&m->mtx, NULL);
	m->tail = &m->rows;
	return m;
}

void
eg_metrics_free(struct eg_metrics *m)
{
	struct eg_mrow *r;

	if (m == NULL)
		return;
	pthread_mutex_destroy(&m->mtx);
	while (m->rrows != NULL) {
		struct rrow *rr = m->rrows;

		m->rrows = rr->next;
		eg_free(rr);
	}
	while ((r = m->rows) != NULL) {
		m->rows = r->next;
		eg_free(r);
	}
	eg_free(m);
}

static void
add64(uint64_t *p, uint64_t v)
{
	__atomic_add_fetch(p, v, __ATOMIC_RELAXED);
}

static uint64_t
load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void
eg_metrics_budget_exhausted(struct eg_metrics *m)
{
	if (m != NULL)
		add64(&m->budget_exhausted, 1);
}

/* Copy a label value, cut at LABEL_MAX - 1 bytes. */
static void
label_copy(char dst[LABEL_MAX], const char *src)
{
	size_t n;

	if (src == NULL)
		src = "";
	n = strnlen(src, LABEL_MAX - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

void
eg_metrics_register(struct eg_metrics *m, struct eg_phase *ph, size_t n)
{
	char name[LABEL_MAX];
	struct eg_mrow *r;
	size_t i;

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mtx);
	for (i = 0; i < n; i++) {
		label_copy(name, ph[i].name);
		for (r = m->rows; r != NULL; r = r->next)
			if (strcmp(r->phase, name) == 0)
				break;
		if (r == NULL && m->nrows < TABLE_MAX &&
		    (r = eg_calloc(1, sizeof(*r))) != NULL) {
			memcpy(r->phase, name, sizeof(name));
			*m->tail = r;
			m->tail = &r->next;
			m->nrows++;
		}
		ph[i].mrow = r;
	}
	pthread_mutex_unlock(&m->mtx);
}

void
eg_metrics_event(struct eg_metrics *m, const struct eg_event *ev)
{
	enum eg_reason r;
	enum eg_end e;

	if (m == NULL || ev == NULL)
		return;
	switch (ev->type) {
	case EGRESS_EV_ALLOW:
	case EGRESS_EV_BLOCK:
	case EGRESS_EV_FAIL:
		if (ev->type == EGRESS_EV_ALLOW)
			/* report mode: labelled so learned traffic stands
			 * apart */
			r = ev->report ? EG_R_NOT_ALLOWED : EG_R_NONE;
		else
			r = ev->reason;
		if (ev->phase == NULL || ev->phase->mrow == NULL ||
		    (unsigned)r >= EG_R_COUNT)
			add64(&m->dec_dropped, 1);
		else
			add64(&ev->phase->mrow->n[ev->type][r], 1);
		break;
	case EGRESS_EV_CLOSE:
		add64(&m->bytes_up, ev->up);
		add64(&m->bytes_down, ev->down);
		e = ev->end == EG_END_NONE || (unsigned)ev->end >=
		    EG_END_COUNT ? EG_END_ERROR : ev->end;
		add64(&m->ends[e], 1);
		break;
	case EGRESS_EV_PHASE:
		add64(&m->phase_switches, 1);
		break;
	case EGRESS_EV_SESSION:
		break;
	}
}

void
eg_metrics_observe(struct eg_metrics *m, enum eg_hist h, uint64_t us)
{
	struct hist *hi;
	size_t i;

	if (m == NULL || (size_t)h >= nitems(m->hist))
		return;
	hi = &m->hist[h];
	for (i = 0; i < NBUCKET; i++)
		if (us <= bucket_us[i])
			break;
	add64(i < NBUCKET ? &hi->le[i] : &hi->inf, 1);
	add64(&hi->sum_us, us);
}

void
eg_metrics_route(struct eg_metrics *m, const char *route, int status,
    uint64_t us)
{
	struct rrow *r;

	if (m == NULL)
		return;
	eg_metrics_observe(m, EG_HIST_ROUTE, us);
	pthread_mutex_lock(&m->mtx);
	for (r = m->rrows; r != NULL; r = r->next)
		if (r->status == status && strcmp(r->route, route) == 0)
			break;
	if (r == NULL && m->nrrows < RROW_MAX &&
	    (r = eg_calloc(1, sizeof(*r))) != NULL) {
		snprintf(r->route, sizeof(r->route), "%s", route);
		r->status = status;
		r->next = m->rrows;
		m->rrows = r;
		m->nrrows++;
	}
	if (r != NULL)
		r->n++;
	pthread_mutex_unlock(&m->mtx);
}

void
eg_metrics_reload(struct eg_metrics *m, int ok)
{
	if (m != NULL)
		add64(ok ? &m->reloads_ok : &m->reloads_err, 1);
}

/* --- rendering ------------------------------------------------------------ */

/* A label value, escaped per the text format: \\, \" and \n. */
static void
out_label(struct eg_buf *o, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			eg_buf_add(o, "\\\\", 2);
		else if (*s == '"')
			eg_buf_add(o, "\\\"", 2);
		else if (*s == '\n')
			eg_buf_add(o, "\\n", 2);
		else
			eg_buf_add(o, s, 1);
	}
}

static void
out_head(struct eg_buf *o, const char *name, const char *type,
    const char *help)
{
	eg_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric of one sample without labels: HELP, TYPE and the value. */
static void
out_one(struct eg_buf *o, const char *name, const char *type,
    const char *help, uint64_t v)
{
	out_head(o, name, type, help);
	eg_buf_printf(o, "%s %llu\n", name, (unsigned long long)v);
}

/* A counter of two samples, one label's two values a and b. */
static void
out_two(struct eg_buf *o, const char *name, const char *help,
    const char *label, const char *a, uint64_t va, const char *b,
    uint64_t vb)
{
	out_head(o, name, "counter", help);
	eg_buf_printf(o, "%s{%s=\"%s\"} %llu\n", name, label, a,
	    (unsigned long long)va);
	eg_buf_printf(o, "%s{%s=\"%s\"} %llu\n", name, label, b,
	    (unsigned long long)vb);
}

/* Seconds with microsecond precision, as the format's float. */
static void
out_seconds(struct eg_buf *o, uint64_t us)
{
	eg_buf_printf(o, "%llu.%06llu", (unsigned long long)(us / 1000000),
	    (unsigned long long)(us % 1000000));
}

/* A bucket bound in seconds, shortest form: 0.001, 0.0025, 1, 10. */
static void
out_bound(struct eg_buf *o, uint64_t us)
{
	char frac[8];
	int n;

	n = snprintf(frac, sizeof(frac), "%06llu",
	    (unsigned long long)(us % 1000000));
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	eg_buf_printf(o, "%llu%s%s", (unsigned long long)(us / 1000000),
	    n > 0 ? "." : "", frac);
}

static void
render_hist(struct eg_buf *o, const char *name, const char *help,
    const struct hist *hi)
{
	uint64_t cum = 0;
	size_t i;

	out_head(o, name, "histogram", help);
	for (i = 0; i < NBUCKET; i++) {
		cum += load64(&hi->le[i]);
		eg_buf_printf(o, "%s_bucket{le=\"", name);
		out_bound(o, bucket_us[i]);
		eg_buf_printf(o, "\"} %llu\n", (unsigned long long)cum);
	}
	cum += load64(&hi->inf);
	/* _count is the buckets' total, so the three always agree */
	eg_buf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name,
	    (unsigned long long)cum);
	eg_buf_printf(o, "%s_sum ", name);
	out_seconds(o, load64(&hi->sum_us));
	eg_buf_printf(o, "\n%s_count %llu\n", name, (unsigned long long)cum);
}

int
eg_metrics_render(struct eg_metrics *m, const struct eg_metrics_gauges *g,
    struct eg_buf *o)
{
	const struct eg_mrow *row;
	unsigned t, r, e;
	uint64_t n;

	out_head(o, "egressd_decisions_total", "counter",
	    "Verdicts by event (ALLOW, BLOCK, FAIL), reason and phase; "
	    "reason is empty for ALLOW, report:REASON in report mode.");
	/* by event, then reason, then phase (in the order names were
	 * first seen) */
	pthread_mutex_lock(&m->mtx);
	for (t = 0; t < NVERDICT; t++)
		for (r = 0; r < EG_R_COUNT; r++)
			for (row = m->rows; row != NULL; row = row->next) {
				if ((n = load64(&row->n[t][r])) == 0)
					continue;
				eg_buf_str(o, "egressd_decisions_total{"
				    "event=\"");
				eg_buf_str(o, eg_event_name(
				    (enum egress_event_type)t));
				eg_buf_str(o, "\",reason=\"");
				if (r != EG_R_NONE) {
					if (t == EGRESS_EV_ALLOW)
						eg_buf_str(o, "report:");
					eg_buf_str(o, eg_reason_name[r]);
				}
				eg_buf_str(o, "\",phase=\"");
				out_label(o, row->phase);
				eg_buf_printf(o, "\"} %llu\n",
				    (unsigned long long)n);
			}
	pthread_mutex_unlock(&m->mtx);

	out_one(o, "egressd_connections_active", "gauge",
	    "Client connections open now.", g ? g->active : 0);
	out_one(o, "egressd_connections_max", "gauge",
	    "The max_connections limit (client connections at once).",
	    g ? g->max_connections : 0);
	out_one(o, "egressd_connections_total", "counter",
	    "Client connections accepted since start.",
	    g ? g->total : 0);

	out_two(o, "egressd_bytes_total",
	    "Tunnelled bytes of ended connections, up (client to upstream) "
	    "and down.", "direction", "up", load64(&m->bytes_up), "down",
	    load64(&m->bytes_down));

	out_head(o, "egressd_tunnels_closed_total", "counter",
	    "CLOSE events by end reason.");
	for (e = 0; e < EG_END_COUNT; e++) {
		if ((n = load64(&m->ends[e])) == 0)
			continue;
		eg_buf_str(o, "egressd_tunnels_closed_total{end=\"");
		eg_buf_str(o, eg_end_name[e]);
		eg_buf_printf(o, "\"} %llu\n", (unsigned long long)n);
	}

	render_hist(o, "egressd_dns_duration_seconds",
	    "Name resolution time.", &m->hist[EG_HIST_DNS]);
	render_hist(o, "egressd_connect_duration_seconds",
	    "Upstream TCP connect time.", &m->hist[EG_HIST_CONNECT]);

	out_head(o, "egressd_route_requests_total", "counter",
	    "Route requests answered, by route and upstream status.");
	pthread_mutex_lock(&m->mtx);
	{
		const struct rrow *rr;

		for (rr = m->rrows; rr != NULL; rr = rr->next) {
			eg_buf_str(o, "egressd_route_requests_total{route=\"");
			out_label(o, rr->route);
			eg_buf_printf(o, "\",status=\"%d\"} %llu\n",
			    rr->status, (unsigned long long)rr->n);
		}
	}
	pthread_mutex_unlock(&m->mtx);
	render_hist(o, "egressd_route_duration_seconds",
	    "Route requests, from ALLOW to the end of the response.",
	    &m->hist[EG_HIST_ROUTE]);

	out_one(o, "egressd_phase_switches_total", "counter",
	    "Phase switches (PHASE audit events).", load64(&m->phase_switches));
	out_one(o, "egressd_budget_exhausted_total", "counter",
	    "Budgets spent: a session's up, down or requests budget of its "
	    "phase, counted once each time the count crosses the limit.",
	    load64(&m->budget_exhausted));
	out_two(o, "egressd_reloads_total",
	    "Configuration reloads by result.", "result", "ok",
	    load64(&m->reloads_ok), "error", load64(&m->reloads_err));

	out_one(o, "egressd_audit_write_errors_total", "counter",
	    "Audit lines that could not be written (an ALLOW among them is "
	    "refused with 503).",
	    g ? g->audit_write_errors : 0);

	out_head(o, "egressd_phase_info", "gauge",
	    "The current phase (value always 1).");
	eg_buf_str(o, "egressd_phase_info{phase=\"");
	out_label(o, g != NULL && g->phase != NULL ? g->phase : "");
	eg_buf_str(o, "\"} 1\n");
	out_one(o, "egressd_sessions", "gauge",
	    "Sessions open now, not counting the default one.",
	    g ? g->sessions : 0);
	out_one(o, "egressd_uptime_seconds", "gauge",
	    "Seconds since the proxy started.", g ? g->uptime_s : 0);
	/* the names every Prometheus client library uses for these */
	if (g != NULL && g->open_fds >= 0)
		out_one(o, "process_open_fds", "gauge",
		    "Number of open file descriptors.",
		    (uint64_t)g->open_fds);
	if (g != NULL && g->max_fds > 0)
		out_one(o, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.", g->max_fds);
	return eg_buf_failed(o) ? -1 : 0;
}
