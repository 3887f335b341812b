/*
 * fuzz-canon.c: the run record's canonical JSON writer
 * (src/mod/record/canon.c) against jansson.  Whatever JSON the input
 * holds, once parsed: the canonical bytes parse back to an equal value,
 * writing that again gives the same bytes (a fixed point), and they are
 * exactly jansson's JSON_COMPACT|JSON_SORT_KEYS output (the writer of the
 * record directory's other JSON files).  Refused (NULL) only for a real
 * number or nesting deeper than 64.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../src/mod/record/canon.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* 1 when v holds a real or nests deeper than 64 */
static int
refusable(const json_t *v, int depth)
{
	const char *k;
	json_t *m;
	size_t i;

	if (depth > 64 || json_is_real(v))
		return 1;
	if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++)
			if (refusable(json_array_get(v, i), depth + 1))
				return 1;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)(uintptr_t)v, k, m)
			if (refusable(m, depth + 1))
				return 1;
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v, *w;
	char *a, *b, *j;
	size_t alen, blen;

	v = json_loadb((const char *)data, size, JSON_DECODE_ANY |
	    JSON_REJECT_DUPLICATES, NULL);
	if (v == NULL)
		return 0;
	a = rec_canon_dump(v, &alen);
	if (a == NULL) {
		if (!refusable(v, 0))
			__builtin_trap();	/* refused a valid value */
		json_decref(v);
		return 0;
	}
	if (strlen(a) != alen)
		__builtin_trap();		/* a raw NUL came out */
	w = json_loadb(a, alen, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
	    NULL);
	if (w == NULL || !json_equal(v, w))
		__builtin_trap();		/* not the same value */
	b = rec_canon_dump(w, &blen);
	if (b == NULL || blen != alen || memcmp(a, b, alen) != 0)
		__builtin_trap();		/* not a fixed point */
	j = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (j == NULL || strcmp(j, a) != 0)
		__builtin_trap();		/* not jansson's bytes */
	free(j);
	free(b);
	free(a);
	json_decref(w);
	json_decref(v);
	return 0;
}
