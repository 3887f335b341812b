/*
 * step.c: the steps of one job, on the job's thread.  A step goes
 * through the states
 *
 *	prepared -> starting -> [launch.claim, O_EXCL] -> keeper forked
 *	-> running (keeper's identity) -> capturing (exit status) -> captured
 *
 * every receipt written atomically before the next action, so that after
 * a crash at any point --resume knows what happened or says that it
 * cannot (exit 4), and never launches a claimed step.  The keeper
 * (keeper.c) runs the command and records its exit status, so that the
 * status survives the supervisor.
 *
 * EGRESSD_REPLAY_PAUSE=STEP:POINT (a test hook, see egressd-replay(1)):
 * at POINT (before_claim, after_claim, running, capturing,
 * before_captured) of step STEP the supervisor writes the marker file
 * $EGRESSD_REPLAY_PAUSE_FILE (default DIR/.private/paused) and stops
 * itself with SIGSTOP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "egress.h"
#include "module.h"
#include "../common/fsutil.h"
#include "../common/procwalk.h"
#include "alloc.h"
#include "clock.h"
#include "capture.h"
#include "plan.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"
#include "job.h"

/* --- the test hook ------------------------------------------------------------ */

static void
pause_point(struct job *j, const char *step, const char *point)
{
	const char *v = getenv("EGRESSD_REPLAY_PAUSE");
	const char *mark = getenv("EGRESSD_REPLAY_PAUSE_FILE");
	size_t n;
	int fd;

	if (v == NULL || j->resume)
		return;
	n = strlen(step);
	if (strncmp(v, step, n) != 0 || v[n] != ':' ||
	    strcmp(v + n + 1, point) != 0)
		return;
	if (mark != NULL)
		fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	else
		fd = openat(j->privfd, "paused", O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0600);
	if (fd != -1) {
		dprintf(fd, "%s:%s %d\n", step, point, (int)getpid());
		close(fd);
	}
	/* to this thread: a process-directed stop lets it run on a bit */
	(void)syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid),
	    SIGSTOP);
}

/* --- environment ----------------------------------------------------------------- */

/*
 * The step's environment: PATH (the caller's unless env sets it), the
 * env entries, the step's secrets, and (sandbox none) the proxy
 * variables.  pub gets the same without secrets and proxy variables,
 * for env_sha256.
 */
struct step_rv {
	struct mc_strv	*envp;
	const char	*tcp;
	int		 oom;
	int		 opt;		/* as "--env" "NAME=VALUE" pairs */
};

static void
step_route_env(void *arg, const char *name, const char *env,
    const char *placeholder)
{
	struct step_rv *rv = arg;
	char kv[512];

	if (env != NULL) {
		snprintf(kv, sizeof(kv), "%s=http://%s/%s", env, rv->tcp, name);
		if ((rv->opt && mc_strv_add(rv->envp, "--env") == -1) ||
		    mc_strv_add(rv->envp, kv) == -1)
			rv->oom = 1;
	}
	if (placeholder != NULL) {
		snprintf(kv, sizeof(kv), "%s=egressd-route", placeholder);
		if ((rv->opt && mc_strv_add(rv->envp, "--env") == -1) ||
		    mc_strv_add(rv->envp, kv) == -1)
			rv->oom = 1;
	}
}

static int
step_env(const struct job *j, const struct rp_step *st,
    struct mc_strv *envp, struct mc_strv *pub)
{
	struct step_rv rv;
	static const char *const pv[] = { "HTTPS_PROXY", "HTTP_PROXY",
	    "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy" };
	const char *path, *v;
	char *kv, url[96];
	size_t i, n;
	int has_path = 0;

