/*
 * strv.h: a growable NULL-terminated vector of strings it owns (argv,
 * envp, path lists), for the sandbox and replay modules.  On allocation
 * failure the vector sets oom and ignores further additions: check the
 * return of an add, or oom once at the end.
 */
#ifndef MC_STRV_H
#define MC_STRV_H

#include <stddef.h>

struct mc_strv {
	char	**v;		/* v[n] == NULL when v != NULL */
	size_t	  n, cap;
	int	  oom;
};

/* Append a copy of s: 0, or -1 when out of memory (now or before). */
int	mc_strv_add(struct mc_strv *sv, const char *s);
/* Append "a" followed by "b" as one string; likewise. */
int	mc_strv_add2(struct mc_strv *sv, const char *a, const char *b);
/* 1 if an element equals s. */
int	mc_strv_has(const struct mc_strv *sv, const char *s);
/* Free every element and the vector; leaves it empty and reusable. */
void	mc_strv_free(struct mc_strv *sv);

#endif
