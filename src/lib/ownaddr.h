/*
 * ownaddr.h: egressd's own addresses, for loop protection.  A snapshot
 * holds the bound TCP listeners (proxy and admin API) and the host's
 * interface addresses; it is immutable once built and reference-counted,
 * so a connection can keep one for its decision while a reload publishes
 * the next.  eg_ownaddr_is_own() is a pure function of (snapshot,
 * address).
 */
#ifndef EG_OWNADDR_H
#define EG_OWNADDR_H

#include <sys/socket.h>
#include <stddef.h>

struct eg_ownaddr;

/*
 * A snapshot of the nls TCP listener addresses ls (address and port, as
 * bound) and the nifs interface addresses ifs (ports ignored); both are
 * copied.  Other families than AF_INET and AF_INET6 are skipped.  The
 * reference count starts at 1.  NULL when out of memory.
 */
struct eg_ownaddr *eg_ownaddr_new(const struct sockaddr_storage *ls,
		    size_t nls, const struct sockaddr_storage *ifs,
		    size_t nifs);

/* The host's interface addresses (getifaddrs()) into a new array in
 * *out (free() it) and their number in *n.  Returns 0, or -1 with errno. */
int		 eg_ownaddr_ifaddrs(struct sockaddr_storage **out, size_t *n);

/* Take a reference (thread-safe); returns o.  NULL-safe. */
struct eg_ownaddr *eg_ownaddr_ref(struct eg_ownaddr *o);

/* Drop a reference (thread-safe); the last one frees.  NULL-safe. */
void		 eg_ownaddr_unref(struct eg_ownaddr *o);

/*
 * Is sa (address and port) egressd itself?  Addresses compare after
 * normalising an IPv4-mapped IPv6 address (::ffff:a.b.c.d) to its IPv4
 * address.  sa is own when a listener has sa's port and:
 *  - sa is the listener's address; or
 *  - sa is unspecified (0.0.0.0 or ::), which the kernel dials as a local
 *    address, for a listener of any family; or
 *  - the listener is a wildcard (0.0.0.0 or ::) of sa's family and sa is
 *    a loopback address (all of 127/8; ::1) or an interface address.
 * A NULL snapshot owns nothing.  Pure.
 */
int		 eg_ownaddr_is_own(const struct eg_ownaddr *o,
		    const struct sockaddr *sa);

#endif
