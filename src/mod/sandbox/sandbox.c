/*
 * sandbox.c: "egressd run -- CMD", the sandbox module's entry point.  It
 * starts the proxy in-process on a private Unix socket (or uses a running
 * egressd's), scrubs the environment, launches CMD inside bubblewrap with
 * egressd relay as the only way out (or directly, with --sandbox none),
 * enforces the timeout and signals on the whole process tree, and exits
 * with CMD's status after a one-line summary of the decisions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "alloc.h"
#include "module.h"
#include "sandbox.h"
#include "../common/procwalk.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif

extern char **environ;
extern const struct eg_module eg_mod_sandbox;

enum sb_mode { SB_AUTO, SB_BWRAP, SB_NONE };

/* Variables whose name contains one of these (in any case) stay out. */
static const char *const secret_words[] = {
	"TOKEN", "SECRET", "PASSWORD", "API_KEY", "SSH_AUTH", "AWS_",
	"GITHUB_"
};

/* Set by egressd, never passed through or overridden. */
static const char *const proxy_vars[] = {
	"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"
};

struct run_opts {
	const char	*config;
	const char	*phase;
	const char	*proxy;		/* --proxy SOCKET */
	int		 handoff;	/* --proxy-handoff: it is a socket
					   egressd made for its own relay */
	const char	*audit;
	enum sb_mode	 mode;
	int		 mode_set;	/* --sandbox given */
	struct sb_strv	 rw, ro;	/* resolved */
	struct sb_strv	 env;		/* NAME or NAME=VALUE */
	struct sb_strv	 hide;		/* --hide, resolved */
	int		 launch_fd;	/* --launch-fd; -1: none */
	double		 timeout;	/* seconds; 0: none */
	char *const	*cmd;
};

/* Decision counters, bumped on loop threads. */
#define RUN_BLK_MAX	64	/* distinct blocked host:ports kept */
#define RUN_BLK_SHOW	10	/* in the closing summary */

struct run_blk {
	char			hp[280];	/* host:port, printable */
	unsigned long long	n;
};

struct run_counts {
	unsigned long long	allow, block, fail;
	/* the blocked host:ports, for the closing summary (under mtx: the
	   loop threads report at once) */
	pthread_mutex_t		mtx;
	struct run_blk		blk[RUN_BLK_MAX];
	size_t			nblk;
	unsigned long long	blk_other;	/* BLOCKs of host:ports past
						   RUN_BLK_MAX */
};

static const char run_usage[] =
"usage: egressd run [-c FILE] [--phase NAME] [--sandbox auto|bwrap|none]\n"
"                   [--proxy SOCKET] [--rw PATH]... [--ro PATH]...\n"
"                   [--env NAME[=VALUE]]... [--timeout SECONDS]\n"
"                   [--audit PATH] [--hide PATH]... [--launch-fd FD]\n"
"                   -- CMD [ARGS]\n";

static const char run_help[] =
"\n"
"Run CMD with egressd as its only way to the network.\n"
"\n"
"egressd starts a private proxy (from -c FILE, or the built-in default that\n"
"allows only the common model APIs), then runs CMD inside bubblewrap: all\n"
"namespaces unshared, so CMD has no network of its own; inside, egressd\n"
"relay listens on 127.0.0.1:3128 and hands each connection to the proxy.\n"
"CMD gets HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (and lower case) set to that\n"
"address and NO_PROXY empty.  Every connection is decided by the allowlist\n"
"of the phase and logged with client=sandbox pid=PID exe=PATH (the process\n"
"that connected); one the proxy closes for policy is reset.\n"
"\n"
"Inside the sandbox:\n"
"  /                     read-only\n"
"  /tmp /var/tmp /run    empty, private\n"
"  /home /root $HOME     empty, private (your files and ~/.ssh are hidden);\n"
"                        HOME is a fresh writable tmpfs, gone at the end:\n"
"                        agent logins (~/.claude*, ~/.codex) are not there\n"
"                        (--env the API key, or --ro/--rw the directory),\n"
"                        nor programs installed under a home or /tmp (exit\n"
"                        127: egressd names the --ro that shows them)\n"
"  the working dir       read-write (so are --rw paths)\n"
"  --ro paths            read-only (to show something under a home dir)\n"
"  --audit PATH          read-only, even in the working dir\n"
"  Unix sockets          none: socket(AF_UNIX) fails (seccomp), host sockets\n"
"                        that / shows cannot be reached\n"
"  no other processes, no SSH agent, no name resolution: the proxy resolves\n"
"\n"
"Options:\n"
"  -c, --config FILE     proxy configuration (allowlists per phase)\n"
"  -p, --phase NAME      the phase to run in\n"
"  --sandbox MODE        auto (default): bubblewrap, or fail saying why;\n"
"                        bwrap: the same; none: no isolation at all, CMD\n"
"                        only gets the proxy variables (says so on stderr)\n"
"  --proxy SOCKET        use a running egressd's Unix socket instead of a\n"
"                        private proxy (its phase and audit log apply)\n"
"  --rw PATH             also writable inside (repeatable; never a symlink)\n"
"  --ro PATH             also readable inside (repeatable; never a symlink)\n"
"  --env NAME            pass NAME through even if it looks secret\n"
"  --env NAME=VALUE      set NAME for CMD (repeatable)\n"
"  --timeout SECONDS     stop CMD's whole process tree after SECONDS\n"
"                        (SIGTERM, 2 s grace, SIGKILL) and exit 124\n"
"  --audit PATH          keep the audit log there (default: the\n"
"                        configuration's audit_log, else discarded)\n"
"  --hide PATH           also hidden inside: an empty read-only tmpfs over\n"
"                        PATH, the working dir and --rw/--ro paths below\n"
"                        it still shown (repeatable; egressd replay hides\n"
"                        the caller's home and the record directories)\n"
"  --launch-fd FD        write an int there when CMD was not launched\n"
"                        (-1: no sandbox; else the exec errno), so that a\n"
"                        launcher tells that from CMD's own exit status\n"
"  -h, --help            this text\n"
"\n"
"A sandbox inside (Codex's own bwrap) cannot map uid 0 when egressd run\n"
"runs as root (\"setting up uid map: Operation not permitted\"): run it as a\n"
"regular user (setpriv --reuid=USER --regid=GROUP --init-groups, runuser\n"
"-u USER), or turn the agent's sandbox off inside (codex --sandbox\n"
"danger-full-access).\n"
"\n"
"Environment: variables whose name contains TOKEN, SECRET, PASSWORD,\n"
"API_KEY, SSH_AUTH, AWS_ or GITHUB_ (any case) are removed; --env NAME\n"
"keeps one.  Open file descriptors other than 0, 1, 2 are not passed.\n"
"\n"
"Exit status: CMD's (128+N if it died of signal N); 124 on --timeout;\n"
"130/143 on SIGINT/SIGTERM; 1 configuration error; 2 usage error;\n"
"3 when the proxy or the sandbox cannot be set up.\n"
"\n"
"Examples:\n"
"  egressd run -c agent.ini --phase setup -- pip install -r req.txt\n"
"  egressd run -c agent.ini --audit run.log --timeout 600 -- ./agent.sh\n"
"  egressd run --rw ~/.cache/pip -- curl https://api.anthropic.com/\n"
"\n"
"See egressd-run(1).\n";

static int
usage_err(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int
usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("egressd run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	fputs(run_usage, stderr);
	fputs("Try 'egressd run --help'.\n", stderr);
	return 2;
}

/* 1 if name (length n) is one of the proxy variables, in any case. */
static int
is_proxy_var(const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < nitems(proxy_vars); i++)
		if (strlen(proxy_vars[i]) == n &&
		    strncasecmp(name, proxy_vars[i], n) == 0)
			return 1;
	return 0;
}

