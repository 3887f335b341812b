/*
 * audit.h: the audit log.  Only audit.c formats audit lines.  Each line
 * is built in a stack buffer and written with one write(2); the most
 * recent events are also kept in a ring for GET /v1/audit (each as the
 * event and its strings; the JSON is made when the ring is read).
 */
#ifndef EG_AUDIT_H
#define EG_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "egress.h"
#include "err.h"

#define EG_AUDIT_LINE	4096	/* longest line; values are truncated */
#define EG_AUDIT_STALL_MS 5000	/* longest wait for a full pipe to drain */
/* room a chained line needs beyond EG_AUDIT_LINE: its chain= and the
 * CHECKPOINT line that may follow it in the same write(2) */
#define EG_AUDIT_CHAIN_ROOM 1024

struct eg_audit;
struct eg_ring;
struct eg_audit_ops;
struct eg_chain_params;

/* path "-" is standard output; "none" discards; "journal" sends each
 * line to the systemd journal with fields (libsystemd builds only),
 * "syslog" or "syslog:FACILITY" to syslog(3).  NULL on error. */
struct eg_audit	*eg_audit_open(const char *path, int json, unsigned ring,
		    struct eg_err *err);
/* Is path a valid audit_log sink ("journal" in a build without
 * libsystemd, "syslog:bogus" are not)?  0, or -1 with err (cfg.c). */
int		 eg_audit_sink_check(const char *path, struct eg_err *err);
/* A session's own file (egress_session_set_audit()): O_NOFOLLOW, 0600,
 * no ring. */
struct eg_audit	*eg_audit_open_private(const char *path, int json,
		    struct eg_err *err);
/*
 * Chain the log (the record module's ops): continue the chain of the
 * file's last line if it has one, write its START line, and with a key
 * and interval_ms > 0 start the checkpoint timer.  Before any other
 * writer uses a.  A log that discards ("none") stays unchained.  0, or
 * -1 with err.
 */
int		 eg_audit_chain(struct eg_audit *a,
		    const struct eg_audit_ops *ops,
		    const struct eg_chain_params *p, unsigned interval_ms,
		    struct eg_err *err);
/* Chain head and lines of the current file; -1 (ENOTSUP) unchained. */
int		 eg_audit_head(struct eg_audit *a, char head[65],
		    uint64_t *lines);
/* Reopen the same path (log rotation); the fd number stays the same.
 * A chained log ends the old file with a CHECKPOINT (with a key) and
 * begins the new one with START prev=<the old file's last chain>. */
int		 eg_audit_reopen(struct eg_audit *, struct eg_err *err);
/* Switch to another path/format (reload); on error nothing changes. */
int		 eg_audit_reconfigure(struct eg_audit *, const char *path,
		    int json, struct eg_err *err);
/* Closes (a chained, keyed log's last line is a CHECKPOINT). */
void		 eg_audit_close(struct eg_audit *);

/*
 * Format and write one event (one write(2)), and record it in the ring.
 * Returns 0, or -1 if the write failed (errno says why): the failure is
 * counted and the log is "failing" until a later write succeeds.  A failed
 * ALLOW is not put in the ring (the caller refuses the request instead);
 * any other event is.  *change (if not NULL) is 1 when this write made the
 * log failing, -1 when it made it healthy again, else 0 (for logging the
 * transitions only).
 */
int		 eg_audit_emit(struct eg_audit *, const struct egress_event *,
		    int *change);

/*
 * A loop thread's batch of lines for the main log (worker.c owns one per
 * worker, event.c fills it).  A line that may wait (wait = 1: the CLOSE
 * of a request or tunnel that ended as it should) is kept here; any other
 * line of the thread is written in one write(2) with the lines waiting
 * before it, so a kept-alive request costs one write(2) for its CLOSE and
 * the next request's ALLOW.  What waits is written by
 * eg_audit_batch_flush() at the latest EG_AUDIT_BATCH_MS after it came
 * (the worker's timer) and when the worker stops.  Only an unchained
 * file (or standard output) is batched, never a session's own file or
 * a chained log.  Decisions never wait.
 */
#define EG_AUDIT_BATCH_BYTES	4096	/* PIPE_BUF: one write to a pipe
					   stays whole */
#define EG_AUDIT_BATCH_MS	20	/* more than a clock tick (HZ 100 and up): a
					   shorter epoll_wait() timeout costs
					   ~1.8 us a wait (bench/epoll-timeout.c) */

struct eg_audit_batch {
	struct eg_audit	*a;		/* the log of what waits */
	int		 fd;		/* its descriptor (the number stays
					   open for the life of a) */
	unsigned	 lines;
	size_t		 len;
	char		 buf[EG_AUDIT_BATCH_BYTES];
};

/* The same, recording the event in ring (NULL: the log's own ring, the
 * default session's) instead, through batch b (NULL: written at once);
 * wait: the line may wait in b (event.c decides which).  A line that
 * waits returns 0 and leaves the log's failing state as it is. */
int		 eg_audit_emit_ring(struct eg_audit *,
		    const struct egress_event *, struct eg_ring *ring,
		    struct eg_audit_batch *b, int wait, int *change);
/* Write what waits in b: 0, or -1 (errno; the lines count as failed
 * writes); *change as for eg_audit_emit(). */
int		 eg_audit_batch_flush(struct eg_audit_batch *b, int *change);

/*
 * Write n bytes to fd to completion: short writes and EINTR are retried,
 * and EAGAIN (a non-blocking pipe that is full) waits for room, up to
 * EG_AUDIT_STALL_MS in all without progress.  0, or -1 with errno.
 */
int		 eg_audit_write_all(int fd, const char *buf, size_t n);

/* Failed writes so far, and whether the last write failed.  Any thread. */
void		 eg_audit_health(struct eg_audit *, uint64_t *write_errors,
		    int *failing);

/* Pure formatting, for tests: returns the line length (with '\n'). */
size_t		 eg_audit_format(const struct egress_event *, int json,
		    char *buf, size_t cap);

/*
 * Copy ring entries as a JSON array into buf; each object is the event's
 * JSON audit line with a leading "seq": the ring's own sequence number
 * (1, 2, ... for the life of the proxy; connection ids are not monotonic
 * in log order and PHASE has none).  since = 0: the most recent `limit`
 * entries; since > 0: the oldest `limit` entries with seq > since, so a
 * poller passing the last seq it saw misses nothing the ring still holds.
 * limit 0 means no limit.  Only whole objects are copied.  Returns the
 * length.  Thread-safe.
 */
size_t		 eg_audit_ring_json(struct eg_audit *, uint64_t since,
		    unsigned limit, char *buf, size_t cap);

/* A ring of its own (a session's): n entries, 0 for none.  NULL when out
 * of memory.  eg_ring_json() is eg_audit_ring_json() for it. */
struct eg_ring	*eg_ring_new(unsigned n);
void		 eg_ring_free(struct eg_ring *);
size_t		 eg_ring_json(struct eg_ring *, uint64_t since,
		    unsigned limit, char *buf, size_t cap);

/* Names shared by audit, metrics and reply bodies. */
const char	*eg_event_name(enum egress_event_type);

#endif
