/*
 * select.c: choosing which resolved addresses may be dialed.  Kept apart
 * from conn.c so the rule "the connection goes to an address that was
 * checked" is one small pure function with its own unit tests.
 */
#include "egress-int.h"

#include <netinet/in.h>

#include "addrclass.h"
#include "select.h"

enum eg_select
eg_addr_select(struct sockaddr_storage *addrs, size_t n, uint16_t port,
    int deny_private, int trusted, eg_is_loop_fn *is_loop, void *arg,
    size_t *left)
{
	size_t i, k = 0;
	int loop = 0;

	for (i = 0; i < n; i++) {
		if (addrs[i].ss_family == AF_INET)
			((struct sockaddr_in *)&addrs[i])->sin_port =
			    htons(port);
		else if (addrs[i].ss_family == AF_INET6)
			((struct sockaddr_in6 *)&addrs[i])->sin6_port =
			    htons(port);
		else
			continue;	/* not dialable */
		if (is_loop != NULL &&
		    is_loop(arg, (struct sockaddr *)&addrs[i])) {
			loop++;
			continue;
		}
		if (deny_private && !trusted &&
		    eg_sa_private((struct sockaddr *)&addrs[i]) != NULL)
			continue;
		if (k != i)
			addrs[k] = addrs[i];
		k++;
	}
	*left = k;
	if (k > 0)
		return EG_SELECT_OK;
	return loop ? EG_SELECT_LOOP : EG_SELECT_PRIVATE;
}