	for (i = 0; i < st->env.n; i++)
		if (strncmp(st->env.v[i], "PATH=", 5) == 0)
			has_path = 1;
	if (!has_path) {
		path = getenv("PATH");
		if (path == NULL)
			path = "/usr/local/bin:/usr/bin:/bin";
		n = strlen(path) + 6;
		if ((kv = eg_malloc(n)) == NULL)
			return -1;
		snprintf(kv, n, "PATH=%s", path);
		if (mc_strv_add(envp, kv) == -1 || mc_strv_add(pub, kv) == -1) {
			eg_free(kv);
			return -1;
		}
		eg_free(kv);
	}
	for (i = 0; i < st->env.n; i++)
		if (mc_strv_add(envp, st->env.v[i]) == -1 ||
		    mc_strv_add(pub, st->env.v[i]) == -1)
			return -1;
	for (i = 0; i < st->secrets.n; i++) {
		if ((v = getenv(st->secrets.v[i])) == NULL)
			continue;
		n = strlen(st->secrets.v[i]) + strlen(v) + 2;
		if ((kv = eg_malloc(n)) == NULL)
			return -1;
		snprintf(kv, n, "%s=%s", st->secrets.v[i], v);
		if (mc_strv_add(envp, kv) == -1) {
			eg_free(kv);
			return -1;
		}
		eg_free(kv);
	}
	if (st->sandbox == RP_SB_NONE) {
		for (i = 0; i < sizeof(pv) / sizeof(pv[0]); i++) {
			snprintf(url, sizeof(url), "%s=http://%s", pv[i],
			    j->tcp);
			if (mc_strv_add(envp, url) == -1)
				return -1;
		}
		if (mc_strv_add(envp, "NO_PROXY=" EG_SANDBOX_NO_PROXY) ==
		    -1 || mc_strv_add(envp, "no_proxy="
		    EG_SANDBOX_NO_PROXY) == -1)
			return -1;
		/* the routes' variables (SPEC "Routes"), at the proxy */
		rv.envp = envp;
		rv.tcp = j->tcp;
		rv.oom = 0;
		rv.opt = 0;
		if (j->px != NULL && j->px->ex != NULL)
			eg_module_routes(j->px->ex, step_route_env, &rv);
		if (rv.oom)
			return -1;
	}
	return 0;
}

/*
 * What a sandboxed step must not see (SPEC guarantee 9), as egressd run
 * --hide paths: the caller's home wherever it is (the keeper's
 * environment has no HOME, so egressd run would only hide /home, /root
 * and the passwd homes), unless it is the workdir itself (the workdir and
 * the plan's rw/ro paths below it stay shown); and the record
 * directories: the record directory's parent, which holds the other
 * runs' records too, so that the step can neither read them nor rename
 * or replace the path the supervisor seals (a mount point cannot be
 * moved), or the record directory alone when its parent is the workdir,
 * one of its ancestors or "/".
 */
static int
step_hides(const struct job *j, struct mc_strv *av)
{
	const char *wd = j->plan->workdir, *home = getenv("HOME");
	char parent[PATH_MAX], *slash, hr[PATH_MAX];
	size_t n;
	int ok = 0;

	/* as egressd run treats its own $HOME: "/" is no home to hide */
	if (home != NULL && home[0] == '/' && realpath(home, hr) != NULL &&
	    strcmp(hr, "/") != 0 && strcmp(hr, wd) != 0) {
		ok |= mc_strv_add(av, "--hide");
		ok |= mc_strv_add(av, hr);
	}
	snprintf(parent, sizeof(parent), "%s", j->dir);
	slash = strrchr(parent, '/');
	if (slash != NULL)
		*slash = '\0';
	n = strlen(parent);
	if (slash == NULL || n == 0 || (strncmp(wd, parent, n) == 0 &&
	    (wd[n] == '\0' || wd[n] == '/'))) {
		ok |= mc_strv_add(av, "--hide");
		ok |= mc_strv_add(av, j->dir);
	} else {
		ok |= mc_strv_add(av, "--hide");
		ok |= mc_strv_add(av, parent);
	}
	return ok;
}

/* The keeper's command: argv, or egressd run ... -- argv. */
static int
step_cmd(const struct job *j, const struct rp_step *st,
    const char *stepdir, const char *rawdir, uint64_t cap, int64_t deadline,
    struct mc_strv *av)
{
	char num[32], *eq, name[160];
	size_t i;
	int ok = 0;

