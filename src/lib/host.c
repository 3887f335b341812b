/*
 * host.c: turns the host and port a client sent into one canonical form,
 * or refuses them.  A host is an ASCII LDH DNS name, a canonical dotted
 * quad, or a bracketed IPv6 literal; every other IPv4 spelling is refused
 * so that policy matching never sees two names for one address.
 */
#include "egress-int.h"

#include <arpa/inet.h>

#include "host.h"

#define LABEL_MAX	63

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int
is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static unsigned char
to_lower(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 'a';
	return c;
}

static int
fail(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return -1;
}

/*
 * Parse the inside of "[...]" (len bytes at s) as an IPv6 address.  The
 * text is copied to a bounded local buffer because inet_pton() needs a
 * NUL-terminated string; h->name gets inet_ntop()'s canonical form.
 */
static int
host_parse_v6(const char *s, size_t len, struct eg_host *h, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 1], out[INET6_ADDRSTRLEN];
	size_t i;
	unsigned char c;

	if (len == 0)
		return fail(why, "empty IPv6 literal");
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '%')
			return fail(why, "zone id not allowed");
		if (!is_hex(c) && c != ':' && c != '.')
			return fail(why, "bad character in IPv6 literal");
	}
	if (len >= sizeof(buf))
		return fail(why, "bad IPv6 literal");
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, &h->ip.v6) != 1)
		return fail(why, "bad IPv6 literal");
	if (inet_ntop(AF_INET6, &h->ip.v6, out, sizeof(out)) == NULL)
		return fail(why, "bad IPv6 literal");
	h->kind = EG_HOST_V6;
	h->len = (size_t)snprintf(h->name, sizeof(h->name), "[%s]", out);
	return 0;
}

/* Is the label numeric: all digits, or "0x" followed by hex digits? */
static int
label_numeric(const char *l, size_t len)
{
	size_t i;

	if (len >= 2 && l[0] == '0' && l[1] == 'x') {
		for (i = 2; i < len; i++)
			if (!is_hex((unsigned char)l[i]))
				return 0;
		return 1;
	}
	for (i = 0; i < len; i++)
		if (!is_digit((unsigned char)l[i]))
			return 0;
	return 1;
}

/*
 * The lower-cased name (len bytes at n, labels already checked) ends in
 * a numeric label, so it must be a canonical dotted quad: four decimal
 * parts, 0-255, no leading zeros.
 */
static int
host_parse_v4(const char *n, size_t len, struct eg_host *h, const char **why)
{
	uint32_t a = 0;
	unsigned int part, nparts = 0, ndig;
	size_t i = 0;

	while (nparts < 4) {
		part = 0;
		ndig = 0;
		while (i < len && is_digit((unsigned char)n[i])) {
			if (ndig == 1 && part == 0)
				return fail(why, "non-canonical IPv4");
			part = part * 10 + (unsigned int)(n[i] - '0');
			if (part > 255)
				return fail(why, "non-canonical IPv4");
			ndig++;
			i++;
		}
		if (ndig == 0)
			return fail(why, "non-canonical IPv4");
		a = (a << 8) | part;
		nparts++;
		if (nparts < 4) {
			if (i >= len || n[i] != '.')
				return fail(why, "non-canonical IPv4");
			i++;
		}
	}
	if (i != len)
		return fail(why, "non-canonical IPv4");
	h->kind = EG_HOST_V4;
	h->ip.v4.s_addr = htonl(a);
	return 0;
}

int
eg_host_parse(const char *s, size_t len, struct eg_host *h, const char **why)
{
	size_t i, lstart, llen;
	unsigned char c;

	memset(h, 0, sizeof(*h));
	if (len == 0)
		return fail(why, "empty host");
	if (s[0] == '[') {
		if (len < 2 || s[len - 1] != ']')
			return fail(why, "bad IPv6 literal");
		return host_parse_v6(s + 1, len - 2, h, why);
	}

	/* Character set first, so the reasons below speak of structure. */
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == ':')
			return fail(why, "IPv6 literal needs brackets");
		if (c != '.' && c != '-' && !is_digit(c) &&
		    !(to_lower(c) >= 'a' && to_lower(c) <= 'z'))
			return fail(why, "bad character in host");
	}
	/* One trailing dot is the root; a second one is an empty label. */
	if (s[len - 1] == '.')
		len--;
	if (len == 0)
		return fail(why, "empty label");
	if (len > EG_HOST_MAX)
		return fail(why, "name too long");
	for (i = 0; i < len; i++)
		h->name[i] = (char)to_lower((unsigned char)s[i]);
	h->name[len] = '\0';
	h->len = len;

	lstart = 0;
	for (i = 0; i <= len; i++) {
		if (i < len && h->name[i] != '.')
			continue;
		llen = i - lstart;
		if (llen == 0)
			return fail(why, "empty label");
		if (llen > LABEL_MAX)
			return fail(why, "label too long");
		if (h->name[lstart] == '-' || h->name[i - 1] == '-')
			return fail(why, "hyphen at label edge");
		if (i < len)
			lstart = i + 1;
	}
	/* lstart is now the start of the last label. */
	if (label_numeric(h->name + lstart, len - lstart))
		return host_parse_v4(h->name, len, h, why);
	h->kind = EG_HOST_NAME;
	return 0;
}

int
eg_port_parse(const char *s, size_t len, uint16_t *port)
{
	uint32_t v = 0;
	size_t i;

	if (len == 0 || len > 5 || s[0] == '0')
		return -1;
	for (i = 0; i < len; i++) {
		if (!is_digit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
eg_authority_parse(const char *s, size_t len, struct eg_host *h,
    uint16_t *port, const char **why)
{
	size_t hlen, i;

	memset(h, 0, sizeof(*h));
	if (len == 0)
		return fail(why, "empty authority");
	if (s[0] == '[') {
		for (hlen = 1; hlen < len && s[hlen] != ']'; hlen++)
			;
		if (hlen == len)
			return fail(why, "bad IPv6 literal");
		hlen++;		/* include ']' */
		if (hlen == len)
			return fail(why, "missing port");
		if (s[hlen] != ':')
			return fail(why, "bad character after IPv6 literal");
	} else {
		for (hlen = 0; hlen < len && s[hlen] != ':'; hlen++)
			;
		if (hlen == len)
			return fail(why, "missing port");
		for (i = hlen + 1; i < len; i++)
			if (s[i] == ':')
				return fail(why, "IPv6 literal needs brackets");
	}
	if (eg_port_parse(s + hlen + 1, len - hlen - 1, port) == -1)
		return fail(why, "bad port");
	return eg_host_parse(s, hlen, h, why);
}

int
eg_addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		return snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		return snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
	return -1;
}
