/*
 * receipt.c: run.json, receipt.json, keeper.json and exit.json (see
 * receipt.h and interfaces.md §2).  Writes are mc_write_json (atomic);
 * reads take what they know and leave the rest zero.
 */
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "../common/fsutil.h"
#include "alloc.h"
#include "clock.h"
#include "receipt.h"

void
rp_ts_of(int64_t ms, char out[RP_TS_MAX])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(out, RP_TS_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

void
rp_ts_now(char out[RP_TS_MAX])
{
	rp_ts_of(eg_wall_ms(), out);
}

int64_t
rp_ts_parse(const char *ts)
{
	struct tm tm;
	int ms = 0;

	memset(&tm, 0, sizeof(tm));
	if (ts == NULL || sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ",
	    &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
	    &tm.tm_sec, &ms) != 7)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

void
rp_command_sha256(const struct mc_strv *argv, char out[65])
{
	json_t *a;
	char *s;
	size_t i;

	a = json_array();
	for (i = 0; a != NULL && i < argv->n; i++)
		json_array_append_new(a, json_string(argv->v[i]));
	s = a != NULL ? json_dumps(a, JSON_COMPACT) :
	    NULL;
	mc_sha256_hex(s != NULL ? s : "", s != NULL ? strlen(s) : 0, out);
	eg_free(s);
	json_decref(a);
}

static json_t *
str_or_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

static json_t *
int_or_null(int has, long long v)
{
	return has ? json_integer(v) : json_null();
}

/* exit_code and signal: integers, or null when there is none */
static void
set_exit(json_t *o, int has_exit, int code, int has_signal, int sig)
{
	json_object_set_new(o, "exit_code", int_or_null(has_exit, code));
	json_object_set_new(o, "signal", int_or_null(has_signal, sig));
}

/* Write o as NAME in fd (atomically) and drop it; errno is kept. */
static int
write_put(int fd, const char *name, json_t *o)
{
	int rc, e;

	rc = mc_write_json(fd, name, o);
	e = errno;
	json_decref(o);
	errno = e;
	return rc;
}

static const char *const step_state_names[] = {
	[RP_SS_NONE] = "",
	[RP_SS_PREPARED] = "prepared",
	[RP_SS_STARTING] = "starting",
	[RP_SS_RUNNING] = "running",
	[RP_SS_CAPTURING] = "capturing",
	[RP_SS_CAPTURED] = "captured",
	[RP_SS_SKIPPED] = "skipped"
};

const char *
rp_step_state_name(enum rp_step_state st)
{
	if ((size_t)st >= sizeof(step_state_names) /
	    sizeof(step_state_names[0]))
		return "";
	return step_state_names[st];
}

enum rp_step_state
rp_step_state_of(const char *name)
{
	size_t i;

	for (i = 1; i < sizeof(step_state_names) /
	    sizeof(step_state_names[0]); i++)
		if (strcmp(name, step_state_names[i]) == 0)
			return (enum rp_step_state)i;
	return RP_SS_NONE;
}

int
rp_receipt_write(int stepfd, const struct rp_receipt *r,
    const struct rp_step *st, const char *const *envp, int public)
{
	json_t *o, *d, *eh, *sec, *cmd, *env;
	char hex[65];
	const char *eq;
	size_t i;

	o = json_object();
	d = json_object();
	eh = json_object();
	sec = json_array();
	if (o == NULL || d == NULL || eh == NULL || sec == NULL) {
		json_decref(o);
		json_decref(d);
		json_decref(eh);
		json_decref(sec);
		errno = ENOMEM;
		return -1;
	}
	json_object_set_new(o, "step", json_string(r->step));
	json_object_set_new(o, "index", json_integer(r->index));
	json_object_set_new(o, "phase", json_string(r->phase));
	json_object_set_new(o, "state", json_string(
	    rp_step_state_name(r->state)));
	json_object_set_new(o, "command_sha256", json_string(
	    r->command_sha256));
	json_object_set_new(o, "pid", int_or_null(r->pid != 0, r->pid));
	json_object_set_new(o, "pid_start", str_or_null(r->pid_start));
	json_object_set_new(o, "started", str_or_null(r->started));
	json_object_set_new(o, "ended", str_or_null(r->ended));
	set_exit(o, r->has_exit, r->exit_code, r->has_signal, r->signal);
	json_object_set_new(o, "termination", str_or_null(r->termination));
	json_object_set_new(d, "allowed", json_integer((json_int_t)r->allowed));
	json_object_set_new(d, "blocked", json_integer((json_int_t)r->blocked));
	json_object_set_new(d, "failed", json_integer((json_int_t)r->failed));
	json_object_set_new(o, "decisions", d);
	if (r->nusage > 0) {
		json_t *u = json_object();
		size_t k;

		for (k = 0; u != NULL && k < r->nusage; k++)
			json_object_set_new(u, r->usage[k].route, json_pack(
			    "{s:I,s:I,s:I}",
			    "requests", (json_int_t)r->usage[k].requests,
			    "tokens_in", (json_int_t)r->usage[k].tokens_in,
			    "tokens_out", (json_int_t)r->usage[k].tokens_out));
		if (u != NULL)
			json_object_set_new(o, "usage", u);
	}
	if (r->note[0] != '\0')
		json_object_set_new(o, "note", json_string(r->note));
	for (i = 0; envp != NULL && envp[i] != NULL; i++) {
		if ((eq = strchr(envp[i], '=')) == NULL)
			continue;
		mc_sha256_hex(eq + 1, strlen(eq + 1), hex);
		json_object_setn_new(eh, envp[i], (size_t)(eq - envp[i]),
		    json_string(hex));
	}
	json_object_set_new(o, "env_sha256", eh);
	for (i = 0; st != NULL && i < st->secrets.n; i++)
		json_array_append_new(sec, json_string(st->secrets.v[i]));
	json_object_set_new(o, "secrets", sec);
	if (public && st != NULL) {
		cmd = json_array();
		env = json_object();
		for (i = 0; cmd != NULL && i < st->argv.n; i++)
			json_array_append_new(cmd, json_string(st->argv.v[i]));
		for (i = 0; env != NULL && envp != NULL && envp[i] != NULL;
		    i++) {
			if ((eq = strchr(envp[i], '=')) == NULL)
				continue;
			json_object_setn_new(env, envp[i], (size_t)(eq -
			    envp[i]), json_string(eq + 1));
		}
		json_object_set_new(o, "command", cmd);
		json_object_set_new(o, "env", env);
	}
	return write_put(stepfd, "receipt.json", o);
}

static json_t *
load_at(int dirfd, const char *name)
{
	json_error_t jerr;
	json_t *v;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	v = json_loadfd(fd, 0, &jerr);
	close(fd);
	if (v != NULL && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	if (v == NULL)
		errno = EINVAL;
	return v;
}

static void
get_str(json_t *o, const char *k, char *out, size_t len)
{
	json_t *v = json_object_get(o, k);

	if (json_is_string(v))
		snprintf(out, len, "%s", json_string_value(v));
	else
		out[0] = '\0';
}

static int
get_int(json_t *o, const char *k, long long *out)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_integer(v))
		return 0;
	*out = json_integer_value(v);
	return 1;
}

