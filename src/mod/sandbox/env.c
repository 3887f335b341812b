/*
 * env.c: the environment of the command "egressd run" launches: ours
 * without the variables that look secret (by name) and without proxy
 * variables, plus --env, plus the proxy variables pointing at the relay
 * and each credential route's variables (SPEC "Routes").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress.h"
#include "module.h"
#include "run.h"

extern char **environ;

/* Variables whose name contains one of these (in any case) stay out. */
static const char *const secret_words[] = {
	"TOKEN", "SECRET", "PASSWORD", "API_KEY", "SSH_AUTH", "AWS_",
	"GITHUB_"
};

/* Set by egressd, never passed through or overridden. */
static const char *const proxy_vars[] = {
	"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"
};

/* 1 if name (length n) is one of the proxy variables, in any case. */
int
sb_env_is_proxy(const char *name, size_t n)
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

int
sb_env_valid_name(const char *s, size_t n)
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
size_t
sb_env_name_len(const char *s)
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
		if (sb_env_name_len(o->env.v[i]) == n &&
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
	struct mc_strv	*out;
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
			mc_strv_add(re->out, env);
		if (placeholder != NULL)
			mc_strv_add(re->out, placeholder);
		return;
	}
	if (env != NULL) {
		n = strlen(env) + strlen(re->url) + strlen(name) + 3;
		if ((kv = eg_malloc(n)) == NULL) {
			re->out->oom = 1;
			return;
		}
		snprintf(kv, n, "%s=%s/%s", env, re->url, name);
		mc_strv_add(re->out, kv);
		eg_free(kv);
	}
	if (placeholder != NULL)
		mc_strv_add2(re->out, placeholder, "=egressd-route");
}

/*
 * CMD's environment: ours without secrets and proxy variables, plus the
 * --env settings, plus the proxy variables pointing at url, plus each
 * credential route's variables (SPEC "Routes": env and placeholder; not
 * with --proxy, whose routes are another process's).  The names removed
 * are listed on stderr (names only, never values).
 */
int
sb_env_build(const struct run_opts *o, struct egress *ex, const char *url,
    struct mc_strv *out)
{
	struct route_env re;
	struct mc_strv rn;
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
		n = sb_env_name_len(environ[i]);
		if (environ[i][n] != '=' || sb_env_is_proxy(environ[i], n))
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
		mc_strv_add(out, environ[i]);
	}
	for (i = 0; i < o->env.n; i++) {
		n = sb_env_name_len(o->env.v[i]);
		if (o->env.v[i][n] == '=')
			mc_strv_add(out, o->env.v[i]);
		else if (getenv(o->env.v[i]) == NULL)
			fprintf(stderr, "egressd: --env %s: not set, not "
			    "passed\n", o->env.v[i]);
	}
	for (i = 0; i < nitems(pv); i++)
		mc_strv_add2(out, pv[i], url);
	/* only the relay listens on loopback inside: routes are reached
	 * directly, everything else through the proxy */
	mc_strv_add(out, "NO_PROXY=" EG_SANDBOX_NO_PROXY);
	mc_strv_add(out, "no_proxy=" EG_SANDBOX_NO_PROXY);
	if (ex != NULL) {
		re.url = url;
		re.out = out;
		eg_module_routes(ex, route_env_add, &re);
	}
	mc_strv_free(&rn);
	if (rlen > 0)
		fprintf(stderr, "egressd: not passed to the command: %s "
		    "(--env NAME passes one)\n", removed);
	return out->oom ? -1 : 0;
}
