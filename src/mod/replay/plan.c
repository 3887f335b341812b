/*
 * plan.c: the replay plan loader.  Same INI rules as the proxy
 * configuration (cfg.c): ';' and '#' comments, an inline comment after
 * whitespace, CRLF, a UTF-8 BOM, no control characters; every problem
 * is reported as FILE:LINE: message and any one of them refuses the plan.
 * inih does the tokenising, on lines this reader has already checked.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "alloc.h"
#include "inilex.h"
#include "plan.h"

#define KEY_MAX		63
#define VALUE_MAX	8192

enum sect { S_NONE, S_REPLAY, S_STEP, S_SKIP };

/*
 * The key table, X-macro so that the ids and the rows cannot disagree:
 * one row per key of a section (section, name, id, how its value is
 * taken, the field, flags).  A KK_ kind other than KK_OWN is taken by
 * entry() into the field at off in the section's struct (struct rp_plan
 * for [replay], struct rp_step for [step:NAME]); KK_OWN keys by its
 * switch.  A key may be given once per section unless PKF_REPEAT.
 */
enum kkind {
	KK_OWN,
	KK_PATH,	/* char *: a path relative to the plan's folder */
	KK_PATHS,	/* struct mc_strv: one more path (~, workdir) */
	KK_BOOL,	/* int: yes/no */
	KK_SANDBOX,	/* int: enum rp_sandbox */
	KK_ENV		/* struct mc_strv: NAME=VALUE */
};
#define PKF_REPEAT	0x1
#define P(f)	offsetof(struct rp_plan, f)
#define S(f)	offsetof(struct rp_step, f)
#define PLAN_KEYS(X)							\
	X(S_REPLAY, "name", PK_NAME, KK_OWN, 0, 0)			\
	X(S_REPLAY, "config", PK_CONFIG, KK_PATH, P(config), 0)		\
	X(S_REPLAY, "workdir", PK_WORKDIR, KK_PATH, P(workdir), 0)	\
	X(S_REPLAY, "record", PK_RECORD, KK_PATH, P(record), 0)		\
	X(S_REPLAY, "deadline", PK_DEADLINE, KK_OWN, 0, 0)		\
	X(S_REPLAY, "sandbox", PK_SANDBOX, KK_SANDBOX, P(sandbox), 0)	\
	X(S_REPLAY, "env", PK_ENV, KK_ENV, P(env), 0)			\
	X(S_REPLAY, "secrets", PK_SECRETS, KK_OWN, 0, 0)		\
	X(S_REPLAY, "public", PK_PUBLIC, KK_BOOL, P(public), 0)		\
	X(S_STEP, "phase", PK_STEP_PHASE, KK_OWN, 0, 0)			\
	X(S_STEP, "run", PK_STEP_RUN, KK_OWN, 0, 0)			\
	X(S_STEP, "shell", PK_STEP_SHELL, KK_BOOL, S(shell), 0)		\
	X(S_STEP, "timeout", PK_STEP_TIMEOUT, KK_OWN, 0, 0)		\
	X(S_STEP, "rw", PK_STEP_RW, KK_PATHS, S(rw), PKF_REPEAT)	\
	X(S_STEP, "ro", PK_STEP_RO, KK_PATHS, S(ro), PKF_REPEAT)	\
	X(S_STEP, "env", PK_STEP_ENV, KK_ENV, S(env), 0)		\
	X(S_STEP, "secrets", PK_STEP_SECRETS, KK_OWN, 0, 0)		\
	X(S_STEP, "capture", PK_STEP_CAPTURE, KK_OWN, 0, 0)		\
	X(S_STEP, "on_failure", PK_STEP_ON_FAILURE, KK_OWN, 0, 0)	\
	X(S_STEP, "sandbox", PK_STEP_SANDBOX, KK_SANDBOX, S(sandbox), 0)

enum pkey {
#define PK_ID(sect, name, id, kind, off, flags)	id,
	PLAN_KEYS(PK_ID)
#undef PK_ID
	PK_COUNT
};

