/*
 * supervisor.c: runs replay plans (and resumes them) behind one private
 * in-process proxy per configuration.  Each plan is a job: its own
 * session of the proxy, its own record directory and thread (step.c runs
 * its steps).  The main thread waits for SIGINT/SIGTERM (a cancel of
 * every job) and for the jobs; at the end the private folders go and
 * each record is sealed.
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
#include "../common/proxylog.h"
#include "../common/sig.h"
#include "alloc.h"
#include "capture.h"
#include "plan.h"
#include "proc.h"
#include "receipt.h"
#include "replay.h"
#include "job.h"
#include "redact.h"

extern const char eg_cfg_default_text[];

/* the most of a plan's name that a session (and its socket, NAME.sock)
 * takes: room for "-N" within RP_NAME_MAX */
#define RP_SESS_NAME	56

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

	p = rp_plan_parse(text, len, path, plandir, rp_getenv,
	    rp_has_module("sandbox"), config_override, &errs);
	if (p != NULL && rp_expand_record(p->record,
	    p->name != NULL ? p->name : p->base, 0, rec,
	    sizeof(rec)) == -1)
		rp_errs_add(&errs, path, 0, "record = %s: only %%n, %%t and "
		    "%%%% may follow a %%", p->record);
	/* workdir: it must exist; canonical, like the sandbox's getcwd() */
	if (p != NULL && errs.n == 0) {
		if (realpath(p->workdir, dir) == NULL)
			rp_errs_add(&errs, path, 0, "workdir %s: %s",
			    p->workdir, strerror(errno));
		else {
			eg_free(p->workdir);
			if ((p->workdir = eg_strdup(dir)) == NULL)
				rp_errs_add(&errs, path, 0, "out of memory");
		}
	}
	if (p != NULL && errs.n == 0 && check_phases) {
		err[0] = '\0';
		ex = egress_new_from_file(p->config, err, sizeof(err));
		if (ex == NULL) {
			rp_errs_add(&errs, path, 0, "config %s:\n%s",
			    p->config != NULL ? p->config : "(default)", err);
		}
		for (i = 0; ex != NULL && i < p->nsteps; i++) {
			if (egress_set_option(ex, "phase", p->steps[i].phase)
			    == 0 && egress_check(ex) == 0)
				continue;
			rp_errs_add(&errs, path, p->steps[i].phase_line,
			    "phase '%s' is not a phase of %s",
			    p->steps[i].phase, p->config != NULL ? p->config :
			    "the embedded default configuration");
		}
		if (ex != NULL)
			egress_free(ex);
	}
	if (errs.n > 0) {
		if (eg_buf_len(&errs.b) != 0)
			(void)fwrite(eg_buf_data(&errs.b), 1,
			    eg_buf_len(&errs.b), stderr);
		else
			fputs("egressd replay: plan error\n", stderr);
		rp_errs_free(&errs);
		rp_plan_free(p);
		return NULL;
	}
	rp_errs_free(&errs);
	return p;
}

/* --- record directories -------------------------------------------------------- */

