/*
 * egressctl.c: the control CLI for egressd's admin API.  It speaks just
 * enough HTTP/1.1 over a Unix socket or loopback TCP to call one route,
 * parses the JSON answer with a small bounded reader, and prints it as
 * aligned text (or passes the JSON through with --json).  Exit status:
 * 0 ok, 1 the server refused, 2 usage, 3 cannot reach the server.
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
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "shared.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "dev"
#endif

#define EX_OK		0
#define EX_REFUSED	1
#define EX_USAGE	2
#define EX_UNREACH	3

#define RESP_MAX	(64u << 20)	/* largest answer we read */
#define JSON_DEPTH	32
#define IO_TIMEOUT_S	120	/* a phase switch may close many */

static const char usage_text[] =
"usage: egressctl [-s ADMIN] [-S SESSION] [--json] [--token-file FILE] COMMAND\n"
"\n"
"Talk to a running egressd through its admin API.\n"
"\n"
"Commands:\n"
"  status               version, current phase, uptime, connections\n"
"  phase                the current phase and its allowlist\n"
"  phase NAME           switch to phase NAME; with on_phase_change = close,\n"
"                       tunnels NAME does not allow are closed first\n"
"  phases               every phase and its allowlist (* marks the current)\n"
"  audit [--since SEQ] [--limit N] [-f]\n"
"                       recent audit events from the in-memory ring; -f\n"
"                       keeps following new ones (Ctrl-C to stop)\n"
"  reload               re-read egressd's configuration file (like SIGHUP);\n"
"                       on errors the old configuration stays\n"
"\n"
"Sessions (one egressd, many runs, each with its own phase):\n"
"  session ls           one session per line: NAME PHASE ACTIVE TOTAL ALLOWED\n"
"                       BLOCKED FAILED SOCKET LISTEN, tab-separated\n"
"  session new NAME [--phase P] [--listen ADDR:PORT] [--ttl SECONDS]\n"
"                       create a session; prints its socket path, then its\n"
"                       TCP address on a second line with --listen\n"
"  session show NAME    one session: phase, sockets, counters\n"
"  session rm NAME      delete it: its listeners and tunnels are closed\n"
"  -S NAME status|phase [P]|audit\n"
"                       the same commands, for session NAME only\n"
"\n"
"Options:\n"
"  -s, --socket ADMIN   where the admin API listens: a Unix socket path, or\n"
"                       ADDR:PORT for TCP (default: $EGRESSD_ADMIN, else\n"
"                       $XDG_RUNTIME_DIR/egressd/admin.sock, else\n"
"                       /tmp/egressd-UID/admin.sock, as egressd does)\n"
"  -S, --session NAME   direct status, phase and audit at session NAME\n"
"  -j, --json           print the server's JSON instead of text\n"
"  -t, --token-file FILE  bearer token for a TCP admin (default: the\n"
"                       EGRESSD_TOKEN environment variable)\n"
"  -h, --help           this text;  -V, --version  egressctl's version\n"
"\n"
"Exit status: 0 ok, 1 the server refused (unknown phase, bad reload...),\n"
"2 usage error, 3 cannot reach the server.\n"
"\n"
"Examples:\n"
"  egressctl phase agent          # setup is over: only the model API now\n"
"  egressctl -s 127.0.0.1:9090 --token-file /etc/egressd/admin.token status\n"
"  egressctl audit -f             # watch decisions as they happen\n"
"  sock=$(egressctl session new run-42 --phase setup)\n"
"  egressctl -S run-42 phase agent  # only run-42 switches\n"
"  egressctl session rm run-42\n";

static const char *admin;	/* -s */
static int json_out;		/* --json */
static const char *session;	/* -S */
static char *token;		/* TCP bearer token */
static int tty_bold;		/* stdout is a terminal, bold and colours
				   wanted (NO_COLOR unset or empty) */
static int tty_out;		/* stdout is a terminal */

/* --- terminal safety (eg_put_esc(), eg_utf8_seq(): shared.h) ---------- */

/*
 * Write a JSON text received from the server (n bytes) so that it stays
 * the same JSON but cannot drive a terminal: inside strings, control
 * characters (C0, DEL, C1) become \u00XX and bytes that are not UTF-8
 * become \ufffd; outside strings only JSON white space passes, anything
 * else that is not printable ASCII becomes '?'.
 */
static void
put_json(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long cp;
	size_t i = 0, len;
	int in_str = 0, esc = 0;

	while (i < n) {
		len = eg_utf8_seq(p + i, n - i, &cp);
		if (len == 0) {
			fputs(in_str ? "\\ufffd" : "?", f);
			i++;
			esc = 0;
			continue;
		}
		if (!in_str) {
			if (cp == '"')
				in_str = 1;
			if ((cp >= 0x20 && cp < 0x7f) || cp == '\n' ||
			    cp == '\t' || cp == '\r')
				putc((int)cp, f);
			else
				putc('?', f);
		} else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			/* after a lone backslash (not valid JSON anyway)
			 * this reads as an escaped backslash: still JSON */
			fprintf(f, "\\u%04lx", cp);
			esc = 0;
		} else {
			fwrite(p + i, 1, len, f);
			if (esc)
				esc = 0;
			else if (cp == '\\')
				esc = 1;
			else if (cp == '"')
				in_str = 0;
		}
		i += len;
	}
}

/* --- errors -------------------------------------------------------------- */

static void
warnx_(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Messages carry the server's words and the user's: escaped too. */
static void
vwarnx_(const char *fmt, va_list ap)
{
	char buf[4096];
	int n;

	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	fputs("egressctl: ", stderr);
	eg_put_esc(stderr, buf, (size_t)n, 0);
	fputc('\n', stderr);
}

static void
warnx_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx_(fmt, ap);
	va_end(ap);
}

