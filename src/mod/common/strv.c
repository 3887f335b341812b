/*
 * strv.c: the string vector of the modules (see strv.h).
 */
#include <string.h>

#include "alloc.h"
#include "strv.h"

int
mc_strv_add(struct mc_strv *sv, const char *s)
{
	char **nv, *d;
	size_t ncap;

	if (sv->oom)
		return -1;
	if (sv->n + 2 > sv->cap) {
		ncap = sv->cap ? sv->cap * 2 : 16;
		nv = eg_realloc(sv->v, ncap * sizeof(*nv));
		if (nv == NULL) {
			sv->oom = 1;
			return -1;
		}
		sv->v = nv;
		sv->cap = ncap;
	}
	d = eg_strdup(s);
	if (d == NULL) {
		sv->oom = 1;
		return -1;
	}
	sv->v[sv->n++] = d;
	sv->v[sv->n] = NULL;
	return 0;
}

int
mc_strv_add2(struct mc_strv *sv, const char *a, const char *b)
{
	size_t la, lb;
	char *s;
	int rc;

	la = strlen(a);
	lb = strlen(b);
	s = eg_malloc(la + lb + 1);
	if (s == NULL) {
		sv->oom = 1;
		return -1;
	}
	memcpy(s, a, la);
	memcpy(s + la, b, lb + 1);
	rc = mc_strv_add(sv, s);
	eg_free(s);
	return rc;
}

int
mc_strv_has(const struct mc_strv *sv, const char *s)
{
	return eg_strv_has(sv->v, sv->n, s);
}

void
mc_strv_free(struct mc_strv *sv)
{
	eg_strv_free(sv->v, sv->n);
	sv->v = NULL;
	sv->n = sv->cap = 0;
	sv->oom = 0;
}
