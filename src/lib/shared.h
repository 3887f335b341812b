/*
 * shared.h: the few rules the daemon and egressctl must agree on.
 * egressctl links neither libegress nor its dependencies, so these are
 * header-only: the phase- and session-name grammars, a hex digit, how
 * untrusted text is printed so that it cannot drive a terminal (UTF-8
 * aware: egressctl's output and the audit tools'), and how a bearer
 * token file is read.
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
 * The length of the valid UTF-8 sequence at p (n bytes available), its
 * code point in *cp; 0 if p does not start one (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, cut short).
 */
static inline size_t
eg_utf8_seq(const unsigned char *p, size_t n, unsigned long *cp)
{
	static const unsigned long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	unsigned long c;
	size_t len, i;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		c = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		c = p[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/*
 * Write n bytes of s to f so that they cannot drive a terminal: every
 * control character, C0 (but \n where nl allows it), DEL and C1 (U+0080
 * to U+009F, as UTF-8 or as a raw byte), and every byte that is not valid
 * UTF-8, becomes \xHH (per byte); other text passes unchanged.
 */
static inline void
eg_put_esc(FILE *f, const char *s, size_t n, int nl)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long cp;
	size_t i = 0, k, len;

	while (i < n) {
		len = eg_utf8_seq(p + i, n - i, &cp);
		if (len == 1 && (cp >= 0x20 || (nl && cp == '\n')) &&
		    cp != 0x7f) {
			putc((int)cp, f);
		} else if (len > 1 && cp > 0x9f) {
			fwrite(p + i, 1, len, f);
		} else {
			if (len == 0)
				len = 1;
			for (k = 0; k < len; k++)
				fprintf(f, "\\x%02x", p[i + k]);
		}
		i += len;
	}
}

/*
 * Write n bytes of s to f as a JSON string (quotes included) that cannot
 * drive a terminal either, by eg_put_esc()'s rules: '"' and '\\' are
 * escaped, control characters (C0, DEL, C1) become \u00XX and bytes that
 * are not UTF-8 \ufffd; other text passes unchanged.
 */
static inline void
eg_put_json_str(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long cp;
	size_t i = 0, len;

	putc('"', f);
	while (i < n) {
		len = eg_utf8_seq(p + i, n - i, &cp);
		if (len == 0) {
			fputs("\\ufffd", f);
			len = 1;
		} else if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (int)cp);
		else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			fprintf(f, "\\u%04lx", cp);
		else
			fwrite(p + i, 1, len, f);
		i += len;
	}
	putc('"', f);
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

/* Read fd into buf up to cap bytes, to its end or a read error: the length. */
static inline size_t
eg_read_upto(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len < cap) {
		n = read(fd, buf + len, cap - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	return len;
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
	size_t len, i;
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
	len = eg_read_upto(fd, buf, EG_TOKEN_MAX + 1);
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
