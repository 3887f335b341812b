/*
 * egressctl.c: the control CLI for egressd's admin API.  It speaks just
 * enough HTTP/1.1 over a Unix socket or loopback TCP to call one route
 * (http.c), parses the JSON answer with a small bounded reader (json.c),
 * and prints it as aligned text (print.c), or passes the JSON through
 * with --json.  This file reads the command line and runs the command
 * (cmd.c, sessions.c).  Exit status: 0 ok, 1 the server refused, 2 usage,
 * 3 cannot reach the server.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared.h"

#include "cmd.h"
#include "ctl.h"
#include "http.h"
#include "print.h"

static const char usage_text[] =
"usage: egressctl [-s ADMIN] [-S SESSION] [--json] [--token-file FILE] COMMAND\n"
"\n"
"Talk to a running egressd through its admin API.\n"
"\n"
"Commands:\n"
"  status               version, current phase, uptime, connections\n"
"  phase                the current phase and its allowlist\n"
"  phase NAME           switch to phase NAME; with on_phase_change = close,\n"
"                       tunnels NAME does not allow are closed first\n"
"  phases               every phase and its allowlist (* marks the current)\n"
"  audit [--since SEQ] [--limit N] [-f]\n"
"                       recent audit events from the in-memory ring; -f\n"
"                       keeps following new ones (Ctrl-C to stop)\n"
"  reload               re-read egressd's configuration file (like SIGHUP);\n"
"                       on errors the old configuration stays\n"
"\n"
"Sessions (one egressd, many runs, each with its own phase):\n"
"  session ls           one session per line: NAME PHASE ACTIVE TOTAL ALLOWED\n"
"                       BLOCKED FAILED SOCKET LISTEN, tab-separated\n"
"  session new NAME [--phase P] [--listen ADDR:PORT] [--ttl SECONDS]\n"
"                       create a session; prints its socket path, then its\n"
"                       TCP address on a second line with --listen\n"
"  session show NAME    one session: phase, sockets, counters\n"
"  session rm NAME      delete it: its listeners and tunnels are closed\n"
"  -S NAME status|phase [P]|audit\n"
"                       the same commands, for session NAME only\n"
"\n"
"Options:\n"
"  -s, --socket ADMIN   where the admin API listens: a Unix socket path, or\n"
"                       ADDR:PORT for TCP (default: $EGRESSD_ADMIN, else\n"
"                       $XDG_RUNTIME_DIR/egressd/admin.sock, else\n"
"                       /tmp/egressd-UID/admin.sock, as egressd does)\n"
"  -S, --session NAME   direct status, phase and audit at session NAME\n"
"  -j, --json           print the server's JSON instead of text\n"
"  -t, --token-file FILE  bearer token for a TCP admin (default: the\n"
"                       EGRESSD_TOKEN environment variable)\n"
"  -h, --help           this text;  -V, --version  egressctl's version\n"
"\n"
"Exit status: 0 ok, 1 the server refused (unknown phase, bad reload...),\n"
"2 usage error, 3 cannot reach the server.\n"
"\n"
"Examples:\n"
"  egressctl phase agent          # setup is over: only the model API now\n"
"  egressctl -s 127.0.0.1:9090 --token-file /etc/egressd/admin.token status\n"
"  egressctl audit -f             # watch decisions as they happen\n"
"  sock=$(egressctl session new run-42 --phase setup)\n"
"  egressctl -S run-42 phase agent  # only run-42 switches\n"
"  egressctl session rm run-42\n";

/* The settings every file reads (ctl.h), set by main(). */
const char *ctl_admin;
const char *ctl_session;
char *ctl_token;
int ctl_json;
int ctl_tty_out;
int ctl_tty_bold;

static int
parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* --listen: an IPv4 literal or a bracketed IPv6 one, and a port (0 =
 * any); the daemon checks it again. */
static int
listen_ok(const char *a)
{
	char host[INET6_ADDRSTRLEN + 1];
	struct in6_addr a6;
	struct in_addr a4;
	const char *colon = strrchr(a, ':');
	uint64_t port;
	size_t hl;

	if (colon == NULL || parse_num(colon + 1, 65535, &port) == -1)
		return 0;
	hl = (size_t)(colon - a);
	if (hl >= 2 && a[0] == '[' && a[hl - 1] == ']') {
		if (hl - 2 >= sizeof(host))
			return 0;
		memcpy(host, a + 1, hl - 2);
		host[hl - 2] = '\0';
		return inet_pton(AF_INET6, host, &a6) == 1;
	}
	if (hl >= sizeof(host))
		return 0;
	memcpy(host, a, hl);
	host[hl] = '\0';
	return inet_pton(AF_INET, host, &a4) == 1;
}

/* The same rules as the daemon's admin_token_file (eg_token_read()). */
static char *
read_token_file(const char *file)
{
	char buf[EG_TOKEN_MAX + 1], msg[512], *t;
	const char *why;

	if ((why = eg_token_read(file, buf, msg, sizeof(msg))) != NULL) {
		warnx_("--token-file %s: %s", file, why);
		return NULL;
	}
	t = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return t;
}

