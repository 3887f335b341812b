/*
 * test-host.c: host and port normalisation (SPEC "Proxy behaviour"):
 * DNS names, every IPv4 spelling, bracketed IPv6, trailing dots, label
 * and name lengths, ports and the CONNECT authority form.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "tap.h"

/* Parse s (strlen) and expect success with the normalised text want. */
static void
good(const char *s, enum eg_host_kind kind, const char *want)
{
	struct eg_host h;
	const char *why = NULL;
	int r;

	r = eg_host_parse(s, strlen(s), &h, &why);
	ok(r == 0 && h.kind == kind && strcmp(h.name, want) == 0 &&
	    h.len == strlen(want), "host '%s' -> '%s'", s, want);
	if (r != 0)
		diag("refused: %s", why ? why : "(null)");
	else if (strcmp(h.name, want) != 0 || h.kind != kind)
		diag("got '%s' kind %d", h.name, (int)h.kind);
}

/* Parse s and expect refusal; why_want, if not NULL, is the reason. */
static void
badh(const char *s, size_t len, const char *why_want)
{
	struct eg_host h;
	const char *why = NULL;
	int r;

	r = eg_host_parse(s, len, &h, &why);
	ok(r == -1 && why != NULL &&
	    (why_want == NULL || strcmp(why, why_want) == 0),
	    "host '%.*s' refused (%s)", (int)(len > 80 ? 80 : len), s,
	    why_want ? why_want : "any");
	if (r == -1 && why_want != NULL && why != NULL &&
	    strcmp(why, why_want) != 0)
		diag("reason was '%s'", why);
}

static void
bad(const char *s, const char *why_want)
{
	badh(s, strlen(s), why_want);
}

static void
port(const char *s, int want)
{
	uint16_t p = 0;
	int r;

	r = eg_port_parse(s, strlen(s), &p);
	if (want < 0)
		ok(r == -1, "port '%s' refused", s);
	else
		ok(r == 0 && p == want, "port '%s' = %d", s, want);
}

static void
auth(const char *s, const char *host, int want_port, const char *why_want)
{
	struct eg_host h;
	const char *why = NULL;
	uint16_t p = 0;
	int r;

	r = eg_authority_parse(s, strlen(s), &h, &p, &why);
	if (host == NULL) {
		ok(r == -1 && why != NULL && (why_want == NULL ||
		    strcmp(why, why_want) == 0), "authority '%s' refused (%s)",
		    s, why_want ? why_want : "any");
		if (r == -1 && why_want && why && strcmp(why, why_want))
			diag("reason was '%s'", why);
	} else {
		ok(r == 0 && strcmp(h.name, host) == 0 && p == want_port,
		    "authority '%s' -> %s port %d", s, host, want_port);
		if (r != 0)
			diag("refused: %s", why);
	}
}

