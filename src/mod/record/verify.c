/*
 * verify.c: "egressd audit verify [--pubkey PUB] LOG..." and
 * rec_verify_files() (verify.h).  Each file is read in blocks, line by
 * line, in constant memory (a line longer than REC_LINE_MAX is a break,
 * never a bigger buffer).  For every line the chain value is recomputed
 * from the previous line's (SPEC "### record"); the first line of every
 * file must be START, whose prev= must be the previous file's last chain
 * value; every CHECKPOINT must name the line before it, the file's line
 * count and the next seq, and (with a public key) verify.
 *
 * The first break of a file is located with one line of look-ahead:
 * with the lines' own chain values, an inserted line (the next line
 * links to the one before it), two swapped lines, and an edited line
 * (the next line links to it, so its own bytes changed; a deleted line
 * looks the same from the line after the gap) are told apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "../common/fsutil.h"
#include "verify.h"

#define REC_BLOCK	(1u << 20)	/* read(2) size */

static const char zeros[REC_HEX_LEN + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/* One line, parsed just enough. */
struct vl {
	const char	*p;
	size_t		 n;		/* without the newline */
	int		 json;
	const char	*h;		/* its chain value (64 hex), or NULL */
	size_t		 body;		/* bytes the chain value covers */
	int		 start, ck;	/* START, CHECKPOINT */
};

struct vfile {
	const char	*path;
	struct eg_key	*pk;		/* NULL: signatures not checked */
	int		*sig_ok_seen;	/* a checkpoint verified (any file) */
	const char	*cont;		/* previous file's last chain, or NULL */
	uint64_t	 lineno;
	char		 h1[REC_HEX_LEN + 1];	/* claimed chain of line-1 */
	char		 h2[REC_HEX_LEN + 1];	/* ... of line-2 */
	int		 have1, have2;
	/* the current START's segment */
	char		 run[37];
	int		 in_seg;
	uint64_t	 seg_lines, seq, since, nck;
	int		 broken;
	char		 where[512];
	/* a line that did not link, waiting for the next one */
	int		 pending;
	char		*pbuf;		/* REC_LINE_MAX */
	struct vl	 pl;
	char		 ph1[REC_HEX_LEN + 1], ph2[REC_HEX_LEN + 1];
	int		 phave1, phave2;
	char		 first_run[37];
};

/* The event name: text "TS EVENT ...", JSON {"ts":"...","event":"EVENT" */
static int
is_event(const struct vl *l, const char *ev)
{
	size_t n = strlen(ev);
	const char *p, *e = l->p + l->body;

	if (l->json) {
		p = memchr(l->p, ',', l->body);
		if (p == NULL || (size_t)(e - p) < 10 + n ||
		    memcmp(p, ",\"event\":\"", 10) != 0)
			return 0;
		p += 10;
		return memcmp(p, ev, n) == 0 && p[n] == '"';
	}
	p = memchr(l->p, ' ', l->body);
	if (p == NULL || (size_t)(e - p) < n + 2)
		return 0;
	return memcmp(p + 1, ev, n) == 0 && p[n + 1] == ' ';
}

static void
parse(struct vl *l, const char *p, size_t n)
{
	int json;

	memset(l, 0, sizeof(*l));
	l->p = p;
	l->n = n;
	l->json = n > 0 && p[0] == '{';
	/* a chain field of the other form is none */
	if ((l->h = rec_line_chain(p, n, &l->body, &json)) == NULL ||
	    json != l->json) {
		l->h = NULL;
		l->body = n;
		return;
	}
	l->start = is_event(l, "START");
	l->ck = !l->start && is_event(l, "CHECKPOINT");
}

/* The value of key in l's body (text key=V, JSON "key":V or "key":"V"). */
static const char *
field(const struct vl *l, const char *key, size_t *len)
{
	char pat[40];
	size_t kn = strlen(key), pn, i;
	const char *p = l->p, *e = l->p + l->body, *v;

	if (l->json)
		pn = (size_t)snprintf(pat, sizeof(pat), "\"%s\":", key);
	else
		pn = (size_t)snprintf(pat, sizeof(pat), " %s=", key);
	(void)kn;
	for (; (size_t)(e - p) >= pn; p++) {
		if (memcmp(p, pat, pn) != 0)
			continue;
		v = p + pn;
		if (l->json && v < e && *v == '"') {
			v++;
			for (i = 0; v + i < e && v[i] != '"'; i++)
				;
		} else
			for (i = 0; v + i < e && v[i] != (l->json ? ',' : ' ')
			    && v[i] != '}'; i++)
				;
		*len = i;
		return v;
	}
	return NULL;
}

static int
field_u64(const struct vl *l, const char *key, uint64_t *out)
{
	const char *v;
	size_t n, i;
	uint64_t x = 0;

	if ((v = field(l, key, &n)) == NULL || n == 0 || n > 19)
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Does l link to prev (START: to 64 zeros)? */
static int
links(const char *prev, const struct vl *l)
{
	char h[REC_HEX_LEN + 1];

	if (l->h == NULL || (prev == NULL && !l->start))
		return 0;
	rec_chain_hash(l->start ? zeros : prev, l->p, l->body, h);
	return memcmp(h, l->h, REC_HEX_LEN) == 0;
}

static void
vbreak(struct vfile *f, uint64_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
vbreak(struct vfile *f, uint64_t line, const char *fmt, ...)
{
	char why[400];
	va_list ap;

	if (f->broken)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(f->where, sizeof(f->where), "%s:%llu: %s", f->path,
	    (unsigned long long)line, why);
	f->broken = 1;
}

/* Decide what the pending line was, next being the line after it. */
static void
classify(struct vfile *f, const struct vl *next)
{
	const struct vl *c = &f->pl;
	char hc[REC_HEX_LEN + 1], hn[REC_HEX_LEN + 1];
	const char *p1 = f->phave1 ? f->ph1 : NULL;
	uint64_t i = f->lineno - (next != NULL ? 1 : 0);

	f->pending = 0;
	if (c->h != NULL) {
		memcpy(hc, c->h, REC_HEX_LEN);
		hc[REC_HEX_LEN] = '\0';
	}
	if (next != NULL && next->h != NULL) {
		memcpy(hn, next->h, REC_HEX_LEN);
		hn[REC_HEX_LEN] = '\0';
	}
	if (next != NULL && links(p1, next) && c->h != NULL &&
	    links(hn, c))
		vbreak(f, i, "reordered: this line and the next are swapped");
	else if (next != NULL && links(p1, next))
		vbreak(f, i, "inserted line (the next line follows the one "
		    "before it)");
	else if (f->phave2 && c->h != NULL && links(f->ph2, c))
		vbreak(f, i - 1, "inserted line (the line after it follows the "
		    "one before it)");
	else if (c->h == NULL)
		vbreak(f, i, "no chain value (a line cut, edited or inserted)");
	else if (next != NULL && links(hc, next))
		vbreak(f, i, "edited line, or a line deleted before it (its "
		    "chain value does not match its bytes and the line "
		    "before)");
	else
		vbreak(f, i, "chain broken (a line edited, inserted, deleted "
		    "or reordered)");
}

/* A checkpoint that links: its fields and its signature. */
static void
check_ck(struct vfile *f, const struct vl *l)
{
	uint64_t seq, lines;
	const char *head, *sig;
	size_t hl, sl, dl = 0, ml;
	unsigned char der[REC_SIG_MAX + 8], hash[32];
	char msg[256];

	if (field_u64(l, "seq", &seq) == -1 ||
	    field_u64(l, "lines", &lines) == -1 ||
	    (head = field(l, "head", &hl)) == NULL || hl != REC_HEX_LEN ||
	    (sig = field(l, "sig", &sl)) == NULL) {
		vbreak(f, f->lineno, "malformed CHECKPOINT");
		return;
	}
	if (!f->have1 || memcmp(head, f->h1, REC_HEX_LEN) != 0) {
		vbreak(f, f->lineno, "CHECKPOINT head= is not the chain value "
		    "of the line before it");
		return;
	}
	if (lines != f->seg_lines) {
		vbreak(f, f->lineno, "CHECKPOINT lines=%llu, but %llu lines "
		    "precede it", (unsigned long long)lines,
		    (unsigned long long)f->seg_lines);
		return;
	}
	if (seq != f->seq + 1) {
		vbreak(f, f->lineno, "CHECKPOINT seq=%llu, expected %llu",
		    (unsigned long long)seq, (unsigned long long)f->seq + 1);
		return;
	}
	f->seq = seq;
	f->nck++;
	f->since = 0;
	if (f->pk == NULL)
		return;
	ml = rec_ck_message(msg, sizeof(msg), f->run, strlen(f->run), seq,
	    lines, f->h1);
	if (ml == 0 || sl > REC_B64_MAX ||
	    eg_b64_decode(sig, sl, der, sizeof(der), &dl) != 0 ||
	    (eg_sha256(msg, ml, hash), eg_key_verify(f->pk, hash, der,
	    dl) != 0)) {
		if (*f->sig_ok_seen)
			vbreak(f, f->lineno, "bad signature");
		else
			vbreak(f, f->lineno, "wrong key: the CHECKPOINT "
			    "signature does not verify with this public key "
			    "(or it is bad)");
		return;
	}
	*f->sig_ok_seen = 1;
}

/* One whole line (n bytes, no newline) of the file. */
static void
feed(struct vfile *f, const char *p, size_t n)
{
	struct vl l;
	const char *prev;
	size_t rl;
	const char *rv;

	f->lineno++;
	parse(&l, p, n);
	if (f->broken)
		goto track;
	if (f->pending) {
		classify(f, &l);
		goto track;
	}
	if (f->lineno == 1 && !l.start) {
		vbreak(f, 1, "START missing (the first line of a file must be "
		    "START)");
		goto track;
	}
	prev = f->have1 ? f->h1 : NULL;
	if (!links(prev, &l)) {
		/* decided with the next line */
		memcpy(f->pbuf, p, n);
		parse(&f->pl, f->pbuf, n);
		memcpy(f->ph1, f->h1, sizeof(f->h1));
		memcpy(f->ph2, f->h2, sizeof(f->h2));
		f->phave1 = f->have1;
		f->phave2 = f->have2;
		f->pending = 1;
		goto track;
	}
	if (l.start) {
		if ((rv = field(&l, "prev", &rl)) == NULL) {
			vbreak(f, f->lineno, "malformed START");
			goto track;
		}
		if (f->lineno == 1 && f->cont != NULL &&
		    (rl != REC_HEX_LEN || memcmp(rv, f->cont, REC_HEX_LEN))) {
			vbreak(f, 1, "START prev= does not continue the previous "
			    "file (a file missing, or out of order)");
			goto track;
		}
		if (f->lineno > 1 && (rl != REC_HEX_LEN ||
		    memcmp(rv, f->h1, REC_HEX_LEN) != 0)) {
			vbreak(f, f->lineno, "START does not continue the line "
			    "before it");
			goto track;
		}
		if ((rv = field(&l, "run", &rl)) == NULL || rl > 36) {
			vbreak(f, f->lineno, "malformed START");
			goto track;
		}
		memcpy(f->run, rv, rl);
		f->run[rl] = '\0';
		if (f->first_run[0] == '\0')
			memcpy(f->first_run, f->run, sizeof(f->run));
		f->in_seg = 1;
		f->seg_lines = f->seq = f->since = 0;
	} else if (l.ck)
		check_ck(f, &l);
	if (!l.ck)
		f->since++;
	f->seg_lines++;
track:
	memcpy(f->h2, f->h1, sizeof(f->h1));
	f->have2 = f->have1;
	if (l.h != NULL) {
		memcpy(f->h1, l.h, REC_HEX_LEN);
		f->h1[REC_HEX_LEN] = '\0';
		f->have1 = 1;
	} else
		f->have1 = 0;
}

/* The end of a file; cut: its last line had no newline. */
static void
finish(struct vfile *f, int cut, int toolong)
{
	if (f->pending)
		classify(f, NULL);
	if (f->lineno == 0)
		vbreak(f, 1, "START missing (empty file)");
	if (cut)
		vbreak(f, f->lineno, "truncated line (no newline at the end)");
	(void)toolong;
}

/* Read fd line by line into f. */
static int
run_fd(struct vfile *f, int fd, char *blk, char *lbuf)
{
	size_t ln = 0, off, k;
	ssize_t r;
	const char *nl;
	int toolong = 0;

	for (;;) {
		if ((r = mc_read(fd, blk, REC_BLOCK)) == -1)
			return -1;
		if (r == 0)
			break;
		for (off = 0; off < (size_t)r; off = k + 1) {
			nl = memchr(blk + off, '\n', (size_t)r - off);
			k = nl != NULL ? (size_t)(nl - blk) : (size_t)r;
			if (ln == 0 && !toolong && nl != NULL) {
				/* the common case: the whole line in blk */
				feed(f, blk + off, k - off);
				continue;
			}
			if (!toolong && ln + (k - off) <= REC_LINE_MAX) {
				memcpy(lbuf + ln, blk + off, k - off);
				ln += k - off;
			} else if (!toolong) {
				toolong = 1;
				vbreak(f, f->lineno + 1, "line longer than %u "
				    "bytes", REC_LINE_MAX);
			}
			if (nl == NULL)
				break;
			if (toolong) {
				f->lineno++;
				f->have1 = f->have2 = 0;
				f->pending = 0;
			} else
				feed(f, lbuf, ln);
			ln = 0;
			toolong = 0;
		}
	}
	if (ln > 0 || toolong) {
		if (!toolong) {
			/* a last line without its newline: still parsed,
			 * so a break before it is found first */
			feed(f, lbuf, ln);
		}
		finish(f, 1, toolong);
	} else
		finish(f, 0, 0);
	return 0;
}

static int
verify(const char *const *paths, const int *fds, size_t n, const char *buf,
    size_t blen, const char *pubkey, struct rec_result *r,
    void (*cb)(const struct rec_file_report *, void *), void *arg,
    char *err, size_t errlen)
{
	struct eg_key *pk = NULL;
	struct vfile f;
	struct rec_file_report rep;
	char *blk = NULL, *lbuf = NULL, *pbuf = NULL, last[REC_HEX_LEN + 1];
	int have_last = 0, sig_ok = 0, fd, rc = -1;
	size_t i, off, k;
	const char *nl;

	memset(r, 0, sizeof(*r));
	if (pubkey != NULL &&
	    (pk = eg_key_load(pubkey, 0, err, errlen)) == NULL)
		return -1;
	if ((blk = eg_malloc(buf == NULL ? REC_BLOCK : 1)) == NULL ||
	    (lbuf = eg_malloc(REC_LINE_MAX)) == NULL ||
	    (pbuf = eg_malloc(REC_LINE_MAX)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < (buf != NULL ? 1 : n); i++) {
		memset(&f, 0, sizeof(f));
		f.path = buf != NULL ? "(buffer)" : paths[i];
		f.pk = pk;
		f.sig_ok_seen = &sig_ok;
		f.cont = have_last ? last : NULL;
		f.pbuf = pbuf;
		if (buf != NULL) {
			for (off = 0; off < blen; off = k + 1) {
				nl = memchr(buf + off, '\n', blen - off);
				k = nl != NULL ? (size_t)(nl - buf) : blen;
				if (k - off > REC_LINE_MAX) {
					vbreak(&f, f.lineno + 1, "line too long");
					f.lineno++;
					f.have1 = f.have2 = 0;
					f.pending = 0;
				} else
					feed(&f, buf + off, k - off);
				if (nl == NULL)
					break;
			}
			finish(&f, blen > 0 && buf[blen - 1] != '\n', 0);
		} else {
			if (fds != NULL)
				fd = fds[i];
			else if ((fd = open(paths[i], O_RDONLY | O_CLOEXEC)) ==
			    -1) {
				snprintf(err, errlen, "%s: %s", paths[i],
				    strerror(errno));
				goto out;
			}
			if (run_fd(&f, fd, blk, lbuf) == -1) {
				snprintf(err, errlen, "%s: %s", paths[i],
				    strerror(errno));
				if (fds == NULL)
					close(fd);
				goto out;
			}
			if (fds == NULL)
				close(fd);
		}
		/* with a key, a file without a checkpoint is not signed at
		 * all: checkpoints removed and the chain recomputed look so */
		if (pubkey != NULL && f.nck == 0)
			vbreak(&f, f.lineno > 0 ? f.lineno : 1, "no CHECKPOINT "
			    "line: with --pubkey every file must carry a "
			    "verified checkpoint (a log written without "
			    "audit_key, or its checkpoints removed)");
		if (f.broken && !r->broken) {
			r->broken = 1;
			memcpy(r->where, f.where, sizeof(r->where));
		}
		if (r->run[0] == '\0')
			memcpy(r->run, f.first_run, sizeof(r->run));
		r->lines = f.lineno;
		r->checkpoints = f.nck;
		r->unsigned_tail = f.since;
		if (f.have1) {
			memcpy(last, f.h1, sizeof(last));
			memcpy(r->head, f.h1, sizeof(r->head));
			have_last = 1;
		} else {
			have_last = 0;
			r->head[0] = '\0';
		}
		if (cb != NULL) {
			rep.path = f.path;
			rep.lines = f.lineno;
			rep.checkpoints = f.nck;
			rep.unsigned_tail = f.since;
			rep.where = f.broken ? f.where : "";
			cb(&rep, arg);
		}
	}
	rc = 0;
out:
	eg_free(blk);
	eg_free(lbuf);
	eg_free(pbuf);
	eg_key_free(pk);
	return rc;
}

int
rec_verify_files(const char *const *paths, size_t n, const char *pubkey,
    struct rec_result *r, char *err, size_t errlen)
{
	return verify(paths, NULL, n, NULL, 0, pubkey, r, NULL, NULL, err,
	    errlen);
}

int
rec_verify_fds(const int *fds, const char *const *names, size_t n,
    const char *pubkey, struct rec_result *r, char *err, size_t errlen)
{
	return verify(names, fds, n, NULL, 0, pubkey, r, NULL, NULL, err,
	    errlen);
}

int
rec_verify_files_cb(const char *const *paths, size_t n, const char *pubkey,
    struct rec_result *r, void (*cb)(const struct rec_file_report *, void *),
    void *arg, char *err, size_t errlen)
{
	return verify(paths, NULL, n, NULL, 0, pubkey, r, cb, arg, err,
	    errlen);
}

int
rec_verify_buf(const char *buf, size_t len, struct rec_result *r)
{
	char err[256];

	return verify(NULL, NULL, 1, buf, len, NULL, r, NULL, NULL, err,
	    sizeof(err));
}

/* --- the command --------------------------------------------------------- */

struct cli {
	int	signed_;	/* --pubkey given */
};

static void
report(const struct rec_file_report *rep, void *arg)
{
	struct cli *c = arg;

	if (rep->where[0] != '\0')
		printf("%s\n", rep->where);
	else
		printf("%s: intact: %llu lines, %llu checkpoints%s\n",
		    rep->path, (unsigned long long)rep->lines,
		    (unsigned long long)rep->checkpoints,
		    rep->checkpoints == 0 ? "" : c->signed_ ?
		    " (signatures verified)" : " (signatures not checked: "
		    "no --pubkey)");
	fflush(stdout);
	if (rep->where[0] == '\0' && rep->unsigned_tail > 0 &&
	    (rep->checkpoints > 0 || c->signed_))
		fprintf(stderr, "egressd: audit verify: warning: %s: %llu "
		    "line%s after the last checkpoint %s not signed\n",
		    rep->path, (unsigned long long)rep->unsigned_tail,
		    rep->unsigned_tail == 1 ? "" : "s",
		    rep->unsigned_tail == 1 ? "is" : "are");
}

int
rec_verify_main(int argc, char *argv[])
{
	static const char usage[] =
	    "usage: egressd audit verify [--pubkey PUB] LOG...\n";
	const char *pub = NULL;
	struct rec_result r;
	struct cli c = { 0 };
	char err[512];
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "--pubkey") == 0 && i + 1 < argc)
			pub = argv[++i];
		else if (strncmp(argv[i], "--pubkey=", 9) == 0)
			pub = argv[i] + 9;
		else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "egressd: audit verify: bad option "
			    "'%.80s'\n%s", argv[i], usage);
			return 2;
		}
	}
	if (i >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	c.signed_ = pub != NULL;
	if (rec_verify_files_cb((const char *const *)argv + i,
	    (size_t)(argc - i), pub, &r, report, &c, err, sizeof(err)) == -1) {
		fprintf(stderr, "egressd: audit verify: %s\n", err);
		return 2;
	}
	return r.broken ? 1 : 0;
}
