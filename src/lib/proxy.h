/*
 * proxy.h: the core's shared structures: the proxy (struct egress), its
 * sessions, listeners and worker threads.  Private to libegress.
 */
#ifndef EG_PROXY_H
#define EG_PROXY_H

#include <sys/socket.h>
#include <pthread.h>
#include <stdint.h>

#include "egress.h"
#include "cfg.h"
#include "loop.h"
#include "module.h"
#include "reason.h"
#include "shared.h"
#include "upool.h"

struct eg_audit;
struct eg_metrics;
struct eg_admin;
struct eg_dns;
struct eg_conn;
struct eg_ownaddr;

/* enum eg_reason, eg_reason_name: reason.h */

enum eg_end {
	EG_END_NONE,
	EG_END_CLIENT_CLOSED,
	EG_END_UPSTREAM_CLOSED,
	EG_END_IDLE_TIMEOUT,
	EG_END_PHASE_CHANGE,
	EG_END_RELOAD,
	EG_END_SNI_MISMATCH,
	EG_END_SHUTDOWN,
	EG_END_DONE,
	EG_END_ERROR,
	EG_END_SESSION_CLOSED,
	EG_END_BUDGET,
	EG_END_COUNT		/* (how many; not an end) */
};
extern const char *const eg_end_name[];


struct eg_ring;

/*
 * A session's budgets of its current phase (SPEC "Configuration"): what
 * it used since it entered the phase.  The limits are the phase's.  A
 * connection folds its bytes in (conn.c) when it passes the mark of its
 * lease, when it closes, and when a plain-HTTP request ends, not per
 * transfer; ALLOW decisions count at once.  epoch and a reset
 * (eg_budget_reset()) change under egress.lock held for writing; the
 * counts are atomics, added to under the read lock.
 */
struct eg_budget {
	uint64_t		 epoch;
	uint64_t		 up, down, req;	/* atomic */
	unsigned		 spent;	/* atomic: EG_BUDGET_* bits counted in
					   egressd_budget_exhausted_total */
};

/*
 * A session (SPEC "Sessions"): a group of listeners with its own phase,
 * counters and audit ring.  ex->def is the default one (embedded, never
 * freed); the others live in the registry ex->sessions (guarded by
 * ex->sesmtx; changed only under ex->ctl too) and are reference counted:
 * the registry holds one reference, every connection accepted on one of
 * its listeners another (session.c).
 */
struct eg_session {
	char			 name[EG_SESSION_NAME_MAX + 1];
	int			 is_default;
	/* Guarded by egress.lock: the phase, in ex->cfg or in phases. */
	const struct eg_phase	*phase;
	uint64_t		 gen;	/* bumped by every phase/cfg swap */
	struct eg_budget	 bud;	/* its phase's budgets, used */

	unsigned		 refs;		/* atomic */
	struct eg_session	*next;		/* registry */
	int			 is_static;	/* from [session:NAME] */
	int			 closing;	/* deleted: no new listeners */
	struct eg_phase		*phases;	/* inline; NULL: ex->cfg's */
	size_t			 nphases;
	/* atomics */
	unsigned		 active;
	uint64_t		 total, allowed, blocked, failed;
	int64_t			 idle_since_ms;	/* wall ms active went 0 */
	int64_t			 created_ms;
	unsigned		 ttl_s;		/* 0: none */
	struct eg_ring		*ring;		/* NULL: ex->audit's */
	struct eg_lsock		*ls;		/* its own listeners */
	size_t			 nls;
	struct eg_lio		*lio;		/* nw * nls, by worker */
	struct eg_conn		**wconns;	/* per worker: its live
						   connections (conn.c) */
	struct eg_session	**dnext;	/* per worker: w->sdead */
	size_t			 nw;
	char			*sock;		/* API: its socket path */
	char			*cfg_phase;	/* static: phase = as written */
	int			 gone;		/* static: not in the reloaded
						   file */
	char			 listen[64];	/* TCP: the bound address */
	/* egress_session_set_step(): the step= label (atomic pointer to
	 * a label's name, NULL: none); labels are kept until the session
	 * is freed, as a loop thread may still be formatting one */
	const char		*step;
	struct eg_label		*labels;
	/* egress_session_set_redact(): the values replaced in its events
	 * (atomic pointer, NULL: none); kept until the session is freed,
	 * like the labels */
	const struct eg_redact	*redact;
	struct eg_redact	*redacts;
	/* egress_session_set_audit(): its own file (atomic; NULL: the main
	 * log), and the file, kept open until the session is freed */
	struct eg_audit		*audit;
	struct eg_audit		*audit_file;
};

