/*
 * reqparse.h: the HTTP/1.x request and response head parser.  Bytes in,
 * struct out, no I/O, explicit lengths everywhere, nothing relies on NUL
 * termination.  The grammar is strict: CRLF line endings only, no
 * obs-fold, one space between request-line parts, HTTP/1.0 or HTTP/1.1.
 */
#ifndef EG_REQPARSE_H
#define EG_REQPARSE_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"

#define EG_MAX_HEADERS	100	/* header lines per head; more is 431 */

enum eg_req_form {
	EG_REQ_CONNECT,		/* CONNECT host:port HTTP/1.x */
	EG_REQ_ABSOLUTE,	/* METHOD http://host[:port]/path HTTP/1.x */
	EG_REQ_ORIGIN		/* METHOD /path HTTP/1.x: a route (route.h);
				   path_off/path_len are the target, no host */
};

struct eg_hdr {			/* offsets into the parsed buffer */
	size_t	name_off, name_len;
	size_t	value_off, value_len;	/* OWS trimmed */
};

struct eg_req {
	enum eg_req_form form;
	char		 method[24];	/* NUL-terminated */
	struct eg_host	 host;
	uint16_t	 port;		/* absolute form without port: 80 */
	int		 minor;		/* HTTP/1.minor */
	int		 target_ok;	/* host and port parsed (also when a
					   later part of the head is bad) */
	size_t		 path_off, path_len;	/* absolute form: origin-form
						   target; "/" if empty */
	size_t		 head_len;	/* bytes up to and including CRLFCRLF */
	size_t		 nhdr;
	struct eg_hdr	 hdr[EG_MAX_HEADERS];
	int64_t		 content_length;	/* -1: none */
	int		 chunked;	/* Transfer-Encoding: chunked */
	int		 close;		/* the connection ends after this one */
};

enum eg_parse {
	EG_PARSE_OK,
	EG_PARSE_AGAIN,		/* need more bytes */
	EG_PARSE_BAD,		/* malformed: 400 */
	EG_PARSE_TOOBIG		/* too many headers: 431 */
};

/*
 * Look for the end of a head in buf[0..len), resuming at *scan (start at
 * 0; updated so no byte is scanned twice).  Returns EG_PARSE_OK with
 * *head_len set, EG_PARSE_AGAIN, or EG_PARSE_BAD (bare LF, NUL, or a
 * control character outside header values).
 */
enum eg_parse	eg_head_scan(const uint8_t *buf, size_t len, size_t *scan,
		    size_t *head_len);

/*
 * Parse a complete request head (buf[0..len), len as returned by
 * eg_head_scan).  CONNECT needs the authority form; any other method
 * needs the absolute form with scheme "http".  For the absolute form,
 * Content-Length / Transfer-Encoding are validated (duplicates, both at
 * once, anything but exactly "chunked" are bad); a Host header must be
 * one valid host[:port], but the URL decides.  For both forms (and for
 * responses) a Connection header that names Content-Length,
 * Transfer-Encoding or Host is bad: the hop-by-hop filter would drop the
 * header egressd framed or routed by.  *why gets a static reason.
 */
enum eg_parse	eg_req_parse(const uint8_t *buf, size_t len,
		    struct eg_req *req, const char **why);

/*
 * Write the origin-form request head for req (parsed from buf) to out:
 * the request line with the origin-form target, "Host: " and the URL's
 * authority (whatever Host the client sent), every other header except
 * the hop-by-hop ones (Proxy-*, Connection and the headers it names,
 * Keep-Alive, TE, Trailer, Upgrade), then "Connection: keep-alive" or
 * "close" as keepalive says.  Returns the length, or -1 if cap is short.
 */
ssize_t		eg_req_origin_head(const uint8_t *buf, const struct eg_req *req,
		    int keepalive, char *out, size_t cap);

/* Is header h of hdr[0..nhdr) (parsed from buf) hop-by-hop: Connection,
 * Keep-Alive, TE, Trailer, Upgrade, Proxy-*, or named by a Connection? */
int		eg_hdr_hop_by_hop(const uint8_t *buf, const struct eg_hdr *hdr,
		    size_t nhdr, const struct eg_hdr *h);

struct eg_resp {
	int		 status;
	int		 minor;
	size_t		 head_len;
	int64_t		 content_length;	/* -1: none */
	int		 chunked;
	int		 close;		/* Connection: close, or HTTP/1.0
					   without keep-alive */
	int		 nobody;	/* 1xx, 204, 304 (or HEAD, set by
					   the caller) */
	size_t		 nhdr;
	struct eg_hdr	 hdr[EG_MAX_HEADERS];
};

/* Parse a complete response head, as eg_req_parse does requests. */
enum eg_parse	eg_resp_parse(const uint8_t *buf, size_t len,
		    struct eg_resp *resp, const char **why);

/*
 * Write the response head without hop-by-hop headers, adding
 * "Connection: keep-alive" or "close".  Returns length or -1.
 */
ssize_t		eg_resp_head(const uint8_t *buf, const struct eg_resp *resp,
		    int keepalive, char *out, size_t cap);

/*
 * Chunked-body framing, byte-transparent: feed the bytes that follow a
 * head and learn where the body ends.  Chunk sizes are bounded (no
 * overflow), extensions and trailers are skipped with line limits.
 */
struct eg_chunk {
	int		state;
	uint64_t	remain;
	size_t		linelen;
};

void		eg_chunk_init(struct eg_chunk *);
/*
 * Consume up to n bytes.  Returns the number of bytes that belong to the
 * body (n or fewer), sets *done to 1 when the last chunk and trailers
 * ended at that point, or returns -1 if the framing is malformed.
 */
ssize_t		eg_chunk_feed(struct eg_chunk *, const uint8_t *p, size_t n,
		    int *done);

#endif
