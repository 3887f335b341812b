/*
 * dns.c: c-ares glue.  c-ares 1.18 (Debian 12) has no event thread, so we
 * learn its sockets through ARES_OPT_SOCK_STATE_CB, map them to loop
 * interest, call ares_process_fd() on readiness, and keep one loop timer
 * armed from ares_timeout() after every call into c-ares.
 */
#include "egress-int.h"

#include <sys/epoll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <ares.h>
#include <pthread.h>

#include "dns.h"
#include "loop.h"

struct dns_sock {
	struct eg_io	 io;
	struct eg_dns	*dns;
	struct dns_sock	*next;
};

struct eg_dns {
	struct eg_loop	*loop;
	ares_channel	 ch;
	struct eg_timer	 tmo;
	struct dns_sock	*socks;
	struct dns_sock	*dead;		/* closed; freed by eg_dns_reap() */
	unsigned	 timeout_ms;	/* the bound of one lookup */
	unsigned	 tries;
	unsigned	 pending;	/* lookups c-ares still holds */
	struct eg_dns	*retired;	/* older resolvers, freed when idle */
};

struct dns_query {
	struct eg_dns	*dns;
	eg_dns_cb	*cb;		/* NULL: answered (timed out) */
	void		*arg;
	struct eg_timer	 tmo;		/* the lookup's deadline */
};

static pthread_once_t dns_once = PTHREAD_ONCE_INIT;

static void
dns_lib_init(void)
{
	ares_library_init(ARES_LIB_INIT_ALL);
}

static void
dns_rearm(struct eg_dns *dns)
{
	struct timeval tv, *tvp;

	tvp = ares_timeout(dns->ch, NULL, &tv);
	if (tvp == NULL) {
		eg_timer_stop(dns->loop, &dns->tmo);
		return;
	}
	eg_timer_arm(dns->loop, &dns->tmo,
	    (uint64_t)tvp->tv_sec * 1000 + (uint64_t)tvp->tv_usec / 1000 + 1);
}