static const struct {
	enum sect	 sect;
	const char	*name;
	enum kkind	 kind;
	size_t		 off;
	unsigned	 flags;
} plan_keys[PK_COUNT] = {
#define PK_ROW(sect, name, id, kind, off, flags)			\
	[id] = { sect, name, kind, off, flags },
	PLAN_KEYS(PK_ROW)
#undef PK_ROW
};
#undef P
#undef S

struct parse {
	const char	*file;
	const char	*dir;
	struct eg_ini	 ini;		/* the text, the line just read */
	enum sect	 sect;
	struct rp_plan	*plan;
	struct rp_step	*step;
	struct rp_errs	*errs;
	const char	*(*getenv_fn)(const char *);
	/* lines where keys were seen (the step's keys: in this step), for
	 * duplicates; the line of the [replay] header */
	int		 seen[PK_COUNT];
	int		 replay_line;
	int		 secrets_line;		/* of the step's secrets = */
	int		 sandbox_line;
	int		 oom;
};

/* --- small helpers ---------------------------------------------------------- */

void
rp_errs_add(struct rp_errs *e, const char *file, int line, const char *fmt,
    ...)
{
	char msg[1024];
	va_list ap;
	size_t need;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e->n++;
	if (e->b.max == 0)
		eg_buf_init_heap(&e->b, RP_ERRS_MAX - 1);
	if (line > 0)
		need = (size_t)snprintf(NULL, 0, "%s:%d: %s\n", file, line, msg);
	else
		need = (size_t)snprintf(NULL, 0, "%s: %s\n", file, msg);
	/* left out whole, and the buffer's error not set: a later, shorter
	 * line may still fit */
	if (need > eg_buf_room(&e->b))
		return;
	if (line > 0)
		(void)eg_buf_printf(&e->b, "%s:%d: %s\n", file, line, msg);
	else
		(void)eg_buf_printf(&e->b, "%s: %s\n", file, msg);
}

void
rp_errs_free(struct rp_errs *e)
{
	eg_buf_clear(&e->b);
	memset(e, 0, sizeof(*e));
}

