/*
 * test-policy.c: allowlist patterns (every form, good and bad) and their
 * matching, checked both through the hash index and through the linear
 * reference path, which must always agree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "policy.h"
#include "tap.h"

static const uint16_t dports[] = { 443 };
static int disagree;

/* Parse one pattern: 0 or -1; the message lands in lasterr. */
static struct eg_err lasterr;

static int
pat(const char *s, struct eg_rule *r)
{
	struct eg_rule tmp;
	int rc;

	memset(&lasterr, 0, sizeof(lasterr));
	rc = eg_rule_parse(s, strlen(s), r ? r : &tmp, &lasterr);
	if (rc == 0 && r == NULL)
		eg_rule_clear(&tmp);
	return rc;
}

static int
good(const char *s)
{
	return pat(s, NULL) == 0;
}

static int
bad(const char *s)
{
	return pat(s, NULL) == -1;
}

/*
 * Two copies of one phase: ix with an index, lin without (the linear
 * reference).
 */
struct pair {
	struct eg_phase	ix, lin;
};

static void
build(struct pair *pp, const char *const *pats)
{
	struct eg_rule r;
	size_t i;

	memset(pp, 0, sizeof(*pp));
	for (i = 0; pats[i] != NULL; i++) {
		if (pat(pats[i], &r) == -1) {
			diag("cannot parse %s: %s", pats[i], lasterr.msg);
			continue;
		}
		eg_phase_add(&pp->ix, &r);
		pat(pats[i], &r);
		eg_phase_add(&pp->lin, &r);
	}
	if (eg_phase_finish(&pp->ix) == -1)
		diag("eg_phase_finish failed");
}

static void
unbuild(struct pair *pp)
{
	eg_phase_clear(&pp->ix);
	eg_phase_clear(&pp->lin);
}

static const char *lastrule;

/* Match host:port; -1 if host does not parse. */
static int
m(struct pair *pp, const char *host, uint16_t port)
{
	struct eg_host h;
	const struct eg_rule *r1, *r2;
	const char *why;
	enum eg_match a, b;

	lastrule = NULL;
	if (eg_host_parse(host, strlen(host), &h, &why) == -1)
		return -1;
	a = eg_phase_match(&pp->ix, &h, port, dports, 1, &r1);
	b = eg_phase_match(&pp->lin, &h, port, dports, 1, &r2);
	if (a != b || (r1 == NULL) != (r2 == NULL) ||
	    (r1 && strcmp(r1->text, r2->text) != 0)) {
		diag("index and linear disagree on %s:%u", host, port);
		disagree++;
	}
	if (a == EG_MATCH_ALLOW)
		lastrule = r1->text;
	return (int)a;
}

#define ALLOW	EG_MATCH_ALLOW
#define NOTA	EG_MATCH_NOT_ALLOWED
#define NOPORT	EG_MATCH_PORT_NOT_ALLOWED

