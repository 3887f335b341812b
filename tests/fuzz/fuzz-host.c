/*
 * fuzz-host.c: libFuzzer target for host and port normalisation.  A host
 * that parses must come out NUL-terminated, within bounds, made only of
 * the allowed bytes, and parse again to itself (normalisation is
 * idempotent); authority and port parsing must agree with each other.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_host(const struct eg_host *h)
{
	struct eg_host h2;
	const char *why;
	char txt[INET6_ADDRSTRLEN];
	size_t i;
	char c;

	if (h->len == 0 || h->len > EG_HOST_MAX + 2 ||
	    strlen(h->name) != h->len)
		abort();
	for (i = 0; i < h->len; i++) {
		c = h->name[i];
		if (h->kind == EG_HOST_V6) {
			if (!((c >= '0' && c <= '9') ||
			    (c >= 'a' && c <= 'f') || c == ':' || c == '.' ||
			    c == '[' || c == ']'))
				abort();
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    c == '-' || c == '.'))
			abort();
	}
	if (eg_host_parse(h->name, h->len, &h2, &why) != 0 ||
	    h2.kind != h->kind || strcmp(h2.name, h->name) != 0)
		abort();
	if (h->kind == EG_HOST_V4) {
		if (inet_ntop(AF_INET, &h->ip.v4, txt, sizeof(txt)) == NULL ||
		    strcmp(txt, h->name) != 0)
			abort();
	}
	if (h->kind == EG_HOST_V6 && memcmp(&h->ip.v6, &h2.ip.v6,
	    sizeof(h->ip.v6)) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eg_host h;
	const char *why = NULL;
	const char *s = (const char *)data;
	uint16_t port = 0, p2 = 0;
	size_t i;

	if (eg_host_parse(s, size, &h, &why) == 0)
		check_host(&h);
	else if (why == NULL)
		abort();

	why = NULL;
	if (eg_authority_parse(s, size, &h, &port, &why) == 0) {
		check_host(&h);
		if (port == 0)
			abort();
		/* The port is what follows the last ':'. */
		for (i = size; i > 0 && s[i - 1] != ':'; i--)
			;
		if (i == 0 || eg_port_parse(s + i, size - i, &p2) != 0 ||
		    p2 != port)
			abort();
	} else if (why == NULL)
		abort();

	if (eg_port_parse(s, size, &port) == 0 && (port == 0 || size > 5))
		abort();
	return 0;
}
