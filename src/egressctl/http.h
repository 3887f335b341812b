/*
 * http.h: egressctl's tiny HTTP/1.1 client (http.c): one request to the
 * admin API (ctl_admin: a Unix socket or loopback TCP, with ctl_token
 * as bearer token over TCP), Connection: close, the whole answer read.
 */
#ifndef EGRESSCTL_HTTP_H
#define EGRESSCTL_HTTP_H

#include <stddef.h>

#define RESP_MAX	(64u << 20)	/* largest answer we read */
#define IO_TIMEOUT_S	120	/* a phase switch may close many */

struct resp {
	int	 status;
	char	*raw;		/* the whole answer; the caller frees it */
	size_t	 rawlen;
	char	*body;		/* NUL-terminated, inside raw */
	size_t	 len;
};

/* 1 when an admin address is a Unix socket path (it has a '/'). */
int	is_unix(const char *a);
/*
 * One request (body: JSON or NULL); the answer in *r.  Returns 0, or
 * EX_UNREACH (EX_USAGE for a request too long) after saying why on
 * standard error.
 */
int	http(const char *method, const char *path, const char *body,
	    struct resp *r);

#endif
