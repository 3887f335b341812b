/*
 * buf.h: the one bounded byte buffer of the library (audit lines, the
 * ring's JSON, metrics text, admin JSON, rewritten heads, the tunnel's
 * pending bytes).  Every buffer has a cap that no append passes.
 *
 * Two kinds, one type:
 *
 *   eg_buf_init()       over caller storage of a fixed size; never
 *                       allocates, never grows, eg_buf_clear() frees
 *                       nothing (the storage is the caller's).
 *   eg_buf_init_heap()  starts empty and grows with eg_realloc() up to a
 *                       mandatory max (curl dynbuf's "toobig");
 *                       eg_buf_clear() frees it.
 *
 * THE OVERFLOW RULE, for every append operation: an append that does not
 * fit whole (past max, or the buffer cannot grow: out of memory) appends
 * nothing, sets a sticky error (EG_BUF_FULL or EG_BUF_NOMEM) and returns
 * -1; once the error is set every later append also does nothing and
 * returns -1.  So a buffer holds the bytes of the appends that succeeded,
 * in order, with no gap: a caller may append piece by piece and check
 * eg_buf_failed() once at the end.  The buffer never truncates a piece
 * and never writes a NUL terminator.  A caller that wants a cut value
 * rather than none (the audit line: "values are truncated") appends at
 * most eg_buf_room() bytes of it, by its own decision.
 *
 * Reading side: the bytes are eg_buf_data()/eg_buf_len(); eg_buf_consume()
 * drops bytes from the front (a partial send), and when everything is
 * consumed the buffer is empty again and appends start at the storage's
 * beginning.  Appends never move unconsumed bytes.  A read(2) may fill
 * the free storage directly (eg_buf_tail/space/commit).
 *
 * Not thread-safe: one owner at a time.
 */
#ifndef EG_BUF_H
#define EG_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum eg_buf_err {
	EG_BUF_OK = 0,
	EG_BUF_FULL,		/* an append would pass max */
	EG_BUF_NOMEM		/* a heap buffer could not grow */
};

struct eg_buf {
	char		*p;	/* storage; NULL for an empty heap buffer */
	size_t		 off;	/* consumed: data is p[off, len) */
	size_t		 len;	/* end of the data */
	size_t		 cap;	/* bytes of storage */
	size_t		 max;	/* len never passes it; fixed: == cap */
	unsigned char	 heap;	/* grows, and eg_buf_clear() frees p */
	unsigned char	 err;	/* enum eg_buf_err, sticky */
};

/* A heap buffer as an initialiser: eg_buf_init_heap() without a call. */
#define EG_BUF_HEAP(max)	{ NULL, 0, 0, 0, (max), 1, EG_BUF_OK }

/* Over caller storage of size bytes (may be 0). */
void	eg_buf_init(struct eg_buf *, void *storage, size_t size);
/* Empty, growing on demand up to max bytes. */
void	eg_buf_init_heap(struct eg_buf *, size_t max);
/* Free heap storage; the buffer is then an empty one of the same kind. */
void	eg_buf_clear(struct eg_buf *);
/* Empty again and the error cleared; the storage is kept. */
void	eg_buf_reset(struct eg_buf *);

/*
 * Make room for n more bytes at the end (a heap buffer grows to it); on
 * failure the error is set as for an append.  0 or -1.
 */
int	eg_buf_reserve(struct eg_buf *, size_t n);

int	eg_buf_add_slow(struct eg_buf *, const void *, size_t);

/* Append n bytes.  0, or -1 under the overflow rule. */
static inline int
eg_buf_add(struct eg_buf *b, const void *s, size_t n)
{
	if (b->err == EG_BUF_OK && n <= b->cap - b->len) {
		if (n != 0)
			memcpy(b->p + b->len, s, n);
		b->len += n;
		return 0;
	}
	return eg_buf_add_slow(b, s, n);
}

/* Append a NUL-terminated string (without the NUL). */
static inline int
eg_buf_str(struct eg_buf *b, const char *s)
{
	return eg_buf_add(b, s, strlen(s));
}

/* Append v in decimal. */
int	eg_buf_u64(struct eg_buf *, uint64_t v);
/* v in decimal at the end of d, no NUL: its length, and *start where it
 * begins (for a writer with its own rule when the room runs out). */
#define EG_U64_DIGITS	20
size_t	eg_u64_text(char d[EG_U64_DIGITS], uint64_t v, const char **start);
/* Append printf output; a result that does not fit whole is not kept. */
int	eg_buf_printf(struct eg_buf *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/*
 * Append n bytes of s as a quoted JSON string (RFC 8259): '"' and '\'
 * are backslashed, bytes outside 0x20..0x7e become \u00XX, so the output
 * is ASCII whatever the input.  The string is one append: all or nothing.
 */
int	eg_buf_json(struct eg_buf *, const char *s, size_t n);
/* The same for a NUL-terminated string; NULL gives "". */
int	eg_buf_json_str(struct eg_buf *, const char *s);
/*
 * One byte of a JSON string, escaped as eg_buf_json() does: writes 1, 2
 * or 6 bytes to out and returns how many.
 */
size_t	eg_json_escape(unsigned char ch, char out[6]);

/* Drop n (<= eg_buf_len()) bytes from the front. */
void	eg_buf_consume(struct eg_buf *, size_t n);

/*
 * For a read(2)/recv(2) straight into the buffer: eg_buf_space() bytes of
 * storage already there (no growth; 0 once failed) start at
 * eg_buf_tail(); eg_buf_commit() then adds the n (<= space) written.
 */
static inline char *
eg_buf_tail(const struct eg_buf *b)
{
	return b->p != NULL ? b->p + b->len : NULL;
}

static inline size_t
eg_buf_space(const struct eg_buf *b)
{
	return b->err != EG_BUF_OK ? 0 : b->cap - b->len;
}

static inline void
eg_buf_commit(struct eg_buf *b, size_t n)
{
	b->len += n <= eg_buf_space(b) ? n : eg_buf_space(b);
}

static inline char *
eg_buf_data(const struct eg_buf *b)
{
	return b->p != NULL ? b->p + b->off : NULL;
}

/* Unconsumed bytes. */
static inline size_t
eg_buf_len(const struct eg_buf *b)
{
	return b->len - b->off;
}

/* Bytes an append may still add (0 once failed). */
static inline size_t
eg_buf_room(const struct eg_buf *b)
{
	return b->err != EG_BUF_OK ? 0 : b->max - b->len;
}

/* The sticky error: EG_BUF_OK (0) if every append so far fitted. */
static inline int
eg_buf_failed(const struct eg_buf *b)
{
	return b->err;
}

#endif
