/*
 * test-addrclass.c: every deny_private range of SPEC, checked at its
 * first and last address and just outside, in IPv4 and in each IPv6
 * embedding (mapped, compatible, NAT64, 6to4).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "addrclass.h"
#include "tap.h"

static const char *
cls(const char *text)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, text, &a4) == 1)
		return eg_addr_private(AF_INET, &a4);
	if (inet_pton(AF_INET6, text, &a6) == 1)
		return eg_addr_private(AF_INET6, &a6);
	return "unparsable";
}

#define CLS(text, want)	is_str(cls(text), want, "%s is %s", text,	\
			    (want) ? (const char *)(want) : "public")

enum { EMB_MAPPED, EMB_COMPAT, EMB_NAT64, EMB_6TO4 };

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))

/* v4 dotted quad -> the same address in an IPv6 embedding. */
static const char *
embed(int kind, const char *v4, char *out, size_t cap)
{
	struct in_addr a;
	const uint8_t *b;

	inet_pton(AF_INET, v4, &a);
	b = (const uint8_t *)&a.s_addr;
	switch (kind) {
	case EMB_MAPPED:
		snprintf(out, cap, "::ffff:%s", v4);
		break;
	case EMB_COMPAT:
		snprintf(out, cap, "::%s", v4);
		break;
	case EMB_NAT64:
		snprintf(out, cap, "64:ff9b::%s", v4);
		break;
	default:
		snprintf(out, cap, "2002:%02x%02x:%02x%02x::1", b[0], b[1],
		    b[2], b[3]);
		break;
	}
	return out;
}

struct edge {
	const char	*v4;
	const char	*name;	/* NULL: public */
};

static const struct edge edges[] = {
	{ "0.0.0.0", "this-network" },
	{ "0.255.255.255", "this-network" },
	{ "1.0.0.0", NULL },
	{ "9.255.255.255", NULL },
	{ "10.0.0.0", "rfc1918" },
	{ "10.255.255.255", "rfc1918" },
	{ "11.0.0.0", NULL },
	{ "100.63.255.255", NULL },
	{ "100.64.0.0", "cgnat" },
	{ "100.127.255.255", "cgnat" },
	{ "100.128.0.0", NULL },
	{ "126.255.255.255", NULL },
	{ "127.0.0.0", "loopback" },
	{ "127.0.0.1", "loopback" },
	{ "127.255.255.255", "loopback" },
	{ "128.0.0.0", NULL },
	{ "169.253.255.255", NULL },
	{ "169.254.0.0", "link-local" },
	{ "169.254.169.254", "link-local" },
	{ "169.254.255.255", "link-local" },
	{ "169.255.0.0", NULL },
	{ "172.15.255.255", NULL },
	{ "172.16.0.0", "rfc1918" },
	{ "172.31.255.255", "rfc1918" },
	{ "172.32.0.0", NULL },
	{ "191.255.255.255", NULL },
	{ "192.0.0.0", "ietf-protocol" },
	{ "192.0.0.255", "ietf-protocol" },
	{ "192.0.1.0", NULL },
	{ "192.0.2.1", NULL },
	{ "192.167.255.255", NULL },
	{ "192.168.0.0", "rfc1918" },
	{ "192.168.255.255", "rfc1918" },
	{ "192.169.0.0", NULL },
	{ "198.17.255.255", NULL },
	{ "198.18.0.0", "benchmark" },
	{ "198.19.255.255", "benchmark" },
	{ "198.20.0.0", NULL },
	{ "198.51.100.10", NULL },
	{ "203.0.113.5", NULL },
	{ "8.8.8.8", NULL },
	{ "223.255.255.255", NULL },
	{ "224.0.0.0", "multicast-reserved" },
	{ "239.255.255.255", "multicast-reserved" },
	{ "240.0.0.0", "multicast-reserved" },
	{ "255.255.255.255", "multicast-reserved" },
};

