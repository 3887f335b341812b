/*
 * reqparse.c: the strict HTTP/1.x head parser for proxy requests and
 * upstream responses, the hop-by-hop filter that rewrites heads for
 * forwarding, and a byte-transparent chunked-body framer.  It never
 * allocates and never reads past the length it is given: hostile input
 * is the normal case, and anything the grammar does not allow is refused.
 */
#include "egress-int.h"

#include <limits.h>

#include "buf.h"
#include "reqparse.h"
#include "shared.h"

#define CHUNK_LINE_MAX	4096	/* chunk-size line or trailer line */
#define CHUNK_HEX_MAX	15	/* hex digits in a chunk size: < 2^60 */

/* What the header lines said about framing and the connection. */
struct hdr_info {
	int64_t	 content_length;
	int	 ncl;		/* Content-Length lines */
	int	 nte;		/* Transfer-Encoding lines */
	int	 chunked;
	int	 nhost;		/* Host lines */
	size_t	 host_idx;	/* index of the Host line in hdr[] */
	int	 conn_close;	/* Connection: close */
	int	 conn_keepalive;	/* Connection: keep-alive */
	const char *conn_framing;	/* why, if Connection names a
					   framing or routing header */
	const char *underscore;	/* why, if a framing header is spelt
				   with '_' for '-' */
};

/* Per byte: 1 RFC 9110 tchar, 2 a field value's byte (HT, SP, VCHAR,
 * obs-text). */
static const uint8_t byte_class[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	2, 3, 2, 3, 3, 3, 3, 3, 2, 2, 3, 3, 2, 3, 3, 2,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2,
	2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 3, 2, 3, 0,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};

/* RFC 9110 tchar. */
static int
is_tchar(uint8_t c)
{
	return byte_class[c] & 1;
}

/* A byte allowed in a field value or reason phrase: HT, SP, VCHAR, obs-text. */
static int
is_vbyte(uint8_t c)
{
	return byte_class[c] & 2;
}

static int
is_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static uint8_t
lc(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 'a';
	return c;
}

/* Case-insensitive compare of n bytes at p with the lower-case string s. */
static int
ieq(const uint8_t *p, size_t n, const char *s)
{
	size_t i;

	/* s's NUL differs from every lower-case byte but NUL itself */
	for (i = 0; i < n; i++)
		if (s[i] == '\0' || lc(p[i]) != (uint8_t)s[i])
			return 0;
	return s[n] == '\0';
}

/*
 * Is the name (n bytes) a framing header's spelt with '_' where '-'
 * belongs (Content_Length, transfer_encoding)?  Such a line frames
 * nothing here, but a next hop that reads '_' as '-' (CGI's HTTP_*
 * variables, some servers) would frame the body by it: a request egressd
 * did not decide smuggled behind the one it did.
 */
static const char *
underscore_framing(const uint8_t *name, size_t n)
{
	static const struct {
		const char	*name;
		const char	*why;
	} hv[] = {
		{ "content-length", "Content_Length header (underscore "
		    "spelling of Content-Length) refused" },
		{ "transfer-encoding", "Transfer_Encoding header (underscore "
		    "spelling of Transfer-Encoding) refused" }
	};
	size_t i, k;
	int us;

	for (k = 0; k < nitems(hv); k++) {
		if (strlen(hv[k].name) != n)
			continue;
		us = 0;
		for (i = 0; i < n; i++) {
			if (name[i] == '_' && hv[k].name[i] == '-')
				us = 1;
			else if (lc(name[i]) != (uint8_t)hv[k].name[i])
				break;
		}
		if (i == n && us)
			return hv[k].why;
	}
	return NULL;
}

static enum eg_parse
bad(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return EG_PARSE_BAD;
}

/*
 * Find the CRLF that ends the line starting at off.  Returns 0 and the
 * offset of its CR in *eol, or -1 for a bare LF, a lone CR or no end.
 */
static int
find_eol(const uint8_t *buf, size_t len, size_t off, size_t *eol)
{
	size_t i;

	for (i = off; i < len; i++) {
		if (buf[i] > '\r')
			continue;
		if (buf[i] == '\n')
			return -1;
		if (buf[i] == '\r') {
			if (i + 1 >= len || buf[i + 1] != '\n')
				return -1;
			*eol = i;
			return 0;
		}
	}
	return -1;
}