int
rp_valid_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > RP_NAME_MAX || s[0] == '.' || s[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

static int
valid_var(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 128 || isdigit((unsigned char)s[0]))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

static int
is_proxy_var(const char *s, size_t n)
{
	static const char *const v[] = { "HTTPS_PROXY", "HTTP_PROXY",
	    "ALL_PROXY", "NO_PROXY" };
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (strlen(v[i]) == n && strncasecmp(s, v[i], n) == 0)
			return 1;
	return 0;
}

static const char *
quote(const char *s, char *buf, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; s[i] != '\0' && o + 5 < cap && i < 80; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (s[i] != '\0' && o + 4 < cap) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/*
 * Words with "..." and '...' quoting: in double quotes \" and \\ are
 * escapes, a backslash outside quotes takes the next character as is.
 * On failure out is left empty.
 */
int
rp_split_argv(const char *s, struct mc_strv *out, const char **why)
{
	char *w;
	size_t n = 0, len = strlen(s);
	int inword = 0, rc = -1;
	char q = 0;

	*why = NULL;
	if ((w = eg_malloc(len + 1)) == NULL) {
		*why = "out of memory";
		return -1;
	}
	for (; *s != '\0'; s++) {
		if (q == '\'') {
			if (*s == '\'')
				q = 0;
			else
				w[n++] = *s;
			continue;
		}
		if (q == '"') {
			if (*s == '"')
				q = 0;
			else if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
				w[n++] = *++s;
			else
				w[n++] = *s;
			continue;
		}
		if (*s == ' ' || *s == '\t') {
			if (inword) {
				w[n] = '\0';
				if (mc_strv_add(out, w) == -1)
					goto oom;
				n = 0;
				inword = 0;
			}
			continue;
		}
		inword = 1;
		if (*s == '\'' || *s == '"')
			q = *s;
		else if (*s == '\\') {
			if (s[1] == '\0') {
				*why = "a backslash ends the line";
				goto out;
			}
			w[n++] = *++s;
		} else
			w[n++] = *s;
	}
	if (q != 0) {
		*why = q == '"' ? "unterminated \" quote" :
		    "unterminated ' quote";
		goto out;
	}
	if (inword) {
		w[n] = '\0';
		if (mc_strv_add(out, w) == -1)
			goto oom;
	}
	rc = 0;
	goto out;
oom:
	*why = "out of memory";
out:
	eg_free(w);
	if (rc == -1)
		mc_strv_free(out);	/* no half result */
	return rc;
}

static void
perr(struct parse *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
perr(struct parse *ps, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rp_errs_add(ps->errs, ps->file, ps->ini.line, "%s", msg);
}

/* *dst becomes a copy of v (a key given again: the last one wins). */
static void
set_str(struct parse *ps, char **dst, const char *v)
{
	eg_free(*dst);
	if ((*dst = eg_strdup(v)) == NULL)
		ps->oom = 1;
}

/* The key k of section sect, or -1. */
static int
key_of(enum sect sect, const char *k)
{
	int i;

	for (i = 0; i < PK_COUNT; i++)
		if (plan_keys[i].sect == sect &&
		    strcmp(plan_keys[i].name, k) == 0)
			return i;
	return -1;
}

/*
 * Key k of the current section (sect) at this line: its id, or -1
 * (reported) when the section has no such key, or has it already and it
 * may not repeat.
 */
static int
key_take(struct parse *ps, enum sect sect, const char *k)
{
	char q[400];
	int i;

	if ((i = key_of(sect, k)) == -1) {
		perr(ps, "unknown key '%s' in [%s%s]", quote(k, q, sizeof(q)),
		    sect == S_STEP ? "step:" : "replay",
		    sect == S_STEP ? ps->step->name : "");
		return -1;
	}
	if (!(plan_keys[i].flags & PKF_REPEAT) && ps->seen[i] != 0) {
		perr(ps, "duplicate key '%s' (first at line %d)", k,
		    ps->seen[i]);
		return -1;
	}
	ps->seen[i] = ps->ini.line;
	return i;
}

/* Absolute path of p relative to base; NULL on OOM. */
static char *
abs_path(const char *base, const char *p)
{
	char *r;
	size_t n;

	if (p[0] == '/')
		return eg_strdup(p);
	if (strcmp(p, ".") == 0)
		return eg_strdup(base);
	n = strlen(base) + strlen(p) + 2;
	if ((r = eg_malloc(n)) == NULL)
		return NULL;
	snprintf(r, n, "%s%s%s", base, base[strlen(base) - 1] == '/' ? "" :
	    "/", p);
	return r;
}

static int
parse_uint(const char *v, unsigned max, unsigned *out)
{
	char *end;
	unsigned long n;

	if (!isdigit((unsigned char)v[0]))
		return -1;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || n > max)
		return -1;
	*out = (unsigned)n;
	return 0;
}

static int
parse_bool(const char *v)
{
	if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 ||
	    strcmp(v, "1") == 0 || strcmp(v, "on") == 0)
		return 1;
	if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0 ||
	    strcmp(v, "0") == 0 || strcmp(v, "off") == 0)
		return 0;
	return -1;
}

static int
parse_sandbox(const char *v)
{
	if (strcmp(v, "bwrap") == 0)
		return RP_SB_BWRAP;
	if (strcmp(v, "none") == 0)
		return RP_SB_NONE;
	return -2;
}

