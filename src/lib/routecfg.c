/*
 * routecfg.c: [route:NAME] sections (SPEC "Routes"), parsed for cfg.c,
 * and the checks the request path asks of a route (route.h).
 *
 * Header values are credentials: they are read from the file or the
 * variable while parsing (at start and at each reload), kept on the heap
 * only until the end of the file, then moved into one private mapping per
 * route that is mlock()ed where the limit allows and marked MADV_DONTDUMP,
 * and wiped when the snapshot goes.  No message here ever holds a value.
 */
#include "egress-int.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>

#include "alloc.h"
#include "cfg.h"
#include "core.h"
#include "err.h"
#include "log.h"
#include "module.h"
#include "policy.h"
#include "routecfg.h"
#include "shared.h"
#include "tls.h"

#define SECRET_FILE_MAX	16384	/* a credential file's first line */

static int
is_tchar(int c)
{
	return isalnum(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *
q(const char *s, size_t len, char *buf, size_t cap)
{
	return eg_quote(s, len, 80, buf, cap);
}

/* One more element, zeroed, at the end of the array arr of n: the array's
 * new address, or NULL (out of memory: arr is unchanged). */
static void *
slot_add(void *arr, size_t n, size_t size)
{
	char *p = eg_reallocarray(arr, n + 1, size);

	if (p != NULL)
		memset(p + n * size, 0, size);
	return p;
}

int
eg_route_section(struct eg_cfg *cfg, const char *name, size_t len, int line,
    char *msg, size_t msglen)
{
	struct eg_route *nr, *r;
	char qb[400];
	size_t i;

	if (!eg_session_name_ok(name, len) || len > EG_ROUTE_NAME_MAX) {
		snprintf(msg, msglen, "bad route name '%s' (letters, digits, "
		    "'.', '_' and '-', at most %d, not beginning with '.' or "
		    "'-')", q(name, len, qb, sizeof(qb)), EG_ROUTE_NAME_MAX);
		return -1;
	}
	for (i = 0; i < cfg->nroutes; i++)
		if (strlen(cfg->routes[i].name) == len &&
		    memcmp(cfg->routes[i].name, name, len) == 0) {
			snprintf(msg, msglen, "duplicate section [route:%s] "
			    "(first at line %d)", cfg->routes[i].name,
			    cfg->routes[i].line);
			return -1;
		}
	if ((nr = slot_add(cfg->routes, cfg->nroutes, sizeof(*nr))) == NULL)
		goto nomem;
	cfg->routes = nr;
	r = &nr[cfg->nroutes];
	if ((r->name = eg_strndup(name, len)) == NULL)
		goto nomem;
	memcpy(r->rule, "route:", 6);
	memcpy(r->rule + 6, name, len);		/* len <= EG_ROUTE_NAME_MAX */
	r->line = line;
	r->max_request_bytes = 32ULL << 20;
	cfg->nroutes++;
	return 0;
nomem:
	snprintf(msg, msglen, "out of memory");
	return -1;
}

static int
set_once(char **dst, const char *key, const char *val, char *msg,
    size_t msglen)
{
	if (*dst != NULL) {
		snprintf(msg, msglen, "duplicate key '%s'", key);
		return -1;
	}
	if ((*dst = eg_strdup(val)) == NULL) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	return 0;
}

static int
upstream_set(struct eg_route *r, const char *val, char *msg, size_t msglen)
{
	const char *p = val, *why = "bad host", *colon = NULL, *e;
	char qb[400];
	size_t len;

	if (r->authority != NULL) {
		snprintf(msg, msglen, "duplicate key 'upstream'");
		return -1;
	}
	if (strncmp(p, "https://", 8) == 0) {
		r->https = 1;
		r->port = 443;
		p += 8;
	} else if (strncmp(p, "http://", 7) == 0) {
		r->port = 80;
		p += 7;
	} else {
		why = "expected https://HOST[:PORT] or http://HOST[:PORT]";
		goto bad;
	}
	len = strlen(p);
	if (len > 0 && p[len - 1] == '/')
		len--;		/* "https://h/": no path all the same */
	if (memchr(p, '/', len) != NULL || memchr(p, '?', len) != NULL ||
	    memchr(p, '#', len) != NULL || memchr(p, '@', len) != NULL) {
		why = "an upstream has no path, query or user part";
		goto bad;
	}
	e = p + len;
	if (len > 0 && p[0] == '[') {
		const char *rb = memchr(p, ']', len);

		if (rb != NULL && rb + 1 < e && rb[1] == ':')
			colon = rb + 1;
	} else
		colon = memchr(p, ':', len);
	if (colon != NULL) {
		if (eg_port_parse(colon + 1, (size_t)(e - colon - 1),
		    &r->port) == -1) {
			why = "bad port";
			goto bad;
		}
		len = (size_t)(colon - p);
	}
	if (len == 0 || eg_host_parse(p, len, &r->host, &why) == -1)
		goto bad;
	if ((r->https && r->port == 443) || (!r->https && r->port == 80))
		r->authority = eg_strdup(r->host.name);
	else if ((r->authority = eg_malloc(r->host.len + 8)) != NULL)
		snprintf(r->authority, r->host.len + 8, "%s:%u", r->host.name,
		    (unsigned int)r->port);
	if (r->authority == NULL) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	return 0;
bad:
	snprintf(msg, msglen, "bad upstream URL '%s': %s", q(val, strlen(val),
	    qb, sizeof(qb)), why);
	return -1;
}

/* The first line of a credential file (mode 0600 or stricter). */
static char *
secret_file(const char *path, size_t *lenp, char *msg, size_t msglen)
{
	struct stat st;
	char why[256], *buf;
	size_t len;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) ==
	    -1) {
		snprintf(msg, msglen, "credential file %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || eg_secret_mode_why(&st, path,
	    "the credential", why, sizeof(why)) != NULL) {
		snprintf(msg, msglen, "credential file %s: %s", path,
		    errno != 0 && !S_ISREG(st.st_mode) ? "not a regular file" :
		    why);
		close(fd);
		return NULL;
	}
	if ((buf = eg_malloc(SECRET_FILE_MAX + 1)) == NULL) {
		close(fd);
		snprintf(msg, msglen, "out of memory");
		return NULL;
	}
	len = eg_read_upto(fd, buf, SECRET_FILE_MAX);
	close(fd);
	buf[len] = '\0';
	len = strcspn(buf, "\r\n");
	while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	buf[len] = '\0';
	*lenp = len;
	return buf;
}

