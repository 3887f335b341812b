/*
 * tls.c: the TLS client of credential routes (tls.h says what and why),
 * the second and last file that calls mbedTLS (crypto.c is the first).
 * Written against the public API of mbedTLS 2.28 and 3.6; the
 * differences it meets are how the lowest version is set, the TLS 1.3
 * session ticket that 3.6's read reports (the #if blocks below), and 3.x
 * wanting psa_crypto_init() before a handshake.
 */
#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/version.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#include <psa/crypto.h>
#endif

#include "alloc.h"
#include "tls.h"

struct eg_tls_conf {
	mbedtls_ssl_config	 conf;
	mbedtls_x509_crt	 ca;
	mbedtls_entropy_context	 ent;
	mbedtls_ctr_drbg_context drbg;
	pthread_mutex_t		 mtx;		/* drbg and sess */
	mbedtls_ssl_session	 sess;		/* the last one, to resume */
	int			 has_sess;
};

/*
 * Read-ahead: mbedTLS asks for a record's 5-byte header, then for its
 * body, each a recv(2) of its own.  One recv of up to RA_BYTES serves
 * both (and a second record already there) from here.
 */
#define RA_BYTES	(16384 + 2048)	/* a record with its overhead */

struct eg_tls {
	struct eg_tls_conf	*tc;
	mbedtls_ssl_context	 ssl;
	int			 fd;
	int			 done;		/* handshake finished */
	int			 eagain;	/* the socket said EAGAIN */
	size_t			 ra_off, ra_len;	/* in ra */
	unsigned char		 ra[RA_BYTES];
};

static void
tls_errstr(int rc, char *buf, size_t len)
{
	char e[160];

	mbedtls_strerror(rc, e, sizeof(e));
	snprintf(buf, len, "%s (-0x%04x)", e, (unsigned int)-rc);
}

/* The generator, shared by the worker threads: under the conf's lock. */
static int
tls_rng(void *arg, unsigned char *out, size_t n)
{
	struct eg_tls_conf *tc = arg;
	int rc;

	pthread_mutex_lock(&tc->mtx);
	rc = mbedtls_ctr_drbg_random(&tc->drbg, out, n);
	pthread_mutex_unlock(&tc->mtx);
	return rc;
}

