/*
 * test-cfg.c: the configuration loader.  A good file with every key, each
 * kind of bad file with its exact messages and line numbers, the inih
 * traps (empty sections, long lines, inline comments, continuation
 * lines, long names), defaults, command-line overrides, the embedded
 * default, and that every key is documented.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "host.h"
#include "module.h"
#include "policy.h"
#include "tap.h"

static const char *srcdir;

static char *
path_of(const char *rel)
{
	static char buf[4][1024];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", srcdir, rel);
	return buf[i];
}

static char *
slurp(const char *path)
{
	FILE *f;
	char *buf;
	long n;

	f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static struct eg_cfg *
parse_str(const char *text, struct eg_errs *errs)
{
	return eg_cfg_parse(text, strlen(text), "t.ini", errs);
}

/*
 * Load tests/data/cfg/NAME, which must fail with exactly the messages in
 * want[] (each without the "FILE:" prefix), in that order.
 */
static void
bad_file(const char *name, const char *const *want)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	char rel[256], full[1200];
	const char *path;
	size_t i, n;

	snprintf(rel, sizeof(rel), "tests/data/cfg/%s", name);
	path = path_of(rel);
	cfg = eg_cfg_load(path, &errs);
	ok(cfg == NULL, "%s is refused", name);
	eg_cfg_unref(cfg);
	for (n = 0; want[n] != NULL; n++)
		;
	is_int(errs.n, n, "%s: %zu errors", name, n);
	for (i = 0; i < n; i++) {
		snprintf(full, sizeof(full), "%s:%s", path, want[i]);
		is_str(i < errs.n ? errs.msg[i] : NULL, full, "%s: %s", name,
		    want[i]);
	}
	for (i = n; i < errs.n; i++)
		diag("extra: %s", errs.msg[i]);
	eg_errs_clear(&errs);
}

static int
match(const struct eg_cfg *cfg, const char *phase, const char *host,
    uint16_t port)
{
	const struct eg_phase *p;
	const struct eg_rule *r;
	struct eg_host h;
	const char *why;

	p = eg_cfg_phase(cfg, phase);
	if (p == NULL || eg_host_parse(host, strlen(host), &h, &why) == -1)
		return -1;
	return (int)eg_phase_match(p, &h, port, cfg->ports, cfg->nports, &r);
}

/*
 * Lines longer than inih's 200-byte buffer are read whole (inih r55
 * would split them): a 1,500-byte allow line adds every host on it.
 */
static void
long_lines(void)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	const struct eg_phase *p;
	size_t i;

	cfg = eg_cfg_load(path_of("tests/data/cfg/long-line.ini"), &errs);
	ok(cfg != NULL && errs.n == 0, "long-line.ini loads");
	for (i = 0; i < errs.n; i++)
		diag("error: %s", errs.msg[i]);
	p = cfg ? eg_cfg_phase(cfg, "a") : NULL;
	ok(p != NULL, "phase a exists");
	if (p != NULL)
		diag("phase a has %zu rules", p->nrules);
	is_int(p ? match(cfg, "a", "host000.example", 443) : -1,
	    EG_MATCH_ALLOW, "first host of the long line");
	is_int(p ? match(cfg, "a", "host099.example", 443) : -1,
	    EG_MATCH_ALLOW, "last host of the long line");
	is_int(p ? match(cfg, "a", "after.example", 443) : -1,
	    EG_MATCH_ALLOW, "the line after it is read normally");
	is_int(p ? match(cfg, "a", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.example",
	    443) : -1, EG_MATCH_ALLOW, "long line with an inline comment");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
}


