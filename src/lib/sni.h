/*
 * sni.h: find the server name (SNI) in a TLS ClientHello, for sni_check
 * (SPEC "Proxy behaviour").  A pure parser over the bytes a client sent
 * after the 200 of a CONNECT: no I/O, no allocation, no global state.
 */
#ifndef EG_SNI_H
#define EG_SNI_H

#include <stddef.h>
#include <stdint.h>

/* Longest ClientHello body (handshake length field) accepted. */
#define EG_SNI_MAX_HELLO	16384
/* Most TLS records the ClientHello may be split across. */
#define EG_SNI_MAX_RECORDS	64
/* Longest record accepted: TLSPlaintext.length, RFC 8446 5.1. */
#define EG_SNI_MAX_RECORD	16384
/* Longest host_name (RFC 6066 3: HostName<1..2^16-1>, DNS limit 255). */
#define EG_SNI_NAME_MAX		255
/*
 * Client bytes the caller must be ready to hold.  With at least this many
 * bytes eg_sni_parse() never answers EG_SNI_AGAIN: 4 bytes of handshake
 * header, the body, and a 5-byte header for each record.
 */
#define EG_SNI_BUF_MAX							\
	(4 + EG_SNI_MAX_HELLO + 5 * EG_SNI_MAX_RECORDS)

enum eg_sni {
	EG_SNI_AGAIN,		/* a TLS prefix so far: read more, call again */
	EG_SNI_FOUND,		/* a complete ClientHello with a host_name */
	EG_SNI_NONE,		/* a complete ClientHello without server_name */
	EG_SNI_NOT_TLS,		/* first byte is not 22 (handshake record) */
	EG_SNI_BAD		/* TLS, but malformed or over a bound above */
};

/*
 * Parse the first len bytes a client sent into a tunnel.  buf holds every
 * byte received so far, from the first; call again with the longer buffer
 * after each read while the answer is EG_SNI_AGAIN.  The answer depends
 * only on the bytes it looked at, so once it is not EG_SNI_AGAIN, more
 * bytes never change it.
 *
 * What counts as TLS: the first byte is 22 (a handshake record).  Anything
 * else, including an SSLv2-style hello (high bit set) which cannot carry
 * extensions, is EG_SNI_NOT_TLS and decided after the first byte.  Once the
 * first byte is 22, every deviation from the grammar is EG_SNI_BAD, found
 * as early as the bytes allow (a record header is checked byte by byte):
 *  - record headers: type 22, version 3.0-3.4, length 1..EG_SNI_MAX_RECORD,
 *    at most EG_SNI_MAX_RECORDS records up to the end of the hello;
 *  - handshake type 1 (ClientHello), length <= EG_SNI_MAX_HELLO, the message
 *    reassembled from consecutive records; bytes after it are ignored;
 *  - legacy_version 3.x, random, session_id <= 32, cipher_suites even and
 *    >= 2, compression_methods >= 1, then either nothing (EG_SNI_NONE) or
 *    an extensions block that fills the message exactly, each extension
 *    inside it, no extension type twice (RFC 8446 4.2);
 *  - server_name (type 0): a non-empty list that fills the extension,
 *    exactly one entry, of type host_name, 1..255 bytes of letters, digits,
 *    '-' and '.'.  A second host_name is BAD, not "first wins": a server
 *    that took the other one would defeat the check.
 * Nothing else in the extensions is interpreted.  With ECH (0xfe0d) the
 * outer server_name, the public name, is what is found and compared.
 *
 * On EG_SNI_FOUND the name is copied, as sent, to name (NUL-terminated)
 * and its length stored in *namelen; name and namelen may be NULL.  namecap
 * should be at least EG_SNI_NAME_MAX + 1: a name that does not fit is
 * EG_SNI_BAD.  On other answers name and *namelen are untouched.
 *
 * Uses about 25 KiB of stack (the reassembled message and a bitmap of the
 * extension types seen); work is linear in len.  The caller bounds its
 * buffer to EG_SNI_BUF_MAX and the time it waits for the hello.  Callable
 * from any thread.
 */
enum eg_sni	eg_sni_parse(const uint8_t *buf, size_t len, char *name,
		    size_t namecap, size_t *namelen);

/*
 * Compare an SNI (snilen bytes, as parsed) with the CONNECT host (hostlen
 * bytes, normalised: lower case, no trailing dot).  ASCII case-insensitive,
 * ignoring one trailing dot on either side.  Neither needs a terminating
 * NUL.  Returns 1 when they name the same host, 0 otherwise (also when
 * either is empty).
 */
int		eg_sni_match(const char *sni, size_t snilen, const char *host,
		    size_t hostlen);

/* The enum's name for logs and tests: "again", "found", ... */
const char	*eg_sni_name(enum eg_sni);

#endif