enum eg_parse
eg_head_scan(const uint8_t *buf, size_t len, size_t *scan, size_t *head_len)
{
	const uint64_t ones = 0x0101010101010101ULL;
	const uint64_t high = 0x8080808080808080ULL;
	uint64_t w, d;
	size_t i;
	uint8_t c;

	for (i = *scan; i < len; i++) {
		/* a run of bytes that are neither control bytes (< 0x20)
		 * nor DEL, 8 at a time: nothing to decide in it */
		while (len - i >= 8) {
			memcpy(&w, buf + i, 8);
			d = w ^ (ones * 0x7f);		/* DEL: 0 */
			w = (((w - ones * 0x20) & ~w) | ((d - ones) & ~d)) &
			    high;
			if (w != 0) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				/* the first flagged byte is one */
				i += (size_t)__builtin_ctzll(w) / 8;
#endif
				break;
			}
			i += 8;
		}
		if (i == len)
			break;
		c = buf[i];
		if (c >= 0x20 && c != 0x7f)
			continue;
		if (c == '\r') {
			if (i + 1 == len) {
				*scan = i;	/* decide when LF can be seen */
				return EG_PARSE_AGAIN;
			}
			if (buf[i + 1] != '\n')
				return EG_PARSE_BAD;
			continue;
		}
		if (c == '\n') {
			if (i == 0 || buf[i - 1] != '\r')
				return EG_PARSE_BAD;
			if (i >= 3 && buf[i - 2] == '\n' &&
			    buf[i - 3] == '\r') {
				*scan = i + 1;
				*head_len = i + 1;
				return EG_PARSE_OK;
			}
			continue;
		}
		/* No control byte but HT belongs anywhere in a head. */
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return EG_PARSE_BAD;
	}
	*scan = len;
	return EG_PARSE_AGAIN;
}