static void
test_good(void)
{
	size_t i;
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	const struct eg_phase *p;
	const struct eg_pin *pin;
	struct sockaddr_in6 *sin6;
	struct eg_host h;
	const char *why;

	cfg = eg_cfg_load(path_of("tests/data/cfg/good.ini"), &errs);
	ok(cfg != NULL, "good.ini parses");
	if (cfg == NULL) {
		diag("%s", errs.n ? errs.msg[0] : "?");
		eg_errs_clear(&errs);
		return;
	}
	is_int(errs.n, 0, "good.ini: no errors");
	is_str(cfg->file, path_of("tests/data/cfg/good.ini"), "file name");
	is_int(cfg->refs, 1, "refs = 1");
	is_int(cfg->nlisten, 3, "three listeners");
	is_int(cfg->listen[0].kind, EG_LISTEN_TCP, "listen 0 tcp");
	is_str(cfg->listen[0].text, "127.0.0.1:3128", "listen 0 text");
	is_int(cfg->listen[0].line, 3, "listen 0 line");
	is_int(cfg->listen[0].ss.ss_family, AF_INET, "listen 0 family");
	is_int(ntohs(((struct sockaddr_in *)&cfg->listen[0].ss)->sin_port),
	    3128, "listen 0 port");
	sin6 = (struct sockaddr_in6 *)&cfg->listen[1].ss;
	is_int(sin6->sin6_family, AF_INET6, "listen 1 IPv6");
	is_int(ntohs(sin6->sin6_port), 3129, "listen 1 port");
	ok(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr), "listen 1 is ::1");
	is_int(cfg->listen[2].kind, EG_LISTEN_UNIX, "unix listener");
	is_str(cfg->listen[2].text, "/tmp/egressd-test/proxy.sock",
	    "unix path");
	is_int(cfg->unix_mode, 0666, "unix_mode");
	is_str(cfg->admin, "127.0.0.1:9090", "admin");
	is_int(cfg->admin_mode, 0640, "admin_mode");
	is_str(cfg->admin_token_file, "/etc/egressd/admin.token",
	    "admin_token_file");
	is_int(cfg->admin_max_connections, 300, "admin_max_connections");
	is_int(cfg->admin_idle_timeout, 9, "admin_idle_timeout");
	is_int(cfg->audit_ring, 2048, "audit_ring");
	is_str(cfg->audit_log, "/var/log/egressd/audit.log", "audit_log");
	is_int(cfg->audit_log_set, 1, "audit_log given (egressd run uses it)");
	is_int(cfg->audit_json, 1, "audit_format json");
	is_str(cfg->phase, "agent", "phase");
	is_int(cfg->nports, 2, "ports deduplicated");
	ok(cfg->nports == 2 && cfg->ports[0] == 443 && cfg->ports[1] == 8443,
	    "ports 443 8443");
	is_int(cfg->deny_private, 0, "deny_private no");
	is_int(cfg->plain_http, 0, "plain_http off");
	is_int(cfg->close_on_phase_change, 0, "on_phase_change keep");
	is_int(cfg->sni_check, 0, "sni_check false");
	is_int(cfg->connect_timeout_ms, 5000, "connect_timeout in ms");
	is_int(cfg->header_timeout_ms, 7000, "header_timeout in ms");
	is_int(cfg->idle_timeout_ms, 600000, "idle_timeout in ms");
	is_int(cfg->fin_timeout_ms, 20000, "fin_timeout in ms");
	is_int(cfg->max_connections, 100, "max_connections");
	is_int(cfg->max_connections_per_client, 10,
	    "max_connections_per_client");
	is_int(cfg->max_header_bytes, 8192, "max_header_bytes");
	is_str(cfg->dns_servers,
	    "127.0.0.53:53,127.0.0.1:5353,[::1]:53,[::1]:53",
	    "dns_servers normalised for c-ares");
	is_int(cfg->dns_timeout_ms, 3000, "dns_timeout in ms");
	is_int(cfg->dns_tries, 3, "dns_tries");
	is_int(cfg->workers, 4, "workers");

	is_int(cfg->npins, 2, "two pins");
	eg_host_parse("api.example.test", 16, &h, &why);
	pin = eg_cfg_pin(cfg, &h);
	ok(pin != NULL && pin->naddr == 1 &&
	    pin->addr[0].ss_family == AF_INET, "pin normalised, found");
	eg_host_parse("Dual.Example.Test", 17, &h, &why);
	pin = eg_cfg_pin(cfg, &h);
	ok(pin != NULL && pin->naddr == 3 &&
	    pin->addr[1].ss_family == AF_INET6 &&
	    pin->addr[2].ss_family == AF_INET6, "pin with three addresses");
	eg_host_parse("other.example.test", 18, &h, &why);
	ok(eg_cfg_pin(cfg, &h) == NULL, "unpinned name");

	is_int(cfg->nphases, 3, "three phases");
	p = eg_cfg_phase(cfg, "setup");
	ok(p != NULL && p->nrules == 5, "setup: repeated allow lines add");
	ok(p != NULL && p->line == 37 && !p->report, "setup line, enforce");
	p = eg_cfg_phase(cfg, "agent");
	ok(p != NULL && p->report == 1 && p->nrules == 1, "agent report");
	p = eg_cfg_phase(cfg, "judge");
	ok(p != NULL && p->nrules == 0 && p->line == 46,
	    "empty [phase:judge] exists");
	ok(eg_cfg_phase(cfg, "nope") == NULL, "unknown phase");
	is_int(match(cfg, "setup", "PKG.Example.", 443), EG_MATCH_ALLOW,
	    "setup allows pkg.example");
	is_int(match(cfg, "setup", "pkg.example", 8443), EG_MATCH_ALLOW,
	    "ports list 8443 applies");
	is_int(match(cfg, "setup", "pkg.example", 80),
	    EG_MATCH_PORT_NOT_ALLOWED, "port 80 not in the ports list");
	is_int(match(cfg, "setup", "static.crates.example", 443), EG_MATCH_ALLOW,
	    "*.crates.example");
	is_int(match(cfg, "setup", "crates.example", 443), EG_MATCH_NOT_ALLOWED,
	    "*.crates.example not the apex");
	is_int(match(cfg, "setup", "golang.example", 443), EG_MATCH_ALLOW,
	    "**.golang.example apex");
	is_int(match(cfg, "judge", "pkg.example", 443), EG_MATCH_NOT_ALLOWED,
	    "judge allows nothing");
	/* the whole-file check reads the TCP admin's token file, which
	 * good.ini names but this machine need not have */
	eg_cfg_check(cfg, &errs);
	ok(errs.n == 0 || (errs.n == 1 && strstr(errs.msg[0],
	    ":9: admin_token_file /etc/egressd/admin.token: ") != NULL),
	    "eg_cfg_check passes, but for the token file it reads");
	for (i = 0; i < errs.n; i++)
		diag("%s", errs.msg[i]);
	eg_errs_clear(&errs);

	eg_cfg_ref(cfg);
	is_int(cfg->refs, 2, "ref");
	eg_cfg_unref(cfg);
	is_int(cfg->refs, 1, "unref");
	eg_cfg_unref(cfg);
	eg_cfg_unref(NULL);
	eg_errs_clear(&errs);
}

