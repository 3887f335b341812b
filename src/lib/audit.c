/*
 * audit.c: formats audit events as text or JSON lines and writes each with
 * a single write(2), so a line is never interleaved with another and is on
 * disk (in the page cache) before the client hears the verdict.  Values
 * are escaped: text lines never hold spaces or control characters.
 */
#include "egress-int.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-journal.h>
#endif

#include "audit-ops.h"
#include "audit.h"
#include "buf.h"

/*
 * A ring entry is kept in the cheap form: the event itself, its strings
 * copied after it (rec = 1), made into JSON only when /v1/audit reads it.
 * An event whose strings are longer than a line, or whose JSON line was
 * made anyway (a JSON log), is kept as that line (rec = 0).  buf is
 * reused by the next entry of the slot when it is big enough.
 */
struct ring_slot {
	uint64_t	 seq;
	char		*buf;		/* rec: struct egress_event + strings;
					   else the JSON, without newline */
	size_t		 size;		/* allocated */
	int		 rec;
};

struct eg_ring {			/* recent events (audit.h) */
	pthread_mutex_t	 mtx;
	struct ring_slot *ring;
	unsigned	 nring;		/* its size, once full */
	unsigned	 cap;		/* slots allocated: grows to nring,
					   so an idle session's ring is
					   small */
	uint64_t	 seq;		/* ring sequence; also "since" */
};

struct eg_audit {
	/* fd and json are read by every writer (atomic loads) and changed by
	 * eg_audit_reconfigure(); path and is_stdout are guarded by cmtx. */
	int		 fd;		/* -1: discard (or a sink) */
	int		 sink;		/* atomic: EG_SINK_* (audit_sink_of) */
	int		 json;
	int		 is_stdout;
	char		*path;
	pthread_mutex_t	 cmtx;		/* reconfigure vs. reopen */

	struct eg_ring	 rg;		/* the default session's */

	uint64_t	 write_errors;	/* atomic: failed line writes */
	int		 failing;	/* atomic: the last write failed */
	int		 private;	/* a session's file: 0600, O_NOFOLLOW */

	/*
	 * Chaining (eg_audit_chain()).  A chained log's lines are formatted,
	 * chained and written under wmtx, so the file's order is the
	 * chain's; an unchained log takes no lock (O_APPEND writes).
	 * ops and chain are set before any writer runs and never change.
	 */
	const struct eg_audit_ops *ops;
	void		*chain;
	pthread_mutex_t	 wmtx;
	pthread_cond_t	 tcond;		/* the checkpoint timer's sleep */
	pthread_t	 tick;
	int		 tick_on, tick_stop;	/* under wmtx */
	unsigned	 interval_ms;
};

static const char *const event_names[] = {
	"ALLOW", "BLOCK", "FAIL", "CLOSE", "PHASE", "SESSION"
};

const char *
eg_event_name(enum egress_event_type t)
{
	if ((size_t)t >= nitems(event_names))
		return "?";
	return event_names[t];
}

/* audit_log = journal | syslog[:FACILITY] (the end of this file) */
enum { EG_SINK_FILE, EG_SINK_JOURNAL, EG_SINK_SYSLOG };
static int	audit_sink_of(const char *path, int *facility);
static int	audit_sink_open(int sink, int facility, const char *path,
		    struct eg_err *err);
static int	audit_sink_emit(int sink, const struct egress_event *ev,
		    const char *line, size_t n);

static int
audit_open_fd(const char *path, int private, int *is_stdout,
    struct eg_err *err)
{
	int fd, fac;

	*is_stdout = 0;
	if (!private && strcmp(path, "none") == 0)
		return -1;
	if (!private && audit_sink_of(path, &fac) != EG_SINK_FILE)
		return audit_sink_open(audit_sink_of(path, &fac), fac, path,
		    err) == -1 ? -2 : -1;	/* no descriptor */
	if (!private && strcmp(path, "-") == 0) {
		*is_stdout = 1;
		return STDOUT_FILENO;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	    (private ? O_NOFOLLOW : 0), private ? 0600 : 0640);
	if (fd == -1)
		return eg_err_set(err, errno, "cannot open audit log %s: %s",
		    path, strerror(errno)) - 1;
	return fd;
}

static struct eg_audit *
audit_open(const char *path, int json, unsigned ring, int private,
    struct eg_err *err)
{
	struct eg_audit *a;
	int fd, is_stdout;

	fd = audit_open_fd(path, private, &is_stdout, err);
	if (fd == -2)
		return NULL;
	if ((a = eg_calloc(1, sizeof(*a))) == NULL ||
	    (a->path = eg_strdup(path)) == NULL ||
	    (ring && (a->rg.ring = eg_calloc(ring, sizeof(*a->rg.ring))) ==
	    NULL)) {
		if (a != NULL)
			eg_free(a->path);
		eg_free(a);
		if (fd > STDERR_FILENO)
			close(fd);
		eg_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	a->fd = fd;
	a->sink = audit_sink_of(path, NULL);
	a->json = json;
	a->is_stdout = is_stdout;
	a->rg.nring = a->rg.cap = ring;
	a->private = private;
	pthread_mutex_init(&a->rg.mtx, NULL);
	pthread_mutex_init(&a->cmtx, NULL);
	pthread_mutex_init(&a->wmtx, NULL);
	return a;
}

struct eg_audit *
eg_audit_open(const char *path, int json, unsigned ring, struct eg_err *err)
{
	return audit_open(path, json, ring, 0, err);
}

struct eg_audit *
eg_audit_open_private(const char *path, int json, struct eg_err *err)
{
	return audit_open(path, json, 0, 1, err);
}

/* --- chaining (the record module's ops, audit-ops.h) ------------------------ */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write what an op made (under wmtx) and tell the chain. */
static int
chain_put(struct eg_audit *a, const char *buf, size_t n)
{
	int rc, e;

	if (n == 0)
		return 0;
	rc = eg_audit_write_all(__atomic_load_n(&a->fd, __ATOMIC_RELAXED),
	    buf, n);
	e = errno;
	a->ops->commit(a->chain, rc == 0);
	if (rc == -1)
		__atomic_add_fetch(&a->write_errors, 1, __ATOMIC_RELAXED);
	errno = e;
	return rc;
}

/* The last line of the file on fd (at most cap bytes), or 0. */
static size_t
last_line(int fd, char *buf, size_t cap)
{
	struct stat st;
	off_t off;
	ssize_t r;
	size_t n, i;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size < 2)
		return 0;
	off = st.st_size > (off_t)cap ? st.st_size - (off_t)cap : 0;
	if ((r = pread(fd, buf, (size_t)(st.st_size - off), off)) <= 0)
		return 0;
	n = (size_t)r;
	if (buf[n - 1] != '\n')
		return 0;		/* a cut line: no chain to continue */
	for (i = n - 1; i > 0 && buf[i - 1] != '\n'; i--)
		;
	if (i == 0 && off > 0)
		return 0;		/* longer than cap */
	memmove(buf, buf + i, n - i);
	return n - i;
}

