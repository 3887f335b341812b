/*
 * alloc.h: the library's allocation wrapper.  Every allocation of
 * src/lib and src/mod goes through it (tests/alloc-wrap.test checks the
 * objects and the sources), so that a test can make the N-th one fail
 * (EGRESS_FAIL_ALLOC=N, read once; only that call fails) and check that
 * out of memory never leaves a half state.  eg_free() is free(): memory
 * from the wrapper may be handed to an API that frees it with free(), and
 * the other way round.
 *
 * Third-party libraries allocate with their own allocator and are not
 * counted: c-ares (its ares_library_init_mem() would replace the
 * allocator of the whole process, including an embedding program's own
 * c-ares use; its out-of-memory paths are its test suite's business: a
 * failed ares call reaches us as an error status, which we handle),
 * libmicrohttpd (responses are created MHD_RESPMEM_MUST_COPY, so no
 * memory of ours is freed by it) and inih (parses with a buffer of its own,
 * calls back; we copy what we keep).
 */
#ifndef EG_ALLOC_H
#define EG_ALLOC_H

#include <stddef.h>

void	*eg_malloc(size_t);
void	*eg_calloc(size_t, size_t);
void	*eg_realloc(void *, size_t);
/* realloc of n * size bytes; NULL (ENOMEM) when that overflows. */
void	*eg_reallocarray(void *, size_t, size_t);
void	 eg_free(void *);
/* strdup/strndup through eg_malloc (one counted allocation each). */
char	*eg_strdup(const char *);
char	*eg_strndup(const char *, size_t);
/* Arrays of owned strings v[0..n): is s one of them (1, else 0); free
 * them (clear: v itself is the caller's) and v (v NULL: nothing). */
int	 eg_strv_has(char *const *v, size_t n, const char *s);
void	 eg_strv_clear(char **v, size_t n);
void	 eg_strv_free(char **v, size_t n);

/*
 * A free list of blocks of one kind kept for reuse (a worker's
 * connections, head buffers, tunnel buffers; loop thread only): *top the
 * first block, *n how many there are.  The first bytes of a block on the
 * list hold the link: a block goes on it only when nothing reads it any
 * more, and is set up again when taken.
 */
/* A block from the list, NULL when it is empty. */
void	*eg_freelist_get(void **top, unsigned *n);
/* Keep b (NULL: nothing), or free it when the list holds max already. */
void	 eg_freelist_put(void **top, unsigned *n, void *b, unsigned max);
/* Free every block on the list. */
void	 eg_freelist_drain(void **top, unsigned *n);

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