struct eg_label {
	struct eg_label		*next;
	char			 name[];
};

/* egress_session_set_redact(): values ([n]), each at least
 * EG_REDACT_MIN bytes; maxlen the longest. */
#define EG_REDACT_MIN	8
struct eg_redact {
	struct eg_redact	*next;
	size_t			 n, maxlen;
	size_t			*len;
	char			**val;
};

struct eg_lsock {			/* a bound listening socket */
	int			 fd;
	enum eg_listen_kind	 kind;
	char			*text;	/* as configured */
	char			*path;	/* Unix: unlinked at exit */
	struct sockaddr_storage	 ss;	/* TCP: the bound address */
	socklen_t		 sslen;
	struct eg_session	*sess;
	int			 keep;	/* reload bookkeeping */
	int			 adopted; /* a copy of an ex->adopt entry:
					   clearing it closes nothing */
};

struct eg_lio {				/* a worker's interest in a listener */
	struct eg_io		 io;
	struct eg_lsock		*ls;
	struct eg_worker	*w;
	struct eg_lio		*snext;	/* a session's: w->slio list */
};

struct eg_worker {
	struct egress		*ex;
	unsigned		 idx;
	pthread_t		 thr;
	int			 thr_started;
	struct eg_loop		*loop;
	struct eg_dns		*dns;
	struct eg_ownaddr	*own;	/* own addresses: loop thread only */
	struct eg_cfg		*cfg;	/* a reference on the snapshot new
					   connections start with (until
					   their decision): loop thread only */
	struct eg_lio		*lio;
	size_t			 nlio;
	struct eg_lio		*lio_dead;	/* replaced; freed after the
						   batch (events may name it) */
	struct eg_lio		*slio;		/* sessions' listeners */
	struct eg_session	*sdead;		/* released after the batch
						   (linked by dnext[idx]) */
	struct eg_lio		*lio_next;	/* a reload's, allocated
						   before its swap */
	struct eg_timer		 accept_pause;
	int			 paused;
	struct eg_conn		*conns;		/* every live connection */
	struct eg_conn		*dead;		/* freed after the batch */
	struct eg_conn		*connpool;	/* freed ones, for reuse */
	unsigned		 nconnpool;
	void			*headpool;	/* request head buffers */
	unsigned		 nheadpool;
	void			*bufpool;	/* free tunnel buffers */
	unsigned		 nbufpool;
	void			*routepool;	/* route.c: idle upstream
						   connections of routes */
	int			 pipes[64][2];	/* free splice pipes */
	unsigned		 npipes;
	int			 stopped;
	struct eg_upool		 upool;		/* idle upstream connections */
	uint8_t			 scratch[65536];
};

struct eg_ovr { char *key, *value; };

#define EG_ADOPT_MAX	64	/* egress_adopt_fd() proxy listeners */

/*
 * Error messages are the calling thread's, as dlerror()'s are: the API's
 * session and phase functions may be called from several threads at once
 * (replay's job threads do), so one buffer per handle would be written by
 * one failing call while another's caller reads it.  eg_errbuf() is the
 * calling thread's buffer for ex (emptied when its last failure was on
 * another handle), EG_ERRMSG_MAX long.
 */
#define EG_ERRMSG_MAX	8192
char	*eg_errbuf(struct egress *ex);

struct egress {
	char			*cfg_path;	/* NULL: text or default */
	char			*cfg_text;
	struct eg_ovr		*ovr;
	size_t			 novr;