static int
write_file(int dirfd, const char *name, const char *buf, size_t len)
{
	if (mc_write_atomic(dirfd, name, buf, len, 0644) == -1) {
		rp_warn("%s: %s", name, strerror(errno));
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
	rc = mc_write_json(j->privfd, "origin.json", o);
	json_decref(o);
	return rc;
}

/*
 * Make the record directory j->dir.  When it exists already, "-2", "-3",
 * ... is appended (SPEC "### replay"); mkdir is the claim, so two runs
 * started in the same second get two directories.  With -o (fixed) an
 * existing DIR is an error.  From then on the directory is reached only
 * through j->dirfd, opened from its parent without following a symlink;
 * j->dir becomes the path that descriptor has, and its identity (device,
 * inode) goes into run.json for --resume.  0, -1 (runtime) or -2 (an
 * existing -o DIR); messages printed.
 */
static int
record_mkdir(struct job *j, int fixed)
{
	char parent[PATH_MAX], base[PATH_MAX], name[PATH_MAX + 16], *slash;
	struct stat st;
	size_t len;
	int pfd, n;

	snprintf(parent, sizeof(parent), "%s", j->dir);
	len = strlen(parent);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	slash = strrchr(parent, '/');
	if (slash == NULL || slash[1] == '\0' || strcmp(slash + 1, ".") == 0 ||
	    strcmp(slash + 1, "..") == 0) {
		rp_warn("%s: not a name for a new directory", j->dir);
		return fixed ? -2 : -1;
	}
	snprintf(base, sizeof(base), "%s", slash + 1);
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (rp_mkdir_p(parent, 0755) == -1 && errno != EEXIST) {
		rp_warn("%s: %s", parent, strerror(errno));
		return -1;
	}
	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		rp_warn("%s: %s", parent, strerror(errno));
		return -1;
	}
	for (n = 1;; n++) {
		if (n == 1)
			snprintf(name, sizeof(name), "%s", base);
		else
			snprintf(name, sizeof(name), "%s-%d", base, n);
		if (mkdirat(pfd, name, 0755) == 0)
			break;
		if (errno == EEXIST && fixed) {
			rp_warn("%s: exists (a record directory is never "
			    "reused; -o another)", j->dir);
			close(pfd);
			return -2;
		}
		if (errno != EEXIST || n >= 9999) {
			rp_warn("%s/%s: %s", parent, name, strerror(errno));
			close(pfd);
			return -1;
		}
	}
	j->dirfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(pfd);
	if (j->dirfd == -1 || fstat(j->dirfd, &st) == -1) {
		rp_warn("%s/%s: %s", parent, name, strerror(errno));
		return -1;
	}
	j->run.has_dirid = 1;
	j->run.dir_dev = (unsigned long long)st.st_dev;
	j->run.dir_ino = (unsigned long long)st.st_ino;
	/* canonical (the sandbox binds it read-only when under workdir) */
	rp_fd_path(j->dirfd, j->dir, sizeof(j->dir));
	return 0;
}

/* Take the record directory's lock, or say who holds it; 0, or the exit
 * status (2: another supervisor, 3: an error). */
static int
record_lock(struct job *j, const char *shown)
{
	long holder;
	int r;

	r = rp_lock(j->dirfd, &j->lockfd, &holder);
	if (r == 0)
		return 0;
	if (r == 1) {
		if (holder == 0 && j->run.sup_pid != 0)
			holder = j->run.sup_pid;
		if (holder != 0)
			rp_warn("%s: another supervisor (pid %ld) is still "
			    "running on this record directory (it holds "
			    "%s/.lock)", shown, holder, j->dir);
		else
			rp_warn("%s: another supervisor (pid unknown) is "
			    "still running on this record directory (it holds "
			    "%s/.lock)", shown, j->dir);
		return RP_EX_USAGE;
	}
	rp_warn("%s/.lock: %s", j->dir, strerror(errno));
	return RP_EX_RUNTIME;
}

/* Make DIR and everything in it before the first step; 0, -1 (runtime)
 * or -2 (usage: -o DIR exists). */
