/*
 * test-sealtail.c: rec_audit_tail() (src/mod/record/seal.c), the line
 * count and last chain value that "record seal" puts in record.json:
 * text and JSON lines, a last line without its newline, lines longer
 * than the tail it keeps, lines across its 64 KiB reads, and logs whose
 * last line is not chained.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "../../src/mod/record/seal.h"

static const char H1[] =
    "1111111111111111111111111111111111111111111111111111111111111111";
static const char H2[] =
    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";

/* Write buf to a temp file, run rec_audit_tail on it. */
static int
tail_of(const char *buf, size_t len, uint64_t *lines, char head[65])
{
	char path[] = "/tmp/test-sealtail.XXXXXX";
	int fd = mkstemp(path), rc;

	if (fd == -1)
		return -1;
	unlink(path);
	if (write(fd, buf, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	rc = rec_audit_tail(fd, lines, head);
	close(fd);
	return rc;
}

/* n bytes of filler then " chain=H" and, if nl, a newline */
static size_t
line(char *out, size_t n, const char *h, int json, int nl)
{
	size_t k;

	memset(out, 'x', n);
	k = n;
	if (json)
		k += (size_t)sprintf(out + k, ",\"chain\":\"%s\"}", h);
	else
		k += (size_t)sprintf(out + k, " chain=%s", h);
	if (nl)
		out[k++] = '\n';
	return k;
}

int
main(void)
{
	static char big[400000];
	char head[65];
	uint64_t lines;
	size_t n, off;

	n = line(big, 10, H1, 0, 1);
	n += line(big + n, 20, H2, 0, 1);
	ok(tail_of(big, n, &lines, head) == 0, "two text lines");
	is_int(lines, 2, "... 2 lines");
	is_str(head, H2, "... the last line's chain value");

	n = line(big, 10, H1, 1, 1);
	n += line(big + n, 20, H2, 1, 0);
	ok(tail_of(big, n, &lines, head) == 0 && lines == 2,
	    "JSON, the last line without its newline: still 2 lines");
	is_str(head, H2, "... its chain value");

	/* a 300 KB last line: longer than the kept tail and than a read */
	n = line(big, 10, H1, 0, 1);
	n += line(big + n, 300000, H2, 0, 1);
	ok(tail_of(big, n, &lines, head) == 0 && lines == 2,
	    "a 300 KB line counts as one");
	is_str(head, H2, "... its chain value, from its tail");

	/* every split of a line across the 64 KiB read boundary */
	for (off = 65536 - 80; off <= 65536 + 4; off++) {
		n = line(big, off - 1 - 71, H1, 0, 1);	/* ends at off */
		n += line(big + n, 30, H2, 0, 1);
		if (tail_of(big, n, &lines, head) != 0 || lines != 2 ||
		    strcmp(head, H2) != 0)
			break;
		n = line(big, off - 20, H1, 0, 1);	/* H1 across it */
		if (tail_of(big, n, &lines, head) != 0 || lines != 1 ||
		    strcmp(head, H1) != 0)
			break;
	}
	ok(off > 65536 + 4, "lines and chain values across the 64 KiB read "
	    "boundary (every split)");

	n = line(big, 10, H1, 0, 1);
	memcpy(big + n, "2026-12-01T17:00:00.000Z ALLOW x.test:443 id=1\n", 47);
	n += 47;
	ok(tail_of(big, n, &lines, head) == 0 && lines == 2 &&
	    head[0] == '\0', "an unchained last line: no head");
	n = line(big, 10, "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789", 0, 1);
	ok(tail_of(big, n, &lines, head) == 0 && head[0] == '\0',
	    "upper-case hex is not a chain value");
	ok(tail_of("", 0, &lines, head) == 0 && lines == 0 && head[0] == '\0',
	    "an empty log: 0 lines, no head");
	n = line(big, 10, H1, 0, 1);
	big[n++] = '\n';
	ok(tail_of(big, n, &lines, head) == 0 && lines == 2 &&
	    head[0] == '\0', "an empty last line counts and has no head");
	return done_testing();
}
