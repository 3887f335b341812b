/*
 * addrclass.h: is an address public?  SPEC's deny_private ranges, applied
 * to IPv4, IPv6, and IPv4 embedded in IPv6 (mapped, compatible, NAT64
 * 64:ff9b::/96, 6to4 2002::/16).  Pure functions; no I/O.
 */
#ifndef EG_ADDRCLASS_H
#define EG_ADDRCLASS_H

#include <sys/socket.h>
#include <netinet/in.h>

/*
 * Return NULL if the address is public, or the name of the non-public
 * range it falls in ("loopback", "rfc1918", "cgnat", "nat64:rfc1918", ...).
 * af is AF_INET (addr -> struct in_addr) or AF_INET6 (struct in6_addr).
 */
const char	*eg_addr_private(int af, const void *addr);

/* The same for a socket address (AF_INET or AF_INET6; others: "family"). */
const char	*eg_sa_private(const struct sockaddr *sa);

/* sa is on this host's loopback: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104
 * (eg_sa_private()'s "loopback" and "mapped:loopback"; NAT64 and the other
 * embeddings leave the host). */
int		 eg_sa_loopback(const struct sockaddr *sa);

/*
 * If a6 embeds an IPv4 address (mapped ::ffff:0:0/96, compatible ::/96
 * except :: and ::1, NAT64 64:ff9b::/96, 6to4 2002::/16), store it in *v4
 * and return 1; otherwise return 0.
 */
int		 eg_addr_v4_embedded(const struct in6_addr *a6,
		    struct in_addr *v4);

#endif
