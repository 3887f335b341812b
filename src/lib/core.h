/*
 * core.h: the proxy's shared structures: the proxy (struct egress) and
 * its listeners.  Worker threads are worker.h's, sessions session-int.h's,
 * events event.h's, the logger log.h's.  Header only.  Private to libegress.
 */
#ifndef EG_CORE_H
#define EG_CORE_H

#include <sys/socket.h>
#include <pthread.h>
#include <stdint.h>

#include "egress.h"
#include "listen-kind.h"
#include "log.h"
#include "loop.h"
#include "module.h"
#include "session-int.h"

struct eg_admin;
struct eg_audit;
struct eg_cfg;
struct eg_client;
struct eg_conn;
struct eg_dns;
struct eg_metrics;
struct eg_ownaddr;
struct eg_worker;		/* worker.h */

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

struct eg_ovr { char *key, *value; };

#define EG_ADOPT_MAX	64	/* egress_adopt_fd() proxy listeners */

/* Are the loop threads running (control calls go through their queues)? */
#define eg_running(ex)	__atomic_load_n(&(ex)->running, __ATOMIC_ACQUIRE)

/* Has egress_stop() been called?  Read from any thread. */
#define eg_stopping(ex)	__atomic_load_n(&(ex)->stopping, __ATOMIC_ACQUIRE)

struct egress {
	struct eg_logger	 log;		/* log.h: eg_log(ex, ...) */
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

#endif