static int
record_create(struct job *j, const char *config_text, size_t config_len,
    int fixed)
{
	struct rp_receipt r;
	char name[RP_NAME_MAX + 8], *red;
	size_t i, redlen;
	int fd, rc;

	if ((rc = record_mkdir(j, fixed)) != 0)
		return rc;
	if (record_lock(j, j->dir) != 0)
		return -1;
	if (mkdirat(j->dirfd, RP_PRIV, 0700) == -1 ||
	    mkdirat(j->dirfd, "steps", 0755) == -1) {
		rp_warn("%s: %s", j->dir, strerror(errno));
		return -1;
	}
	j->privfd = openat(j->dirfd, RP_PRIV, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	j->stepsfd = openat(j->dirfd, "steps", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (j->privfd == -1 || j->stepsfd == -1)
		return -1;
	/* the copy of the plan holds no secret value (SPEC guarantee 7) */
	if ((red = rp_redact_mem(j->secrets, j->nsecrets, j->plan_text,
	    j->plan_len, &redlen, NULL)) == NULL) {
		rp_warn("out of memory");
		return -1;
	}
	rc = write_file(j->dirfd, "plan.ini", red, redlen);
	eg_free(red);
	if (rc == -1 ||
	    write_file(j->dirfd, "config.ini", config_text, config_len) == -1 ||
	    origin_write(j) == -1)
		return -1;
	if (rp_run_put(j) == -1)
		return -1;
	for (i = 0; i < j->plan->nsteps; i++) {
		rp_step_dirname(j->plan, i, name, sizeof(name));
		if (mkdirat(j->stepsfd, name, 0755) == -1 ||
		    (fd = rp_open_stepfd(j, i)) == -1) {
			rp_warn("%s/steps/%s: %s", j->dir, name,
			    strerror(errno));
			return -1;
		}
		rp_receipt_init(j, i, &r);
		if (rp_receipt_put(j, i, fd, &r) == -1) {
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
	const struct mc_strv *s = &j->plan->secrets;
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
/*
 * --resume: the record's plan.ini has the secret values [REDACTED].  When
 * the plan file it was copied from, redacted with today's values, gives
 * the same bytes, the steps left are run from that file (the value the
 * plan wrote, the same command_sha256); else from the copy as it is.
 */
static void
plan_unredact(struct job *j, const char *path, const char *plandir,
    const char *cfg)
{
	struct rp_plan *p;
	char *orig, *red = NULL;
	size_t olen, rlen;

	if (memmem(j->plan_text, j->plan_len, "[REDACTED]", 10) == NULL)
		return;
	if ((orig = rp_slurp(AT_FDCWD, path, RP_PLAN_MAX, &olen)) == NULL)
		return;
	if (secrets_load(j) == 0)
		red = rp_redact_mem(j->secrets, j->nsecrets, orig, olen, &rlen,
		    NULL);
	eg_free(j->secrets);
	j->secrets = NULL;
	j->nsecrets = 0;
	if (red == NULL || rlen != j->plan_len ||
	    memcmp(red, j->plan_text, rlen) != 0 ||
	    (p = load_plan(path, plandir, orig, olen, cfg, 0)) == NULL) {
		eg_free(red);
		eg_free(orig);
		return;
	}
	eg_free(red);
	rp_plan_free(j->plan);
	j->plan = p;
	eg_free(j->plan_text);
	j->plan_text = orig;
	j->plan_len = olen;
}


/* The session's audit lines: secret values replaced before they are
 * written and chained (SPEC guarantee 7). */
static int
secrets_redact(struct proxy *px, struct job *j)
{
	const char **v;
	size_t i;
	int rc;

	if (j->nsecrets == 0)
		return 0;
	if ((v = eg_calloc(j->nsecrets, sizeof(*v))) == NULL) {
		rp_warn("out of memory");
		return -1;
	}
	for (i = 0; i < j->nsecrets; i++)
		v[i] = j->secrets[i].val;
	rc = egress_session_set_redact(px->ex, j->session, v, j->nsecrets);
	eg_free(v);
	if (rc == -1)
		rp_warn("session %s: %s", j->session,
		    egress_errmsg(px->ex));
	return rc;
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
	egress_set_log_cb(px->ex, mc_proxy_log,
	    (void *)"egressd replay: proxy: ");
	snprintf(path, sizeof(path), "%s/proxy.sock", px->dir);
	if (egress_set_option(px->ex, "session_dir", px->dir) == -1 ||
	    egress_set_option(px->ex, "unix", path) == -1 ||
	    egress_set_option(px->ex, "unix_client", "sandbox") == -1 ||
	    egress_set_option(px->ex, "unix_relay", "yes") == -1 ||
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
	    egress_subscribe(px->ex, rp_on_event, px) == -1 ||
	    egress_start(px->ex) == -1 || egress_run_thread(px->ex) == -1) {
		fprintf(stderr, "egressd replay: %s\n",
		    egress_errmsg(px->ex));
		return RP_EX_RUNTIME;
	}
	for (i = 0; i < px->njobs; i++) {
		j = px->jobs[i];
		snprintf(j->session, sizeof(j->session), "%.*s",
		    RP_SESS_NAME, j->plan->name);
		for (k = 0; k < i; k++)
			if (strcmp(px->jobs[k]->session, j->session) == 0)
				snprintf(j->session, sizeof(j->session),
				    "%.*s-%u", RP_SESS_NAME, j->plan->name,
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
		/* through the descriptor (also for a reopen): the path may
		 * have been replaced */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/audit.log",
		    j->dirfd);
		if (egress_session_set_audit(px->ex, j->session, path,
		    j->run.id, 1) == -1) {
			fprintf(stderr, "egressd replay: %s: %s\n", path,
			    egress_errmsg(px->ex));
			return RP_EX_RUNTIME;
		}
		if (secrets_redact(px, j) == -1)
			return RP_EX_RUNTIME;
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
		(void)rp_rmtree(AT_FDCWD, px->dir);
}

/* The folder for the proxy's sockets: DIR/.private, or a temp folder
 * when several jobs share the proxy or the path is too long. */
static int
proxy_dir(struct proxy *px)
{
	const char *tmp;
	size_t name;

	/* DIR/.private/NAME.sock (NAME: at most RP_SESS_NAME of the run's
	 * name) and DIR/.private/proxy.sock must fit sun_path */
	name = px->njobs == 1 ? strlen(px->jobs[0]->plan->name) : 0;
	if (name < sizeof("proxy"))
		name = sizeof("proxy");
	if (name > RP_SESS_NAME)
		name = RP_SESS_NAME;
	if (px->njobs == 1 && strlen(px->jobs[0]->dir) + 1 + strlen(RP_PRIV) +
	    1 + name + sizeof(".sock") <=
	    sizeof(((struct sockaddr_un *)0)->sun_path) &&
	    snprintf(px->dir, sizeof(px->dir), "%s/%s", px->jobs[0]->dir,
	    RP_PRIV) < (int)sizeof(px->dir))
		return 0;
	tmp = getenv("XDG_RUNTIME_DIR");
	if (tmp == NULL || tmp[0] != '/' || access(tmp, W_OK) == -1)
		tmp = "/tmp";
	snprintf(px->dir, sizeof(px->dir), "%s/egressd-replay.XXXXXX", tmp);
	if (mkdtemp(px->dir) == NULL) {
		rp_warn("%s: %s", px->dir, strerror(errno));
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

	n = readlink("/proc/self/exe", rp_exe, sizeof(rp_exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(rp_exe) - 1) {
		rp_warn("/proc/self/exe: %s", strerror(errno));
		return -1;
	}
	rp_exe[n] = '\0';
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
	int rc = RP_EX_OK, sig, e;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	while (finished < n) {
		while (running < max && next < n) {
			if ((e = pthread_create(&jobs[next]->tid, NULL,
			    rp_job_main, jobs[next])) != 0) {
				rp_warn("thread: %s", strerror(e));
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
			atomic_store(&rp_signal, sig);
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
		if (rp_rmtree(j->dirfd, RP_PRIV) == -1)
			rp_warn("%s/%s: cannot remove: %s", j->dir, RP_PRIV,
			    strerror(errno));
	}
	rp_seal(j);
}

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (j->lockfd > 0)
		close(j->lockfd);
	if (j->dirfd > 0)
		close(j->dirfd);
	if (j->privfd > 0)
		close(j->privfd);
	if (j->stepsfd > 0)
		close(j->stepsfd);
	eg_free(j->secrets);
	eg_free(j->plan_text);
	rp_plan_free(j->plan);
	eg_free(j);
}

static struct job *
job_new(void)
{
	struct job *j = eg_calloc(1, sizeof(*j));

	if (j != NULL) {
		j->dirfd = j->privfd = j->stepsfd = j->lockfd = -1;
		pthread_mutex_init(&j->umtx, NULL);
	}
	return j;
}

/* The last line: the record directory by the path its descriptor has
 * now (the one the run wrote, wherever it was moved). */
static void
summary(const struct job *j)
{
	char real[PATH_MAX];

	rp_fd_path(j->dirfd, real, sizeof(real));
	fprintf(stderr, "egressd replay: %s: %s, exit %d: %s\n",
	    j->plan->name, j->run.state, j->exit, real);
}

static void
block_signals(void)
{
	static const int waited[] = { SIGINT, SIGTERM, SIGUSR1, SIGHUP };
	sigset_t mask;

	(void)mc_sig_block(&mask, waited, sizeof(waited) / sizeof(waited[0]));
	(void)signal(SIGPIPE, SIG_IGN);
}

int
rp_run_plans(const struct rp_opts *o)
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
		rp_warn("out of memory");
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
		jobs[i]->plan_text = rp_slurp(AT_FDCWD, o->plans[i], RP_PLAN_MAX,
		    &jobs[i]->plan_len);
		if (jobs[i]->plan_text == NULL) {
			rp_warn("%s: %s", o->plans[i], errno == EFBIG ?
			    "too large" : strerror(errno));
			rc = RP_EX_USAGE;
			continue;
		}
		if (realpath(o->plans[i], rp) == NULL) {
			rp_warn("%s: %s", o->plans[i], strerror(errno));
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

	/* from here on a signal waits for run_jobs(): a --cancel (SIGUSR1)
	 * sent the moment run.json exists must not kill the supervisor */
	block_signals();
	/* record directories, then a proxy per configuration */
	for (i = 0; i < o->nplans; i++) {
		struct job *j = jobs[i];

		if (o->out != NULL)
			snprintf(rec, sizeof(rec), "%s", o->out);
		else
			(void)rp_expand_record(j->plan->record, j->plan->name, now,
			    rec, sizeof(rec));
		if (rec[0] != '/' && getcwd(rp, sizeof(rp)) != NULL) {
			if (snprintf(j->dir, sizeof(j->dir), "%s/%s", rp, rec)
			    >= (int)sizeof(j->dir)) {
				rp_warn("%s: path too long", rec);
				rc = RP_EX_USAGE;
				goto out;
			}
		} else
			snprintf(j->dir, sizeof(j->dir), "%s", rec);
		snprintf(j->run.name, sizeof(j->run.name), "%s",
		    j->plan->name);
		rp_uuid4(j->run.id);
		rp_ts_now(j->run.started);
		snprintf(j->run.state, sizeof(j->run.state), "running");
		j->run.deadline = j->plan->deadline;
		j->run.public = j->plan->public;
		j->run.sup_pid = (long)getpid();
		if (rp_ident_of(getpid(), ident, sizeof(ident)) == 0)
			snprintf(j->run.sup_start, sizeof(j->run.sup_start),
			    "%s", ident);
		j->run.steps = (int)j->plan->nsteps;
		if (j->plan->config != NULL) {
			cfg_text = rp_slurp(AT_FDCWD, j->plan->config, 16 << 20,
			    &cfg_len);
			if (cfg_text == NULL) {
				rp_warn("%s: %s", j->plan->config,
				    strerror(errno));
				rc = RP_EX_RUNTIME;
				goto out;
			}
		} else {
			cfg_len = strlen(eg_cfg_default_text);
			cfg_text = eg_strdup(eg_cfg_default_text);
		}
		/* the record's copy: routes' literal header values
		 * [REDACTED] (the audit chain hashes the same text) */
		if (cfg_text != NULL) {
			size_t rlen;
			char *red = eg_cfg_redact(cfg_text, cfg_len, &rlen);

			eg_free(cfg_text);
			cfg_text = red;
			cfg_len = rlen;
		}
		r = secrets_load(j) == -1 ? -1 : record_create(j,
		    cfg_text != NULL ? cfg_text : "",
		    cfg_text != NULL ? cfg_len : 0, o->out != NULL);
		eg_free(cfg_text);
		cfg_text = NULL;
		if (r != 0) {
			rc = r == -2 ? RP_EX_USAGE : RP_EX_RUNTIME;
			goto out;
		}
		/* the tree the patch is taken against */
		rec[0] = '\0';
		if (rp_patch_begin(j->plan->workdir, j->privfd, rec,
		    sizeof(rec)) == -1)
			rp_warn("%s: patch: %s", j->plan->workdir, rec);
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
	for (k = 0; k < npx; k++) {
		char cfg[PATH_MAX + 16];

		if (proxy_dir(&pxs[k]) == -1) {
			rc = RP_EX_RUNTIME;
			goto out;
		}
		/* through the descriptor: the path may have been replaced */
		snprintf(cfg, sizeof(cfg), "/proc/self/fd/%d/config.ini",
		    pxs[k].jobs[0]->dirfd);
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

/*
 * Open the record directory DIR for --resume: DIR itself, never through a
 * symlink (O_NOFOLLOW), locked before anything else is decided, and the
 * directory whose identity run.json holds (a copy put in its place is
 * refused).  0, or the exit status (messages printed).
 */
static int
resume_open(struct job *j, const char *dir)
{
	struct stat st;
	int rc;

	j->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->dirfd == -1) {
		rp_warn("%s: %s", dir, errno == ELOOP || errno == ENOTDIR ?
		    "not a directory (a symlink is refused: --resume takes "
		    "the record directory itself)" : strerror(errno));
		return RP_EX_USAGE;
	}
	rp_fd_path(j->dirfd, j->dir, sizeof(j->dir));
	/* run.json first only to name a holder when /proc/locks cannot */
	(void)rp_run_read(j->dirfd, &j->run);
	if ((rc = record_lock(j, dir)) != 0)
		return rc;
	if (rp_run_read(j->dirfd, &j->run) == -1) {
		rp_warn("%s: not a replay record directory (run.json: %s)",
		    dir, strerror(errno));
		return RP_EX_USAGE;
	}
	if (fstat(j->dirfd, &st) == -1) {
		rp_warn("%s: %s", dir, strerror(errno));
		return RP_EX_RUNTIME;
	}
	if (j->run.has_dirid && (j->run.dir_dev != (unsigned long long)
	    st.st_dev || j->run.dir_ino != (unsigned long long)st.st_ino)) {
		rp_warn("%s: not the directory this run was recorded in "
		    "(run.json: device %llu inode %llu; %s: device %llu inode "
		    "%llu): it was replaced or copied; nothing is resumed, "
		    "sealed or signed", dir, j->run.dir_dev, j->run.dir_ino,
		    j->dir, (unsigned long long)st.st_dev,
		    (unsigned long long)st.st_ino);
		return RP_EX_RUNTIME;
	}
	return 0;
}

int
rp_resume(const char *dir, const char *key, const char *force)
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
	j->force = force;
	/* a --cancel that finds our pid in run.json must not kill us */
	block_signals();
	if ((rc = resume_open(j, dir)) != 0) {
		job_free(j);
		return rc;
	}
	if (j->run.sup_pid != 0 && (pid_t)j->run.sup_pid != getpid() &&
	    rp_ident_alive((pid_t)j->run.sup_pid, j->run.sup_start) &&
	    strcmp(j->run.state, "running") == 0) {
		rp_warn("%s: its supervisor (pid %ld) is still running", dir,
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
		rp_seal(j);
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
	j->plan_text = rp_slurp(j->dirfd, "plan.ini", RP_PLAN_MAX, &j->plan_len);
	if (plan_path == NULL || plandir == NULL || j->plan_text == NULL ||
	    j->stepsfd == -1) {
		rp_warn("%s: incomplete record directory", dir);
		json_decref(org);
		job_free(j);
		return RP_EX_RUNTIME;
	}
	snprintf(cfg, sizeof(cfg), "/proc/self/fd/%d/config.ini", j->dirfd);
	j->plan = load_plan(plan_path, plandir, j->plan_text, j->plan_len,
	    cfg, 0);
	if (j->plan != NULL)
		plan_unredact(j, plan_path, plandir, cfg);
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
	if (rp_ident_of(getpid(), ident, sizeof(ident)) == 0)
		snprintf(j->run.sup_start, sizeof(j->run.sup_start), "%s",
		    ident);
	snprintf(j->run.state, sizeof(j->run.state), "running");
	j->run.ended[0] = '\0';
	j->run.has_exit = 0;
	if (j->force != NULL)
		snprintf(j->run.force_reason, sizeof(j->run.force_reason), "%s",
		    j->force);
	if (rp_run_put(j) == -1) {
		job_free(j);
		return RP_EX_RUNTIME;
	}
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

		snprintf(s, sizeof(s), "%.*s.sock", RP_SESS_NAME,
		    j->plan->name);
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