/* 1 if name (length n) contains one of the secret words, in any case. */
static int
is_secret(const char *name, size_t n)
{
	size_t i, j, w;

	for (i = 0; i < nitems(secret_words); i++) {
		w = strlen(secret_words[i]);
		for (j = 0; j + w <= n; j++)
			if (strncasecmp(name + j, secret_words[i], w) == 0)
				return 1;
	}
	return 0;
}

static int
valid_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || isdigit((unsigned char)s[0]))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* Length of the name part of "NAME=VALUE" or "NAME". */
static size_t
name_len(const char *s)
{
	const char *eq;

	eq = strchr(s, '=');
	return eq == NULL ? strlen(s) : (size_t)(eq - s);
}

/* 1 if --env mentions name (length n); *set gets 1 for NAME=VALUE. */
static int
env_opt(const struct run_opts *o, const char *name, size_t n, int *set)
{
	size_t i;

	for (i = 0; i < o->env.n; i++) {
		if (name_len(o->env.v[i]) == n &&
		    strncmp(o->env.v[i], name, n) == 0) {
			*set = o->env.v[i][n] == '=';
			return 1;
		}
	}
	return 0;
}

/* One route's variables: env = URL/NAME, placeholder = egressd-route. */
struct route_env {
	const char	*url;
	struct sb_strv	*out;
};

static void
route_env_add(void *arg, const char *name, const char *env,
    const char *placeholder)
{
	struct route_env *re = arg;
	char *kv;
	size_t n;

	if (re->url == NULL) {		/* names only */
		if (env != NULL)
			sb_strv_add(re->out, env);
		if (placeholder != NULL)
			sb_strv_add(re->out, placeholder);
		return;
	}
	if (env != NULL) {
		n = strlen(env) + strlen(re->url) + strlen(name) + 3;
		if ((kv = eg_malloc(n)) == NULL) {
			re->out->oom = 1;
			return;
		}
		snprintf(kv, n, "%s=%s/%s", env, re->url, name);
		sb_strv_add(re->out, kv);
		eg_free(kv);
	}
	if (placeholder != NULL)
		sb_strv_add2(re->out, placeholder, "=egressd-route");
}

/*
 * CMD's environment: ours without secrets and proxy variables, plus the
 * --env settings, plus the proxy variables pointing at url, plus each
 * credential route's variables (SPEC "Routes": env and placeholder; not
 * with --proxy, whose routes are another process's).  The names removed
 * are listed on stderr (names only, never values).
 */
static int
env_build(const struct run_opts *o, struct egress *ex, const char *url,
    struct sb_strv *out)
{
	struct route_env re;
	struct sb_strv rn;
	size_t k;
	static const char *const pv[] = {
		"HTTPS_PROXY=", "https_proxy=", "HTTP_PROXY=", "http_proxy=",
		"ALL_PROXY=", "all_proxy="
	};
	char removed[512];
	size_t i, n, rlen = 0;
	int set, found;

	removed[0] = '\0';
	/* the routes' variable names: ours replace the caller's */
	memset(&rn, 0, sizeof(rn));
	if (ex != NULL) {
		re.url = NULL;
		re.out = &rn;
		eg_module_routes(ex, route_env_add, &re);
	}
	for (i = 0; environ != NULL && environ[i] != NULL; i++) {
		n = name_len(environ[i]);
		if (environ[i][n] != '=' || is_proxy_var(environ[i], n))
			continue;
		for (k = 0; k < rn.n; k++)
			if (strlen(rn.v[k]) == n &&
			    strncmp(rn.v[k], environ[i], n) == 0)
				break;
		if (k < rn.n)
			continue;
		found = env_opt(o, environ[i], n, &set);
		if (found && set)
			continue;	/* replaced below */
		if (!found && is_secret(environ[i], n)) {
			if (rlen + n + 3 < sizeof(removed)) {
				rlen += (size_t)snprintf(removed + rlen,
				    sizeof(removed) - rlen, "%s%.*s",
				    rlen ? ", " : "", (int)n, environ[i]);
			}
			continue;
		}
		sb_strv_add(out, environ[i]);
	}
	for (i = 0; i < o->env.n; i++) {
		n = name_len(o->env.v[i]);
		if (o->env.v[i][n] == '=')
			sb_strv_add(out, o->env.v[i]);
		else if (getenv(o->env.v[i]) == NULL)
			fprintf(stderr, "egressd: --env %s: not set, not "
			    "passed\n", o->env.v[i]);
	}
	for (i = 0; i < nitems(pv); i++)
		sb_strv_add2(out, pv[i], url);
	/* only the relay listens on loopback inside: routes are reached
	 * directly, everything else through the proxy */
	sb_strv_add(out, "NO_PROXY=" EG_SANDBOX_NO_PROXY);
	sb_strv_add(out, "no_proxy=" EG_SANDBOX_NO_PROXY);
	if (ex != NULL) {
		re.url = url;
		re.out = out;
		eg_module_routes(ex, route_env_add, &re);
	}
	sb_strv_free(&rn);
	if (rlen > 0)
		fprintf(stderr, "egressd: not passed to the command: %s "
		    "(--env NAME passes one)\n", removed);
	return out->oom ? -1 : 0;
}

void
sb_put_safe(const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(stderr, "\\%03o", *p);
		else
			fputc(*p, stderr);
	}
}

static void
path_err(const char *opt, const char *path, const char *what, int e)
{
	fprintf(stderr, "egressd run: %s ", opt);
	sb_put_safe(path);
	fputs(": ", stderr);
	if (what != NULL) {
		sb_put_safe(what);
		fputs(": ", stderr);
	}
	fprintf(stderr, "%s\n", strerror(e));
}

/*
 * Resolve an --rw or --ro path, which must exist, into out, component
 * by component.  A symbolic link is refused where it would choose what
 * gets bound: as the last component (--rw cache, cache -> ~), and
 * anywhere inside the working directory, which a previous run or a
 * cloned repository may have filled with links.  Links outside it
 * (/var/run -> /run) are the system's and are followed.  0, or -1 after
 * a message naming the link and its target.
 */
static int
add_path(struct sb_strv *out, const char *opt, const char *path)
{
	char cwd[PATH_MAX], abs[PATH_MAX], res[PATH_MAX], cand[PATH_MAX];
	char tgt[PATH_MAX], *comp, *next, *slash;
	struct stat st;
	ssize_t n;
	int r, last;

	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		path_err(opt, path, "getcwd", errno);
		return -1;
	}
	r = path[0] == '/' ? snprintf(abs, sizeof(abs), "%s", path) :
	    snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	if (r < 0 || (size_t)r >= sizeof(abs)) {
		path_err(opt, path, NULL, ENAMETOOLONG);
		return -1;
	}
	res[0] = '\0';			/* "": the root */
	for (comp = abs; comp != NULL; comp = next) {
		while (*comp == '/')
			comp++;
		next = strchr(comp, '/');
		if (next != NULL)
			*next++ = '\0';
		if (*comp == '\0' || strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			slash = strrchr(res, '/');
			if (slash != NULL)
				*slash = '\0';
			continue;
		}
		r = snprintf(cand, sizeof(cand), "%s/%s", res, comp);
		if (r < 0 || (size_t)r >= sizeof(cand)) {
			path_err(opt, path, NULL, ENAMETOOLONG);
			return -1;
		}
		if (lstat(cand, &st) == -1) {
			path_err(opt, path, cand, errno);
			return -1;
		}
		/* the last component: nothing but slashes follows */
		last = next == NULL || next[strspn(next, "/")] == '\0';
		if (S_ISLNK(st.st_mode)) {
			if (last || sb_path_under(cand, cwd)) {
				n = readlink(cand, tgt, sizeof(tgt) - 1);
				if (n < 0)
					n = 0;
				tgt[n] = '\0';
				fprintf(stderr, "egressd run: %s ", opt);
				sb_put_safe(path);
				fputs(": ", stderr);
				sb_put_safe(cand);
				fputs(" is a symbolic link to ", stderr);
				sb_put_safe(tgt);
				fputs(";\n  refusing to bind what a link points "
				    "to: name the target itself if you mean "
				    "it\n", stderr);
				return -1;
			}
			if (realpath(cand, res) == NULL) {
				path_err(opt, path, cand, errno);
				return -1;
			}
			if (strcmp(res, "/") == 0)
				res[0] = '\0';
			continue;
		}
		if (!last && !S_ISDIR(st.st_mode)) {
			path_err(opt, path, cand, ENOTDIR);
			return -1;
		}
		memcpy(res, cand, (size_t)r + 1);
	}
	sb_strv_add(out, res[0] == '\0' ? "/" : res);
	return 0;
}

