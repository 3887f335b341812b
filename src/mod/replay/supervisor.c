/*
 * supervisor.c: runs replay plans (and resumes them) behind one private
 * in-process proxy.  Each plan is a job: its own session of the proxy,
 * its own record directory and thread.  A step goes through the states
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
#include "alloc.h"
#include "capture.h"
#include "plan.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range		436
#endif

extern char **environ;
extern const char eg_cfg_default_text[];

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
	char			 session[RP_NAME_MAX + 1];
	char			 sock[PATH_MAX];
	char			 tcp[64];
	struct rp_run		 run;
	struct rp_secret	*secrets;
	size_t			 nsecrets;
	struct proxy		*px;
	const char		*key;
	int			 resume;
	int			 exit;
	int			 started;	/* thread started */
	pthread_t		 tid;
	atomic_int		 cur;		/* index of the running step */
	atomic_int		 done;
	atomic_ullong		 cnt[RP_MAX_STEPS][3];
	int			 cnt_valid[RP_MAX_STEPS];
};

static volatile sig_atomic_t g_signal;	/* SIGINT/SIGTERM received */
static char g_exe[PATH_MAX];

/* --- small helpers --------------------------------------------------------- */

static void
warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
warnx_(const char *fmt, ...)
{
	va_list ap;
	char buf[2048];

	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "egressd replay: %s\n", buf);
}

static int
mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, mode);
}

int
eg_rp_rmtree(int dfd, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (eg_rp_rmtree(dirfd(d), de->d_name) == -1)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == -1)
		rc = -1;
	return rc;
}

/* Read a whole (small) file; eg_malloc'd, NUL-terminated. */
static char *
slurp(int dirfd, const char *path, size_t max, size_t *lenp)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if ((nb = eg_realloc(buf, cap)) == NULL)
				goto fail;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	close(fd);
	buf[len] = '\0';
	*lenp = len;
	return buf;
fail:
	close(fd);
	eg_free(buf);
	return NULL;
}

static const char *
env_get(const char *name)
{
	return getenv(name);
}

static void
uuid4(char out[37])
{
	unsigned char b[16];
	int fd, i, o = 0;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd == -1 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b)) {
		for (i = 0; i < 16; i++)
			b[i] = (unsigned char)(rand() ^ getpid());
	}
	if (fd != -1)
		close(fd);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		o += snprintf(out + o, 37 - (size_t)o, "%02x", b[i]);
	}
	out[36] = '\0';
}

static void
step_dirname(const struct rp_plan *p, size_t i, char *out, size_t len)
{
	snprintf(out, len, "%02zu-%s", i + 1, p->steps[i].name);
}

static int
has_module(const char *name)
{
	const char *const *m;

	for (m = egress_modules(); *m != NULL; m++)
		if (strcmp(*m, name) == 0)
			return 1;
	return 0;
}

/* Expand %n, %t, %% of the record template; -1 on another %. */
static int
expand_record(const char *tmpl, const char *base, time_t t, char *out,
    size_t len)
{
	struct tm tm;
	char ts[32];
	size_t o = 0;
	const char *s;
	int n;

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
	for (s = tmpl; *s != '\0'; s++) {
		if (o + 1 >= len)
			return -1;
		if (*s != '%') {
			out[o++] = *s;
			continue;
		}
		s++;
		if (*s == 'n')
			n = snprintf(out + o, len - o, "%s", base);
		else if (*s == 't')
			n = snprintf(out + o, len - o, "%s", ts);
		else if (*s == '%')
			n = snprintf(out + o, len - o, "%%");
		else
			return -1;
		if (n < 0 || (size_t)n >= len - o)
			return -1;
		o += (size_t)n;
	}
	out[o] = '\0';
	return 0;
}

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

/* --- plans ------------------------------------------------------------------- */

/*
 * Load and check a plan: its text, the INI rules, its configuration and
 * that every step's phase is one of it.  Errors printed; NULL.
 */
static struct rp_plan *
load_plan(const char *path, const char *plandir, const char *text,
    size_t len, const char *config_override, int check_phases)
{
	struct rp_errs errs = { 0 };
	struct rp_plan *p;
	struct egress *ex;
	char err[8192], dir[PATH_MAX], rec[PATH_MAX];
	size_t i;

	p = eg_rp_plan_parse(text, len, path, plandir, env_get,
	    has_module("sandbox"), config_override, &errs);
	if (p != NULL && expand_record(p->record, p->base, 0, rec,
	    sizeof(rec)) == -1)
		eg_rp_errs_add(&errs, path, 0, "record = %s: only %%n, %%t and "
		    "%%%% may follow a %%", p->record);
	if (p != NULL && errs.n == 0 && check_phases) {
		err[0] = '\0';
		ex = egress_new_from_file(p->config, err, sizeof(err));
		if (ex == NULL) {
			eg_rp_errs_add(&errs, path, 0, "config %s:\n%s",
			    p->config != NULL ? p->config : "(default)", err);
		}
		for (i = 0; ex != NULL && i < p->nsteps; i++) {
			if (egress_set_option(ex, "phase", p->steps[i].phase)
			    == 0 && egress_check(ex) == 0)
				continue;
			eg_rp_errs_add(&errs, path, p->steps[i].phase_line,
			    "phase '%s' is not a phase of %s",
			    p->steps[i].phase, p->config != NULL ? p->config :
			    "the embedded default configuration");
		}
		if (ex != NULL)
			egress_free(ex);
	}
	(void)dir;
	if (errs.n > 0) {
		fputs(errs.buf != NULL ? errs.buf : "egressd replay: plan "
		    "error\n", stderr);
		eg_rp_errs_free(&errs);
		eg_rp_plan_free(p);
		return NULL;
	}
	eg_rp_errs_free(&errs);
	return p;
}

/* --- environment ----------------------------------------------------------------- */

/*
 * The step's environment: PATH (the caller's unless env sets it), the
 * env entries, the step's secrets, and (sandbox none) the proxy
 * variables.  pub gets the same without secrets and proxy variables,
 * for env_sha256.
 */