static void
test_bad_files(void)
{
	static const char *const unknown_key[] = {
		"3: unknown key 'listn' in [proxy]",
		"7: unknown key 'alow' in [phase:a]",
		NULL
	};
	const char *sections[] = {
		"3: duplicate section [proxy] (first at line 1)",
		"6: duplicate section [phase:a] (first at line 5)",
		"8: [record]: module not compiled in "
		    "(./configure --enable-record)",
		"10: [replay:step1]: module not compiled in "
		    "(./configure --enable-replay)",
		"11: [sandbox]: module not compiled in "
		    "(./configure --enable-sandbox)",
		"12: unknown section [nonsense]",
		"13: bad phase name 'bad name' (letters, digits, '.', '_' "
		    "and '-', at most 64)",
		"14: bad phase name '' (letters, digits, '.', '_' and '-', "
		    "at most 64)",
		"15: bad section header: missing ']'",
		NULL
	};
	static const char *const values[] = {
		"2: bad value 'localhost:3128' for listen: expected "
		    "IPv4:PORT or [IPv6]:PORT",
		"3: bad value '127.0.0.1' for listen: expected IPv4:PORT or "
		    "[IPv6]:PORT",
		"4: bad value '[::1]3128' for listen: expected IPv4:PORT or "
		    "[IPv6]:PORT",
		"5: bad value '0999' for unix_mode: expected an octal mode "
		    "such as 0660",
		"6: bad value 'admin.sock' for admin: expected a socket path "
		    "or ADDR:PORT",
		"7: bad value 'xml' for audit_format: expected text or json",
		"8: bad value '0' for ports: ports are 1-65535",
		"9: bad value 'maybe' for deny_private: expected yes or no",
		"10: bad value 'drop' for on_phase_change: expected close or "
		    "keep",
		"11: bad value '0' for connect_timeout: expected seconds "
		    "from 1 to 86400",
		"12: bad value '86401' for header_timeout: expected seconds "
		    "from 1 to 86400",
		"13: bad value '-1' for idle_timeout: expected seconds from "
		    "1 to 86400",
		"14: bad value '1000001' for max_connections: expected a "
		    "number from 1 to 1000000",
		"15: bad value '1023' for max_header_bytes: expected a "
		    "number from 1024 to 1048576",
		"16: bad value 'dns.example:53' for dns_servers: expected "
		    "IP[:PORT] or [IPv6]:PORT",
		"17: bad value '257' for workers: expected a number from 0 "
		    "to 256",
		"18: bad value '12x' for audit_ring: expected a number from "
		    "0 to 1048576",
		"19: bad value '' for audit_log: empty value",
		"21: bad value 'loud' for mode: expected enforce or report",
		NULL
	};
	static const char *const patterns[] = {
		"2: bad pattern '*.com': a wildcard needs at least two "
		    "labels after it",
		"3: bad pattern 'a*.b.com': a wildcard may only be the whole "
		    "first label",
		"5: bad pattern '10.0.0.1/8': host bits set beyond the "
		    "prefix length",
		"5: bad pattern '[2001:db8::]/129': bad prefix length "
		    "(0-128)",
		NULL
	};
	static const char *const dupkey[] = {
		"4: duplicate key 'workers' in [proxy] (first at line 2)",
		"9: duplicate key 'mode' in [phase:a] (first at line 6)",
		NULL
	};
	static const char *const nophase[] = {
		"3: no phase defined: add a [phase:NAME] section",
		NULL
	};
	static const char *const phasemissing[] = {
		"3: phase 'agnet' does not exist",
		NULL
	};
	static const char *const syntax[] = {
		"1: key 'stray' outside any section",
		"3: expected 'key = value' or '[section]'",
		"4: bad key name ''",
		"5: bad key name 'bad key'",
		NULL
	};
	static const char *const hosts[] = {
		"4: bad address 'not-an-ip' for 'b.example' in [hosts]: "
		    "expected an IPv4 or IPv6 address",
		"5: no address for 'c.example' in [hosts]",
		"6: bad host name '127.0.0.1' in [hosts]: an address needs "
		    "no pinning",
		"3: duplicate host 'a.example' in [hosts] (first at line 2)",
		"7: duplicate host 'a.example' in [hosts] (first at line 2)",
		NULL
	};
	static const char *const admin[] = {
		"2: admin on TCP (127.0.0.1:9090) requires admin_token_file",
		NULL
	};
	struct eg_errs errs = { 0 };
	char want[1200];

	bad_file("bad-unknown-key.ini", unknown_key);
	/* a built record module has a [record] section without keys */
	if (eg_module_find("record", 6)->mod != NULL)
		sections[2] = "9: unknown key 'chain' in [record]";
	/* a built replay module has no sections: [replay:x] is unknown */
	if (eg_module_find("replay", 6)->mod != NULL)
		sections[3] = "10: unknown section [replay:step1]";
	/* a built sandbox module takes its (empty) [sandbox] section */
	if (eg_module_find("sandbox", 7)->mod != NULL)
		memmove(&sections[4], &sections[5], sizeof(sections) -
		    5 * sizeof(sections[0]));
	bad_file("bad-sections.ini", sections);
	bad_file("bad-values.ini", values);
	bad_file("bad-patterns.ini", patterns);
	bad_file("bad-dup-key.ini", dupkey);
	bad_file("bad-no-phase.ini", nophase);
	bad_file("bad-phase-missing.ini", phasemissing);
	bad_file("bad-syntax.ini", syntax);
	bad_file("bad-hosts.ini", hosts);
	bad_file("bad-admin.ini", admin);
	long_lines();

	ok(eg_cfg_load(path_of("tests/data/cfg/does-not-exist.ini"),
	    &errs) == NULL, "missing file refused");
	snprintf(want, sizeof(want), "%s: cannot open: No such file or "
	    "directory", path_of("tests/data/cfg/does-not-exist.ini"));
	is_str(errs.n ? errs.msg[0] : NULL, want, "cannot open message");
	eg_errs_clear(&errs);
	ok(eg_cfg_load(path_of("tests/data/cfg"), &errs) == NULL,
	    "a directory is refused");
	snprintf(want, sizeof(want), "%s: cannot read: Is a directory",
	    path_of("tests/data/cfg"));
	is_str(errs.n ? errs.msg[0] : NULL, want, "cannot read message");
	eg_errs_clear(&errs);
}