/* A new file's START (under wmtx); prev NULL: "-". */
static int
chain_start(struct eg_audit *a, const char *prev)
{
	char buf[EG_AUDIT_LINE];
	size_t n;

	n = a->ops->start(a->chain, a->json, wall_ms(), prev, buf,
	    sizeof(buf));
	return chain_put(a, buf, n);
}

/* A CHECKPOINT now, if one is due (under wmtx). */
static int
chain_checkpoint(struct eg_audit *a)
{
	char buf[EG_AUDIT_LINE];
	size_t n;

	if (!a->ops->keyed(a->chain))
		return 0;
	n = a->ops->checkpoint(a->chain, a->json, wall_ms(), buf,
	    sizeof(buf));
	return chain_put(a, buf, n);
}

/* The checkpoint timer: every interval that saw a line ends with one. */
static void *
tick_main(void *arg)
{
	struct eg_audit *a = arg;
	struct timespec ts;

	pthread_mutex_lock(&a->wmtx);
	while (!a->tick_stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += a->interval_ms / 1000;
		ts.tv_nsec += (long)(a->interval_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!a->tick_stop && pthread_cond_timedwait(&a->tcond,
		    &a->wmtx, &ts) != ETIMEDOUT)
			;
		if (!a->tick_stop &&
		    __atomic_load_n(&a->fd, __ATOMIC_RELAXED) != -1)
			chain_checkpoint(a);
	}
	pthread_mutex_unlock(&a->wmtx);
	return NULL;
}

int
eg_audit_chain(struct eg_audit *a, const struct eg_audit_ops *ops,
    const struct eg_chain_params *p, unsigned interval_ms,
    struct eg_err *err)
{
	pthread_condattr_t ca;
	char msg[512], last[EG_AUDIT_LINE + EG_AUDIT_CHAIN_ROOM], prev[65];
	size_t n;
	int rc, rfd, have_prev = 0;

	if (a->fd == -1 || a->chain != NULL)
		return 0;
	msg[0] = '\0';
	if ((a->chain = ops->chain_new(p, msg, sizeof(msg))) == NULL)
		return eg_err_set(err, EINVAL, "%s", msg[0] ? msg :
		    "cannot set up the audit chain");
	a->ops = ops;
	/* a restart appending to a chained file continues its chain (the
	 * writer's descriptor is write-only: the file is read through
	 * another) */
	if (!a->is_stdout && (rfd = open(a->path, O_RDONLY | O_CLOEXEC |
	    (a->private ? O_NOFOLLOW : 0))) != -1) {
		if ((n = last_line(rfd, last, sizeof(last))) > 0 &&
		    ops->line_head(last, n, prev) == 0)
			have_prev = 1;
		close(rfd);
	}
	pthread_mutex_lock(&a->wmtx);
	rc = chain_start(a, have_prev ? prev : NULL);
	pthread_mutex_unlock(&a->wmtx);
	if (rc == -1)
		return eg_err_set(err, errno, "cannot write to audit log %s: "
		    "%s", a->path, strerror(errno));
	if (ops->keyed(a->chain) && interval_ms > 0) {
		a->interval_ms = interval_ms;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&a->tcond, &ca);
		pthread_condattr_destroy(&ca);
		if ((rc = pthread_create(&a->tick, NULL, tick_main, a)) != 0) {
			pthread_cond_destroy(&a->tcond);
			return eg_err_set(err, rc, "pthread_create: %s",
			    strerror(rc));
		}
		a->tick_on = 1;
	}
	return 0;
}

int
eg_audit_head(struct eg_audit *a, char head[65], uint64_t *lines)
{
	if (a == NULL || a->chain == NULL) {
		errno = ENOTSUP;
		return -1;
	}
	pthread_mutex_lock(&a->wmtx);
	a->ops->head(a->chain, head, lines);
	pthread_mutex_unlock(&a->wmtx);
	return 0;
}

/*
 * A chained log moves to a new file: the old one ends with a CHECKPOINT,
 * the new one begins with START prev=<its last chain value>.  Under cmtx;
 * swap() puts the new file under a->fd.
 */
static int
chain_switch(struct eg_audit *a, int (*swap)(struct eg_audit *, void *),
    void *arg)
{
	char head[65];
	uint64_t lines;
	int rc;

	pthread_mutex_lock(&a->wmtx);
	chain_checkpoint(a);
	a->ops->head(a->chain, head, &lines);
	if ((rc = swap(a, arg)) == 0) {
		a->ops->new_file(a->chain);
		chain_start(a, head);
	}
	pthread_mutex_unlock(&a->wmtx);
	return rc;
}

