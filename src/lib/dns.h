/*
 * dns.h: asynchronous resolution with c-ares, driven by a worker's event
 * loop (no thread, no blocking call).  dns.c is the only file that
 * includes ares.h.
 */
#ifndef EG_DNS_H
#define EG_DNS_H

#include <sys/socket.h>
#include <stddef.h>

#include "err.h"

struct eg_loop;
struct eg_dns;

#define EG_DNS_MAXADDR	16

/*
 * Result callback: status 0 with n >= 1 addresses (port 0), or -1 with a
 * short reason.  It may run before eg_dns_lookup() returns, and runs
 * with status -1 ("cancelled") when the resolver is freed.
 */
typedef void	eg_dns_cb(void *arg, int status, const char *reason,
		    const struct sockaddr_storage *addrs, size_t n);

/*
 * servers: "ip:port,[v6]:port" or NULL for the system configuration.
 * timeout_ms bounds each lookup in all (every try, every server): then
 * its callback runs with status -1; tries: rounds of queries within it.
 * Names are looked up as absolute names only: no search list, no ndots,
 * no HOSTALIASES.
 */
struct eg_dns	*eg_dns_new(struct eg_loop *, const char *servers,
		    unsigned timeout_ms, unsigned tries, struct eg_err *);
/*
 * Apply a reloaded configuration (servers NULL: keep them).  A change of
 * timeout_ms or tries replaces *dnsp by a new resolver; the old one
 * finishes its lookups and is freed by eg_dns_reap().
 */
int		 eg_dns_configure(struct eg_dns **dnsp, const char *servers,
		    unsigned timeout_ms, unsigned tries, struct eg_err *);
void		 eg_dns_free(struct eg_dns *);
/* Free resolver sockets closed during the last batch (after-batch hook). */
void		 eg_dns_reap(struct eg_dns *);
int		 eg_dns_set_servers(struct eg_dns *, const char *servers,
		    struct eg_err *);
/* Resolve name (A and AAAA).  The callback is always called once. */
void		 eg_dns_lookup(struct eg_dns *, const char *name,
		    eg_dns_cb *, void *arg);

#endif