static void
test_defaults(void)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;

	cfg = parse_str("[phase:only]\n", &errs);
	ok(cfg != NULL, "a lone empty phase is a valid file");
	if (cfg == NULL)
		return;
	is_str(cfg->file, "t.ini", "file name as given");
	is_str(cfg->phase, "only", "phase defaults to the first phase");
	is_int(cfg->nlisten, 1, "one default listener");
	is_str(cfg->listen[0].text, "127.0.0.1:3128", "default 127.0.0.1:3128");
	is_int(cfg->listen[0].ss.ss_family, AF_INET, "default is parsed");
	is_int(cfg->unix_mode, 0660, "unix_mode 0660");
	is_int(cfg->admin_mode, 0600, "admin_mode 0600");
	is_int(cfg->admin_max_connections, 1024, "admin_max_connections 1024");
	is_int(cfg->admin_idle_timeout, 5, "admin_idle_timeout 5");
	ok(cfg->admin == NULL && cfg->admin_token_file == NULL &&
	    cfg->dns_servers == NULL, "admin, token, dns: no default");
	is_int(cfg->audit_ring, 1024, "audit_ring 1024");
	is_str(cfg->audit_log, "-", "audit_log -");
	is_int(cfg->audit_log_set, 0, "audit_log is the default, not given");
	is_int(cfg->audit_json, 0, "audit_format text");
	ok(cfg->nports == 1 && cfg->ports[0] == 443, "ports 443");
	ok(cfg->deny_private && cfg->plain_http && cfg->sni_check &&
	    cfg->close_on_phase_change, "booleans default on, close");
	ok(cfg->connect_timeout_ms == 10000 && cfg->header_timeout_ms ==
	    10000 && cfg->idle_timeout_ms == 300000, "timeouts 10/10/300");
	is_int(cfg->fin_timeout_ms, 10000, "fin_timeout 10 s by default");
	ok(cfg->max_connections == 4096 &&
	    cfg->max_connections_per_client == 256, "connection limits");
	is_int(cfg->max_header_bytes, 16384, "max_header_bytes 16384");
	is_int(cfg->workers, 0, "workers 0");
	ok(cfg->dns_timeout_ms == 5000 && cfg->dns_tries == 2,
	    "dns_timeout 5, dns_tries 2");
	ok(!cfg->audit_chain && cfg->audit_key == NULL &&
	    cfg->checkpoint_lines == 1000 &&
	    cfg->checkpoint_interval_ms == 60000,
	    "record keys: chain off, no key, checkpoints 1000 lines / 60 s");
	eg_cfg_unref(cfg);

	/* the record module's keys: parsed with it, refused without */
	cfg = parse_str("[proxy]\naudit_chain = yes\naudit_key = /k\n"
	    "checkpoint_lines = 5\ncheckpoint_interval = 2\n[phase:a]\n",
	    &errs);
	if (eg_module_audit_ops() != NULL)
		ok(cfg != NULL && cfg->audit_chain &&
		    strcmp(cfg->audit_key, "/k") == 0 &&
		    cfg->checkpoint_lines == 5 &&
		    cfg->checkpoint_interval_ms == 2000,
		    "audit_chain, audit_key, checkpoint_lines/interval parse");
	else
		ok(cfg == NULL && errs.n == 2 && strcmp(errs.msg[0],
		    "t.ini:2: audit_chain: the record module is not compiled "
		    "in (./configure --enable-record)") == 0,
		    "audit_chain = yes without the record module: an error");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
	cfg = parse_str("[proxy]\naudit_chain = no\ncheckpoint_lines = 0\n"
	    "[phase:a]\n", &errs);
	ok(cfg == NULL && errs.n == 1 && strstr(errs.msg[0],
	    "t.ini:3: bad value '0' for checkpoint_lines") != NULL,
	    "checkpoint_lines = 0 is refused; audit_chain = no is fine "
	    "either way");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);

	cfg = parse_str("[phase:b]\n[phase:a]\n[proxy]\nunix = /tmp/x.sock\n",
	    &errs);
	ok(cfg != NULL && cfg->nlisten == 1 &&
	    cfg->listen[0].kind == EG_LISTEN_UNIX,
	    "a unix listener alone: no default TCP listener");
	ok(cfg != NULL && strcmp(cfg->phase, "b") == 0,
	    "first phase in file order");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
}