/* env = CI=1 LANG: NAME=VALUE, or NAME for the caller's value (if set). */
static void
parse_env(struct parse *ps, const char *v, struct mc_strv *out)
{
	struct mc_strv w = { 0 };
	const char *why, *cv, *eq;
	char q[400], *kv;
	size_t i, j, n, klen;

	if (rp_split_argv(v, &w, &why) == -1) {
		perr(ps, "env: %s", why);
		return;
	}
	for (i = 0; i < w.n; i++) {
		eq = strchr(w.v[i], '=');
		klen = eq != NULL ? (size_t)(eq - w.v[i]) : strlen(w.v[i]);
		if (!valid_var(w.v[i], klen)) {
			perr(ps, "env: '%s' is not NAME=VALUE or NAME",
			    quote(w.v[i], q, sizeof(q)));
			continue;
		}
		if (is_proxy_var(w.v[i], klen)) {
			perr(ps, "env: %.*s: the proxy variables are set by "
			    "egressd", (int)klen, w.v[i]);
			continue;
		}
		/* valid_var() bounds klen to 128: the name fits q */
		snprintf(q, sizeof(q), "%.*s", (int)klen, w.v[i]);
		if (mc_strv_has(&ps->plan->secrets, q)) {
			perr(ps, "env: %.*s is a secret: give it with "
			    "secrets =", (int)klen, w.v[i]);
			continue;
		}
		if (eq != NULL)
			kv = eg_strdup(w.v[i]);
		else {
			cv = ps->getenv_fn != NULL ? ps->getenv_fn(w.v[i]) :
			    NULL;
			if (cv == NULL)
				continue;	/* not set: not passed */
			n = klen + strlen(cv) + 2;
			if ((kv = eg_malloc(n)) != NULL)
				snprintf(kv, n, "%s=%s", w.v[i], cv);
		}
		if (kv == NULL) {
			ps->oom = 1;
			continue;
		}
		/* a later entry for the same name replaces the earlier */
		for (j = 0; j < out->n; j++) {
			if (strncmp(out->v[j], kv, klen + 1) == 0) {
				eg_free(out->v[j]);
				out->v[j] = kv;
				kv = NULL;
				break;
			}
		}
		if (kv != NULL) {
			if (mc_strv_add(out, kv) == -1)
				ps->oom = 1;
			eg_free(kv);
		}
	}
	mc_strv_free(&w);
}

static void
parse_names(struct parse *ps, const char *key, const char *v,
    struct mc_strv *out, const struct mc_strv *declared)
{
	struct mc_strv w = { 0 };
	const char *why;
	char q[400];
	size_t i;

	if (rp_split_argv(v, &w, &why) == -1) {
		perr(ps, "%s: %s", key, why);
		return;
	}
	for (i = 0; i < w.n; i++) {
		if (!valid_var(w.v[i], strlen(w.v[i]))) {
			perr(ps, "%s: '%s' is not a variable name", key,
			    quote(w.v[i], q, sizeof(q)));
			continue;
		}
		if (is_proxy_var(w.v[i], strlen(w.v[i]))) {
			perr(ps, "%s: %s: the proxy variables are set by "
			    "egressd", key, w.v[i]);
			continue;
		}
		if (declared != NULL && !mc_strv_has(declared, w.v[i])) {
			perr(ps, "secrets: %s is not declared in [replay] "
			    "secrets", w.v[i]);
			continue;
		}
		if (!mc_strv_has(out, w.v[i]) && mc_strv_add(out, w.v[i]) == -1)
			ps->oom = 1;
	}
	mc_strv_free(&w);
}

/* A capture word: relative, no "..", no empty component. */
static void
parse_capture(struct parse *ps, const char *v, struct mc_strv *out)
{
	struct mc_strv w = { 0 };
	const char *why, *c, *s;
	char q[400];
	size_t i, n;
	int bad;

	if (rp_split_argv(v, &w, &why) == -1) {
		perr(ps, "capture: %s", why);
		return;
	}
	for (i = 0; i < w.n; i++) {
		s = w.v[i];
		if (s[0] == '/') {
			perr(ps, "capture: %s: an absolute path (capture "
			    "takes paths under workdir)", quote(s, q,
			    sizeof(q)));
			continue;
		}
		bad = 0;
		for (c = s; ; c += n + 1) {
			n = strcspn(c, "/");
			if (n == 2 && c[0] == '.' && c[1] == '.')
				bad = 1;
			if (n == 0 || (n == 1 && c[0] == '.'))
				bad = bad ? bad : 2;
			if (c[n] == '\0')
				break;
		}
		if (bad == 1) {
			perr(ps, "capture: %s: '..' is not allowed (capture "
			    "takes paths under workdir)", quote(s, q,
			    sizeof(q)));
			continue;
		}
		if (bad == 2 || strlen(s) > 1024) {
			perr(ps, "capture: '%s': not a plain relative path",
			    quote(s, q, sizeof(q)));
			continue;
		}
		if (!mc_strv_has(out, s) && mc_strv_add(out, s) == -1)
			ps->oom = 1;
	}
	mc_strv_free(&w);
}

