/*
 * sni.c: a strict, resumable parser that finds the server_name in the TLS
 * ClientHello a client sends first into a CONNECT tunnel.  It reassembles
 * the handshake message from its records, walks the hello with explicit
 * bounds, and reports whether it needs more bytes, found a name, or
 * refuses what it saw.  It does no I/O and keeps no state between calls.
 */
#include "egress-int.h"

#include "sni.h"

#define TLS_CT_HANDSHAKE	22
#define TLS_HS_CLIENT_HELLO	1
#define TLS_EXT_SERVER_NAME	0
#define TLS_SNI_HOST_NAME	0
#define REC_HDR			5
#define HS_HDR			4

/* A bounded read cursor over the reassembled message. */
struct sni_rd {
	const uint8_t	*p;
	size_t		 n;
};

static int
rd_skip(struct sni_rd *r, size_t k)
{
	if (r->n < k)
		return -1;
	r->p += k;
	r->n -= k;
	return 0;
}

static int
rd_u8(struct sni_rd *r, size_t *v)
{
	if (r->n < 1)
		return -1;
	*v = r->p[0];
	return rd_skip(r, 1);
}

static int
rd_u16(struct sni_rd *r, size_t *v)
{
	if (r->n < 2)
		return -1;
	*v = (size_t)r->p[0] << 8 | r->p[1];
	return rd_skip(r, 2);
}

/* Split off the next k bytes as a sub-cursor *sub. */
static int
rd_sub(struct sni_rd *r, size_t k, struct sni_rd *sub)
{
	if (r->n < k)
		return -1;
	sub->p = r->p;
	sub->n = k;
	return rd_skip(r, k);
}

/* Split off a vector with a 1- or 2-byte length prefix. */
static int
rd_vec(struct sni_rd *r, int width, struct sni_rd *sub)
{
	size_t k;

	if ((width == 1 ? rd_u8(r, &k) : rd_u16(r, &k)) == -1)
		return -1;
	return rd_sub(r, k, sub);
}

