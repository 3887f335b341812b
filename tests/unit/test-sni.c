/*
 * test-sni.c: unit tests for the ClientHello SNI parser (sni.c).  Real
 * hellos captured from openssl s_client and curl are read from
 * $srcdir/tests/data/sni/; the rest are built here, field by field, so
 * each bound of the grammar can be broken on purpose.
 */
#include "egress-int.h"

#include "sni.h"
#include "tap.h"

#define BIG	(EG_SNI_BUF_MAX + 4096)

/* A growable-by-hand byte string with a fixed cap; tests only. */
struct bs {
	uint8_t	b[BIG];
	size_t	n;
};

static void
bs_put(struct bs *s, const void *p, size_t k)
{
	if (s->n + k > sizeof(s->b)) {
		diag("builder overflow");
		exit(2);
	}
	memcpy(s->b + s->n, p, k);
	s->n += k;
}

static void
bs_u8(struct bs *s, unsigned v)
{
	uint8_t c = v & 0xff;

	bs_put(s, &c, 1);
}

static void
bs_u16(struct bs *s, unsigned v)
{
	bs_u8(s, v >> 8);
	bs_u8(s, v);
}

static void
bs_u24(struct bs *s, unsigned v)
{
	bs_u8(s, v >> 16);
	bs_u16(s, v);
}

static void
bs_fill(struct bs *s, unsigned v, size_t k)
{
	while (k-- > 0)
		bs_u8(s, v);
}

/* The parts of a ClientHello body the tests vary. */
struct hello {
	unsigned	 version;	/* legacy_version */
	size_t		 sidlen;
	size_t		 cslen;		/* bytes of cipher_suites */
	size_t		 complen;
	int		 noext;		/* omit the extensions block */
	const uint8_t	*ext;		/* the extensions, already encoded */
	size_t		 extlen;
	long		 extfix;	/* added to the block's length field */
	size_t		 trailing;	/* junk bytes after the block */
};

static void
hello_default(struct hello *h)
{
	memset(h, 0, sizeof(*h));
	h->version = 0x0303;
	h->sidlen = 32;
	h->cslen = 4;
	h->complen = 1;
}

/* A ClientHello handshake message: type, 24-bit length, body. */
static void
hello_build(struct bs *out, const struct hello *h, unsigned hstype)
{
	static struct bs body;

	body.n = 0;
	bs_u16(&body, h->version);
	bs_fill(&body, 0xaa, 32);
	bs_u8(&body, h->sidlen);
	bs_fill(&body, 0x55, h->sidlen);
	bs_u16(&body, h->cslen);
	bs_fill(&body, 0x13, h->cslen);
	bs_u8(&body, h->complen);
	bs_fill(&body, 0, h->complen);
	if (!h->noext) {
		bs_u16(&body, (unsigned)((long)h->extlen + h->extfix));
		bs_put(&body, h->ext, h->extlen);
	}
	bs_fill(&body, 0x77, h->trailing);
	out->n = 0;
	bs_u8(out, hstype);
	bs_u24(out, body.n);
	bs_put(out, body.b, body.n);
}

/*
 * Wrap a handshake message into records: cuts[] are the lengths of all
 * records but the last, which takes the rest.
 */
static void
records(struct bs *out, const struct bs *hs, const size_t *cuts,
    size_t ncuts)
{
	size_t i, off, k;

	out->n = 0;
	off = 0;
	for (i = 0; i <= ncuts; i++) {
		k = i < ncuts ? cuts[i] : hs->n - off;
		bs_u8(out, 22);
		bs_u16(out, 0x0301);
		bs_u16(out, k);
		bs_put(out, hs->b + off, k);
		off += k;
	}
}

/* One extension: type, length, data. */
static void
ext_raw(struct bs *e, unsigned type, const void *data, size_t k)
{
	bs_u16(e, type);
	bs_u16(e, k);
	bs_put(e, data, k);
}

/* A server_name extension with one host_name. */
static void
ext_sni(struct bs *e, const char *name, size_t k)
{
	bs_u16(e, 0);
	bs_u16(e, k + 5);
	bs_u16(e, k + 3);
	bs_u8(e, 0);
	bs_u16(e, k);
	bs_put(e, name, k);
}

/* A plausible set of extensions around a server_name. */
static void
exts_typical(struct bs *e, const char *name)
{
	static const uint8_t groups[] = { 0, 4, 0, 0x1d, 0, 0x17 };
	static const uint8_t vers[] = { 4, 3, 4, 3, 3 };

	e->n = 0;
	ext_raw(e, 10, groups, sizeof(groups));
	if (name != NULL)
		ext_sni(e, name, strlen(name));
	ext_raw(e, 43, vers, sizeof(vers));
	ext_raw(e, 23, "", 0);
}