static void
dns_timeout(void *arg)
{
	struct eg_dns *dns = arg;

	ares_process_fd(dns->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	dns_rearm(dns);
}

static void
dns_io(void *arg, uint32_t events)
{
	struct dns_sock *s = arg;
	struct eg_dns *dns = s->dns;
	int fd = s->io.fd;
	ares_socket_t r, w;

	r = (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? fd : ARES_SOCKET_BAD;
	w = (events & EPOLLOUT) ? fd : ARES_SOCKET_BAD;
	/* s may be freed inside (the socket closes): do not touch it after */
	ares_process_fd(dns->ch, r, w);
	dns_rearm(dns);
}

static void
dns_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct eg_dns *dns = data;
	struct dns_sock *s, **sp;

	for (sp = &dns->socks; (s = *sp) != NULL; sp = &s->next)
		if (s->io.fd == fd)
			break;
	if (!readable && !writable) {
		if (s != NULL) {
			eg_io_del(dns->loop, &s->io);
			*sp = s->next;
			/* the loop may still hold an event for this io in
			 * the current batch: free it after the batch */
			s->next = dns->dead;
			dns->dead = s;
		}
		return;
	}
	if (s == NULL) {
		if ((s = eg_calloc(1, sizeof(*s))) == NULL)
			return;
		s->dns = dns;
		eg_io_init(&s->io, fd, dns_io, s);
		s->next = dns->socks;
		dns->socks = s;
	}
	eg_io_set(dns->loop, &s->io, (readable ? EPOLLIN : 0) |
	    (writable ? EPOLLOUT : 0));
}

/*
 * The wait of the first round of queries: c-ares doubles it for each
 * further round (per server: timeout << (try / nservers)), so with one
 * server the rounds add up to timeout_ms.  The lookup's own deadline
 * (dns_query.tmo) is what bounds it in every case.
 */
static int
dns_first_wait(unsigned timeout_ms, unsigned tries)
{
	unsigned rounds = (1u << (tries > 8 ? 8 : tries)) - 1;
	unsigned ms = timeout_ms / (rounds ? rounds : 1);

	return (int)(ms > 0 ? ms : 1);
}

struct eg_dns *
eg_dns_new(struct eg_loop *loop, const char *servers, unsigned timeout_ms,
    unsigned tries, struct eg_err *err)
{
	struct ares_options opt;
	struct eg_dns *dns;
	int rc;

	pthread_once(&dns_once, dns_lib_init);
	if ((dns = eg_calloc(1, sizeof(*dns))) == NULL) {
		eg_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	dns->loop = loop;
	dns->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
	dns->tries = tries > 0 ? tries : 2;
	eg_timer_init(&dns->tmo, dns_timeout, dns);
	memset(&opt, 0, sizeof(opt));
	opt.sock_state_cb = dns_sock_state;
	opt.sock_state_cb_data = dns;
	opt.timeout = dns_first_wait(dns->timeout_ms, dns->tries);
	opt.tries = (int)dns->tries;
	/*
	 * Only the absolute name, as decided: no search list (resolv.conf
	 * search/domain, LOCALDOMAIN, the host's own domain), so ndots
	 * (RES_OPTIONS, resolv.conf) has nothing to choose from, and no
	 * HOSTALIASES.  ARES_FLAG_NOSEARCH alone is not enough:
	 * ares_getaddrinfo() of c-ares 1.18 walks channel->domains without
	 * looking at it; an empty domain list it does honour.
	 */
	opt.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	opt.ndots = 1;
	opt.domains = NULL;
	opt.ndomains = 0;
	rc = ares_init_options(&dns->ch, &opt, ARES_OPT_SOCK_STATE_CB |
	    ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_FLAGS |
	    ARES_OPT_NDOTS | ARES_OPT_DOMAINS);
	if (rc != ARES_SUCCESS) {
		eg_err_set(err, rc, "c-ares init: %s", ares_strerror(rc));
		eg_free(dns);
		return NULL;
	}
	if (servers != NULL && eg_dns_set_servers(dns, servers, err) == -1) {
		ares_destroy(dns->ch);
		eg_free(dns);
		return NULL;
	}
	return dns;
}

int
eg_dns_set_servers(struct eg_dns *dns, const char *servers,
    struct eg_err *err)
{
	int rc;

	if (servers == NULL)
		return 0;
	rc = ares_set_servers_ports_csv(dns->ch, servers);
	if (rc != ARES_SUCCESS)
		return eg_err_set(err, rc, "dns_servers %s: %s", servers,
		    ares_strerror(rc));
	return 0;
}

/*
 * The old channel's servers into the new one, as the CSV both ends of
 * c-ares know (ares_set_servers_ports_csv() is in every version we
 * support; the getter ares_get_servers_csv() only from 1.24 on, and the
 * struct getter it replaces is deprecated in 1.34: configure picks).
 */
static int
copy_servers(struct eg_dns *from, struct eg_dns *to)
{
#ifdef HAVE_ARES_GET_SERVERS_CSV
	char *csv;
	int rc;

	if ((csv = ares_get_servers_csv(from->ch)) == NULL)
		return ARES_ENOMEM;
	rc = ares_set_servers_ports_csv(to->ch, csv);
	ares_free_string(csv);
	return rc;
#else
	struct ares_addr_port_node *list = NULL, *n;
	char csv[2048], a[INET6_ADDRSTRLEN];
	size_t len = 0;
	int rc, w;

	if ((rc = ares_get_servers_ports(from->ch, &list)) != ARES_SUCCESS)
		return rc;
	csv[0] = '\0';
	for (n = list; n != NULL && rc == ARES_SUCCESS; n = n->next) {
		if (inet_ntop(n->family, &n->addr, a, sizeof(a)) == NULL) {
			rc = ARES_EBADFAMILY;
			break;
		}
		/* port 0: the channel's default */
		if (n->udp_port == 0)
			w = snprintf(csv + len, sizeof(csv) - len, "%s%s",
			    len > 0 ? "," : "", a);
		else
			w = snprintf(csv + len, sizeof(csv) - len,
			    n->family == AF_INET6 ? "%s[%s]:%d" : "%s%s:%d",
			    len > 0 ? "," : "", a, n->udp_port);
		if (w < 0 || (size_t)w >= sizeof(csv) - len)
			rc = ARES_EBADSTR;
		else
			len += (size_t)w;
	}
	ares_free_data(list);
	return rc == ARES_SUCCESS ? ares_set_servers_ports_csv(to->ch, csv) :
	    rc;
#endif
}

int
eg_dns_configure(struct eg_dns **dnsp, const char *servers,
    unsigned timeout_ms, unsigned tries, struct eg_err *err)
{
	struct eg_dns *dns = *dnsp, *nd;

	if (timeout_ms == dns->timeout_ms && tries == dns->tries)
		return eg_dns_set_servers(dns, servers, err);
	/*
	 * c-ares cannot change the timeout or the tries of a channel: a new
	 * resolver takes the new lookups; the old one finishes its own and
	 * is freed by eg_dns_reap() once it holds none.  (Its servers carry
	 * over when the configuration names none.)
	 */
	if ((nd = eg_dns_new(dns->loop, NULL, timeout_ms, tries, err)) == NULL)
		return -1;
	if (servers == NULL) {
		int rc = copy_servers(dns, nd);

		if (rc != ARES_SUCCESS) {
			eg_err_set(err, rc, "dns servers: %s",
			    ares_strerror(rc));
			eg_dns_free(nd);
			return -1;
		}
	} else if (eg_dns_set_servers(nd, servers, err) == -1) {
		eg_dns_free(nd);
		return -1;
	}
	nd->retired = dns;
	*dnsp = nd;
	return 0;
}

void
eg_dns_reap(struct eg_dns *dns)
{
	struct dns_sock *s;
	struct eg_dns **rp, *r;

	while ((s = dns->dead) != NULL) {
		dns->dead = s->next;
		eg_free(s);
	}
	for (rp = &dns->retired; (r = *rp) != NULL; ) {
		eg_dns_reap(r);
		if (r->pending == 0) {
			*rp = r->retired;
			r->retired = NULL;
			eg_dns_free(r);
		} else
			rp = &r->retired;
	}
}

void
eg_dns_free(struct eg_dns *dns)
{
	struct dns_sock *s, *next;

	if (dns == NULL)
		return;
	eg_dns_free(dns->retired);
	/* pending callbacks run with ARES_EDESTRUCTION */
	ares_destroy(dns->ch);
	eg_timer_stop(dns->loop, &dns->tmo);
	for (s = dns->socks; s != NULL; s = next) {
		next = s->next;
		eg_io_del(dns->loop, &s->io);
		eg_free(s);
	}
	eg_dns_reap(dns);
	eg_free(dns);
}

static void
dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct dns_query *q = arg;
	struct sockaddr_storage addrs[EG_DNS_MAXADDR];
	struct ares_addrinfo_node *ai;
	size_t n = 0;

	(void)timeouts;
	eg_timer_stop(q->dns->loop, &q->tmo);
	q->dns->pending--;
	if (q->cb == NULL) {		/* answered at its deadline */
		if (res != NULL)
			ares_freeaddrinfo(res);
		eg_free(q);
		return;
	}
	if (status == ARES_SUCCESS && res != NULL) {
		for (ai = res->nodes; ai != NULL && n < EG_DNS_MAXADDR;
		    ai = ai->ai_next) {
			if (ai->ai_family != AF_INET &&
			    ai->ai_family != AF_INET6)
				continue;
			if ((size_t)ai->ai_addrlen > sizeof(addrs[0]))
				continue;
			memset(&addrs[n], 0, sizeof(addrs[n]));
			memcpy(&addrs[n], ai->ai_addr, ai->ai_addrlen);
			n++;
		}
	}
	if (res != NULL)
		ares_freeaddrinfo(res);
	if (n == 0)
		q->cb(q->arg, -1, status == ARES_SUCCESS ? "no address" :
		    ares_strerror(status), NULL, 0);
	else
		q->cb(q->arg, 0, NULL, addrs, n);
	eg_free(q);
}

/* The deadline: answer "timed out" now; c-ares's callback comes later. */
static void
dns_deadline(void *arg)
{
	struct dns_query *q = arg;
	eg_dns_cb *cb = q->cb;
	char why[64];

	q->cb = NULL;
	snprintf(why, sizeof(why), "no answer within %u ms",
	    q->dns->timeout_ms);
	cb(q->arg, -1, why, NULL, 0);
}

void
eg_dns_lookup(struct eg_dns *dns, const char *name, eg_dns_cb *cb, void *arg)
{
	struct ares_addrinfo_hints hints;
	struct dns_query *q;

	if ((q = eg_malloc(sizeof(*q))) == NULL) {
		cb(arg, -1, "out of memory", NULL, 0);
		return;
	}
	q->dns = dns;
	q->cb = cb;
	q->arg = arg;
	/* armed first: dns_done() may run inside ares_getaddrinfo() */
	eg_timer_init(&q->tmo, dns_deadline, q);
	eg_timer_arm(dns->loop, &q->tmo, dns->timeout_ms);
	dns->pending++;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = ARES_AI_NOSORT;
	/* may call dns_done() before it returns */
	ares_getaddrinfo(dns->ch, name, NULL, &hints, dns_done, q);
	dns_rearm(dns);
}