static void
test_parse(void)
{
	struct eg_rule r;

	/* Good forms and what they parse into. */
	ok(pat("Example.COM.", &r) == 0 && r.kind == EG_RULE_EXACT &&
	    strcmp(r.name, "example.com") == 0 && r.port == 0 &&
	    strcmp(r.text, "Example.COM.") == 0,
	    "exact name normalised, text kept as written");
	eg_rule_clear(&r);
	ok(pat("*.example.com", &r) == 0 && r.kind == EG_RULE_SUB &&
	    strcmp(r.name, "example.com") == 0 && r.namelen == 11,
	    "*.example.com is SUB with suffix example.com");
	eg_rule_clear(&r);
	ok(pat("**.example.com", &r) == 0 && r.kind == EG_RULE_APEX_SUB &&
	    strcmp(r.name, "example.com") == 0,
	    "**.example.com is APEX_SUB");
	eg_rule_clear(&r);
	ok(pat("example.com:8443", &r) == 0 && r.port == 8443 &&
	    r.kind == EG_RULE_EXACT, "name:port");
	eg_rule_clear(&r);
	ok(pat("*.example.com:8443", &r) == 0 && r.port == 8443 &&
	    r.kind == EG_RULE_SUB, "wildcard with port");
	eg_rule_clear(&r);
	ok(pat("203.0.113.5", &r) == 0 && r.kind == EG_RULE_V4 &&
	    r.prefix == 32, "IPv4 literal is a /32");
	eg_rule_clear(&r);
	ok(pat("203.0.113.0/24", &r) == 0 && r.kind == EG_RULE_V4 &&
	    r.prefix == 24, "IPv4 CIDR");
	eg_rule_clear(&r);
	ok(pat("203.0.113.5:8443", &r) == 0 && r.port == 8443 &&
	    r.prefix == 32, "IPv4 literal with port");
	eg_rule_clear(&r);
	ok(pat("[2001:db8::1]", &r) == 0 && r.kind == EG_RULE_V6 &&
	    r.prefix == 128, "IPv6 literal is a /128");
	eg_rule_clear(&r);
	ok(pat("[2001:db8::]/32", &r) == 0 && r.kind == EG_RULE_V6 &&
	    r.prefix == 32, "IPv6 CIDR");
	eg_rule_clear(&r);
	ok(pat("[2001:db8::1]:8443", &r) == 0 && r.port == 8443,
	    "IPv6 literal with port");
	eg_rule_clear(&r);
	ok(good("xn--bcher-kva.example"), "IDN in xn-- form");
	ok(good("localhost"), "single-label exact name");
	ok(good("0.0.0.0/0"), "/0 is in range");
	ok(good("10.0.0.0/8"), "10.0.0.0/8");

	/* Bad forms, each with its message. */
	ok(bad("*.com"), "*.com refused");
	is_str(lasterr.msg, "bad pattern '*.com': a wildcard needs at "
	    "least two labels after it", "*.com message");
	ok(bad("*"), "* refused");
	is_str(lasterr.msg, "bad pattern '*': a wildcard needs at least "
	    "two labels after it", "* message");
	ok(bad("**.com"), "**.com refused");
	ok(bad("**"), "** refused");
	ok(bad("*."), "*. refused");
	ok(bad("a*.b.com"), "a*.b.com refused");
	is_str(lasterr.msg, "bad pattern 'a*.b.com': a wildcard may only "
	    "be the whole first label", "partial-label wildcard message");
	ok(bad("*.*.b.com"), "*.*.b.com refused");
	ok(bad("b.*.com"), "inner wildcard refused");
	ok(bad("***.b.com"), "*** refused");
	ok(bad("10.0.0.1/8"), "host bits set refused");
	is_str(lasterr.msg, "bad pattern '10.0.0.1/8': host bits set "
	    "beyond the prefix length", "host bits message");
	ok(bad("10.0.0.0/33"), "/33 refused");
	ok(bad("10.0.0.0/08"), "leading zero prefix refused");
	ok(bad("10.0.0.0/"), "empty prefix refused");
	ok(bad("[2001:db8::]/129"), "/129 refused");
	ok(bad("[2001:db8::1]/32"), "IPv6 host bits refused");
	ok(bad("2001:db8::1"), "unbracketed IPv6 refused");
	ok(bad("[2001:db8::1"), "missing ] refused");
	ok(bad("[fe80::1%eth0]"), "zone id refused");
	ok(bad("example.com/24"), "prefix on a name refused");
	ok(bad("example.com:0"), "port 0 refused");
	ok(bad("example.com:65536"), "port 65536 refused");
	ok(bad("example.com:"), "empty port refused");
	ok(bad("example.com:08443"), "leading-zero port refused");
	ok(bad("exa mple.com"), "space refused");
	ok(bad("exa_mple.com"), "underscore refused");
	ok(bad("b\xc3\xbc" "cher.example"), "raw UTF-8 refused");
	ok(bad(""), "empty refused");
	ok(bad("-a.example.com"), "leading hyphen refused");
	ok(bad("127.1"), "short IPv4 spelling refused");
	ok(bad("0177.0.0.1"), "octal IPv4 refused");
	ok(bad("*.10.0.0.0"), "wildcard on an address refused");
	ok(bad("a..b.com"), "empty label refused");
	ok(bad("[2001:db8::1]x"), "junk after ] refused");
	ok(eg_rule_parse("example.com\0evil", 16, &r, &lasterr) == -1,
	    "embedded NUL refused");
	ok(strstr(lasterr.msg, "\\x00") != NULL, "NUL shown escaped");
}