static void
test_syntax(void)
{
	size_t i;
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	const struct eg_phase *p;
	struct eg_host h;
	const char *why;
	char buf[2048], name[80];

	/* Comments of every kind, CRLF, BOM, indented keys. */
	cfg = parse_str("\xef\xbb\xbf; leading comment\r\n"
	    "# hash comment\r\n"
	    "   ; indented comment\r\n"
	    "[phase:a]   ; comment after a header\r\n"
	    "allow = a.example ; inline comment\r\n"
	    "  allow = b.example\t;tab comment\r\n"
	    "\tallow=c.example\r\n"
	    "mode = report;\r\n", &errs);
	ok(cfg == NULL, "';' without whitespace is part of the value");
	ok(errs.n == 1 && strcmp(errs.msg[0], "t.ini:8: bad value "
	    "'report;' for mode: expected enforce or report") == 0,
	    "... reported at line 8");
	eg_errs_clear(&errs);

	cfg = parse_str("\xef\xbb\xbf[phase:a]\r\n"
	    "allow = a.example ; inline comment\r\n"
	    "  allow = b.example\t;tab comment\r\n"
	    "\tallow=c.example\r\n", &errs);
	ok(cfg != NULL, "BOM, CRLF, inline comments, indentation");
	p = cfg ? eg_cfg_phase(cfg, "a") : NULL;
	ok(p != NULL && p->nrules == 3,
	    "indented lines are keys, not continuations");
	ok(p != NULL && p->nrules == 3 &&
	    strcmp(p->rules[1].text, "b.example") == 0,
	    "inline comment stripped from the value");
	eg_cfg_unref(cfg);

	/* A CRLF file reads as the same file with LF: blank lines, blank
	 * lines with spaces, comments and a last line without a newline. */
	cfg = parse_str("[proxy]\r\nlisten = 127.0.0.1:3128\r\n"
	    "\r\n"
	    "[hosts]\r\n"
	    "a.example = 192.0.2.1\r\n"
	    "   \r\n"
	    "\t\r\n"
	    "; comment\r\n"
	    "\r\n"
	    "[phase:a]\r\n"
	    "\r\n"
	    "allow = a.example b.example\r\n"
	    "\r\n"
	    "[phase:b]\r\n"
	    "allow = c.example", &errs);
	ok(cfg != NULL && errs.n == 0, "CRLF file with blank lines loads");
	for (i = 0; i < errs.n; i++)
		diag("error: %s", errs.msg[i]);
	p = cfg ? eg_cfg_phase(cfg, "a") : NULL;
	ok(p != NULL && p->nrules == 2 &&
	    strcmp(p->rules[1].text, "b.example") == 0,
	    "CRLF: values carry no CR");
	ok(cfg != NULL && eg_cfg_phase(cfg, "b") != NULL,
	    "CRLF: the last section is read");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
	cfg = parse_str("[phase:a]\r\n\r\nallow = a.example\r\nbogus\r\n",
	    &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0], "t.ini:4: "
	    "expected 'key = value' or '[section]'") == 0,
	    "CRLF: a real error is still reported, at its line");
	eg_errs_clear(&errs);
	cfg = parse_str("[phase:a]\r\nallow = a.ex\rample\r\n", &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0], "t.ini:2: "
	    "control character in line") == 0,
	    "a CR that does not end a line is still a control character");
	eg_errs_clear(&errs);
	cfg = parse_str("[phase:a]\nallow = a.ex\177ample\n", &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0], "t.ini:2: "
	    "control character in line") == 0,
	    "DEL is a control character too (as in replay plans)");
	eg_errs_clear(&errs);
	cfg = parse_str("[phase:a]\nallow = a.ex\n[proxy\nbogus = 1\n", &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0], "t.ini:3: "
	    "bad section header: missing ']'") == 0,
	    "the keys after a refused section header are skipped, not "
	    "given to the section before it");
	eg_errs_clear(&errs);

	cfg = parse_str("", &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0],
	    "t.ini:1: no phase defined: add a [phase:NAME] section") == 0,
	    "empty text: no phase");
	eg_errs_clear(&errs);

	cfg = eg_cfg_parse("[phase:a]\nallow = a.ex\0ample\nallow = b.e\n",
	    36, "t.ini", &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0],
	    "t.ini:2: control character in line") == 0,
	    "NUL byte refused with its line");
	eg_errs_clear(&errs);

	cfg = eg_cfg_parse("[phase:a]\nallow = a.example", 27, "t.ini",
	    &errs);
	ok(cfg != NULL && cfg->phases[0].nrules == 1,
	    "last line without newline, no NUL after the text");
	eg_cfg_unref(cfg);

	/* A [hosts] name longer than inih's 49-byte names. */
	memset(name, 'a', 60);
	memcpy(name + 60, ".example", 9);
	snprintf(buf, sizeof(buf), "[hosts]\n%s = 127.0.0.1\n[phase:a]\n",
	    name);
	cfg = parse_str(buf, &errs);
	ok(cfg != NULL && cfg->npins == 1 &&
	    strcmp(cfg->pins[0].name, name) == 0, "68-byte host name kept");
	eg_host_parse(name, strlen(name), &h, &why);
	ok(cfg != NULL && eg_cfg_pin(cfg, &h) != NULL, "and found");
	eg_cfg_unref(cfg);

	snprintf(buf, sizeof(buf), "[proxy]\nworkers_%s = 1\n[phase:a]\n",
	    name);
	cfg = parse_str(buf, &errs);
	snprintf(buf, sizeof(buf), "t.ini:2: unknown key 'workers_%s' in "
	    "[proxy]", name);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0], buf) == 0,
	    "long unknown key named in full");
	eg_errs_clear(&errs);

	/* Errors keep coming after the first. */
	cfg = parse_str("[proxy]\nx = 1\ny = 2\n[phase:a]\nallow = *\n"
	    "z = 3\n", &errs);
	is_int(errs.n, 4, "every error collected");
	eg_errs_clear(&errs);

	/* Empty allow adds nothing; allow outside a phase is unknown. */
	cfg = parse_str("[phase:a]\nallow =\n", &errs);
	ok(cfg != NULL && cfg->phases[0].nrules == 0, "empty allow");
	eg_cfg_unref(cfg);
	cfg = parse_str("[proxy]\nallow = x.example\n[phase:a]\n", &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0],
	    "t.ini:2: unknown key 'allow' in [proxy]") == 0,
	    "allow in [proxy] is unknown");
	eg_errs_clear(&errs);

	cfg = parse_str("[proxy]\nunix_mode = 600\nadmin = /run/a.sock\n"
	    "[phase:a]\n", &errs);
	ok(cfg != NULL && cfg->unix_mode == 0600, "mode without leading 0");
	ok(cfg != NULL && strcmp(cfg->admin, "/run/a.sock") == 0,
	    "admin on a Unix socket needs no token");
	eg_cfg_unref(cfg);
}

