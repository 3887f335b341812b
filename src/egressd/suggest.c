/*
 * suggest.c: "egressd audit suggest [-c FILE] [--phase NAME] [--json]
 * LOG..." (SPEC "Audit tools (core)"): the requests a phase refused as
 * not_allowed (BLOCK reason=not_allowed) or let through in report mode
 * (report=not_allowed) become "allow =" lines, one per host (":port"
 * when the port is not in ports: the file's, else 443), grouped by
 * registrable domain as the public suffix list (libpsl: the newest of
 * the system's list and libpsl's built-in one) sees it, with the
 * request count as a comment.  With -c, hosts the phase already allows
 * (eg_phase_match(), the proxy's matcher) are left out.  The only file
 * that includes libpsl.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <libpsl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "auditparse.h"
#include "cfg.h"
#include "err.h"
#include "host.h"
#include "policy.h"
#include "shared.h"

#include "audit.h"

#define PROG	"egressd: audit suggest"

struct suggest {
	const struct eg_cfg	*cfg;		/* -c, or NULL */
	const char		*phase;		/* --phase, or NULL */
	struct at_tab		 hosts;		/* "phase\thost\tport" */
	struct at_tab		 missing;	/* phases not in -c FILE */
	uint64_t		 invalid;	/* skipped: not a valid name */
	int			 oom;
};

static void
suggest_line(const struct egress_audit_line *l, void *arg)
{
	static char phase[AT_VAL_MAX], reason[AT_VAL_MAX], report[AT_VAL_MAX],
	    host[AT_VAL_MAX];
	struct suggest *sg = arg;
	enum eg_audit_ev ev = eg_audit_event(l);
	const struct eg_phase *ph;
	const struct eg_rule *rule;
	struct eg_host h;
	struct at_ent *e;
	const char *hp, *why, *pname;
	char key[EG_HOST_MAX + 3 + 64 + 16];
	size_t hl;
	unsigned port;
	int n, bad = 0;

	if (ev == EG_AEV_BLOCK) {
		if (at_get(l, "reason", reason) == NULL ||
		    strcmp(reason, at_reason(EG_R_NOT_ALLOWED)) != 0)
			return;
	} else if (ev == EG_AEV_ALLOW) {
		if (at_get(l, "report", report) == NULL ||
		    strcmp(report, at_reason(EG_R_NOT_ALLOWED)) != 0)
			return;
	} else
		return;
	/*
	 * The output is meant to be pasted into a configuration: a phase
	 * or host that is not a valid name ("agent\nallow = 0.0.0.0/0",
	 * escapes, a NUL) never reaches it; such lines are counted.
	 */
	if ((pname = at_name(l, "phase", phase, 0, &bad)) == NULL && bad) {
		sg->invalid++;
		return;
	}
	if (pname == NULL)
		pname = "-";
	if (sg->phase != NULL && strcmp(sg->phase, pname) != 0)
		return;
	if (egress_audit_target(l, &hp, &hl, &port) == -1 || port == 0 ||
	    (n = eg_audit_unescape(hp, hl, l->json, host, sizeof(host))) < 0 ||
	    eg_host_parse(host, (size_t)n, &h, &why) == -1) {
		sg->invalid++;
		return;
	}
	if (sg->cfg != NULL) {
		if ((ph = eg_cfg_phase(sg->cfg, pname)) == NULL) {
			if ((e = at_tab_get(&sg->missing, pname)) == NULL)
				sg->oom = 1;
			else
				e->count++;
		} else if (eg_phase_match(ph, &h, (uint16_t)port,
		    sg->cfg->ports, sg->cfg->nports, &rule) ==
		    EG_MATCH_ALLOW)
			return;		/* already allowed */
	}
	snprintf(key, sizeof(key), "%s\t%s\t%u", pname, h.name, port);
	if ((e = at_tab_get(&sg->hosts, key)) == NULL)
		sg->oom = 1;
	else
		e->count++;
}

struct shost {
	char		*phase, *host;
	const char	*domain;
	unsigned	 port;
	uint64_t	 count;
	uint64_t	 dcount;	/* its domain's, in its phase */
	uint64_t	 pfirst;	/* its phase's first appearance */
	char		 allow[EG_HOST_MAX + 3 + 8];
};