	pthread_rwlock_t	 lock;		/* rd: a decision and its audit
						   line; wr: cfg/phase swaps */
	pthread_mutex_t		 ctl;		/* serialises control calls */
	struct eg_cfg		*cfg;		/* current snapshot */
	struct eg_session	 def;
	pthread_mutex_t		 sesmtx;	/* guards the registry */
	struct eg_session	*sessions;	/* API and static sessions */
	unsigned		 nsessions;	/* not counting default */
	pthread_t		 ttl_thr;	/* session.c: ttl reaper */
	int			 ttl_started;
	char			*session_dir;	/* resolved at first use */
	struct eg_session	*sess_pending;	/* a reload's new static
						   sessions, bound */

	struct eg_audit		*audit;
	struct eg_metrics	*metrics;
	struct eg_admin		*admin;		/* NULL: no admin API */
	struct eg_lsock		*ls;
	size_t			 nls;
	/* egress_adopt_fd(): the proxy listeners handed in (kept across
	 * reloads, closed at egress_free()) and the admin API's (-1: none;
	 * the admin API owns it once started) */
	struct eg_lsock		 adopt[EG_ADOPT_MAX];
	size_t			 nadopt;
	int			 admin_fd;
	struct eg_worker	*w;
	size_t			 nw;

	egress_log_cb		 logcb;
	void			*logarg;
	int			 log_level;	/* egress_set_log_level() */
	int			 log_max;	/* atomic: most verbose level
						   delivered; -1: no callback */
	struct {
		egress_event_cb	 cb;
		void		*arg;
	}			 subs[8];
	size_t			 nsubs;
	char			 unix_client[32];
	int			 unix_relay;	/* option "unix_relay": every Unix
						   listener serves egressd's own
						   relay (its handoff, conn.c) */
	char			 run_id[37];	/* option "run_id" */
	int			 run_id_set;

	uint64_t		 next_id;	/* atomic */
	uint64_t		 total;		/* atomic */
	unsigned		 active;	/* atomic */
	pthread_mutex_t		 climtx;
	struct eg_client	*clients[1024];

	int			 started;
	int			 running;	/* atomic: eg_running() */
	int			 stopping;	/* atomic: eg_stopping() */
	int64_t			 started_ms;

	unsigned		 fd_limit;	/* RLIMIT_NOFILE soft limit */
	uint64_t		 accept_logged;	/* atomic: loop ms of the
						   last EMFILE message */
	struct eg_ownaddr	*own;	/* the snapshot the workers hold */

	/* per eg_module_table index: a module whose init() succeeded */
	const struct eg_module	*mod_live[EG_MODULES_MAX];
	void			*mod_state[EG_MODULES_MAX];
};

/* Are the loop threads running (control calls go through their queues)? */
#define eg_running(ex)	__atomic_load_n(&(ex)->running, __ATOMIC_ACQUIRE)

/* Has egress_stop() been called?  Read from any thread. */
#define eg_stopping(ex)	__atomic_load_n(&(ex)->stopping, __ATOMIC_ACQUIRE)

/*
 * Diagnostics.  eg_log() checks the level before its arguments are
 * evaluated or formatted; eg_log_enabled() is that check, for callers
 * that format something themselves first.
 */
#define eg_log_enabled(ex, level)					\
	((level) <= __atomic_load_n(&(ex)->log_max, __ATOMIC_RELAXED))
