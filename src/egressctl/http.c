/*
 * http.c: egressctl's tiny HTTP/1.1 client (http.h): just enough HTTP
 * over a Unix socket or loopback TCP to call one admin route and read
 * its whole answer, chunked or not, up to RESP_MAX.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ctl.h"
#include "http.h"
#include "print.h"

static int
unreachable(const char *why)
{
	warnx_("cannot reach %s: %s (is egressd running with admin = %s?)",
	    ctl_admin, why, ctl_admin);
	return EX_UNREACH;
}

int
is_unix(const char *a)
{
	return strchr(a, '/') != NULL;
}

/* Connect to ctl_admin; -1 with errno set. */
static int
dial(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_un *sun = (struct sockaddr_un *)(void *)&ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)(void *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(void *)&ss;
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	char host[64];
	const char *colon, *h;
	socklen_t sl;
	size_t hlen;
	long port;
	char *end;
	int fd, e;

	memset(&ss, 0, sizeof(ss));
	if (is_unix(ctl_admin)) {
		if (strlen(ctl_admin) >= sizeof(sun->sun_path)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, ctl_admin, strlen(ctl_admin));
		sl = sizeof(*sun);
	} else {
		if ((colon = strrchr(ctl_admin, ':')) == NULL)
			goto bad;
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || *end != '\0' || end == colon + 1 || port < 1 ||
		    port > 65535)
			goto bad;
		h = ctl_admin;
		hlen = (size_t)(colon - ctl_admin);
		if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
			h++;
			hlen -= 2;
		}
		if (hlen >= sizeof(host))
			goto bad;
		memcpy(host, h, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
			sin->sin_family = AF_INET;
			sin->sin_port = htons((uint16_t)port);
			sl = sizeof(*sin);
		} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons((uint16_t)port);
			sl = sizeof(*sin6);
		} else
			goto bad;
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, sl) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
bad:
	errno = EINVAL;
	return -1;
}

static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Case-insensitive header lookup in the head [h, end); value, length. */
static const char *
header(const char *h, const char *end, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);
	const char *line, *eol, *v;

	for (line = h; line < end; line = eol + 1) {
		if ((eol = memchr(line, '\n', (size_t)(end - line))) == NULL)
			eol = end;
		if ((size_t)(eol - line) > nl && line[nl] == ':' &&
		    strncasecmp(line, name, nl) == 0) {
			v = line + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(eol - v);
			while (*vlen > 0 && (v[*vlen - 1] == '\r' ||
			    v[*vlen - 1] == ' '))
				(*vlen)--;
			return v;
		}
		if (eol == end)
			break;
	}
	return NULL;
}

/* Decode a chunked body in place; -1 if malformed. */
static int
dechunk(char *b, size_t len, size_t *out)
{
	size_t i = 0, o = 0, n;
	int d;

	for (;;) {
		n = 0;
		d = 0;
		while (i < len && ((b[i] >= '0' && b[i] <= '9') ||
		    (b[i] >= 'a' && b[i] <= 'f') ||
		    (b[i] >= 'A' && b[i] <= 'F'))) {
			if (n > RESP_MAX)
				return -1;
			n = n * 16 + (size_t)(b[i] <= '9' ? b[i] - '0' :
			    (b[i] | 0x20) - 'a' + 10);
			i++;
			d++;
		}
		if (d == 0)
			return -1;
		while (i < len && b[i] != '\n')
			i++;
		if (i++ >= len)
			return -1;
		if (n == 0)
			break;
		if (n > len - i)
			return -1;
		memmove(b + o, b + i, n);
		o += n;
		i += n;
		if (i < len && b[i] == '\r')
			i++;
		if (i < len && b[i] == '\n')
			i++;
	}
	*out = o;
	return 0;
}

int
http(const char *method, const char *path, const char *body, struct resp *r)
{
	char head[1024], *buf = NULL, *nb, *hend;
	const char *v;
	size_t cap = 0, len = 0, vlen, blen = body ? strlen(body) : 0, cl;
	ssize_t n;
	int fd, hn;

	memset(r, 0, sizeof(*r));
	if ((fd = dial()) == -1)
		return unreachable(strerror(errno));
	hn = snprintf(head, sizeof(head),
	    "%s %s HTTP/1.1\r\nHost: egressd\r\nUser-Agent: egressctl/%s\r\n"
	    "Connection: close\r\nAccept: application/json\r\n%s%s%s"
	    "%s", method, path, PACKAGE_VERSION,
	    ctl_token && !is_unix(ctl_admin) ? "Authorization: Bearer " : "",
	    ctl_token && !is_unix(ctl_admin) ? ctl_token : "",
	    ctl_token && !is_unix(ctl_admin) ? "\r\n" : "",
	    body ? "Content-Type: application/json\r\n" : "");
	if (hn < 0 || (size_t)hn >= sizeof(head) - 40) {
		close(fd);
		warnx_("request too long");
		return EX_USAGE;
	}
	hn += snprintf(head + hn, sizeof(head) - (size_t)hn,
	    "Content-Length: %zu\r\n\r\n", blen);
	if (write_all(fd, head, (size_t)hn) == -1 ||
	    (blen && write_all(fd, body, blen) == -1)) {
		close(fd);
		return unreachable(strerror(errno));
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 16384;
			nb = cap > RESP_MAX ? NULL : realloc(buf, cap);
			if (nb == NULL) {
				free(buf);
				close(fd);
				warnx_("answer too large");
				return EX_UNREACH;
			}
			buf = nb;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			free(buf);
			close(fd);
			return unreachable(strerror(errno));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
	    (hend = strstr(buf, "\r\n\r\n")) == NULL) {
		free(buf);
		return unreachable("not an HTTP answer (is that egressd's "
		    "admin socket?)");
	}
	r->status = atoi(buf + 9);
	r->raw = buf;
	r->rawlen = len;
	r->body = hend + 4;
	r->len = len - (size_t)(r->body - buf);
	v = header(buf, hend, "Transfer-Encoding", &vlen);
	if (v != NULL && vlen == 7 && strncasecmp(v, "chunked", 7) == 0) {
		if (dechunk(r->body, r->len, &r->len) == -1) {
			free(buf);
			return unreachable("malformed chunked answer");
		}
	} else if ((v = header(buf, hend, "Content-Length", &vlen)) != NULL) {
		cl = strtoul(v, NULL, 10);
		if (cl < r->len)
			r->len = cl;
	}
	r->body[r->len] = '\0';
	return 0;
}
