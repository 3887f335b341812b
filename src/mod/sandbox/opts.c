/*
 * opts.c: the command line of "egressd run": its usage and --help text,
 * and the options read into struct run_opts (--rw and --ro resolved
 * component by component, refusing the symbolic links that would choose
 * what gets bound).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

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
add_path(struct mc_strv *out, const char *opt, const char *path)
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
	mc_strv_add(out, res[0] == '\0' ? "/" : res);
	return 0;
}

int
sb_run_opts(int argc, char *argv[], struct run_opts *o)
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
			if (sb_mode_parse(optarg, &o->mode) == -1)
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
			n = sb_env_name_len(optarg);
			if (!sb_env_valid_name(optarg, n))
				return usage_err("--env %s: not a variable "
				    "name", optarg);
			if (sb_env_is_proxy(optarg, n))
				return usage_err("--env %s: the proxy "
				    "variables are set by egressd", optarg);
			mc_strv_add(&o->env, optarg);
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
			mc_strv_add(&o->hide, rp);
			break;
		case 'L':
			if (sb_num(optarg, 3, 1023, &v) == -1 ||
			    fcntl((int)v, F_GETFD) == -1)
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
