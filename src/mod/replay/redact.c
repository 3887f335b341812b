/*
 * redact.c: streaming replacement of secret values by "[REDACTED]".
 *
 * At a position, the secrets are tried longest first (sorted once), so
 * the first that matches is the longest; a byte no secret starts with is
 * copied at once (a 256-entry table).  A position is decided only when
 * max_len bytes follow it (or at the end of the input), which is what
 * makes the result independent of how the input is split.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "../common/fsutil.h"
#include "redact.h"

struct rp_val {
	unsigned char	*v;
	size_t		 len;
};

struct rp_redactor {
	struct rp_val	*val;		/* longest first, distinct */
	size_t		 n;
	size_t		 maxlen;
	unsigned char	 first[256];	/* a value starts with this byte */
};

static int
cmp_len_desc(const void *a, const void *b)
{
	const struct rp_val *x = a, *y = b;
	int c;

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	c = memcmp(x->v, y->v, x->len);
	return c;
}

struct rp_redactor *
rp_redactor_new(const struct rp_secret *s, size_t n)
{
	struct rp_redactor *r;
	size_t i, k;

	if ((r = eg_calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if (n > 0 && (r->val = eg_calloc(n, sizeof(*r->val))) == NULL) {
		eg_free(r);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (s[i].val == NULL || s[i].len < RP_REDACT_MIN)
			continue;
		if ((r->val[r->n].v = eg_malloc(s[i].len)) == NULL) {
			rp_redactor_free(r);
			errno = ENOMEM;
			return NULL;
		}
		memcpy(r->val[r->n].v, s[i].val, s[i].len);
		r->val[r->n].len = s[i].len;
		r->n++;
	}
	if (r->n > 1)
		qsort(r->val, r->n, sizeof(*r->val), cmp_len_desc);
	/* drop duplicates (adjacent once sorted) */
	for (i = k = 0; i < r->n; i++) {
		if (k > 0 && r->val[k - 1].len == r->val[i].len &&
		    memcmp(r->val[k - 1].v, r->val[i].v, r->val[i].len) == 0) {
			eg_free(r->val[i].v);
			continue;
		}
		r->val[k++] = r->val[i];
	}
	r->n = k;
	for (i = 0; i < r->n; i++) {
		r->first[r->val[i].v[0]] = 1;
		if (r->val[i].len > r->maxlen)
			r->maxlen = r->val[i].len;
	}
	return r;
}

void
rp_redactor_free(struct rp_redactor *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n; i++)
		eg_free(r->val[i].v);
	eg_free(r->val);
	eg_free(r);
}

size_t
rp_redactor_maxlen(const struct rp_redactor *r)
{
	return r->maxlen;
}

int
rp_rstream_init(struct rp_rstream *st, struct rp_redactor *r,
    rp_emit_fn emit, void *arg)
{
	memset(st, 0, sizeof(*st));
	st->r = r;
	st->emit = emit;
	st->arg = arg;
	st->cap = (r->maxlen > 0 ? r->maxlen - 1 : 0) + RP_REDACT_CHUNK;
	if ((st->buf = eg_malloc(st->cap)) == NULL)
		return -1;
	return 0;
}

void
rp_rstream_free(struct rp_rstream *st)
{
	eg_free(st->buf);
	st->buf = NULL;
	st->len = st->cap = 0;
}

/* The length of the longest value at p (avail bytes there), else 0. */
static size_t
match_at(const struct rp_redactor *r, const unsigned char *p, size_t avail)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->val[i].len <= avail &&
		    memcmp(p, r->val[i].v, r->val[i].len) == 0)
			return r->val[i].len;
	return 0;
}

/*
 * Decide the positions of buf that have max_len bytes after them (all of
 * them when eof), emit them, keep the rest at the front.
 */
static int
process(struct rp_rstream *st, int eof)
{
	const struct rp_redactor *r = st->r;
	const unsigned char *b = st->buf;
	size_t i = 0, run = 0, m, end;

	if (r->maxlen == 0)
		end = st->len;
	else if (eof)
		end = st->len;
	else
		end = st->len >= r->maxlen ? st->len - r->maxlen + 1 : 0;
	while (i < end) {
		if (!r->first[b[i]] ||
		    (m = match_at(r, b + i, st->len - i)) == 0) {
			i++;
			continue;
		}
		if (i > run && st->emit(st->arg, b + run, i - run) < 0)
			return -1;
		if (st->emit(st->arg, RP_REDACTED, sizeof(RP_REDACTED) - 1) < 0)
			return -1;
		st->hits++;
		i += m;
		run = i;
	}
	/* a match may have run past end: i is where undecided bytes start */
	if (i > run && st->emit(st->arg, b + run, i - run) < 0)
		return -1;
	memmove(st->buf, st->buf + i, st->len - i);
	st->len -= i;
	return 0;
}