/* Build a single-record hello with the typical extensions. */
static void
simple(struct bs *rec, const char *name)
{
	static struct bs e, hs;
	struct hello h;

	exts_typical(&e, name);
	hello_default(&h);
	h.ext = e.b;
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(rec, &hs, NULL, 0);
}

static enum eg_sni
parse(const struct bs *s, char *name)
{
	size_t nl;

	name[0] = '\0';
	return eg_sni_parse(s->b, s->n, name, EG_SNI_NAME_MAX + 1, &nl);
}

/*
 * Feed every prefix of buf[0..n): each must be AGAIN, the whole must give
 * want.  Returns 1 if so.
 */
static int
prefixes(const uint8_t *buf, size_t n, enum eg_sni want)
{
	char name[EG_SNI_NAME_MAX + 1];
	size_t i, nl;
	enum eg_sni r;

	for (i = 0; i < n; i++) {
		r = eg_sni_parse(buf, i, name, sizeof(name), &nl);
		if (r != EG_SNI_AGAIN) {
			diag("prefix %zu of %zu: %s", i, n, eg_sni_name(r));
			return 0;
		}
	}
	return eg_sni_parse(buf, n, name, sizeof(name), &nl) == want;
}

static size_t
readfile(const char *base, uint8_t *buf, size_t cap)
{
	const char *srcdir;
	char path[1024];
	FILE *f;
	size_t n;

	srcdir = getenv("srcdir");
	if (srcdir == NULL)
		srcdir = ".";
	snprintf(path, sizeof(path), "%s/tests/data/sni/%s", srcdir, base);
	f = fopen(path, "rb");
	if (f == NULL) {
		diag("cannot open %s", path);
		return 0;
	}
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static void
test_captured(void)
{
	static const struct {
		const char	*file;
		enum eg_sni	 want;
		const char	*name;
	} t[] = {
		{ "tls13-sni.bin", EG_SNI_FOUND, "api.example.com" },
		{ "tls12-sni.bin", EG_SNI_FOUND, "www.example.org" },
		{ "tls13-only.bin", EG_SNI_FOUND, "tls13.example.net" },
		{ "sni-upper-alpn.bin", EG_SNI_FOUND, "Mixed.Example.COM" },
		{ "curl-sni.bin", EG_SNI_FOUND, "curl.example.com" },
		{ "split-2rec.bin", EG_SNI_FOUND, "split.example.com" },
		{ "nosni.bin", EG_SNI_NONE, NULL },
		{ "tls12-nosni.bin", EG_SNI_NONE, NULL },
	};
	static uint8_t buf[BIG];
	char name[EG_SNI_NAME_MAX + 1];
	size_t i, n, nl;
	enum eg_sni r;

	for (i = 0; i < nitems(t); i++) {
		n = readfile(t[i].file, buf, sizeof(buf));
		ok(n > 0, "%s: read", t[i].file);
		name[0] = '\0';
		nl = 0;
		r = eg_sni_parse(buf, n, name, sizeof(name), &nl);
		is_str(eg_sni_name(r), eg_sni_name(t[i].want), "%s: %s",
		    t[i].file, eg_sni_name(t[i].want));
		if (t[i].name != NULL) {
			is_str(name, t[i].name, "%s: name", t[i].file);
			is_int(nl, strlen(t[i].name), "%s: namelen",
			    t[i].file);
		}
		ok(prefixes(buf, n, t[i].want),
		    "%s: every prefix is AGAIN", t[i].file);
	}

	/* The genuine two-record hello really is two records. */
	n = readfile("split-2rec.bin", buf, sizeof(buf));
	ok(n > 5 && 5 + ((size_t)buf[3] << 8 | buf[4]) < n,
	    "split-2rec.bin spans more than one record");

	/* Coalesced: CCS and early data after the hello are not looked at. */
	n = readfile("tls13-sni.bin", buf, sizeof(buf));
	memcpy(buf + n, "\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x02zz",
	    13);
	r = eg_sni_parse(buf, n + 13, name, sizeof(name), &nl);
	ok(r == EG_SNI_FOUND && strcmp(name, "api.example.com") == 0,
	    "bytes after the hello are ignored");
}

static void
test_splits(void)
{
	static struct bs e, hs, rec;
	char name[EG_SNI_NAME_MAX + 1];
	struct hello h;
	size_t cuts[EG_SNI_MAX_RECORDS + 1];
	size_t i, j, bad;

	exts_typical(&e, "split.example.com");
	hello_default(&h);
	h.ext = e.b;
	h.extlen = e.n;
	hello_build(&hs, &h, 1);

	/* Single record: every TCP split. */
	records(&rec, &hs, NULL, 0);
	ok(prefixes(rec.b, rec.n, EG_SNI_FOUND),
	    "one record: AGAIN for every prefix, then FOUND");

	/* Two records, cut at every byte of the message. */
	bad = 0;
	for (i = 1; i < hs.n; i++) {
		cuts[0] = i;
		records(&rec, &hs, cuts, 1);
		if (!prefixes(rec.b, rec.n, EG_SNI_FOUND))
			bad++;
		else if (parse(&rec, name) != EG_SNI_FOUND ||
		    strcmp(name, "split.example.com") != 0)
			bad++;
	}
	is_int(bad, 0, "two records, cut at each of %zu places", hs.n - 1);

	/* Three records, cut at many pairs of places. */
	bad = 0;
	for (i = 1; i < hs.n - 1; i += 3)
		for (j = 1; i + j < hs.n; j += 7) {
			cuts[0] = i;
			cuts[1] = j;
			records(&rec, &hs, cuts, 2);
			if (parse(&rec, name) != EG_SNI_FOUND ||
			    strcmp(name, "split.example.com") != 0)
				bad++;
		}
	is_int(bad, 0, "three records, cut at many places");

	/* The handshake header itself split 1+3 and 3+1. */
	cuts[0] = 1;
	records(&rec, &hs, cuts, 1);
	is_int(parse(&rec, name), EG_SNI_FOUND, "header split 1+3");
	cuts[0] = 3;
	records(&rec, &hs, cuts, 1);
	is_int(parse(&rec, name), EG_SNI_FOUND, "header split 3+1");

	/* A small hello (no extensions) in one-byte records: up to 64. */
	hello_default(&h);
	h.noext = 1;
	h.sidlen = 0;
	h.cslen = 2;
	hello_build(&hs, &h, 1);
	is_int(hs.n, 4 + 2 + 32 + 1 + 2 + 2 + 2, "tiny hello size");
	for (i = 0; i < hs.n - 1; i++)
		cuts[i] = 1;
	records(&rec, &hs, cuts, hs.n - 1);
	ok(prefixes(rec.b, rec.n, EG_SNI_NONE),
	    "%zu one-byte records: AGAIN, then NONE", hs.n);

	/* 65 records is over the bound. */
	h.sidlen = 20;
	hello_build(&hs, &h, 1);
	for (i = 0; i < EG_SNI_MAX_RECORDS; i++)
		cuts[i] = 1;
	records(&rec, &hs, cuts, EG_SNI_MAX_RECORDS);
	is_int(parse(&rec, name), EG_SNI_BAD, "65 records: BAD");
	records(&rec, &hs, cuts, EG_SNI_MAX_RECORDS - 1);
	is_int(parse(&rec, name), EG_SNI_NONE, "64 records: NONE");
}

static void
test_bounds(void)
{
	static struct bs e, hs, rec, pad;
	char name[EG_SNI_NAME_MAX + 1];
	struct hello h;
	size_t cuts[EG_SNI_MAX_RECORDS];
	size_t i, body, padlen, nl;

	/* A body of exactly EG_SNI_MAX_HELLO, needing two records. */
	hello_default(&h);
	exts_typical(&e, "max.example.com");
	h.ext = e.b;
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	body = hs.n - 4;
	padlen = EG_SNI_MAX_HELLO - body - 4;
	pad.n = 0;
	bs_fill(&pad, 0, padlen);
	ext_raw(&e, 21, pad.b, pad.n);
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	is_int(hs.n, 4 + EG_SNI_MAX_HELLO, "built a maximal hello");
	cuts[0] = EG_SNI_MAX_RECORD;
	records(&rec, &hs, cuts, 1);
	is_int(parse(&rec, name), EG_SNI_FOUND, "16 KiB hello: FOUND");

	/* The same in EG_SNI_MAX_RECORDS records needs EG_SNI_BUF_MAX. */
	for (i = 0; i < EG_SNI_MAX_RECORDS - 1; i++)
		cuts[i] = 256;
	records(&rec, &hs, cuts, EG_SNI_MAX_RECORDS - 1);
	is_int(rec.n, EG_SNI_BUF_MAX, "worst case fills EG_SNI_BUF_MAX");
	is_int(eg_sni_parse(rec.b, rec.n - 1, name, sizeof(name), &nl),
	    EG_SNI_AGAIN, "one byte short: AGAIN");
	is_int(parse(&rec, name), EG_SNI_FOUND, "EG_SNI_BUF_MAX: FOUND");

	/* One byte more is over the bound, before the body arrives. */
	ext_raw(&e, 22, "", 0);
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	cuts[0] = EG_SNI_MAX_RECORD;
	records(&rec, &hs, cuts, 1);
	is_int(parse(&rec, name), EG_SNI_BAD, "16 KiB + 4 hello: BAD");
	is_int(eg_sni_parse(rec.b, 9, name, sizeof(name), &nl), EG_SNI_BAD,
	    "oversize is BAD from the handshake header on");

	/* A record longer than TLSPlaintext allows. */
	rec.n = 0;
	bs_put(&rec, "\x16\x03\x01\x40\x01\x01\x00\x40\x00", 9);
	is_int(parse(&rec, name), EG_SNI_BAD, "record length 16385: BAD");
	rec.n = 0;
	bs_put(&rec, "\x16\x03\x01\x00\x00", 5);
	is_int(parse(&rec, name), EG_SNI_BAD, "zero-length record: BAD");
}

static void
test_malformed(void)
{
	static struct bs e, hs, rec;
	char name[EG_SNI_NAME_MAX + 1];
	struct hello h;
	size_t cuts[2];

#define BODY(what, want) do {						\
	hello_build(&hs, &h, 1);					\
	records(&rec, &hs, NULL, 0);					\
	is_int(parse(&rec, name), (want), "%s", (what));		\
	hello_default(&h);						\
	h.ext = e.b;							\
	h.extlen = e.n;							\
} while (0)

	exts_typical(&e, "m.example.com");
	hello_default(&h);
	h.ext = e.b;
	h.extlen = e.n;
	BODY("baseline", EG_SNI_FOUND);
	h.sidlen = 33;
	BODY("session_id 33 bytes", EG_SNI_BAD);
	h.sidlen = 0;
	BODY("session_id empty", EG_SNI_FOUND);
	h.cslen = 3;
	BODY("cipher_suites odd", EG_SNI_BAD);
	h.cslen = 0;
	BODY("cipher_suites empty", EG_SNI_BAD);
	h.complen = 0;
	BODY("compression_methods empty", EG_SNI_BAD);
	h.version = 0x0203;
	BODY("legacy_version 2.3", EG_SNI_BAD);
	h.extfix = 1;
	BODY("extensions length overflows the hello", EG_SNI_BAD);
	h.extfix = -1;
	BODY("extensions length short of the hello", EG_SNI_BAD);
	h.trailing = 1;
	h.noext = 1;
	BODY("one stray byte instead of extensions", EG_SNI_BAD);
	h.trailing = 3;
	BODY("bytes after the extensions", EG_SNI_BAD);
	h.noext = 1;
	BODY("no extensions block", EG_SNI_NONE);
	h.extlen = 0;
	BODY("empty extensions block", EG_SNI_NONE);
	h.extlen = e.n - 1;
	BODY("last extension truncated", EG_SNI_BAD);

	/* Handshake type 2 (ServerHello), and the early refusal. */
	hello_build(&hs, &h, 2);
	records(&rec, &hs, NULL, 0);
	is_int(parse(&rec, name), EG_SNI_BAD, "handshake type 2: BAD");
	is_int(eg_sni_parse(rec.b, 6, name, sizeof(name), NULL), EG_SNI_BAD,
	    "handshake type 2 refused from its first byte");
	hello_build(&hs, &h, 1);
	cuts[0] = 10;
	records(&rec, &hs, cuts, 1);
	rec.b[5 + 10] = 21;	/* the second record is an alert */
	is_int(parse(&rec, name), EG_SNI_BAD, "second record not handshake");
	rec.b[5 + 10] = 22;
	rec.b[5 + 10 + 2] = 5;
	is_int(parse(&rec, name), EG_SNI_BAD, "second record version 3.5");
	hs.b[1] = 0;
	hs.b[2] = 0;
	hs.b[3] = 0;
	records(&rec, &hs, NULL, 0);
	rec.n = 9;
	rec.b[4] = 4;
	is_int(parse(&rec, name), EG_SNI_BAD, "empty ClientHello: BAD");
#undef BODY
}