static void
add_path(struct parse *ps, const char *key, const char *v,
    struct mc_strv *out)
{
	const char *home;
	char *p;
	size_t n;

	if (v[0] == '\0') {
		perr(ps, "%s: empty path", key);
		return;
	}
	if (v[0] == '~' && (v[1] == '/' || v[1] == '\0')) {
		home = ps->getenv_fn != NULL ? ps->getenv_fn("HOME") : NULL;
		if (home == NULL || home[0] != '/') {
			perr(ps, "%s: %s: HOME is not set", key, v);
			return;
		}
		n = strlen(home) + strlen(v) + 1;
		if ((p = eg_malloc(n)) != NULL)
			snprintf(p, n, "%s%s", home, v + 1);
	} else if (v[0] == '/')
		p = eg_strdup(v);
	else
		p = abs_path(ps->plan->workdir != NULL ? ps->plan->workdir :
		    ps->dir, v);
	if (p == NULL || mc_strv_add(out, p) == -1)
		ps->oom = 1;
	eg_free(p);
}

/* config, workdir, record: a path relative to the plan's folder. */
static void
set_path(struct parse *ps, const char *key, const char *v, char **out)
{
	if (v[0] == '\0') {
		perr(ps, "%s: empty path", key);
		return;
	}
	eg_free(*out);
	if ((*out = abs_path(ps->dir, v)) == NULL)
		ps->oom = 1;
}

static void
set_bool(struct parse *ps, const char *key, const char *v, int *out)
{
	char q[400];
	int b;

	if ((b = parse_bool(v)) == -1)
		perr(ps, "%s: '%s': want yes or no", key, quote(v, q,
		    sizeof(q)));
	else
		*out = b;
}

static void
set_sandbox(struct parse *ps, const char *v, int *out)
{
	char q[400];
	int b;

	if ((b = parse_sandbox(v)) == -2)
		perr(ps, "sandbox: '%s': want bwrap or none",
		    quote(v, q, sizeof(q)));
	else
		*out = b;
}

/* --- sections and keys ------------------------------------------------------- */