int
main(void)
{
	static const char *const prefix[] = {
		"mapped:", "compat:", "nat64:", "6to4:"
	};
	char text[64], want[64];
	struct in6_addr a6;
	struct in_addr v4;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr sa;
	size_t i, j;
	const char *w;

	for (i = 0; i < NITEMS(edges); i++)
		CLS(edges[i].v4, edges[i].name);

	/* The same edges inside each IPv6 embedding. */
	for (j = 0; j < NITEMS(prefix); j++) {
		for (i = 0; i < NITEMS(edges); i++) {
			embed((int)j, edges[i].v4, text, sizeof(text));
			w = NULL;
			if (edges[i].name != NULL) {
				snprintf(want, sizeof(want), "%s%s",
				    prefix[j], edges[i].name);
				w = want;
			}
			/* ::0.0.0.0 and ::0.0.0.1 are :: and ::1 */
			if (j == EMB_COMPAT &&
			    strcmp(edges[i].v4, "0.0.0.0") == 0)
				w = "unspecified";
			CLS(text, w);
		}
	}

	/* Native IPv6 ranges. */
	CLS("::", "unspecified");
	CLS("::1", "loopback");
	CLS("::2", "compat:this-network");
	CLS("::0.0.0.1", "loopback");
	CLS("::127.0.0.1", "compat:loopback");
	CLS("::8.8.8.8", NULL);
	CLS("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL);
	CLS("fc00::", "ula");
	CLS("fd12:3456::1", "ula");
	CLS("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ula");
	CLS("fe00::", NULL);
	CLS("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL);
	CLS("fe80::", "link-local");
	CLS("fe80::1", "link-local");
	CLS("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local");
	CLS("fec0::", NULL);
	CLS("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL);
	CLS("ff00::", "multicast");
	CLS("ff02::1", "multicast");
	CLS("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast");
	CLS("2001:db8::1", NULL);
	CLS("2606:4700::1111", NULL);
	CLS("::ffff:7f00:1", "mapped:loopback");
	CLS("0:0:0:0:0:ffff:7f00:1", "mapped:loopback");
	CLS("::ffff:198.51.100.10", NULL);
	CLS("::fffe:7f00:1", NULL);		/* not mapped, not compat */
	CLS("::1:ffff:7f00:1", NULL);
	CLS("::ffff:0:7f00:1", NULL);		/* SIIT, not in SPEC */
	CLS("64:ff9b::7f00:1", "nat64:loopback");
	CLS("64:ff9b::a00:1", "nat64:rfc1918");
	CLS("64:ff9b:1::7f00:1", NULL);		/* not 64:ff9b::/96 */
	CLS("64:ff9a::7f00:1", NULL);
	CLS("2002:7f00:1::", "6to4:loopback");
	CLS("2002:c0a8:101::1", "6to4:rfc1918");
	CLS("2002:a9fe:a9fe:ffff:ffff:ffff:ffff:ffff", "6to4:link-local");
	CLS("2002:0808:0808::1", NULL);
	CLS("2003:7f00:1::", NULL);
	CLS("2001:7f00:1::", NULL);

	/* eg_addr_v4_embedded */
	inet_pton(AF_INET6, "::ffff:10.1.2.3", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 1 &&
	    v4.s_addr == htonl(0x0a010203), "mapped embeds 10.1.2.3");
	inet_pton(AF_INET6, "2002:c000:0201::", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 1 &&
	    v4.s_addr == htonl(0xc0000201), "6to4 embeds 192.0.2.1");
	inet_pton(AF_INET6, "64:ff9b::1.2.3.4", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 1 &&
	    v4.s_addr == htonl(0x01020304), "nat64 embeds 1.2.3.4");
	inet_pton(AF_INET6, "::5.6.7.8", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 1 &&
	    v4.s_addr == htonl(0x05060708), "compat embeds 5.6.7.8");
	inet_pton(AF_INET6, "::1", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 0, "::1 embeds nothing");
	inet_pton(AF_INET6, "::", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 0, ":: embeds nothing");
	inet_pton(AF_INET6, "2001:db8::1", &a6);
	ok(eg_addr_v4_embedded(&a6, &v4) == 0, "2001:db8::1 embeds nothing");

	/* Socket addresses. */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	is_str(eg_sa_private((struct sockaddr *)&sin), "loopback",
	    "sockaddr_in 127.0.0.1");
	inet_pton(AF_INET, "198.51.100.10", &sin.sin_addr);
	is_str(eg_sa_private((struct sockaddr *)&sin), NULL,
	    "sockaddr_in 198.51.100.10 public");
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:192.168.1.1", &sin6.sin6_addr);
	is_str(eg_sa_private((struct sockaddr *)&sin6), "mapped:rfc1918",
	    "sockaddr_in6 mapped rfc1918");
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	is_str(eg_sa_private(&sa), "family", "AF_UNIX is 'family'");
	is_str(eg_addr_private(AF_UNIX, &sa), "family",
	    "eg_addr_private other family");

	return done_testing();
}
