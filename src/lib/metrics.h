/*
 * metrics.h: counters and histograms for GET /metrics (Prometheus text
 * format 0.0.4).  Updated from every loop thread with atomics; rendered
 * by the admin thread.
 */
#ifndef EG_METRICS_H
#define EG_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "egress.h"

struct eg_metrics;

enum eg_hist {
	EG_HIST_DNS,		/* name resolution, microseconds */
	EG_HIST_CONNECT,	/* upstream connect, microseconds */
	EG_HIST_ROUTE		/* a route request, ALLOW to its end */
};

struct eg_metrics	*eg_metrics_new(void);
void			 eg_metrics_free(struct eg_metrics *);

struct eg_event;
struct eg_phase;

/*
 * Give each phase of a snapshot its row of decision counters (one per
 * phase name, kept across reloads), before the snapshot is published:
 * events then count by the phase's row and the event's enums, no label
 * compares.  A phase without a row (TABLE_MAX names, or no memory) is
 * counted as dropped.  Any thread but not concurrently with itself.
 */
void	eg_metrics_register(struct eg_metrics *, struct eg_phase *, size_t);
/* Count one audit event (decisions by event, reason, phase; closes by
 * end and bytes from CLOSE; phase switches from PHASE).  Any thread. */
void	eg_metrics_event(struct eg_metrics *, const struct eg_event *);
void	eg_metrics_observe(struct eg_metrics *, enum eg_hist, uint64_t us);
/* A session's budget was spent (egressd_budget_exhausted_total). */
void	eg_metrics_budget_exhausted(struct eg_metrics *);
void	eg_metrics_reload(struct eg_metrics *, int ok);
/* A route request answered: egressd_route_requests_total{route,status}
 * and the route latency histogram.  Any thread. */
void	eg_metrics_route(struct eg_metrics *, const char *route, int status,
	    uint64_t us);

/* Gauges the renderer reads from the proxy. */
struct eg_metrics_gauges {
	const char	*phase;
	uint64_t	 active;
	uint64_t	 total;
	uint64_t	 uptime_s;
	uint64_t	 audit_write_errors;	/* eg_audit_health() */
	uint64_t	 sessions;	/* not counting default */
	/* for alerts on limits (contrib/prometheus/egressd-rules.yml) */
	uint64_t	 max_connections;	/* the configured limit */
	int64_t		 open_fds;	/* -1: unknown (not rendered) */
	uint64_t	 max_fds;	/* RLIMIT_NOFILE soft; 0: unknown */
};

/* Append the exposition text to b; 0, or -1 if b overflowed (its
 * error says how; see buf.h). */
struct eg_buf;
int	eg_metrics_render(struct eg_metrics *,
	    const struct eg_metrics_gauges *, struct eg_buf *b);

#endif