static int
step_env(const struct job *j, const struct rp_step *st,
    struct rp_strv *envp, struct rp_strv *pub)
{
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
		if (eg_rp_strv_add(envp, kv) == -1 || eg_rp_strv_add(pub, kv) == -1) {
			eg_free(kv);
			return -1;
		}
		eg_free(kv);
	}
	for (i = 0; i < st->env.n; i++)
		if (eg_rp_strv_add(envp, st->env.v[i]) == -1 ||
		    eg_rp_strv_add(pub, st->env.v[i]) == -1)
			return -1;
	for (i = 0; i < st->secrets.n; i++) {
		if ((v = getenv(st->secrets.v[i])) == NULL)
			continue;
		n = strlen(st->secrets.v[i]) + strlen(v) + 2;
		if ((kv = eg_malloc(n)) == NULL)
			return -1;
		snprintf(kv, n, "%s=%s", st->secrets.v[i], v);
		if (eg_rp_strv_add(envp, kv) == -1) {
			eg_free(kv);
			return -1;
		}
		eg_free(kv);
	}
	if (st->sandbox == RP_SB_NONE) {
		for (i = 0; i < sizeof(pv) / sizeof(pv[0]); i++) {
			snprintf(url, sizeof(url), "%s=http://%s", pv[i],
			    j->tcp);
			if (eg_rp_strv_add(envp, url) == -1)
				return -1;
		}
		if (eg_rp_strv_add(envp, "NO_PROXY=") == -1 ||
		    eg_rp_strv_add(envp, "no_proxy=") == -1)
			return -1;
	}
	return 0;
}

/* The keeper's command: argv, or egressd run ... -- argv. */
static int
step_cmd(const struct job *j, const struct rp_step *st,
    const char *stepdir, const char *rawdir, uint64_t cap, int64_t deadline,
    struct rp_strv *av)
{
	char num[32], *eq, name[160];
	size_t i, n;
	int ok = 0;

	ok |= eg_rp_strv_add(av, "egressd");
	ok |= eg_rp_strv_add(av, "replay");
	ok |= eg_rp_strv_add(av, "--keeper");
	ok |= eg_rp_strv_add(av, stepdir);
	ok |= eg_rp_strv_add(av, rawdir);
	ok |= eg_rp_strv_add(av, j->plan->workdir);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)cap);
	ok |= eg_rp_strv_add(av, num);
	snprintf(num, sizeof(num), "%lld", (long long)deadline);
	ok |= eg_rp_strv_add(av, num);
	ok |= eg_rp_strv_add(av, "--");
	if (st->sandbox == RP_SB_BWRAP) {
		ok |= eg_rp_strv_add(av, g_exe);
		ok |= eg_rp_strv_add(av, "run");
		ok |= eg_rp_strv_add(av, "--proxy");
		ok |= eg_rp_strv_add(av, j->sock);
		ok |= eg_rp_strv_add(av, "--sandbox");
		ok |= eg_rp_strv_add(av, "bwrap");
		for (i = 0; i < st->rw.n; i++) {
			ok |= eg_rp_strv_add(av, "--rw");
			ok |= eg_rp_strv_add(av, st->rw.v[i]);
		}
		for (i = 0; i < st->ro.n; i++) {
			ok |= eg_rp_strv_add(av, "--ro");
			ok |= eg_rp_strv_add(av, st->ro.v[i]);
		}
		/* the record under workdir: read-only inside */
		n = strlen(j->plan->workdir);
		if (strncmp(j->dir, j->plan->workdir, n) == 0 &&
		    j->dir[n] == '/') {
			ok |= eg_rp_strv_add(av, "--ro");
			ok |= eg_rp_strv_add(av, j->dir);
		}
		/* what we set is passed even if it looks secret */
		for (i = 0; i < st->env.n; i++) {
			eq = strchr(st->env.v[i], '=');
			snprintf(name, sizeof(name), "%.*s", (int)(eq -
			    st->env.v[i]), st->env.v[i]);
			ok |= eg_rp_strv_add(av, "--env");
			ok |= eg_rp_strv_add(av, name);
		}
		for (i = 0; i < st->secrets.n; i++) {
			if (getenv(st->secrets.v[i]) == NULL)
				continue;
			ok |= eg_rp_strv_add(av, "--env");
			ok |= eg_rp_strv_add(av, st->secrets.v[i]);
		}
		ok |= eg_rp_strv_add(av, "--");
	}
	for (i = 0; i < st->argv.n; i++)
		ok |= eg_rp_strv_add(av, st->argv.v[i]);
	return ok == 0 ? 0 : -1;
}

/* --- receipts ---------------------------------------------------------------- */

static void
receipt_init(const struct job *j, size_t i, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];

	memset(r, 0, sizeof(*r));
	snprintf(r->step, sizeof(r->step), "%s", st->name);
	r->index = (int)i + 1;
	snprintf(r->phase, sizeof(r->phase), "%s", st->phase);
	snprintf(r->state, sizeof(r->state), "prepared");
	eg_rp_command_sha256(&st->argv, r->command_sha256);
}

static int
receipt_put(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];
	struct rp_strv envp = { 0 }, pub = { 0 };
	int rc;

	if (step_env(j, st, &envp, &pub) == -1) {
		eg_rp_strv_free(&envp);
		eg_rp_strv_free(&pub);
		errno = ENOMEM;
		return -1;
	}
	rc = eg_rp_receipt_write(stepfd, r, st, (const char *const *)pub.v,
	    j->plan->public);
	eg_rp_strv_free(&envp);
	eg_rp_strv_free(&pub);
	if (rc == -1)
		warnx_("%s/steps/%02zu-%s/receipt.json: %s", j->dir, i + 1,
		    st->name, strerror(errno));
	return rc;
}

