/*
 * redact.h: the streaming redactor behind rp_redact_fd() (capture.h),
 * also for in-memory use (the unit test, the fuzz target).
 *
 * Semantics, equal to a whole-buffer scan: from left to right, at each
 * position the longest secret value that starts there is replaced by
 * "[REDACTED]" and the scan resumes after it; else the byte is copied.
 * Streaming keeps at most max_len - 1 undecided bytes between reads, so
 * memory is bounded by the longest secret plus one read buffer.
 */
#ifndef RP_REDACT_H
#define RP_REDACT_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"

#define RP_REDACTED	"[REDACTED]"
#define RP_REDACT_MIN	8	/* shorter secret values are ignored */
#define RP_REDACT_CHUNK	65536	/* bytes per read(2) */

/* Where the redacted bytes go: 0 ok, -1 stop (errno set). */
typedef int (*rp_emit_fn)(void *arg, const void *buf, size_t len);

struct rp_rstream {
	struct rp_redactor	*r;
	unsigned char		*buf;	/* undecided bytes, then new ones */
	size_t			 len, cap;
	uint64_t		 hits;
	rp_emit_fn		 emit;
	void			*arg;
};

/* Longest secret value kept (0: none, the redactor copies). */
size_t	rp_redactor_maxlen(const struct rp_redactor *);
/* 0 or -1 (ENOMEM). */
int	rp_rstream_init(struct rp_rstream *, struct rp_redactor *,
	    rp_emit_fn emit, void *arg);
/* Feed bytes (any split); 0 or -1 with errno from emit. */
int	rp_rstream_feed(struct rp_rstream *, const void *buf, size_t len);
/* End of input: decide the remaining bytes. */
int	rp_rstream_finish(struct rp_rstream *);
void	rp_rstream_free(struct rp_rstream *);

/*
 * rp_redact_fd with a cap on the output: at most max bytes are written
 * (0: no cap) and *truncated (when not NULL) set to 1 when the redacted
 * stream was longer.  The cap applies after redaction, so a secret is
 * never cut in two.
 */
int	rp_redact_fd_max(struct rp_redactor *, int in, int out, uint64_t max,
	    uint64_t *hits, int *truncated);

/*
 * The len bytes at in with every value of s[0..n) (8 bytes or more)
 * replaced, in a new NUL-terminated buffer (eg_free it) of *outlen
 * bytes; *hits (may be NULL) the number of replacements.  NULL: ENOMEM.
 */
char	*rp_redact_mem(const struct rp_secret *s, size_t n, const char *in,
	    size_t len, size_t *outlen, uint64_t *hits);

#endif
