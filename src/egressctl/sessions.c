/*
 * sessions.c: "egressctl session ls|new|show|rm" (cmd.h), and a
 * session's status with -S.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shared.h"

#include "cmd.h"
#include "ctl.h"
#include "json.h"
#include "print.h"

/* The columns of `session ls`, in order; values printed as the server
 * sent them, "-" when empty. */
static const char *const sess_cols[] = {
	"name", "phase", "active", "total", "allowed", "blocked", "failed",
	"socket", "listen", NULL
};

/*
 * session ls: one session per line, name first.  Not on a terminal (a
 * script, a shell completion) the columns are separated by one tab and
 * there is no header; on a terminal they are aligned under a header.
 * eg_put_esc() turns a tab or line end in a value into \x09 / \x0a, so a
 * value can never add a column or a line.
 */
static int
cmd_session_ls(void)
{
	struct jv v;
	const struct jv *ss;
	size_t w[16], i, k, n;
	char up[16];
	int rc, done;

	if ((rc = call("session ls", "GET", "/v1/sessions", NULL, &v,
	    &done)) || done)
		return rc;
	ss = jget(&v, "sessions");
	if (ss == NULL || ss->t != J_ARR) {
		jv_free(&v);
		warnx_("session ls: the server's answer has no \"sessions\" "
		    "array");
		return EX_UNREACH;
	}
	for (k = 0; sess_cols[k] != NULL; k++)
		w[k] = strlen(sess_cols[k]);
	for (i = 0; i < ss->n; i++)
		for (k = 0; sess_cols[k] != NULL; k++)
			if ((n = strlen(dash(jstr(&ss->kids[i],
			    sess_cols[k])))) > w[k])
				w[k] = n;
	if (ctl_tty_out) {
		for (k = 0; sess_cols[k] != NULL; k++) {
			for (n = 0; sess_cols[k][n] != '\0' && n < 15; n++)
				up[n] = (char)(sess_cols[k][n] - 'a' + 'A');
			up[n] = '\0';
			if (sess_cols[k + 1] == NULL)
				fputs(up, stdout);
			else {
				put_pad(up, w[k]);
				fputs("  ", stdout);
			}
		}
		putchar('\n');
	}
	for (i = 0; i < ss->n; i++) {
		for (k = 0; sess_cols[k] != NULL; k++) {
			const char *val = dash(jstr(&ss->kids[i],
			    sess_cols[k]));

			if (sess_cols[k + 1] == NULL)
				put_safe(val);
			else if (ctl_tty_out) {
				put_pad(val, w[k]);
				fputs("  ", stdout);
			} else {
				put_safe(val);
				putchar('\t');
			}
		}
		putchar('\n');
	}
	jv_free(&v);
	return EX_OK;
}

/*
 * call() on the route of session name, /v1/sessions/NAME (a valid
 * session name needs no escaping in a path); in messages "session NAME",
 * or "session VERB NAME".
 */
static int
call_one(const char *verb, const char *method, const char *name,
    struct jv *v, int *done)
{
	char path[128], what[96];

	snprintf(path, sizeof(path), "/v1/sessions/%s", name);
	snprintf(what, sizeof(what), "session %s%s%s", verb, *verb ? " " : "",
	    name);
	return call(what, method, path, NULL, v, done);
}