/* Hellos with a hand-made server_name extension body. */
static enum eg_sni
sni_body(const void *data, size_t k, char *name)
{
	static struct bs e, hs, rec;
	struct hello h;

	exts_typical(&e, NULL);
	ext_raw(&e, 0, data, k);
	hello_default(&h);
	h.ext = e.b;
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(&rec, &hs, NULL, 0);
	return parse(&rec, name);
}

static void
test_names(void)
{
	static struct bs rec, e, hs;
	char name[EG_SNI_NAME_MAX + 1], big[300];
	struct hello h;
	size_t nl;

	simple(&rec, "API.Example.COM.");
	is_int(parse(&rec, name), EG_SNI_FOUND, "upper case, trailing dot");
	is_str(name, "API.Example.COM.", "name is returned as sent");

	is_int(sni_body("\x00\x08\x00\x00\x05" "a\0b.c", 10, name),
	    EG_SNI_BAD, "NUL in name: BAD");
	is_int(sni_body("\x00\x08\x00\x00\x05" "a b.c", 10, name),
	    EG_SNI_BAD, "space in name: BAD");
	is_int(sni_body("\x00\x08\x00\x00\x05" "a_b.c", 10, name),
	    EG_SNI_BAD, "underscore in name: BAD");
	is_int(sni_body("\x00\x08\x00\x00\x05" "a\xc3\xa9.c", 10, name),
	    EG_SNI_BAD, "UTF-8 in name: BAD");
	is_int(sni_body("\x00\x03\x00\x00\x00", 5, name), EG_SNI_BAD,
	    "empty host_name: BAD");
	is_int(sni_body("", 0, name), EG_SNI_BAD,
	    "empty server_name extension: BAD");
	is_int(sni_body("\x00\x00", 2, name), EG_SNI_BAD,
	    "empty server_name_list: BAD");
	is_int(sni_body("\x00\x09\x00\x00\x05" "ab.cd", 10, name),
	    EG_SNI_BAD, "list length overflows the extension");
	is_int(sni_body("\x00\x07\x00\x00\x05" "ab.cd", 10, name),
	    EG_SNI_BAD, "list length short of the extension");
	is_int(sni_body("\x00\x08\x00\x00\x06" "ab.cd", 10, name),
	    EG_SNI_BAD, "host_name length overflows the list");
	is_int(sni_body("\x00\x08\x01\x00\x05" "ab.cd", 10, name),
	    EG_SNI_BAD, "name_type 1: BAD");
	is_int(sni_body("\x00\x10\x00\x00\x05" "ab.cd" "\x00\x00\x05" "ef.gh",
	    18, name), EG_SNI_BAD, "two host_names: BAD");
	is_int(sni_body("\x00\x08\x00\x00\x05" "ab.cd", 10, name),
	    EG_SNI_FOUND, "hand-made server_name: FOUND");
	is_str(name, "ab.cd", "hand-made name");

	memset(big, 'a', sizeof(big));
	big[0] = 'x';
	e.n = 0;
	ext_sni(&e, big, 255);
	hello_default(&h);
	h.ext = e.b;
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(&rec, &hs, NULL, 0);
	is_int(parse(&rec, name), EG_SNI_FOUND, "255-byte name: FOUND");
	is_int(strlen(name), 255, "255-byte name copied whole");
	is_int(eg_sni_parse(rec.b, rec.n, name, 255, &nl), EG_SNI_BAD,
	    "name does not fit namecap: BAD");
	is_int(eg_sni_parse(rec.b, rec.n, NULL, 0, &nl), EG_SNI_FOUND,
	    "name may be NULL");
	is_int(nl, 255, "namelen without name");
	e.n = 0;
	ext_sni(&e, big, 256);
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(&rec, &hs, NULL, 0);
	is_int(parse(&rec, name), EG_SNI_BAD, "256-byte name: BAD");

	/* The same extension twice. */
	e.n = 0;
	ext_sni(&e, "one.example", 11);
	ext_sni(&e, "two.example", 11);
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(&rec, &hs, NULL, 0);
	is_int(parse(&rec, name), EG_SNI_BAD, "two server_name extensions");
	e.n = 0;
	ext_raw(&e, 43, "\x02\x03\x04", 3);
	ext_sni(&e, "one.example", 11);
	ext_raw(&e, 43, "\x02\x03\x04", 3);
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(&rec, &hs, NULL, 0);
	is_int(parse(&rec, name), EG_SNI_BAD, "any extension twice: BAD");

	/* ECH: the outer server_name (public name) is what is found. */
	e.n = 0;
	ext_sni(&e, "public.example.net", 18);
	ext_raw(&e, 0xfe0d, "\x00\x00\x01\x00\x01\x07\x00\x00\x00\x04zzzz",
	    14);
	h.extlen = e.n;
	hello_build(&hs, &h, 1);
	records(&rec, &hs, NULL, 0);
	is_int(parse(&rec, name), EG_SNI_FOUND, "ECH hello: FOUND");
	is_str(name, "public.example.net", "ECH: the public name");
}