struct eg_tls_conf *
eg_tls_conf_new(const char *ca_file, char *err, size_t errlen)
{
	struct eg_tls_conf *tc;
	char e[200];
	int rc;

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	if (psa_crypto_init() != PSA_SUCCESS) {
		snprintf(err, errlen, "cannot initialise the crypto library");
		return NULL;
	}
#endif
	if ((tc = eg_calloc(1, sizeof(*tc))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&tc->mtx, NULL);
	mbedtls_ssl_config_init(&tc->conf);
	mbedtls_x509_crt_init(&tc->ca);
	mbedtls_entropy_init(&tc->ent);
	mbedtls_ctr_drbg_init(&tc->drbg);
	mbedtls_ssl_session_init(&tc->sess);
	if ((rc = mbedtls_x509_crt_parse_file(&tc->ca, ca_file)) != 0) {
		if (rc > 0)
			snprintf(err, errlen, "%s: %d certificates could not "
			    "be parsed", ca_file, rc);
		else {
			tls_errstr(rc, e, sizeof(e));
			snprintf(err, errlen, "%s: %s", ca_file, e);
		}
		eg_tls_conf_free(tc);
		return NULL;
	}
	if ((rc = mbedtls_ctr_drbg_seed(&tc->drbg, mbedtls_entropy_func,
	    &tc->ent, (const unsigned char *)"egressd route", 13)) != 0 ||
	    (rc = mbedtls_ssl_config_defaults(&tc->conf, MBEDTLS_SSL_IS_CLIENT,
	    MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT)) != 0) {
		tls_errstr(rc, e, sizeof(e));
		snprintf(err, errlen, "TLS setup: %s", e);
		eg_tls_conf_free(tc);
		return NULL;
	}
	mbedtls_ssl_conf_authmode(&tc->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(&tc->conf, &tc->ca, NULL);
	mbedtls_ssl_conf_rng(&tc->conf, tls_rng, tc);
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	mbedtls_ssl_conf_min_tls_version(&tc->conf, MBEDTLS_SSL_VERSION_TLS1_2);
#if defined(MBEDTLS_SSL_PROTO_TLS1_3) && defined(MBEDTLS_SSL_SESSION_TICKETS) && \
    MBEDTLS_VERSION_NUMBER >= 0x03060100
	/* TLS 1.3 tickets are ignored unless asked for (3.6.1 on; 3.6.0
	 * always signals them): resumption needs them */
	mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets(&tc->conf,
	    MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED);
#endif
#else
	mbedtls_ssl_conf_min_version(&tc->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
	    MBEDTLS_SSL_MINOR_VERSION_3);
#endif
	return tc;
}

void
eg_tls_conf_free(struct eg_tls_conf *tc)
{
	if (tc == NULL)
		return;
	mbedtls_ssl_session_free(&tc->sess);
	mbedtls_ssl_config_free(&tc->conf);
	mbedtls_x509_crt_free(&tc->ca);
	mbedtls_ctr_drbg_free(&tc->drbg);
	mbedtls_entropy_free(&tc->ent);
	pthread_mutex_destroy(&tc->mtx);
	eg_free(tc);
}

static int
tls_send(void *arg, const unsigned char *buf, size_t len)
{
	struct eg_tls *t = arg;
	ssize_t n;

	do
		n = send(t->fd, buf, len, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	return MBEDTLS_ERR_NET_SEND_FAILED;
}

static int
tls_recv(void *arg, unsigned char *buf, size_t len)
{
	struct eg_tls *t = arg;
	ssize_t n;

	if (t->ra_len == 0 && len < sizeof(t->ra)) {
		do
			n = recv(t->fd, t->ra, sizeof(t->ra), 0);
		while (n == -1 && errno == EINTR);
		if (n > 0) {
			t->ra_off = 0;
			t->ra_len = (size_t)n;
		}
	} else if (t->ra_len == 0) {
		do
			n = recv(t->fd, buf, len, 0);
		while (n == -1 && errno == EINTR);
	} else
		n = 0;
	if (t->ra_len > 0) {
		n = (ssize_t)(len < t->ra_len ? len : t->ra_len);
		memcpy(buf, t->ra + t->ra_off, (size_t)n);
		t->ra_off += (size_t)n;
		t->ra_len -= (size_t)n;
		return (int)n;
	}
	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		t->eagain = 1;
		return MBEDTLS_ERR_SSL_WANT_READ;
	}
	return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET :
	    MBEDTLS_ERR_NET_RECV_FAILED;
}

struct eg_tls *
eg_tls_new(struct eg_tls_conf *tc, int fd, const char *host, char *err,
    size_t errlen)
{
	struct eg_tls *t;
	char e[200];
	int rc;

	if ((t = eg_calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->tc = tc;
	t->fd = fd;
	mbedtls_ssl_init(&t->ssl);
	if ((rc = mbedtls_ssl_setup(&t->ssl, &tc->conf)) != 0 ||
	    (rc = mbedtls_ssl_set_hostname(&t->ssl, host)) != 0) {
		tls_errstr(rc, e, sizeof(e));
		snprintf(err, errlen, "TLS setup: %s", e);
		eg_tls_free(t);
		return NULL;
	}
	mbedtls_ssl_set_bio(&t->ssl, t, tls_send, tls_recv, NULL);
	pthread_mutex_lock(&tc->mtx);
	if (tc->has_sess)
		(void)mbedtls_ssl_set_session(&t->ssl, &tc->sess);
	pthread_mutex_unlock(&tc->mtx);
	return t;
}

/*
 * Keep the connection's session for the next connection to resume: after
 * a TLS 1.2 handshake (its ID or ticket), and for TLS 1.3 each time the
 * server sends a ticket (NewSessionTicket, after the handshake: 3.6
 * signals it from a read, see eg_tls_conf_new()).
 */
static void
tls_keep_session(struct eg_tls *t)
{
	mbedtls_ssl_session s;

	mbedtls_ssl_session_init(&s);
	if (mbedtls_ssl_get_session(&t->ssl, &s) == 0) {
		pthread_mutex_lock(&t->tc->mtx);
		mbedtls_ssl_session_free(&t->tc->sess);
		t->tc->sess = s;	/* the context moves in */
		t->tc->has_sess = 1;
		pthread_mutex_unlock(&t->tc->mtx);
	} else
		mbedtls_ssl_session_free(&s);
}

/*
 * mbedtls_ssl_handshake() (buf NULL) or mbedtls_ssl_read(), again until
 * it makes progress or the socket is empty.  WANT_READ means "wait for
 * the socket" only when the socket said EAGAIN: after a record that
 * carried no data (a TLS 1.3 ticket, say) the library returns it too,
 * with the next records already in the read-ahead, where epoll would
 * never report them.  Each such call consumed a record.
 */
static int
tls_drive(struct eg_tls *t, void *buf, size_t n)
{
	int rc = MBEDTLS_ERR_SSL_WANT_READ, tries;

	for (tries = 0; tries < 64; tries++) {
		t->eagain = 0;
		rc = buf == NULL ? mbedtls_ssl_handshake(&t->ssl) :
		    mbedtls_ssl_read(&t->ssl, buf, n);
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
		/* TLS 1.3 (3.6): a NewSessionTicket is not data and not an
		 * error: keep it to resume with */
		if (rc == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
			tls_keep_session(t);
			continue;
		}
#endif
		if (rc != MBEDTLS_ERR_SSL_WANT_READ || t->eagain)
			break;
	}
	return rc;
}

int
eg_tls_handshake(struct eg_tls *t, int *verify, char *err, size_t errlen)
{
	char e[200], vi[512];
	uint32_t flags;
	int rc;

	*verify = 0;
	if (t->done)
		return 0;
	rc = tls_drive(t, NULL, 0);
	if (rc == MBEDTLS_ERR_SSL_WANT_READ)
		return EG_TLS_WANT_READ;
	if (rc == MBEDTLS_ERR_SSL_WANT_WRITE)
		return EG_TLS_WANT_WRITE;
	if (rc != 0) {
		flags = mbedtls_ssl_get_verify_result(&t->ssl);
		if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED ||
		    (flags != 0 && flags != (uint32_t)-1)) {
			*verify = 1;
			if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH)
				snprintf(err, errlen, "certificate name does "
				    "not match the upstream host");
			else {
				vi[0] = '\0';
				mbedtls_x509_crt_verify_info(vi, sizeof(vi),
				    "", flags);
				vi[strcspn(vi, "\n")] = '\0';
				snprintf(err, errlen, "certificate not "
				    "trusted: %s", vi[0] ? vi : "verify failed");
			}
		} else {
			tls_errstr(rc, e, sizeof(e));
			snprintf(err, errlen, "TLS handshake: %s", e);
		}
		return -1;
	}
	t->done = 1;
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	/* TLS 1.3: the session comes with a ticket, after the handshake;
	 * one without would only replace a resumable one */
	if (mbedtls_ssl_get_version_number(&t->ssl) ==
	    MBEDTLS_SSL_VERSION_TLS1_3)
		return 0;
#endif
	tls_keep_session(t);
	return 0;
}

/* An mbedtls_ssl_read() or _write() result as ours: the bytes (0: EOF),
 * EG_TLS_WANT_READ or _WRITE, or -1. */
static ssize_t
tls_io_result(int rc)
{
	if (rc >= 0)
		return rc;
	if (rc == MBEDTLS_ERR_SSL_WANT_READ)
		return EG_TLS_WANT_READ;
	if (rc == MBEDTLS_ERR_SSL_WANT_WRITE)
		return EG_TLS_WANT_WRITE;
	return -1;
}

ssize_t
eg_tls_read(struct eg_tls *t, void *buf, size_t n)
{
	int rc = tls_drive(t, buf, n);

	if (rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
		return 0;
	return tls_io_result(rc);
}

ssize_t
eg_tls_write(struct eg_tls *t, const void *buf, size_t n)
{
	int rc = mbedtls_ssl_write(&t->ssl, buf, n);

	/* a write that wrote nothing is an error, not an EOF */
	return rc == 0 ? -1 : tls_io_result(rc);
}

size_t
eg_tls_pending(struct eg_tls *t)
{
	return mbedtls_ssl_get_bytes_avail(&t->ssl);
}

int
eg_tls_buffered(struct eg_tls *t)
{
	return t->ra_len > 0 || mbedtls_ssl_check_pending(&t->ssl);
}

const char *
eg_tls_version(struct eg_tls *t)
{
	return mbedtls_ssl_get_version(&t->ssl);
}

void
eg_tls_free(struct eg_tls *t)
{
	if (t == NULL)
		return;
	mbedtls_ssl_free(&t->ssl);
	eg_free(t);
}
