/*
 * cmd.c: egressctl's commands on the proxy (cmd.h): status, phase,
 * phases, audit and reload, for the default session or with -S for one
 * session, and the call every command makes (call(), refused()).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shared.h"

#include "cmd.h"
#include "ctl.h"
#include "http.h"
#include "json.h"
#include "print.h"

int
refused(const char *what, const struct resp *r)
{
	struct jv v;
	const struct jv *e;
	size_t i;

	if (ctl_json)
		put_json(stdout, r->body, r->len);
	if (json_parse(r->body, r->len, &v) == 0) {
		if ((e = jget(&v, "errors")) != NULL && e->t == J_ARR) {
			warnx_("%s refused (%d); the old configuration stays:",
			    what, r->status);
			for (i = 0; i < e->n; i++)
				if (e->kids[i].t == J_STR) {
					fputs("  ", stderr);
					eg_put_esc(stderr, e->kids[i].s,
					    strlen(e->kids[i].s), 0);
					fputc('\n', stderr);
				}
		} else
			warnx_("%s: %s (HTTP %d)", what, jstr(&v, "error"),
			    r->status);
		jv_free(&v);
	} else
		warnx_("%s: HTTP %d", what, r->status);
	if (r->status == 401)
		fprintf(stderr, "egressctl: a TCP admin API needs its token: "
		    "set EGRESSD_TOKEN or pass --token-file FILE\n");
	return EX_REFUSED;
}

int
call(const char *what, const char *method, const char *path,
    const char *body, struct jv *v, int *done)
{
	struct resp r;
	int rc;

	*done = 0;
	if ((rc = http(method, path, body, &r)) != 0)
		return rc;
	if (r.status < 200 || r.status > 299) {
		rc = refused(what, &r);
		free(r.raw);
		return rc;
	}
	if (ctl_json) {
		put_json(stdout, r.body, r.len);
		if (r.len == 0 || r.body[r.len - 1] != '\n')
			putchar('\n');
		free(r.raw);
		*done = 1;
		return EX_OK;
	}
	if (json_parse(r.body, r.len, v) == -1) {
		free(r.raw);
		warnx_("%s: the server's answer is not valid JSON", what);
		return EX_UNREACH;
	}
	free(r.raw);
	return EX_OK;
}

/*
 * The route of sub ("phase", "audit") and its words in messages: the
 * default session's /v1/SUB and "SUB", or with -S /v1/sessions/NAME/SUB
 * and "session NAME SUB" (the name has passed eg_session_name_ok(), so
 * it needs no escaping in a path).
 */
static void
scope(const char *sub, char *path, size_t plen, char *what, size_t wlen)
{
	if (ctl_session != NULL) {
		snprintf(path, plen, "/v1/sessions/%s/%s", ctl_session, sub);
		snprintf(what, wlen, "session %s %s", ctl_session, sub);
	} else {
		snprintf(path, plen, "/v1/%s", sub);
		snprintf(what, wlen, "%s", sub);
	}
}

int
cmd_status(void)
{
	struct jv v;
	const struct jv *c, *m;
	char b[128];
	size_t i;
	int rc, done;

	if (ctl_session != NULL)	/* a session's status is its object */
		return cmd_session_show(ctl_session);
	if ((rc = call("status", "GET", "/v1/status", NULL, &v, &done)) ||
	    done)
		return rc;
	printf("%-12s ", "phase");
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	row("version", jstr(&v, "version"));
	put_uptime(jnum(&v, "uptime_s"));
	c = jget(&v, "connections");
	snprintf(b, sizeof(b), "%llu active, %llu total",
	    (unsigned long long)jnum(c, "active"),
	    (unsigned long long)jnum(c, "total"));
	row("connections", b);
	printf("%-12s ", "modules");
	m = jget(&v, "modules");
	if (m == NULL || m->t != J_ARR || m->n == 0)
		fputs("none", stdout);
	for (i = 0; m != NULL && m->t == J_ARR && i < m->n; i++) {
		if (i)
			putchar(' ');
		if (m->kids[i].t == J_STR)
			put_safe(m->kids[i].s);
	}
	putchar('\n');
	put_budget(&v);
	row("admin", ctl_admin);
	jv_free(&v);
	return EX_OK;
}

int
cmd_phase_show(void)
{
	char path[128], what[96];
	struct jv v;
	int rc, done;

	scope("phase", path, sizeof(path), what, sizeof(what));
	if ((rc = call(what, "GET", path, NULL, &v, &done)) || done)
		return rc;
	printf("%-12s ", "phase");
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	row("mode", jstr(&v, "mode"));
	printf("%-12s ", "allow");
	put_allow(&v, "             ");
	jv_free(&v);
	return EX_OK;
}