static void
wipe_free(char *p, size_t len)
{
	if (p != NULL) {
		explicit_bzero(p, len);
		eg_free(p);
	}
}

static int
value_ok(const char *v, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
	}
	return 1;
}

static int
header_add(struct eg_route *r, const char *val, int line, char *msg,
    size_t msglen)
{
	const char *colon = strchr(val, ':'), *v;
	struct eg_route_hdr *nh, *h;
	char **np, qb[400], *value = NULL;
	size_t *nl, nlen, vlen, cap;
	int secret = 0;

	if (colon == NULL) {
		snprintf(msg, msglen, "header '%s': expected NAME: VALUE",
		    q(val, strcspn(val, " \t"), qb, sizeof(qb)));
		return -1;
	}
	for (nlen = 0; val + nlen < colon; nlen++)
		if (!is_tchar((unsigned char)val[nlen]))
			break;
	if (nlen == 0 || val + nlen != colon) {
		snprintf(msg, msglen, "header: bad name '%s'", q(val,
		    (size_t)(colon - val), qb, sizeof(qb)));
		return -1;
	}
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (strncmp(v, "file:", 5) == 0) {
		if ((value = secret_file(v + 5, &vlen, msg, msglen)) == NULL)
			return -1;
		secret = 1;
	} else if (strncmp(v, "env:", 4) == 0) {
		const char *e = getenv(v + 4);

		if (e == NULL) {
			snprintf(msg, msglen, "header %.*s: environment "
			    "variable %s is not set", (int)nlen, val,
			    q(v + 4, strlen(v + 4), qb, sizeof(qb)));
			return -1;
		}
		vlen = strlen(e);
		value = eg_strndup(e, vlen);
		secret = 1;
	} else {
		vlen = strlen(v);
		while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		value = eg_strndup(v, vlen);
	}
	if (value == NULL) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	if (!value_ok(value, vlen)) {
		/* never the value itself: it may be a credential */
		snprintf(msg, msglen, "header %.*s: the value is empty or "
		    "holds a control character%s", (int)nlen, val, secret ?
		    " (from its file or variable)" : "");
		wipe_free(value, vlen);
		return -1;
	}
	cap = r->nhdr + 1;
	nh = eg_reallocarray(r->hdr, cap, sizeof(*nh));
	if (nh != NULL)
		r->hdr = nh;
	np = eg_reallocarray(r->pending, cap, sizeof(*np));
	if (np != NULL)
		r->pending = np;
	nl = eg_reallocarray(r->pending_len, cap, sizeof(*nl));
	if (nl != NULL)
		r->pending_len = nl;
	if (nh == NULL || np == NULL || nl == NULL) {
		wipe_free(value, vlen);
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	h = &r->hdr[r->nhdr];
	memset(h, 0, sizeof(*h));
	h->line = line;
	h->name_len = nlen;
	if ((h->name = eg_strndup(val, nlen)) == NULL) {
		wipe_free(value, vlen);
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	r->pending[r->nhdr] = value;
	r->pending_len[r->nhdr] = vlen;
	r->nhdr++;
	return 0;
}

static int
allow_add(struct eg_route *r, const char *val, char *msg, size_t msglen)
{
	struct eg_route_allow *na, *a;
	const char *sp = strchr(val, ' '), *path;
	char qb[400];
	size_t ml, i;

	if (sp == NULL)
		goto bad;
	ml = (size_t)(sp - val);
	path = sp;
	while (*path == ' ' || *path == '\t')
		path++;
	if (ml == 0 || ml >= sizeof(a->method) || path[0] != '/' ||
	    strpbrk(path, " \t?#") != NULL)
		goto bad;
	if (!(ml == 1 && val[0] == '*'))
		for (i = 0; i < ml; i++)
			if (!is_tchar((unsigned char)val[i]) ||
			    islower((unsigned char)val[i]))
				goto bad;
	if (eg_route_path_bad(path, strlen(path)) != NULL)
		goto bad;
	if ((na = slot_add(r->allow, r->nallow, sizeof(*na))) == NULL)
		goto nomem;
	r->allow = na;
	a = &na[r->nallow];
	memcpy(a->method, val, ml);
	a->path_len = strlen(path);
	if ((a->path = eg_strdup(path)) == NULL)
		goto nomem;
	r->nallow++;
	return 0;
bad:
	snprintf(msg, msglen, "bad allow '%s': expected METHOD /PATH (METHOD "
	    "in capitals or *; a path without '?', dot segments or '//')",
	    q(val, strlen(val), qb, sizeof(qb)));
	return -1;
nomem:
	snprintf(msg, msglen, "out of memory");
	return -1;
}

static int
strip_add(struct eg_route *r, const char *val, char *msg, size_t msglen)
{
	const char *p = val;
	char **ns, qb[400];
	size_t len, i;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			return 0;
		for (len = 0; p[len] != '\0' && p[len] != ' ' &&
		    p[len] != '\t' && p[len] != ','; len++)
			if (!is_tchar((unsigned char)p[len])) {
				snprintf(msg, msglen, "strip: bad header name "
				    "'%s'", q(p, strcspn(p, " \t,"), qb,
				    sizeof(qb)));
				return -1;
			}
		ns = eg_reallocarray(r->strip, r->nstrip + 1, sizeof(*ns));
		if (ns == NULL || (ns[r->nstrip] = eg_strndup(p, len)) ==
		    NULL) {
			if (ns != NULL)
				r->strip = ns;
			snprintf(msg, msglen, "out of memory");
			return -1;
		}
		r->strip = ns;
		for (i = 0; i < len; i++)
			ns[r->nstrip][i] = (char)tolower(
			    (unsigned char)ns[r->nstrip][i]);
		r->nstrip++;
		p += len;
	}
}

static int
varname_ok(const char *s)
{
	size_t i;

	if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (i = 1; s[i] != '\0'; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return i <= 128;
}

static int
size_parse(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t m = 1;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0':	break;
	case 'K':	m = 1ULL << 10; end++; break;
	case 'M':	m = 1ULL << 20; end++; break;
	case 'G':	m = 1ULL << 30; end++; break;
	default:	return -1;
	}
	if (*end != '\0' || v == 0 || v > (1ULL << 40) / m)
		return -1;
	*out = v * m;
	return 0;
}

int
eg_route_key(struct eg_route *r, const char *key, const char *val, int line,
    char *msg, size_t msglen)
{
	char qb[400];

	if (strcmp(key, "upstream") == 0) {
		r->upstream_line = line;
		return upstream_set(r, val, msg, msglen);
	}
	if (strcmp(key, "header") == 0)
		return header_add(r, val, line, msg, msglen);
	if (strcmp(key, "allow") == 0)
		return allow_add(r, val, msg, msglen);
	if (strcmp(key, "strip") == 0)
		return strip_add(r, val, msg, msglen);
	if (strcmp(key, "ca_file") == 0)
		return set_once(&r->ca_file, key, val, msg, msglen);
	if (strcmp(key, "env") == 0 || strcmp(key, "placeholder") == 0) {
		if (!varname_ok(val)) {
			snprintf(msg, msglen, "bad value '%s' for %s: a "
			    "variable name", q(val, strlen(val), qb,
			    sizeof(qb)), key);
			return -1;
		}
		return set_once(key[0] == 'e' ? &r->env : &r->placeholder,
		    key, val, msg, msglen);
	}
	if (strcmp(key, "meter") == 0) {
		if (strcmp(val, "anthropic") == 0)
			r->meter = EG_METER_ANTHROPIC;
		else if (strcmp(val, "openai") == 0)
			r->meter = EG_METER_OPENAI;
		else if (strcmp(val, "none") == 0)
			r->meter = EG_METER_NONE;
		else {
			snprintf(msg, msglen, "bad value '%s' for meter: "
			    "anthropic, openai or none", q(val, strlen(val),
			    qb, sizeof(qb)));
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "max_request_bytes") == 0) {
		if (size_parse(val, &r->max_request_bytes) == -1) {
			snprintf(msg, msglen, "bad value '%s' for "
			    "max_request_bytes: a size (N, NK, NM, NG)",
			    q(val, strlen(val), qb, sizeof(qb)));
			return -1;
		}
		return 0;
	}
	snprintf(msg, msglen, "unknown key '%s' in [route:%s] (upstream, "
	    "header, allow, strip, ca_file, env, placeholder, meter, "
	    "max_request_bytes)", q(key, strlen(key), qb, sizeof(qb)),
	    r->name);
	return -1;
}

int
eg_route_finish(struct eg_route *r, char *msg, size_t msglen, int *line)
{
	size_t i, total = 0, off = 0, clen = 0, pg;
	char err[300];
	char *s;

	*line = r->line;
	if (r->authority == NULL) {
		snprintf(msg, msglen, "[route:%s] has no upstream", r->name);
		return -1;
	}
	if (r->https) {
		r->tls = eg_tls_conf_new(r->ca_file != NULL ? r->ca_file :
		    EG_ROUTE_CA_DEFAULT, err, sizeof(err));
		if (r->tls == NULL) {
			snprintf(msg, msglen, "[route:%s] ca_file: %s", r->name,
			    err);
			return -1;
		}
	}
	for (i = 0; i < r->nhdr; i++) {
		total += r->pending_len[i] + 1;
		clen += r->hdr[i].name_len + 1;
	}
	if ((r->cred = eg_malloc(clen + 1)) == NULL)
		goto nomem;
	r->cred[0] = '\0';
	for (i = 0; i < r->nhdr; i++) {
		if (i > 0)
			strcat(r->cred, ",");
		strncat(r->cred, r->hdr[i].name, r->hdr[i].name_len);
	}
	for (s = r->cred; *s; s++)
		*s = (char)tolower((unsigned char)*s);
	if (total == 0)
		return 0;
	pg = (size_t)sysconf(_SC_PAGESIZE);
	r->secret_len = (total + pg - 1) / pg * pg;
	r->secret = mmap(NULL, r->secret_len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->secret == MAP_FAILED) {
		r->secret = NULL;
		goto nomem;
	}
	(void)madvise(r->secret, r->secret_len, MADV_DONTDUMP);
	(void)mlock(r->secret, r->secret_len);	/* where RLIMIT_MEMLOCK
						   allows */
	for (i = 0; i < r->nhdr; i++) {
		s = (char *)r->secret + off;
		memcpy(s, r->pending[i], r->pending_len[i]);
		s[r->pending_len[i]] = '\0';
		r->hdr[i].value = s;
		r->hdr[i].value_len = r->pending_len[i];
		off += r->pending_len[i] + 1;
		wipe_free(r->pending[i], r->pending_len[i]);
		r->pending[i] = NULL;
	}
	return 0;
nomem:
	snprintf(msg, msglen, "out of memory");
	return -1;
}

void
eg_routes_free(struct eg_route *routes, size_t n)
{
	struct eg_route *r;
	size_t i, j;

	for (i = 0; i < n; i++) {
		r = &routes[i];
		for (j = 0; j < r->nhdr; j++) {
			eg_free(r->hdr[j].name);
			if (r->pending != NULL && r->pending[j] != NULL)
				wipe_free(r->pending[j], r->pending_len[j]);
		}
		eg_free(r->hdr);
		eg_free(r->pending);
		eg_free(r->pending_len);
		if (r->secret != NULL) {
			explicit_bzero(r->secret, r->secret_len);
			munlock(r->secret, r->secret_len);
			munmap(r->secret, r->secret_len);
		}
		for (j = 0; j < r->nallow; j++)
			eg_free(r->allow[j].path);
		eg_free(r->allow);
		eg_strv_free(r->strip, r->nstrip);
		eg_tls_conf_free(r->tls);
		eg_free(r->name);
		eg_free(r->authority);
		eg_free(r->ca_file);
		eg_free(r->env);
		eg_free(r->placeholder);
		eg_free(r->cred);
	}
	eg_free(routes);
}

const struct eg_route *
eg_cfg_route(const struct eg_cfg *cfg, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < cfg->nroutes; i++)
		if (strlen(cfg->routes[i].name) == len &&
		    memcmp(cfg->routes[i].name, name, len) == 0)
			return &cfg->routes[i];
	return NULL;
}

