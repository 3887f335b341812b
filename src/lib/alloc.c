/*
 * alloc.c: malloc and friends with failure injection for tests.  With
 * EGRESS_FAIL_ALLOC=N in the environment (read on the first call), the
 * N-th call of eg_malloc/eg_calloc/eg_realloc (and so eg_reallocarray,
 * eg_strdup, eg_strndup) fails as if memory had run out; every other call
 * goes to the C library.  The counter is atomic, so
 * the N-th call is one call whichever thread makes it.  Without the
 * variable the only cost is one relaxed load per call.
 */
/* the bottom floor: no library header but its own (egress-int.h includes
 * this one), so that no include cycle runs through it */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static unsigned long	fail_at;	/* 0: no injection */
static unsigned long	ncalls;
static int		inited;		/* 0 no, 1 in progress, 2 done */

static void
alloc_init(void)
{
	const char *v;
	char *end;
	unsigned long n;
	int want = 0;

	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!__atomic_compare_exchange_n(&inited, &want, 1, 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&inited, __ATOMIC_ACQUIRE) != 2)
			;	/* another thread reads the variable */
		return;
	}
	v = getenv("EGRESS_FAIL_ALLOC");
	if (v != NULL && *v != '\0') {
		errno = 0;
		n = strtoul(v, &end, 10);
		if (errno == 0 && *end == '\0')
			__atomic_store_n(&fail_at, n, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&inited, 2, __ATOMIC_RELEASE);
}

/* Count this call; 1 when it is the one to fail. */
static int
alloc_fails(void)
{
	unsigned long at;

	alloc_init();
	at = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
	if (at == 0)
		return 0;
	if (__atomic_add_fetch(&ncalls, 1, __ATOMIC_RELAXED) != at)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *
eg_malloc(size_t n)
{
	return alloc_fails() ? NULL : malloc(n);
}

void *
eg_calloc(size_t n, size_t size)
{
	return alloc_fails() ? NULL : calloc(n, size);
}

void *
eg_realloc(void *p, size_t n)
{
	return alloc_fails() ? NULL : realloc(p, n);
}

void *
eg_reallocarray(void *p, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return eg_realloc(p, n * size);
}

void
eg_free(void *p)
{
	free(p);
}

char *
eg_strdup(const char *s)
{
	return eg_strndup(s, strlen(s));
}

char *
eg_strndup(const char *s, size_t n)
{
	char *d;

	n = strnlen(s, n);
	if ((d = eg_malloc(n + 1)) == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

int
eg_strv_has(char *const *v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

void
eg_strv_clear(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		eg_free(v[i]);
}

void
eg_strv_free(char **v, size_t n)
{
	if (v == NULL)
		return;
	eg_strv_clear(v, n);
	eg_free(v);
}

void *
eg_freelist_get(void **top, unsigned *n)
{
	void *b = *top;

	if (b != NULL) {
		*top = *(void **)b;
		(*n)--;
	}
	return b;
}

void
eg_freelist_put(void **top, unsigned *n, void *b, unsigned max)
{
	if (b == NULL)
		return;
	if (*n >= max) {
		eg_free(b);
		return;
	}
	*(void **)b = *top;
	*top = b;
	(*n)++;
}

void
eg_freelist_drain(void **top, unsigned *n)
{
	void *b;

	while ((b = eg_freelist_get(top, n)) != NULL)
		eg_free(b);
}

void
eg_alloc_fail_at(unsigned long n)
{
	alloc_init();
	__atomic_store_n(&ncalls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&fail_at, n, __ATOMIC_RELAXED);
}

int
eg_alloc_stats(unsigned long *count, unsigned long *at)
{
	alloc_init();
	*count = __atomic_load_n(&ncalls, __ATOMIC_RELAXED);
	*at = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
	return *at != 0;
}