	ok |= mc_strv_add(av, "egressd");
	ok |= mc_strv_add(av, "replay");
	ok |= mc_strv_add(av, "--keeper");
	ok |= mc_strv_add(av, stepdir);
	ok |= mc_strv_add(av, rawdir);
	ok |= mc_strv_add(av, j->plan->workdir);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)cap);
	ok |= mc_strv_add(av, num);
	snprintf(num, sizeof(num), "%lld", (long long)deadline);
	ok |= mc_strv_add(av, num);
	if (st->sandbox == RP_SB_BWRAP)
		ok |= mc_strv_add(av, "--launch-fd");
	ok |= mc_strv_add(av, "--");
	if (st->sandbox == RP_SB_BWRAP) {
		ok |= mc_strv_add(av, rp_exe);
		ok |= mc_strv_add(av, "run");
		/* a socket of our proxy: its relay hands clients over */
		ok |= mc_strv_add(av, "--proxy-handoff");
		ok |= mc_strv_add(av, j->sock);
		ok |= mc_strv_add(av, "--sandbox");
		ok |= mc_strv_add(av, "bwrap");
		/* the keeper's launch-status pipe (keeper.c) */
		ok |= mc_strv_add(av, "--launch-fd");
		ok |= mc_strv_add(av, "3");
		for (i = 0; i < st->rw.n; i++) {
			ok |= mc_strv_add(av, "--rw");
			ok |= mc_strv_add(av, st->rw.v[i]);
		}
		for (i = 0; i < st->ro.n; i++) {
			ok |= mc_strv_add(av, "--ro");
			ok |= mc_strv_add(av, st->ro.v[i]);
		}
		ok |= step_hides(j, av);
		/* what we set is passed even if it looks secret */
		for (i = 0; i < st->env.n; i++) {
			eq = strchr(st->env.v[i], '=');
			snprintf(name, sizeof(name), "%.*s", (int)(eq -
			    st->env.v[i]), st->env.v[i]);
			ok |= mc_strv_add(av, "--env");
			ok |= mc_strv_add(av, name);
		}
		for (i = 0; i < st->secrets.n; i++) {
			if (getenv(st->secrets.v[i]) == NULL)
				continue;
			ok |= mc_strv_add(av, "--env");
			ok |= mc_strv_add(av, st->secrets.v[i]);
		}
		/* the routes' variables, at the relay inside (--proxy:
		 * egressd run does not read this configuration) */
		{
			struct step_rv rv = { av, "127.0.0.1:"
			    EG_SANDBOX_IN_PORT_S, 0, 1 };

			if (j->px != NULL && j->px->ex != NULL)
			eg_module_routes(j->px->ex, step_route_env, &rv);
			ok |= rv.oom ? -1 : 0;
		}
		ok |= mc_strv_add(av, "--");
	}
	for (i = 0; i < st->argv.n; i++)
		ok |= mc_strv_add(av, st->argv.v[i]);
	return ok == 0 ? 0 : -1;
}

/* --- receipts ---------------------------------------------------------------- */

/* The one writer of a step's state (the receipt's "state"). */
static void
step_set_state(struct rp_receipt *r, enum rp_step_state to)
{
	r->state = to;
}

void
rp_receipt_init(const struct job *j, size_t i, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];

	memset(r, 0, sizeof(*r));
	snprintf(r->step, sizeof(r->step), "%s", st->name);
	r->index = (int)i + 1;
	snprintf(r->phase, sizeof(r->phase), "%s", st->phase);
	step_set_state(r, RP_SS_PREPARED);
	rp_command_sha256(&st->argv, r->command_sha256);
}

int
rp_receipt_put(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];
	struct mc_strv envp = { 0 }, pub = { 0 };
	int rc;

	if (step_env(j, st, &envp, &pub) == -1) {
		mc_strv_free(&envp);
		mc_strv_free(&pub);
		errno = ENOMEM;
		return -1;
	}
	rc = rp_receipt_write(stepfd, r, st, (const char *const *)pub.v,
	    j->plan->public);
	mc_strv_free(&envp);
	mc_strv_free(&pub);
	if (rc == -1)
		rp_warn("%s/steps/%02zu-%s/receipt.json: %s", j->dir, i + 1,
		    st->name, strerror(errno));
	return rc;
}

