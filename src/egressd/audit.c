/*
 * audit.c: "egressd audit" (SPEC "Audit tools (core)").
 *
 *   audit replay -c NEW.ini [--phase NAME] [--json] LOG...
 *   audit suggest [-c FILE] [--phase NAME] [--json] LOG...   (suggest.c)
 *   audit verify [--pubkey PUB] LOG...                  (record module)
 *
 * replay decides every recorded request (ALLOW, BLOCK, FAIL) again
 * against NEW.ini with the proxy's own code: eg_phase_match() for the
 * allowlist (report mode as conn.c applies it), eg_cfg_pin() for the
 * operator's [hosts], and eg_addr_select() over the recorded addr= for
 * deny_private.  Nothing is resolved and nothing is dialled.  What the
 * policy does not decide (bad requests, timeouts, connection limits, a
 * loop, shutdown, a failing log) stays as it was.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "auditparse.h"
#include "cfg.h"
#include "dns.h"
#include "err.h"
#include "host.h"
#include "policy.h"
#include "route.h"
#include "select.h"
#include "shared.h"

#include "audit.h"

#define READ_CHUNK	(256 * 1024)
#define LINE_MAX_LEN	(64 * 1024)	/* longer: not an audit line */

static const char audit_usage[] =
"usage: egressd audit replay -c NEW.ini [--phase NAME] [--json] LOG...\n"
"       egressd audit suggest [-c FILE] [--phase NAME] [--json] LOG...\n"
"       egressd audit verify [--pubkey PUB] LOG...   (record module)\n"
"LOG may be - (standard input); rotated files are read in the order given.\n";

/* --- small helpers ------------------------------------------------------- */

int
at_opts_parse(int argc, char *argv[], struct at_opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "phase",  required_argument, NULL, 'p' },
		{ "json",   no_argument,       NULL, 'j' },
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *why = NULL;
	int ch;

	o->cfgfile = o->phase = NULL;
	o->json = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:p:jh", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'c': o->cfgfile = optarg; break;
		case 'p': o->phase = optarg; break;
		case 'j': o->json = 1; break;
		case 'h': fputs(o->usage, stdout); return AT_EX_OK;
		default: fputs(o->usage, stderr); return AT_EX_USAGE;
		}
	}
	if (o->need_cfg && o->cfgfile == NULL)
		why = "-c NEW.ini is required";
	else if (optind == argc)
		why = "no LOG given";
	if (why != NULL) {
		fprintf(stderr, "%s: %s\n", o->prog, why);
		fputs(o->usage, stderr);
		return AT_EX_USAGE;
	}
	o->logs = argv + optind;
	o->nlogs = argc - optind;
	return -1;
}

struct eg_cfg *
at_cfg_load(const char *file)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	char msg[8192];

	if ((cfg = eg_cfg_load(file, &errs)) == NULL ||
	    eg_cfg_check(cfg, &errs) == -1) {
		eg_errs_join(&errs, msg, sizeof(msg));
		fprintf(stderr, "%s\n", msg);
		eg_errs_clear(&errs);
		eg_cfg_unref(cfg);
		return NULL;
	}
	return cfg;
}

const char *
at_reason(enum eg_reason r)
{
	return eg_reason_tab[r].name;
}

int
at_is_reason(const char *s, const enum eg_reason *rs)
{
	for (; s != NULL && *rs != EG_R_NONE; rs++)
		if (strcmp(s, at_reason(*rs)) == 0)
			return 1;
	return 0;
}

const char *
at_get(const struct egress_audit_line *l, const char *key, char *buf)
{
	const char *v;
	size_t n;

	if ((v = egress_audit_get(l, key, &n)) == NULL ||
	    eg_audit_unescape(v, n, l->json, buf, AT_VAL_MAX) < 0)
		return NULL;
	return buf;
}

const char *
at_name(const struct egress_audit_line *l, const char *key, char *buf,
    int session, int *bad)
{
	const char *v;
	size_t n;
	int len;

	if ((v = egress_audit_get(l, key, &n)) == NULL)
		return NULL;
	len = eg_audit_unescape(v, n, l->json, buf, AT_VAL_MAX);
	/* the length the unescaping gave, not strlen(): "a\x00b" is no "a" */
	if (len < 0 || (session ? !eg_session_name_ok(buf, (size_t)len) :
	    !eg_phase_name_ok(buf, (size_t)len))) {
		*bad = 1;
		return NULL;
	}
	return buf;
}

