/*
 * shared.h: the few rules the daemon and egressctl must agree on.
 * egressctl links neither libegress nor its dependencies, so these are
 * header-only: the phase- and session-name grammars, a hex digit, and how
 * a bearer token file is read.
 */
#ifndef EG_SHARED_H
#define EG_SHARED_H

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define EG_PHASE_NAME_MAX	64	/* bytes */
#define EG_TOKEN_MAX		4096	/* bytes */
#define EG_TOKEN_MIN		16	/* bytes */

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

#define EG_SESSION_NAME_MAX	64	/* bytes */

/*
 * A session name: 1 to EG_SESSION_NAME_MAX of A-Z a-z 0-9 . _ -, not
 * beginning with '.' or '-' (so NAME.sock is never a dot file and a
 * name is never taken for an option).
 */
static inline int
eg_session_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > EG_SESSION_NAME_MAX || s[0] == '.' ||
	    s[0] == '-')
		return 0;
	return eg_phase_name_ok(s, len);
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
 * The rule for a file holding a secret (the admin token, a private
 * signing key): a regular file that neither group nor others may read
 * or write.  st is the opened file's fstat(); what names the secret in
 * the message ("the token", "the private key").  NULL, or msg saying why
 * not and how to fix it (the caller names the file).
 */
static inline const char *
eg_secret_mode_why(const struct stat *st, const char *path,
    const char *what, char *msg, size_t msglen)
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(msg, msglen, "not a regular file");
		return msg;
	}
	if ((st->st_mode & 077) != 0) {
		snprintf(msg, msglen, "permissions %04o are too open: group "
		    "or others may access %s; run 'chmod 600 %s'",
		    (unsigned int)(st->st_mode & 07777), what, path);
		return msg;
	}
	return NULL;
}

/*
 * Read a bearer token file into buf (EG_TOKEN_MAX + 1 bytes): one word of
 * printable ASCII, EG_TOKEN_MIN to EG_TOKEN_MAX bytes, trailing white
 * space dropped, NUL-terminated.  Like ssh with a private key, a file
 * that is not a regular file, or that group or others may read or write,
 * is refused.  Returns NULL, or msg (msglen bytes) saying why not and how
 * to fix it; the caller names the file.  buf is wiped on error.
 */
static inline const char *
eg_token_read(const char *path, char buf[EG_TOKEN_MAX + 1], char *msg,
    size_t msglen)
{
	const char *why = NULL;
	struct stat st;
	size_t len = 0, i;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		snprintf(msg, msglen, "%s", strerror(errno));
		return msg;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(msg, msglen, "%s", strerror(errno));
		close(fd);
		return msg;
	}
	if (eg_secret_mode_why(&st, path, "the token", msg, msglen) != NULL) {
		close(fd);
		return msg;
	}
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
	if (why == NULL && len < EG_TOKEN_MIN) {
		snprintf(msg, msglen, "the token is %zu bytes; it must be at "
		    "least %d bytes (for example: head -c 32 /dev/urandom | "
		    "base64 > %s)", len, EG_TOKEN_MIN, path);
		why = msg;
	}
	if (why != NULL) {
		explicit_bzero(buf, EG_TOKEN_MAX + 1);
		if (why != msg)
			snprintf(msg, msglen, "%s", why);
		return msg;
	}
	buf[len] = '\0';
	return NULL;
}

#endif