static void
section_start(void *arg, const char *s, size_t n)
{
	struct parse *ps = arg;
	struct rp_plan *pl = ps->plan;
	struct rp_step *st;
	char name[RP_NAME_MAX + 1], q[400], tmp[1024];
	size_t i;

	for (i = 0; i < PK_COUNT; i++)
		if (plan_keys[i].sect == S_STEP)
			ps->seen[i] = 0;
	ps->step = NULL;
	if (n == 6 && memcmp(s, "replay", 6) == 0) {
		if (ps->replay_line != 0) {
			perr(ps, "duplicate section [replay] (first at line "
			    "%d)", ps->replay_line);
			ps->sect = S_SKIP;
			return;
		}
		if (pl->nsteps > 0) {
			perr(ps, "[replay] must come before the steps");
			ps->sect = S_SKIP;
			return;
		}
		ps->replay_line = ps->ini.line;
		ps->sect = S_REPLAY;
		return;
	}
	if (n > 5 && memcmp(s, "step:", 5) == 0) {
		if (!rp_valid_name(s + 5, n - 5)) {
			snprintf(tmp, sizeof(tmp), "%.*s", (int)(n - 5) & 0x3ff,
			    s + 5);
			perr(ps, "[step:%s]: a step name is 1 to 64 of A-Z a-z "
			    "0-9 . _ -, not beginning with . or -",
			    quote(tmp, q, sizeof(q)));
			ps->sect = S_SKIP;
			return;
		}
		memcpy(name, s + 5, n - 5);
		name[n - 5] = '\0';
		for (i = 0; i < pl->nsteps; i++) {
			if (strcmp(pl->steps[i].name, name) == 0) {
				perr(ps, "duplicate step [step:%s] (first at "
				    "line %d)", name, pl->steps[i].line);
				ps->sect = S_SKIP;
				return;
			}
		}
		if (pl->nsteps >= RP_MAX_STEPS) {
			perr(ps, "too many steps (at most %d)", RP_MAX_STEPS);
			ps->sect = S_SKIP;
			return;
		}
		st = eg_realloc(pl->steps, (pl->nsteps + 1) * sizeof(*st));
		if (st == NULL) {
			ps->oom = 1;
			ps->sect = S_SKIP;
			return;
		}
		pl->steps = st;
		st = &pl->steps[pl->nsteps];
		memset(st, 0, sizeof(*st));
		if ((st->name = eg_strdup(name)) == NULL) {
			ps->oom = 1;
			ps->sect = S_SKIP;
			return;
		}
		st->line = ps->ini.line;
		st->sandbox = RP_SB_DEFAULT;
		pl->nsteps++;
		ps->step = st;
		ps->sect = S_STEP;
		return;
	}
	snprintf(tmp, sizeof(tmp), "%.*s", (int)n & 0x3ff, s);
	perr(ps, "unknown section [%s] (a plan has [replay] and "
	    "[step:NAME])", quote(tmp, q, sizeof(q)));
	ps->sect = S_SKIP;
}

/* A key = value line of [replay] or of a [step:NAME]. */
static void
entry(struct parse *ps, const char *k, const char *v)
{
	struct rp_plan *pl = ps->plan;
	struct rp_step *st = ps->step;
	char q[400], *f;
	int i;

	if ((i = key_take(ps, ps->sect, k)) == -1)
		return;
	f = (char *)(ps->sect == S_STEP ? (void *)st : (void *)pl) +
	    plan_keys[i].off;
	switch (plan_keys[i].kind) {
	case KK_OWN:
		break;
	case KK_PATH:
		set_path(ps, k, v, (char **)f);
		return;
	case KK_PATHS:
		add_path(ps, k, v, (struct mc_strv *)f);
		return;
	case KK_BOOL:
		set_bool(ps, k, v, (int *)f);
		return;
	case KK_SANDBOX:
		set_sandbox(ps, v, (int *)f);
		if (ps->sect == S_REPLAY)
			ps->sandbox_line = ps->ini.line;
		return;
	case KK_ENV:
		parse_env(ps, v, (struct mc_strv *)f);
		return;
	}
	switch (i) {
	case PK_NAME:
		if (!rp_valid_name(v, strlen(v))) {
			perr(ps, "name: '%s': 1 to 64 of A-Z a-z 0-9 . _ -, "
			    "not beginning with . or -", quote(v, q,
			    sizeof(q)));
			return;
		}
		set_str(ps, &pl->name, v);
		break;
	case PK_DEADLINE:
		if (parse_uint(v, 10000000, &pl->deadline) == -1)
			perr(ps, "deadline: '%s': want seconds (0 to "
			    "10000000; 0 = none)", quote(v, q, sizeof(q)));
		break;
	case PK_SECRETS:
		parse_names(ps, "secrets", v, &pl->secrets, NULL);
		break;
	case PK_STEP_PHASE:
		if (!rp_valid_name(v, strlen(v))) {
			perr(ps, "phase: '%s' is not a phase name",
			    quote(v, q, sizeof(q)));
			return;
		}
		set_str(ps, &st->phase, v);
		st->phase_line = ps->ini.line;
		break;
	case PK_STEP_RUN:
		set_str(ps, &st->run, v);
		st->run_line = ps->ini.line;
		break;
	case PK_STEP_TIMEOUT:
		if (parse_uint(v, 10000000, &st->timeout) == -1)
			perr(ps, "timeout: '%s': want seconds (0 to "
			    "10000000; 0 = until the run deadline)",
			    quote(v, q, sizeof(q)));
		break;
	case PK_STEP_SECRETS:
		parse_names(ps, "secrets", v, &st->secrets,
		    &ps->plan->secrets);
		break;
	case PK_STEP_CAPTURE:
		parse_capture(ps, v, &st->capture);
		break;
	case PK_STEP_ON_FAILURE:
		if (strcmp(v, "stop") == 0)
			st->on_failure_continue = 0;
		else if (strcmp(v, "continue") == 0)
			st->on_failure_continue = 1;
		else
			perr(ps, "on_failure: '%s': want stop or continue",
			    quote(v, q, sizeof(q)));
		break;
	}
}