static void
test_match(void)
{
	static const char *const pats[] = {
		"allowed.test",
		"*.sub.test",
		"**.apex.test",
		"ported.test:8443",
		"multi.test:8443",
		"multi.test",
		"203.0.113.0/24",
		"198.51.100.7:8080",
		"[2001:db8::]/32",
		"[::ffff:127.0.0.1]",
		NULL
	};
	struct pair pp;

	build(&pp, pats);
	is_int(m(&pp, "allowed.test", 443), ALLOW, "exact allowed");
	is_int(m(&pp, "ALLOWED.Test", 443), ALLOW, "case-insensitive");
	is_int(m(&pp, "allowed.test.", 443), ALLOW, "trailing dot");
	is_str(lastrule, "allowed.test", "rule text reported");
	is_int(m(&pp, "allowed.test", 80), NOPORT, "exact, other port");
	is_int(m(&pp, "www.allowed.test", 443), NOTA,
	    "exact does not cover subdomains");
	is_int(m(&pp, "evilallowed.test", 443), NOTA,
	    "evilallowed.test is not allowed.test");
	is_int(m(&pp, "allowed.test.evil.test", 443), NOTA,
	    "allowed.test.evil.test is not allowed.test");
	is_int(m(&pp, "a.sub.test", 443), ALLOW, "*. covers a subdomain");
	is_int(m(&pp, "a.b.c.sub.test", 443), ALLOW, "*. covers any depth");
	is_int(m(&pp, "sub.test", 443), NOTA, "*. does not cover the apex");
	is_int(m(&pp, "evilsub.test", 443), NOTA, "*. suffix trick");
	is_int(m(&pp, "sub.test.evil.test", 443), NOTA, "*. prefix trick");
	is_int(m(&pp, "a.sub.test", 80), NOPORT, "*. other port");
	is_int(m(&pp, "apex.test", 443), ALLOW, "** covers the apex");
	is_int(m(&pp, "x.y.apex.test", 443), ALLOW, "** covers subdomains");
	is_int(m(&pp, "evilapex.test", 443), NOTA, "** suffix trick");
	is_int(m(&pp, "ported.test", 8443), ALLOW, "port rule, its port");
	is_int(m(&pp, "ported.test", 443), NOPORT,
	    "port rule replaces the ports list");
	is_int(m(&pp, "multi.test", 8443), ALLOW, "multi 8443");
	is_str(lastrule, "multi.test:8443", "first rule in file order");
	is_int(m(&pp, "multi.test", 443), ALLOW, "multi 443");
	is_str(lastrule, "multi.test", "second rule when the first's port "
	    "differs");
	is_int(m(&pp, "multi.test", 22), NOPORT, "multi 22");
	is_int(m(&pp, "203.0.113.99", 443), ALLOW, "v4 CIDR");
	is_int(m(&pp, "203.0.114.1", 443), NOTA, "outside v4 CIDR");
	is_int(m(&pp, "198.51.100.7", 8080), ALLOW, "v4 literal with port");
	is_int(m(&pp, "198.51.100.7", 443), NOPORT, "v4 literal other port");
	is_int(m(&pp, "[2001:db8:1::5]", 443), ALLOW, "v6 CIDR");
	is_int(m(&pp, "[2001:DB8::5]", 443), ALLOW, "v6 upper case");
	is_int(m(&pp, "[2001:db9::5]", 443), NOTA, "outside v6 CIDR");
	is_int(m(&pp, "127.0.0.1", 443), NOTA,
	    "a mapped v6 rule does not cover the v4 address");
	is_int(m(&pp, "[::ffff:127.0.0.1]", 443), ALLOW,
	    "mapped v6 rule covers the mapped literal");
	is_int(m(&pp, "[::ffff:203.0.113.5]", 443), NOTA,
	    "a v4 CIDR does not cover the mapped v6 form");
	is_int(m(&pp, "nothing.test", 443), NOTA, "unlisted");
	is_int(m(&pp, "test", 443), NOTA, "bare TLD");
	unbuild(&pp);
}

