/*
 * strv.c: the small helpers every file of the sandbox module uses: the
 * string vector (argv, envp, path lists), the path prefix test and the
 * number of an option.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

void
sb_strv_add(struct sb_strv *sv, const char *s)
{
	char **nv, *d;
	size_t ncap;

	if (sv->oom)
		return;
	if (sv->n + 2 > sv->cap) {
		ncap = sv->cap ? sv->cap * 2 : 16;
		nv = eg_realloc(sv->v, ncap * sizeof(*nv));
		if (nv == NULL) {
			sv->oom = 1;
			return;
		}
		sv->v = nv;
		sv->cap = ncap;
	}
	d = eg_strdup(s);
	if (d == NULL) {
		sv->oom = 1;
		return;
	}
	sv->v[sv->n++] = d;
	sv->v[sv->n] = NULL;
}

void
sb_strv_add2(struct sb_strv *sv, const char *a, const char *b)
{
	size_t la, lb;
	char *s;

	la = strlen(a);
	lb = strlen(b);
	s = eg_malloc(la + lb + 1);
	if (s == NULL) {
		sv->oom = 1;
		return;
	}
	memcpy(s, a, la);
	memcpy(s + la, b, lb + 1);
	sb_strv_add(sv, s);
	eg_free(s);
}

int
sb_strv_has(const struct sb_strv *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return 1;
	return 0;
}

void
sb_strv_free(struct sb_strv *sv)
{
	size_t i;

	for (i = 0; i < sv->n; i++)
		eg_free(sv->v[i]);
	eg_free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
	sv->oom = 0;
}

int
sb_path_under(const char *path, const char *dir)
{
	size_t n;

	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

int
sb_num(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}
