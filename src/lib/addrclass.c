/*
 * addrclass.c: classifies an address as public or names the non-public
 * range (SPEC "Proxy behaviour", deny_private) it belongs to.  IPv6
 * addresses that carry an IPv4 address (mapped, compatible, NAT64, 6to4)
 * are judged by the IPv4 address inside, with the kind as a name prefix.
 */
#include "egress-int.h"

#include <arpa/inet.h>

#include "addrclass.h"

/* Embedding kinds, the column index into v4_ranges[].name. */
enum {
	EMB_NONE,
	EMB_MAPPED,
	EMB_COMPAT,
	EMB_NAT64,
	EMB_6TO4,
	EMB_N
};

/* One non-public IPv4 range, with its name plain and for each embedding. */
struct v4_range {
	uint32_t	 net;
	uint32_t	 mask;
	const char	*name[EMB_N];
};

#define V4R(a, b, c, d, bits, n)					\
	{ ((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) |		\
	  ((uint32_t)(c) << 8) | (uint32_t)(d),				\
	  (uint32_t)(0xffffffffULL << (32 - (bits))),			\
	  { n, "mapped:" n, "compat:" n, "nat64:" n, "6to4:" n } }

static const struct v4_range v4_ranges[] = {
	V4R(0, 0, 0, 0, 8, "this-network"),
	V4R(10, 0, 0, 0, 8, "rfc1918"),
	V4R(100, 64, 0, 0, 10, "cgnat"),
	V4R(127, 0, 0, 0, 8, "loopback"),
	V4R(169, 254, 0, 0, 16, "link-local"),
	V4R(172, 16, 0, 0, 12, "rfc1918"),
	V4R(192, 0, 0, 0, 24, "ietf-protocol"),
	V4R(192, 168, 0, 0, 16, "rfc1918"),
	V4R(198, 18, 0, 0, 15, "benchmark"),
	V4R(224, 0, 0, 0, 3, "multicast-reserved"),	/* 224/4 and 240/4 */
};

/* a (host order) against the IPv4 table; emb picks the name column. */
static const char *
v4_class(uint32_t a, int emb)
{
	size_t i;

	for (i = 0; i < nitems(v4_ranges); i++)
		if ((a & v4_ranges[i].mask) == v4_ranges[i].net)
			return v4_ranges[i].name[emb];
	return NULL;
}

static uint32_t
be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	    ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static int
all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* Which embedding a6 uses (EMB_NONE if none); *v4 gets the host-order v4. */
static int
v6_embedding(const uint8_t *b, uint32_t *v4)
{
	static const uint8_t nat64[12] = {
		0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0
	};

	if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
		*v4 = be32(b + 12);
		return EMB_MAPPED;
	}
	if (all_zero(b, 12)) {
		/* :: and ::1 are their own ranges, not embedded v4. */
		if (all_zero(b + 12, 3) && (b[15] == 0 || b[15] == 1))
			return EMB_NONE;
		*v4 = be32(b + 12);
		return EMB_COMPAT;
	}
	if (memcmp(b, nat64, sizeof(nat64)) == 0) {
		*v4 = be32(b + 12);
		return EMB_NAT64;
	}
	if (b[0] == 0x20 && b[1] == 0x02) {
		*v4 = be32(b + 2);
		return EMB_6TO4;
	}
	return EMB_NONE;
}

static const char *
v6_class(const struct in6_addr *a6)
{
	const uint8_t *b = a6->s6_addr;
	uint32_t v4 = 0;
	int emb;

	if (all_zero(b, 16))
		return "unspecified";
	if (all_zero(b, 15) && b[15] == 1)
		return "loopback";
	if ((b[0] & 0xfe) == 0xfc)
		return "ula";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	if (b[0] == 0xff)
		return "multicast";
	emb = v6_embedding(b, &v4);
	if (emb == EMB_NONE)
		return NULL;
	return v4_class(v4, emb);
}

const char *
eg_addr_private(int af, const void *addr)
{
	const struct in_addr *a4;

	switch (af) {
	case AF_INET:
		a4 = addr;
		return v4_class(ntohl(a4->s_addr), EMB_NONE);
	case AF_INET6:
		return v6_class(addr);
	default:
		return "family";
	}
}

const char *
eg_sa_private(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin;
	const struct sockaddr_in6 *sin6;

	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)(const void *)sa;
		return eg_addr_private(AF_INET, &sin->sin_addr);
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		return eg_addr_private(AF_INET6, &sin6->sin6_addr);
	default:
		return "family";
	}
}

int
eg_sa_loopback(const struct sockaddr *sa)
{
	const char *r = eg_sa_private(sa);

	return r != NULL && (strcmp(r, "loopback") == 0 ||
	    strcmp(r, "mapped:loopback") == 0);
}

int
eg_addr_v4_embedded(const struct in6_addr *a6, struct in_addr *v4)
{
	uint32_t a = 0;

	if (v6_embedding(a6->s6_addr, &a) == EMB_NONE)
		return 0;
	v4->s_addr = htonl(a);
	return 1;
}