static void
test_override(void)
{
	struct eg_errs errs = { 0 };
	struct eg_err err;
	struct eg_cfg *cfg;

	cfg = parse_str("[proxy]\nlisten = 127.0.0.1:1000\n"
	    "listen = 127.0.0.1:1001\nunix = /tmp/a.sock\n"
	    "[phase:a]\n[phase:b]\n", &errs);
	if (cfg == NULL) {
		ok(0, "override base parses");
		return;
	}
	is_int(eg_cfg_override(cfg, "listen", "[::1]:2000", &err), 0,
	    "override listen");
	is_int(cfg->nlisten, 2, "file TCP listeners replaced");
	ok(cfg->listen[0].kind == EG_LISTEN_UNIX &&
	    strcmp(cfg->listen[1].text, "[::1]:2000") == 0 &&
	    cfg->listen[1].line == 0, "unix kept, new one from line 0");
	is_int(eg_cfg_override(cfg, "listen", "127.0.0.1:2001", &err), 0,
	    "second listen");
	is_int(cfg->nlisten, 3, "second -l adds");
	is_int(eg_cfg_override(cfg, "unix", "/tmp/b.sock", &err), 0,
	    "override unix");
	ok(cfg->nlisten == 3 && strcmp(cfg->listen[2].text, "/tmp/b.sock")
	    == 0, "file unix listener replaced");
	is_int(eg_cfg_override(cfg, "listen", "nope", &err), -1,
	    "bad listen override");
	is_str(err.msg, "command line: bad value 'nope' for listen: "
	    "expected IPv4:PORT or [IPv6]:PORT", "its message");
	is_int(cfg->nlisten, 3, "a bad override changes nothing");
	is_int(eg_cfg_override(cfg, "phase", "b", &err), 0, "phase");
	is_str(cfg->phase, "b", "phase set");
	is_int(eg_cfg_override(cfg, "audit_log", "/tmp/audit.log", &err), 0,
	    "audit_log");
	is_str(cfg->audit_log, "/tmp/audit.log", "audit_log set");
	is_int(cfg->audit_log_set, 1, "an audit_log override counts as given");
	is_int(eg_cfg_override(cfg, "audit_format", "json", &err), 0,
	    "audit_format");
	is_int(cfg->audit_json, 1, "audit_format set");
	is_int(eg_cfg_override(cfg, "admin", "/tmp/adm.sock", &err), 0,
	    "admin");
	is_int(eg_cfg_override(cfg, "workers", "3", &err), 0,
	    "any [proxy] key");
	is_int(cfg->workers, 3, "workers set");
	is_int(eg_cfg_override(cfg, "bogus", "1", &err), -1, "unknown key");
	is_str(err.msg, "command line: unknown key 'bogus'", "its message");
	is_int(eg_cfg_override(cfg, "allow", "x.example", &err), -1,
	    "phase keys are not overrides");
	is_int(eg_cfg_check(cfg, &errs), 0, "still consistent");
	is_int(eg_cfg_override(cfg, "phase", "zzz", &err), 0,
	    "phase override to an unknown phase");
	is_int(eg_cfg_check(cfg, &errs), -1, "eg_cfg_check refuses it");
	is_str(errs.n ? errs.msg[0] : NULL,
	    "t.ini:0: phase 'zzz' does not exist", "check message");
	eg_errs_clear(&errs);
	is_int(eg_cfg_override(cfg, "admin", "127.0.0.1:9999", &err), 0,
	    "admin on TCP");
	eg_cfg_override(cfg, "phase", "a", &err);
	is_int(eg_cfg_check(cfg, &errs), -1, "TCP admin without a token");
	eg_errs_clear(&errs);
	eg_cfg_unref(cfg);

	/* -u alone replaces the implicit default listener. */
	cfg = parse_str("[phase:a]\n", &errs);
	if (cfg != NULL) {
		eg_cfg_override(cfg, "unix", "/tmp/c.sock", &err);
		ok(cfg->nlisten == 1 && cfg->listen[0].kind ==
		    EG_LISTEN_UNIX, "-u drops the implicit 127.0.0.1:3128");
		eg_cfg_unref(cfg);
	}
}

static void
test_default(void)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	const struct eg_phase *p;

	cfg = eg_cfg_default(&errs);
	ok(cfg != NULL, "embedded default parses");
	if (cfg == NULL) {
		diag("%s", errs.n ? errs.msg[0] : "?");
		eg_errs_clear(&errs);
		return;
	}
	is_str(cfg->file, "(default)", "named (default)");
	is_str(cfg->phase, "default", "phase default");
	ok(cfg->nlisten == 1 && strcmp(cfg->listen[0].text,
	    "127.0.0.1:3128") == 0, "listens on 127.0.0.1:3128");
	p = eg_cfg_phase(cfg, "default");
	ok(p != NULL && p->nrules == 3, "three model APIs");
	is_int(match(cfg, "default", "api.anthropic.com", 443),
	    EG_MATCH_ALLOW, "api.anthropic.com:443");
	is_int(match(cfg, "default", "api.openai.com", 443),
	    EG_MATCH_ALLOW, "api.openai.com:443");
	is_int(match(cfg, "default", "generativelanguage.googleapis.com",
	    443), EG_MATCH_ALLOW, "generativelanguage.googleapis.com:443");
	is_int(match(cfg, "default", "api.anthropic.com", 80),
	    EG_MATCH_PORT_NOT_ALLOWED, "not port 80");
	is_int(match(cfg, "default", "code.example", 443),
	    EG_MATCH_NOT_ALLOWED, "code.example not allowed");
	is_int(eg_cfg_check(cfg, &errs), 0, "default passes the check");
	eg_cfg_unref(cfg);
}

