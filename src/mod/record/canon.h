/*
 * canon.h: canonical JSON for the run record (SPEC "### record").
 *
 * Rules (also in tests/data/record/README.md): object keys sorted by code
 * point (= byte order of their UTF-8), no whitespace, strings as raw
 * UTF-8 with only '"', '\\' and the C0 controls escaped (\b \f \n \r \t,
 * the others as \u00XX with upper-case hex; DEL, '/' and U+2028 stay
 * raw), integers only (a real is an error), true/false/null, no final
 * newline.  For every value without reals this is byte for byte what
 * jansson 2.14 writes with JSON_COMPACT|JSON_SORT_KEYS (the unit test
 * holds the two together), so the other JSON files of a record
 * directory are canonical too, final newline apart.
 */
#ifndef REC_CANON_H
#define REC_CANON_H

#include <stddef.h>

#include <jansson.h>

/* The longest canonical form written: REC_JSON_MAX (seal.h), the
 * longest record.json that record check reads. */
#define REC_CANON_MAX	(16u << 20)

/*
 * The canonical bytes of v in a buffer from eg_malloc() (NUL-terminated,
 * *len bytes without the NUL; free it with eg_free()).  NULL with errno
 * EINVAL (a real, a string or key that is not valid UTF-8, nesting deeper
 * than 64), EFBIG (longer than REC_CANON_MAX bytes) or ENOMEM.
 */
char	*rec_canon_dump(const json_t *v, size_t *len);

#endif