static void
get_u64(json_t *o, const char *k, uint64_t *out)
{
	long long v;

	if (get_int(o, k, &v))
		*out = (uint64_t)v;
}

static void
get_exit(json_t *o, int *has_exit, int *code, int *has_signal, int *sig)
{
	long long v;

	if ((*has_exit = get_int(o, "exit_code", &v)))
		*code = (int)v;
	if ((*has_signal = get_int(o, "signal", &v)))
		*sig = (int)v;
}

json_t *
rp_receipt_json_read(int stepfd)
{
	return load_at(stepfd, "receipt.json");
}

int
rp_receipt_read(int stepfd, struct rp_receipt *r)
{
	json_t *o, *d;
	long long v;
	char state[16];

	memset(r, 0, sizeof(*r));
	if ((o = load_at(stepfd, "receipt.json")) == NULL)
		return -1;
	get_str(o, "step", r->step, sizeof(r->step));
	if (get_int(o, "index", &v))
		r->index = (int)v;
	get_str(o, "phase", r->phase, sizeof(r->phase));
	get_str(o, "state", state, sizeof(state));
	r->state = rp_step_state_of(state);
	get_str(o, "command_sha256", r->command_sha256,
	    sizeof(r->command_sha256));
	if (get_int(o, "pid", &v))
		r->pid = (long)v;
	get_str(o, "pid_start", r->pid_start, sizeof(r->pid_start));
	get_str(o, "started", r->started, sizeof(r->started));
	get_str(o, "ended", r->ended, sizeof(r->ended));
	get_exit(o, &r->has_exit, &r->exit_code, &r->has_signal, &r->signal);
	get_str(o, "termination", r->termination, sizeof(r->termination));
	get_str(o, "note", r->note, sizeof(r->note));
	d = json_object_get(o, "decisions");
	if (json_is_object(d)) {
		get_u64(d, "allowed", &r->allowed);
		get_u64(d, "blocked", &r->blocked);
		get_u64(d, "failed", &r->failed);
	}
	d = json_object_get(o, "usage");
	if (json_is_object(d)) {
		const char *rk;
		json_t *rv;

		json_object_foreach(d, rk, rv) {
			struct rp_usage *u;

			if (r->nusage >= RP_USAGE_MAX || !json_is_object(rv))
				break;
			u = &r->usage[r->nusage++];
			snprintf(u->route, sizeof(u->route), "%s", rk);
			get_u64(rv, "requests", &u->requests);
			get_u64(rv, "tokens_in", &u->tokens_in);
			get_u64(rv, "tokens_out", &u->tokens_out);
		}
	}
	json_decref(o);
	return 0;
}