static void
test_order_and_empty(void)
{
	static const char *const p1[] = {
		"*.x.test:8443", "**.x.test", "a.x.test:9000", NULL
	};
	static const char *const none[] = { NULL };
	struct pair pp;

	build(&pp, p1);
	is_int(m(&pp, "a.x.test", 8443), ALLOW, "overlap 8443");
	is_str(lastrule, "*.x.test:8443", "first of overlapping rules");
	is_int(m(&pp, "a.x.test", 443), ALLOW, "overlap 443");
	is_str(lastrule, "**.x.test", "APEX_SUB via ports list");
	is_int(m(&pp, "a.x.test", 9000), ALLOW, "exact with its port");
	is_str(lastrule, "a.x.test:9000", "exact rule reported");
	is_int(m(&pp, "x.test", 8443), NOPORT,
	    "apex: *. skipped, ** names it but not this port");
	unbuild(&pp);

	build(&pp, none);
	is_int(m(&pp, "allowed.test", 443), NOTA, "empty phase allows none");
	is_int(m(&pp, "10.0.0.1", 443), NOTA, "empty phase, address");
	unbuild(&pp);
}

/* Many rules, random hosts: index and linear must agree everywhere. */
static void
test_bulk(void)
{
	static char buf[20000][40];
	const char *pats[20001];
	struct pair pp;
	size_t i, n = 0;
	unsigned seed = 12345;
	char host[64];
	int allowed = 0;

	for (i = 0; i < 20000; i++) {
		seed = seed * 1103515245 + 12345;
		switch (seed >> 28 & 3) {
		case 0:
			snprintf(buf[n], sizeof(buf[n]), "h%zu.d%u.test",
			    i % 5000, (seed >> 8) % 50);
			break;
		case 1:
			snprintf(buf[n], sizeof(buf[n]), "*.d%u.test",
			    (seed >> 8) % 100);
			break;
		case 2:
			snprintf(buf[n], sizeof(buf[n]), "**.e%u.test:%u",
			    (seed >> 8) % 100, 443 + (seed >> 20) % 3);
			break;
		default:
			snprintf(buf[n], sizeof(buf[n]), "10.%u.%u.0/24",
			    (seed >> 8) % 4, (seed >> 16) % 256);
			break;
		}
		pats[n] = buf[n];
		n++;
	}
	pats[n] = NULL;
	build(&pp, pats);
	is_int(pp.ix.nrules, 20000, "20000 rules added");
	disagree = 0;
	for (i = 0; i < 3000; i++) {
		seed = seed * 1103515245 + 12345;
		switch (i % 4) {
		case 0:
			snprintf(host, sizeof(host), "h%u.d%u.test",
			    (seed >> 8) % 5000, (seed >> 20) % 120);
			break;
		case 1:
			snprintf(host, sizeof(host), "x.e%u.test",
			    (seed >> 8) % 120);
			break;
		case 2:
			snprintf(host, sizeof(host), "e%u.test",
			    (seed >> 8) % 120);
			break;
		default:
			snprintf(host, sizeof(host), "10.%u.%u.9",
			    (seed >> 8) % 5, (seed >> 16) % 256);
			break;
		}
		if (m(&pp, host, (uint16_t)(443 + seed % 3)) == ALLOW)
			allowed++;
	}
	is_int(disagree, 0, "index agrees with linear on 3000 lookups");
	ok(allowed > 100 && allowed < 2900, "a mix of verdicts (%d allowed)",
	    allowed);
	unbuild(&pp);
}

int
main(void)
{
	test_parse();
	test_match();
	test_order_and_empty();
	is_int(disagree, 0, "index and linear agree on every case above");
	test_bulk();
	return done_testing();
}