struct dup_arg {
	int		 fd;
	struct eg_err	*err;
};

static int
dup_swap(struct eg_audit *a, void *arg)
{
	struct dup_arg *d = arg;

	/* dup2 swaps the file under the same descriptor atomically, so a
	 * concurrent writer writes either to the old or to the new file */
	if (dup2(d->fd, a->fd) == -1)
		return eg_err_set(d->err, errno, "reopen audit log %s: %s",
		    a->path, strerror(errno));
	return 0;
}

int
eg_audit_reopen(struct eg_audit *a, struct eg_err *err)
{
	int fd, is_stdout, rc = 0;
	struct dup_arg d;

	pthread_mutex_lock(&a->cmtx);
	if (a->fd == -1 || a->is_stdout) {
		pthread_mutex_unlock(&a->cmtx);
		return 0;
	}
	fd = audit_open_fd(a->path, a->private, &is_stdout, err);
	if (fd < 0) {
		pthread_mutex_unlock(&a->cmtx);
		return -1;
	}
	d.fd = fd;
	d.err = err;
	if (a->chain != NULL)
		rc = chain_switch(a, dup_swap, &d);
	else
		rc = dup_swap(a, &d);
	close(fd);
	pthread_mutex_unlock(&a->cmtx);
	return rc;
}

int
eg_audit_reconfigure(struct eg_audit *a, const char *path, int json,
    struct eg_err *err)
{
	int fd, is_stdout;
	char *p;

