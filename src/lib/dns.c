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
};

struct dns_query {
	eg_dns_cb	*cb;
	void		*arg;
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
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return;
		s->dns = dns;
		eg_io_init(&s->io, fd, dns_io, s);
		s->next = dns->socks;
		dns->socks = s;
	}
	eg_io_set(dns->loop, &s->io, (readable ? EPOLLIN : 0) |
	    (writable ? EPOLLOUT : 0));
}

struct eg_dns *
eg_dns_new(struct eg_loop *loop, const char *servers, struct eg_err *err)
{
	struct ares_options opt;
	struct eg_dns *dns;
	int rc;

	pthread_once(&dns_once, dns_lib_init);
	if ((dns = calloc(1, sizeof(*dns))) == NULL) {
		eg_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	dns->loop = loop;
	eg_timer_init(&dns->tmo, dns_timeout, dns);
	memset(&opt, 0, sizeof(opt));
	opt.sock_state_cb = dns_sock_state;
	opt.sock_state_cb_data = dns;
	opt.timeout = 2000;
	opt.tries = 2;
	rc = ares_init_options(&dns->ch, &opt, ARES_OPT_SOCK_STATE_CB |
	    ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS) {
		eg_err_set(err, rc, "c-ares init: %s", ares_strerror(rc));
		free(dns);
		return NULL;
	}
	if (servers != NULL && eg_dns_set_servers(dns, servers, err) == -1) {
		ares_destroy(dns->ch);
		free(dns);
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

void
eg_dns_reap(struct eg_dns *dns)
{
	struct dns_sock *s;

	while ((s = dns->dead) != NULL) {
		dns->dead = s->next;
		free(s);
	}
}

void
eg_dns_free(struct eg_dns *dns)
{
	struct dns_sock *s, *next;

	if (dns == NULL)
		return;
	/* pending callbacks run with ARES_EDESTRUCTION */
	ares_destroy(dns->ch);
	eg_timer_stop(dns->loop, &dns->tmo);
	for (s = dns->socks; s != NULL; s = next) {
		next = s->next;
		eg_io_del(dns->loop, &s->io);
		free(s);
	}
	eg_dns_reap(dns);
	free(dns);
}

static void
dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct dns_query *q = arg;
	struct sockaddr_storage addrs[EG_DNS_MAXADDR];
	struct ares_addrinfo_node *ai;
	size_t n = 0;

	(void)timeouts;
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
	free(q);
}

void
eg_dns_lookup(struct eg_dns *dns, const char *name, eg_dns_cb *cb, void *arg)
{
	struct ares_addrinfo_hints hints;
	struct dns_query *q;

	if ((q = malloc(sizeof(*q))) == NULL) {
		cb(arg, -1, "out of memory", NULL, 0);
		return;
	}
	q->cb = cb;
	q->arg = arg;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = ARES_AI_NOSORT;
	/* may call dns_done() before it returns */
	ares_getaddrinfo(dns->ch, name, NULL, &hints, dns_done, q);
	dns_rearm(dns);
}