/* Content-Length: 1*DIGIT, within int64_t. */
static int
parse_clen(const uint8_t *p, size_t n, int64_t *out)
{
	int64_t v = 0;
	size_t i;
	int d;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		d = p[i] - '0';
		if (v > (INT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/*
 * The headers egressd itself frames or routes by.  A Connection header
 * may not name them: the hop-by-hop filter would drop them on the way
 * out, and the next hop would frame the message differently than egressd
 * did (a body smuggled as a request nobody decided).
 */
static const struct {
	const char	*name;
	const char	*why;
} framing_hdr[] = {
	{ "content-length", "Connection names Content-Length" },
	{ "transfer-encoding", "Connection names Transfer-Encoding" },
	{ "host", "Connection names Host" }
};

/*
 * Walk the comma-separated list in a Connection value.  Every element
 * must be a token (empty elements are skipped).  With want == NULL, check
 * the syntax and note close / keep-alive and any framing header named
 * in hi; otherwise return 1 if the list names want (want_len bytes).
 */
static int
conn_tokens(const uint8_t *v, size_t n, struct hdr_info *hi,
    const uint8_t *want, size_t want_len)
{
	size_t i = 0, s, e, k;

	while (i <= n) {
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (s < e && is_ows(v[s]))
			s++;
		while (e > s && is_ows(v[e - 1]))
			e--;
		for (k = s; k < e; k++)
			if (!is_tchar(v[k]))
				return -1;
		if (want != NULL) {
			if (e - s == want_len) {
				for (k = 0; k < want_len; k++)
					if (lc(v[s + k]) != lc(want[k]))
						break;
				if (k == want_len)
					return 1;
			}
		} else if (hi != NULL) {
			if (ieq(v + s, e - s, "close"))
				hi->conn_close = 1;
			else if (ieq(v + s, e - s, "keep-alive"))
				hi->conn_keepalive = 1;
			for (k = 0; k < nitems(framing_hdr); k++)
				if (ieq(v + s, e - s, framing_hdr[k].name))
					hi->conn_framing = framing_hdr[k].why;
		}
		i++;		/* past ',' (or past the end) */
	}
	return 0;
}

/*
 * Parse header lines from off up to and including the empty line.  Fills
 * hdr[] and *nhdr, collects framing facts in *hi and sets *head_len.
 */
static enum eg_parse
parse_headers(const uint8_t *buf, size_t len, size_t off, struct eg_hdr *hdr,
    size_t *nhdr, struct hdr_info *hi, size_t *head_len, const char **why)
{
	const uint8_t *name, *val;
	size_t eol, i, nlen, vs, ve;
	struct eg_hdr *h;

	memset(hi, 0, sizeof(*hi));
	hi->content_length = -1;
	*nhdr = 0;
	for (;;) {
		/*
		 * The common line at once: a token, ':', value bytes, CRLF
		 * (i at the ':', eol at the CR).  Anything else is taken
		 * again step by step below, which says what is wrong.
		 */
		for (i = off; i < len && is_tchar(buf[i]); i++)
			;
		if (i > off && i < len && buf[i] == ':' &&
		    *nhdr < EG_MAX_HEADERS) {
			for (eol = i + 1; eol < len && is_vbyte(buf[eol]);
			    eol++)
				;
			if (eol + 1 < len && buf[eol] == '\r' &&
			    buf[eol + 1] == '\n')
				goto line;
		}
		if (find_eol(buf, len, off, &eol) == -1)
			return bad(why, "bad line ending");
		if (eol == off)
			break;		/* the empty line: end of head */
		if (is_ows(buf[off]))
			return bad(why, "obs-fold not allowed");
		if (*nhdr == EG_MAX_HEADERS) {
			if (why != NULL)
				*why = "too many headers";
			return EG_PARSE_TOOBIG;
		}
		for (i = off; i < eol && is_tchar(buf[i]); i++)
			;
		nlen = i - off;
		if (i == eol || buf[i] != ':') {
			if (i < eol && is_ows(buf[i]))
				return bad(why, "whitespace before colon");
			return bad(why, "bad header name");
		}
		if (nlen == 0)
			return bad(why, "empty header name");
		for (vs = i + 1; vs < eol; vs++)
			if (!is_vbyte(buf[vs]))
				return bad(why,
				    "bad character in header value");
line:
		nlen = i - off;
		vs = i + 1;
		ve = eol;
		while (vs < ve && is_ows(buf[vs]))
			vs++;
		while (ve > vs && is_ows(buf[ve - 1]))
			ve--;
		h = &hdr[(*nhdr)++];
		h->name_off = off;
		h->name_len = nlen;
		h->value_off = vs;
		h->value_len = ve - vs;
		name = buf + off;
		val = buf + vs;

		/* the names that matter, by their length first */
		if (nlen == 14 && ieq(name, nlen, "content-length")) {
			hi->ncl++;
			if (hi->ncl > 1)
				return bad(why, "duplicate Content-Length");
			if (parse_clen(val, ve - vs, &hi->content_length) == -1)
				return bad(why, "bad Content-Length");
		} else if (nlen == 17 &&
		    ieq(name, nlen, "transfer-encoding")) {
			hi->nte++;
			if (hi->nte > 1)
				return bad(why,
				    "duplicate Transfer-Encoding");
			if (!ieq(val, ve - vs, "chunked"))
				return bad(why,
				    "unsupported Transfer-Encoding");
			hi->chunked = 1;
		} else if (nlen == 4 && ieq(name, nlen, "host")) {
			hi->nhost++;
			if (hi->nhost > 1)
				return bad(why, "duplicate Host");
			hi->host_idx = *nhdr - 1;
		} else if (nlen == 10 && ieq(name, nlen, "connection")) {
			if (conn_tokens(val, ve - vs, hi, NULL, 0) == -1)
				return bad(why, "bad Connection header");
		} else if (hi->underscore == NULL && (nlen == 14 ||
		    nlen == 17))	/* the two names underscore_framing()
					   knows */
			hi->underscore = underscore_framing(name, nlen);
		off = eol + 2;
	}
	*head_len = eol + 2;
	if (hi->ncl && hi->nte)
		return bad(why, "Content-Length with Transfer-Encoding");
	if (hi->conn_framing != NULL)
		return bad(why, hi->conn_framing);
	return EG_PARSE_OK;
}

/*
 * A Host header's value must be a valid host[:port] (RFC 9112 section
 * 3.2).  Its content does not matter beyond that: for the absolute form
 * the URL decides and the forwarded Host is the URL's authority.
 */
static int
host_valid(const uint8_t *v, size_t n)
{
	struct eg_host h;
	const char *why;
	const char *s = (const char *)v;
	size_t i, hlen;
	uint16_t port;

	if (n == 0)
		return 0;
	if (s[0] == '[') {
		for (hlen = 0; hlen < n && s[hlen] != ']'; hlen++)
			;
		if (hlen == n)
			return 0;
		hlen++;
	} else {
		for (hlen = 0; hlen < n && s[hlen] != ':'; hlen++)
			;
	}
	if (hlen < n) {
		if (s[hlen] != ':')
			return 0;
		if (eg_port_parse(s + hlen + 1, n - hlen - 1, &port) == -1)
			return 0;
	}
	for (i = 0; i < hlen; i++)
		if (s[i] == '%' || s[i] == '@')
			return 0;
	return eg_host_parse(s, hlen, &h, &why) == 0;
}

/* CONNECT host:port: the authority form and nothing else. */
static enum eg_parse
parse_connect_target(const uint8_t *t, size_t tl, struct eg_req *req,
    const char **why)
{
	size_t i;

	for (i = 0; i < tl; i++) {
		switch (t[i]) {
		case '/':
		case '?':
		case '#':
			return bad(why, "CONNECT needs host:port");
		case '@':
			return bad(why, "userinfo not allowed");
		case '%':
			return bad(why, "percent-encoding in host");
		}
	}
	if (eg_authority_parse((const char *)t, tl, &req->host, &req->port,
	    why) == -1)
		return EG_PARSE_BAD;
	return EG_PARSE_OK;
}

/*
 * http://host[:port][/path[?query]] at buf offset toff, tl bytes.  An
 * empty path becomes the "/" that ends "://", so path_off always points
 * at a real origin-form target inside buf.
 */
static enum eg_parse
parse_absolute_target(const uint8_t *buf, size_t toff, size_t tl,
    struct eg_req *req, const char **why)
{
	const uint8_t *t = buf + toff;
	size_t i, a, ae, hlen;

	if (tl > 0 && t[0] == '/')
		return bad(why, "origin-form request");
	for (i = 0; i < tl && t[i] != ':'; i++)
		;
	if (i + 3 > tl || t[i + 1] != '/' || t[i + 2] != '/')
		return bad(why, "bad request target");
	if (ieq(t, i, "https"))
		return bad(why, "https URL not supported");
	if (!ieq(t, i, "http"))
		return bad(why, "unsupported scheme");
	for (a = 0; a < tl; a++)
		if (t[a] == '#')
			return bad(why, "fragment in URL");
	a = i + 3;
	for (ae = a; ae < tl && t[ae] != '/' && t[ae] != '?'; ae++) {
		if (t[ae] == '@')
			return bad(why, "userinfo not allowed");
		if (t[ae] == '%')
			return bad(why, "percent-encoding in host");
	}
	if (ae < tl && t[ae] == '?')
		return bad(why, "query without path");

	/* host [":" port] in t[a..ae) */
	if (a < ae && t[a] == '[') {
		for (hlen = 0; a + hlen < ae && t[a + hlen] != ']'; hlen++)
			;
		if (a + hlen == ae)
			return bad(why, "bad IPv6 literal");
		hlen++;
	} else {
		for (hlen = 0; a + hlen < ae && t[a + hlen] != ':'; hlen++)
			;
	}
	if (eg_host_parse((const char *)t + a, hlen, &req->host, why) == -1)
		return EG_PARSE_BAD;
	req->port = 80;
	if (a + hlen < ae) {
		if (t[a + hlen] != ':')
			return bad(why, "bad character after IPv6 literal");
		if (eg_port_parse((const char *)t + a + hlen + 1,
		    ae - a - hlen - 1, &req->port) == -1)
			return bad(why, "bad port");
	}
	if (ae == tl) {
		req->path_off = toff + i + 2;	/* the second '/' of "://" */
		req->path_len = 1;
	} else {
		req->path_off = toff + ae;
		req->path_len = tl - ae;
	}
	return EG_PARSE_OK;
}

enum eg_parse
eg_req_parse(const uint8_t *buf, size_t len, struct eg_req *req,
    const char **why)
{
	struct hdr_info hi;
	enum eg_parse r;
	size_t eol, i, ml, toff, tl;

	/* all but hdr[], which is written up to nhdr (3 KiB: most of
	 * the struct) */
	memset(req, 0, offsetof(struct eg_req, hdr));
	memset(&req->hdr[EG_MAX_HEADERS], 0, sizeof(*req) -
	    offsetof(struct eg_req, hdr[EG_MAX_HEADERS]));
	req->content_length = -1;
	if (why != NULL)
		*why = NULL;
	if (find_eol(buf, len, 0, &eol) == -1)
		return bad(why, "bad line ending");

	/* method SP */
	for (ml = 0; ml < eol && buf[ml] != ' '; ml++) {
		if (!is_tchar(buf[ml]) || (buf[ml] >= 'a' && buf[ml] <= 'z'))
			return bad(why, "bad method");
	}
	if (ml == 0 || ml == eol)
		return bad(why, "bad request line");
	if (ml >= sizeof(req->method))
		return bad(why, "method too long");
	memcpy(req->method, buf, ml);
	req->method[ml] = '\0';

	/* target SP: visible ASCII only */
	toff = ml + 1;
	for (i = toff; i < eol && buf[i] != ' '; i++)
		if (buf[i] <= 0x20 || buf[i] >= 0x7f)
			return bad(why, "bad character in request target");
	tl = i - toff;
	if (tl == 0 || i == eol)
		return bad(why, "bad request line");

	/* HTTP-version CRLF */
	i++;
	if (eol - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 ||
	    (buf[i + 7] != '0' && buf[i + 7] != '1'))
		return bad(why, "bad HTTP version");
	req->minor = buf[i + 7] - '0';

	if (strcmp(req->method, "CONNECT") == 0) {
		req->form = EG_REQ_CONNECT;
		r = parse_connect_target(buf + toff, tl, req, why);
	} else if (buf[toff] == '/' && tl > 1 && buf[toff + 1] != '/' &&
	    buf[toff + 1] != '?') {
		/* a credential route's request (route.c decides) */
		req->form = EG_REQ_ORIGIN;
		req->path_off = toff;
		req->path_len = tl;
		r = EG_PARSE_OK;
	} else {
		req->form = EG_REQ_ABSOLUTE;
		r = parse_absolute_target(buf, toff, tl, req, why);
	}
	if (r != EG_PARSE_OK)
		return r;
	req->target_ok = 1;

	r = parse_headers(buf, len, eol + 2, req->hdr, &req->nhdr, &hi,
	    &req->head_len, why);
	if (r != EG_PARSE_OK)
		return r;
	/* refused in requests, which egressd passes on to a server it
	 * decided; a response only goes back to the client that asked */
	if (hi.underscore != NULL)
		return bad(why, hi.underscore);
	if (req->form != EG_REQ_CONNECT) {
		req->content_length = hi.content_length;
		req->chunked = hi.chunked;
		if (hi.nhost && !host_valid(buf +
		    req->hdr[hi.host_idx].value_off,
		    req->hdr[hi.host_idx].value_len))
			return bad(why, "bad Host header");
	}
	req->close = hi.conn_close || (req->minor == 0 && !hi.conn_keepalive);
	return EG_PARSE_OK;
}

enum eg_parse
eg_resp_parse(const uint8_t *buf, size_t len, struct eg_resp *resp,
    const char **why)
{
	struct hdr_info hi;
	enum eg_parse r;
	size_t eol, i;

	/* all but hdr[] (the last member), written up to nhdr */
	memset(resp, 0, offsetof(struct eg_resp, hdr));
	resp->content_length = -1;
	if (why != NULL)
		*why = NULL;
	if (find_eol(buf, len, 0, &eol) == -1)
		return bad(why, "bad line ending");
	/* "HTTP/1.x SSS" then SP reason, or nothing (tolerated) */
	if (eol < 12 || memcmp(buf, "HTTP/1.", 7) != 0 ||
	    (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ')
		return bad(why, "bad status line");
	resp->minor = buf[7] - '0';
	for (i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return bad(why, "bad status code");
		resp->status = resp->status * 10 + (buf[i] - '0');
	}
	if (resp->status < 100 || resp->status > 599)
		return bad(why, "bad status code");
	if (eol > 12 && buf[12] != ' ')
		return bad(why, "bad status line");
	for (i = 13; i < eol; i++)
		if (!is_vbyte(buf[i]))
			return bad(why, "bad character in reason");

	r = parse_headers(buf, len, eol + 2, resp->hdr, &resp->nhdr, &hi,
	    &resp->head_len, why);
	if (r != EG_PARSE_OK)
		return r;
	resp->content_length = hi.content_length;
	resp->chunked = hi.chunked;
	resp->nobody = (resp->status < 200 || resp->status == 204 ||
	    resp->status == 304);
	resp->close = hi.conn_close ||
	    (resp->minor == 0 && !hi.conn_keepalive);
	/* A body delimited by the end of the connection ends it too. */
	if (!resp->nobody && !resp->chunked && resp->content_length == -1)
		resp->close = 1;
	return EG_PARSE_OK;
}

/*
 * Is header h hop-by-hop: one of the fixed names, Proxy-*, or a name
 * listed in any Connection header of hdr[]?
 */
static int
hop_by_hop(const uint8_t *buf, const struct eg_hdr *hdr, size_t nhdr,
    const struct eg_hdr *h)
{
	static const char *const fixed[] = {
		"connection", "keep-alive", "te", "trailer", "upgrade"
	};
	const uint8_t *name = buf + h->name_off;
	size_t i;

	/* ieq() is false unless the lengths are equal: 2, 7 or 10 */
	if (h->name_len == 2 || h->name_len == 7 || h->name_len == 10)
		for (i = 0; i < nitems(fixed); i++)
			if (ieq(name, h->name_len, fixed[i]))
				return 1;
	if (h->name_len >= 6 && ieq(name, 6, "proxy-"))
		return 1;
	for (i = 0; i < nhdr; i++) {
		if (hdr[i].name_len != 10 || !ieq(buf + hdr[i].name_off,
		    hdr[i].name_len, "connection"))
			continue;
		if (conn_tokens(buf + hdr[i].value_off, hdr[i].value_len,
		    NULL, name, h->name_len) == 1)
			return 1;
	}
	return 0;
}

int
eg_hdr_hop_by_hop(const uint8_t *buf, const struct eg_hdr *hdr, size_t nhdr,
    const struct eg_hdr *h)
{
	return hop_by_hop(buf, hdr, nhdr, h);
}

/*
 * Copy every end-to-end header (but Host, with skip_host), then our
 * Connection header and CRLF.
 */
static void
put_headers(struct eg_buf *o, const uint8_t *buf, const struct eg_hdr *hdr,
    size_t nhdr, int skip_host, int keepalive)
{
	size_t i;

	for (i = 0; i < nhdr; i++) {
		if (hop_by_hop(buf, hdr, nhdr, &hdr[i]))
			continue;
		if (skip_host && hdr[i].name_len == 4 &&
		    ieq(buf + hdr[i].name_off, hdr[i].name_len, "host"))
			continue;
		eg_buf_add(o, buf + hdr[i].name_off, hdr[i].name_len);
		eg_buf_str(o, ": ");
		eg_buf_add(o, buf + hdr[i].value_off, hdr[i].value_len);
		eg_buf_str(o, "\r\n");
	}
	eg_buf_str(o, keepalive ? "Connection: keep-alive\r\n\r\n" :
	    "Connection: close\r\n\r\n");
}

ssize_t
eg_req_origin_head(const uint8_t *buf, const struct eg_req *req,
    int keepalive, char *out, size_t cap)
{
	struct eg_buf o;
	char port[8];

	eg_buf_init(&o, out, cap);
	eg_buf_str(&o, req->method);
	eg_buf_str(&o, " ");
	if (req->path_len == 0)
		eg_buf_str(&o, "/");
	else
		eg_buf_add(&o, buf + req->path_off, req->path_len);
	eg_buf_str(&o, req->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n");
	/*
	 * The URL decided, so the URL's authority is the Host (RFC 9112
	 * section 3.2.2): the client's Host header, if any, is replaced.
	 */
	eg_buf_str(&o, "Host: ");
	eg_buf_add(&o, req->host.name, req->host.len);
	if (req->port != 80) {
		snprintf(port, sizeof(port), ":%u", (unsigned int)req->port);
		eg_buf_str(&o, port);
	}
	eg_buf_str(&o, "\r\n");
	put_headers(&o, buf, req->hdr, req->nhdr, 1, keepalive);
	if (eg_buf_failed(&o) || eg_buf_len(&o) > SSIZE_MAX)
		return -1;
	return (ssize_t)eg_buf_len(&o);
}

ssize_t
eg_resp_head(const uint8_t *buf, const struct eg_resp *resp, int keepalive,
    char *out, size_t cap)
{
	struct eg_buf o;
	size_t eol = 0;

	eg_buf_init(&o, out, cap);
	/* The status line is copied as received; it was validated. */
	while (eol + 1 < resp->head_len && buf[eol] != '\r')
		eol++;
	eg_buf_add(&o, buf, eol);
	eg_buf_str(&o, "\r\n");
	put_headers(&o, buf, resp->hdr, resp->nhdr, 0, keepalive);
	if (eg_buf_failed(&o) || eg_buf_len(&o) > SSIZE_MAX)
		return -1;
	return (ssize_t)eg_buf_len(&o);
}

/* eg_chunk.state values. */
enum {
	CS_SIZE0,	/* first hex digit of a chunk size */
	CS_SIZE,	/* more hex digits, ';', BWS or CR */
	CS_BWS,		/* whitespace after the size: only ';' may follow */
	CS_EXT,		/* chunk extension, up to CR */
	CS_SIZE_LF,	/* LF ending the size line */
	CS_DATA,	/* remain bytes of chunk data */
	CS_DATA_CR,	/* CR after chunk data */
	CS_DATA_LF,	/* LF after chunk data */
	CS_TRL_START,	/* start of a trailer line, or the final CRLF */
	CS_TRL,		/* inside a trailer line, up to CR */
	CS_TRL_LF,	/* LF ending a trailer line */
	CS_END_LF,	/* LF of the final empty line */
	CS_DONE,	/* the body has ended */
	CS_BAD		/* framing error; sticky */
};

void
eg_chunk_init(struct eg_chunk *ck)
{
	memset(ck, 0, sizeof(*ck));
	ck->state = CS_SIZE0;
}

ssize_t
eg_chunk_feed(struct eg_chunk *ck, const uint8_t *p, size_t n, int *done)
{
	size_t i = 0, take;
	uint8_t c;
	int h;

	*done = 0;
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	while (i < n) {
		if (ck->state == CS_DONE) {
			*done = 1;
			return (ssize_t)i;
		}
		if (ck->state == CS_BAD)
			return -1;
		if (ck->state == CS_DATA) {
			take = n - i;
			if (take > ck->remain)
				take = (size_t)ck->remain;
			ck->remain -= take;
			i += take;
			if (ck->remain == 0)
				ck->state = CS_DATA_CR;
			continue;
		}
		c = p[i++];
		switch (ck->state) {
		case CS_SIZE0:
		case CS_SIZE:
			h = eg_hexval(c);
			if (h >= 0) {
				if (ck->linelen == CHUNK_HEX_MAX)
					goto fail;
				ck->remain = (ck->remain << 4) | (uint64_t)h;
				ck->linelen++;
				ck->state = CS_SIZE;
			} else if (ck->state == CS_SIZE0) {
				goto fail;
			} else if (c == ';') {
				ck->linelen++;
				ck->state = CS_EXT;
			} else if (is_ows(c)) {
				ck->linelen++;
				ck->state = CS_BWS;
			} else if (c == '\r') {
				ck->state = CS_SIZE_LF;
			} else {
				goto fail;
			}
			break;
		case CS_BWS:
			ck->linelen++;
			if (ck->linelen > CHUNK_LINE_MAX)
				goto fail;
			if (c == ';')
				ck->state = CS_EXT;
			else if (!is_ows(c))
				goto fail;
			break;
		case CS_EXT:		/* the rest of a line: visible bytes */
		case CS_TRL:
			if (c == '\r') {
				ck->state = ck->state == CS_EXT ? CS_SIZE_LF :
				    CS_TRL_LF;
				break;
			}
			ck->linelen++;
			if (!is_vbyte(c) || ck->linelen > CHUNK_LINE_MAX)
				goto fail;
			break;
		case CS_SIZE_LF:
			if (c != '\n')
				goto fail;
			ck->linelen = 0;
			ck->state = ck->remain == 0 ? CS_TRL_START : CS_DATA;
			break;
		case CS_DATA_CR:
			if (c != '\r')
				goto fail;
			ck->state = CS_DATA_LF;
			break;
		case CS_DATA_LF:
			if (c != '\n')
				goto fail;
			ck->remain = 0;
			ck->linelen = 0;
			ck->state = CS_SIZE0;
			break;
		case CS_TRL_START:
			if (c == '\r') {
				ck->state = CS_END_LF;
				break;
			}
			if (!is_vbyte(c))
				goto fail;
			ck->linelen = 1;
			ck->state = CS_TRL;
			break;
		case CS_TRL_LF:
			if (c != '\n')
				goto fail;
			ck->state = CS_TRL_START;
			break;
		case CS_END_LF:
			if (c != '\n')
				goto fail;
			ck->state = CS_DONE;
			break;
		default:
			goto fail;
		}
	}
	if (ck->state == CS_DONE)
		*done = 1;
	return (ssize_t)i;
fail:
	ck->state = CS_BAD;
	return -1;
}