int
rp_run_write(int dirfd, const struct rp_run *r)
{
	json_t *o, *s;

	if ((o = json_object()) == NULL || (s = json_object()) == NULL) {
		json_decref(o);
		errno = ENOMEM;
		return -1;
	}
	json_object_set_new(o, "egressd_run", json_integer(1));
	json_object_set_new(o, "name", json_string(r->name));
	json_object_set_new(o, "id", json_string(r->id));
	json_object_set_new(o, "started", json_string(r->started));
	json_object_set_new(o, "ended", str_or_null(r->ended));
	json_object_set_new(o, "state", json_string(r->state));
	json_object_set_new(o, "exit", int_or_null(r->has_exit, r->exit));
	json_object_set_new(o, "deadline", json_integer(r->deadline));
	json_object_set_new(o, "cancel_reason", str_or_null(
	    r->cancel_reason));
	if (r->force_reason[0] != '\0')
		json_object_set_new(o, "force_reason",
		    json_string(r->force_reason));
	json_object_set_new(o, "public", json_boolean(r->public));
	if (r->has_dirid) {
		json_object_set_new(o, "dir_dev",
		    json_integer((json_int_t)r->dir_dev));
		json_object_set_new(o, "dir_ino",
		    json_integer((json_int_t)r->dir_ino));
	}
	json_object_set_new(s, "pid", json_integer(r->sup_pid));
	json_object_set_new(s, "pid_start", json_string(r->sup_start));
	json_object_set_new(o, "supervisor", s);
	json_object_set_new(o, "steps", json_integer(r->steps));
	return write_put(dirfd, "run.json", o);
}