/* One session object as rows (session show, and status with -S). */
int
cmd_session_show(const char *name)
{
	char b[192];
	const char *ttl;
	struct jv v;
	struct tm tm;
	time_t created;
	int rc, done;

	if ((rc = call_one("", "GET", name, &v, &done)) || done)
		return rc;
	row("session", jstr(&v, "name"));
	printf("%-12s ", "phase");
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	row("socket", dash(jstr(&v, "socket")));
	row("listen", dash(jstr(&v, "listen")));
	snprintf(b, sizeof(b), "%llu active, %llu total",
	    (unsigned long long)jnum(&v, "active"),
	    (unsigned long long)jnum(&v, "total"));
	row("connections", b);
	snprintf(b, sizeof(b), "%llu allowed, %llu blocked, %llu failed",
	    (unsigned long long)jnum(&v, "allowed"),
	    (unsigned long long)jnum(&v, "blocked"),
	    (unsigned long long)jnum(&v, "failed"));
	row("decisions", b);
	if ((created = (time_t)jnum(&v, "created")) > 0 &&
	    gmtime_r(&created, &tm) != NULL &&
	    strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
		row("created", b);	/* Unix seconds from the server */
	else
		row("created", dash(jstr(&v, "created")));
	ttl = jstr(&v, "ttl_s");
	if (*ttl == '\0' || strcmp(ttl, "0") == 0)
		row("ttl", "none");
	else {
		printf("%-12s ", "ttl");
		put_safe(ttl);
		fputs(" s idle\n", stdout);
	}
	put_budget(&v);
	row("admin", ctl_admin);
	jv_free(&v);
	return EX_OK;
}

/*
 * session new: POST /v1/sessions.  Prints the socket path on the first
 * line and, when the session has a TCP listener, its ADDR:PORT on the
 * second, nothing else, so that sock=$(egressctl session new NAME) works.
 */
static int
cmd_session_new(const char *name, const char *phase, const char *listen,
    int has_ttl, uint64_t ttl)
{
	char body[512], what[96];
	struct jv v;
	int rc, done, n;

	n = snprintf(body, sizeof(body), "{\"name\":\"%s\"", name);
	if (phase != NULL)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
		    ",\"phase\":\"%s\"", phase);
	if (listen != NULL)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
		    ",\"listen\":\"%s\"", listen);
	if (has_ttl)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
		    ",\"ttl_s\":%llu", (unsigned long long)ttl);
	snprintf(body + n, sizeof(body) - (size_t)n, "}");
	snprintf(what, sizeof(what), "session new %s", name);
	if ((rc = call(what, "POST", "/v1/sessions", body, &v, &done)) ||
	    done)
		return rc;
	put_safe(dash(jstr(&v, "socket")));
	putchar('\n');
	if (*jstr(&v, "listen") != '\0') {
		put_safe(jstr(&v, "listen"));
		putchar('\n');
	}
	jv_free(&v);
	return EX_OK;
}

static int
cmd_session_rm(const char *name)
{
	struct jv v;
	uint64_t n;
	int rc, done;

	if ((rc = call_one("rm", "DELETE", name, &v, &done)) || done)
		return rc;
	n = jnum(&v, "closed");
	put_safe(*jstr(&v, "name") ? jstr(&v, "name") : name);
	printf(" deleted  (%llu connection%s closed)\n",
	    (unsigned long long)n, n == 1 ? "" : "s");
	jv_free(&v);
	return EX_OK;
}

int
name_err(const char *name)
{
	return usage_err("'%s' is not a session name (1 to %d of A-Z a-z "
	    "0-9 _ . -, not beginning with . or -)", name, EG_PHASE_NAME_MAX);
}

int
cmd_session(const char *const *w, size_t n, const char *phase,
    const char *listen, int has_ttl, uint64_t ttl)
{
	if (n == 0)
		return usage_err("session: which? ls, new NAME, show NAME, "
		    "rm NAME");
	if (strcmp(w[0], "ls") == 0 || strcmp(w[0], "new") == 0 ||
	    strcmp(w[0], "show") == 0 || strcmp(w[0], "rm") == 0) {
		if (strcmp(w[0], "ls") == 0 ? n != 1 : n != 2)
			return usage_err(strcmp(w[0], "ls") == 0 ?
			    "session ls takes no argument" :
			    "session %s takes one NAME", w[0]);
	} else
		return usage_err("session: unknown command '%s' (ls, new, "
		    "show, rm)", w[0]);
	if (n == 2 && !eg_session_name_ok(w[1], strlen(w[1])))
		return name_err(w[1]);
	if (strcmp(w[0], "ls") == 0)
		return cmd_session_ls();
	if (strcmp(w[0], "new") == 0)
		return cmd_session_new(w[1], phase, listen, has_ttl, ttl);
	if (strcmp(w[0], "show") == 0)
		return cmd_session_show(w[1]);
	return cmd_session_rm(w[1]);
}
