/*
 * ownaddr.c: snapshots of egressd's own addresses and the loop test
 * (ownaddr.h).  Kept apart from worker.c so that the rule "egressd never
 * dials itself" is one small pure function with its own unit tests, and
 * so that a reload can never free what a decision is reading.
 */
#include "egress-int.h"

#include <netinet/in.h>
#include <arpa/inet.h>
#include <ifaddrs.h>

#include "ownaddr.h"

/* An address in one comparable form: IPv4 (also from v4-mapped) or v6. */
struct oaddr {
	int		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 a[16];		/* 4 or 16 bytes used */
	int		 port;
};

struct eg_ownaddr {
	unsigned	 refs;		/* atomic */
	size_t		 nls, nifs;
	struct oaddr	*ls;		/* listeners */
	struct oaddr	*ifs;		/* interface addresses */
	struct oaddr	 mem[];
};

/* Normalise sa into *o; 0 if it is not an IP address. */
static int
oaddr_from(const struct sockaddr *sa, struct oaddr *o)
{
	const struct sockaddr_in *s4;
	const struct sockaddr_in6 *s6;

	memset(o, 0, sizeof(*o));
	if (sa->sa_family == AF_INET) {
		s4 = (const struct sockaddr_in *)(const void *)sa;
		o->family = AF_INET;
		memcpy(o->a, &s4->sin_addr, 4);
		o->port = ntohs(s4->sin_port);
		return 1;
	}
	if (sa->sa_family != AF_INET6)
		return 0;
	s6 = (const struct sockaddr_in6 *)(const void *)sa;
	o->port = ntohs(s6->sin6_port);
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		o->family = AF_INET;
		memcpy(o->a, s6->sin6_addr.s6_addr + 12, 4);
	} else {
		o->family = AF_INET6;
		memcpy(o->a, &s6->sin6_addr, 16);
	}
	return 1;
}

static size_t
oaddr_len(const struct oaddr *o)
{
	return o->family == AF_INET ? 4 : 16;
}

static int
oaddr_eq(const struct oaddr *x, const struct oaddr *y)
{
	return x->family == y->family &&
	    memcmp(x->a, y->a, oaddr_len(x)) == 0;
}

static int
oaddr_any(const struct oaddr *o)
{
	static const uint8_t zero[16];

	return memcmp(o->a, zero, oaddr_len(o)) == 0;
}

static int
oaddr_loopback(const struct oaddr *o)
{
	static const uint8_t one6[16] = { [15] = 1 };

	if (o->family == AF_INET)
		return o->a[0] == 127;
	return memcmp(o->a, one6, 16) == 0;
}

struct eg_ownaddr *
eg_ownaddr_new(const struct sockaddr_storage *ls, size_t nls,
    const struct sockaddr_storage *ifs, size_t nifs)
{
	struct eg_ownaddr *o;
	size_t i;

	if (nls > SIZE_MAX / 2 / sizeof(struct oaddr) ||
	    nifs > SIZE_MAX / 2 / sizeof(struct oaddr))
		return NULL;
	o = eg_calloc(1, sizeof(*o) + (nls + nifs) * sizeof(struct oaddr));
	if (o == NULL)
		return NULL;
	o->refs = 1;
	o->ls = o->mem;
	for (i = 0; i < nls; i++)
		if (oaddr_from((const struct sockaddr *)&ls[i],
		    &o->ls[o->nls]))
			o->nls++;
	o->ifs = o->mem + o->nls;
	for (i = 0; i < nifs; i++)
		if (oaddr_from((const struct sockaddr *)&ifs[i],
		    &o->ifs[o->nifs]))
			o->nifs++;
	return o;
}

int
eg_ownaddr_ifaddrs(struct sockaddr_storage **out, size_t *n)
{
	struct ifaddrs *ifa, *i;
	struct sockaddr_storage *a;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && (i->ifa_addr->sa_family == AF_INET ||
		    i->ifa_addr->sa_family == AF_INET6))
			k++;
	if ((a = eg_calloc(k ? k : 1, sizeof(*a))) == NULL) {
		freeifaddrs(ifa);
		errno = ENOMEM;
		return -1;
	}
	k = 0;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			memcpy(&a[k++], i->ifa_addr,
			    sizeof(struct sockaddr_in));
		else if (i->ifa_addr->sa_family == AF_INET6)
			memcpy(&a[k++], i->ifa_addr,
			    sizeof(struct sockaddr_in6));
	}
	freeifaddrs(ifa);
	*out = a;
	*n = k;
	return 0;
}

struct eg_ownaddr *
eg_ownaddr_ref(struct eg_ownaddr *o)
{
	if (o != NULL)
		__atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
	return o;
}

void
eg_ownaddr_unref(struct eg_ownaddr *o)
{
	if (o != NULL && __atomic_sub_fetch(&o->refs, 1,
	    __ATOMIC_ACQ_REL) == 0)
		eg_free(o);
}

int
eg_ownaddr_is_own(const struct eg_ownaddr *o, const struct sockaddr *sa)
{
	struct oaddr t;
	const struct oaddr *l;
	size_t i, j;

	if (o == NULL || !oaddr_from(sa, &t))
		return 0;
	for (i = 0; i < o->nls; i++) {
		l = &o->ls[i];
		if (l->port != t.port)
			continue;
		if (oaddr_eq(l, &t) || oaddr_any(&t))
			return 1;
		if (l->family != t.family || !oaddr_any(l))
			continue;
		if (oaddr_loopback(&t))
			return 1;
		for (j = 0; j < o->nifs; j++)
			if (oaddr_eq(&o->ifs[j], &t))
				return 1;
	}
	return 0;
}