static int
handler(void *arg, const char *section, const char *name, const char *value)
{
	struct parse *ps = arg;

	(void)section;
	(void)name;
	value = eg_ini_value(&ps->ini, value);
	switch (ps->sect) {
	case S_NONE:
		perr(ps, "key '%s' outside any section", ps->ini.key);
		break;
	case S_SKIP:
		break;
	case S_REPLAY:
	case S_STEP:
		entry(ps, ps->ini.key, value);
		break;
	}
	return 1;
}

/* A line inilex.c refuses, or NULL: out of memory. */
static void
ini_refused(void *arg, const char *msg)
{
	struct parse *ps = arg;

	if (msg == NULL)
		ps->oom = 1;
	else
		perr(ps, "%s", msg);
}

static int
key_char(int c)
{
	return isalnum(c) || c == '_';
}

static const struct eg_ini_ops plan_ini_ops = {
	section_start, ini_refused, key_char, KEY_MAX, VALUE_MAX
};

void
rp_plan_free(struct rp_plan *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nsteps; i++) {
		struct rp_step *s = &p->steps[i];

		eg_free(s->name);
		eg_free(s->phase);
		eg_free(s->run);
		mc_strv_free(&s->argv);
		mc_strv_free(&s->rw);
		mc_strv_free(&s->ro);
		mc_strv_free(&s->env);
		mc_strv_free(&s->secrets);
		mc_strv_free(&s->capture);
	}
	eg_free(p->steps);
	eg_free(p->file);
	eg_free(p->dir);
	eg_free(p->base);
	eg_free(p->name);
	eg_free(p->config);
	eg_free(p->workdir);
	eg_free(p->record);
	mc_strv_free(&p->env);
	mc_strv_free(&p->secrets);
	eg_free(p);
}

/* Merge [replay] env under the step's own (the step's win). */
static int
merge_env(const struct mc_strv *base, struct mc_strv *step)
{
	struct mc_strv out = { 0 };
	size_t i, j, klen;
	int found;

	for (i = 0; i < base->n; i++) {
		klen = strcspn(base->v[i], "=");
		found = 0;
		for (j = 0; j < step->n; j++)
			if (strncmp(step->v[j], base->v[i], klen + 1) == 0)
				found = 1;
		if (!found && mc_strv_add(&out, base->v[i]) == -1)
			goto oom;
	}
	for (j = 0; j < step->n; j++)
		if (mc_strv_add(&out, step->v[j]) == -1)
			goto oom;
	mc_strv_free(step);
	*step = out;
	return 0;
oom:
	mc_strv_free(&out);
	return -1;
}

