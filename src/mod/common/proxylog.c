/*
 * proxylog.c: the in-process proxy's log callback (see proxylog.h).
 */
#include <stdio.h>

#include "egress.h"
#include "proxylog.h"

void
mc_proxy_log(int level, const char *msg, void *arg)
{
	if (level <= EGRESS_LOG_WARN)
		fprintf(stderr, "%s%s\n", (const char *)arg, msg);
}