int
eg_phase_add_route(struct eg_phase *ph, const char *name, size_t len,
    int line)
{
	char **nr;
	int *nl;

	nr = eg_reallocarray(ph->routes, ph->nroutes + 1, sizeof(*nr));
	if (nr == NULL)
		return -1;
	ph->routes = nr;
	nl = eg_reallocarray(ph->route_lines, ph->nroutes + 1, sizeof(*nl));
	if (nl == NULL)
		return -1;
	ph->route_lines = nl;
	if ((nr[ph->nroutes] = eg_strndup(name, len)) == NULL)
		return -1;
	nl[ph->nroutes++] = line;
	return 0;
}

int
eg_phase_allows_route(const struct eg_phase *ph, const char *name)
{
	return eg_strv_has(ph->routes, ph->nroutes, name);
}

int
eg_route_allows(const struct eg_route *r, const char *method,
    const char *path, size_t len)
{
	const struct eg_route_allow *a;
	size_t i;

	for (i = 0; i < r->nallow; i++) {
		a = &r->allow[i];
		if (strcmp(a->method, "*") != 0 && strcmp(a->method, method))
			continue;
		if (a->path_len == len && memcmp(a->path, path, len) == 0)
			return 1;
		if (a->path[a->path_len - 1] == '/' && len >= a->path_len &&
		    memcmp(a->path, path, a->path_len) == 0)
			return 1;
	}
	return 0;
}

