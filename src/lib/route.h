/*
 * route.h: credential routes (SPEC "Routes"), the request path (route.c):
 * an origin-form request "METHOD /NAME/REST" on any proxy listener.  A
 * route's configuration (struct eg_route) is routecfg.h's; meter.c reads
 * token usage from the responses.
 */
#ifndef EG_ROUTE_H
#define EG_ROUTE_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "routecfg.h"

/* route.c, pure parts (the fuzz target's too) */
struct eg_req;
/* An origin-form target tg[0..len) ("/NAME/REST?Q"): the name's length
 * (at tg + 1) and REST's without the query (at tg + 1 + *nl). */
void	eg_route_split(const uint8_t *tg, size_t len, size_t *nl, size_t *pl);
/*
 * The upstream request head for q (parsed from buf): "METHOD REST HTTP/1.1"
 * (REST: buf[rest_off..+rest_len), query kept; "/" when empty), Host: the
 * upstream's authority, the client's end-to-end headers but Host,
 * x-api-key, authorization, the strip list and the names the route sets,
 * then the route's header lines and "Connection: keep-alive".  The length,
 * or -1 when cap is short.
 */
ssize_t	eg_route_upstream_head(const struct eg_route *, const uint8_t *buf,
	    const struct eg_req *q, size_t rest_off, size_t rest_len,
	    char *out, size_t cap);

#endif