/* A token must not be able to inject header lines: the file's rules. */
static int
token_ok(const char *t)
{
	for (; *t != '\0'; t++)
		if (*t <= ' ' || *t > '~')
			return 0;
	return 1;
}

/* What the command line says besides the ctl_* settings. */
struct args {
	const char	*words[4];	/* the command and its words */
	size_t		 nw;
	const char	*tokfile;	/* -t */
	const char	*phase;		/* session new --phase */
	const char	*listen;	/* session new --listen */
	int		 has_ttl;	/* session new --ttl */
	uint64_t	 ttl;
	uint64_t	 since, limit;	/* audit --since, --limit */
	int		 follow;	/* audit -f */
	int		 audit_opts;	/* --since, --limit or -f given */
	int		 new_opts;	/* --phase, --listen or --ttl given */
};

enum opt_id {
	O_HELP, O_VERSION, O_JSON, O_FOLLOW, O_SOCKET, O_TOKEN_FILE,
	O_SESSION, O_PHASE, O_LISTEN, O_TTL, O_SINCE, O_LIMIT
};

/* The options: short name (or NULL), long name, whether a value follows. */
static const struct opt {
	const char	*sname, *lname;
	enum opt_id	 id;
	int		 value;
} opts[] = {
	{ "-h", "--help", O_HELP, 0 },
	{ "-V", "--version", O_VERSION, 0 },
	{ "-j", "--json", O_JSON, 0 },
	{ "-f", "--follow", O_FOLLOW, 0 },
	{ "-s", "--socket", O_SOCKET, 1 },
	{ "-t", "--token-file", O_TOKEN_FILE, 1 },
	{ "-S", "--session", O_SESSION, 1 },
	{ NULL, "--phase", O_PHASE, 1 },
	{ NULL, "--listen", O_LISTEN, 1 },
	{ NULL, "--ttl", O_TTL, 1 },
	{ NULL, "--since", O_SINCE, 1 },
	{ NULL, "--limit", O_LIMIT, 1 },
};

/* One option (v: its value, or NULL); -1 to go on, else the exit status
 * after --help, --version or a usage error. */
static int
opt_set(struct args *a, enum opt_id id, const char *v)
{
	switch (id) {
	case O_HELP:
		fputs(usage_text, stdout);
		return EX_OK;
	case O_VERSION:
		printf("egressctl %s\n", PACKAGE_VERSION);
		return EX_OK;
	case O_JSON:
		ctl_json = 1;
		break;
	case O_FOLLOW:
		a->follow = a->audit_opts = 1;
		break;
	case O_SOCKET:
		ctl_admin = v;
		break;
	case O_TOKEN_FILE:
		a->tokfile = v;
		break;
	case O_SESSION:
		ctl_session = v;
		if (!eg_session_name_ok(v, strlen(v)))
			return name_err(v);
		break;
	case O_PHASE:
		a->new_opts = 1;
		a->phase = v;
		if (!eg_phase_name_ok(v, strlen(v)))
			return usage_err("--phase: '%s' is not a phase name (1 "
			    "to %d of A-Z a-z 0-9 _ . -)", v,
			    EG_PHASE_NAME_MAX);
		break;
	case O_LISTEN:
		a->new_opts = 1;
		a->listen = v;
		if (!listen_ok(v))
			return usage_err("--listen: expected ADDR:PORT with an "
			    "IP address (127.0.0.1:0, [::1]:0), got '%s'", v);
		break;
	case O_TTL:
		a->new_opts = a->has_ttl = 1;
		if (parse_num(v, UINT32_MAX, &a->ttl) || a->ttl == 0)
			return usage_err("--ttl: expected seconds, 1 to %lu, "
			    "got '%s'", (unsigned long)UINT32_MAX, v);
		break;
	case O_SINCE:
		a->audit_opts = 1;
		if (parse_num(v, UINT64_MAX, &a->since))
			return usage_err("--since: expected a seq number, got "
			    "'%s'", v);
		break;
	case O_LIMIT:
		a->audit_opts = 1;
		if (parse_num(v, 1000, &a->limit) || a->limit == 0)
			return usage_err("--limit: expected 1 to 1000, got "
			    "'%s'", v);
		break;
	}
	return -1;
}

static int
add_word(struct args *a, const char *w)
{
	if (a->nw >= sizeof(a->words) / sizeof(a->words[0]))
		return usage_err("too many arguments");
	a->words[a->nw++] = w;
	return -1;
}

/* Options and words, in any order ("--" ends the options); -1 to go on,
 * else the exit status. */