const char *
eg_route_path_bad(const char *path, size_t len)
{
	size_t i, seg = 0, dots, k;
	unsigned char c;
	int other;

	for (i = 0; i < len; i++) {
		c = (unsigned char)path[i];
		if (c < 0x20 || c == 0x7f)
			return "a control byte in the path";
		if (c == '\\')
			return "a backslash in the path";
		if (c == '%') {
			int hv = i + 2 < len ? eg_hexval((unsigned char)
			    path[i + 1]) : -1;
			int lv = i + 2 < len ? eg_hexval((unsigned char)
			    path[i + 2]) : -1;

			if (hv < 0 || lv < 0)
				return "a bad percent-encoding in the path";
			c = (unsigned char)(hv * 16 + lv);
			if (c == '/' || c == '\\')
				return "an encoded '/' or '\\' in the path";
			if (c < 0x20 || c == 0x7f)
				return "an encoded control byte in the path";
		}
	}
	/* segments after the leading '/': "//" (an empty one), "." and
	 * "..", also percent-encoded ("%2e", "%2E") */
	if (len == 0 || path[0] != '/')
		return "a path that does not start with '/'";
	for (seg = 1, i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		if (i < len && i == seg)
			return "an empty segment ('//') in the path";
		dots = 0;
		other = 0;
		for (k = seg; k < i; k++) {
			if (path[k] == '.')
				dots++;
			else if (path[k] == '%' && k + 2 < i &&
			    path[k + 1] == '2' &&
			    (path[k + 2] == 'e' || path[k + 2] == 'E')) {
				dots++;
				k += 2;
			} else
				other = 1;
		}
		if (!other && (dots == 1 || dots == 2))
			return "a dot segment in the path";
		seg = i + 1;
	}
	return NULL;
}