static int
shost_cmp(const void *a, const void *b)
{
	const struct shost *x = a, *y = b;
	int c;

	if (x->pfirst != y->pfirst)
		return x->pfirst < y->pfirst ? -1 : 1;
	if (x->dcount != y->dcount)
		return x->dcount > y->dcount ? -1 : 1;
	if ((c = strcmp(x->domain, y->domain)) != 0)
		return c;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if ((c = strcmp(x->host, y->host)) != 0)
		return c;
	return x->port < y->port ? -1 : x->port > y->port;
}

static int
port_listed(const uint16_t *ports, size_t n, unsigned port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ports[i] == port)
			return 1;
	return 0;
}

/* Registrable domain of a name (the name itself when it has none, such
 * as a public suffix or an IP literal); points into host or is host. */
static const char *
reg_domain(const psl_ctx_t *psl, const char *host)
{
	const char *d;

	if (host[0] == '[' || strspn(host, "0123456789.") == strlen(host))
		return host;
	d = psl_registrable_domain(psl, host);
	return d != NULL ? d : host;
}

static int
suggest_report(struct suggest *sg, const psl_ctx_t *psl, int json,
    uint64_t unparsed)
{
	static const uint16_t p443[] = { 443 };
	struct at_ent **list = NULL, **miss = NULL, *e;
	struct at_tab dom = { 0 }, pfirst = { 0 };
	struct shost *v = NULL;
	const uint16_t *ports = p443;
	size_t nports = 1, i, n = sg->hosts.n;
	char dk[AT_VAL_MAX], *t1, *t2;
	int rc = -1, nd;

	if (sg->cfg != NULL) {
		ports = sg->cfg->ports;
		nports = sg->cfg->nports;
	}
	if ((list = at_tab_list(&sg->hosts)) == NULL ||
	    (miss = at_tab_list(&sg->missing)) == NULL ||
	    (v = calloc(n + 1, sizeof(*v))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		/* list[i]->key is "phase\thost\tport": split in place */
		v[i].phase = list[i]->key;
		t1 = strchr(v[i].phase, '\t');
		*t1++ = '\0';
		t2 = strchr(t1, '\t');
		*t2++ = '\0';
		v[i].host = t1;
		v[i].port = (unsigned)strtoul(t2, NULL, 10);
		v[i].count = list[i]->count;
		v[i].domain = reg_domain(psl, v[i].host);
		if (port_listed(ports, nports, v[i].port))
			snprintf(v[i].allow, sizeof(v[i].allow), "%s",
			    v[i].host);
		else
			snprintf(v[i].allow, sizeof(v[i].allow), "%s:%u",
			    v[i].host, v[i].port);
		snprintf(dk, sizeof(dk), "%s\t%s", v[i].phase, v[i].domain);
		if ((e = at_tab_get(&dom, dk)) == NULL ||
		    (e = at_tab_get(&pfirst, v[i].phase)) == NULL)
			goto out;
		at_tab_get(&dom, dk)->count += v[i].count;
		if (e->count == 0 || list[i]->first + 1 < e->count)
			e->count = list[i]->first + 1;
	}
	for (i = 0; i < n; i++) {
		snprintf(dk, sizeof(dk), "%s\t%s", v[i].phase, v[i].domain);
		v[i].dcount = at_tab_get(&dom, dk)->count;
		v[i].pfirst = at_tab_get(&pfirst, v[i].phase)->count;
	}
	qsort(v, n, sizeof(*v), shost_cmp);

	if (json) {
		printf("{\"unparsed\":%llu,\"invalid\":%llu,\"phases\":[",
		    (unsigned long long)unparsed,
		    (unsigned long long)sg->invalid);
		for (i = 0; i < n; i++) {
			if (i == 0 || strcmp(v[i].phase, v[i - 1].phase)) {
				printf("%s{\"phase\":", i ? "]}]}," : "");
				at_put_json(stdout, v[i].phase);
				printf(",\"domains\":[");
				nd = 0;
			} else
				nd = strcmp(v[i].domain, v[i - 1].domain) ? 1 :
				    -1;
			if (nd >= 0) {
				printf("%s{\"domain\":", nd ? "]}," : "");
				at_put_json(stdout, v[i].domain);
				printf(",\"count\":%llu,\"hosts\":[",
				    (unsigned long long)v[i].dcount);
			} else
				printf(",");
			printf("{\"host\":");
			at_put_json(stdout, v[i].host);
			printf(",\"port\":%u,\"allow\":", v[i].port);
			at_put_json(stdout, v[i].allow);
			printf(",\"count\":%llu}",
			    (unsigned long long)v[i].count);
		}
		printf("%s]}\n", n ? "]}]}" : "");
	} else {
		/* valid names only (suggest_line()); escaped all the same */
		for (i = 0; i < n; i++) {
			if (i == 0 || strcmp(v[i].phase, v[i - 1].phase)) {
				printf("%s; phase ", i ? "\n" : "");
				at_put_esc(stdout, v[i].phase);
				putchar('\n');
			}
			if (i == 0 || strcmp(v[i].phase, v[i - 1].phase) ||
			    strcmp(v[i].domain, v[i - 1].domain)) {
				printf("; ");
				at_put_esc(stdout, v[i].domain);
				putchar('\n');
			}
			printf("allow = ");
			at_put_esc(stdout, v[i].allow);
			printf(" ; %llu\n", (unsigned long long)v[i].count);
		}
	}
	for (i = 0; miss[i] != NULL; i++) {
		fprintf(stderr, PROG ": phase ");
		at_put_esc(stderr, miss[i]->key);
		fprintf(stderr, " is not in ");
		at_put_esc(stderr, sg->cfg->file);
		fprintf(stderr, ": nothing of it is left out\n");
	}
	at_invalid_report(PROG, sg->invalid);
	rc = 0;
out:
	if (rc == -1)
		fprintf(stderr, PROG ": out of memory\n");
	free(v);
	free(list);
	free(miss);
	at_tab_free(&dom);
	at_tab_free(&pfirst);
	return rc;
}

int
audit_suggest(int argc, char *argv[])
{
	struct at_opts o = { .prog = PROG, .usage = "usage: egressd audit "
	    "suggest [-c FILE] [--phase NAME] [--json] LOG...\n" };
	struct suggest sg;
	struct eg_cfg *cfg = NULL;
	psl_ctx_t *latest;
	const psl_ctx_t *psl;
	uint64_t unparsed = 0;
	int rc;

	memset(&sg, 0, sizeof(sg));
	if ((rc = at_opts_parse(argc, argv, &o)) != -1)
		return rc;
	sg.phase = o.phase;
	if (o.cfgfile != NULL) {
		if ((cfg = at_cfg_load(o.cfgfile)) == NULL)
			return AT_EX_USAGE;
		if (sg.phase != NULL && eg_cfg_phase(cfg, sg.phase) == NULL) {
			fprintf(stderr, PROG ": phase ");
			at_put_esc(stderr, sg.phase);
			fprintf(stderr, " is not in ");
			at_put_esc(stderr, o.cfgfile);
			fputc('\n', stderr);
			eg_cfg_unref(cfg);
			return AT_EX_USAGE;
		}
		sg.cfg = cfg;
	}
	/* the newer of the system's list and the built-in one */
	latest = psl_latest(NULL);
	if ((psl = latest) == NULL && (psl = psl_builtin()) == NULL) {
		fprintf(stderr, PROG ": no public suffix list (libpsl has "
		    "neither a built-in list nor %s)\n", psl_dist_filename());
		eg_cfg_unref(cfg);
		return AT_EX_USAGE;
	}
	rc = at_read_logs(PROG, o.logs, o.nlogs, suggest_line, &sg,
	    &unparsed);
	if (rc == 0 && !sg.oom)
		rc = suggest_report(&sg, psl, o.json, unparsed);
	else if (sg.oom)
		fprintf(stderr, PROG ": out of memory\n");
	at_tab_free(&sg.hosts);
	at_tab_free(&sg.missing);
	psl_free(latest);
	eg_cfg_unref(cfg);
	return rc == 0 && !sg.oom ? AT_EX_OK : AT_EX_USAGE;
}