static int
parse_opts(int argc, char *argv[], struct run_opts *o)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "phase", required_argument, NULL, 'p' },
		{ "sandbox", required_argument, NULL, 'S' },
		{ "proxy", required_argument, NULL, 'P' },
		/* (replay steps: the socket takes the relay's handoff) */
		{ "proxy-handoff", required_argument, NULL, 'K' },
		{ "rw", required_argument, NULL, 'w' },
		{ "ro", required_argument, NULL, 'r' },
		{ "env", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "audit", required_argument, NULL, 'a' },
		{ "hide", required_argument, NULL, 'H' },
		{ "launch-fd", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end, rp[PATH_MAX];
	size_t n;
	long v;
	int ch;

	optind = 0;	/* glibc: full re-initialisation */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+c:p:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o->config = optarg;
			break;
		case 'p':
			o->phase = optarg;
			break;
		case 'S':
			if (strcmp(optarg, "auto") == 0)
				o->mode = SB_AUTO;
			else if (strcmp(optarg, "bwrap") == 0)
				o->mode = SB_BWRAP;
			else if (strcmp(optarg, "none") == 0)
				o->mode = SB_NONE;
			else
				return usage_err("--sandbox %s: use auto, "
				    "bwrap or none", optarg);
			o->mode_set = 1;
			break;
		case 'P':
		case 'K':
			o->proxy = optarg;
			o->handoff = ch == 'K';
			break;
		case 'w':
			if (add_path(&o->rw, "--rw", optarg) == -1)
				return 2;
			break;
		case 'r':
			if (add_path(&o->ro, "--ro", optarg) == -1)
				return 2;
			break;
		case 'e':
			n = name_len(optarg);
			if (!valid_name(optarg, n))
				return usage_err("--env %s: not a variable "
				    "name", optarg);
			if (is_proxy_var(optarg, n))
				return usage_err("--env %s: the proxy "
				    "variables are set by egressd", optarg);
			sb_strv_add(&o->env, optarg);
			break;
		case 't':
			errno = 0;
			o->timeout = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    !(o->timeout > 0 && o->timeout <= 1e8))
				return usage_err("--timeout %s: want seconds "
				    "(> 0)", optarg);
			break;
		case 'a':
			o->audit = optarg;
			break;
		case 'H':
			/* nothing there: nothing to hide */
			if (realpath(optarg, rp) == NULL) {
				if (errno == ENOENT)
					break;
				path_err("--hide", optarg, NULL, errno);
				return 2;
			}
			if (strcmp(rp, "/") == 0)
				return usage_err("--hide %s: not the whole "
				    "file system", optarg);
			sb_strv_add(&o->hide, rp);
			break;
		case 'L':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    v < 3 || v > 1023 || fcntl((int)v, F_GETFD) == -1)
				return usage_err("--launch-fd %s: want an open "
				    "descriptor (3 to 1023)", optarg);
			o->launch_fd = (int)v;
			/* only the launched side gets it (child_fds) */
			(void)fcntl(o->launch_fd, F_SETFD, FD_CLOEXEC);
			break;
		case 'h':
			fputs(run_usage, stdout);
			fputs(run_help, stdout);
			return 0;
		default:
			if (optopt != 0 && optopt != '?') {
				char opt[3] = { '-', (char)optopt, '\0' };

				return usage_err("%s: unknown option or "
				    "missing argument", opt);
			}
			return usage_err("%s: unknown option or missing "
			    "argument", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_err("%s", "no command given (egressd run "
		    "[OPTIONS] -- CMD [ARGS])");
	if (o->proxy != NULL && (o->config != NULL || o->phase != NULL ||
	    o->audit != NULL))
		return usage_err("%s", "--proxy uses a running egressd: -c, "
		    "--phase and --audit belong to its configuration");
	if (o->env.oom || o->rw.oom || o->ro.oom || o->hide.oom)
		return usage_err("%s", "out of memory");
	o->cmd = argv + optind;
	return -1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 if process pid is named bwrap (comm, always readable). */
static int
is_bwrap(pid_t pid)
{
	char buf[64];

	return mc_proc_read(pid, "comm", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, "bwrap\n") == 0;
}

/*
 * Signal the whole tree below us.  With SIGTERM the bubblewrap processes
 * are spared: killing them tears down the PID namespace at once
 * (--die-with-parent), leaving the command no grace.  pgid is CMD's
 * session leader (the direct child).  We are a child subreaper, so an
 * orphan of our tree is still below us in /proc.
 */
static void
kill_tree(pid_t pgid, int sig, int spare_bwrap)
{
	pid_t *pids;
	size_t n, i;

	if (!spare_bwrap && pgid > 0)
		(void)kill(-pgid, sig);
	pids = mc_proc_descendants(getpid(), &n);
	for (i = 0; pids != NULL && i < n; i++) {
		if (spare_bwrap && is_bwrap(pids[i]))
			continue;
		(void)kill(pids[i], sig);
	}
	eg_free(pids);
}

/* Reap every exited child; note the status of ours. */
static void
reap(pid_t child, int *status, int *done)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid == child) {
			*status = st;
			*done = 1;
		}
	}
}

/*
 * The module's side of the core: the [sandbox] section, and the decision
 * counters of every proxy (init/on_event/fini; "egressd run" reads them
 * for its summary).
 */
struct sb_conf {
	enum sb_mode	 mode;		/* sandbox = auto|bwrap|none */
	int		 mode_line;	/* 0: not given */
};