static int
parse_args(int argc, char *argv[], struct args *a)
{
	const struct opt *o;
	const char *arg;
	size_t k;
	int i, rc;

	for (i = 1; i < argc; i++) {
		arg = argv[i];
		for (o = NULL, k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if ((opts[k].sname != NULL &&
			    strcmp(arg, opts[k].sname) == 0) ||
			    strcmp(arg, opts[k].lname) == 0)
				o = &opts[k];
		if (o != NULL) {
			if (o->value && i + 1 >= argc)
				return usage_err("%s needs a value", arg);
			rc = opt_set(a, o->id, o->value ? argv[++i] : NULL);
		} else if (strcmp(arg, "--") == 0) {
			for (rc = -1, i++; i < argc && rc == -1; i++)
				rc = add_word(a, argv[i]);
			return rc;
		} else if (arg[0] == '-' && arg[1] != '\0')
			rc = usage_err("unknown option '%s'", arg);
		else
			rc = add_word(a, arg);
		if (rc != -1)
			return rc;
	}
	return -1;
}

/*
 * What the command line left unsaid: the admin address ($EGRESSD_ADMIN,
 * else where egressd puts it) and the token ($EGRESSD_TOKEN).  -1 to go
 * on, else the exit status.
 */
static int
settle(const struct args *a)
{
	static char defpath[256];
	const char *env;

	if (ctl_admin == NULL && (env = getenv("EGRESSD_ADMIN")) != NULL &&
	    *env != '\0')
		ctl_admin = env;
	if (ctl_admin == NULL) {
		env = getenv("XDG_RUNTIME_DIR");
		if (env != NULL && *env != '\0')
			snprintf(defpath, sizeof(defpath),
			    "%s/egressd/admin.sock", env);
		else
			snprintf(defpath, sizeof(defpath),
			    "/tmp/egressd-%lu/admin.sock",
			    (unsigned long)getuid());
		ctl_admin = defpath;
	}
	if (!is_unix(ctl_admin) && strrchr(ctl_admin, ':') == NULL)
		return usage_err("-s %s: expected a socket path (with a /) or "
		    "ADDR:PORT", ctl_admin);
	if (a->tokfile != NULL) {
		if ((ctl_token = read_token_file(a->tokfile)) == NULL)
			return EX_USAGE;
	} else if ((env = getenv("EGRESSD_TOKEN")) != NULL && *env != '\0') {
		if (!token_ok(env))
			return usage_err("EGRESSD_TOKEN: the token must be one "
			    "word of printable ASCII");
		ctl_token = strdup(env);
	}
	return -1;
}

/* The command, once its options are checked against it. */
static int
run(const struct args *a)
{
	const char *const *w = a->words;
	size_t nw = a->nw;

	if (a->audit_opts && strcmp(w[0], "audit") != 0)
		return usage_err("--since, --limit and -f go with audit");
	if (a->new_opts && (strcmp(w[0], "session") != 0 || nw < 2 ||
	    strcmp(w[1], "new") != 0))
		return usage_err("--phase, --listen and --ttl go with "
		    "session new");
	if (ctl_session != NULL && strcmp(w[0], "status") != 0 &&
	    strcmp(w[0], "phase") != 0 && strcmp(w[0], "audit") != 0)
		return usage_err("-S goes with status, phase and audit, not "
		    "with %s", w[0]);
	ctl_tty_out = isatty(STDOUT_FILENO);
	/* https://no-color.org: set and not empty means no colour */
	ctl_tty_bold = ctl_tty_out && (getenv("NO_COLOR") == NULL ||
	    *getenv("NO_COLOR") == '\0');
	signal(SIGPIPE, SIG_IGN);

	if (strcmp(w[0], "status") == 0 && nw == 1)
		return cmd_status();
	if (strcmp(w[0], "phase") == 0 && nw == 1)
		return cmd_phase_show();
	if (strcmp(w[0], "phase") == 0 && nw == 2)
		return cmd_phase_set(w[1]);
	if (strcmp(w[0], "phases") == 0 && nw == 1)
		return cmd_phases();
	if (strcmp(w[0], "audit") == 0 && nw == 1)
		return cmd_audit(a->since, (unsigned)a->limit, a->follow);
	if (strcmp(w[0], "reload") == 0 && nw == 1)
		return cmd_reload();
	if (strcmp(w[0], "session") == 0)
		return cmd_session(w + 1, nw - 1, a->phase,
		    a->listen, a->has_ttl, a->ttl);
	if (strcmp(w[0], "status") == 0 || strcmp(w[0], "phases") == 0 ||
	    strcmp(w[0], "phase") == 0 || strcmp(w[0], "audit") == 0 ||
	    strcmp(w[0], "reload") == 0)
		return usage_err("%s: unexpected argument '%s'", w[0],
		    w[nw - 1]);
	return usage_err("unknown command '%s'", w[0]);
}

int
main(int argc, char *argv[])
{
	struct args a = { .limit = 100 };
	int rc;

	if ((rc = parse_args(argc, argv, &a)) != -1)
		return rc;
	if (a.nw == 0)
		return usage_err("which command? status, phase [NAME], "
		    "phases, audit [--since SEQ] [-f], reload, session "
		    "ls|new|show|rm");
	if ((rc = settle(&a)) == -1)
		rc = run(&a);
	free(ctl_token);
	return rc;
}
