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

int
main(int argc, char *argv[])
{
	static char defpath[256];
	const char *words[4], *tokfile = NULL, *env, *a;
	const char *new_phase = NULL, *new_listen = NULL;
	uint64_t since = 0, limit = 100, ttl = 0;
	size_t nw = 0;
	int i, follow = 0, audit_opts = 0, new_opts = 0, has_ttl = 0, rc;

	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_text, stdout);
			return EX_OK;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") ==
		    0) {
			printf("egressctl %s\n", PACKAGE_VERSION);
			return EX_OK;
		} else if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0)
			ctl_json = 1;
		else if (strcmp(a, "-f") == 0 || strcmp(a, "--follow") == 0)
			follow = audit_opts = 1;
		else if (strcmp(a, "-s") == 0 || strcmp(a, "--socket") == 0 ||
		    strcmp(a, "-t") == 0 || strcmp(a, "--token-file") == 0 ||
		    strcmp(a, "-S") == 0 || strcmp(a, "--session") == 0 ||
		    strcmp(a, "--phase") == 0 || strcmp(a, "--listen") == 0 ||
		    strcmp(a, "--ttl") == 0 ||
		    strcmp(a, "--since") == 0 || strcmp(a, "--limit") == 0) {
			if (i + 1 >= argc)
				return usage_err("%s needs a value", a);
			if (strcmp(a, "-s") == 0 || strcmp(a, "--socket") == 0)
				ctl_admin = argv[++i];
			else if (strcmp(a, "-t") == 0 ||
			    strcmp(a, "--token-file") == 0)
				tokfile = argv[++i];
			else if (strcmp(a, "-S") == 0 ||
			    strcmp(a, "--session") == 0) {
				ctl_session = argv[++i];
				if (!eg_session_name_ok(ctl_session,
				    strlen(ctl_session)))
					return name_err(ctl_session);
			} else if (strcmp(a, "--phase") == 0) {
				new_opts = 1;
				new_phase = argv[++i];
				if (!eg_phase_name_ok(new_phase,
				    strlen(new_phase)))
					return usage_err("--phase: '%s' is "
					    "not a phase name (1 to %d of "
					    "A-Z a-z 0-9 _ . -)", new_phase,
					    EG_PHASE_NAME_MAX);
			} else if (strcmp(a, "--listen") == 0) {
				new_opts = 1;
				new_listen = argv[++i];
				if (!listen_ok(new_listen))
					return usage_err("--listen: expected "
					    "ADDR:PORT with an IP address "
					    "(127.0.0.1:0, [::1]:0), got "
					    "'%s'", new_listen);
			} else if (strcmp(a, "--ttl") == 0) {
				new_opts = has_ttl = 1;
				if (parse_num(argv[++i], UINT32_MAX, &ttl) ||
				    ttl == 0)
					return usage_err("--ttl: expected "
					    "seconds, 1 to %lu, got '%s'",
					    (unsigned long)UINT32_MAX,
					    argv[i]);
			} else if (strcmp(a, "--since") == 0) {
				audit_opts = 1;
				if (parse_num(argv[++i], UINT64_MAX, &since))
					return usage_err("--since: expected "
					    "a seq number, got '%s'", argv[i]);
			} else {
				audit_opts = 1;
				if (parse_num(argv[++i], 1000, &limit) ||
				    limit == 0)
					return usage_err("--limit: expected "
					    "1 to 1000, got '%s'", argv[i]);
			}
		} else if (strcmp(a, "--") == 0) {
			for (i++; i < argc; i++)
				if (nw < 4)
					words[nw++] = argv[i];
				else
					return usage_err("too many "
					    "arguments");
			break;
		} else if (a[0] == '-' && a[1] != '\0')
			return usage_err("unknown option '%s'", a);
		else if (nw < 4)
			words[nw++] = a;
		else
			return usage_err("too many arguments");
	}
	if (nw == 0)
		return usage_err("which command? status, phase [NAME], "
		    "phases, audit [--since SEQ] [-f], reload, session "
		    "ls|new|show|rm");
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
	if (tokfile != NULL) {
		if ((ctl_token = read_token_file(tokfile)) == NULL)
			return EX_USAGE;
	} else if ((env = getenv("EGRESSD_TOKEN")) != NULL && *env != '\0') {
		if (!token_ok(env))
			return usage_err("EGRESSD_TOKEN: the token must be one "
			    "word of printable ASCII");
		ctl_token = strdup(env);
	}
	if (audit_opts && strcmp(words[0], "audit") != 0)
		return usage_err("--since, --limit and -f go with audit");
	if (new_opts && (strcmp(words[0], "session") != 0 || nw < 2 ||
	    strcmp(words[1], "new") != 0))
		return usage_err("--phase, --listen and --ttl go with "
		    "session new");
	if (ctl_session != NULL && strcmp(words[0], "status") != 0 &&
	    strcmp(words[0], "phase") != 0 && strcmp(words[0], "audit") != 0)
		return usage_err("-S goes with status, phase and audit, not "
		    "with %s", words[0]);
	ctl_tty_out = isatty(STDOUT_FILENO);
	/* https://no-color.org: set and not empty means no colour */
	ctl_tty_bold = ctl_tty_out && (getenv("NO_COLOR") == NULL ||
	    *getenv("NO_COLOR") == '\0');
	signal(SIGPIPE, SIG_IGN);

	if (strcmp(words[0], "status") == 0 && nw == 1)
		rc = cmd_status();
	else if (strcmp(words[0], "phase") == 0 && nw == 1)
		rc = cmd_phase_show();
	else if (strcmp(words[0], "phase") == 0 && nw == 2)
		rc = cmd_phase_set(words[1]);
	else if (strcmp(words[0], "phases") == 0 && nw == 1)
		rc = cmd_phases();
	else if (strcmp(words[0], "audit") == 0 && nw == 1)
		rc = cmd_audit(since, (unsigned)limit, follow);
	else if (strcmp(words[0], "reload") == 0 && nw == 1)
		rc = cmd_reload();
	else if (strcmp(words[0], "session") == 0)
		rc = cmd_session(words + 1, nw - 1, new_phase, new_listen,
		    has_ttl, ttl);
	else if (strcmp(words[0], "status") == 0 ||
	    strcmp(words[0], "phases") == 0 || strcmp(words[0], "phase") == 0 ||
	    strcmp(words[0], "audit") == 0 || strcmp(words[0], "reload") == 0)
		rc = usage_err("%s: unexpected argument '%s'", words[0],
		    words[nw - 1]);
	else
		rc = usage_err("unknown command '%s'", words[0]);
	free(ctl_token);
	return rc;
}