int
rp_run_read(int dirfd, struct rp_run *r)
{
	json_t *o, *s;
	long long v, dev, ino;

	memset(r, 0, sizeof(*r));
	if ((o = load_at(dirfd, "run.json")) == NULL)
		return -1;
	if (!get_int(o, "egressd_run", &v) || v != 1) {
		json_decref(o);
		errno = EINVAL;
		return -1;
	}
	get_str(o, "name", r->name, sizeof(r->name));
	get_str(o, "id", r->id, sizeof(r->id));
	get_str(o, "started", r->started, sizeof(r->started));
	get_str(o, "ended", r->ended, sizeof(r->ended));
	get_str(o, "state", r->state, sizeof(r->state));
	if ((r->has_exit = get_int(o, "exit", &v)))
		r->exit = (int)v;
	if (get_int(o, "deadline", &v))
		r->deadline = (unsigned)v;
	get_str(o, "cancel_reason", r->cancel_reason,
	    sizeof(r->cancel_reason));
	get_str(o, "force_reason", r->force_reason,
	    sizeof(r->force_reason));
	r->public = json_is_true(json_object_get(o, "public"));
	if (get_int(o, "dir_dev", &dev) && get_int(o, "dir_ino", &ino)) {
		r->has_dirid = 1;
		r->dir_dev = (unsigned long long)dev;
		r->dir_ino = (unsigned long long)ino;
	}
	s = json_object_get(o, "supervisor");
	if (json_is_object(s)) {
		if (get_int(s, "pid", &v))
			r->sup_pid = (long)v;
		get_str(s, "pid_start", r->sup_start, sizeof(r->sup_start));
	}
	if (get_int(o, "steps", &v))
		r->steps = (int)v;
	json_decref(o);
	return 0;
}

int
rp_exit_write(int stepfd, const struct rp_exit *x)
{
	json_t *o;

	if ((o = json_object()) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	set_exit(o, x->has_exit, x->exit_code, x->has_signal, x->signal);
	json_object_set_new(o, "termination", json_string(x->termination));
	json_object_set_new(o, "started", str_or_null(x->started));
	json_object_set_new(o, "ended", str_or_null(x->ended));
	json_object_set_new(o, "pid", int_or_null(x->pid != 0, x->pid));
	return write_put(stepfd, "exit.json", o);
}

int
rp_exit_read(int stepfd, struct rp_exit *x)
{
	json_t *o;
	long long v;

	memset(x, 0, sizeof(*x));
	if ((o = load_at(stepfd, "exit.json")) == NULL)
		return -1;
	get_exit(o, &x->has_exit, &x->exit_code, &x->has_signal, &x->signal);
	get_str(o, "termination", x->termination, sizeof(x->termination));
	get_str(o, "started", x->started, sizeof(x->started));
	get_str(o, "ended", x->ended, sizeof(x->ended));
	if (get_int(o, "pid", &v))
		x->pid = (long)v;
	json_decref(o);
	return x->termination[0] != '\0' ? 0 : -1;
}

int
rp_keeper_write(int stepfd, pid_t pid, const char *start, pid_t cpid,
    const char *cstart)
{
	json_t *o;

	if ((o = json_object()) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	json_object_set_new(o, "pid", json_integer(pid));
	json_object_set_new(o, "pid_start", json_string(start));
	json_object_set_new(o, "command_pid", int_or_null(cpid != 0, cpid));
	json_object_set_new(o, "command_pid_start", str_or_null(cstart));
	return write_put(stepfd, "keeper.json", o);
}

int
rp_keeper_read(int stepfd, long *pid, char *start, size_t len,
    long *cpid, char *cstart, size_t clen)
{
	json_t *o;
	long long v;

	if ((o = load_at(stepfd, "keeper.json")) == NULL)
		return -1;
	if (!get_int(o, "pid", &v)) {
		json_decref(o);
		return -1;
	}
	*pid = (long)v;
	get_str(o, "pid_start", start, len);
	*cpid = get_int(o, "command_pid", &v) ? (long)v : 0;
	get_str(o, "command_pid_start", cstart, clen);
	json_decref(o);
	return 0;
}
