/*
 * fuzz-sni.c: libFuzzer entry point for the ClientHello SNI parser.  Besides
 * looking for memory errors it checks the parser's promises: a found name
 * is well formed and matches itself, a full buffer never asks for more, and
 * on small inputs every prefix is AGAIN until the answer, which then stays.
 */
#include "egress-int.h"

#include "sni.h"

#define PREFIX_MAX	1024	/* inputs up to this size get every prefix */

static void
check_name(const char *name, size_t nl)
{
	size_t i;

	if (nl == 0 || nl > EG_SNI_NAME_MAX || strlen(name) != nl)
		abort();
	for (i = 0; i < nl; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= '0' && name[i] <= '9') ||
		    name[i] == '-' || name[i] == '.'))
			abort();
	if (!eg_sni_match(name, nl, name, nl))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[EG_SNI_NAME_MAX + 1], pname[EG_SNI_NAME_MAX + 1];
	size_t nl, pnl, i;
	enum eg_sni r, pr;

	r = eg_sni_parse(data, size, name, sizeof(name), &nl);
	if (r > EG_SNI_BAD)
		abort();
	if (r == EG_SNI_FOUND)
		check_name(name, nl);
	if (r == EG_SNI_AGAIN && size >= EG_SNI_BUF_MAX)
		abort();
	if (eg_sni_parse(data, size, NULL, 0, NULL) != r)
		abort();
	/* A name that does not fit the caller's buffer is BAD, never cut. */
	if (r == EG_SNI_FOUND && nl > 0 &&
	    eg_sni_parse(data, size, pname, nl, &pnl) != EG_SNI_BAD)
		abort();

	if (size > PREFIX_MAX)
		return 0;
	for (i = 0; i < size; i++) {
		pr = eg_sni_parse(data, i, pname, sizeof(pname), &pnl);
		if (pr == EG_SNI_AGAIN)
			continue;
		/* A decided prefix decides the whole input the same way. */
		if (pr != r)
			abort();
		if (pr == EG_SNI_FOUND &&
		    (pnl != nl || memcmp(pname, name, nl + 1) != 0))
			abort();
	}
	return 0;
}
