/*
 * shared.h: the few rules the daemon and egressctl must agree on.
 * egressctl links neither libegress nor its dependencies, so these are
 * header-only: the phase-name grammar, a hex digit, and how a bearer token
 * file is read.
 */
#ifndef EG_SHARED_H
#define EG_SHARED_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#define EG_PHASE_NAME_MAX	64	/* bytes */
#define EG_TOKEN_MAX		4096	/* bytes */

/* A phase name: 1 to EG_PHASE_NAME_MAX of A-Z a-z 0-9 . _ - */
static inline int
eg_phase_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > EG_PHASE_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static inline int
eg_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Read a bearer token file into buf (EG_TOKEN_MAX + 1 bytes): one word of
 * printable ASCII, trailing white space dropped, NUL-terminated.  Returns
 * NULL, or why not (the caller names the file); buf is wiped on error.
 */
static inline const char *
eg_token_read(const char *path, char buf[EG_TOKEN_MAX + 1])
{
	const char *why = NULL;
	size_t len = 0, i;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return strerror(errno);
	while (len < EG_TOKEN_MAX + 1) {
		n = read(fd, buf + len, EG_TOKEN_MAX + 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
	    buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len > EG_TOKEN_MAX)
		why = "longer than 4096 bytes";
	else if (len == 0)
		why = "empty";
	for (i = 0; why == NULL && i < len; i++)
		if (buf[i] <= ' ' || buf[i] > '~')
			why = "the token must be one word of printable ASCII";
	if (why != NULL) {
		explicit_bzero(buf, EG_TOKEN_MAX + 1);
		return why;
	}
	buf[len] = '\0';
	return NULL;
}

#endif