static void
test_not_tls(void)
{
	static const struct {
		const char	*what;
		const char	*bytes;
		size_t		 len;
		enum eg_sni	 want;
	} t[] = {
		{ "HTTP request", "GET / HTTP/1.1\r\n", 16, EG_SNI_NOT_TLS },
		{ "SSH banner", "SSH-2.0-x\r\n", 11, EG_SNI_NOT_TLS },
		{ "SSLv2 hello", "\x80\x2e\x01\x00\x02\x00\x15", 7,
		    EG_SNI_NOT_TLS },
		{ "one byte 0x00", "", 1, EG_SNI_NOT_TLS },
		{ "0x16 then text", "\x16GET", 4, EG_SNI_BAD },
		{ "0x16 0x02", "\x16\x02", 2, EG_SNI_BAD },
		{ "record version 3.5", "\x16\x03\x05", 3, EG_SNI_BAD },
		{ "lone 0x16", "\x16", 1, EG_SNI_AGAIN },
		{ "record header only", "\x16\x03\x01\x00\x30", 5,
		    EG_SNI_AGAIN },
		{ "empty", "", 0, EG_SNI_AGAIN },
	};
	char name[EG_SNI_NAME_MAX + 1];
	size_t i, nl;

	for (i = 0; i < nitems(t); i++)
		is_int(eg_sni_parse((const uint8_t *)t[i].bytes, t[i].len,
		    name, sizeof(name), &nl), t[i].want, "%s: %s", t[i].what,
		    eg_sni_name(t[i].want));
}

