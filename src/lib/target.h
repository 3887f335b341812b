/*
 * target.h: what one request is decided about, owned by its connection
 * (struct eg_conn's `t`): the host and port as parsed, the addresses to
 * connect to, whether the operator wrote them, and the decision's result
 * (the matched rule, report mode, the phase).  conn_decide() fills it in
 * one pass under the read lock; the ALLOW and CLOSE lines, the refusal
 * bodies, the SNI check and the recheck after a phase switch all read
 * it.  The parser's copy of the host (struct eg_req) is not used after
 * the target is set.
 */
#ifndef EG_TARGET_H
#define EG_TARGET_H

#include <sys/socket.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "dns.h"
#include "host.h"

struct eg_phase;
struct eg_rule;

struct eg_target {
	struct eg_host	 host;		/* len 0: none (no head yet) */
	uint16_t	 port;		/* 0: a raw, unparsed target */
	struct sockaddr_storage *addrs;	/* to connect to: EG_DNS_MAXADDR slots
					   in the head buffer, until the
					   tunnel opens */
	size_t		 naddr, ai;	/* how many; the next to try */
	char		 addr[INET6_ADDRSTRLEN];	/* the one tried last */
	int		 trusted;	/* addresses the operator wrote */
	const struct eg_rule *rule;	/* the rule that allowed; NULL in
					   report mode */
	int		 report;	/* allowed only by report mode */
	const struct eg_phase *phase;	/* of the decision; in c->cfg */
	uint64_t	 gen;		/* sess->gen at the decision */
};

#endif