int
main(void)
{
	char buf[600], lab[70];
	struct eg_host h;
	const char *why;
	size_t i;

	/* Names and normalisation. */
	good("example.com", EG_HOST_NAME, "example.com");
	good("Example.COM", EG_HOST_NAME, "example.com");
	good("example.com.", EG_HOST_NAME, "example.com");
	good("API.Anthropic.Com.", EG_HOST_NAME, "api.anthropic.com");
	good("localhost", EG_HOST_NAME, "localhost");
	good("a", EG_HOST_NAME, "a");
	good("a-b.c-d.e", EG_HOST_NAME, "a-b.c-d.e");
	good("xn--bcher-kva.example", EG_HOST_NAME, "xn--bcher-kva.example");
	good("123.example.com", EG_HOST_NAME, "123.example.com");
	good("0x7f.example.com", EG_HOST_NAME, "0x7f.example.com");
	good("example.0xg", EG_HOST_NAME, "example.0xg");
	good("example.123a", EG_HOST_NAME, "example.123a");
	bad("example.com..", "empty label");
	bad(".", "empty label");
	bad("..", "empty label");
	bad(".example.com", "empty label");
	bad("a..b", "empty label");
	bad("", "empty host");
	bad("-a.com", "hyphen at label edge");
	bad("a-.com", "hyphen at label edge");
	bad("a.-b", "hyphen at label edge");
	bad("under_score.com", "bad character in host");
	bad("a b.com", "bad character in host");
	bad("a%2e.com", "bad character in host");
	bad("user@host", "bad character in host");
	bad("host#frag", "bad character in host");
	bad("host?q", "bad character in host");
	bad("host/p", "bad character in host");
	bad("caf\xc3\xa9.com", "bad character in host");
	bad("a\tb", "bad character in host");
	bad("a\x7f", "bad character in host");
	bad("a*.com", "bad character in host");
	badh("a\0b.com", 7, "bad character in host");
	/* The length is explicit: "exa" of "example.com" is a good name. */
	ok(eg_host_parse("example.com", 3, &h, &why) == 0 &&
	    strcmp(h.name, "exa") == 0, "explicit length honoured");
	badh("1.2.3.4", 5, "non-canonical IPv4");	/* "1.2.3" */

	/* Label and name lengths. */
	memset(lab, 'a', 63);
	lab[63] = '\0';
	snprintf(buf, sizeof(buf), "%s.com", lab);
	good(buf, EG_HOST_NAME, buf);
	memset(lab, 'a', 64);
	lab[64] = '\0';
	snprintf(buf, sizeof(buf), "%s.com", lab);
	bad(buf, "label too long");
	/* 253 bytes: 63+1+63+1+63+1+61 */
	memset(buf, 'a', 253);
	buf[63] = buf[127] = buf[191] = '.';
	buf[253] = '\0';
	good(buf, EG_HOST_NAME, buf);
	buf[253] = '.';
	buf[254] = '\0';
	ok(eg_host_parse(buf, 254, &h, &why) == 0 && h.len == 253,
	    "253-byte name with trailing dot");
	memset(buf, 'a', 254);
	buf[63] = buf[127] = buf[191] = '.';
	buf[254] = '\0';
	bad(buf, "name too long");
	memset(buf, 'a', 500);
	for (i = 50; i < 500; i += 50)
		buf[i] = '.';
	buf[500] = '\0';
	bad(buf, "name too long");

	/* IPv4: only the canonical dotted quad. */
	good("127.0.0.1", EG_HOST_V4, "127.0.0.1");
	good("0.0.0.0", EG_HOST_V4, "0.0.0.0");
	good("255.255.255.255", EG_HOST_V4, "255.255.255.255");
	good("198.51.100.10", EG_HOST_V4, "198.51.100.10");
	good("10.0.0.1.", EG_HOST_V4, "10.0.0.1");
	ok(eg_host_parse("192.0.2.7", 9, &h, &why) == 0 &&
	    h.ip.v4.s_addr == htonl(0xc0000207), "v4 address stored");
	bad("2130706433", "non-canonical IPv4");
	bad("0x7f.1", "non-canonical IPv4");
	bad("0x7f000001", "non-canonical IPv4");
	bad("0X7F000001", "non-canonical IPv4");
	bad("127.1", "non-canonical IPv4");
	bad("127.0.1", "non-canonical IPv4");
	bad("0177.0.0.1", "non-canonical IPv4");
	bad("127.0.0.01", "non-canonical IPv4");
	bad("127.00.0.1", "non-canonical IPv4");
	bad("256.0.0.1", "non-canonical IPv4");
	bad("1.2.3.256", "non-canonical IPv4");
	bad("1.2.3.4.5", "non-canonical IPv4");
	bad("example.com.123", "non-canonical IPv4");
	bad("example.0x10", "non-canonical IPv4");
	bad("example.0x", "non-canonical IPv4");
	bad("a.1.2.3", "non-canonical IPv4");
	bad("1.2.3.0x4", "non-canonical IPv4");
	bad("1.2.3.999999999999", "non-canonical IPv4");
	bad("0", "non-canonical IPv4");
	bad("1.2.3.4..", "empty label");

	/* IPv6: brackets only, canonical text, no zone ids. */
	good("[::1]", EG_HOST_V6, "[::1]");
	good("[::]", EG_HOST_V6, "[::]");
	good("[2001:DB8::1]", EG_HOST_V6, "[2001:db8::1]");
	good("[2001:0db8:0000:0000:0000:0000:0000:0001]", EG_HOST_V6,
	    "[2001:db8::1]");
	good("[::ffff:127.0.0.1]", EG_HOST_V6, "[::ffff:127.0.0.1]");
	good("[::ffff:7f00:1]", EG_HOST_V6, "[::ffff:127.0.0.1]");
	good("[0:0:0:0:0:ffff:7f00:1]", EG_HOST_V6, "[::ffff:127.0.0.1]");
	good("[64:ff9b::a00:1]", EG_HOST_V6, "[64:ff9b::a00:1]");
	bad("::1", "IPv6 literal needs brackets");
	bad("2001:db8::1", "IPv6 literal needs brackets");
	bad("[fe80::1%25eth0]", "zone id not allowed");
	bad("[fe80::1%eth0]", "zone id not allowed");
	bad("[::1", "bad IPv6 literal");
	bad("[]", "empty IPv6 literal");
	bad("[", "bad IPv6 literal");
	bad("[1:2:3:4:5:6:7:8:9]", "bad IPv6 literal");
	bad("[::1]x", "bad IPv6 literal");
	bad("[:::1]", "bad IPv6 literal");
	bad("[::g]", "bad character in IPv6 literal");
	bad("[v1.x]", "bad character in IPv6 literal");
	bad("[127.0.0.1]", "bad IPv6 literal");
	bad("[::ffff:127.0.0.01]", "bad IPv6 literal");
	bad("[0000:0000:0000:0000:0000:0000:0000:0000:0000]",
	    "bad IPv6 literal");

	/* Ports. */
	port("1", 1);
	port("80", 80);
	port("443", 443);
	port("65535", 65535);
	port("0", -1);
	port("00", -1);
	port("0443", -1);
	port("65536", -1);
	port("99999", -1);
	port("100000", -1);
	port("", -1);
	port("+443", -1);
	port("-1", -1);
	port(" 443", -1);
	port("443 ", -1);
	port("443abc", -1);
	port("0x1bb", -1);

	/* CONNECT authority form. */
	auth("example.com:443", "example.com", 443, NULL);
	auth("EXAMPLE.com.:8443", "example.com", 8443, NULL);
	auth("127.0.0.1:3128", "127.0.0.1", 3128, NULL);
	auth("[::1]:443", "[::1]", 443, NULL);
	auth("[::FFFF:7f00:1]:1", "[::ffff:127.0.0.1]", 1, NULL);
	auth("example.com", NULL, 0, "missing port");
	auth("example.com:", NULL, 0, "bad port");
	auth("example.com:0", NULL, 0, "bad port");
	auth("example.com:65536", NULL, 0, "bad port");
	auth("example.com:0443", NULL, 0, "bad port");
	auth("example.com:443abc", NULL, 0, "bad port");
	auth("example.com: 443", NULL, 0, "bad port");
	auth("example.com:https", NULL, 0, "bad port");
	auth(":443", NULL, 0, "empty host");
	auth("", NULL, 0, "empty authority");
	auth("::1:443", NULL, 0, "IPv6 literal needs brackets");
	auth("[::1]", NULL, 0, "missing port");
	auth("[::1]443", NULL, 0, "bad character after IPv6 literal");
	auth("[::1:443", NULL, 0, "bad IPv6 literal");
	auth("[fe80::1%25eth0]:443", NULL, 0, "zone id not allowed");
	auth("2130706433:443", NULL, 0, "non-canonical IPv4");
	auth("a_b.com:443", NULL, 0, "bad character in host");
	auth("example.com..:443", NULL, 0, "empty label");

	return done_testing();
}