static void
test_match(void)
{
	ok(eg_sni_match("API.Example.COM", 15, "api.example.com", 15),
	    "match: case-insensitive");
	ok(eg_sni_match("api.example.com.", 16, "api.example.com", 15),
	    "match: trailing dot on the SNI");
	ok(eg_sni_match("api.example.com", 15, "api.example.com.", 16),
	    "match: trailing dot on the host");
	ok(eg_sni_match("Api.Example.Com.", 16, "api.example.com.", 16),
	    "match: both dots and case");
	ok(!eg_sni_match("api.example.com..", 17, "api.example.com", 15),
	    "no match: two trailing dots");
	ok(!eg_sni_match("evil.example.com", 16, "api.example.com", 15),
	    "no match: other name");
	ok(!eg_sni_match("api.example.co", 14, "api.example.com", 15),
	    "no match: prefix");
	ok(!eg_sni_match("xapi.example.com", 16, "api.example.com", 15),
	    "no match: suffix");
	ok(!eg_sni_match("", 0, "", 0), "no match: empty");
	ok(!eg_sni_match(".", 1, "", 0), "no match: lone dot");
	ok(eg_sni_match("api.example.comXYZ", 15, "api.example.comABC", 15),
	    "match: explicit lengths, no NUL needed");
	ok(!eg_sni_match("api\0example", 11, "api", 3),
	    "no match: embedded NUL");
}

/* Once not AGAIN, more bytes (here: any garbage) change nothing. */
static void
test_stable(void)
{
	static uint8_t buf[BIG];
	char name[EG_SNI_NAME_MAX + 1];
	size_t n, nl, i, bad;
	enum eg_sni r, r2;

	n = readfile("curl-sni.bin", buf, sizeof(buf));
	bad = 0;
	for (i = 0; i < 64; i++) {
		buf[n + i] = (uint8_t)(i * 37);
		r = eg_sni_parse(buf, n, name, sizeof(name), &nl);
		r2 = eg_sni_parse(buf, n + i + 1, name, sizeof(name), &nl);
		if (r != r2 || strcmp(name, "curl.example.com") != 0)
			bad++;
	}
	is_int(bad, 0, "result stable under appended bytes");
}

int
main(void)
{
	test_captured();
	test_splits();
	test_bounds();
	test_malformed();
	test_names();
	test_not_tls();
	test_match();
	test_stable();
	return done_testing();
}