int
rp_rstream_feed(struct rp_rstream *st, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t room, k;

	while (len > 0) {
		room = st->cap - st->len;
		k = len < room ? len : room;
		memcpy(st->buf + st->len, p, k);
		st->len += k;
		p += k;
		len -= k;
		if (process(st, 0) < 0)
			return -1;
	}
	return 0;
}

int
rp_rstream_finish(struct rp_rstream *st)
{
	return process(st, 1);
}

/* Output to an fd through a buffer, with a cap. */
struct fdout {
	int		 fd;
	uint64_t	 max, done;
	int		 capped;
	size_t		 len;
	unsigned char	 buf[RP_REDACT_CHUNK];
};

static int
fdout_flush(struct fdout *o)
{
	if (o->len > 0 && mc_write_all(o->fd, o->buf, o->len) < 0)
		return -1;
	o->len = 0;
	return 0;
}

static int
fdout_emit(void *arg, const void *buf, size_t len)
{
	struct fdout *o = arg;
	const unsigned char *p = buf;
	size_t k;

	if (o->max > 0 && o->done + len > o->max) {
		len = (size_t)(o->max - o->done);
		o->capped = 1;
	}
	o->done += len;
	while (len > 0) {
		if (o->len == sizeof(o->buf) && fdout_flush(o) < 0)
			return -1;
		k = sizeof(o->buf) - o->len;
		if (k > len)
			k = len;
		memcpy(o->buf + o->len, p, k);
		o->len += k;
		p += k;
		len -= k;
	}
	if (o->capped) {
		errno = 0;
		return -1;	/* stop reading: the rest is cut */
	}
	return 0;
}

int
rp_redact_fd_max(struct rp_redactor *r, int in, int out, uint64_t max,
    uint64_t *hits, int *truncated)
{
	struct rp_rstream st;
	struct fdout *o;
	unsigned char *rb;
	ssize_t n;
	int rc = -1, e = 0;

	if (truncated != NULL)
		*truncated = 0;
	if ((o = eg_calloc(1, sizeof(*o))) == NULL)
		return -1;
	if ((rb = eg_malloc(RP_REDACT_CHUNK)) == NULL) {
		eg_free(o);
		return -1;
	}
	o->fd = out;
	o->max = max;
	if (rp_rstream_init(&st, r, fdout_emit, o) < 0) {
		eg_free(rb);
		eg_free(o);
		return -1;
	}
	for (;;) {
		n = read(in, rb, RP_REDACT_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			goto out;
		}
		if (n == 0)
			break;
		if (rp_rstream_feed(&st, rb, (size_t)n) < 0)
			goto stopped;
	}
	if (rp_rstream_finish(&st) < 0)
		goto stopped;
	if (fdout_flush(o) < 0) {
		e = errno;
		goto out;
	}
	rc = 0;
	goto out;
stopped:
	e = errno;
	if (o->capped) {
		if (fdout_flush(o) < 0) {
			e = errno;
			goto out;
		}
		if (truncated != NULL)
			*truncated = 1;
		rc = 0;
	}
out:
	if (hits != NULL)
		*hits = st.hits;
	rp_rstream_free(&st);
	eg_free(rb);
	eg_free(o);
	errno = e;
	return rc;
}

int
rp_redact_fd(struct rp_redactor *r, int in, int out, uint64_t *hits)
{
	return rp_redact_fd_max(r, in, out, 0, hits, NULL);
}

/* rp_redact_mem's output: an eg_buf (buf.h's overflow rule). */
static int
memout_emit(void *arg, const void *buf, size_t len)
{
	if (eg_buf_add(arg, buf, len) == -1) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

char *
rp_redact_mem(const struct rp_secret *s, size_t n, const char *in,
    size_t len, size_t *outlen, uint64_t *hits)
{
	struct rp_redactor *r;
	struct rp_rstream st;
	/* a value replaced is RP_REDACT_MIN bytes or more, its marker
	 * sizeof(RP_REDACTED) - 1: the output never passes this (and its
	 * NUL) */
	struct eg_buf m = EG_BUF_HEAP(len + len / RP_REDACT_MIN *
	    (sizeof(RP_REDACTED) - 1 - RP_REDACT_MIN) + 1);
	int rc = -1;

	if ((r = rp_redactor_new(s, n)) == NULL)
		return NULL;
	if (rp_rstream_init(&st, r, memout_emit, &m) == 0) {
		if (rp_rstream_feed(&st, in, len) == 0 &&
		    rp_rstream_finish(&st) == 0 && memout_emit(&m, "", 1) == 0)
			rc = 0;
		if (hits != NULL)
			*hits = st.hits;
		rp_rstream_free(&st);
	}
	rp_redactor_free(r);
	if (rc == -1) {
		eg_buf_clear(&m);
		errno = ENOMEM;
		return NULL;
	}
	*outlen = eg_buf_len(&m) - 1;
	return eg_buf_data(&m);
}