/* eg_cfg_check reads a TCP admin's token file: mode 0600, 16 bytes. */
static void
test_token_file(void)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	char dir[] = "/tmp/test-cfg-XXXXXX", tok[64], text[256], want[512];
	FILE *f;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(tok, sizeof(tok), "%s/tok", dir);
	snprintf(text, sizeof(text), "[proxy]\nadmin = 127.0.0.1:9\n"
	    "admin_token_file = %s\n[phase:a]\n", tok);
	f = fopen(tok, "w");
	if (f != NULL) {
		fputs("0123456789abcdef\n", f);
		fclose(f);
	}
	chmod(tok, 0600);
	cfg = parse_str(text, &errs);
	ok(cfg != NULL && eg_cfg_check(cfg, &errs) == 0 && errs.n == 0,
	    "a 0600 token file of 16 bytes passes the check");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);

	chmod(tok, 0644);
	cfg = parse_str(text, &errs);
	ok(cfg != NULL && eg_cfg_check(cfg, &errs) == -1 && errs.n == 1,
	    "a 0644 token file fails the check");
	snprintf(want, sizeof(want), "t.ini:3: admin_token_file %s: "
	    "permissions 0644 are too open: group or others may access the "
	    "token; run 'chmod 600 %s'", tok, tok);
	is_str(errs.n ? errs.msg[0] : NULL, want, "... at its line, with the fix");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);

	f = fopen(tok, "w");
	if (f != NULL) {
		fputs("0123456789abcde\n", f);
		fclose(f);
	}
	chmod(tok, 0400);
	cfg = parse_str(text, &errs);
	ok(cfg != NULL && eg_cfg_check(cfg, &errs) == -1 && errs.n == 1 &&
	    strstr(errs.msg[0], "t.ini:3: ") == errs.msg[0] &&
	    strstr(errs.msg[0], "the token is 15 bytes; it must be at least "
	    "16 bytes") != NULL, "a 15-byte token fails the check");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
	unlink(tok);
	rmdir(dir);
}

/* Is word present with no identifier character on either side? */
static int
has_word(const char *text, const char *word)
{
	const char *p = text;
	size_t n = strlen(word);

	while ((p = strstr(p, word)) != NULL) {
		if ((p == text || !(p[-1] == '_' || (p[-1] >= 'a' &&
		    p[-1] <= 'z'))) && !(p[n] == '_' || (p[n] >= 'a' &&
		    p[n] <= 'z')))
			return 1;
		p += n;
	}
	return 0;
}

static void
test_keys_documented(void)
{
	char *ini, *man, pat1[80], pat2[80];
	size_t i, n = 0;

	ini = slurp(path_of("conf/egressd.ini"));
	man = slurp(path_of("doc/egressd.ini.5"));
	ok(ini != NULL, "conf/egressd.ini readable");
	ok(man != NULL, "doc/egressd.ini.5 readable");
	if (ini == NULL || man == NULL) {
		free(ini);
		free(man);
		return;
	}
	for (i = 0; eg_cfg_keys[i] != NULL; i++) {
		snprintf(pat1, sizeof(pat1), "\n%s =", eg_cfg_keys[i]);
		snprintf(pat2, sizeof(pat2), "\n;%s =", eg_cfg_keys[i]);
		ok(strstr(ini, pat1) != NULL || strstr(ini, pat2) != NULL,
		    "conf/egressd.ini documents %s", eg_cfg_keys[i]);
		ok(has_word(man, eg_cfg_keys[i]),
		    "egressd.ini.5 documents %s", eg_cfg_keys[i]);
		n++;
	}
	is_int(n, 40, "40 keys in the table");
	free(ini);
	free(man);
}

/* audit_log = journal | syslog[:FACILITY]: checked when the file is read
 * (HAVE_SYSTEMD from config.h) */
static void
test_audit_sinks(void)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;

	cfg = parse_str("[proxy]\naudit_log = syslog\n[phase:a]\n", &errs);
	ok(cfg != NULL && strcmp(cfg->audit_log, "syslog") == 0,
	    "audit_log = syslog is accepted");
	eg_cfg_unref(cfg);
	cfg = parse_str("[proxy]\naudit_log = syslog:local3\n[phase:a]\n",
	    &errs);
	ok(cfg != NULL, "audit_log = syslog:local3 is accepted");
	eg_cfg_unref(cfg);
	cfg = parse_str("[proxy]\n\naudit_log = syslog:local9\n[phase:a]\n",
	    &errs);
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msg[0], "t.ini:3: "
	    "audit_log = syslog:local9: unknown syslog facility (daemon, "
	    "auth, authpriv, user, local0 ... local7)") == 0,
	    "an unknown facility is an error at its line: %s",
	    errs.n ? errs.msg[0] : "(none)");
	eg_errs_clear(&errs);
	cfg = parse_str("[proxy]\naudit_log = journal\n[phase:a]\n", &errs);
#ifdef HAVE_SYSTEMD
	ok(cfg != NULL, "audit_log = journal is accepted (libsystemd)");
#else
	ok(cfg == NULL && errs.n == 1 && strstr(errs.msg[0], "t.ini:2: "
	    "audit_log = journal: egressd was built without libsystemd") ==
	    errs.msg[0], "audit_log = journal without libsystemd: %s",
	    errs.n ? errs.msg[0] : "(none)");
#endif
	eg_errs_clear(&errs);
	eg_cfg_unref(cfg);
}