static int
run_put(struct job *j)
{
	if (eg_rp_run_write(j->dirfd, &j->run) == -1) {
		warnx_("%s/run.json: %s", j->dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* --- decisions --------------------------------------------------------------- */

static void
on_event(const struct egress_event *ev, void *arg)
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
		if (cur >= 0 && cur < (int)j->plan->nsteps)
			atomic_fetch_add(&j->cnt[cur][k], 1);
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

	text = slurp(j->dirfd, "audit.log", 1ULL << 30, &len);
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

static int
cancel_requested(struct job *j)
{
	char *reason;
	size_t len;

	if (g_signal != 0) {
		if (j->run.cancel_reason[0] == '\0')
			snprintf(j->run.cancel_reason,
			    sizeof(j->run.cancel_reason), "%s",
			    g_signal == SIGINT ? "SIGINT" : "SIGTERM");
		return 1;
	}
	if (faccessat(j->privfd, "cancel", F_OK, 0) == 0) {
		if (j->run.cancel_reason[0] == '\0') {
			reason = slurp(j->privfd, "cancel", 4096, &len);
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
		} else if (!eg_rp_ident_alive(pid, start))
			return;
		if (!signalled && cancel_requested(j)) {
			(void)eg_rp_ident_signal(pid, start, SIGTERM);
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

	step_dirname(j->plan, i, name, sizeof(name));
	snprintf(r->state, sizeof(r->state), "capturing");
	(void)receipt_put(j, i, stepfd, r);
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
	err[0] = '\0';
	if (rp_capture_step(&c, err, sizeof(err)) == -1)
		warnx_("step %s: capture: %s", st->name, err);
	if (rawfd != -1)
		close(rawfd);
	pause_point(j, st->name, "before_captured");
	if (j->cnt_valid[i]) {
		r->allowed = atomic_load(&j->cnt[i][0]);
		r->blocked = atomic_load(&j->cnt[i][1]);
		r->failed = atomic_load(&j->cnt[i][2]);
	} else
		count_from_log(j, st->name, r);
	snprintf(r->state, sizeof(r->state), "captured");
	(void)receipt_put(j, i, stepfd, r);
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

	if (eg_rp_exit_read(stepfd, &x) == 0)
		apply_exit(r, &x);
	else {
		snprintf(r->termination, sizeof(r->termination),
		    "original_exit_unknown");
		r->has_exit = r->has_signal = 0;
		if (r->ended[0] == '\0')
			eg_rp_ts_now(r->ended);
	}
	capture_step(j, i, stepfd, r);
}

/* Final receipt for a step that never runs. */
static void
never_run(struct job *j, size_t i, int stepfd, struct rp_receipt *r,
    const char *termination)
{
	snprintf(r->termination, sizeof(r->termination), "%s", termination);
	snprintf(r->state, sizeof(r->state), "skipped");
	r->has_exit = r->has_signal = 0;
	(void)receipt_put(j, i, stepfd, r);
}

/*
 * Launch step i: starting, the claim, the keeper, running; then wait and
 * capture.  Returns 0, or -1 on a runtime failure before the claim.
 */
static int
launch_step(struct job *j, size_t i, int stepfd, struct rp_receipt *r)
{
	const struct rp_step *st = &j->plan->steps[i];
	struct rp_strv envp = { 0 }, pub = { 0 }, av = { 0 };
	char name[RP_NAME_MAX + 8], stepdir[PATH_MAX], rawdir[PATH_MAX];
	char ident[RP_IDENT_MAX], line[128];
	int64_t now, deadline = 0, t;
	const char *capenv;
	uint64_t cap;
	sigset_t empty;
	unsigned closed = 0;
	pid_t pid;
	int fd, nul, rc = -1;

	step_dirname(j->plan, i, name, sizeof(name));
	if (snprintf(stepdir, sizeof(stepdir), "%s/steps/%s", j->dir, name) >=
	    (int)sizeof(stepdir) || snprintf(rawdir, sizeof(rawdir),
	    "%s/%s/%s", j->dir, RP_PRIV, name) >= (int)sizeof(rawdir)) {
		warnx_("%s: path too long", j->dir);
		return -1;
	}
	(void)mkdirat(j->privfd, name, 0700);

	/* the label first, so that the PHASE line carries the new step */
	(void)egress_session_set_step(j->px->ex, j->session, st->name);
	if (egress_session_set_phase(j->px->ex, j->session, st->phase, "api",
	    &closed) == -1) {
		warnx_("step %s: phase %s: %s", st->name, st->phase,
		    egress_errmsg(j->px->ex));
		return -1;
	}
	atomic_store(&j->cur, (int)i);
	j->cnt_valid[i] = 1;

	now = eg_rp_now_ms();
	if (st->timeout > 0)
		deadline = now + (int64_t)st->timeout * 1000;
	if (j->run.deadline > 0) {
		t = eg_rp_ts_parse(j->run.started) + (int64_t)j->run.deadline *
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
		warnx_("out of memory");
		goto out;
	}

	snprintf(r->state, sizeof(r->state), "starting");
	eg_rp_ts_now(r->started);
	if (receipt_put(j, i, stepfd, r) == -1)
		goto out;
	pause_point(j, st->name, "before_claim");
	fd = openat(stepfd, "launch.claim", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd == -1) {
		warnx_("%s/launch.claim: %s", stepdir, strerror(errno));
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
		(void)syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
		execve(g_exe, av.v, envp.v);
		_exit(127);
	}
	if (pid == -1) {
		warnx_("step %s: fork: %s", st->name, strerror(errno));
		snprintf(r->termination, sizeof(r->termination),
		    "launch_failed");
		eg_rp_ts_now(r->ended);
		capture_step(j, i, stepfd, r);
		goto out;
	}
	if (eg_rp_ident_of(pid, ident, sizeof(ident)) == 0) {
		r->pid = (long)pid;
		snprintf(r->pid_start, sizeof(r->pid_start), "%s", ident);
		snprintf(r->state, sizeof(r->state), "running");
		(void)receipt_put(j, i, stepfd, r);
	}
	pause_point(j, st->name, "running");
	wait_keeper(j, pid, r->pid_start, 1);
	collect_exit(j, i, stepfd, r);
out:
	eg_rp_strv_free(&envp);
	eg_rp_strv_free(&pub);
	eg_rp_strv_free(&av);
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
	if (eg_rp_keeper_read(stepfd, &kpid, kstart, sizeof(kstart), &cpid,
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
	if (strcmp(r->state, "capturing") == 0 && r->termination[0] != '\0') {
		capture_step(j, i, stepfd, r);
		return 0;
	}
	if (eg_rp_exit_read(stepfd, &x) == 0) {
		apply_exit(r, &x);
		capture_step(j, i, stepfd, r);
		return 0;
	}
	if (pid != 0 && eg_rp_ident_alive((pid_t)pid, start)) {
		fprintf(stderr, "egressd replay: step %s is still running "
		    "(pid %ld): waiting for it\n", r->step, pid);
		snprintf(r->state, sizeof(r->state), "running");
		(void)receipt_put(j, i, stepfd, r);
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
		if (cpid != 0 && eg_rp_ident_alive((pid_t)cpid, cstart)) {
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
	(void)receipt_put(j, i, stepfd, r);
	fprintf(stderr, "egressd replay: step %02zu-%s: unresolved: it was "
	    "claimed for launch but neither its process nor its exit status "
	    "can be found (see %s/steps/%02zu-%s/receipt.json)\n", i + 1,
	    r->step, j->dir, i + 1, r->step);
	return 1;
}

/* --- a whole job ------------------------------------------------------------- */

static int
open_stepfd(struct job *j, size_t i)
{
	char name[RP_NAME_MAX + 8];

	step_dirname(j->plan, i, name, sizeof(name));
	return openat(j->stepsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

static void
seal(struct job *j)
{
	char cmd_record[] = "record", cmd_seal[] = "seal";
	char *av[6], err[512], keybuf[PATH_MAX];
	int ac = 0, rc;

	if (!has_module("record"))
		return;
	av[ac++] = cmd_record;
	av[ac++] = cmd_seal;
	if (j->key != NULL) {
		av[ac++] = (char *)"--key";
		snprintf(keybuf, sizeof(keybuf), "%s", j->key);
		av[ac++] = keybuf;
	}
	av[ac++] = j->dir;
	av[ac] = NULL;
	rc = egress_module_main("record", ac, av, err, sizeof(err));
	if (rc == -1 && strstr(err, "not compiled in") != NULL)
		return;
	if (rc != 0) {
		warnx_("%s: record seal failed%s%s", j->dir, err[0] ? ": " :
		    "", err);
		if (j->exit == RP_EX_OK)
			j->exit = RP_EX_RUNTIME;
	}
}

static void *
job_main(void *arg)
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
		deadline = eg_rp_ts_parse(j->run.started) +
		    (int64_t)j->run.deadline * 1000;
	for (i = 0; i < j->plan->nsteps; i++) {
		st = &j->plan->steps[i];
		if ((stepfd = open_stepfd(j, i)) == -1) {
			warnx_("%s/steps/%02zu-%s: %s", j->dir, i + 1,
			    st->name, strerror(errno));
			runtime = 1;
			break;
		}
		if (eg_rp_receipt_read(stepfd, &r) == -1)
			receipt_init(j, i, &r);
		if (strcmp(r.state, "captured") == 0 ||
		    strcmp(r.state, "skipped") == 0) {
			/* done before a crash */
		} else if (faccessat(stepfd, "launch.claim", F_OK,
		    AT_SYMLINK_NOFOLLOW) == 0 || r.pid != 0) {
			if (resume_claimed(j, i, stepfd, &r) == 1)
				unresolved = 1;
		} else if (unresolved) {
			/* after an unresolved step nothing is decided */
		} else if (deadline > 0 && eg_rp_now_ms() >= deadline) {
			never_run(j, i, stepfd, &r, "not_started_deadline");
			deadline_hit = 1;
		} else if (stop) {
			never_run(j, i, stepfd, &r, "skipped");
		} else if (cancel_requested(j)) {
			never_run(j, i, stepfd, &r, "skipped");
			cancelled = 1;
		} else {
			receipt_init(j, i, &r);
			if (launch_step(j, i, stepfd, &r) == -1)
				runtime = 1;
		}
		close(stepfd);
		if (runtime)
			break;
		if (strcmp(r.termination, "cancelled") == 0)
			cancelled = 1;
		if (strcmp(r.state, "captured") == 0 && failed_termination(&r)) {
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
		if ((stepfd = open_stepfd(j, i)) == -1)
			continue;
		if (eg_rp_receipt_read(stepfd, &r) == -1)
			receipt_init(j, i, &r);
		if (strcmp(r.state, "prepared") == 0)
			never_run(j, i, stepfd, &r, "skipped");
		close(stepfd);
	}
	if (unresolved)
		j->exit = RP_EX_UNRESOLVED;
	else if (runtime)
		j->exit = RP_EX_RUNTIME;
	else if (failed || cancelled || deadline_hit)
		j->exit = RP_EX_FAIL;
	else
		j->exit = RP_EX_OK;
	eg_rp_ts_now(j->run.ended);
	snprintf(j->run.state, sizeof(j->run.state), "%s", unresolved ?
	    "unresolved" : cancelled ? "cancelled" : "finished");
	j->run.has_exit = !unresolved;
	j->run.exit = j->exit;
	if (unresolved)
		j->run.ended[0] = '\0';
	(void)run_put(j);
	atomic_store(&j->done, 1);
	return NULL;
}

/* --- record directories -------------------------------------------------------- */

static int
write_file(int dirfd, const char *name, const char *buf, size_t len)
{
	if (rp_write_atomic(dirfd, name, buf, len, 0644) == -1) {
		warnx_("%s: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

static int
origin_write(struct job *j)
{
	json_t *o = json_object();
	int rc;

	if (o == NULL)
		return -1;
	json_object_set_new(o, "plan", json_string(j->plan->file));
	json_object_set_new(o, "dir", json_string(j->plan->dir));
	json_object_set_new(o, "workdir", json_string(j->plan->workdir));
	rc = rp_write_json(j->privfd, "origin.json", o);
	json_decref(o);
	return rc;
}

/* Make DIR and everything in it before the first step; 0 or -1. */
static int
record_create(struct job *j, const char *config_text, size_t config_len)
{
	struct rp_receipt r;
	char name[RP_NAME_MAX + 8];
	size_t i;
	int fd;

	if (mkdir_p(j->dir, 0755) == -1) {
		warnx_("%s: %s%s", j->dir, strerror(errno), errno == EEXIST ?
		    " (a record directory is never reused; -o another)" : "");
		return -1;
	}
	j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd == -1 || mkdirat(j->dirfd, RP_PRIV, 0700) == -1 ||
	    mkdirat(j->dirfd, "steps", 0755) == -1) {
		warnx_("%s: %s", j->dir, strerror(errno));
		return -1;
	}
	j->privfd = openat(j->dirfd, RP_PRIV, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	j->stepsfd = openat(j->dirfd, "steps", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	if (j->privfd == -1 || j->stepsfd == -1)
		return -1;
	if (write_file(j->dirfd, "plan.ini", j->plan_text, j->plan_len) == -1 ||
	    write_file(j->dirfd, "config.ini", config_text, config_len) == -1 ||
	    origin_write(j) == -1)
		return -1;
	if (run_put(j) == -1)
		return -1;
	for (i = 0; i < j->plan->nsteps; i++) {
		step_dirname(j->plan, i, name, sizeof(name));
		if (mkdirat(j->stepsfd, name, 0755) == -1 ||
		    (fd = open_stepfd(j, i)) == -1) {
			warnx_("%s/steps/%s: %s", j->dir, name,
			    strerror(errno));
			return -1;
		}
		receipt_init(j, i, &r);
		if (receipt_put(j, i, fd, &r) == -1) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	(void)fsync(j->stepsfd);
	(void)fsync(j->dirfd);
	return 0;
}

static int
secrets_load(struct job *j)
{
	const struct rp_strv *s = &j->plan->secrets;
	const char *v;
	size_t i;

	j->secrets = eg_calloc(s->n + 1, sizeof(*j->secrets));
	if (j->secrets == NULL)
		return -1;
	for (i = 0; i < s->n; i++) {
		if ((v = getenv(s->v[i])) == NULL || strlen(v) < 8)
			continue;
		j->secrets[j->nsecrets].name = s->v[i];
		j->secrets[j->nsecrets].val = v;
		j->secrets[j->nsecrets].len = strlen(v);
		j->nsecrets++;
	}
	return 0;
}

/* --- the proxy --------------------------------------------------------------- */

static void
on_log(int level, const char *msg, void *arg)
{
	(void)arg;
	if (level <= EGRESS_LOG_WARN)
		fprintf(stderr, "egressd replay: proxy: %s\n", msg);
}

static int
need_tcp(const struct rp_plan *p)
{
	size_t i;

	for (i = 0; i < p->nsteps; i++)
		if (p->steps[i].sandbox == RP_SB_NONE)
			return 1;
	return 0;
}

/*
 * Start the proxy for jobs[0..n) (one configuration) and a session for
 * each.  config: the file to load (the record's copy).
 */
static int
proxy_start(struct proxy *px, const char *config, const char *first_phase,
    const char *key)
{
	struct job *j;
	char err[8192], path[PATH_MAX + 32], tcp[64];
	size_t i, k;

	err[0] = '\0';
	px->ex = egress_new_from_file(config, err, sizeof(err));
	if (px->ex == NULL) {
		fprintf(stderr, "%s", err);
		return RP_EX_USAGE;
	}
	egress_set_log_cb(px->ex, on_log, NULL);
	snprintf(path, sizeof(path), "%s/proxy.sock", px->dir);
	if (egress_set_option(px->ex, "session_dir", px->dir) == -1 ||
	    egress_set_option(px->ex, "unix", path) == -1 ||
	    egress_set_option(px->ex, "unix_client", "sandbox") == -1 ||
	    egress_set_option(px->ex, "listen", "none") == -1 ||
	    egress_set_option(px->ex, "admin", "none") == -1 ||
	    egress_set_option(px->ex, "phase", first_phase) == -1 ||
	    (key != NULL && egress_set_option(px->ex, "audit_key", key) ==
	    -1)) {
		fprintf(stderr, "egressd replay: %s\n",
		    egress_errmsg(px->ex));
		return RP_EX_RUNTIME;
	}
	snprintf(path, sizeof(path), "%s/proxy.log", px->dir);
	if (egress_set_option(px->ex, "audit_log", path) == -1 ||
	    egress_subscribe(px->ex, on_event, px) == -1 ||
	    egress_start(px->ex) == -1 || egress_run_thread(px->ex) == -1) {
		fprintf(stderr, "egressd replay: %s\n",
		    egress_errmsg(px->ex));
		return RP_EX_RUNTIME;
	}
	for (i = 0; i < px->njobs; i++) {
		j = px->jobs[i];
		snprintf(j->session, sizeof(j->session), "%.56s",
		    j->plan->name);
		for (k = 0; k < i; k++)
			if (strcmp(px->jobs[k]->session, j->session) == 0)
				snprintf(j->session, sizeof(j->session),
				    "%.56s-%u", j->plan->name,
				    (unsigned)(i + 1) % 1000);
		if (egress_session_create(px->ex, j->session,
		    j->plan->steps[0].phase, need_tcp(j->plan) ? "127.0.0.1:0" :
		    NULL, 0, NULL, 0, j->sock, sizeof(j->sock), tcp,
		    sizeof(tcp)) == -1) {
			fprintf(stderr, "egressd replay: session %s: %s\n",
			    j->session, egress_errmsg(px->ex));
			return RP_EX_RUNTIME;
		}
		snprintf(j->tcp, sizeof(j->tcp), "%s", tcp);
		snprintf(path, sizeof(path), "%s/audit.log", j->dir);
		if (egress_session_set_audit(px->ex, j->session, path,
		    j->run.id, 1) == -1) {
			fprintf(stderr, "egressd replay: %s: %s\n", path,
			    egress_errmsg(px->ex));
			return RP_EX_RUNTIME;
		}
	}
	return 0;
}

static void
proxy_stop(struct proxy *px)
{
	size_t i;

	if (px->ex != NULL) {
		for (i = 0; i < px->njobs; i++)
			if (px->jobs[i]->session[0] != '\0')
				(void)egress_session_delete(px->ex,
				    px->jobs[i]->session, "api", NULL);
		egress_stop(px->ex);
		egress_join(px->ex);
		egress_free(px->ex);
		px->ex = NULL;
	}
	if (px->tmpdir)
		(void)eg_rp_rmtree(AT_FDCWD, px->dir);
}

/* The folder for the proxy's sockets: DIR/.private, or a temp folder
 * when several jobs share the proxy or the path is too long. */
static int
proxy_dir(struct proxy *px)
{
	const char *tmp;

	if (px->njobs == 1 && strlen(px->jobs[0]->dir) + sizeof(RP_PRIV) +
	    RP_NAME_MAX + 8 < sizeof(((struct sockaddr_un *)0)->sun_path) &&
	    snprintf(px->dir, sizeof(px->dir), "%s/%s", px->jobs[0]->dir,
	    RP_PRIV) < (int)sizeof(px->dir))
		return 0;
	tmp = getenv("XDG_RUNTIME_DIR");
	if (tmp == NULL || tmp[0] != '/' || access(tmp, W_OK) == -1)
		tmp = "/tmp";
	snprintf(px->dir, sizeof(px->dir), "%s/egressd-replay.XXXXXX", tmp);
	if (mkdtemp(px->dir) == NULL) {
		warnx_("%s: %s", px->dir, strerror(errno));
		return -1;
	}
	px->tmpdir = 1;
	return 0;
}

/* --- running jobs ------------------------------------------------------------ */

static int
self_exe(void)
{
	ssize_t n;

	n = readlink("/proc/self/exe", g_exe, sizeof(g_exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(g_exe) - 1) {
		warnx_("/proc/self/exe: %s", strerror(errno));
		return -1;
	}
	g_exe[n] = '\0';
	return 0;
}

/*
 * Run jobs[0..n) to the end, up to max at once (sessions of the proxies
 * they belong to); SIGINT/SIGTERM cancel every running job.  Returns the
 * worst exit status.
 */
static int
run_jobs(struct job **jobs, size_t n, unsigned max)
{
	sigset_t mask;
	siginfo_t si;
	struct timespec ts = { 0, RP_POLL_MS * 1000000L };
	size_t next = 0, running = 0, i, finished = 0;
	int rc = RP_EX_OK, sig;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	while (finished < n) {
		while (running < max && next < n) {
			if (pthread_create(&jobs[next]->tid, NULL, job_main,
			    jobs[next]) != 0) {
				warnx_("thread: %s", strerror(errno));
				jobs[next]->exit = RP_EX_RUNTIME;
				atomic_store(&jobs[next]->done, 1);
				finished++;
				next++;
				continue;
			}
			jobs[next]->started = 1;
			running++;
			next++;
		}
		sig = sigtimedwait(&mask, &si, &ts);
		if (sig == SIGINT || sig == SIGTERM) {
			g_signal = sig;
			fprintf(stderr, "egressd replay: %s: cancelling\n",
			    sig == SIGINT ? "SIGINT" : "SIGTERM");
		}
		for (i = 0; i < next; i++) {
			if (jobs[i]->started && atomic_load(&jobs[i]->done)) {
				pthread_join(jobs[i]->tid, NULL);
				jobs[i]->started = 0;
				running--;
				finished++;
			}
		}
		/* not started yet and cancelled: they run, and skip */
	}
	for (i = 0; i < n; i++)
		if (jobs[i]->exit > rc)
			rc = jobs[i]->exit;
	return rc;
}

/* After the run: the private folder goes (it holds raw output, the
 * socket, the patch base) once every step is final; then the seal. */
static void
job_finish(struct job *j)
{
	if (j->exit != RP_EX_UNRESOLVED && j->privfd != -1) {
		close(j->privfd);
		j->privfd = -1;
		if (eg_rp_rmtree(j->dirfd, RP_PRIV) == -1)
			warnx_("%s/%s: cannot remove: %s", j->dir, RP_PRIV,
			    strerror(errno));
	}
	seal(j);
}

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (j->dirfd > 0)
		close(j->dirfd);
	if (j->privfd > 0)
		close(j->privfd);
	if (j->stepsfd > 0)
		close(j->stepsfd);
	eg_free(j->secrets);
	eg_free(j->plan_text);
	eg_rp_plan_free(j->plan);
	eg_free(j);
}

static struct job *
job_new(void)
{
	struct job *j = eg_calloc(1, sizeof(*j));

	if (j != NULL)
		j->dirfd = j->privfd = j->stepsfd = -1;
	return j;
}

static void
summary(const struct job *j)
{
	fprintf(stderr, "egressd replay: %s: %s, exit %d: %s\n",
	    j->plan->name, j->run.state, j->exit, j->dir);
}

static void
block_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	(void)pthread_sigmask(SIG_BLOCK, &mask, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
}

int
eg_rp_run_plans(const struct rp_opts *o)
{
	struct job **jobs;
	struct proxy *pxs;
	char plandir[PATH_MAX], rp[PATH_MAX], *slash, ident[RP_IDENT_MAX];
	char *cfg_text = NULL, rec[PATH_MAX];
	size_t i, k, len, npx = 0, cfg_len;
	time_t now = time(NULL);
	int rc = RP_EX_OK, r;

	if (self_exe() == -1)
		return RP_EX_RUNTIME;
	jobs = eg_calloc(o->nplans, sizeof(*jobs));
	pxs = eg_calloc(o->nplans, sizeof(*pxs));
	if (jobs == NULL || pxs == NULL) {
		warnx_("out of memory");
		eg_free(jobs);
		eg_free(pxs);
		return RP_EX_RUNTIME;
	}
	/* every plan is checked before anything runs */
	for (i = 0; i < o->nplans; i++) {
		if ((jobs[i] = job_new()) == NULL) {
			rc = RP_EX_RUNTIME;
			goto out;
		}
		jobs[i]->plan_path = o->plans[i];
		jobs[i]->key = o->key;
		jobs[i]->plan_text = slurp(AT_FDCWD, o->plans[i], RP_PLAN_MAX,
		    &jobs[i]->plan_len);
		if (jobs[i]->plan_text == NULL) {
			warnx_("%s: %s", o->plans[i], errno == EFBIG ?
			    "too large" : strerror(errno));
			rc = RP_EX_USAGE;
			continue;
		}
		if (realpath(o->plans[i], rp) == NULL) {
			warnx_("%s: %s", o->plans[i], strerror(errno));
			rc = RP_EX_USAGE;
			continue;
		}
		snprintf(plandir, sizeof(plandir), "%s", rp);
		slash = strrchr(plandir, '/');
		if (slash == plandir)
			slash[1] = '\0';
		else
			*slash = '\0';
		jobs[i]->plan = load_plan(o->plans[i], plandir,
		    jobs[i]->plan_text, jobs[i]->plan_len, o->config, 1);
		if (jobs[i]->plan == NULL)
			rc = RP_EX_USAGE;
	}
	if (rc != RP_EX_OK)
		goto out;

	/* record directories, then a proxy per configuration */
	for (i = 0; i < o->nplans; i++) {
		struct job *j = jobs[i];

		if (o->out != NULL)
			snprintf(rec, sizeof(rec), "%s", o->out);
		else
			(void)expand_record(j->plan->record, j->plan->base, now,
			    rec, sizeof(rec));
		if (rec[0] != '/' && getcwd(rp, sizeof(rp)) != NULL) {
			if (snprintf(j->dir, sizeof(j->dir), "%s/%s", rp, rec)
			    >= (int)sizeof(j->dir)) {
				warnx_("%s: path too long", rec);
				rc = RP_EX_USAGE;
				goto out;
			}
		} else
			snprintf(j->dir, sizeof(j->dir), "%s", rec);
		for (k = 0; k < i; k++)
			if (strcmp(jobs[k]->dir, j->dir) == 0)
				snprintf(j->dir + strlen(j->dir),
				    sizeof(j->dir) - strlen(j->dir), "-%zu",
				    i + 1);
		snprintf(j->run.name, sizeof(j->run.name), "%s",
		    j->plan->name);
		uuid4(j->run.id);
		eg_rp_ts_now(j->run.started);
		snprintf(j->run.state, sizeof(j->run.state), "running");
		j->run.deadline = j->plan->deadline;
		j->run.public = j->plan->public;
		j->run.sup_pid = (long)getpid();
		if (eg_rp_ident_of(getpid(), ident, sizeof(ident)) == 0)
			snprintf(j->run.sup_start, sizeof(j->run.sup_start),
			    "%s", ident);
		j->run.steps = (int)j->plan->nsteps;
		if (j->plan->config != NULL) {
			cfg_text = slurp(AT_FDCWD, j->plan->config, 16 << 20,
			    &cfg_len);
			if (cfg_text == NULL) {
				warnx_("%s: %s", j->plan->config,
				    strerror(errno));
				rc = RP_EX_RUNTIME;
				goto out;
			}
		} else {
			cfg_len = strlen(eg_cfg_default_text);
			cfg_text = eg_strdup(eg_cfg_default_text);
		}
		r = record_create(j, cfg_text != NULL ? cfg_text : "",
		    cfg_text != NULL ? cfg_len : 0);
		eg_free(cfg_text);
		cfg_text = NULL;
		if (r == -1 || secrets_load(j) == -1) {
			rc = RP_EX_RUNTIME;
			goto out;
		}
		/* the tree the patch is taken against */
		rec[0] = '\0';
		if (rp_patch_begin(j->plan->workdir, j->privfd, rec,
		    sizeof(rec)) == -1)
			warnx_("%s: patch: %s", j->plan->workdir, rec);
		/* group by configuration */
		for (k = 0; k < npx; k++) {
			const char *a = pxs[k].jobs[0]->plan->config;
			const char *b = j->plan->config;

			if ((a == NULL && b == NULL) || (a != NULL && b != NULL &&
			    strcmp(a, b) == 0))
				break;
		}
		if (k == npx) {
			pxs[k].jobs = eg_calloc(o->nplans, sizeof(struct job *));
			if (pxs[k].jobs == NULL) {
				rc = RP_EX_RUNTIME;
				goto out;
			}
			npx++;
		}
		pxs[k].jobs[pxs[k].njobs++] = j;
		j->px = &pxs[k];
	}
	block_signals();
	for (k = 0; k < npx; k++) {
		char cfg[PATH_MAX + 16];

		if (proxy_dir(&pxs[k]) == -1) {
			rc = RP_EX_RUNTIME;
			goto out;
		}
		snprintf(cfg, sizeof(cfg), "%s/config.ini", pxs[k].jobs[0]->dir);
		r = proxy_start(&pxs[k], cfg, pxs[k].jobs[0]->plan->steps[0].phase,
		    o->key);
		if (r != 0) {
			rc = r;
			goto out;
		}
	}
	rc = run_jobs(jobs, o->nplans, o->jobs > 0 ? o->jobs : 1);
	for (k = 0; k < npx; k++)
		proxy_stop(&pxs[k]);
	for (i = 0; i < o->nplans; i++) {
		job_finish(jobs[i]);
		summary(jobs[i]);
		if (jobs[i]->exit > rc)
			rc = jobs[i]->exit;
	}
out:
	for (k = 0; k < npx; k++) {
		proxy_stop(&pxs[k]);
		eg_free(pxs[k].jobs);
	}
	for (i = 0; i < o->nplans; i++)
		job_free(jobs[i]);
	eg_free(jobs);
	eg_free(pxs);
	(void)len;
	return rc;
}

/* --- --resume ------------------------------------------------------------------ */

int
eg_rp_resume(const char *dir, const char *key)
{
	struct proxy px;
	struct job *j;
	json_t *org;
	json_error_t jerr;
	char cfg[PATH_MAX + 16], ident[RP_IDENT_MAX];
	const char *plan_path, *plandir;
	int rc, fd;

	memset(&px, 0, sizeof(px));
	if (self_exe() == -1 || (j = job_new()) == NULL)
		return RP_EX_RUNTIME;
	j->resume = 1;
	j->key = key;
	if (realpath(dir, j->dir) == NULL ||
	    (j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
	    == -1) {
		warnx_("%s: %s", dir, strerror(errno));
		job_free(j);
		return RP_EX_USAGE;
	}
	if (eg_rp_run_read(j->dirfd, &j->run) == -1) {
		warnx_("%s: not a replay record directory (run.json: %s)",
		    dir, strerror(errno));
		job_free(j);
		return RP_EX_USAGE;
	}
	if (j->run.sup_pid != 0 && (pid_t)j->run.sup_pid != getpid() &&
	    eg_rp_ident_alive((pid_t)j->run.sup_pid, j->run.sup_start) &&
	    strcmp(j->run.state, "running") == 0) {
		warnx_("%s: its supervisor (pid %ld) is still running", dir,
		    j->run.sup_pid);
		job_free(j);
		return RP_EX_USAGE;
	}
	j->privfd = openat(j->dirfd, RP_PRIV, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	j->stepsfd = openat(j->dirfd, "steps", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	if (j->privfd == -1) {
		/* the run ended: every step is final; seal again */
		fprintf(stderr, "egressd replay: %s: the run is over (%s, "
		    "exit %d)\n", dir, j->run.state, j->run.exit);
		j->exit = j->run.has_exit ? j->run.exit : RP_EX_OK;
		seal(j);
		rc = j->exit;
		job_free(j);
		return rc;
	}
	fd = openat(j->privfd, "origin.json", O_RDONLY | O_CLOEXEC);
	org = fd != -1 ? json_loadfd(fd, 0, &jerr) : NULL;
	if (fd != -1)
		close(fd);
	plan_path = json_string_value(json_object_get(org, "plan"));
	plandir = json_string_value(json_object_get(org, "dir"));
	j->plan_text = slurp(j->dirfd, "plan.ini", RP_PLAN_MAX, &j->plan_len);
	if (plan_path == NULL || plandir == NULL || j->plan_text == NULL ||
	    j->stepsfd == -1) {
		warnx_("%s: incomplete record directory", dir);
		json_decref(org);
		job_free(j);
		return RP_EX_RUNTIME;
	}
	snprintf(cfg, sizeof(cfg), "%s/config.ini", j->dir);
	j->plan = load_plan(plan_path, plandir, j->plan_text, j->plan_len,
	    cfg, 0);
	json_decref(org);
	if (j->plan == NULL) {
		job_free(j);
		return RP_EX_USAGE;
	}
	if (secrets_load(j) == -1) {
		job_free(j);
		return RP_EX_RUNTIME;
	}
	j->run.sup_pid = (long)getpid();
	if (eg_rp_ident_of(getpid(), ident, sizeof(ident)) == 0)
		snprintf(j->run.sup_start, sizeof(j->run.sup_start), "%s",
		    ident);
	snprintf(j->run.state, sizeof(j->run.state), "running");
	j->run.ended[0] = '\0';
	j->run.has_exit = 0;
	if (run_put(j) == -1) {
		job_free(j);
		return RP_EX_RUNTIME;
	}
	block_signals();
	px.jobs = &j;
	px.njobs = 1;
	j->px = &px;
	if (proxy_dir(&px) == -1) {
		job_free(j);
		return RP_EX_RUNTIME;
	}
	/* a socket left by the dead supervisor */
	snprintf(ident, sizeof(ident), "proxy.sock");
	if (!px.tmpdir)
		(void)unlinkat(j->privfd, ident, 0);
	{
		char s[RP_NAME_MAX + 8];

		snprintf(s, sizeof(s), "%.56s.sock", j->plan->name);
		if (!px.tmpdir)
			(void)unlinkat(j->privfd, s, 0);
	}
	rc = proxy_start(&px, cfg, j->plan->steps[0].phase, key);
	if (rc != 0) {
		proxy_stop(&px);
		job_free(j);
		return rc;
	}
	rc = run_jobs(&j, 1, 1);
	proxy_stop(&px);
	job_finish(j);
	summary(j);
	if (j->exit > rc)
		rc = j->exit;
	job_free(j);
	return rc;
}

/* --- --cancel ---------------------------------------------------------------- */

int
eg_rp_cancel(const char *dir, const char *reason)
{
	struct rp_run run;
	struct rp_receipt r;
	struct dirent *de;
	DIR *d;
	int dfd, privfd, stepsfd, fd, sent = 0;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1 || eg_rp_run_read(dfd, &run) == -1) {
		warnx_("%s: not a replay record directory", dir);
		if (dfd != -1)
			close(dfd);
		return RP_EX_USAGE;
	}
	privfd = openat(dfd, RP_PRIV, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (privfd == -1 || strcmp(run.state, "running") != 0) {
		warnx_("%s: the run is not running (%s)", dir, run.state);
		if (privfd != -1)
			close(privfd);
		close(dfd);
		return RP_EX_FAIL;
	}
	if (reason == NULL || reason[0] == '\0')
		reason = "cancelled";
	if (rp_write_atomic(privfd, "cancel", reason, strlen(reason), 0600)
	    == -1) {
		warnx_("%s/%s/cancel: %s", dir, RP_PRIV, strerror(errno));
		close(privfd);
		close(dfd);
		return RP_EX_RUNTIME;
	}
	close(privfd);
	/* the supervisor, if it is the one that wrote run.json */
	if (run.sup_pid != 0 && eg_rp_ident_signal((pid_t)run.sup_pid,
	    run.sup_start, SIGUSR1) == 0)
		sent = 1;
	if (!sent) {
		/* no supervisor: stop running keepers ourselves */
		stepsfd = openat(dfd, "steps", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		d = stepsfd != -1 ? fdopendir(stepsfd) : NULL;
		while (d != NULL && (de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			fd = openat(dirfd(d), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd == -1)
				continue;
			if (eg_rp_receipt_read(fd, &r) == 0 && r.pid != 0 &&
			    eg_rp_ident_signal((pid_t)r.pid, r.pid_start,
			    SIGTERM) == 0)
				fprintf(stderr, "egressd replay: step %s "
				    "(pid %ld): stopped\n", r.step, r.pid);
			close(fd);
		}
		if (d != NULL)
			closedir(d);
		else if (stepsfd != -1)
			close(stepsfd);
		fprintf(stderr, "egressd replay: %s: no supervisor is "
		    "running; --resume %s finishes the cancel\n", dir, dir);
	}
	close(dfd);
	return RP_EX_OK;
}
