/*
 * fuzz-meter.c: libFuzzer target for the meter's JSON/SSE reader
 * (src/lib/meter.c): any upstream body, fed at once or in pieces of any
 * size, must give the same counts (the reader keeps state across reads,
 * in bounded memory), for both meters, framed chunked or not.  The first
 * byte picks the meter, the framing and the piece size.  One byte at a
 * time is the reader's byte by byte path: the runs it passes over at once
 * in larger pieces must count the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meter.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
run(struct eg_meter *m, enum eg_meter_kind k, int chunked, const uint8_t *p,
    size_t n, size_t step)
{
	size_t off = 0, len;

	eg_meter_init(m, k, chunked);
	while (off < n) {
		len = n - off < step ? n - off : step;
		eg_meter_feed(m, p + off, len);
		off += len;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eg_meter a, b, c;
	enum eg_meter_kind k;
	int chunked;
	size_t step;

	if (size == 0)
		return 0;
	k = data[0] & 1 ? EG_METER_OPENAI : EG_METER_ANTHROPIC;
	chunked = (data[0] >> 1) & 1;
	step = (size_t)(data[0] >> 2) + 1;
	run(&a, k, chunked, data + 1, size - 1, size);
	run(&b, k, chunked, data + 1, size - 1, step);
	run(&c, k, chunked, data + 1, size - 1, 1);
	if (a.in != b.in || a.out != b.out || a.cached != b.cached)
		abort();
	if (a.in != c.in || a.out != c.out || a.cached != c.cached)
		abort();
	if (a.in < -1 || a.out < -1 || a.cached < -1)
		abort();
	return 0;
}