static int
sb_config(void **cfgp, const char *key, const char *value, const char *file,
    int line, char *err, size_t errlen)
{
	struct sb_conf *c = *cfgp;
	char q[400];

	(void)file;
	if (c == NULL) {
		if ((c = eg_calloc(1, sizeof(*c))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		*cfgp = c;
	}
	if (strcmp(key, "sandbox") != 0) {
		snprintf(err, errlen, "unknown key '%s' in [sandbox]",
		    eg_module_quote(key, q, sizeof(q)));
		return -1;
	}
	if (c->mode_line != 0) {
		snprintf(err, errlen, "duplicate key 'sandbox' in [sandbox] "
		    "(first at line %d)", c->mode_line);
		return -1;
	}
	if (strcmp(value, "auto") == 0)
		c->mode = SB_AUTO;
	else if (strcmp(value, "bwrap") == 0)
		c->mode = SB_BWRAP;
	else if (strcmp(value, "none") == 0)
		c->mode = SB_NONE;
	else {
		snprintf(err, errlen, "bad value '%s' for sandbox in "
		    "[sandbox]: use auto, bwrap or none",
		    eg_module_quote(value, q, sizeof(q)));
		return -1;
	}
	c->mode_line = line;
	return 0;
}

static void
sb_config_free(void *cfg)
{
	eg_free(cfg);
}

static int
sb_init(struct egress *ex, const void *cfg, void **state, char *err,
    size_t errlen)
{
	struct run_counts *c;

	(void)ex;
	(void)cfg;
	if ((*state = c = eg_calloc(1, sizeof(struct run_counts))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&c->mtx, NULL);
	return 0;
}

static void
sb_fini(void *state)
{
	struct run_counts *c = state;

	if (c != NULL)
		pthread_mutex_destroy(&c->mtx);
	eg_free(state);
}

/* Count a BLOCK of host:port (host NULL: "-") for the summary. */
static void
count_blocked(struct run_counts *c, const char *host, unsigned port)
{
	char hp[sizeof(c->blk[0].hp)];
	size_t i;
	int n;

	n = port ? snprintf(hp, sizeof(hp), "%s:%u", host ? host : "-", port) :
	    snprintf(hp, sizeof(hp), "%s", host ? host : "-");
	if (n < 0)
		return;
	for (i = 0; hp[i] != '\0'; i++)	/* escaped already; be sure */
		if ((unsigned char)hp[i] <= 0x20 || (unsigned char)hp[i] >= 0x7f)
			hp[i] = '?';
	pthread_mutex_lock(&c->mtx);
	for (i = 0; i < c->nblk; i++)
		if (strcmp(c->blk[i].hp, hp) == 0)
			break;
	if (i < c->nblk)
		c->blk[i].n++;
	else if (c->nblk < RUN_BLK_MAX) {
		memcpy(c->blk[c->nblk].hp, hp, sizeof(hp));
		c->blk[c->nblk++].n = 1;
	} else
		c->blk_other++;
	pthread_mutex_unlock(&c->mtx);
}

/* "egressd: blocked: HOST:PORT (N), ... and K more" (none: nothing). */
static void
print_blocked(struct run_counts *c)
{
	unsigned long long more = c->blk_other;
	struct run_blk t;
	size_t i, j;

	if (c->nblk == 0)
		return;
	/* most first; equal counts stay in the order first seen (a stable
	 * insertion sort of at most RUN_BLK_MAX entries) */
	for (i = 1; i < c->nblk; i++) {
		t = c->blk[i];
		for (j = i; j > 0 && c->blk[j - 1].n < t.n; j--)
			c->blk[j] = c->blk[j - 1];
		c->blk[j] = t;
	}
	fputs("egressd: blocked:", stderr);
	for (i = 0; i < c->nblk && i < RUN_BLK_SHOW; i++)
		fprintf(stderr, "%s %s (%llu)", i ? "," : "", c->blk[i].hp,
		    c->blk[i].n);
	for (; i < c->nblk; i++)
		more += c->blk[i].n;
	if (more > 0)
		fprintf(stderr, ", and %llu more", more);
	fputc('\n', stderr);
}

static void
on_event(const struct egress_event *ev, void *arg)
{
	struct run_counts *c = arg;

	switch (ev->type) {
	case EGRESS_EV_ALLOW:
		__atomic_fetch_add(&c->allow, 1, __ATOMIC_RELAXED);
		break;
	case EGRESS_EV_BLOCK:
		__atomic_fetch_add(&c->block, 1, __ATOMIC_RELAXED);
		count_blocked(c, ev->host, ev->port);
		break;
	case EGRESS_EV_FAIL:
		__atomic_fetch_add(&c->fail, 1, __ATOMIC_RELAXED);
		break;
	default:
		break;
	}
}

static void
on_log(int level, const char *msg, void *arg)
{
	(void)arg;
	if (level <= EGRESS_LOG_WARN)
		fprintf(stderr, "egressd: %s\n", msg);
}

struct relay_thr {
	pthread_t	 tid;
	int		 lfd, efd;
	int		 handoff;	/* the socket is our own relay's */
	const char	*sock;
	char		 err[256];
	int		 rc;
};

static int
relay_thr_stop(void *arg)
{
	(void)arg;
	return 1;
}

static void *
relay_thr_main(void *arg)
{
	struct relay_thr *t = arg;
	struct sb_relay_ctl ctl;

	ctl.fd = t->efd;
	ctl.cb = relay_thr_stop;
	ctl.arg = t;
	t->rc = sb_relay_loop(t->lfd, t->sock, t->handoff, &ctl, t->err,
	    sizeof(t->err));
	return NULL;
}

/*
 * A fresh 0700 directory for the socket and the audit log, outside
 * everything the command may write (cwd NULL: no sandbox, no such
 * constraint).  Returns 0 and fills buf.
 */
static int
make_privdir(const struct run_opts *o, const char *cwd, char *buf,
    size_t len)
{
	const char *cand[5];
	struct stat st;
	size_t i, j;
	int bad, n;

	cand[0] = getenv("XDG_RUNTIME_DIR");
	cand[1] = getenv("TMPDIR");
	cand[2] = "/tmp";
	cand[3] = "/var/tmp";
	cand[4] = "/dev/shm";
	for (i = 0; i < nitems(cand); i++) {
		if (cand[i] == NULL || cand[i][0] != '/' ||
		    stat(cand[i], &st) == -1 || !S_ISDIR(st.st_mode) ||
		    access(cand[i], W_OK | X_OK) == -1)
			continue;
		/* the sandbox must not see this directory writable */
		bad = cwd != NULL && sb_path_under(cand[i], cwd);
		for (j = 0; cwd != NULL && j < o->rw.n; j++)
			if (sb_path_under(cand[i], o->rw.v[j]))
				bad = 1;
		/* room for "/sock/proxy.sock" in sun_path (108) */
		n = snprintf(buf, len, "%s/egressd-run.XXXXXX", cand[i]);
		if (bad || n < 0 || (size_t)n >= len || n + 16 >= 100)
			continue;
		if (mkdtemp(buf) != NULL)
			return 0;
	}
	fprintf(stderr, "egressd: cannot create a private directory "
	    "outside the writable paths (tried $XDG_RUNTIME_DIR, $TMPDIR, "
	    "/tmp, /var/tmp, /dev/shm)\n");
	return -1;
}

/* Find CMD in the PATH of envp, as execvp would (before fork). */
static int
resolve_cmd(const char *cmd, char *const *envp, char *out, size_t len)
{
	const char *path = "/usr/local/bin:/usr/bin:/bin", *p, *e;
	size_t i, dl;
	int n;

	if (strchr(cmd, '/') != NULL) {
		n = snprintf(out, len, "%s", cmd);
		return n < 0 || (size_t)n >= len ? -1 : 0;
	}
	for (i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	for (p = path;; p = e + 1) {
		e = strchr(p, ':');
		dl = e == NULL ? strlen(p) : (size_t)(e - p);
		n = snprintf(out, len, "%.*s%s%s", (int)dl, p,
		    dl ? "/" : "", cmd);
		if (n > 0 && (size_t)n < len && access(out, X_OK) == 0)
			return 0;
		if (e == NULL)
			break;
	}
	return -1;
}

/*
 * In the child, before exec: every fd but 0-2 and the two kept ones
 * (-1: none) becomes close-on-exec, so nothing of ours leaks inside.
 */
static void
child_fds(int keep, int keep2, int keep3)
{
	long fd, max;

	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == -1) {
		max = sysconf(_SC_OPEN_MAX);
		if (max < 0 || max > 65536)
			max = 65536;
		for (fd = 3; fd < max; fd++)
			(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	}
	if (keep != -1)
		(void)fcntl(keep, F_SETFD, 0);
	if (keep2 != -1)
		(void)fcntl(keep2, F_SETFD, 0);
	if (keep3 != -1)
		(void)fcntl(keep3, F_SETFD, 0);
}

struct run_state {
	struct run_opts		 o;
	struct run_counts	 cnt;
	struct egress		*ex;
	struct relay_thr	 rt;
	int			 rt_running;
	char			 privdir[PATH_MAX];
	char			 sockdir[PATH_MAX + 8];
	char			 sock[PATH_MAX + 24];
	char			 auditpath[PATH_MAX + 16];
	int			 audit_tmp;
	char			 proxyrp[PATH_MAX];	/* --proxy */
	char			 proxydir[PATH_MAX];	/* its folder */
	int			 launched;	/* CMD's launch was tried (bwrap:
						   the relay is up) */
};

/*
 * The working directory is bound writable: refuse "/" and a whole home
 * directory (it holds ~/.ssh), unless --rw names it.  0 or -1.
 */
static int
check_cwd(const struct run_opts *o, const char *cwd)
{
	struct sb_strv homes = { 0 };
	int bad;

	sb_homes(&homes, getenv("HOME"));
	bad = strcmp(cwd, "/") == 0 ||
	    (sb_strv_has(&homes, cwd) && !sb_strv_has(&o->rw, cwd));
	sb_strv_free(&homes);
	if (!bad)
		return 0;
	fprintf(stderr, "egressd: the working directory %s would be writable "
	    "inside the sandbox, with everything in it;\n"
	    "  cd into a project directory (or pass --rw %s to mean it)\n",
	    cwd, cwd);
	return -1;
}

/*
 * The --proxy socket's directory is hidden inside (it may hold the admin
 * socket): refuse one that must stay visible, "/", the working directory
 * or a --rw/--ro path.  Fills st->proxydir; 0 or -1.
 */
static int
proxydir_check(struct run_state *st, const char *cwd)
{
	char *slash;
	size_t i;
	int bad;

	snprintf(st->proxydir, sizeof(st->proxydir), "%s", st->proxyrp);
	slash = strrchr(st->proxydir, '/');
	if (slash == NULL)
		return -1;	/* realpath() is absolute */
	if (slash == st->proxydir)
		slash[1] = '\0';
	else
		*slash = '\0';
	bad = strcmp(st->proxydir, "/") == 0 || strcmp(st->proxydir, cwd) == 0;
	for (i = 0; i < st->o.rw.n; i++)
		bad |= strcmp(st->proxydir, st->o.rw.v[i]) == 0;
	for (i = 0; i < st->o.ro.n; i++)
		bad |= strcmp(st->proxydir, st->o.ro.v[i]) == 0;
	if (!bad)
		return 0;
	fprintf(stderr, "egressd: --proxy %s: its directory %s is hidden "
	    "inside the sandbox (only the socket is bound in), so it cannot "
	    "be the working directory, a --rw/--ro path or /;\n"
	    "  put the socket in a directory of its own\n", st->proxyrp,
	    st->proxydir);
	return -1;
}

/*
 * Load the private proxy's configuration (before anything else: its
 * [sandbox] section gives the default of --sandbox).  0, or the exit
 * status.
 */
static int
proxy_load(struct run_state *st)
{
	const struct sb_conf *c;
	char err[4096];

	err[0] = '\0';
	st->ex = egress_new_from_file(st->o.config, err, sizeof(err));
	if (st->ex == NULL) {
		fprintf(stderr, "%s%s", err,
		    err[0] != '\0' && err[strlen(err) - 1] != '\n' ? "\n" :
		    "");
		if (err[0] == '\0')
			fprintf(stderr, "egressd: cannot load the "
			    "configuration\n");
		return 1;
	}
	egress_set_log_cb(st->ex, on_log, NULL);
	c = eg_module_config(st->ex, &eg_mod_sandbox);
	if (!st->o.mode_set && c != NULL && c->mode_line != 0)
		st->o.mode = c->mode;
	return 0;
}

static int
proxy_start(struct run_state *st)
{
	/* --audit, else the configuration's audit_log, else discarded */
	if (st->o.audit != NULL)
		snprintf(st->auditpath, sizeof(st->auditpath), "%s",
		    st->o.audit);
	else if (egress_get_option(st->ex, "audit_log", st->auditpath,
	    sizeof(st->auditpath)) != 1) {
		snprintf(st->auditpath, sizeof(st->auditpath),
		    "%s/audit.log", st->privdir);
		st->audit_tmp = 1;
	}
	/* the private socket first: a proxy with no listener is invalid */
	if (egress_set_option(st->ex, "unix", st->sock) == -1 ||
	    egress_set_option(st->ex, "unix_client", "sandbox") == -1 ||
	    egress_set_option(st->ex, "unix_relay", "yes") == -1 ||
	    egress_set_option(st->ex, "listen", "none") == -1 ||
	    egress_set_option(st->ex, "admin", "none") == -1 ||
	    (st->o.phase != NULL &&
	    egress_set_option(st->ex, "phase", st->o.phase) == -1) ||
	    egress_set_option(st->ex, "audit_log", st->auditpath) == -1) {
		fprintf(stderr, "egressd: %s\n", egress_errmsg(st->ex));
		return 1;
	}
	if (egress_start(st->ex) == -1 || egress_run_thread(st->ex) == -1) {
		fprintf(stderr, "egressd: %s\n", egress_errmsg(st->ex));
		return 3;
	}
	return 0;
}

static void
cleanup(struct run_state *st)
{
	const struct run_counts *c;
	uint64_t one = 1;

	if (st->rt_running) {
		(void)write(st->rt.efd, &one, sizeof(one));
		pthread_join(st->rt.tid, NULL);
		close(st->rt.efd);
		close(st->rt.lfd);
		st->rt_running = 0;
	}
	if (st->ex != NULL) {
		egress_stop(st->ex);
		egress_join(st->ex);
		/* the module's counters die with the proxy */
		if ((c = eg_module_state(st->ex, &eg_mod_sandbox)) != NULL) {
			st->cnt.allow = c->allow;
			st->cnt.block = c->block;
			st->cnt.fail = c->fail;
			memcpy(st->cnt.blk, c->blk, sizeof(c->blk));
			st->cnt.nblk = c->nblk;
			st->cnt.blk_other = c->blk_other;
		}
		egress_free(st->ex);
		st->ex = NULL;
	}
	if (st->privdir[0] != '\0') {
		(void)unlink(st->sock);
		(void)rmdir(st->sockdir);
		if (st->audit_tmp)
			(void)unlink(st->auditpath);
		(void)rmdir(st->privdir);
		st->privdir[0] = '\0';
	}
}

/*
 * Hand bwrap its options through a memfd (--args FD) rather than its
 * command line, which would show every host path in the sandbox's
 * /proc/1/cmdline and in ps; the command after "--" stays on the command
 * line (bwrap wants it there).  Returns the fd (close-on-exec; the child
 * clears that) and fills out with "bwrap --args FD -- relay ...", or -1.
 */
static int
args_memfd(const struct sb_strv *in, struct sb_strv *out)
{
	char num[16];
	size_t i, len, off;
	ssize_t n;
	int fd;

	fd = memfd_create("egressd-bwrap-args", MFD_CLOEXEC);
	if (fd == -1) {
		fprintf(stderr, "egressd: memfd_create: %s\n",
		    strerror(errno));
		return -1;
	}
	for (i = 1; i < in->n && strcmp(in->v[i], "--") != 0; i++) {
		len = strlen(in->v[i]) + 1;	/* NUL-separated */
		for (off = 0; off < len; off += (size_t)n) {
			n = write(fd, in->v[i] + off, len - off);
			if (n <= 0) {
				fprintf(stderr, "egressd: memfd: %s\n",
				    strerror(errno));
				close(fd);
				return -1;
			}
		}
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	snprintf(num, sizeof(num), "%d", fd);
	sb_strv_add(out, in->v[0]);
	sb_strv_add(out, "--args");
	sb_strv_add(out, num);
	for (; i < in->n; i++)
		sb_strv_add(out, in->v[i]);
	if (out->oom) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The audit log must never be writable from inside: when it lies in the
 * working directory or a --rw path (--audit run.log), it is bound
 * read-only over itself, so that writing, truncating, removing or
 * renaming over it fails (EROFS, EBUSY) while egressd keeps appending
 * through the descriptor it holds.  A file with more than one hard link
 * is refused: another name of it may lie in a writable path.  Stores the
 * path to bind in out ("" for none); 0, or an exit status.
 */
static int
audit_guard(const struct run_state *st, const char *cwd, char *out,
    size_t len)
{
	char rp[PATH_MAX];
	struct stat sst;
	size_t i;
	int fd, w;

	out[0] = '\0';
	if (st->o.proxy != NULL || st->audit_tmp ||
	    strcmp(st->auditpath, "-") == 0)
		return 0;
	/* egress_start() created it; make sure, it must exist to be bound */
	fd = open(st->auditpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0640);
	if (fd == -1 || fstat(fd, &sst) == -1 ||
	    realpath(st->auditpath, rp) == NULL) {
		fprintf(stderr, "egressd: audit log %s: %s\n", st->auditpath,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return 3;
	}
	close(fd);
	if (!S_ISREG(sst.st_mode))
		return 0;	/* /dev/null, a FIFO: nothing to erase */
	if (sst.st_nlink > 1) {
		fprintf(stderr, "egressd run: the audit log %s has %lu hard "
		    "links; another name of it may be writable inside the "
		    "sandbox;\n  keep the audit log in a file of its own, "
		    "outside the working directory\n  (e.g. --audit "
		    "$XDG_STATE_HOME/egressd/run.log)\n", rp,
		    (unsigned long)sst.st_nlink);
		return 2;
	}
	w = sb_path_under(rp, cwd);
	for (i = 0; i < st->o.rw.n; i++)
		w |= sb_path_under(rp, st->o.rw.v[i]);
	if (w && snprintf(out, len, "%s", rp) >= (int)len) {
		fprintf(stderr, "egressd: audit log %s: %s\n", rp,
		    strerror(ENAMETOOLONG));
		return 3;
	}
	return 0;
}

/* 1 if the host path p (resolved) can be seen inside the sandbox. */
static int
seen_inside(const struct run_state *st, const char *cwd,
    const struct sb_strv *hidden, const char *p)
{
	size_t i;

	if (sb_path_under(p, cwd))
		return 1;
	for (i = 0; i < st->o.rw.n; i++)
		if (sb_path_under(p, st->o.rw.v[i]))
			return 1;
	for (i = 0; i < st->o.ro.n; i++)
		if (sb_path_under(p, st->o.ro.v[i]))
			return 1;
	for (i = 0; i < hidden->n; i++)
		if (sb_path_under(p, hidden->v[i]))
			return 0;
	return 1;
}

/*
 * CMD, found on the host at host (through the caller's PATH), lies in a
 * directory the sandbox hides (a home, /tmp, /var/tmp, /run), or is a
 * link into one: what to say if it then cannot be run inside (exit
 * 127), with the --ro options that show it, into out.  out is empty
 * when it is visible inside.
 */
static void
cmd_hint(const struct run_state *st, const char *cwd, const char *cmd,
    const char *host, char *out, size_t len)
{
	struct sb_strv homes = { 0 };
	char abs[PATH_MAX], dir[2][PATH_MAX], opts[2 * PATH_MAX + 16], *s;
	size_t i, o = 0;
	int n;

	out[0] = '\0';
	opts[0] = '\0';
	n = host[0] == '/' ? snprintf(abs, sizeof(abs), "%s", host) :
	    snprintf(abs, sizeof(abs), "%s/%s", cwd, host);
	if (n < 0 || (size_t)n >= sizeof(abs))
		return;
	/* the directory PATH named, and the one the file really is in */
	snprintf(dir[0], sizeof(dir[0]), "%s", abs);
	if ((s = strrchr(dir[0], '/')) != NULL)
		s[s == dir[0] ? 1 : 0] = '\0';
	if (realpath(dir[0], dir[1]) == NULL)
		return;
	memcpy(dir[0], dir[1], sizeof(dir[0]));
	if (realpath(abs, dir[1]) == NULL)
		return;
	if ((s = strrchr(dir[1], '/')) != NULL)
		s[s == dir[1] ? 1 : 0] = '\0';
	sb_homes(&homes, getenv("HOME"));
	sb_strv_add(&homes, "/tmp");
	sb_strv_add(&homes, "/var/tmp");
	sb_strv_add(&homes, "/run");
	for (i = 0; i < 2; i++) {
		if (seen_inside(st, cwd, &homes, dir[i]) ||
		    (i == 1 && strcmp(dir[0], dir[1]) == 0))
			continue;
		n = snprintf(opts + o, sizeof(opts) - o, " --ro %s", dir[i]);
		if (n > 0 && (size_t)n < sizeof(opts) - o)
			o += (size_t)n;
	}
	sb_strv_free(&homes);
	if (o == 0)
		return;
	snprintf(out, len, "egressd: %s: not found inside the sandbox; on "
	    "this host it is %s, in a directory the sandbox hides (the home "
	    "directories, /tmp, /var/tmp and /run are empty inside)\n"
	    "egressd: fix: add%s to make it visible (read-only)\n", cmd, abs,
	    opts);
}

/* bwrap mode: the launcher argv; 0, or an exit status. */
static int
bwrap_prepare(struct run_state *st, const char *cwd, int ready_fd,
    struct sb_strv *argv)
{
	struct sb_bwrap_spec spec;
	struct sb_strv homes = { 0 }, hidden = { 0 }, libs = { 0 };
	struct sb_strv keep = { 0 };
	char bw[PATH_MAX], exe[PATH_MAX], audit[PATH_MAX];
	ssize_t n;
	size_t i, j;
	int rc = 3, covered;

	rc = audit_guard(st, cwd, audit, sizeof(audit));
	if (rc != 0)
		return rc;
	rc = 3;

	if (sb_bwrap_find(bw, sizeof(bw)) == NULL &&
	    sb_bwrap_unusable(bw, sizeof(bw)) != NULL) {
		struct stat bst;

		fprintf(stderr, "egressd: bwrap cannot be used: %s is %s\n"
		    "egressd: fix: reinstall bubblewrap, or run without any "
		    "isolation with --sandbox none\n", bw,
		    stat(bw, &bst) == -1 ? "a dangling link" :
		    !S_ISREG(bst.st_mode) ? "not a regular file" :
		    "not executable");
		return 3;
	}
	if (sb_bwrap_find(bw, sizeof(bw)) == NULL) {
		fprintf(stderr,
"egressd: bubblewrap (bwrap) is not installed: looked in /usr/bin, /bin,\n"
"  /usr/local/bin and /usr/sbin (never $PATH).\n"
"egressd: fix: apt-get install bubblewrap (Debian, Ubuntu), dnf install\n"
"  bubblewrap (Fedora), apk add bubblewrap (Alpine); or run without any\n"
"  isolation with --sandbox none.\n");
		return 3;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe) - 1) {
		fprintf(stderr, "egressd: /proc/self/exe: %s\n",
		    strerror(errno));
		return 3;
	}
	exe[n] = '\0';
	if (strstr(exe, " (deleted)") != NULL) {
		fprintf(stderr, "egressd: %s was replaced while running; "
		    "run it again\n", exe);
		return 3;
	}
	sb_homes(&homes, getenv("HOME"));
	for (i = 0; i < homes.n; i++)
		sb_strv_add(&hidden, homes.v[i]);
	for (i = 0; i < st->o.hide.n; i++)
		sb_strv_add(&hidden, st->o.hide.v[i]);
	sb_strv_add(&hidden, "/tmp");
	sb_strv_add(&hidden, "/var/tmp");
	sb_strv_add(&hidden, "/run");
	sb_maplibs(&libs, &hidden);
	/* those already visible through a bind need nothing more */
	for (i = 0; i < libs.n; i++) {
		covered = sb_path_under(libs.v[i], cwd);
		for (j = 0; j < st->o.rw.n; j++)
			covered |= sb_path_under(libs.v[i], st->o.rw.v[j]);
		for (j = 0; j < st->o.ro.n; j++)
			covered |= sb_path_under(libs.v[i], st->o.ro.v[j]);
		if (!covered && strcmp(libs.v[i], exe) != 0)
			sb_strv_add(&keep, libs.v[i]);
	}
	memset(&spec, 0, sizeof(spec));
	spec.bwrap = bw;
	spec.exe = exe;
	spec.cwd = cwd;
	spec.rw = &st->o.rw;
	spec.ro = &st->o.ro;
	spec.homes = &homes;
	spec.libs = &keep;
	if (st->o.proxy != NULL) {
		spec.sockfile = st->proxyrp;
		spec.hostdir = st->proxydir;
	} else {
		spec.sockdir = st->sockdir;
		spec.hostdir = st->privdir;
	}
	/* one already hidden (/tmp, a home) needs nothing, unless bound */
	covered = sb_path_under(spec.hostdir, cwd);
	for (j = 0; j < st->o.rw.n; j++)
		covered |= sb_path_under(spec.hostdir, st->o.rw.v[j]);
	for (j = 0; j < st->o.ro.n; j++)
		covered |= sb_path_under(spec.hostdir, st->o.ro.v[j]);
	for (j = 0; !covered && j < hidden.n; j++) {
		if (sb_path_under(spec.hostdir, hidden.v[j])) {
			spec.hostdir = NULL;
			break;
		}
	}
	spec.audit = audit[0] != '\0' ? audit : NULL;
	spec.ready_fd = ready_fd;
	spec.exec_fd = st->o.launch_fd;
	spec.hide = &st->o.hide;
	spec.handoff = st->o.proxy == NULL || st->o.handoff;
	spec.cmd = st->o.cmd;
	if (sb_bwrap_argv(&spec, argv) == -1 || homes.oom || libs.oom ||
	    keep.oom) {
		fprintf(stderr, "egressd: out of memory\n");
		goto out;
	}
	rc = 0;
out:
	sb_strv_free(&homes);
	sb_strv_free(&hidden);
	sb_strv_free(&libs);
	sb_strv_free(&keep);
	return rc;
}

/*
 * Start CMD (or bwrap) and supervise it until it exits.  Returns the exit
 * status of egressd run.
 */
static int
supervise(struct run_state *st, const char *execpath, char *const *argv,
    char *const *envp, int sfd, int ready_r, int ready_w, int args_fd,
    int bwrap)
{
	struct signalfd_siginfo si;
	struct sigaction sa;
	struct pollfd pfd[2];
	sigset_t empty;
	double deadline = 0, grace = 0, t;
	pid_t child;
	int status = 0, done = 0, ready = 0, forced = -1, stage = 0;
	int npfd, tmo, e;
	char c;

	child = fork();
	if (child == -1) {
		fprintf(stderr, "egressd: fork: %s\n", strerror(errno));
		return 3;
	}
	if (child == 0) {
		/* async-signal-safe calls only: we have threads */
		(void)setsid();
		sigemptyset(&empty);
		(void)pthread_sigmask(SIG_SETMASK, &empty, NULL);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		(void)sigaction(SIGPIPE, &sa, NULL);
		/* bwrap: the relay inside reports an exec failure; none:
		 * the descriptor stays close-on-exec, ours to report */
		child_fds(ready_w, args_fd, bwrap ? st->o.launch_fd : -1);
		execve(execpath, argv, envp);
		e = errno;
		if (st->o.launch_fd != -1)
			(void)write(st->o.launch_fd, &e, sizeof(e));
		(void)write(2, "egressd: cannot execute ", 24);
		(void)write(2, execpath, strlen(execpath));
		(void)write(2, "\n", 1);
		_exit(e == ENOENT ? 127 : 126);
	}
	if (ready_w != -1)
		close(ready_w);
	if (args_fd != -1)
		close(args_fd);
	if (!bwrap)
		st->launched = 1;
	if (st->o.timeout > 0)
		deadline = now_s() + st->o.timeout;

	while (!done) {
		npfd = 0;
		pfd[npfd].fd = sfd;
		pfd[npfd++].events = POLLIN;
		if (ready_r != -1) {
			pfd[npfd].fd = ready_r;
			pfd[npfd++].events = POLLIN;
		}
		t = stage ? grace : deadline;
		tmo = -1;
		if (t > 0) {
			t -= now_s();
			tmo = t <= 0 ? 0 : (int)(t * 1000) + 1;
		}
		if (poll(pfd, (nfds_t)npfd, tmo) == -1 && errno != EINTR) {
			fprintf(stderr, "egressd: poll: %s\n",
			    strerror(errno));
			forced = 3;
			kill_tree(child, SIGKILL, 0);
			stage = 2;
			(void)poll(NULL, 0, 100);
		}
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			if (forced == -1)
				forced = 128 + (int)si.ssi_signo;
			if (stage == 0) {
				kill_tree(child, SIGTERM, bwrap);
				stage = 1;
				grace = now_s() + 2;
			} else
				grace = now_s();	/* twice: no grace */
		}
		reap(child, &status, &done);
		if (ready_r != -1 && npfd > 1 && pfd[1].revents != 0) {
			if (read(ready_r, &c, 1) == 1)
				ready = 1;
			close(ready_r);
			ready_r = -1;
		}
		if (done)
			break;
		if (stage == 0 && deadline > 0 && now_s() >= deadline) {
			fprintf(stderr, "egressd: timeout after %g s: stopping "
			    "the command\n", st->o.timeout);
			forced = 124;
			kill_tree(child, SIGTERM, bwrap);
			stage = 1;
			grace = now_s() + 2;
		} else if (stage > 0 && now_s() >= grace) {
			kill_tree(child, SIGKILL, 0);
			stage = 2;
			grace = now_s() + 0.2;
		}
	}
	if (ready_r != -1) {
		if (read(ready_r, &c, 1) == 1)
			ready = 1;
		close(ready_r);
	}
	if (bwrap && ready)
		st->launched = 1;
	/* nothing of the run survives it (orphans, daemons) */
	kill_tree(0, SIGTERM, 0);
	for (t = now_s() + 2; now_s() < t;) {
		size_t n;
		pid_t *left = mc_proc_descendants(getpid(), &n);

		eg_free(left);
		reap(-1, &e, &e);
		if (n == 0)
			break;
		(void)poll(NULL, 0, 20);
	}
	kill_tree(0, SIGKILL, 0);
	reap(-1, &e, &e);

	if (forced != -1)
		return forced;
	if (bwrap && !ready) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
			sb_bwrap_explain(execpath);
		else
			fprintf(stderr, "egressd: egressd relay did not start "
			    "inside the sandbox (status %d)\n",
			    WIFEXITED(status) ? WEXITSTATUS(status) :
			    128 + WTERMSIG(status));
		return 3;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 3;
}

static int
run_main(int argc, char *argv[])
{
	struct run_state st;
	struct sb_strv envp = { 0 }, cargv = { 0 }, xargv = { 0 };
	struct stat sst;
	sigset_t mask;
	char cwd[PATH_MAX], url[64], execpath[PATH_MAX], err[256];
	char hostcmd[PATH_MAX], hint[4 * PATH_MAX];
	int rc, sfd = -1, rp[2] = { -1, -1 }, afd = -1, bwrap, fd;
	uint16_t port;
	size_t i;

	memset(&st, 0, sizeof(st));
	hint[0] = '\0';
	st.o.mode = SB_AUTO;
	st.o.launch_fd = -1;
	rc = parse_opts(argc, argv, &st.o);
	if (rc != -1)
		goto done;
	if (st.o.proxy == NULL && (rc = proxy_load(&st)) != 0)
		goto done;
	rc = 3;
	/* keep 0-2 open so no pipe or socket of ours lands there */
	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		fprintf(stderr, "egressd: getcwd: %s\n", strerror(errno));
		goto done;
	}
	bwrap = st.o.mode != SB_NONE;
	if (bwrap && check_cwd(&st.o, cwd) == -1) {
		rc = 2;
		goto done;
	}
	for (i = 0; i < st.o.hide.n; i++) {
		if (strcmp(st.o.hide.v[i], cwd) == 0) {
			fprintf(stderr, "egressd run: --hide %s: that is the "
			    "working directory\n", cwd);
			rc = 2;
			goto done;
		}
	}
	if (st.o.proxy != NULL && (realpath(st.o.proxy, st.proxyrp) == NULL ||
	    stat(st.proxyrp, &sst) == -1 || !S_ISSOCK(sst.st_mode))) {
		fprintf(stderr, "egressd: --proxy %s: not a Unix socket\n",
		    st.o.proxy);
		goto done;
	}
	if (st.o.proxy != NULL && bwrap && proxydir_check(&st, cwd) == -1) {
		rc = 2;
		goto done;
	}
	if (!bwrap)
		fprintf(stderr, "egressd: warning: sandbox none: no "
		    "isolation; the command can reach the network and your "
		    "files directly, only programs that honour HTTPS_PROXY "
		    "go through egressd\n");

	if (make_privdir(&st.o, bwrap ? cwd : NULL, st.privdir,
	    sizeof(st.privdir)) == -1)
		goto done;
	snprintf(st.sockdir, sizeof(st.sockdir), "%s/sock", st.privdir);
	snprintf(st.sock, sizeof(st.sock), "%s/proxy.sock", st.sockdir);
	if (mkdir(st.sockdir, 0700) == -1) {
		fprintf(stderr, "egressd: mkdir %s: %s\n", st.sockdir,
		    strerror(errno));
		goto done;
	}

	/* signals become events; threads started from here inherit this */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		goto done;
	(void)signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd == -1) {
		fprintf(stderr, "egressd: signalfd: %s\n", strerror(errno));
		goto done;
	}
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	if (st.o.proxy == NULL) {
		rc = proxy_start(&st);
		if (rc != 0)
			goto done;
		rc = 3;
	}

	if (bwrap) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", SB_IN_PORT);
		if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) == -1) {
			fprintf(stderr, "egressd: pipe: %s\n",
			    strerror(errno));
			goto done;
		}
		rc = bwrap_prepare(&st, cwd, rp[1], &cargv);
		if (rc != 0)
			goto done;
		rc = 3;
		snprintf(execpath, sizeof(execpath), "%s", cargv.v[0]);
		afd = args_memfd(&cargv, &xargv);
		if (afd == -1)
			goto done;
	} else {
		st.rt.sock = st.o.proxy != NULL ? st.proxyrp : st.sock;
		st.rt.handoff = st.o.proxy == NULL || st.o.handoff;
		st.rt.lfd = sb_relay_listen(0, &port, err, sizeof(err));
		if (st.rt.lfd == -1) {
			fprintf(stderr, "egressd: relay: %s\n", err);
			goto done;
		}
		st.rt.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (st.rt.efd == -1 || pthread_create(&st.rt.tid, NULL,
		    relay_thr_main, &st.rt) != 0) {
			fprintf(stderr, "egressd: relay thread: %s\n",
			    strerror(errno));
			if (st.rt.efd != -1)
				close(st.rt.efd);
			close(st.rt.lfd);
			goto done;
		}
		st.rt_running = 1;
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
		sb_strv_add(&cargv, "");	/* placeholder for argv[0] */
	}
	if (env_build(&st.o, st.o.proxy == NULL ? st.ex : NULL, url,
	    &envp) == -1) {
		fprintf(stderr, "egressd: out of memory\n");
		goto done;
	}
	if (bwrap && resolve_cmd(st.o.cmd[0], envp.v, hostcmd,
	    sizeof(hostcmd)) == 0)
		cmd_hint(&st, cwd, st.o.cmd[0], hostcmd, hint, sizeof(hint));
	if (!bwrap) {
		sb_strv_free(&cargv);
		if (resolve_cmd(st.o.cmd[0], envp.v, execpath,
		    sizeof(execpath)) == -1) {
			fprintf(stderr, "egressd: %s: command not found\n",
			    st.o.cmd[0]);
			rc = 127;
			goto done;
		}
	}
	rc = supervise(&st, execpath, bwrap ? xargv.v : st.o.cmd, envp.v,
	    sfd, rp[0], rp[1], afd, bwrap);
	rp[0] = rp[1] = afd = -1;	/* supervise() closed them */
	if (rc == 127 && hint[0] != '\0')
		fputs(hint, stderr);

	cleanup(&st);
	if (st.o.proxy == NULL)
		fprintf(stderr, "egressd: %llu allowed, %llu blocked, %llu "
		    "failed \xe2\x80\x94 audit: %s\n", st.cnt.allow,
		    st.cnt.block, st.cnt.fail, st.audit_tmp ?
		    "not kept (--audit PATH or audit_log keeps it)" :
		    strcmp(st.auditpath, "-") == 0 ? "standard output" :
		    st.auditpath);
	if (st.o.proxy == NULL)
		print_blocked(&st.cnt);
done:
	cleanup(&st);
	/* CMD never ran: say so to the launcher (egressd replay) */
	if (st.o.launch_fd != -1 && !st.launched) {
		fd = -1;
		(void)write(st.o.launch_fd, &fd, sizeof(fd));
	}
	if (rp[0] != -1)
		close(rp[0]);
	if (rp[1] != -1)
		close(rp[1]);
	if (afd != -1)
		close(afd);
	if (sfd != -1)
		close(sfd);
	sb_strv_free(&envp);
	sb_strv_free(&cargv);
	sb_strv_free(&xargv);
	sb_strv_free(&st.o.rw);
	sb_strv_free(&st.o.ro);
	sb_strv_free(&st.o.env);
	sb_strv_free(&st.o.hide);
	return rc;
}

static int
sandbox_main(int argc, char *argv[])
{
	if (argc > 0 && strcmp(argv[0], "relay") == 0)
		return sb_relay_main(argc, argv);
	return run_main(argc, argv);
}

const struct eg_module eg_mod_sandbox = {
	.name		= "sandbox",
	.summary	= "run commands behind the proxy (bubblewrap)",
	.main		= sandbox_main,
	.config		= sb_config,
	.config_free	= sb_config_free,
	.init		= sb_init,
	.on_event	= on_event,
	.fini		= sb_fini,
};
