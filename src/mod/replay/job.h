/*
 * job.h: what the supervisor's files share (supervisor.c: runs, the
 * proxy, --resume; step.c: the steps of one job; cancel.c: --cancel;
 * util.c: small helpers).  A job is one plan being run: its record
 * directory, its session of the proxy, its decision counters.
 */
#ifndef RP_JOB_H
#define RP_JOB_H

#include <sys/types.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "egress.h"
#include "capture.h"
#include "plan.h"
#include "receipt.h"

struct job;

/* One proxy serves the jobs of one configuration. */
struct proxy {
	struct egress	*ex;
	char		 dir[PATH_MAX];	/* session_dir, 0700 */
	int		 tmpdir;	/* dir is ours to remove */
	struct job	**jobs;
	size_t		 njobs;
};

struct job {
	struct rp_plan		*plan;
	char			*plan_text;
	size_t			 plan_len;
	const char		*plan_path;
	char			 dir[PATH_MAX];
	int			 dirfd, privfd, stepsfd;
	int			 lockfd;	/* DIR/.lock, flock'd */
	char			 session[RP_NAME_MAX + 1];
	char			 sock[PATH_MAX];
	char			 tcp[64];
	struct rp_run		 run;
	struct rp_secret	*secrets;
	size_t			 nsecrets;
	struct proxy		*px;
	const char		*key;
	int			 resume;
	const char		*force;		/* --force --reason TEXT */
	int			 exit;
	int			 started;	/* thread started */
	pthread_t		 tid;
	atomic_int		 cur;		/* index of the running step */
	atomic_int		 done;
	atomic_ullong		 cnt[RP_MAX_STEPS][3];
	int			 cnt_valid[RP_MAX_STEPS];
	/* route usage per step, from CLOSE lines (umtx) */
	pthread_mutex_t		 umtx;
	struct rp_usage		 usage[RP_MAX_STEPS][RP_USAGE_MAX];
	size_t			 nusage[RP_MAX_STEPS];
};

/* SIGINT/SIGTERM received by the supervisor (0: none); the main
 * thread sets it (sigtimedwait), the job threads read it. */
extern atomic_int rp_signal;
/* This egressd binary (/proc/self/exe), for the keeper and egressd run. */
extern char rp_exe[PATH_MAX];

/* util.c */
void	 rp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int	 rp_mkdir_p(const char *path, mode_t mode);
char	*rp_slurp(int dirfd, const char *path, size_t max, size_t *lenp);
const char *rp_getenv(const char *name);
void	 rp_uuid4(char out[37]);
void	 rp_step_dirname(const struct rp_plan *p, size_t i, char *out,
	    size_t len);
int	 rp_has_module(const char *name);
void	 rp_fd_path(int fd, char *out, size_t len);
int	 rp_dir_moved(int dirfd, const char *path);
int	 rp_lock(int dirfd, int *lockfd, long *holder);
int	 rp_expand_record(const char *tmpl, const char *base, time_t t,
	    char *out, size_t len);

/* step.c */
void	 rp_on_event(const struct egress_event *ev, void *arg);
void	 rp_receipt_init(const struct job *j, size_t i,
	    struct rp_receipt *r);
int	 rp_receipt_put(struct job *j, size_t i, int stepfd,
	    struct rp_receipt *r);
int	 rp_run_put(struct job *j);
int	 rp_open_stepfd(struct job *j, size_t i);
int	 rp_cancel_requested(struct job *j);
void	 rp_seal(struct job *j);
void	*rp_job_main(void *arg);

#endif