static int
usage_err(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int
usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx_(fmt, ap);
	va_end(ap);
	fputs("(see egressctl --help)\n", stderr);
	return EX_USAGE;
}

static int
unreachable(const char *why)
{
	warnx_("cannot reach %s: %s (is egressd running with admin = %s?)",
	    admin, why, admin);
	return EX_UNREACH;
}

/* --- a tiny HTTP/1.1 client ---------------------------------------------- */

struct resp {
	int	 status;
	char	*raw;		/* the whole answer */
	size_t	 rawlen;
	char	*body;		/* NUL-terminated */
	size_t	 len;
};

static int
is_unix(const char *a)
{
	return strchr(a, '/') != NULL;
}

/* Connect to admin; -1 with errno set. */
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
	if (is_unix(admin)) {
		if (strlen(admin) >= sizeof(sun->sun_path)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, admin, strlen(admin));
		sl = sizeof(*sun);
	} else {
		if ((colon = strrchr(admin, ':')) == NULL)
			goto bad;
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || *end != '\0' || end == colon + 1 || port < 1 ||
		    port > 65535)
			goto bad;
		h = admin;
		hlen = (size_t)(colon - admin);
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

/*
 * One request; the answer in *r.  Returns 0, or EX_UNREACH after saying
 * why on standard error.
 */
static int
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
	    token && !is_unix(admin) ? "Authorization: Bearer " : "",
	    token && !is_unix(admin) ? token : "",
	    token && !is_unix(admin) ? "\r\n" : "",
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

/* --- a small JSON reader ------------------------------------------------- */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jt		 t;
	const char	*raw;		/* the value's text in the input */
	size_t		 rawlen;
	char		*s;		/* J_STR decoded, J_NUM text */
	int		 b;
	size_t		 n;		/* J_ARR / J_OBJ members */
	struct jv	*kids;
	char		**keys;		/* J_OBJ */
};

struct jp {
	const char	*p, *end;
	int		 depth;
};