#define eg_log(ex, level, ...) do {					\
	struct egress *eg_log_ex_ = (ex);				\
	int eg_log_lv_ = (level);					\
	if (eg_log_enabled(eg_log_ex_, eg_log_lv_))			\
		eg_log_write(eg_log_ex_, eg_log_lv_, __VA_ARGS__);	\
} while (0)
void	eg_log_write(struct egress *, int level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* conn.c */
/* Close every connection of sess on this worker (end=session_closed);
 * returns how many were tunnels (owed a CLOSE). */
unsigned eg_conn_close_session(struct eg_worker *, struct eg_session *);
void	eg_conn_accept(struct eg_worker *, struct eg_lsock *, int fd,
	    const struct sockaddr *, socklen_t);
void	eg_conn_reap(struct eg_worker *);
void	eg_conn_pool_drain(struct eg_worker *);
/* route.c: close the worker's idle upstream connections of routes. */
void	eg_route_pool_drain(struct eg_worker *);
/* Close connections of sess that cfg/phase no longer allow; count. */
unsigned eg_conn_recheck(struct eg_worker *, struct eg_session *,
	    enum eg_end);
void	eg_conn_close_all(struct eg_worker *, enum eg_end);
/* A new count (caller holds egress.lock for writing): after a phase
 * switch, and after a reload when eg_budget_changed(old, new). */
void	eg_budget_reset(struct eg_budget *);
int	eg_budget_changed(const struct eg_phase *, const struct eg_phase *);
/* forward.c: close the idle upstream connections of sess (NULL: every
 * session) kept for plain HTTP whose host its phase no longer allows. */
unsigned eg_forward_pool_recheck(struct eg_worker *, struct eg_session *);

/*
 * An audit event inside the library: enums and pointers.  eg_emit()
 * turns it into the public struct egress_event once (names for the
 * enums, the phase's name), for the audit log and the subscribers; the
 * metrics count it by its enums.
 */
struct eg_event {
	enum egress_event_type	 type;
	enum eg_reason		 reason;	/* BLOCK, FAIL */
	enum eg_end		 end;		/* CLOSE */
	int			 report;	/* ALLOW in report mode */
	uint64_t		 id;		/* connection id; 0 for PHASE */
	const char		*host;		/* normalised (escaped) */
	uint16_t		 port;
	const struct eg_phase	*phase;		/* PHASE: the new phase */
	struct eg_session	*sess;		/* NULL: session "default" */
	const char		*client;
	const char		*method;
	const char		*addr;		/* ALLOW: upstream address */
	const char		*rule;		/* ALLOW: the matching entry */
	uint64_t		 up, down;	/* CLOSE: bytes each way */
	uint64_t		 ms;		/* CLOSE: duration */
	const char		*sni;		/* CLOSE sni_mismatch */
	const char		*from;		/* PHASE: previous phase */
	const char		*by;		/* PHASE: admin|api|signal|reload */
	unsigned		 closed;	/* PHASE: tunnels closed */
	const char		*action;	/* SESSION: open|close */
	/* a route's request (route.c) */
	const char		*route;		/* its name */
	const char		*path;		/* /REST, no query */
	const char		*cred;		/* ALLOW: headers added */
	int			 status;	/* CLOSE: the upstream's */
	int64_t			 tokens_in, tokens_out, tokens_cached;
						/* CLOSE: -1 none */
	const char		*pid, *exe;	/* via egressd's own relay */
};

/* proxy.c */
/* Timestamp, write, count, tell the subscribers.  -1 when the audit line
 * could not be written; a failed ALLOW is then not counted or passed on:
 * the caller must refuse the request (EG_R_AUDIT_FAILED) instead. */
int	eg_emit(struct egress *, const struct eg_event *);
int64_t	eg_wall_ms(void);
/* A random UUID v4 as text; is s one (36 chars, 8-4-4-4-12 hex)? */
void	eg_uuid4(char out[37]);
int	eg_uuid_ok(const char *s);
/* Chain a (its START run=run) when the configuration asks for it, or
 * force, and the record module is built; else nothing.  0 or -1. */
int	eg_audit_chain_setup(struct egress *, struct eg_audit *a,
	    const char *run, int force, struct eg_err *err);

/* session.c */
void	eg_labels_free(struct eg_label *);
void	eg_redacts_free(struct eg_redact *);
/* s with every value of r replaced by "[REDACTED]" (ASCII case ignored),
 * written to out (cap bytes); s itself when nothing matched; when the
 * result does not fit, "[REDACTED]" alone (nothing of a value leaks). */
const char *eg_redact_str(const struct eg_redact *r, const char *s,
	    char *out, size_t cap);

/* worker.c: the per-client connection table */
int	eg_client_acquire(struct egress *, const struct sockaddr *,
	    unsigned max);
void	eg_client_release(struct egress *, const struct sockaddr *);

/* session.c (session.h has the rest) */

#endif