int
cmd_phase_set(const char *name)
{
	char body[128], what[192], w[96], path[128];
	struct jv v;
	uint64_t n;
	int rc, done;

	if (!eg_phase_name_ok(name, strlen(name)))
		return usage_err("'%s' is not a phase name (1 to %d of "
		    "A-Z a-z 0-9 _ . -)", name, EG_PHASE_NAME_MAX);
	snprintf(body, sizeof(body), "{\"phase\":\"%s\"}", name);
	scope("phase", path, sizeof(path), w, sizeof(w));
	snprintf(what, sizeof(what), "%s %s", w, name);
	if ((rc = call(what, "PUT", path, body, &v, &done)) || done)
		return rc;
	n = jnum(&v, "closed");
	put_safe(jstr(&v, "previous"));
	fputs(" -> ", stdout);
	put_bold(jstr(&v, "phase"));
	printf("  (%llu connection%s closed)\n", (unsigned long long)n,
	    n == 1 ? "" : "s");
	jv_free(&v);
	return EX_OK;
}

int
cmd_phases(void)
{
	struct jv v;
	const struct jv *ps, *p;
	const char *cur;
	size_t i, w = 5;
	int rc, done;

	if ((rc = call("phases", "GET", "/v1/phases", NULL, &v, &done)) ||
	    done)
		return rc;
	cur = jstr(&v, "phase");
	ps = jget(&v, "phases");
	for (i = 0; ps != NULL && ps->t == J_ARR && i < ps->n; i++)
		if (strlen(jstr(&ps->kids[i], "name")) > w)
			w = strlen(jstr(&ps->kids[i], "name"));
	printf("  %-*s  %-7s  %s\n", (int)w, "PHASE", "MODE", "ALLOW");
	for (i = 0; ps != NULL && ps->t == J_ARR && i < ps->n; i++) {
		p = &ps->kids[i];
		if (strcmp(jstr(p, "name"), cur) == 0) {
			fputs("* ", stdout);
			if (ctl_tty_bold)
				fputs("\033[1m", stdout);
			put_pad(jstr(p, "name"), w);
			if (ctl_tty_bold)
				fputs("\033[0m", stdout);
		} else {
			fputs("  ", stdout);
			put_pad(jstr(p, "name"), w);
		}
		fputs("  ", stdout);
		put_pad(jstr(p, "mode"), 7);
		fputs("  ", stdout);
		{
			char ind[128];

			snprintf(ind, sizeof(ind), "%*s", (int)(w + 13), "");
			put_allow(p, ind);
		}
	}
	jv_free(&v);
	return EX_OK;
}

static volatile sig_atomic_t stop_follow;

static void
on_int(int sig)
{
	(void)sig;
	stop_follow = 1;
}

int
cmd_audit(uint64_t since, unsigned limit, int follow)
{
	struct timespec ts = { 0, 200 * 1000000L };
	struct resp r;
	struct jv v;
	const struct jv *e;
	char path[256], base[128], what[96];
	uint64_t seq;
	size_t i;
	int rc, first = 1;

	scope("audit", base, sizeof(base), what, sizeof(what));
	if (follow) {
		signal(SIGINT, on_int);
		signal(SIGTERM, on_int);
	}
	do {
		if (!first)
			nanosleep(&ts, NULL);
		if (stop_follow)
			break;
		if (first && since == 0)
			snprintf(path, sizeof(path), "%s?limit=%u", base,
			    limit);
		else
			snprintf(path, sizeof(path), "%s?since=%llu&limit=%u",
			    base, (unsigned long long)since,
			    first ? limit : 1000);
		if ((rc = http("GET", path, NULL, &r)) != 0)
			return stop_follow ? EX_OK : rc;
		if (r.status < 200 || r.status > 299) {
			rc = refused(what, &r);
			free(r.raw);
			return rc;
		}
		if (json_parse(r.body, r.len, &v) == -1 || v.t != J_ARR) {
			free(r.raw);
			warnx_("%s: the server's answer is not a JSON array",
			    what);
			return EX_UNREACH;
		}
		if (first && !ctl_json && !follow && v.n == 0)
			fprintf(stderr, "egressctl: no audit events %s\n",
			    since ? "after that seq" : "yet");
		for (i = 0; i < v.n; i++) {
			e = &v.kids[i];
			seq = jnum(e, "seq");
			if (seq > since)
				since = seq;
			if (ctl_json) {
				put_json(stdout, e->raw, e->rawlen);
				putchar('\n');
			} else
				put_event(e);
		}
		fflush(stdout);
		jv_free(&v);
		free(r.raw);
		first = 0;
	} while (follow);
	return EX_OK;
}

int
cmd_reload(void)
{
	struct jv v;
	int rc, done;

	if ((rc = call("reload", "POST", "/v1/reload", NULL, &v, &done)) ||
	    done)
		return rc;
	fputs("configuration reloaded; phase ", stdout);
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	jv_free(&v);
	return EX_OK;
}