int
rp_run_put(struct job *j)
{
	if (rp_run_write(j->dirfd, &j->run) == -1) {
		rp_warn("%s/run.json: %s", j->dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* --- decisions --------------------------------------------------------------- */

/* One route request of step cur, counted with its tokens. */
static void
usage_add(struct job *j, int cur, const struct egress_event *ev)
{
	struct rp_usage *u = j->usage[cur];
	size_t i;

	pthread_mutex_lock(&j->umtx);
	for (i = 0; i < j->nusage[cur]; i++)
		if (strcmp(u[i].route, ev->route) == 0)
			break;
	if (i == j->nusage[cur] && i < RP_USAGE_MAX) {
		snprintf(u[i].route, sizeof(u[i].route), "%s", ev->route);
		j->nusage[cur]++;
	}
	if (i < RP_USAGE_MAX) {
		u[i].requests++;
		if (ev->tokens_in > 0)
			u[i].tokens_in += (uint64_t)ev->tokens_in;
		if (ev->tokens_out > 0)
			u[i].tokens_out += (uint64_t)ev->tokens_out;
	}
	pthread_mutex_unlock(&j->umtx);
}

void
rp_on_event(const struct egress_event *ev, void *arg)
{
	struct proxy *px = arg;
	struct job *j;
	size_t i;
	int k, cur;

	switch (ev->type) {
	case EGRESS_EV_ALLOW:
		k = 0;
		break;
	case EGRESS_EV_BLOCK:
		k = 1;
		break;
	case EGRESS_EV_FAIL:
		k = 2;
		break;
	case EGRESS_EV_CLOSE:
		if (ev->route == NULL)
			return;
		k = -1;		/* a route's request: its usage */
		break;
	default:
		return;
	}
	if (ev->session == NULL)
		return;
	for (i = 0; i < px->njobs; i++) {
		j = px->jobs[i];
		if (strcmp(j->session, ev->session) != 0)
			continue;
		/* the step label of the line; else the step running now */
		cur = atomic_load(&j->cur);
		if (ev->step != NULL)
			for (cur = 0; cur < (int)j->plan->nsteps &&
			    strcmp(j->plan->steps[cur].name, ev->step) != 0;
			    cur++)
				;
		if (cur >= 0 && cur < (int)j->plan->nsteps && k >= 0)
			atomic_fetch_add(&j->cnt[cur][k], 1);
		else if (cur >= 0 && cur < (int)j->plan->nsteps)
			usage_add(j, cur, ev);
		return;
	}
}

/*
 * Decisions of step NAME counted from DIR/audit.log (after a resume: the
 * proxy that saw them is gone).  Text lines "TS EVENT host:port ...
 * step=NAME ..." and JSON lines with "event" and "step".
 */
static void
count_from_log(struct job *j, const char *step, struct rp_receipt *r)
{
	char *text, *line, *nl, pat[RP_NAME_MAX + 16], jpat[RP_NAME_MAX + 16];
	size_t len;
	int k;

	text = rp_slurp(j->dirfd, "audit.log", 1ULL << 30, &len);
	if (text == NULL)
		return;
	snprintf(pat, sizeof(pat), " step=%s ", step);
	snprintf(jpat, sizeof(jpat), "\"step\":\"%s\"", step);
	r->allowed = r->blocked = r->failed = 0;
	for (line = text; line < text + len; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl == NULL)
			nl = text + len;
		*nl = '\0';
		k = -1;
		if (line[0] == '{') {
			if (strstr(line, jpat) == NULL)
				continue;
			if (strstr(line, "\"event\":\"ALLOW\"") != NULL)
				k = 0;
			else if (strstr(line, "\"event\":\"BLOCK\"") != NULL)
				k = 1;
			else if (strstr(line, "\"event\":\"FAIL\"") != NULL)
				k = 2;
		} else {
			char *sp = strchr(line, ' ');
			char tail[1024];

			if (sp == NULL)
				continue;
			snprintf(tail, sizeof(tail), "%s ", sp);
			if (strstr(tail, pat) == NULL)
				continue;
			if (strncmp(sp, " ALLOW ", 7) == 0)
				k = 0;
			else if (strncmp(sp, " BLOCK ", 7) == 0)
				k = 1;
			else if (strncmp(sp, " FAIL ", 6) == 0)
				k = 2;
		}
		if (k == 0)
			r->allowed++;
		else if (k == 1)
			r->blocked++;
		else if (k == 2)
			r->failed++;
	}
	eg_free(text);
}

/* --- one step -------------------------------------------------------------- */

int
rp_cancel_requested(struct job *j)
{
	int sig;
	char *reason;
	size_t len;

	if ((sig = atomic_load(&rp_signal)) != 0) {
		if (j->run.cancel_reason[0] == '\0')
			snprintf(j->run.cancel_reason,
			    sizeof(j->run.cancel_reason), "%s",
			    sig == SIGINT ? "SIGINT" : "SIGTERM");
		return 1;
	}
	if (faccessat(j->privfd, "cancel", F_OK, 0) == 0) {
		if (j->run.cancel_reason[0] == '\0') {
			reason = rp_slurp(j->privfd, "cancel", 4096, &len);
			snprintf(j->run.cancel_reason,
			    sizeof(j->run.cancel_reason), "%s",
			    reason != NULL && reason[0] != '\0' ? reason :
			    "cancelled");
			eg_free(reason);
		}
		return 1;
	}
	return 0;
}

static int
failed_termination(const struct rp_receipt *r)
{
	if (strcmp(r->termination, "skipped") == 0)
		return 0;
	if (strcmp(r->termination, "exited") == 0)
		return !(r->has_exit && r->exit_code == 0);
	return 1;
}

/*
 * Wait for the keeper (our child, or, after a resume, a process we can
 * only watch) to end, sending it SIGTERM once on a cancel.  Returns
 * when it is gone.
 */
static void
wait_keeper(struct job *j, pid_t pid, const char *start, int child)
{
	int st, signalled = 0;
	pid_t p;

	for (;;) {
		if (child) {
			p = waitpid(pid, &st, WNOHANG);
			if (p == pid || (p == -1 && errno == ECHILD))
				return;
		} else if (!rp_ident_alive(pid, start))
			return;
		if (!signalled && rp_cancel_requested(j)) {
			(void)rp_ident_signal(pid, start, SIGTERM);
			signalled = 1;
		}
		(void)poll(NULL, 0, RP_POLL_MS);
	}
}

static void
capture_step(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];
	struct rp_capture c;
	char name[RP_NAME_MAX + 8], err[1024];
	int rawfd;

	rp_step_dirname(j->plan, i, name, sizeof(name));
	step_set_state(r, RP_SS_CAPTURING);
	(void)rp_receipt_put(j, i, stepfd, r);
	pause_point(j, st->name, "capturing");
	(void)mkdirat(j->privfd, name, 0700);
	rawfd = openat(j->privfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	memset(&c, 0, sizeof(c));
	c.workdir = j->plan->workdir;
	c.stepfd = stepfd;
	c.privfd = j->privfd;
	c.rawfd = rawfd;
	c.files = st->capture.v;
	c.nfiles = st->capture.n;
	c.secrets = j->secrets;
	c.nsecrets = j->nsecrets;
	c.max_file = RP_FILE_CAP;
	c.keeper_died = strcmp(r->termination, "original_exit_unknown") == 0;
	err[0] = '\0';
	if (rp_capture_step(&c, err, sizeof(err)) == -1)
		rp_warn("step %s: capture: %s", st->name, err);
	if (rawfd != -1)
		close(rawfd);
	pause_point(j, st->name, "before_captured");
	if (j->cnt_valid[i]) {
		r->allowed = atomic_load(&j->cnt[i][0]);
		r->blocked = atomic_load(&j->cnt[i][1]);
		r->failed = atomic_load(&j->cnt[i][2]);
	} else
		count_from_log(j, st->name, r);
	pthread_mutex_lock(&j->umtx);
	r->nusage = j->nusage[i];
	memcpy(r->usage, j->usage[i], r->nusage * sizeof(r->usage[0]));
	pthread_mutex_unlock(&j->umtx);
	step_set_state(r, RP_SS_CAPTURED);
	(void)rp_receipt_put(j, i, stepfd, r);
}

static void
apply_exit(struct rp_receipt *r, const struct rp_exit *x)
{
	snprintf(r->termination, sizeof(r->termination), "%s",
	    x->termination);
	r->has_exit = x->has_exit;
	r->exit_code = x->exit_code;
	r->has_signal = x->has_signal;
	r->signal = x->signal;
	if (x->started[0] != '\0')
		snprintf(r->started, sizeof(r->started), "%s", x->started);
	if (x->ended[0] != '\0')
		snprintf(r->ended, sizeof(r->ended), "%s", x->ended);
}

/* The keeper is gone: its exit record, or original_exit_unknown. */
static void
collect_exit(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	struct rp_exit x;

	if (rp_exit_read(stepfd, &x) == 0)
		apply_exit(r, &x);
	else {
		snprintf(r->termination, sizeof(r->termination),
		    "original_exit_unknown");
		r->has_exit = r->has_signal = 0;
		if (r->ended[0] == '\0')
			rp_ts_now(r->ended);
	}
	capture_step(j, i, stepfd, r);
}

/* Final receipt for a step that never runs. */
static void
never_run(struct job *j, size_t i, int stepfd, struct rp_receipt *r,
    const char *termination)
{
	snprintf(r->termination, sizeof(r->termination), "%s", termination);
	step_set_state(r, RP_SS_SKIPPED);
	r->has_exit = r->has_signal = 0;
	(void)rp_receipt_put(j, i, stepfd, r);
}

/*
 * Launch step i: starting, the claim, the keeper, running; then wait and
 * capture.  Returns 0, or -1 on a runtime failure before the claim.
 */
static int
launch_step(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];
	struct mc_strv envp = { 0 }, pub = { 0 }, av = { 0 };
	char name[RP_NAME_MAX + 8], stepdir[PATH_MAX], rawdir[PATH_MAX];
	char ident[RP_IDENT_MAX], line[128];
	int64_t now, deadline = 0, t;
	const char *capenv;
	uint64_t cap;
	sigset_t empty;
	unsigned closed = 0;
	pid_t pid;
	int fd, nul, rc = -1;

	rp_step_dirname(j->plan, i, name, sizeof(name));
	if (snprintf(stepdir, sizeof(stepdir), "%s/steps/%s", j->dir, name) >=
	    (int)sizeof(stepdir) || snprintf(rawdir, sizeof(rawdir),
	    "%s/%s/%s", j->dir, RP_PRIV, name) >= (int)sizeof(rawdir)) {
		rp_warn("%s: path too long", j->dir);
		return -1;
	}
	(void)mkdirat(j->privfd, name, 0700);

	/* the label first, so that the PHASE line carries the new step */
	(void)egress_session_set_step(j->px->ex, j->session, st->name);
	if (egress_session_set_phase(j->px->ex, j->session, st->phase, "api",
	    &closed) == -1) {
		rp_warn("step %s: phase %s: %s", st->name, st->phase,
		    egress_errmsg(j->px->ex));
		return -1;
	}
	atomic_store(&j->cur, (int)i);
	j->cnt_valid[i] = 1;

	now = eg_wall_ms();
	if (st->timeout > 0)
		deadline = now + (int64_t)st->timeout * 1000;
	if (j->run.deadline > 0) {
		t = rp_ts_parse(j->run.started) + (int64_t)j->run.deadline *
		    1000;
		if (deadline == 0 || t < deadline)
			deadline = t;
	}
	/* test hook (egressd-replay(1)): a smaller output cap */
	cap = RP_OUTPUT_CAP;
	if ((capenv = getenv("EGRESSD_REPLAY_OUTPUT_CAP")) != NULL &&
	    capenv[0] >= '0' && capenv[0] <= '9')
		cap = strtoull(capenv, NULL, 10);
	if (step_env(j, st, &envp, &pub) == -1 ||
	    step_cmd(j, st, stepdir, rawdir, cap, deadline, &av) == -1) {
		rp_warn("out of memory");
		goto out;
	}

	step_set_state(r, RP_SS_STARTING);
	rp_ts_now(r->started);
	if (rp_receipt_put(j, i, stepfd, r) == -1)
		goto out;
	pause_point(j, st->name, "before_claim");
	fd = openat(stepfd, "launch.claim", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd == -1) {
		rp_warn("%s/launch.claim: %s", stepdir, strerror(errno));
		goto out;
	}
	snprintf(line, sizeof(line), "%d %s\n", (int)getpid(), r->started);
	(void)write(fd, line, strlen(line));
	(void)fsync(fd);
	close(fd);
	(void)fsync(stepfd);
	rc = 0;
	pause_point(j, st->name, "after_claim");

	pid = fork();
	if (pid == 0) {
		/* async-signal-safe only: the proxy has threads */
		(void)setsid();
		sigemptyset(&empty);
		(void)sigprocmask(SIG_SETMASK, &empty, NULL);
		nul = open("/dev/null", O_RDWR);
		if (nul != -1) {
			(void)dup2(nul, 0);
			(void)dup2(nul, 1);
			(void)dup2(nul, 2);
		}
		mc_proc_cloexec_fds();
		execve(rp_exe, av.v, envp.v);
		_exit(127);
	}
	if (pid == -1) {
		rp_warn("step %s: fork: %s", st->name, strerror(errno));
		snprintf(r->termination, sizeof(r->termination),
		    "launch_failed");
		rp_ts_now(r->ended);
		capture_step(j, i, stepfd, r);
		goto out;
	}
	if (rp_ident_of(pid, ident, sizeof(ident)) == 0) {
		r->pid = (long)pid;
		snprintf(r->pid_start, sizeof(r->pid_start), "%s", ident);
		step_set_state(r, RP_SS_RUNNING);
		(void)rp_receipt_put(j, i, stepfd, r);
	}
	pause_point(j, st->name, "running");
	wait_keeper(j, pid, r->pid_start, 1);
	collect_exit(j, i, stepfd, r);
out:
	mc_strv_free(&envp);
	mc_strv_free(&pub);
	mc_strv_free(&av);
	return rc;
}

/*
 * A step found claimed by --resume: wait for its process, take its exit
 * record, or say it cannot be decided (1).
 */
static int
resume_claimed(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	struct rp_exit x;
	char start[RP_IDENT_MAX], kstart[RP_IDENT_MAX];
	char cstart[RP_IDENT_MAX];
	long pid = 0, kpid = 0, cpid = 0;

	start[0] = cstart[0] = '\0';
	if (rp_keeper_read(stepfd, &kpid, kstart, sizeof(kstart), &cpid,
	    cstart, sizeof(cstart)) == -1)
		kpid = cpid = 0;
	if (r->pid != 0) {
		pid = r->pid;
		snprintf(start, sizeof(start), "%s", r->pid_start);
	} else if (kpid != 0) {
		pid = kpid;
		snprintf(start, sizeof(start), "%s", kstart);
		r->pid = pid;
		snprintf(r->pid_start, sizeof(r->pid_start), "%s", start);
	}
	if (r->state == RP_SS_CAPTURING && r->termination[0] != '\0') {
		capture_step(j, i, stepfd, r);
		return 0;
	}
	if (rp_exit_read(stepfd, &x) == 0) {
		apply_exit(r, &x);
		capture_step(j, i, stepfd, r);
		return 0;
	}
	if (pid != 0 && rp_ident_alive((pid_t)pid, start)) {
		fprintf(stderr, "egressd replay: step %s is still running "
		    "(pid %ld): waiting for it\n", r->step, pid);
		step_set_state(r, RP_SS_RUNNING);
		(void)rp_receipt_put(j, i, stepfd, r);
		(void)egress_session_set_step(j->px->ex, j->session,
		    j->plan->steps[i].name);
		(void)egress_session_set_phase(j->px->ex, j->session,
		    j->plan->steps[i].phase, "api", NULL);
		wait_keeper(j, (pid_t)pid, start, 0);
		collect_exit(j, i, stepfd, r);
		return 0;
	}
	if (pid != 0) {
		/* the keeper is gone and left no exit record; its command
		 * may live on: wait for it, then original_exit_unknown */
		if (cpid != 0 && rp_ident_alive((pid_t)cpid, cstart)) {
			fprintf(stderr, "egressd replay: step %s: its keeper "
			    "died; waiting for its command (pid %ld)\n",
			    r->step, cpid);
			wait_keeper(j, (pid_t)cpid, cstart, 0);
		}
		collect_exit(j, i, stepfd, r);
		return 0;
	}
	snprintf(r->note, sizeof(r->note), "unresolved: launch.claim exists "
	    "but neither the step's process nor its exit status can be "
	    "found; it may have run");
	(void)rp_receipt_put(j, i, stepfd, r);
	fprintf(stderr, "egressd replay: step %02zu-%s: unresolved: it was "
	    "claimed for launch but neither its process nor its exit status "
	    "can be found (see %s/steps/%02zu-%s/receipt.json)\n", i + 1,
	    r->step, j->dir, i + 1, r->step);
	return 1;
}

/*
 * --resume --force --reason TEXT: a step that cannot be decided is closed
 * as original_exit_unknown (never launched again), the reason in its
 * receipt's note (and so in the record) and in run.json.
 */
static void
force_unknown(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	snprintf(r->note, sizeof(r->note), "closed by --resume --force: %s",
	    j->force);
	fprintf(stderr, "egressd replay: step %02zu-%s: closed as "
	    "original_exit_unknown (--force: %s)\n", i + 1, r->step,
	    j->force);
	collect_exit(j, i, stepfd, r);
}

/* --- a whole job ------------------------------------------------------------- */

int
rp_open_stepfd(struct job *j, size_t i)
{
	char name[RP_NAME_MAX + 8];

	rp_step_dirname(j->plan, i, name, sizeof(name));
	return openat(j->stepsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/*
 * Seal the record: "record seal --fd N DIR", N being the descriptor the
 * record directory was opened with when it was made (or checked by
 * --resume), DIR only for messages, so that a path a step renamed or
 * replaced is never what gets sealed and signed.  When the path no
 * longer names that directory the run is not sealed at all: the step
 * that ran may have put a forged copy there.
 */
void
rp_seal(struct job *j)
{
	char cmd_record[] = "record", cmd_seal[] = "seal", opt_fd[] = "--fd";
	char opt_key[] = "--key";
	char *av[8], err[512], keybuf[PATH_MAX], fdbuf[32], real[PATH_MAX];
	int ac = 0, rc;

	if (!rp_has_module("record"))
		return;
	rp_fd_path(j->dirfd, real, sizeof(real));
	if (rp_dir_moved(j->dirfd, j->dir)) {
		rp_warn("%s: the record directory was renamed or replaced "
		    "during the run; nothing was sealed or signed (the run's "
		    "record is now at %s)", j->dir, real);
		if (j->exit < RP_EX_RUNTIME)
			j->exit = RP_EX_RUNTIME;
		return;
	}
	snprintf(fdbuf, sizeof(fdbuf), "%d", j->dirfd);
	av[ac++] = cmd_record;
	av[ac++] = cmd_seal;
	if (j->key != NULL) {
		av[ac++] = opt_key;
		snprintf(keybuf, sizeof(keybuf), "%s", j->key);
		av[ac++] = keybuf;
	}
	av[ac++] = opt_fd;
	av[ac++] = fdbuf;
	av[ac++] = j->dir;
	av[ac] = NULL;
	rc = egress_module_main("record", ac, av, err, sizeof(err));
	if (rc == -1 && strstr(err, "not compiled in") != NULL)
		return;
	if (rc != 0) {
		rp_warn("%s: sealing the record failed%s%s", real,
		    err[0] ? ": " : "", err);
		if (j->exit == RP_EX_OK)
			j->exit = RP_EX_RUNTIME;
	}
}

void *
rp_job_main(void *arg)
{
	struct job *j = arg;
	struct rp_receipt r;
	const struct rp_step *st;
	int stepfd, stop = 0, failed = 0, unresolved = 0, cancelled = 0;
	int runtime = 0, deadline_hit = 0;
	int64_t deadline = 0;
	size_t i;

	atomic_store(&j->cur, -1);
	if (j->run.deadline > 0)
		deadline = rp_ts_parse(j->run.started) +
		    (int64_t)j->run.deadline * 1000;
	for (i = 0; i < j->plan->nsteps; i++) {
		st = &j->plan->steps[i];
		if ((stepfd = rp_open_stepfd(j, i)) == -1) {
			rp_warn("%s/steps/%02zu-%s: %s", j->dir, i + 1,
			    st->name, strerror(errno));
			runtime = 1;
			break;
		}
		if (rp_receipt_read(stepfd, &r) == -1)
			rp_receipt_init(j, i, &r);
		if (r.state == RP_SS_CAPTURED ||
		    r.state == RP_SS_SKIPPED) {
			/* done before a crash */
		} else if (faccessat(stepfd, "launch.claim", F_OK,
		    AT_SYMLINK_NOFOLLOW) == 0 || r.pid != 0) {
			if (resume_claimed(j, i, stepfd, &r) == 1) {
				if (j->force != NULL)
					force_unknown(j, i, stepfd, &r);
				else
					unresolved = 1;
			}
		} else if (unresolved) {
			/* after an unresolved step nothing is decided */
		} else if (deadline > 0 && eg_wall_ms() >= deadline) {
			never_run(j, i, stepfd, &r, "not_started_deadline");
			deadline_hit = 1;
		} else if (stop) {
			never_run(j, i, stepfd, &r, "skipped");
		} else if (rp_cancel_requested(j)) {
			never_run(j, i, stepfd, &r, "skipped");
			cancelled = 1;
		} else if (rp_dir_moved(j->dirfd, j->dir)) {
			/* a step renamed or replaced the record directory:
			 * the next one would be given the wrong one (bound
			 * read-only by path, the keeper's files by path) */
			rp_warn("%s: the record directory was renamed or "
			    "replaced; no further step is launched", j->dir);
			never_run(j, i, stepfd, &r, "skipped");
			runtime = 1;
		} else {
			rp_receipt_init(j, i, &r);
			if (launch_step(j, i, stepfd, &r) == -1)
				runtime = 1;
		}
		close(stepfd);
		if (runtime)
			break;
		if (strcmp(r.termination, "cancelled") == 0)
			cancelled = 1;
		if (r.state == RP_SS_CAPTURED && failed_termination(&r)) {
			failed = 1;
			if (!st->on_failure_continue)
				stop = 1;
		}
		if (strcmp(r.termination, "not_started_deadline") == 0)
			failed = deadline_hit = 1;
		if (cancelled)
			stop = 1;
	}
	atomic_store(&j->cur, -1);
	/* the rest after a runtime failure: skipped, so nothing is left open */
	for (i = i + (runtime ? 1 : 0); runtime && i < j->plan->nsteps; i++) {
		if ((stepfd = rp_open_stepfd(j, i)) == -1)
			continue;
		if (rp_receipt_read(stepfd, &r) == -1)
			rp_receipt_init(j, i, &r);
		if (r.state == RP_SS_PREPARED)
			never_run(j, i, stepfd, &r, "skipped");
		close(stepfd);
	}
	/* a cancel that came while a step was being launched or stopped:
	 * its termination says how it ended, the run was still cancelled */
	if (!unresolved && !runtime && rp_cancel_requested(j))
		cancelled = 1;
	if (unresolved)
		j->exit = RP_EX_UNRESOLVED;
	else if (runtime)
		j->exit = RP_EX_RUNTIME;
	else if (failed || cancelled || deadline_hit)
		j->exit = RP_EX_FAIL;
	else
		j->exit = RP_EX_OK;
	/* the reason, also when the keeper was stopped by --cancel alone */
	if (cancelled && j->run.cancel_reason[0] == '\0' &&
	    !rp_cancel_requested(j))
		snprintf(j->run.cancel_reason, sizeof(j->run.cancel_reason),
		    "cancelled");
	rp_ts_now(j->run.ended);
	snprintf(j->run.state, sizeof(j->run.state), "%s", unresolved ?
	    "unresolved" : cancelled ? "cancelled" : "finished");
	j->run.has_exit = !unresolved;
	j->run.exit = j->exit;
	if (unresolved)
		j->run.ended[0] = '\0';
	(void)rp_run_put(j);
	atomic_store(&j->done, 1);
	return NULL;
}
