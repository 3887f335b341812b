/*
 * uuid.c: random UUIDs (v4) for run ids, and their check (uuid.h).
 */
#include "egress-int.h"

#include <sys/random.h>
#include <fcntl.h>
#include <unistd.h>

#include "loop.h"
#include "uuid.h"

void
eg_uuid4(char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[16];
	size_t i, o = 0;
	int fd;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* no getrandom (old kernel): the device, else the clock */
		memset(r, 0, sizeof(r));
		if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) != -1) {
			if (read(fd, r, sizeof(r)) != (ssize_t)sizeof(r))
				memset(r, 0, sizeof(r));
			close(fd);
		}
		for (i = 0; i < sizeof(int64_t); i++)
			r[i] ^= (unsigned char)(eg_wall_ms() >> (8 * i));
		r[8] ^= (unsigned char)getpid();
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);	/* version 4 */
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);	/* RFC 4122 variant */
	for (i = 0; i < sizeof(r); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[r[i] >> 4];
		out[o++] = hex[r[i] & 15];
	}
	out[o] = '\0';
}

int
eg_uuid_ok(const char *s)
{
	size_t i;

	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f') ||
		    (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	}
	return s[36] == '\0';
}
