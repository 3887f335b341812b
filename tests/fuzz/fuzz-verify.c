/*
 * fuzz-verify.c: feeds arbitrary bytes to the audit chain verifier
 * (src/mod/record/verify.c) as one log file.  It must never crash, leak
 * or read beyond the input, whatever the lines (no newline, NULs, over
 * REC_LINE_MAX, chain-like suffixes, START and CHECKPOINT look-alikes);
 * an intact verdict is only possible for a log whose chain holds.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../src/mod/record/verify.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_result r;

	if (rec_verify_buf((const char *)data, size, &r) == 0 && !r.broken &&
	    (size == 0 || r.lines == 0))
		__builtin_trap();	/* an empty log is never intact */
	return 0;
}