void
at_put_esc(FILE *fp, const char *s)
{
	eg_put_esc(fp, s, strlen(s), 0);
}

void
at_invalid_report(const char *prog, uint64_t n)
{
	if (n > 0)
		fprintf(stderr, "%s: %llu line%s skipped (a phase, session or "
		    "host that is not a valid name)\n", prog,
		    (unsigned long long)n, n == 1 ? "" : "s");
}

void
at_put_text(FILE *fp, const char *s)
{
	unsigned char c;

	if (s == NULL || *s == '\0') {
		fputc('-', fp);
		return;
	}
	for (; (c = (unsigned char)*s) != '\0'; s++) {
		if (c > ' ' && c < 0x7f && c != '\\' && c != '"')
			fputc(c, fp);
		else
			fprintf(fp, "\\x%02x", c);
	}
}

void
at_put_json(FILE *fp, const char *s)
{
	if (s == NULL) {
		fputs("null", fp);
		return;
	}
	eg_put_json_str(fp, s, strlen(s));
}

/* The text writer's escaping of raw into out (cap >= 4 * strlen + 1). */
static void
text_escape(const char *raw, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c;
	size_t o = 0;

	for (; (c = (unsigned char)*raw) != '\0' && o + 5 < cap; raw++) {
		if (c > ' ' && c < 0x7f && c != '\\' && c != '"')
			out[o++] = (char)c;
		else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

/* --- counters by key -------------------------------------------------------- */

static uint64_t
fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct at_ent *
at_tab_get(struct at_tab *t, const char *key)
{
	struct at_ent *ne, *e;
	size_t i, j, ncap;

	if (t->n * 2 >= t->cap) {
		ncap = t->cap ? t->cap * 2 : 64;
		if ((ne = calloc(ncap, sizeof(*ne))) == NULL)
			return NULL;
		for (i = 0; i < t->cap; i++) {
			if (t->ent[i].key == NULL)
				continue;
			for (j = fnv(t->ent[i].key) & (ncap - 1);
			    ne[j].key != NULL; j = (j + 1) & (ncap - 1))
				;
			ne[j] = t->ent[i];
		}
		free(t->ent);
		t->ent = ne;
		t->cap = ncap;
	}
	for (i = fnv(key) & (t->cap - 1); (e = &t->ent[i])->key != NULL;
	    i = (i + 1) & (t->cap - 1))
		if (strcmp(e->key, key) == 0)
			return e;
	if ((e->key = strdup(key)) == NULL)
		return NULL;
	e->count = 0;
	e->first = t->n++;
	e->data = NULL;
	return e;
}

struct at_ent **
at_tab_list(const struct at_tab *t)
{
	struct at_ent **v;
	size_t i, n = 0;

	if ((v = calloc(t->n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < t->cap; i++)
		if (t->ent[i].key != NULL)
			v[n++] = &t->ent[i];
	return v;
}

void
at_tab_free(struct at_tab *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++) {
		free(t->ent[i].key);
		free(t->ent[i].data);
	}
	free(t->ent);
	t->ent = NULL;
	t->cap = t->n = 0;
}

/* --- reading logs ------------------------------------------------------------- */

static void
one_line(const char *p, size_t n, at_line_fn *fn, void *arg, uint64_t *bad,
    uint64_t *first_bad, uint64_t lineno)
{
	struct egress_audit_line l;

	if (egress_audit_parse(p, n, &l) == 0) {
		fn(&l, arg);
		return;
	}
	if ((*bad)++ == 0)
		*first_bad = lineno;
}

int
at_read_logs(const char *prog, char *const *files, int nfiles,
    at_line_fn *fn, void *arg, uint64_t *unparsed)
{
	char *buf;
	size_t have, start, i;
	ssize_t r;
	uint64_t lineno, bad, first_bad;
	int f, fd, skipping, first, rc = 0;
	const char *name;
	char *nl;

	*unparsed = 0;
	if ((buf = malloc(READ_CHUNK + LINE_MAX_LEN)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	for (f = 0; f < nfiles; f++) {
		name = files[f];
		if (strcmp(name, "-") == 0)
			fd = STDIN_FILENO;
		else if ((fd = open(name, O_RDONLY | O_CLOEXEC)) == -1) {
			fprintf(stderr, "%s: %s: %s\n", prog, name,
			    strerror(errno));
			rc = -1;
			continue;
		}
		have = 0;
		lineno = bad = first_bad = 0;
		skipping = 0;
		first = 1;
		for (;;) {
			r = read(fd, buf + have, READ_CHUNK + LINE_MAX_LEN -
			    have);
			if (r == -1 && errno == EINTR)
				continue;
			if (r == -1) {
				fprintf(stderr, "%s: %s: %s\n", prog, name,
				    strerror(errno));
				rc = -1;
				break;
			}
			if (first && have + (size_t)r >= 2 &&
			    (unsigned char)buf[0] == 0x1f &&
			    (unsigned char)buf[1] == 0x8b) {
				fprintf(stderr, "%s: %s: compressed; give it "
				    "as standard input: zcat %s | egressd "
				    "audit ... -\n", prog, name, name);
				rc = -1;
				break;
			}
			first = 0;
			if (r == 0) {
				/* a last line without its newline */
				if (skipping) {
					if (bad++ == 0)
						first_bad = lineno + 1;
				} else if (have > 0)
					one_line(buf, have, fn, arg, &bad,
					    &first_bad, ++lineno);
				break;
			}
			have += (size_t)r;
			start = 0;
			while ((nl = memchr(buf + start, '\n', have - start)) !=
			    NULL) {
				i = (size_t)(nl - buf);
				lineno++;
				if (skipping) {
					skipping = 0;
					if (bad++ == 0)
						first_bad = lineno;
				} else
					one_line(buf + start, i - start + 1,
					    fn, arg, &bad, &first_bad, lineno);
				start = i + 1;
			}
			memmove(buf, buf + start, have - start);
			have -= start;
			if (have >= LINE_MAX_LEN) {
				/* no newline in sight: not an audit line */
				skipping = 1;
				have = 0;
			}
		}
		if (fd != STDIN_FILENO)
			close(fd);
		if (bad > 0)
			fprintf(stderr, "%s: %s: %llu line%s skipped (not "
			    "audit lines), the first at line %llu\n", prog,
			    name, (unsigned long long)bad, bad == 1 ? "" : "s",
			    (unsigned long long)first_bad);
		*unparsed += bad;
	}
	free(buf);
	return rc;
}

/* --- replay -------------------------------------------------------------------- */

struct replay {
	struct eg_cfg		*cfg;
	const struct eg_phase	*forced;	/* --phase */
	const char		*cfgname;
	uint64_t		 requests, unchanged, blocked, allowed;
	uint64_t		 undecided;
	uint64_t		 invalid;	/* skipped: not a valid name */
	struct at_tab		 changes;	/* see change_key() */
	struct at_tab		 missing;	/* phase -> requests */
	const struct eg_phase	*last;		/* lookup cache */
	int			 oom;
};

struct verdict {
	const char	*v;		/* "ALLOW" "BLOCK" "FAIL" */
	const char	*rule;		/* ALLOW */
	const char	*reason;	/* BLOCK, FAIL */
	const char	*report;	/* ALLOW in report mode */
};

/* An address as the ALLOW line records it (inet_ntop form). */
static int
parse_addr(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	char b[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(s);

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return 0;
	}
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']' && n - 2 < sizeof(b)) {
		memcpy(b, s + 1, n - 2);
		b[n - 2] = '\0';
		s = b;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		return 0;
	}
	return -1;
}

/*
 * Decide one request again with the proxy's own steps: the match
 * (eg_phase_decide: report mode lets a miss through, untrusted), then
 * the address step (eg_addr_select) over what is known of the addresses:
 * the literal or the new [hosts] pin (eg_cfg_known_addrs), else the
 * recorded addr= (the one the proxy dialled).  Without an address, a request
 * the old log refused as private_address is known to have had only
 * non-public ones.  The upstream's answer is not re-decided: an allowed
 * request keeps FAIL when it failed.
 */
static void
decide(const struct eg_cfg *cfg, const struct eg_phase *ph,
    const struct eg_host *h, uint16_t port, const struct verdict *old,
    const char *addr, struct verdict *nv)
{
	struct sockaddr_storage addrs[EG_DNS_MAXADDR];
	const struct eg_rule *rule;
	enum eg_match m;
	size_t n, left;
	int report, trusted, known_private = 0;

	memset(nv, 0, sizeof(*nv));
	m = eg_phase_decide(ph, h, port, cfg->ports, cfg->nports, &rule,
	    &report);
	if (m != EG_MATCH_ALLOW) {
		nv->v = "BLOCK";
		nv->reason = at_reason(m == EG_MATCH_NOT_ALLOWED ?
		    EG_R_NOT_ALLOWED : EG_R_PORT_NOT_ALLOWED);
		return;
	}
	n = eg_cfg_known_addrs(cfg, h, report, addrs, EG_DNS_MAXADDR,
	    &trusted);
	if (n == 0 && addr != NULL && parse_addr(addr, &addrs[0]) == 0)
		n = 1;
	else if (n == 0 && old->reason != NULL &&
	    strcmp(old->reason, at_reason(EG_R_PRIVATE_ADDRESS)) == 0)
		known_private = 1;
	if ((n > 0 && eg_addr_select(addrs, n, port, cfg->deny_private,
	    trusted, NULL, NULL, &left) != EG_SELECT_OK) ||
	    (n == 0 && known_private && cfg->deny_private)) {
		nv->v = "BLOCK";
		nv->reason = at_reason(EG_R_PRIVATE_ADDRESS);
		return;
	}
	if (strcmp(old->v, "FAIL") == 0) {
		*nv = *old;
		return;
	}
	nv->v = "ALLOW";
	nv->rule = rule != NULL ? rule->text : "-";
	nv->report = report ? at_reason(EG_R_NOT_ALLOWED) : NULL;
}

/*
 * A route's request decided again (SPEC "Routes"): the route must exist
 * in the new configuration, the phase must allow it, and its allow
 * entries the method and path.  The upstream's answer is not re-decided.
 */
static void
decide_route(const struct eg_cfg *cfg, const struct eg_phase *ph,
    const char *name, const char *method, const char *path,
    const struct verdict *old, struct verdict *nv, char *rule, size_t rlen)
{
	const struct eg_route *r = eg_cfg_route(cfg, name, strlen(name));

	memset(nv, 0, sizeof(*nv));
	nv->v = "BLOCK";
	if (r == NULL)
		nv->reason = at_reason(EG_R_NO_ROUTE);
	else if (!eg_phase_allows_route(ph, r->name))
		nv->reason = at_reason(EG_R_NOT_ALLOWED);
	else if (method == NULL || path == NULL ||
	    !eg_route_allows(r, method, path, strlen(path)))
		nv->reason = at_reason(EG_R_ROUTE_NOT_ALLOWED);
	else if (strcmp(old->v, "FAIL") == 0)
		*nv = *old;
	else {
		nv->v = "ALLOW";
		snprintf(rule, rlen, "route:%s", r->name);
		nv->rule = rule;
	}
}

/* Fields of a change's key, tab-separated, each text-escaped. */
enum { K_PHASE, K_SESSION, K_HOST, K_PORT, K_OLD, K_ORULE, K_OREASON,
	K_OREPORT, K_NEW, K_NRULE, K_NREASON, K_NREPORT, K_N };

static void
key_add(char *key, size_t cap, size_t *len, const char *raw)
{
	char esc[AT_VAL_MAX * 4 + 1];
	int n;

	if (raw != NULL)
		text_escape(raw, esc, sizeof(esc));
	else
		esc[0] = '\0';
	if (*len >= cap)
		return;
	n = snprintf(key + *len, cap - *len, "%s%s", *len > 0 ? "\t" : "",
	    esc);
	*len += n > 0 ? (size_t)n : 0;
}

static void
replay_line(const struct egress_audit_line *l, void *arg)
{
	static const enum eg_reason policy_block[] = { EG_R_NOT_ALLOWED,
	    EG_R_PORT_NOT_ALLOWED, EG_R_PRIVATE_ADDRESS, EG_R_NO_ROUTE,
	    EG_R_ROUTE_NOT_ALLOWED, EG_R_NONE };
	static const enum eg_reason upstream_fail[] = { EG_R_DNS_FAILURE,
	    EG_R_CONNECT_FAILED, EG_R_CONNECT_TIMEOUT, EG_R_TLS_FAILED,
	    EG_R_NONE };
	static char phase[AT_VAL_MAX], sess[AT_VAL_MAX], rule[AT_VAL_MAX],
	    reason[AT_VAL_MAX], report[AT_VAL_MAX], addrb[AT_VAL_MAX],
	    host[AT_VAL_MAX], routeb[AT_VAL_MAX], methodb[AT_VAL_MAX],
	    pathb[AT_VAL_MAX], nrule[AT_VAL_MAX];
	const char *route;
	static char key[K_N * (AT_VAL_MAX * 4 + 2)];
	struct replay *rp = arg;
	const struct eg_phase *ph;
	struct verdict old, nv;
	struct eg_host h;
	struct at_ent *e;
	enum eg_audit_ev ev = eg_audit_event(l);
	const char *hp, *why, *pname, *sname, *addr;
	char portb[8];
	size_t hl, kl;
	unsigned port;
	int n, bad = 0;

	if (ev != EG_AEV_ALLOW && ev != EG_AEV_BLOCK && ev != EG_AEV_FAIL)
		return;
	memset(&old, 0, sizeof(old));
	old.v = ev == EG_AEV_ALLOW ? "ALLOW" : ev == EG_AEV_BLOCK ? "BLOCK" :
	    "FAIL";
	old.rule = at_get(l, "rule", rule);
	old.reason = at_get(l, "reason", reason);
	old.report = at_get(l, "report", report);
	pname = at_name(l, "phase", phase, 0, &bad);
	sname = at_name(l, "session", sess, 1, &bad);
	addr = at_get(l, "addr", addrb);

	/* a phase or session that no egressd could have written (a forged
	 * or damaged line): skipped and counted, never printed */
	if (bad) {
		rp->invalid++;
		return;
	}
	/* what the policy does not decide stays as it was */
	if ((ev == EG_AEV_BLOCK && !at_is_reason(old.reason, policy_block)) ||
	    (ev == EG_AEV_FAIL && !at_is_reason(old.reason, upstream_fail))) {
		rp->requests++;
		rp->unchanged++;
		return;
	}
	/* a route's line: decided by its route, its host may be "-" */
	route = at_get(l, "route", routeb);
	if (route != NULL) {
		memset(&h, 0, sizeof(h));
		port = 0;
		if (egress_audit_target(l, &hp, &hl, &port) == -1 ||
		    (n = eg_audit_unescape(hp, hl, l->json, host,
		    sizeof(host))) < 0 || eg_host_parse(host, (size_t)n, &h,
		    &why) == -1) {
			snprintf(h.name, sizeof(h.name), "-");
			port = 0;
		}
	} else
	/* what it decides names a valid host */
	if (egress_audit_target(l, &hp, &hl, &port) == -1 || port == 0 ||
	    (n = eg_audit_unescape(hp, hl, l->json, host, sizeof(host))) < 0 ||
	    eg_host_parse(host, (size_t)n, &h, &why) == -1) {
		rp->invalid++;
		return;
	}
	if ((ph = rp->forced) == NULL) {
		if (pname == NULL)
			pname = "-";
		if (rp->last != NULL && strcmp(rp->last->name, pname) == 0)
			ph = rp->last;
		else if ((ph = eg_cfg_phase(rp->cfg, pname)) != NULL)
			rp->last = ph;
	}
	if (ph == NULL) {
		rp->undecided++;
		if ((e = at_tab_get(&rp->missing, pname)) == NULL)
			rp->oom = 1;
		else
			e->count++;
		return;
	}
	rp->requests++;
	if (route != NULL)
		decide_route(rp->cfg, ph, route, at_get(l, "method", methodb),
		    at_get(l, "path", pathb), &old, &nv, nrule, sizeof(nrule));
	else
		decide(rp->cfg, ph, &h, (uint16_t)port, &old, addr, &nv);
	if (strcmp(old.v, nv.v) == 0) {
		rp->unchanged++;
		return;
	}
	if (strcmp(nv.v, "BLOCK") == 0)
		rp->blocked++;
	else
		rp->allowed++;
	snprintf(portb, sizeof(portb), "%u", port);
	key[0] = '\0';
	kl = 0;
	/* the phase (never empty) comes first: every later field gets its
	 * tab, empty or not */
	key_add(key, sizeof(key), &kl, ph->name);
	key_add(key, sizeof(key), &kl, sname);
	key_add(key, sizeof(key), &kl, h.name);
	key_add(key, sizeof(key), &kl, portb);
	key_add(key, sizeof(key), &kl, old.v);
	key_add(key, sizeof(key), &kl, old.rule);
	key_add(key, sizeof(key), &kl, old.reason);
	key_add(key, sizeof(key), &kl, old.report);
	key_add(key, sizeof(key), &kl, nv.v);
	key_add(key, sizeof(key), &kl, nv.rule);
	key_add(key, sizeof(key), &kl, nv.reason);
	key_add(key, sizeof(key), &kl, nv.report);
	if ((e = at_tab_get(&rp->changes, key)) == NULL)
		rp->oom = 1;
	else
		e->count++;
}

/* Split a key into its K_N fields (in place). */
static void
key_split(char *key, char *f[K_N])
{
	int i;

	for (i = 0; i < K_N; i++) {
		f[i] = key;
		if ((key = strchr(key, '\t')) != NULL)
			*key++ = '\0';
		else
			key = f[i] + strlen(f[i]);
	}
}

struct change {
	struct at_ent	*e;
	char		*buf;		/* a copy of the key, split */
	char		*f[K_N];
	uint64_t	 group;		/* order of its phase/session */
};

static int
change_cmp(const void *a, const void *b)
{
	const struct change *x = *(const struct change *const *)a;
	const struct change *y = *(const struct change *const *)b;
	int c;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->e->count != y->e->count)
		return x->e->count > y->e->count ? -1 : 1;
	if ((c = strcmp(x->f[K_HOST], y->f[K_HOST])) != 0)
		return c;
	if ((c = strcmp(x->f[K_PORT], y->f[K_PORT])) != 0)
		return c;
	return x->e->first < y->e->first ? -1 : x->e->first > y->e->first;
}

/* "rule=X", "rule=- report=not_allowed", or the reason. */
static void
put_detail(FILE *fp, char *const *f, int verdict)
{
	if (f[verdict][0] == 'A') {
		fputs("rule=", fp);
		at_put_esc(fp, f[verdict + 1][0] ? f[verdict + 1] : "-");
		if (f[verdict + 3][0] != '\0') {
			fputs(" report=", fp);
			at_put_esc(fp, f[verdict + 3]);
		}
	} else
		at_put_esc(fp, f[verdict + 2][0] ? f[verdict + 2] : "-");
}

static void
put_detail_json(FILE *fp, char *const *f, int verdict)
{
	fprintf(fp, "{\"verdict\":");
	at_put_json(fp, f[verdict]);
	fprintf(fp, ",\"rule\":");
	at_put_json(fp, f[verdict + 1][0] ? f[verdict + 1] : NULL);
	fprintf(fp, ",\"reason\":");
	at_put_json(fp, f[verdict + 2][0] ? f[verdict + 2] : NULL);
	fprintf(fp, ",\"report\":");
	at_put_json(fp, f[verdict + 3][0] ? f[verdict + 3] : NULL);
	fputc('}', fp);
}

static int
replay_report(struct replay *rp, int json, uint64_t unparsed)
{
	struct at_ent **list = NULL, **miss = NULL;
	struct change **ch = NULL;
	struct at_tab groups = { 0 };
	struct at_ent *g;
	char gkey[2 * (AT_VAL_MAX * 4 + 2)];
	size_t i, n = rp->changes.n, ngroups;
	int rc = -1;

	if ((list = at_tab_list(&rp->changes)) == NULL ||
	    (miss = at_tab_list(&rp->missing)) == NULL ||
	    (ch = calloc(n + 1, sizeof(*ch))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		if ((ch[i] = calloc(1, sizeof(*ch[i]))) == NULL ||
		    (ch[i]->buf = strdup(list[i]->key)) == NULL)
			goto out;
		ch[i]->e = list[i];
		key_split(ch[i]->buf, ch[i]->f);
	}
	/* groups of one phase and session, in order of first change */
	for (i = 0; i < n; i++) {
		snprintf(gkey, sizeof(gkey), "%s\t%s", ch[i]->f[K_PHASE],
		    ch[i]->f[K_SESSION]);
		if ((g = at_tab_get(&groups, gkey)) == NULL)
			goto out;
		if (g->count == 0 || ch[i]->e->first < g->count - 1)
			g->count = ch[i]->e->first + 1;
	}
	for (i = 0; i < n; i++) {
		snprintf(gkey, sizeof(gkey), "%s\t%s", ch[i]->f[K_PHASE],
		    ch[i]->f[K_SESSION]);
		ch[i]->group = at_tab_get(&groups, gkey)->count;
	}
	ngroups = groups.n;
	qsort(ch, n, sizeof(*ch), change_cmp);

	if (json) {
		printf("{\"requests\":%llu,\"unchanged\":%llu,"
		    "\"now_blocked\":%llu,\"now_allowed\":%llu,"
		    "\"unparsed\":%llu,\"undecided\":%llu,\"invalid\":%llu,"
		    "\"config\":",
		    (unsigned long long)rp->requests,
		    (unsigned long long)rp->unchanged,
		    (unsigned long long)rp->blocked,
		    (unsigned long long)rp->allowed,
		    (unsigned long long)unparsed,
		    (unsigned long long)rp->undecided,
		    (unsigned long long)rp->invalid);
		at_put_json(stdout, rp->cfgname);
		printf(",\"missing_phases\":[");
		for (i = 0; miss[i] != NULL; i++) {
			printf("%s{\"phase\":", i ? "," : "");
			at_put_json(stdout, miss[i]->key);
			printf(",\"requests\":%llu}",
			    (unsigned long long)miss[i]->count);
		}
		printf("],\"changes\":[");
		for (i = 0; i < n; i++) {
			printf("%s{\"phase\":", i ? "," : "");
			at_put_json(stdout, ch[i]->f[K_PHASE]);
			printf(",\"session\":");
			at_put_json(stdout, ch[i]->f[K_SESSION][0] ?
			    ch[i]->f[K_SESSION] : NULL);
			printf(",\"host\":");
			at_put_json(stdout, ch[i]->f[K_HOST]);
			printf(",\"port\":%u,\"count\":%llu,\"old\":",
			    (unsigned)strtoul(ch[i]->f[K_PORT], NULL, 10),
			    (unsigned long long)ch[i]->e->count);
			put_detail_json(stdout, ch[i]->f, K_OLD);
			printf(",\"new\":");
			put_detail_json(stdout, ch[i]->f, K_NEW);
			printf("}");
		}
		printf("]}\n");
	} else {
		for (i = 0; i < n; i++) {
			/* (the fields are text-escaped already; printed
			 * escaped all the same) */
			if (ngroups > 1 && (i == 0 ||
			    ch[i]->group != ch[i - 1]->group)) {
				printf("phase ");
				at_put_esc(stdout, ch[i]->f[K_PHASE]);
				if (ch[i]->f[K_SESSION][0] != '\0') {
					printf(", session ");
					at_put_esc(stdout,
					    ch[i]->f[K_SESSION]);
				}
				printf(":\n");
			}
			at_put_esc(stdout, ch[i]->f[K_OLD]);
			printf(" -> ");
			at_put_esc(stdout, ch[i]->f[K_NEW]);
			putchar(' ');
			at_put_esc(stdout, ch[i]->f[K_HOST]);
			putchar(':');
			at_put_esc(stdout, ch[i]->f[K_PORT]);
			printf("  x%llu  (was ",
			    (unsigned long long)ch[i]->e->count);
			put_detail(stdout, ch[i]->f, K_OLD);
			printf("; now ");
			put_detail(stdout, ch[i]->f, K_NEW);
			printf(")\n");
		}
		printf("%llu requests: %llu unchanged, %llu now blocked, "
		    "%llu now allowed\n", (unsigned long long)rp->requests,
		    (unsigned long long)rp->unchanged,
		    (unsigned long long)rp->blocked,
		    (unsigned long long)rp->allowed);
	}
	for (i = 0; miss[i] != NULL; i++) {
		fprintf(stderr, "egressd: audit replay: phase ");
		at_put_text(stderr, miss[i]->key);
		fprintf(stderr, " is not in ");
		at_put_esc(stderr, rp->cfgname);
		fprintf(stderr, ": %llu request%s not decided "
		    "(--phase NAME decides them against a phase of it)\n",
		    (unsigned long long)miss[i]->count,
		    miss[i]->count == 1 ? "" : "s");
	}
	at_invalid_report("egressd: audit replay", rp->invalid);
	rc = 0;
out:
	if (rc == -1)
		fprintf(stderr, "egressd: audit replay: out of memory\n");
	for (i = 0; ch != NULL && i < n; i++)
		if (ch[i] != NULL) {
			free(ch[i]->buf);
			free(ch[i]);
		}
	free(ch);
	free(list);
	free(miss);
	at_tab_free(&groups);
	return rc;
}

static int
replay_main(int argc, char *argv[])
{
	struct at_opts o = { .prog = "egressd: audit replay",
	    .usage = audit_usage, .need_cfg = 1 };
	struct replay rp;
	uint64_t unparsed = 0;
	int rc;

	memset(&rp, 0, sizeof(rp));
	if ((rc = at_opts_parse(argc, argv, &o)) != -1)
		return rc;
	if ((rp.cfg = at_cfg_load(o.cfgfile)) == NULL)
		return AT_EX_USAGE;
	rp.cfgname = o.cfgfile;
	if (o.phase != NULL && (rp.forced = eg_cfg_phase(rp.cfg, o.phase)) ==
	    NULL) {
		fprintf(stderr, "%s: phase ", o.prog);
		at_put_text(stderr, o.phase);
		fprintf(stderr, " is not in ");
		at_put_esc(stderr, o.cfgfile);
		fputc('\n', stderr);
		eg_cfg_unref(rp.cfg);
		return AT_EX_USAGE;
	}
	rc = at_read_logs(o.prog, o.logs, o.nlogs, replay_line, &rp,
	    &unparsed);
	if (rc == 0 && !rp.oom)
		rc = replay_report(&rp, o.json, unparsed);
	else if (rp.oom)
		fprintf(stderr, "egressd: audit replay: out of memory\n");
	at_tab_free(&rp.changes);
	at_tab_free(&rp.missing);
	eg_cfg_unref(rp.cfg);
	if (rc == -1 || rp.oom || rp.undecided > 0)
		return AT_EX_USAGE;
	return rp.blocked + rp.allowed > 0 ? AT_EX_CHANGED : AT_EX_OK;
}

/* --- verify: the record module's --------------------------------------------- */

static int
verify_main(int argc, char *argv[])
{
	char err[512];
	int rc;

	argv[0] = (char *)"audit-verify";
	rc = egress_module_main("audit-verify", argc, argv, err, sizeof(err));
	if (rc != -1)
		return rc;
	if (strstr(err, "not compiled in") != NULL ||
	    strncmp(err, "unknown command", 15) == 0)
		fprintf(stderr, "egressd: audit verify: the record module is "
		    "not compiled in\n");
	else
		fprintf(stderr, "egressd: audit verify: %s\n", err);
	return AT_EX_USAGE;
}

int
audit_main(int argc, char *argv[])
{
	if (argc < 2) {
		fputs(audit_usage, stderr);
		return AT_EX_USAGE;
	}
	if (strcmp(argv[1], "replay") == 0)
		return replay_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "suggest") == 0)
		return audit_suggest(argc - 1, argv + 1);
	if (strcmp(argv[1], "verify") == 0)
		return verify_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(audit_usage, stdout);
		return AT_EX_OK;
	}
	fprintf(stderr, "egressd: audit: unknown subcommand '%s'\n", argv[1]);
	fputs(audit_usage, stderr);
	return AT_EX_USAGE;
}
