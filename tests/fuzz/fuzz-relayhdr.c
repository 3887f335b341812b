/*
 * fuzz-relayhdr.c: libFuzzer entry point for the relay's handoff header
 * parser (src/lib/relayhdr.c), which reads what reaches egressd's relay
 * socket.  Besides memory errors it checks the parser's promises: a
 * "need more" answer asks for more than it has and at most EG_RLY_MAX;
 * every prefix of a decided input is "need more" or the same answer; a
 * good header's identity is what the builder wrote back, byte for byte;
 * and a header built from the parsed identity parses to it again.
 */
#include <stdlib.h>
#include <string.h>

#include "relayhdr.h"

#define PREFIX_MAX	512

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct eg_relay_id id, pid;
static uint8_t out[EG_RLY_MAX];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why;
	size_t need, pneed, i, len;
	int r, pr;

	r = eg_relay_hdr_parse(data, size, &need, &id, &why);
	if (r < -1 || r > 1)
		abort();
	if (r == 0 && (need <= size || need > EG_RLY_MAX))
		abort();
	if (r == -1 && why == NULL)
		abort();
	if (r == 1 && (need > size || need > EG_RLY_MAX ||
	    strlen(id.exe) != id.exelen))
		abort();
	/* every prefix of a small input; of a large one, the first bytes */
	for (i = 0; i < size && i <= PREFIX_MAX; i++) {
		pr = eg_relay_hdr_parse(data, i, &pneed, &pid, &why);
		if (pr != 0 && pr != r)
			abort();
		if (r == 1 && i < need && pr != 0)
			abort();
	}
	if (r != 1)
		return 0;
	/* what it read, written again, reads the same */
	len = eg_relay_hdr_build(out, sizeof(out), 0x0100007f, 0x3412,
	    0x0100007f, 0x3c0c, id.pid, id.exe);
	if (len == 0 || eg_relay_hdr_parse(out, len, &pneed, &pid, &why) != 1 ||
	    pneed != len || pid.pid != id.pid || pid.exelen != id.exelen ||
	    memcmp(pid.exe, id.exe, id.exelen + 1) != 0)
		abort();
	return 0;
}