struct rp_plan *
rp_plan_parse(const char *text, size_t len, const char *file,
    const char *dir, const char *(*getenv_fn)(const char *),
    int has_sandbox, const char *config_override, struct rp_errs *errs)
{
	struct parse ps;
	struct rp_plan *pl;
	const char *b, *why;
	size_t i, n;
	int rc, nerr0 = errs->n;

	memset(&ps, 0, sizeof(ps));
	ps.file = file;
	ps.dir = dir;
	eg_ini_init(&ps.ini, text, len, &plan_ini_ops, &ps);
	ps.errs = errs;
	ps.getenv_fn = getenv_fn;
	if ((pl = eg_calloc(1, sizeof(*pl))) == NULL) {
		rp_errs_add(errs, file, 0, "out of memory");
		return NULL;
	}
	ps.plan = pl;
	pl->sandbox = has_sandbox ? RP_SB_BWRAP : RP_SB_NONE;
	pl->file = eg_strdup(file);
	pl->dir = eg_strdup(dir);
	b = strrchr(file, '/');
	b = b != NULL ? b + 1 : file;
	n = strlen(b);
	if (n > 4 && strcmp(b + n - 4, ".ini") == 0)
		n -= 4;
	pl->base = eg_strndup(b, n);
	if (pl->file == NULL || pl->dir == NULL || pl->base == NULL)
		ps.oom = 1;
	if (memchr(text, '\0', len) != NULL)
		rp_errs_add(errs, file, 0, "a NUL byte in the plan");
	else {
		rc = ini_parse_stream(eg_ini_reader, &ps.ini, handler, &ps);
		if (rc != 0 && errs->n == nerr0)
			perr(&ps, rc == -2 ? "out of memory" :
			    "cannot parse line");
	}
	eg_ini_clear(&ps.ini);
	if (ps.ini.line == 0)
		ps.ini.line = 1;

	if (pl->name == NULL && pl->base != NULL) {
		if (!rp_valid_name(pl->base, strlen(pl->base)))
			rp_errs_add(errs, file, ps.replay_line ?
			    ps.replay_line : 1, "the plan's base name "
			    "'%s' is not a run name (1 to 64 of A-Z a-z 0-9 . "
			    "_ -): set name =", pl->base);
		else if ((pl->name = eg_strdup(pl->base)) == NULL)
			ps.oom = 1;
	}
	if (pl->workdir == NULL && (pl->workdir = eg_strdup(dir)) == NULL)
		ps.oom = 1;
	if (pl->record == NULL && (pl->record = abs_path(dir,
	    "records/%n-%t")) == NULL)
		ps.oom = 1;
	if (config_override != NULL && pl->config == NULL &&
	    (pl->config = eg_strdup(config_override)) == NULL)
		ps.oom = 1;
	if (pl->nsteps == 0)
		rp_errs_add(errs, file, ps.ini.line, "no step: add a [step:NAME] "
		    "section");
	if (pl->sandbox == RP_SB_BWRAP && !has_sandbox)
		rp_errs_add(errs, file, ps.sandbox_line, "sandbox = bwrap: "
		    "the sandbox module is not compiled in");
	for (i = 0; i < pl->nsteps; i++) {
		struct rp_step *st = &pl->steps[i];

		if (st->phase == NULL)
			rp_errs_add(errs, file, st->line, "[step:%s]: phase "
			    "= is required", st->name);
		if (st->run == NULL)
			rp_errs_add(errs, file, st->line, "[step:%s]: run = "
			    "is required", st->name);
		else if (st->shell) {
			if (mc_strv_add(&st->argv, "/bin/sh") == -1 ||
			    mc_strv_add(&st->argv, "-c") == -1 ||
			    mc_strv_add(&st->argv, st->run) == -1)
				ps.oom = 1;
		} else if (rp_split_argv(st->run, &st->argv, &why) == -1)
			rp_errs_add(errs, file, st->run_line, "run: %s", why);
		else if (st->argv.n == 0)
			rp_errs_add(errs, file, st->run_line, "run: no "
			    "command");
		if (st->sandbox == RP_SB_DEFAULT)
			st->sandbox = pl->sandbox;
		else if (st->sandbox == RP_SB_BWRAP && !has_sandbox)
			rp_errs_add(errs, file, st->line, "[step:%s]: "
			    "sandbox = bwrap: the sandbox module is not "
			    "compiled in", st->name);
		if (merge_env(&pl->env, &st->env) == -1)
			ps.oom = 1;
	}
	if (ps.oom)
		rp_errs_add(errs, file, 0, "out of memory");
	if (errs->n != nerr0) {
		rp_plan_free(pl);
		return NULL;
	}
	return pl;
}