/* Letters, digits, '-' and '.': what a CONNECT host name may hold. */
static int
sni_name_ok(const uint8_t *s, size_t len)
{
	size_t i;

	if (len == 0 || len > EG_SNI_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		if ((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.')
			continue;
		return 0;
	}
	return 1;
}

/*
 * The server_name extension body: ServerNameList<1..2^16-1> filling the
 * extension exactly, one entry, host_name.  Sets *name and *len.
 */
static enum eg_sni
sni_server_name(struct sni_rd ext, const uint8_t **name, size_t *len)
{
	struct sni_rd list, host;
	size_t type;

	if (rd_vec(&ext, 2, &list) == -1 || ext.n != 0 || list.n == 0)
		return EG_SNI_BAD;
	if (rd_u8(&list, &type) == -1 || type != TLS_SNI_HOST_NAME)
		return EG_SNI_BAD;
	if (rd_vec(&list, 2, &host) == -1 || list.n != 0)
		return EG_SNI_BAD;
	if (!sni_name_ok(host.p, host.n))
		return EG_SNI_BAD;
	*name = host.p;
	*len = host.n;
	return EG_SNI_FOUND;
}

/*
 * Walk a complete ClientHello body (after the 4-byte handshake header).
 * Every field is checked, every extension is visited even after the name
 * is found, so a hello is FOUND only if all of it is well formed.
 */
static enum eg_sni
sni_hello(const uint8_t *body, size_t blen, const uint8_t **name,
    size_t *namelen)
{
	struct sni_rd r, v, exts, ext;
	uint8_t seen[65536 / 8];
	size_t ver, type;
	enum eg_sni res;

	r.p = body;
	r.n = blen;
	if (rd_u16(&r, &ver) == -1 || ver >> 8 != 3)
		return EG_SNI_BAD;
	if (rd_skip(&r, 32) == -1)				/* random */
		return EG_SNI_BAD;
	if (rd_vec(&r, 1, &v) == -1 || v.n > 32)		/* session_id */
		return EG_SNI_BAD;
	if (rd_vec(&r, 2, &v) == -1 || v.n < 2 || v.n % 2 != 0)
		return EG_SNI_BAD;				/* cipher_suites */
	if (rd_vec(&r, 1, &v) == -1 || v.n < 1)		/* compression */
		return EG_SNI_BAD;
	if (r.n == 0)
		return EG_SNI_NONE;	/* pre-extension hello (RFC 5246 7.4.1.2) */
	if (rd_vec(&r, 2, &exts) == -1 || r.n != 0)
		return EG_SNI_BAD;

	memset(seen, 0, sizeof(seen));
	res = EG_SNI_NONE;
	while (exts.n > 0) {
		if (rd_u16(&exts, &type) == -1 || rd_vec(&exts, 2, &ext) == -1)
			return EG_SNI_BAD;
		if (seen[type / 8] & (1U << (type % 8)))
			return EG_SNI_BAD;
		seen[type / 8] |= 1U << (type % 8);
		if (type != TLS_EXT_SERVER_NAME)
			continue;
		res = sni_server_name(ext, name, namelen);
		if (res != EG_SNI_FOUND)
			return res;
	}
	return res;
}

/*
 * Check the record header bytes present at h (avail of the 5), so that
 * garbage after a first byte of 22 is refused without waiting for more.
 */
static int
sni_rec_hdr_ok(const uint8_t *h, size_t avail)
{
	size_t rlen;

	if (avail >= 1 && h[0] != TLS_CT_HANDSHAKE)
		return 0;
	if (avail >= 2 && h[1] != 3)
		return 0;
	if (avail >= 3 && h[2] > 4)
		return 0;
	if (avail >= 5) {
		rlen = (size_t)h[3] << 8 | h[4];
		if (rlen == 0 || rlen > EG_SNI_MAX_RECORD)
			return 0;
	}
	return 1;
}

enum eg_sni
eg_sni_parse(const uint8_t *buf, size_t len, char *name, size_t namecap,
    size_t *namelen)
{
	uint8_t hs[HS_HDR + EG_SNI_MAX_HELLO];
	const uint8_t *np;
	size_t off, have, want, rlen, recend, end, k, nrec, nlen;
	int known;
	enum eg_sni res;

	if (len == 0)
		return EG_SNI_AGAIN;
	if (buf[0] != TLS_CT_HANDSHAKE)
		return EG_SNI_NOT_TLS;

	/*
	 * Reassemble: copy the data of consecutive records into hs until the
	 * handshake header, then the whole message, is there.  want grows
	 * from the header size to the message size once the length is known.
	 * Bytes after the message, in its last record or beyond, are not
	 * looked at.
	 */
	off = 0;
	have = 0;
	want = HS_HDR;
	known = 0;
	nrec = 0;
	for (;;) {
		if (nrec == EG_SNI_MAX_RECORDS)
			return EG_SNI_BAD;
		k = len - off < REC_HDR ? len - off : REC_HDR;
		if (!sni_rec_hdr_ok(buf + off, k))
			return EG_SNI_BAD;
		if (k < REC_HDR)
			return EG_SNI_AGAIN;
		rlen = (size_t)buf[off + 3] << 8 | buf[off + 4];
		off += REC_HDR;
		nrec++;
		recend = off + rlen;
		end = recend < len ? recend : len;
		while (off < end && have < want) {
			k = end - off < want - have ? end - off : want - have;
			memcpy(hs + have, buf + off, k);
			have += k;
			off += k;
			if (hs[0] != TLS_HS_CLIENT_HELLO)
				return EG_SNI_BAD;
			if (!known && have == HS_HDR) {
				known = 1;
				want = (size_t)hs[1] << 16 |
				    (size_t)hs[2] << 8 | hs[3];
				if (want > EG_SNI_MAX_HELLO)
					return EG_SNI_BAD;
				want += HS_HDR;
			}
		}
		if (have == want)
			break;
		if (off < recend)	/* the buffer ends inside this record */
			return EG_SNI_AGAIN;
	}

	res = sni_hello(hs + HS_HDR, want - HS_HDR, &np, &nlen);
	if (res != EG_SNI_FOUND)
		return res;
	if (name != NULL) {
		if (namecap < nlen + 1)
			return EG_SNI_BAD;
		memcpy(name, np, nlen);
		name[nlen] = '\0';
	}
	if (namelen != NULL)
		*namelen = nlen;
	return EG_SNI_FOUND;
}

static int
sni_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

int
eg_sni_match(const char *sni, size_t snilen, const char *host,
    size_t hostlen)
{
	size_t i;

	if (snilen > 0 && sni[snilen - 1] == '.')
		snilen--;
	if (hostlen > 0 && host[hostlen - 1] == '.')
		hostlen--;
	if (snilen == 0 || snilen != hostlen)
		return 0;
	for (i = 0; i < snilen; i++)
		if (sni_lower((unsigned char)sni[i]) !=
		    sni_lower((unsigned char)host[i]))
			return 0;
	return 1;
}

const char *
eg_sni_name(enum eg_sni r)
{
	switch (r) {
	case EG_SNI_AGAIN:
		return "again";
	case EG_SNI_FOUND:
		return "found";
	case EG_SNI_NONE:
		return "none";
	case EG_SNI_NOT_TLS:
		return "not_tls";
	case EG_SNI_BAD:
		return "bad";
	}
	return "?";
}
