/*
 * alloc.h: the library's allocation wrapper.  Every allocation of the
 * connection engine and the loop goes through it, so that a test can make
 * the N-th one fail (EGRESS_FAIL_ALLOC=N, read once; only that call
 * fails) and check that out of memory never leaves a half state.
 */
#ifndef EG_ALLOC_H
#define EG_ALLOC_H

#include <stddef.h>

void	*eg_malloc(size_t);
void	*eg_calloc(size_t, size_t);
void	*eg_realloc(void *, size_t);
void	 eg_free(void *);

/*
 * For tests: fail the n-th allocation counted from this call (0: none),
 * overriding EGRESS_FAIL_ALLOC.
 */
void	 eg_alloc_fail_at(unsigned long n);
/*
 * Allocations counted so far (0 unless failure injection is on) and the
 * one set to fail (0: none).  Returns whether injection is on.
 */
int	 eg_alloc_stats(unsigned long *count, unsigned long *fail_at);

#endif