	pthread_mutex_lock(&a->cmtx);
	if (strcmp(path, a->path) == 0) {
		__atomic_store_n(&a->json, json, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&a->cmtx);
		return 0;
	}
	fd = audit_open_fd(path, a->private, &is_stdout, err);
	if (fd == -2) {
		pthread_mutex_unlock(&a->cmtx);
		return -1;
	}
	if ((p = eg_strdup(path)) == NULL) {
		if (fd > STDERR_FILENO)
			close(fd);
		pthread_mutex_unlock(&a->cmtx);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	/*
	 * Keep the descriptor number stable where we can, so writers on
	 * other threads never see a closed descriptor.  (A descriptor given
	 * up for "none" stays open for the same reason.)
	 */
	/* to a sink: writers take it before the descriptor goes */
	if (audit_sink_of(path, NULL) != EG_SINK_FILE)
		__atomic_store_n(&a->sink, audit_sink_of(path, NULL),
		    __ATOMIC_RELAXED);
	if (a->fd > STDERR_FILENO && fd >= 0) {
		struct dup_arg d = { fd, err };

		/* a chained log goes on in the new file */
		if (a->chain != NULL)
			chain_switch(a, dup_swap, &d);
		else
			dup2(fd, a->fd);
		if (fd > STDERR_FILENO)
			close(fd);
	} else
		__atomic_store_n(&a->fd, fd, __ATOMIC_RELAXED);
	if (audit_sink_of(path, NULL) == EG_SINK_FILE)
		__atomic_store_n(&a->sink, EG_SINK_FILE, __ATOMIC_RELAXED);
	eg_free(a->path);
	a->path = p;
	__atomic_store_n(&a->json, json, __ATOMIC_RELAXED);
	a->is_stdout = is_stdout;
	/* a log that discards cannot be failing */
	if (fd == -1)
		__atomic_store_n(&a->failing, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&a->cmtx);
	return 0;
}

void
eg_audit_close(struct eg_audit *a)
{
	unsigned i;

	if (a == NULL)
		return;
	if (a->chain != NULL) {
		pthread_mutex_lock(&a->wmtx);
		a->tick_stop = 1;
		if (a->tick_on)
			pthread_cond_signal(&a->tcond);
		pthread_mutex_unlock(&a->wmtx);
		if (a->tick_on) {
			pthread_join(a->tick, NULL);
			pthread_cond_destroy(&a->tcond);
		}
		/* the last line of the file: a CHECKPOINT, with a key */
		pthread_mutex_lock(&a->wmtx);
		if (a->fd != -1)
			chain_checkpoint(a);
		pthread_mutex_unlock(&a->wmtx);
		a->ops->chain_free(a->chain);
	}
	if (a->fd > STDERR_FILENO)
		close(a->fd);
	for (i = 0; i < a->rg.cap; i++)
		eg_free(a->rg.ring[i].buf);
	eg_free(a->rg.ring);
	eg_free(a->path);
	pthread_mutex_destroy(&a->rg.mtx);
	pthread_mutex_destroy(&a->cmtx);
	pthread_mutex_destroy(&a->wmtx);
	eg_free(a);
}

/* --- formatting ------------------------------------------------------- */

/*
 * Lines are built in a struct eg_buf over the caller's array.  The audit
 * line adds one policy of its own to the buffer's rule: a piece that
 * does not fit is cut to the room left ("values are truncated", audit.h),
 * so an over-long line keeps every byte that fits and still ends in its
 * newline.
 */
static inline void
out_raw(struct eg_buf *o, const char *s, size_t n)
{
	size_t room = eg_buf_room(o);

	eg_buf_add(o, s, n < room ? n : room);
}

static void
out_str(struct eg_buf *o, const char *s)
{
	out_raw(o, s, strlen(s));
}

static void
out_u64(struct eg_buf *o, uint64_t v)
{
	char d[EG_U64_DIGITS];
	const char *p;
	size_t n = eg_u64_text(d, v, &p);

	out_raw(o, p, n);
}

/* Text values: every byte outside '!'..'~', and '\', '"', become \xHH. */
static void
out_text_val(struct eg_buf *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	/* a bit per byte kept as it is: '!'..'~' but '"' and '\' (none
	 * from 128 up) */
	static const uint64_t plain[2] = {
		0xfffffffa00000000ULL, 0x7fffffffefffffffULL
	};
	const char *run;
	char e[4];
	unsigned char ch;

	if (s == NULL || *s == '\0') {
		out_raw(o, "-", 1);
		return;
	}
	for (;;) {
		for (run = s; (ch = (unsigned char)*s) < 128 &&
		    (plain[ch >> 6] >> (ch & 63) & 1); s++)
			;
		out_raw(o, run, (size_t)(s - run));
		if (ch == '\0')
			return;
		e[0] = '\\';
		e[1] = 'x';
		e[2] = hex[ch >> 4];
		e[3] = hex[ch & 15];
		out_raw(o, e, 4);
		s++;
	}
}

static void
out_json_str(struct eg_buf *o, const char *s)
{
	const char *run;
	char e[6];
	unsigned char ch;

	out_raw(o, "\"", 1);
	while (s != NULL && *s != '\0') {
		for (run = s; (ch = (unsigned char)*s) >= 0x20 && ch < 0x7f &&
		    ch != '"' && ch != '\\'; s++)
			;
		out_raw(o, run, (size_t)(s - run));
		if (ch == '\0')
			break;
		out_raw(o, e, eg_json_escape(ch, e));
		s++;
	}
	out_raw(o, "\"", 1);
}

/*
 * 2026-11-29T21:13:05.123Z.  The text up to the seconds is kept per thread
 * and made again only when the second changes.
 */
static void
out_ts(struct eg_buf *o, int64_t ms)
{
	static __thread time_t last = -1;
	static __thread char sec[32];
	static __thread size_t nsec;
	time_t t;
	struct tm tm;
	char frac[5];
	int f;

	if (ms < 0)
		ms = 0;
	t = (time_t)(ms / 1000);
	f = (int)(ms % 1000);

	if (t != last) {
		gmtime_r(&t, &tm);
		nsec = strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
		last = t;
	}
	out_raw(o, sec, nsec);
	frac[0] = '.';
	frac[1] = (char)('0' + f / 100);
	frac[2] = (char)('0' + f / 10 % 10);
	frac[3] = (char)('0' + f % 10);
	frac[4] = 'Z';
	out_raw(o, frac, sizeof(frac));
}

/* One key=value (text) or ,"key":value (JSON); NULL strings are skipped. */
/* ,"key": or " key=" (the keys are this file's short names) in kv[]:
 * its length; kv has room for the key, 4 bytes and EG_U64_DIGITS */
static size_t
kv_key(char *kv, size_t cap, int json, const char *k)
{
	size_t n = 0, max = cap - 4 - EG_U64_DIGITS;

	if (json)
		kv[n++] = ',';
	kv[n++] = json ? '"' : ' ';
	while (*k != '\0' && n < max)
		kv[n++] = *k++;
	if (json)
		kv[n++] = '"';
	kv[n++] = json ? ':' : '=';
	return n;
}

static void
kv_str(struct eg_buf *o, int json, const char *k, const char *v)
{
	char kv[48];

	if (v == NULL)
		return;
	out_raw(o, kv, kv_key(kv, sizeof(kv), json, k));
	if (json)
		out_json_str(o, v);
	else
		out_text_val(o, v);
}

static void
kv_u64(struct eg_buf *o, int json, const char *k, uint64_t v)
{
	char kv[48 + EG_U64_DIGITS], d[EG_U64_DIGITS];
	const char *p;
	size_t n = kv_key(kv, sizeof(kv), json, k), nd;

	nd = eg_u64_text(d, v, &p);
	memcpy(kv + n, p, nd);
	out_raw(o, kv, n + nd);
}

size_t
eg_audit_format(const struct egress_event *ev, int json, char *buf,
    size_t cap)
{
	struct eg_buf o;
	size_t n;

	if (cap < 3)
		return 0;
	/* one byte is kept for the newline and one for an optional NUL */
	eg_buf_init(&o, buf, cap - 2);
	if (json) {
		out_str(&o, "{\"ts\":\"");
		out_ts(&o, ev->ts_ms);
		out_str(&o, "\",\"event\":\"");
		out_str(&o, eg_event_name(ev->type));
		out_raw(&o, "\"", 1);
		if (ev->type == EGRESS_EV_PHASE)
			kv_str(&o, 1, "phase", ev->phase);
		else if (ev->type == EGRESS_EV_SESSION)
			kv_str(&o, 1, "session", ev->session);
		else {
			kv_str(&o, 1, "host", ev->host ? ev->host : "-");
			kv_u64(&o, 1, "port", ev->port);
			kv_u64(&o, 1, "id", ev->id);
			kv_str(&o, 1, "phase", ev->phase);
		}
	} else {
		out_ts(&o, ev->ts_ms);
		out_raw(&o, " ", 1);
		out_str(&o, eg_event_name(ev->type));
		out_raw(&o, " ", 1);
		if (ev->type == EGRESS_EV_PHASE)
			out_text_val(&o, ev->phase);
		else if (ev->type == EGRESS_EV_SESSION)
			out_text_val(&o, ev->session);
		else {
			out_text_val(&o, ev->host);
			if (ev->port) {
				out_raw(&o, ":", 1);
				out_u64(&o, ev->port);
			}
			kv_u64(&o, 0, "id", ev->id);
			kv_str(&o, 0, "phase", ev->phase);
		}
	}
	if (ev->type != EGRESS_EV_SESSION)
		kv_str(&o, json, "session", ev->session);
	/* a replay step's label: after phase= and session= (SESSION: after
	 * its name) */
	kv_str(&o, json, "step", ev->step);
	switch (ev->type) {
	case EGRESS_EV_ALLOW:
	case EGRESS_EV_BLOCK:
	case EGRESS_EV_FAIL:
		kv_str(&o, json, "client", ev->client);
		kv_str(&o, json, "pid", ev->pid);
		kv_str(&o, json, "exe", ev->exe);
		kv_str(&o, json, "method", ev->method);
		kv_str(&o, json, "route", ev->route);
		kv_str(&o, json, "path", ev->path);
		kv_str(&o, json, "addr", ev->addr);
		kv_str(&o, json, "rule", ev->type == EGRESS_EV_ALLOW &&
		    ev->rule == NULL ? "-" : ev->rule);
		kv_str(&o, json, "reason", ev->reason);
		kv_str(&o, json, "report", ev->report);
		if (ev->type == EGRESS_EV_ALLOW)
			kv_str(&o, json, "cred", ev->cred);
		break;
	case EGRESS_EV_CLOSE:
		kv_u64(&o, json, "up", ev->up);
		kv_u64(&o, json, "down", ev->down);
		kv_u64(&o, json, "ms", ev->ms);
		if (ev->route != NULL && ev->status > 0)
			kv_u64(&o, json, "status", (uint64_t)ev->status);
		if (ev->route != NULL && ev->tokens_in >= 0)
			kv_u64(&o, json, "tokens_in", (uint64_t)ev->tokens_in);
		if (ev->route != NULL && ev->tokens_out >= 0)
			kv_u64(&o, json, "tokens_out",
			    (uint64_t)ev->tokens_out);
		if (ev->route != NULL && ev->tokens_cached >= 0)
			kv_u64(&o, json, "tokens_cached",
			    (uint64_t)ev->tokens_cached);
		kv_str(&o, json, "end", ev->end);
		kv_str(&o, json, "sni", ev->sni);
		break;
	case EGRESS_EV_PHASE:
		kv_str(&o, json, "from", ev->from);
		kv_str(&o, json, "by", ev->by);
		kv_u64(&o, json, "closed", ev->closed);
		break;
	case EGRESS_EV_SESSION:
		/* SESSION NAME action=open phase=P by=B, or
		 * SESSION NAME action=close closed=N by=B */
		kv_str(&o, json, "action", ev->action);
		if (ev->action != NULL && strcmp(ev->action, "close") == 0)
			kv_u64(&o, json, "closed", ev->closed);
		else
			kv_str(&o, json, "phase", ev->phase);
		kv_str(&o, json, "by", ev->by);
		break;
	}
	if (json)
		out_raw(&o, "}", 1);
	n = eg_buf_len(&o);
	buf[n++] = '\n';
	return n;
}

/* Double the slots (up to nring), each entry moved to its new index. */
static void
ring_grow(struct eg_ring *a)
{
	struct ring_slot *nr;
	unsigned ncap, i;

	ncap = a->cap ? a->cap * 2 : 8;
	if (ncap > a->nring)
		ncap = a->nring;
	if ((nr = eg_calloc(ncap, sizeof(*nr))) == NULL)
		return;		/* the older entries are overwritten */
	for (i = 0; i < a->cap; i++)
		if (a->ring[i].seq > 0)
			nr[(a->ring[i].seq - 1) % ncap] = a->ring[i];
	eg_free(a->ring);
	a->ring = nr;
	a->cap = ncap;
}

/* The slot the next entry goes to, with at least n bytes (under mtx);
 * NULL (nothing changed) when there is none. */
static struct ring_slot *
ring_next(struct eg_ring *a, size_t n)
{
	struct ring_slot *s;
	char *nb;

	if (a->seq >= a->cap && a->cap < a->nring)
		ring_grow(a);
	if (a->cap == 0)
		return NULL;
	s = &a->ring[a->seq % a->cap];
	if (s->size < n) {
		if ((nb = eg_malloc(n)) == NULL)
			return NULL;
		eg_free(s->buf);
		s->buf = nb;
		s->size = n;
	}
	return s;
}

/* A JSON line (n bytes with its newline). */
static void
ring_push(struct eg_ring *a, const char *line, size_t n)
{
	struct ring_slot *s;

	pthread_mutex_lock(&a->mtx);
	if ((s = ring_next(a, n)) != NULL) {
		memcpy(s->buf, line, n - 1);
		s->buf[n - 1] = '\0';
		s->rec = 0;
		s->seq = ++a->seq;
	}
	pthread_mutex_unlock(&a->mtx);
}

/* the string members of struct egress_event */
static const size_t ring_strs[] = {
	offsetof(struct egress_event, host),
	offsetof(struct egress_event, phase),
	offsetof(struct egress_event, session),
	offsetof(struct egress_event, client),
	offsetof(struct egress_event, method),
	offsetof(struct egress_event, addr),
	offsetof(struct egress_event, rule),
	offsetof(struct egress_event, reason),
	offsetof(struct egress_event, report),
	offsetof(struct egress_event, end),
	offsetof(struct egress_event, sni),
	offsetof(struct egress_event, from),
	offsetof(struct egress_event, by),
	offsetof(struct egress_event, action),
	offsetof(struct egress_event, step),
	offsetof(struct egress_event, route),
	offsetof(struct egress_event, path),
	offsetof(struct egress_event, cred),
	offsetof(struct egress_event, pid),
	offsetof(struct egress_event, exe),
};

/* The event, kept as it is (its JSON is made when it is read); one that
 * takes more than a line with its strings is kept as its JSON line, so
 * an entry stays within a line's size (EG_AUDIT_LINE, as the JSON). */
static void
ring_push_event(struct eg_ring *a, const struct egress_event *ev)
{
	char line[EG_AUDIT_LINE];
	size_t len[nitems(ring_strs)], n = sizeof(*ev), i;
	const char *v;
	struct egress_event *c;
	struct ring_slot *s;
	char *p;

	for (i = 0; i < nitems(ring_strs); i++) {
		memcpy(&v, (const char *)ev + ring_strs[i], sizeof(v));
		len[i] = v != NULL ? strlen(v) + 1 : 0;
		n += len[i];
	}
	if (n > EG_AUDIT_LINE) {
		ring_push(a, line, eg_audit_format(ev, 1, line, sizeof(line)));
		return;
	}
	pthread_mutex_lock(&a->mtx);
	if ((s = ring_next(a, n)) != NULL) {
		c = (struct egress_event *)(void *)s->buf;
		*c = *ev;
		p = s->buf + sizeof(*ev);
		for (i = 0; i < nitems(ring_strs); i++) {
			if (len[i] == 0)
				continue;
			memcpy(&v, (const char *)ev + ring_strs[i],
			    sizeof(v));
			memcpy(p, v, len[i]);
			memcpy((char *)c + ring_strs[i], &p, sizeof(p));
			p += len[i];
		}
		s->rec = 1;
		s->seq = ++a->seq;
	}
	pthread_mutex_unlock(&a->mtx);
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
eg_audit_write_all(int fd, const char *buf, size_t n)
{
	struct pollfd pfd;
	int64_t deadline = -1, now;
	size_t off = 0;
	ssize_t w;

	while (off < n) {
		w = write(fd, buf + off, n - off);
		if (w > 0) {
			off += (size_t)w;
			deadline = -1;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* a non-blocking pipe that is full: wait for room,
			 * as a blocking write would, but not for ever */
			now = mono_ms();
			if (deadline == -1)
				deadline = now + EG_AUDIT_STALL_MS;
			if (now >= deadline) {
				errno = EAGAIN;
				return -1;
			}
			pfd.fd = fd;
			pfd.events = POLLOUT;
			pfd.revents = 0;
			if (poll(&pfd, 1, (int)(deadline - now)) == -1 &&
			    errno != EINTR)
				return -1;
			continue;
		}
		if (w == 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * A chained line: formatted (or the JSON line already made), chained and
 * written under wmtx, in one write(2) with the CHECKPOINT that may be due
 * after it.  The format is read under the lock, so a reload's change of
 * format and the chain agree.
 */
static int
emit_chained(struct eg_audit *a, const struct egress_event *ev,
    const char *jline, size_t nj)
{
	char buf[EG_AUDIT_LINE + EG_AUDIT_CHAIN_ROOM];
	size_t n;
	int json, rc;

	pthread_mutex_lock(&a->wmtx);
	json = __atomic_load_n(&a->json, __ATOMIC_RELAXED);
	if (json && jline != NULL) {
		memcpy(buf, jline, nj);
		n = nj;
	} else
		n = eg_audit_format(ev, json, buf, EG_AUDIT_LINE);
	n = a->ops->line(a->chain, json, ev->ts_ms, buf, n, sizeof(buf));
	if (n == 0) {
		pthread_mutex_unlock(&a->wmtx);
		errno = ENOSPC;
		return -1;
	}
	rc = chain_put(a, buf, n);
	pthread_mutex_unlock(&a->wmtx);
	return rc;
}

int
eg_audit_emit(struct eg_audit *a, const struct egress_event *ev,
    int *change)
{
	return eg_audit_emit_ring(a, ev, NULL, NULL, 0, change);
}

/*
 * The outcome of a write to a's log: a is failing from a failed write
 * until one succeeds; *change (if not NULL) says when that flipped.
 * Returns rc; errno is kept.
 */
static int
audit_result(struct eg_audit *a, int rc, int *change)
{
	int e = errno, was;

	was = __atomic_exchange_n(&a->failing, rc == -1, __ATOMIC_RELAXED);
	if (change != NULL)
		*change = was == (rc == -1) ? 0 : rc == -1 ? 1 : -1;
	errno = e;
	return rc;
}

/*
 * What waits in b, in one write(2); a failure counts each of its lines.
 * Its log's failing state follows the write (*change: audit_result()).
 */
int
eg_audit_batch_flush(struct eg_audit_batch *b, int *change)
{
	int rc;

	if (change != NULL)
		*change = 0;
	if (b->len == 0)
		return 0;
	rc = eg_audit_write_all(b->fd, b->buf, b->len);
	if (rc == -1)
		__atomic_add_fetch(&b->a->write_errors, b->lines,
		    __ATOMIC_RELAXED);
	b->len = 0;
	b->lines = 0;
	return audit_result(b->a, rc, change);
}

/*
 * An unchained file's line, through b (audit.h): added to what waits,
 * and written with it unless it may wait too.  What waits for another
 * log or descriptor, or has no room for the line, is written first.  A
 * line that waits leaves the log's failing state as it is: nothing was
 * written.
 */
static int
file_put(struct eg_audit *a, struct eg_audit_batch *b, int wait, int fd,
    const char *line, size_t n, int *change)
{
	int rc, first = 0, c;

	if (b == NULL || a->private || n > sizeof(b->buf)) {
		rc = eg_audit_write_all(fd, line, n);
		if (rc == -1)
			__atomic_add_fetch(&a->write_errors, 1,
			    __ATOMIC_RELAXED);
		return audit_result(a, rc, change);
	}
	if (b->len > 0 && (b->a != a || b->fd != fd ||
	    b->len + n > sizeof(b->buf)))
		(void)eg_audit_batch_flush(b, b->a == a ? &first : NULL);
	memcpy(b->buf + b->len, line, n);
	b->len += n;
	b->lines++;
	b->a = a;
	b->fd = fd;
	if (wait) {
		if (change != NULL)
			*change = first;
		return 0;
	}
	rc = eg_audit_batch_flush(b, &c);
	if (change != NULL)
		*change = c != 0 ? c : first;
	return rc;
}

int
eg_audit_emit_ring(struct eg_audit *a, const struct egress_event *ev,
    struct eg_ring *rg, struct eg_audit_batch *b, int wait, int *change)
{
	char line[EG_AUDIT_LINE], text[EG_AUDIT_LINE];
	const char *out = line;
	size_t n = 0, nj = 0;
	int rc = 0;
	/* read once: a reload may change them (eg_audit_reconfigure) */
	int json = __atomic_load_n(&a->json, __ATOMIC_RELAXED);
	int sink = __atomic_load_n(&a->sink, __ATOMIC_RELAXED);
	int fd = __atomic_load_n(&a->fd, __ATOMIC_RELAXED);

	if (rg == NULL)
		rg = &a->rg;

	if (change != NULL)
		*change = 0;
	/* a JSON log: the line is made once, for the log and the ring */
	if (json)
		n = nj = eg_audit_format(ev, 1, line, sizeof(line));
	if (fd != -1 && a->chain != NULL)
		rc = audit_result(a, emit_chained(a, ev, json ? line : NULL,
		    nj), change);
	else if (fd != -1 || sink != EG_SINK_FILE) {
		if (!json) {
			n = eg_audit_format(ev, 0, text, sizeof(text));
			out = text;
		}
		/* one write(2), unless a pipe takes the line in pieces; or
		 * one journal/syslog message */
		if (sink != EG_SINK_FILE) {
			rc = audit_sink_emit(sink, ev, out, n);
			if (rc == -1)
				__atomic_add_fetch(&a->write_errors, 1,
				    __ATOMIC_RELAXED);
			audit_result(a, rc, change);
		} else
			rc = file_put(a, b, wait, fd, out, n, change);
	}
	/* an ALLOW that is not in the log is not a decision: the caller
	 * refuses instead, and that refusal is what the ring records */
	if (rg->nring > 0 && (rc == 0 || ev->type != EGRESS_EV_ALLOW)) {
		if (nj > 0)
			ring_push(rg, line, nj);
		else
			ring_push_event(rg, ev);
	}
	return rc;
}

void
eg_audit_health(struct eg_audit *a, uint64_t *write_errors, int *failing)
{
	*write_errors = a != NULL ? __atomic_load_n(&a->write_errors,
	    __ATOMIC_RELAXED) : 0;
	*failing = a != NULL ? __atomic_load_n(&a->failing,
	    __ATOMIC_RELAXED) : 0;
}

size_t
eg_audit_ring_json(struct eg_audit *a, uint64_t since, unsigned limit,
    char *buf, size_t cap)
{
	return eg_ring_json(&a->rg, since, limit, buf, cap);
}

struct eg_ring *
eg_ring_new(unsigned n)
{
	struct eg_ring *r;

	if ((r = eg_calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->nring = n;			/* slots come as it fills */
	pthread_mutex_init(&r->mtx, NULL);
	return r;
}

void
eg_ring_free(struct eg_ring *r)
{
	unsigned i;

	if (r == NULL)
		return;
	for (i = 0; i < r->cap; i++)
		eg_free(r->ring[i].buf);
	eg_free(r->ring);
	pthread_mutex_destroy(&r->mtx);
	eg_free(r);
}

size_t
eg_ring_json(struct eg_ring *a, uint64_t since, unsigned limit, char *buf,
    size_t cap)
{
	struct eg_buf o;
	uint64_t first, seq;
	unsigned n = 0;
	struct ring_slot *s;
	char line[EG_AUDIT_LINE];
	const char *j;
	size_t need;

	if (cap < 3)
		return 0;
	/* one byte is kept for the NUL */
	eg_buf_init(&o, buf, cap - 1);
	out_raw(&o, "[", 1);
	pthread_mutex_lock(&a->mtx);
	first = a->seq > a->cap ? a->seq - a->cap + 1 : 1;
	if (since + 1 > first)
		first = since + 1;
	/* since = 0: the most recent `limit`; else the oldest after since,
	 * so a follower that polls with the last seq it saw misses none */
	if (limit && since == 0 && a->seq >= first &&
	    a->seq - first + 1 > limit)
		first = a->seq - limit + 1;
	for (seq = first; seq <= a->seq && a->cap; seq++) {
		if (limit && n >= limit)
			break;
		s = &a->ring[(seq - 1) % a->cap];
		if (s->seq != seq || s->buf == NULL)
			continue;
		j = s->buf;
		if (s->rec) {
			need = eg_audit_format((const struct egress_event *)
			    (const void *)s->buf, 1, line, sizeof(line));
			line[need - 1] = '\0';	/* the newline */
			j = line;
		}
		if (j[0] != '{')
			continue;
		/* whole objects only: stop when the next one would not fit */
		need = strlen(j) + 32;
		if (eg_buf_room(&o) <= need + 1)
			break;
		if (n++)
			out_raw(&o, ",", 1);
		out_raw(&o, "{\"seq\":", 7);
		out_u64(&o, seq);
		if (j[1] != '}')
			out_raw(&o, ",", 1);
		out_str(&o, j + 1);
	}
	pthread_mutex_unlock(&a->mtx);
	out_raw(&o, "]", 1);
	buf[eg_buf_len(&o)] = '\0';
	return eg_buf_len(&o);
}

/* --- audit_log = journal | syslog[:FACILITY] ------------------------------ */

static const struct {
	const char	*name;
	int		 fac;
} facilities[] = {
	{ "daemon", LOG_DAEMON }, { "auth", LOG_AUTH },
	{ "authpriv", LOG_AUTHPRIV }, { "user", LOG_USER },
	{ "local0", LOG_LOCAL0 }, { "local1", LOG_LOCAL1 },
	{ "local2", LOG_LOCAL2 }, { "local3", LOG_LOCAL3 },
	{ "local4", LOG_LOCAL4 }, { "local5", LOG_LOCAL5 },
	{ "local6", LOG_LOCAL6 }, { "local7", LOG_LOCAL7 },
};

/* The sink path names (EG_SINK_FILE: a file, "-" or "none"); *facility
 * gets syslog's (LOG_DAEMON unless "syslog:NAME"), -1 for a bad NAME. */
static int
audit_sink_of(const char *path, int *facility)
{
	size_t i;

	if (facility != NULL)
		*facility = LOG_DAEMON;
	if (strcmp(path, "journal") == 0)
		return EG_SINK_JOURNAL;
	if (strcmp(path, "syslog") == 0)
		return EG_SINK_SYSLOG;
	if (strncmp(path, "syslog:", 7) != 0)
		return EG_SINK_FILE;
	if (facility != NULL) {
		*facility = -1;
		for (i = 0; i < nitems(facilities); i++)
			if (strcmp(path + 7, facilities[i].name) == 0)
				*facility = facilities[i].fac;
	}
	return EG_SINK_SYSLOG;
}

int
eg_audit_sink_check(const char *path, struct eg_err *err)
{
	int fac;

	switch (audit_sink_of(path, &fac)) {
	case EG_SINK_JOURNAL:
#ifndef HAVE_SYSTEMD
		return eg_err_set(err, ENOTSUP, "audit_log = journal: egressd "
		    "was built without libsystemd (./configure "
		    "--with-systemd)");
#endif
		break;
	case EG_SINK_SYSLOG:
		if (fac == -1)
			return eg_err_set(err, EINVAL, "audit_log = %s: unknown "
			    "syslog facility (daemon, auth, authpriv, user, "
			    "local0 ... local7)", path);
		break;
	}
	return 0;
}

static int
audit_sink_open(int sink, int facility, const char *path, struct eg_err *err)
{
	if (eg_audit_sink_check(path, err) == -1)
		return -1;
	/* syslog(3) state is the process's: LOG_NDELAY connects now, so a
	 * missing /dev/log shows at once (and not inside a decision) */
	if (sink == EG_SINK_SYSLOG)
		openlog("egressd", LOG_PID | LOG_NDELAY, facility);
	return 0;
}

#ifdef HAVE_SYSTEMD
/* "KEY=value" into *p (of left bytes) as iov[*n]; value NULL: nothing */
static void
jfield(struct iovec *iov, size_t *n, char **p, size_t *left, const char *k,
    const char *v)
{
	int len;

	if (v == NULL || *left == 0)
		return;
	len = snprintf(*p, *left, "%s=%s", k, v);
	if (len < 0)
		return;
	if ((size_t)len >= *left)
		len = (int)*left - 1;	/* truncated, like the line */
	iov[*n].iov_base = *p;
	iov[*n].iov_len = (size_t)len;
	(*n)++;
	*p += len + 1;
	*left -= (size_t)len + 1;
}
#endif

/*
 * One event to the journal (sd_journal_sendv(): MESSAGE= the line, and
 * the fields EVENT, HOST, PORT, PHASE, SESSION, RULE, REASON, ID,
 * CLIENT) or to syslog(3) (the line, at LOG_INFO).  0, or -1 with errno
 * (the journal only: syslog(3) reports nothing).
 */
static int
audit_sink_emit(int sink, const struct egress_event *ev, const char *line,
    size_t n)
{
	if (n > 0 && line[n - 1] == '\n')
		n--;
	if (sink == EG_SINK_SYSLOG) {
		syslog(LOG_INFO, "%.*s", (int)n, line);
		return 0;
	}
#ifdef HAVE_SYSTEMD
	{
		char buf[EG_AUDIT_LINE + 512], msg[EG_AUDIT_LINE + 16];
		char num[24], id[24], *p = buf;
		struct iovec iov[16];
		size_t ni = 0, left = sizeof(buf);
		int rc, ml;

		ml = snprintf(msg, sizeof(msg), "MESSAGE=%.*s", (int)n, line);
		iov[ni].iov_base = msg;
		iov[ni++].iov_len = ml > 0 && (size_t)ml < sizeof(msg) ?
		    (size_t)ml : sizeof(msg) - 1;
		jfield(iov, &ni, &p, &left, "PRIORITY", "6");
		jfield(iov, &ni, &p, &left, "SYSLOG_IDENTIFIER", "egressd");
		jfield(iov, &ni, &p, &left, "EVENT", eg_event_name(ev->type));
		jfield(iov, &ni, &p, &left, "HOST", ev->host);
		if (ev->port != 0) {
			snprintf(num, sizeof(num), "%u", ev->port);
			jfield(iov, &ni, &p, &left, "PORT", num);
		}
		jfield(iov, &ni, &p, &left, "PHASE", ev->phase);
		jfield(iov, &ni, &p, &left, "SESSION", ev->session);
		jfield(iov, &ni, &p, &left, "RULE", ev->rule);
		jfield(iov, &ni, &p, &left, "REASON", ev->reason != NULL ?
		    ev->reason : ev->report != NULL ? ev->report : ev->end);
		if (ev->id != 0) {
			snprintf(id, sizeof(id), "%llu",
			    (unsigned long long)ev->id);
			jfield(iov, &ni, &p, &left, "ID", id);
		}
		jfield(iov, &ni, &p, &left, "CLIENT", ev->client);
		rc = sd_journal_sendv(iov, (int)ni);
		if (rc < 0) {
			errno = -rc;
			return -1;
		}
		return 0;
	}
#else
	(void)ev;
	errno = ENOTSUP;
	return -1;
#endif
}
