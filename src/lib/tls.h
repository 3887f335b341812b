/*
 * tls.h: the TLS client of credential routes (SPEC "Routes"), the second
 * file of the mbedTLS seam (crypto.c is the first; nothing else includes
 * an mbedTLS header).  A route's upstream is https: egressd verifies its
 * certificate chain against the route's ca_file and its name against the
 * upstream host, sends SNI, and speaks TLS 1.2 or later.  Everything is
 * non-blocking on a socket the event loop owns: a call that would block
 * says which readiness it waits for, and is called again then.
 *
 * A struct eg_tls_conf belongs to a route of one configuration snapshot
 * (built while parsing, freed with the snapshot): the trusted chain, the
 * library's configuration, a random generator, and the last session the
 * upstream gave (resumed by the next connection, where the library and
 * the server allow it).  It is shared by every worker thread.
 *
 * Library rules: nothing here prints or exits; errors are -1 with a
 * message naming what failed.
 */
#ifndef EG_TLS_H
#define EG_TLS_H

#include <sys/types.h>
#include <stddef.h>

struct eg_tls_conf;
struct eg_tls;

#define EG_TLS_WANT_READ	(-2)	/* call again when readable */
#define EG_TLS_WANT_WRITE	(-3)	/* call again when writable */

/* The trust of ca_file (PEM, one or more certificates); NULL with err. */
struct eg_tls_conf *eg_tls_conf_new(const char *ca_file, char *err,
		    size_t errlen);
void		 eg_tls_conf_free(struct eg_tls_conf *);	/* NULL ok */

/* A client session on connected socket fd for host (SNI and the name
 * checked); the socket stays the caller's.  NULL with err. */
struct eg_tls	*eg_tls_new(struct eg_tls_conf *, int fd, const char *host,
		    char *err, size_t errlen);
/*
 * Advance the handshake: 0 once done, EG_TLS_WANT_READ/WRITE, or -1 with
 * err ("certificate not trusted: ...", "certificate name does not match
 * HOST", a protocol alert); *verify is 1 when the failure is the
 * certificate's (the chain or the name), else 0.
 */
int		 eg_tls_handshake(struct eg_tls *, int *verify, char *err,
		    size_t errlen);
/* Up to n bytes: >0, 0 at the peer's close (close_notify or EOF),
 * EG_TLS_WANT_READ/WRITE, or -1. */
ssize_t		 eg_tls_read(struct eg_tls *, void *buf, size_t n);
/* Up to n bytes (n > 0): >0 written, EG_TLS_WANT_*, or -1. */
ssize_t		 eg_tls_write(struct eg_tls *, const void *buf, size_t n);
/* Decrypted bytes held by the library (readable without the socket). */
size_t		 eg_tls_pending(struct eg_tls *);
/* Received bytes not yet read by the caller (in the read-ahead or the
 * library): after a complete answer, bytes the peer sent unasked. */
int		 eg_tls_buffered(struct eg_tls *);
/* The negotiated version ("TLSv1.2"). */
const char	*eg_tls_version(struct eg_tls *);
/* Frees and wipes (no close_notify: the caller closes the socket). */
void		 eg_tls_free(struct eg_tls *);		/* NULL ok */

#endif