/* Brackets are for IPv6 only: "[127.0.0.1]:3128" is a FILE:LINE error
 * wherever an address and port are read (issue 21, 13). */
static void
test_v4_brackets(void)
{
	static const char *const want[] = {
		"t.ini:2: bad value '[127.0.0.1]:3128' for listen: expected "
		    "IPv4:PORT or [IPv6]:PORT",
		"t.ini:3: bad value '[127.0.0.1]:9000' for admin: expected a "
		    "socket path or ADDR:PORT",
		"t.ini:4: bad value '[127.0.0.1]:53' for dns_servers: "
		    "expected IP[:PORT] or [IPv6]:PORT",
		NULL
	};
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	size_t i;

	cfg = parse_str("[proxy]\nlisten = [127.0.0.1]:3128\n"
	    "admin = [127.0.0.1]:9000\ndns_servers = [127.0.0.1]:53\n"
	    "[phase:a]\n", &errs);
	ok(cfg == NULL, "bracketed IPv4 addresses are refused");
	eg_cfg_unref(cfg);
	for (i = 0; want[i] != NULL; i++)
		is_str(i < errs.n ? errs.msg[i] : NULL, want[i],
		    "bracketed IPv4, error %zu", i + 1);
	is_int(errs.n, i, "bracketed IPv4: %zu errors", i);
	eg_errs_clear(&errs);
	cfg = parse_str("[proxy]\ndns_servers = [10.0.0.1]\n[phase:a]\n",
	    &errs);
	ok(cfg == NULL, "a bracketed IPv4 DNS server without a port too");
	is_str(errs.n ? errs.msg[0] : NULL, "t.ini:2: bad value '[10.0.0.1]' "
	    "for dns_servers: expected IP[:PORT] or [IPv6]:PORT",
	    "... FILE:LINE: bad value");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
	cfg = parse_str("[proxy]\nlisten = [::1]:3128\n"
	    "listen = 127.0.0.1:3129\n"
	    "dns_servers = [::1]:53 127.0.0.1 ::1\n[phase:a]\n", &errs);
	ok(cfg != NULL && errs.n == 0, "bracketed IPv6 and bare IPv4 are "
	    "fine");
	for (i = 0; i < errs.n; i++)
		diag("%s", errs.msg[i]);
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
}

/* hint and budgets (SPEC "Configuration"): sizes in powers of 1024 */
static void
test_hint_budgets(void)
{
	struct eg_errs errs = { 0 };
	struct eg_cfg *cfg;
	const struct eg_phase *p;
	char big[400];

	cfg = parse_str("[phase:a]\nhint = only the model API, do not retry\n"
	    "budget_up = 50M\nbudget_down = 2G\nbudget_requests = 10000\n"
	    "[phase:b]\nbudget_down = 512k\n[phase:c]\nbudget_up = 0\n",
	    &errs);
	ok(cfg != NULL, "hint and budgets parse");
	p = cfg ? eg_cfg_phase(cfg, "a") : NULL;
	ok(p != NULL && p->hint != NULL &&
	    strcmp(p->hint, "only the model API, do not retry") == 0,
	    "hint is kept as written");
	ok(p != NULL && p->budget_up == 50ULL << 20 &&
	    p->budget_down == 2ULL << 30 && p->budget_requests == 10000 &&
	    p->budget_has == (EG_BUDGET_UP | EG_BUDGET_DOWN | EG_BUDGET_REQ),
	    "50M, 2G (powers of 1024) and 10000");
	p = cfg ? eg_cfg_phase(cfg, "b") : NULL;
	ok(p != NULL && p->budget_down == 512 * 1024 &&
	    p->budget_has == EG_BUDGET_DOWN && p->hint == NULL,
	    "512k; no hint, only the budget given");
	p = cfg ? eg_cfg_phase(cfg, "c") : NULL;
	ok(p != NULL && p->budget_up == 0 && p->budget_has == EG_BUDGET_UP,
	    "budget_up = 0 is a limit (nothing may be sent)");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);

	cfg = parse_str("[phase:a]\nbudget_up = 5T\nbudget_down = -1\n"
	    "budget_requests = 10K\nbudget_down = 1M\n", &errs);
	ok(cfg == NULL && errs.n == 4, "bad sizes are errors (%zu)", errs.n);
	ok(errs.n > 0 && strstr(errs.msg[0], "t.ini:2:") != NULL &&
	    strstr(errs.msg[0], "budget_up") != NULL,
	    "with their line and key: %s", errs.n ? errs.msg[0] : "");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	{
		char text[600];

		snprintf(text, sizeof(text), "[phase:a]\nhint = %s\n", big);
		cfg = parse_str(text, &errs);
		ok(cfg == NULL && errs.n == 1 && strstr(errs.msg[0],
		    "longer than 256") != NULL, "a hint over 256 bytes: %s",
		    errs.n ? errs.msg[0] : "");
		eg_cfg_unref(cfg);
		eg_errs_clear(&errs);
	}
	cfg = parse_str("[phase:a]\nhint = tab\there\n", &errs);
	ok(cfg == NULL && errs.n == 1 && strstr(errs.msg[0], "printable")
	    != NULL, "a hint with a control byte: %s",
	    errs.n ? errs.msg[0] : "");
	eg_cfg_unref(cfg);
	eg_errs_clear(&errs);
}

int
main(void)
{
	srcdir = getenv("srcdir");
	if (srcdir == NULL || *srcdir == '\0')
		srcdir = ".";
	test_good();
	test_bad_files();
	test_defaults();
	test_syntax();
	test_override();
	test_default();
	test_token_file();
	test_keys_documented();
	test_audit_sinks();
	test_v4_brackets();
	test_hint_budgets();
	return done_testing();
}