void
eg_module_routes(struct egress *ex, void (*fn)(void *, const char *,
    const char *, const char *), void *arg)
{
	struct eg_cfg *cfg;
	size_t i;

	pthread_rwlock_rdlock(&ex->lock);
	cfg = ex->cfg;
	eg_cfg_ref(cfg);
	pthread_rwlock_unlock(&ex->lock);
	for (i = 0; i < cfg->nroutes; i++)
		if (cfg->routes[i].env != NULL ||
		    cfg->routes[i].placeholder != NULL)
			fn(arg, cfg->routes[i].name, cfg->routes[i].env,
			    cfg->routes[i].placeholder);
	eg_cfg_unref(cfg);
}

/*
 * The configuration text with every literal header value of a [route:*]
 * section replaced by [REDACTED] (file: and env: references stay: they
 * name, not hold, the credential).  The copies of a configuration that
 * leave egressd (a replay record's config.ini, the audit chain's START
 * config= hash of it) are of this text.  NULL: out of memory.
 */
char *
eg_cfg_redact(const char *text, size_t len, size_t *olen)
{
	static const char red[] = "[REDACTED]";
	const char *p = text, *e = text + len, *nl, *s, *k, *colon;
	char *out, *o;
	int inroute = 0;
	size_t n;

	/* a line only shrinks, or grows by at most the marker */
	if ((out = eg_malloc(len + (len / 2 + 1) * sizeof(red) + 1)) == NULL)
		return NULL;
	o = out;
	while (p < e) {
		nl = memchr(p, '\n', (size_t)(e - p));
		n = nl != NULL ? (size_t)(nl - p) + 1 : (size_t)(e - p);
		s = p;
		while (s < p + n && (*s == ' ' || *s == '\t'))
			s++;
		if (s < p + n && *s == '[')
			inroute = (size_t)(p + n - s) > 7 &&
			    memcmp(s, "[route:", 7) == 0;
		else if (inroute && (size_t)(p + n - s) > 6 &&
		    memcmp(s, "header", 6) == 0) {
			k = s + 6;
			while (k < p + n && (*k == ' ' || *k == '\t'))
				k++;
			colon = k < p + n && *k == '=' ?
			    memchr(k, ':', (size_t)(p + n - k)) : NULL;
			if (colon != NULL) {
				const char *v = colon + 1;

				while (v < p + n && (*v == ' ' || *v == '\t'))
					v++;
				if (!((size_t)(p + n - v) >= 5 &&
				    memcmp(v, "file:", 5) == 0) &&
				    !((size_t)(p + n - v) >= 4 &&
				    memcmp(v, "env:", 4) == 0)) {
					memcpy(o, p, (size_t)(colon + 1 - p));
					o += colon + 1 - p;
					memcpy(o, " ", 1);
					memcpy(o + 1, red, sizeof(red) - 1);
					o += sizeof(red);
					if (nl != NULL)
						*o++ = '\n';
					p += n;
					continue;
				}
			}
		}
		memcpy(o, p, n);
		o += n;
		p += n;
	}
	*o = '\0';
	*olen = (size_t)(o - out);
	return out;
}
