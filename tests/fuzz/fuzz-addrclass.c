/*
 * fuzz-addrclass.c: libFuzzer target for address classification.  Input
 * is a raw address: 4 bytes for IPv4, 16 for IPv6 (other sizes use what
 * is there, zero-padded).  An IPv6 address that embeds IPv4 must be
 * non-public exactly when the embedded address is, and the socket-address
 * form must agree with the raw form.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addrclass.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct in_addr v4;
	struct in6_addr v6;
	const char *c4, *c6, *ce;
	const uint8_t *b;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_addr, data, size < 4 ? size : 4);
	c4 = eg_addr_private(AF_INET, &sin.sin_addr);
	if (eg_sa_private((struct sockaddr *)&sin) != c4)
		abort();
	if (size == 4)
		return 0;

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	memcpy(&sin6.sin6_addr, data, size < 16 ? size : 16);
	v6 = sin6.sin6_addr;
	c6 = eg_addr_private(AF_INET6, &v6);
	if (eg_sa_private((struct sockaddr *)&sin6) != c6)
		abort();
	b = v6.s6_addr;
	/* Native non-public ranges win over embeddings. */
	if ((b[0] & 0xfe) == 0xfc || b[0] == 0xff ||
	    (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)) {
		if (c6 == NULL)
			abort();
		return 0;
	}
	if (eg_addr_v4_embedded(&v6, &v4)) {
		ce = eg_addr_private(AF_INET, &v4);
		if ((ce == NULL) != (c6 == NULL))
			abort();
		if (ce != NULL && (strchr(c6, ':') == NULL ||
		    strcmp(strchr(c6, ':') + 1, ce) != 0))
			abort();
	}
	return 0;
}