static void
jv_free(struct jv *v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < v->n; i++) {
		jv_free(&v->kids[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->kids);
	free(v->keys);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

static void
jp_ws(struct jp *jp)
{
	while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' ||
	    *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

/* A string at jp->p (the opening quote); decoded, malloc'd. */
static char *
jp_str(struct jp *jp)
{
	const char *p = jp->p + 1;
	char *out, *o;
	unsigned u;
	int i, h;

	if ((out = malloc((size_t)(jp->end - jp->p) + 1)) == NULL)
		return NULL;
	o = out;
	while (p < jp->end && *p != '"') {
		if ((unsigned char)*p < 0x20)
			goto bad;
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		if (++p >= jp->end)
			goto bad;
		switch (*p) {
		case '"': case '\\': case '/': *o++ = *p; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (jp->end - p < 5)
				goto bad;
			for (u = 0, i = 1; i <= 4; i++) {
				if ((h = eg_hexval((unsigned char)p[i])) < 0)
					goto bad;
				u = u * 16 + (unsigned)h;
			}
			p += 4;
			if (u < 0x80)
				*o++ = (char)u;
			else if (u < 0x800) {
				*o++ = (char)(0xc0 | (u >> 6));
				*o++ = (char)(0x80 | (u & 0x3f));
			} else if (u >= 0xd800 && u < 0xe000)
				*o++ = '?';	/* lone surrogate half */
			else {
				*o++ = (char)(0xe0 | (u >> 12));
				*o++ = (char)(0x80 | ((u >> 6) & 0x3f));
				*o++ = (char)(0x80 | (u & 0x3f));
			}
			break;
		default:
			goto bad;
		}
		p++;
	}
	if (p >= jp->end)
		goto bad;
	*o = '\0';
	jp->p = p + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static int jp_value(struct jp *, struct jv *);

static int
jp_push(struct jv *v, int obj)
{
	struct jv *k;
	char **kk;

	if ((k = realloc(v->kids, (v->n + 1) * sizeof(*k))) == NULL)
		return -1;
	v->kids = k;
	memset(&k[v->n], 0, sizeof(*k));
	if (obj) {
		if ((kk = realloc(v->keys, (v->n + 1) * sizeof(*kk))) == NULL)
			return -1;
		v->keys = kk;
		kk[v->n] = NULL;
	}
	v->n++;
	return 0;
}

static int
jp_value(struct jp *jp, struct jv *v)
{
	const char *start;
	int obj;

	jp_ws(jp);
	if (jp->p >= jp->end || ++jp->depth > JSON_DEPTH)
		return -1;
	start = jp->p;
	v->raw = start;
	if (*jp->p == '{' || *jp->p == '[') {
		obj = *jp->p == '{';
		v->t = obj ? J_OBJ : J_ARR;
		jp->p++;
		jp_ws(jp);
		if (jp->p < jp->end && *jp->p == (obj ? '}' : ']')) {
			jp->p++;
			goto done;
		}
		for (;;) {
			if (jp_push(v, obj) == -1)
				return -1;
			if (obj) {
				jp_ws(jp);
				if (jp->p >= jp->end || *jp->p != '"' ||
				    (v->keys[v->n - 1] = jp_str(jp)) == NULL)
					return -1;
				jp_ws(jp);
				if (jp->p >= jp->end || *jp->p++ != ':')
					return -1;
			}
			if (jp_value(jp, &v->kids[v->n - 1]) == -1)
				return -1;
			jp_ws(jp);
			if (jp->p >= jp->end)
				return -1;
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p++ != (obj ? '}' : ']'))
				return -1;
			break;
		}
	} else if (*jp->p == '"') {
		v->t = J_STR;
		if ((v->s = jp_str(jp)) == NULL)
			return -1;
	} else if (jp->end - jp->p >= 4 && memcmp(jp->p, "true", 4) == 0) {
		v->t = J_BOOL;
		v->b = 1;
		jp->p += 4;
	} else if (jp->end - jp->p >= 5 && memcmp(jp->p, "false", 5) == 0) {
		v->t = J_BOOL;
		jp->p += 5;
	} else if (jp->end - jp->p >= 4 && memcmp(jp->p, "null", 4) == 0) {
		v->t = J_NULL;
		jp->p += 4;
	} else {
		while (jp->p < jp->end && strchr("0123456789+-.eE",
		    *jp->p) != NULL && *jp->p != '\0')
			jp->p++;
		if (jp->p == start)
			return -1;
		v->t = J_NUM;
		if ((v->s = strndup(start, (size_t)(jp->p - start))) == NULL)
			return -1;
	}
done:
	v->rawlen = (size_t)(jp->p - start);
	jp->depth--;
	return 0;
}

static int
json_parse(const char *s, size_t len, struct jv *v)
{
	struct jp jp = { s, s + len, 0 };

	memset(v, 0, sizeof(*v));
	if (jp_value(&jp, v) == -1) {
		jv_free(v);
		return -1;
	}
	jp_ws(&jp);
	if (jp.p != jp.end) {
		jv_free(v);
		return -1;
	}
	return 0;
}

static const struct jv *
jget(const struct jv *o, const char *key)
{
	size_t i;

	if (o == NULL || o->t != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return &o->kids[i];
	return NULL;
}

/* A scalar as text ("" if absent); numbers and strings. */
static const char *
jstr(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	if (v == NULL)
		return "";
	if (v->t == J_STR || v->t == J_NUM)
		return v->s;
	if (v->t == J_BOOL)
		return v->b ? "true" : "false";
	return "";
}

static uint64_t
jnum(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	if (v == NULL || v->t != J_NUM)
		return 0;
	return strtoull(v->s, NULL, 10);
}

/* --- output -------------------------------------------------------------- */

/* Print s with control characters escaped (eg_eg_put_esc()), so answers
 * cannot drive the terminal. */
static void
put_safe(const char *s)
{
	eg_put_esc(stdout, s, strlen(s), 0);
}

static void
put_bold(const char *s)
{
	if (tty_bold)
		fputs("\033[1m", stdout);
	put_safe(s);
	if (tty_bold)
		fputs("\033[0m", stdout);
}

static void
put_pad(const char *s, size_t w)
{
	size_t n = strlen(s);

	put_safe(s);
	while (n++ < w)
		putchar(' ');
}

static void
row(const char *k, const char *v)
{
	printf("%-12s ", k);
	put_safe(v);
	putchar('\n');
}

/* Exit status for a non-2xx answer, after telling the user why. */
static int
refused(const char *what, const struct resp *r)
{
	struct jv v;
	const struct jv *e;
	size_t i;

	if (json_out)
		put_json(stdout, r->body, r->len);
	if (json_parse(r->body, r->len, &v) == 0) {
		if ((e = jget(&v, "errors")) != NULL && e->t == J_ARR) {
			warnx_("%s refused (%d); the old configuration stays:",
			    what, r->status);
			for (i = 0; i < e->n; i++)
				if (e->kids[i].t == J_STR) {
					fputs("  ", stderr);
					eg_put_esc(stderr, e->kids[i].s,
					    strlen(e->kids[i].s), 0);
					fputc('\n', stderr);
				}
		} else
			warnx_("%s: %s (HTTP %d)", what, jstr(&v, "error"),
			    r->status);
		jv_free(&v);
	} else
		warnx_("%s: HTTP %d", what, r->status);
	if (r->status == 401)
		fprintf(stderr, "egressctl: a TCP admin API needs its token: "
		    "set EGRESSD_TOKEN or pass --token-file FILE\n");
	return EX_REFUSED;
}

/* Call a route; on 2xx parse the answer into *v (unless --json printed
 * it).  Returns EX_OK with *done set when nothing is left to print. */
static int
call(const char *what, const char *method, const char *path,
    const char *body, struct jv *v, int *done)
{
	struct resp r;
	int rc;

	*done = 0;
	if ((rc = http(method, path, body, &r)) != 0)
		return rc;
	if (r.status < 200 || r.status > 299) {
		rc = refused(what, &r);
		free(r.raw);
		return rc;
	}
	if (json_out) {
		put_json(stdout, r.body, r.len);
		if (r.len == 0 || r.body[r.len - 1] != '\n')
			putchar('\n');
		free(r.raw);
		*done = 1;
		return EX_OK;
	}
	if (json_parse(r.body, r.len, v) == -1) {
		free(r.raw);
		warnx_("%s: the server's answer is not valid JSON", what);
		return EX_UNREACH;
	}
	free(r.raw);
	return EX_OK;
}

/*
 * The route of what ("phase", "audit"): the default session's /v1/WHAT,
 * or with -S /v1/sessions/NAME/WHAT (the name has passed
 * eg_session_name_ok(), so it needs no escaping in a path).
 */
static void
route(char *buf, size_t len, const char *what)
{
	if (session != NULL)
		snprintf(buf, len, "/v1/sessions/%s/%s", session, what);
	else
		snprintf(buf, len, "/v1/%s", what);
}

/* "phase" or "session NAME phase", for messages. */
static void
what_of(char *buf, size_t len, const char *what)
{
	if (session != NULL)
		snprintf(buf, len, "session %s %s", session, what);
	else
		snprintf(buf, len, "%s", what);
}

static int cmd_session_show(const char *);

static void
put_uptime(uint64_t s)
{
	char b[64];

	if (s >= 86400)
		snprintf(b, sizeof(b), "%llud%02lluh%02llum",
		    (unsigned long long)(s / 86400),
		    (unsigned long long)(s / 3600 % 24),
		    (unsigned long long)(s / 60 % 60));
	else if (s >= 3600)
		snprintf(b, sizeof(b), "%lluh%02llum%02llus",
		    (unsigned long long)(s / 3600),
		    (unsigned long long)(s / 60 % 60),
		    (unsigned long long)(s % 60));
	else
		snprintf(b, sizeof(b), "%llum%02llus",
		    (unsigned long long)(s / 60),
		    (unsigned long long)(s % 60));
	row("uptime", b);
}

/*
 * The "budget" object of a status or session answer, one row:
 * "up USED / LIMIT bytes, down ..., requests USED / LIMIT", each
 * "(spent)" once it is; nothing when the phase has no budget.
 */
static void
put_budget(const struct jv *v)
{
	static const char *const kinds[] = { "up", "down", "requests" };
	const struct jv *b = jget(v, "budget"), *a;
	unsigned long long used, lim;
	size_t i, n = 0;

	if (b == NULL || b->t != J_OBJ)
		return;
	printf("%-12s ", "budget");
	for (i = 0; i < 3; i++) {
		a = jget(b, kinds[i]);
		if (a == NULL || a->t != J_ARR || a->n != 2 ||
		    a->kids[0].t != J_NUM || a->kids[1].t != J_NUM)
			continue;
		used = strtoull(a->kids[0].s, NULL, 10);
		lim = strtoull(a->kids[1].s, NULL, 10);
		printf("%s%s %llu / %llu%s%s", n++ ? ", " : "", kinds[i], used,
		    lim, i < 2 ? " bytes" : "", (i < 2 ? used > lim :
		    used >= lim) ? " (spent)" : "");
	}
	if (n == 0)
		fputs("-", stdout);
	putchar('\n');
}

static int
cmd_status(void)
{
	struct jv v;
	const struct jv *c, *m;
	char b[128];
	size_t i;
	int rc, done;

	if (session != NULL)	/* a session's status is its object */
		return cmd_session_show(session);
	if ((rc = call("status", "GET", "/v1/status", NULL, &v, &done)) ||
	    done)
		return rc;
	printf("%-12s ", "phase");
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	row("version", jstr(&v, "version"));
	put_uptime(jnum(&v, "uptime_s"));
	c = jget(&v, "connections");
	snprintf(b, sizeof(b), "%llu active, %llu total",
	    (unsigned long long)jnum(c, "active"),
	    (unsigned long long)jnum(c, "total"));
	row("connections", b);
	printf("%-12s ", "modules");
	m = jget(&v, "modules");
	if (m == NULL || m->t != J_ARR || m->n == 0)
		fputs("none", stdout);
	for (i = 0; m != NULL && m->t == J_ARR && i < m->n; i++) {
		if (i)
			putchar(' ');
		if (m->kids[i].t == J_STR)
			put_safe(m->kids[i].s);
	}
	putchar('\n');
	put_budget(&v);
	row("admin", admin);
	jv_free(&v);
	return EX_OK;
}

/* The allowlist of a phase object, space-separated; "(nothing)" if none. */
static void
put_allow(const struct jv *p, const char *indent)
{
	const struct jv *a = jget(p, "allow");
	size_t i;

	if (a == NULL || a->t != J_ARR || a->n == 0) {
		fputs("(nothing)\n", stdout);
		return;
	}
	for (i = 0; i < a->n; i++) {
		if (i)
			fputs(indent, stdout);
		if (a->kids[i].t == J_STR)
			put_safe(a->kids[i].s);
		putchar('\n');
	}
}

static int
cmd_phase_show(void)
{
	char path[128], what[96];
	struct jv v;
	int rc, done;

	route(path, sizeof(path), "phase");
	what_of(what, sizeof(what), "phase");
	if ((rc = call(what, "GET", path, NULL, &v, &done)) || done)
		return rc;
	printf("%-12s ", "phase");
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	row("mode", jstr(&v, "mode"));
	printf("%-12s ", "allow");
	put_allow(&v, "             ");
	jv_free(&v);
	return EX_OK;
}

static int
cmd_phase_set(const char *name)
{
	char body[128], what[192], w[96], path[128];
	struct jv v;
	uint64_t n;
	int rc, done;

	if (!eg_phase_name_ok(name, strlen(name)))
		return usage_err("'%s' is not a phase name (1 to %d of "
		    "A-Z a-z 0-9 _ . -)", name, EG_PHASE_NAME_MAX);
	snprintf(body, sizeof(body), "{\"phase\":\"%s\"}", name);
	what_of(w, sizeof(w), "phase");
	snprintf(what, sizeof(what), "%s %s", w, name);
	route(path, sizeof(path), "phase");
	if ((rc = call(what, "PUT", path, body, &v, &done)) || done)
		return rc;
	n = jnum(&v, "closed");
	put_safe(jstr(&v, "previous"));
	fputs(" -> ", stdout);
	put_bold(jstr(&v, "phase"));
	printf("  (%llu connection%s closed)\n", (unsigned long long)n,
	    n == 1 ? "" : "s");
	jv_free(&v);
	return EX_OK;
}

static int
cmd_phases(void)
{
	struct jv v;
	const struct jv *ps, *p;
	const char *cur;
	size_t i, w = 5;
	int rc, done;

	if ((rc = call("phases", "GET", "/v1/phases", NULL, &v, &done)) ||
	    done)
		return rc;
	cur = jstr(&v, "phase");
	ps = jget(&v, "phases");
	for (i = 0; ps != NULL && ps->t == J_ARR && i < ps->n; i++)
		if (strlen(jstr(&ps->kids[i], "name")) > w)
			w = strlen(jstr(&ps->kids[i], "name"));
	printf("  %-*s  %-7s  %s\n", (int)w, "PHASE", "MODE", "ALLOW");
	for (i = 0; ps != NULL && ps->t == J_ARR && i < ps->n; i++) {
		p = &ps->kids[i];
		if (strcmp(jstr(p, "name"), cur) == 0) {
			fputs("* ", stdout);
			if (tty_bold)
				fputs("\033[1m", stdout);
			put_pad(jstr(p, "name"), w);
			if (tty_bold)
				fputs("\033[0m", stdout);
		} else {
			fputs("  ", stdout);
			put_pad(jstr(p, "name"), w);
		}
		fputs("  ", stdout);
		put_pad(jstr(p, "mode"), 7);
		fputs("  ", stdout);
		{
			char ind[128];

			snprintf(ind, sizeof(ind), "%*s", (int)(w + 13), "");
			put_allow(p, ind);
		}
	}
	jv_free(&v);
	return EX_OK;
}

/*
 * An audit event's name padded to 5 columns; on a terminal (and without
 * NO_COLOR) ALLOW is green, BLOCK red and FAIL yellow, the padding left
 * outside the colour.
 */
static void
put_event_name(const char *ev)
{
	const char *col = NULL;
	size_t n;

	if (tty_bold) {
		if (strcmp(ev, "ALLOW") == 0)
			col = "\033[32m";
		else if (strcmp(ev, "BLOCK") == 0)
			col = "\033[31m";
		else if (strcmp(ev, "FAIL") == 0)
			col = "\033[33m";
	}
	if (col == NULL) {
		put_pad(ev, 5);
		return;
	}
	fputs(col, stdout);
	put_safe(ev);
	fputs("\033[0m", stdout);
	for (n = strlen(ev); n < 5; n++)
		putchar(' ');
}

/* One audit event as an aligned text line. */
static void
put_event(const struct jv *e)
{
	static const char *const keys[] = {
		"id", "phase", "session", "client", "method", "addr", "rule",
		"reason", "report", "up", "down", "ms", "end", "sni", "from",
		"by", "closed", NULL
	};
	/* SESSION NAME action=… phase=… closed=… by=…, as in the log */
	static const char *const skeys[] = {
		"action", "phase", "closed", "by", NULL
	};
	const char *ev = jstr(e, "event"), *v;
	const char *const *kl = keys;
	char target[300];
	size_t i;

	for (i = strlen(jstr(e, "seq")); i < 6; i++)
		putchar(' ');
	put_pad(jstr(e, "seq"), 0);
	fputs("  ", stdout);
	put_pad(jstr(e, "ts"), 24);
	fputs("  ", stdout);
	put_event_name(ev);
	putchar(' ');
	if (strcmp(ev, "PHASE") == 0)
		snprintf(target, sizeof(target), "%s", jstr(e, "phase"));
	else if (strcmp(ev, "SESSION") == 0) {
		snprintf(target, sizeof(target), "%s", jstr(e, "session"));
		kl = skeys;
	} else if (jnum(e, "port") == 0)	/* a target that did not parse */
		snprintf(target, sizeof(target), "%s", jstr(e, "host"));
	else
		snprintf(target, sizeof(target), "%s:%s", jstr(e, "host"),
		    jstr(e, "port"));
	put_safe(target);
	for (i = 0; kl[i] != NULL; i++) {
		if (strcmp(ev, "PHASE") == 0 && strcmp(kl[i], "phase") == 0)
			continue;
		if (jget(e, kl[i]) == NULL || *(v = jstr(e, kl[i])) == '\0')
			continue;
		printf(" %s=", kl[i]);
		put_safe(v);
	}
	putchar('\n');
}

static volatile sig_atomic_t stop_follow;

static void
on_int(int sig)
{
	(void)sig;
	stop_follow = 1;
}

static int
cmd_audit(uint64_t since, unsigned limit, int follow)
{
	struct timespec ts = { 0, 200 * 1000000L };
	struct resp r;
	struct jv v;
	const struct jv *e;
	char path[256], base[128], what[96];
	uint64_t seq;
	size_t i;
	int rc, first = 1;

	route(base, sizeof(base), "audit");
	what_of(what, sizeof(what), "audit");
	if (follow) {
		signal(SIGINT, on_int);
		signal(SIGTERM, on_int);
	}
	do {
		if (!first)
			nanosleep(&ts, NULL);
		if (stop_follow)
			break;
		if (first && since == 0)
			snprintf(path, sizeof(path), "%s?limit=%u", base,
			    limit);
		else
			snprintf(path, sizeof(path), "%s?since=%llu&limit=%u",
			    base, (unsigned long long)since,
			    first ? limit : 1000);
		if ((rc = http("GET", path, NULL, &r)) != 0)
			return stop_follow ? EX_OK : rc;
		if (r.status < 200 || r.status > 299) {
			rc = refused(what, &r);
			free(r.raw);
			return rc;
		}
		if (json_parse(r.body, r.len, &v) == -1 || v.t != J_ARR) {
			free(r.raw);
			warnx_("%s: the server's answer is not a JSON array",
			    what);
			return EX_UNREACH;
		}
		if (first && !json_out && !follow && v.n == 0)
			fprintf(stderr, "egressctl: no audit events %s\n",
			    since ? "after that seq" : "yet");
		for (i = 0; i < v.n; i++) {
			e = &v.kids[i];
			seq = jnum(e, "seq");
			if (seq > since)
				since = seq;
			if (json_out) {
				put_json(stdout, e->raw, e->rawlen);
				putchar('\n');
			} else
				put_event(e);
		}
		fflush(stdout);
		jv_free(&v);
		free(r.raw);
		first = 0;
	} while (follow);
	return EX_OK;
}

static int
cmd_reload(void)
{
	struct jv v;
	int rc, done;

	if ((rc = call("reload", "POST", "/v1/reload", NULL, &v, &done)) ||
	    done)
		return rc;
	fputs("configuration reloaded; phase ", stdout);
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	jv_free(&v);
	return EX_OK;
}

/* --- sessions ------------------------------------------------------------ */

/* The columns of `session ls`, in order; values printed as the server
 * sent them, "-" when empty. */
static const char *const sess_cols[] = {
	"name", "phase", "active", "total", "allowed", "blocked", "failed",
	"socket", "listen", NULL
};

static const char *
dash(const char *s)
{
	return *s == '\0' ? "-" : s;
}

/*
 * session ls: one session per line, name first.  Not on a terminal (a
 * script, a shell completion) the columns are separated by one tab and
 * there is no header; on a terminal they are aligned under a header.
 * eg_eg_put_esc() turns a tab or line end in a value into \x09 / \x0a, so a
 * value can never add a column or a line.
 */
static int
cmd_session_ls(void)
{
	struct jv v;
	const struct jv *ss;
	size_t w[16], i, k, n;
	char up[16];
	int rc, done;

	if ((rc = call("session ls", "GET", "/v1/sessions", NULL, &v,
	    &done)) || done)
		return rc;
	ss = jget(&v, "sessions");
	if (ss == NULL || ss->t != J_ARR) {
		jv_free(&v);
		warnx_("session ls: the server's answer has no \"sessions\" "
		    "array");
		return EX_UNREACH;
	}
	for (k = 0; sess_cols[k] != NULL; k++)
		w[k] = strlen(sess_cols[k]);
	for (i = 0; i < ss->n; i++)
		for (k = 0; sess_cols[k] != NULL; k++)
			if ((n = strlen(dash(jstr(&ss->kids[i],
			    sess_cols[k])))) > w[k])
				w[k] = n;
	if (tty_out) {
		for (k = 0; sess_cols[k] != NULL; k++) {
			for (n = 0; sess_cols[k][n] != '\0' && n < 15; n++)
				up[n] = (char)(sess_cols[k][n] - 'a' + 'A');
			up[n] = '\0';
			if (sess_cols[k + 1] == NULL)
				fputs(up, stdout);
			else {
				put_pad(up, w[k]);
				fputs("  ", stdout);
			}
		}
		putchar('\n');
	}
	for (i = 0; i < ss->n; i++) {
		for (k = 0; sess_cols[k] != NULL; k++) {
			const char *val = dash(jstr(&ss->kids[i],
			    sess_cols[k]));

			if (sess_cols[k + 1] == NULL)
				put_safe(val);
			else if (tty_out) {
				put_pad(val, w[k]);
				fputs("  ", stdout);
			} else {
				put_safe(val);
				putchar('\t');
			}
		}
		putchar('\n');
	}
	jv_free(&v);
	return EX_OK;
}

/* One session object as rows (session show, and status with -S). */
static int
cmd_session_show(const char *name)
{
	char path[128], what[96], b[192];
	const char *ttl;
	struct jv v;
	struct tm tm;
	time_t created;
	int rc, done;

	snprintf(path, sizeof(path), "/v1/sessions/%s", name);
	snprintf(what, sizeof(what), "session %s", name);
	if ((rc = call(what, "GET", path, NULL, &v, &done)) || done)
		return rc;
	row("session", jstr(&v, "name"));
	printf("%-12s ", "phase");
	put_bold(jstr(&v, "phase"));
	putchar('\n');
	row("socket", dash(jstr(&v, "socket")));
	row("listen", dash(jstr(&v, "listen")));
	snprintf(b, sizeof(b), "%llu active, %llu total",
	    (unsigned long long)jnum(&v, "active"),
	    (unsigned long long)jnum(&v, "total"));
	row("connections", b);
	snprintf(b, sizeof(b), "%llu allowed, %llu blocked, %llu failed",
	    (unsigned long long)jnum(&v, "allowed"),
	    (unsigned long long)jnum(&v, "blocked"),
	    (unsigned long long)jnum(&v, "failed"));
	row("decisions", b);
	if ((created = (time_t)jnum(&v, "created")) > 0 &&
	    gmtime_r(&created, &tm) != NULL &&
	    strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
		row("created", b);	/* Unix seconds from the server */
	else
		row("created", dash(jstr(&v, "created")));
	ttl = jstr(&v, "ttl_s");
	if (*ttl == '\0' || strcmp(ttl, "0") == 0)
		row("ttl", "none");
	else {
		printf("%-12s ", "ttl");
		put_safe(ttl);
		fputs(" s idle\n", stdout);
	}
	put_budget(&v);
	row("admin", admin);
	jv_free(&v);
	return EX_OK;
}

/*
 * session new: POST /v1/sessions.  Prints the socket path on the first
 * line and, when the session has a TCP listener, its ADDR:PORT on the
 * second, nothing else, so that sock=$(egressctl session new NAME) works.
 */
static int
cmd_session_new(const char *name, const char *phase, const char *listen,
    int has_ttl, uint64_t ttl)
{
	char body[512], what[96];
	struct jv v;
	int rc, done, n;

	n = snprintf(body, sizeof(body), "{\"name\":\"%s\"", name);
	if (phase != NULL)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
		    ",\"phase\":\"%s\"", phase);
	if (listen != NULL)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
		    ",\"listen\":\"%s\"", listen);
	if (has_ttl)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
		    ",\"ttl_s\":%llu", (unsigned long long)ttl);
	snprintf(body + n, sizeof(body) - (size_t)n, "}");
	snprintf(what, sizeof(what), "session new %s", name);
	if ((rc = call(what, "POST", "/v1/sessions", body, &v, &done)) ||
	    done)
		return rc;
	put_safe(dash(jstr(&v, "socket")));
	putchar('\n');
	if (*jstr(&v, "listen") != '\0') {
		put_safe(jstr(&v, "listen"));
		putchar('\n');
	}
	jv_free(&v);
	return EX_OK;
}

static int
cmd_session_rm(const char *name)
{
	char path[128], what[96];
	struct jv v;
	uint64_t n;
	int rc, done;

	snprintf(path, sizeof(path), "/v1/sessions/%s", name);
	snprintf(what, sizeof(what), "session rm %s", name);
	if ((rc = call(what, "DELETE", path, NULL, &v, &done)) || done)
		return rc;
	n = jnum(&v, "closed");
	put_safe(*jstr(&v, "name") ? jstr(&v, "name") : name);
	printf(" deleted  (%llu connection%s closed)\n",
	    (unsigned long long)n, n == 1 ? "" : "s");
	jv_free(&v);
	return EX_OK;
}

static int parse_num(const char *, uint64_t, uint64_t *);

/* --listen: an IPv4 literal or a bracketed IPv6 one, and a port (0 =
 * any); the daemon checks it again. */
static int
listen_ok(const char *a)
{
	char host[INET6_ADDRSTRLEN + 1];
	struct in6_addr a6;
	struct in_addr a4;
	const char *colon = strrchr(a, ':');
	uint64_t port;
	size_t hl;

	if (colon == NULL || parse_num(colon + 1, 65535, &port) == -1)
		return 0;
	hl = (size_t)(colon - a);
	if (hl >= 2 && a[0] == '[' && a[hl - 1] == ']') {
		if (hl - 2 >= sizeof(host))
			return 0;
		memcpy(host, a + 1, hl - 2);
		host[hl - 2] = '\0';
		return inet_pton(AF_INET6, host, &a6) == 1;
	}
	if (hl >= sizeof(host))
		return 0;
	memcpy(host, a, hl);
	host[hl] = '\0';
	return inet_pton(AF_INET, host, &a4) == 1;
}

static int
name_err(const char *name)
{
	return usage_err("'%s' is not a session name (1 to %d of A-Z a-z "
	    "0-9 _ . -, not beginning with . or -)", name, EG_PHASE_NAME_MAX);
}

/* --- main ---------------------------------------------------------------- */

/* The same rules as the daemon's admin_token_file (eg_token_read()). */
static char *
read_token_file(const char *file)
{
	char buf[EG_TOKEN_MAX + 1], msg[512], *t;
	const char *why;

	if ((why = eg_token_read(file, buf, msg, sizeof(msg))) != NULL) {
		warnx_("--token-file %s: %s", file, why);
		return NULL;
	}
	t = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return t;
}

/* A token must not be able to inject header lines: the file's rules. */
static int
token_ok(const char *t)
{
	for (; *t != '\0'; t++)
		if (*t <= ' ' || *t > '~')
			return 0;
	return 1;
}

static int
parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* session ls | new NAME | show NAME | rm NAME (w: the words after it). */
static int
cmd_session(const char **w, size_t n, const char *phase, const char *listen,
    int has_ttl, uint64_t ttl)
{
	if (n == 0)
		return usage_err("session: which? ls, new NAME, show NAME, "
		    "rm NAME");
	if (strcmp(w[0], "ls") == 0 || strcmp(w[0], "new") == 0 ||
	    strcmp(w[0], "show") == 0 || strcmp(w[0], "rm") == 0) {
		if (strcmp(w[0], "ls") == 0 ? n != 1 : n != 2)
			return usage_err(strcmp(w[0], "ls") == 0 ?
			    "session ls takes no argument" :
			    "session %s takes one NAME", w[0]);
	} else
		return usage_err("session: unknown command '%s' (ls, new, "
		    "show, rm)", w[0]);
	if (n == 2 && !eg_session_name_ok(w[1], strlen(w[1])))
		return name_err(w[1]);
	if (strcmp(w[0], "ls") == 0)
		return cmd_session_ls();
	if (strcmp(w[0], "new") == 0)
		return cmd_session_new(w[1], phase, listen, has_ttl, ttl);
	if (strcmp(w[0], "show") == 0)
		return cmd_session_show(w[1]);
	return cmd_session_rm(w[1]);
}

int
main(int argc, char *argv[])
{
	static char defpath[256];
	const char *words[4], *tokfile = NULL, *env, *a;
	const char *new_phase = NULL, *new_listen = NULL;
	uint64_t since = 0, limit = 100, ttl = 0;
	size_t nw = 0;
	int i, follow = 0, audit_opts = 0, new_opts = 0, has_ttl = 0, rc;

	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_text, stdout);
			return EX_OK;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") ==
		    0) {
			printf("egressctl %s\n", PACKAGE_VERSION);
			return EX_OK;
		} else if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0)
			json_out = 1;
		else if (strcmp(a, "-f") == 0 || strcmp(a, "--follow") == 0)
			follow = audit_opts = 1;
		else if (strcmp(a, "-s") == 0 || strcmp(a, "--socket") == 0 ||
		    strcmp(a, "-t") == 0 || strcmp(a, "--token-file") == 0 ||
		    strcmp(a, "-S") == 0 || strcmp(a, "--session") == 0 ||
		    strcmp(a, "--phase") == 0 || strcmp(a, "--listen") == 0 ||
		    strcmp(a, "--ttl") == 0 ||
		    strcmp(a, "--since") == 0 || strcmp(a, "--limit") == 0) {
			if (i + 1 >= argc)
				return usage_err("%s needs a value", a);
			if (strcmp(a, "-s") == 0 || strcmp(a, "--socket") == 0)
				admin = argv[++i];
			else if (strcmp(a, "-t") == 0 ||
			    strcmp(a, "--token-file") == 0)
				tokfile = argv[++i];
			else if (strcmp(a, "-S") == 0 ||
			    strcmp(a, "--session") == 0) {
				session = argv[++i];
				if (!eg_session_name_ok(session,
				    strlen(session)))
					return name_err(session);
			} else if (strcmp(a, "--phase") == 0) {
				new_opts = 1;
				new_phase = argv[++i];
				if (!eg_phase_name_ok(new_phase,
				    strlen(new_phase)))
					return usage_err("--phase: '%s' is "
					    "not a phase name (1 to %d of "
					    "A-Z a-z 0-9 _ . -)", new_phase,
					    EG_PHASE_NAME_MAX);
			} else if (strcmp(a, "--listen") == 0) {
				new_opts = 1;
				new_listen = argv[++i];
				if (!listen_ok(new_listen))
					return usage_err("--listen: expected "
					    "ADDR:PORT with an IP address "
					    "(127.0.0.1:0, [::1]:0), got "
					    "'%s'", new_listen);
			} else if (strcmp(a, "--ttl") == 0) {
				new_opts = has_ttl = 1;
				if (parse_num(argv[++i], UINT32_MAX, &ttl) ||
				    ttl == 0)
					return usage_err("--ttl: expected "
					    "seconds, 1 to %lu, got '%s'",
					    (unsigned long)UINT32_MAX,
					    argv[i]);
			} else if (strcmp(a, "--since") == 0) {
				audit_opts = 1;
				if (parse_num(argv[++i], UINT64_MAX, &since))
					return usage_err("--since: expected "
					    "a seq number, got '%s'", argv[i]);
			} else {
				audit_opts = 1;
				if (parse_num(argv[++i], 1000, &limit) ||
				    limit == 0)
					return usage_err("--limit: expected "
					    "1 to 1000, got '%s'", argv[i]);
			}
		} else if (strcmp(a, "--") == 0) {
			for (i++; i < argc; i++)
				if (nw < 4)
					words[nw++] = argv[i];
				else
					return usage_err("too many "
					    "arguments");
			break;
		} else if (a[0] == '-' && a[1] != '\0')
			return usage_err("unknown option '%s'", a);
		else if (nw < 4)
			words[nw++] = a;
		else
			return usage_err("too many arguments");
	}
	if (nw == 0)
		return usage_err("which command? status, phase [NAME], "
		    "phases, audit [--since SEQ] [-f], reload, session "
		    "ls|new|show|rm");
	if (admin == NULL && (env = getenv("EGRESSD_ADMIN")) != NULL &&
	    *env != '\0')
		admin = env;
	if (admin == NULL) {
		env = getenv("XDG_RUNTIME_DIR");
		if (env != NULL && *env != '\0')
			snprintf(defpath, sizeof(defpath),
			    "%s/egressd/admin.sock", env);
		else
			snprintf(defpath, sizeof(defpath),
			    "/tmp/egressd-%lu/admin.sock",
			    (unsigned long)getuid());
		admin = defpath;
	}
	if (!is_unix(admin) && strrchr(admin, ':') == NULL)
		return usage_err("-s %s: expected a socket path (with a /) or "
		    "ADDR:PORT", admin);
	if (tokfile != NULL) {
		if ((token = read_token_file(tokfile)) == NULL)
			return EX_USAGE;
	} else if ((env = getenv("EGRESSD_TOKEN")) != NULL && *env != '\0') {
		if (!token_ok(env))
			return usage_err("EGRESSD_TOKEN: the token must be one "
			    "word of printable ASCII");
		token = strdup(env);
	}
	if (audit_opts && strcmp(words[0], "audit") != 0)
		return usage_err("--since, --limit and -f go with audit");
	if (new_opts && (strcmp(words[0], "session") != 0 || nw < 2 ||
	    strcmp(words[1], "new") != 0))
		return usage_err("--phase, --listen and --ttl go with "
		    "session new");
	if (session != NULL && strcmp(words[0], "status") != 0 &&
	    strcmp(words[0], "phase") != 0 && strcmp(words[0], "audit") != 0)
		return usage_err("-S goes with status, phase and audit, not "
		    "with %s", words[0]);
	tty_out = isatty(STDOUT_FILENO);
	/* https://no-color.org: set and not empty means no colour */
	tty_bold = tty_out && (getenv("NO_COLOR") == NULL ||
	    *getenv("NO_COLOR") == '\0');
	signal(SIGPIPE, SIG_IGN);

	if (strcmp(words[0], "status") == 0 && nw == 1)
		rc = cmd_status();
	else if (strcmp(words[0], "phase") == 0 && nw == 1)
		rc = cmd_phase_show();
	else if (strcmp(words[0], "phase") == 0 && nw == 2)
		rc = cmd_phase_set(words[1]);
	else if (strcmp(words[0], "phases") == 0 && nw == 1)
		rc = cmd_phases();
	else if (strcmp(words[0], "audit") == 0 && nw == 1)
		rc = cmd_audit(since, (unsigned)limit, follow);
	else if (strcmp(words[0], "reload") == 0 && nw == 1)
		rc = cmd_reload();
	else if (strcmp(words[0], "session") == 0)
		rc = cmd_session(words + 1, nw - 1, new_phase, new_listen,
		    has_ttl, ttl);
	else if (strcmp(words[0], "status") == 0 ||
	    strcmp(words[0], "phases") == 0 || strcmp(words[0], "phase") == 0 ||
	    strcmp(words[0], "audit") == 0 || strcmp(words[0], "reload") == 0)
		rc = usage_err("%s: unexpected argument '%s'", words[0],
		    words[nw - 1]);
	else
		rc = usage_err("unknown command '%s'", words[0]);
	free(token);
	return rc;
}
