/*
 * host.h: normalisation and validation of a request's host and port
 * (SPEC "Proxy behaviour"), and a socket address as text.  Pure functions
 * over explicit lengths; no I/O.
 */
#ifndef EG_HOST_H
#define EG_HOST_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define EG_HOST_MAX	253	/* longest DNS name, without trailing dot */

enum eg_host_kind {
	EG_HOST_NAME,		/* an ASCII LDH DNS name */
	EG_HOST_V4,		/* a canonical dotted quad */
	EG_HOST_V6		/* a bracketed IPv6 literal */
};

struct eg_host {
	enum eg_host_kind kind;
	size_t		  len;			/* strlen(name) */
	/*
	 * Normalised text, NUL-terminated: lower case, trailing dot removed;
	 * IPv6 in brackets, in inet_ntop() form ("[::1]").
	 */
	char		  name[EG_HOST_MAX + 3];
	union {
		struct in_addr	v4;
		struct in6_addr	v6;
	}		  ip;			/* for EG_HOST_V4 / EG_HOST_V6 */
};

/*
 * Parse and normalise the host part of an authority (no port), len bytes
 * at s, which need not be NUL-terminated.  IPv6 must be in brackets.
 * Returns 0 and fills *h, or -1 with a short static reason in *why.
 */
int	eg_host_parse(const char *s, size_t len, struct eg_host *h,
	    const char **why);

/*
 * Parse "host:port" (the CONNECT authority form): the port is mandatory,
 * decimal, 1-65535, no sign, no leading zero, no whitespace.
 */
int	eg_authority_parse(const char *s, size_t len, struct eg_host *h,
	    uint16_t *port, const char **why);

/* Parse a decimal port of len bytes (1-65535, no leading zero). */
int	eg_port_parse(const char *s, size_t len, uint16_t *port);

/*
 * A TCP address as text into buf (len bytes): "192.0.2.1:80" or
 * "[2001:db8::1]:80".  Returns snprintf()'s count (len or more: cut), or
 * -1 for another family (buf untouched).
 */
int	eg_addr_text(const struct sockaddr *sa, char *buf, size_t len);

#endif
