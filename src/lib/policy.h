/*
 * policy.h: allowlist patterns and matching.  A phase is a named
 * allowlist; matching a request against it answers allow, host not
 * allowed, or port not allowed, and names the rule that matched.
 * Exact names are found through a hash set and wildcards through a
 * suffix hash, so the cost does not grow with the list.
 */
#ifndef EG_POLICY_H
#define EG_POLICY_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "host.h"

enum eg_rule_kind {
	EG_RULE_EXACT,		/* example.com */
	EG_RULE_SUB,		/* *.example.com: subdomains, not the apex */
	EG_RULE_APEX_SUB,	/* **.example.com: apex and subdomains */
	EG_RULE_V4,		/* 203.0.113.5 or 203.0.113.0/24 */
	EG_RULE_V6		/* [2001:db8::1] or [2001:db8::]/32 */
};

struct eg_rule {
	enum eg_rule_kind kind;
	char		*text;		/* as written in the configuration */
	char		*name;		/* normalised name or suffix (no "*.") */
	size_t		 namelen;
	uint16_t	 port;		/* 0: the phase's ports list applies */
	int		 prefix;	/* CIDR length for V4/V6 */
	union {
		struct in_addr	v4;
		struct in6_addr	v6;
	}		 ip;		/* network address, host bits zero */
};

struct eg_phase_index;			/* opaque lookup structure */

struct eg_phase {
	char			*name;
	int			 report;	/* mode = report */
	char			*hint;		/* added to not_allowed
						   refusals; NULL: none */
	/* budgets (SPEC "Configuration"): a limit counts only when its
	   EG_BUDGET_* bit is in budget_has (0 is a limit too) */
	uint64_t		 budget_up, budget_down, budget_requests;
	unsigned		 budget_has;
	int			 line;		/* where [phase:NAME] was */
	size_t			 nrules;
	struct eg_rule		*rules;
	struct eg_phase_index	*index;		/* built by eg_phase_finish() */
	char			**routes;	/* allow = route:NAME (route.h) */
	int			*route_lines;
	size_t			 nroutes;
	struct eg_mrow		*mrow;		/* its decision counters, by
						   name: set by
						   eg_metrics_register()
						   before the snapshot is
						   used (metrics.c) */
};

#define EG_BUDGET_UP	0x1
#define EG_BUDGET_DOWN	0x2
#define EG_BUDGET_REQ	0x4

enum eg_match {
	EG_MATCH_ALLOW,
	EG_MATCH_NOT_ALLOWED,		/* no rule names this host */
	EG_MATCH_PORT_NOT_ALLOWED	/* a rule names the host, not the port */
};

/*
 * Parse one allowlist pattern (len bytes at s) into *r (strings are
 * allocated; release with eg_rule_clear()).  Returns 0, or -1 with a
 * message in err ("bad pattern '*.com': a wildcard needs two labels").
 */
int		eg_rule_parse(const char *s, size_t len, struct eg_rule *r,
		    struct eg_err *err);
void		eg_rule_clear(struct eg_rule *r);

/* Add a parsed rule to a phase (takes ownership of r's strings). */
int		eg_phase_add(struct eg_phase *p, struct eg_rule *r);
/* Build the lookup index once every rule is added.  0 or -1 (ENOMEM). */
int		eg_phase_finish(struct eg_phase *p);
void		eg_phase_clear(struct eg_phase *p);

/*
 * Match a normalised host and port against a phase.  ports/nports is the
 * default port list for rules without a port.  On EG_MATCH_ALLOW *rule
 * points at the matching rule.  Pure; safe from any thread.
 */
enum eg_match	eg_phase_match(const struct eg_phase *p,
		    const struct eg_host *h, uint16_t port,
		    const uint16_t *ports, size_t nports,
		    const struct eg_rule **rule);
/*
 * The proxy's verdict on the allowlist: eg_phase_match(), except that a
 * phase in report mode lets a miss through (EG_MATCH_ALLOW, *rule NULL,
 * *report 1; else *report 0).  The proxy's decision, its recheck on a
 * phase switch and `egressd audit replay` all decide through it.
 */
enum eg_match	eg_phase_decide(const struct eg_phase *p,
		    const struct eg_host *h, uint16_t port,
		    const uint16_t *ports, size_t nports,
		    const struct eg_rule **rule, int *report);

#endif
