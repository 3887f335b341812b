/*
 * test-canon.c: the record's canonical JSON (src/mod/record/canon.c):
 * key order by code point (not by UTF-16 code unit), escaping, integers
 * only, no whitespace or final newline, and byte equality with jansson's
 * JSON_COMPACT|JSON_SORT_KEYS, which writes the record directory's other
 * JSON files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"
#include "../../src/mod/record/canon.h"

/* every escape class, DEL, U+2028, non-ASCII, an embedded NUL */
static const char tricky[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f"
    "\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80\0z";

static char *
dump(const json_t *v)
{
	size_t len = 0;
	char *s = rec_canon_dump(v, &len);

	if (s != NULL && strlen(s) != len) {
		/* embedded NUL can only come from a bug: escapes hide them */
		free(s);
		return NULL;
	}
	return s;
}

static int
same_as_jansson(const json_t *v)
{
	char *a = dump(v);
	char *b = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS |
	    JSON_ENCODE_ANY);
	int same = a != NULL && b != NULL && strcmp(a, b) == 0;

	if (!same)
		diag("canon '%s' jansson '%s'", a ? a : "(null)",
		    b ? b : "(null)");
	free(a);
	free(b);
	return same;
}

int
main(void)
{
	json_t *o, *a, *v;
	char *s;
	int i;

	/* key order: code point order = UTF-8 byte order */
	o = json_object();
	json_object_set_new(o, "\xf0\x9f\x98\x80", json_integer(1)); /* U+1F600 */
	json_object_set_new(o, "\xef\xbd\xa1", json_integer(2));     /* U+FF61 */
	json_object_set_new(o, "\xc3\xa9", json_integer(3));         /* U+00E9 */
	json_object_set_new(o, "ab", json_integer(4));
	json_object_setn_new(o, "a\0b", 3, json_integer(5));
	json_object_set_new(o, "a", json_integer(6));
	json_object_set_new(o, "B", json_integer(7));
	json_object_set_new(o, "", json_integer(8));
	json_object_set_new(o, "\x7f", json_integer(9));
	s = dump(o);
	is_str(s, "{\"\":8,\"B\":7,\"a\":6,\"a\\u0000b\":5,\"ab\":4,"
	    "\"\x7f\":9,\"\xc3\xa9\":3,\"\xef\xbd\xa1\":2,"
	    "\"\xf0\x9f\x98\x80\":1}",
	    "keys by code point: U+FF61 before U+1F600 (UTF-16 order would "
	    "swap them), \"a\" < \"a\\0b\" < \"ab\"");
	ok(same_as_jansson(o), "key order: same bytes as jansson");
	free(s);
	json_decref(o);

	/* strings */
	v = json_stringn(tricky, sizeof(tricky) - 1);
	ok(v != NULL, "tricky string made");
	s = dump(v);
	is_str(s, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001F\x7f"
	    "\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80\\u0000z\"",
	    "escapes: \\\" \\\\ \\b \\f \\n \\r \\t \\u00XX upper-case; "
	    "/ DEL U+2028 and non-ASCII raw");
	ok(same_as_jansson(v), "strings: same bytes as jansson");
	free(s);
	json_decref(v);
	for (i = 0; i < 0x20; i++) {
		char c = (char)i;

		v = json_stringn(&c, 1);
		if (!same_as_jansson(v))
			break;
		json_decref(v);
	}
	ok(i == 0x20, "every C0 control escaped as jansson does");
	if (i < 0x20)
		json_decref(v);

	/* numbers, literals, nesting, no whitespace, no final newline */
	o = json_pack("{s:I,s:I,s:i,s:b,s:b,s:n,s:[i,[],{}],s:{}}",
	    "min", (json_int_t)INT64_MIN, "max", (json_int_t)INT64_MAX,
	    "zero", 0, "t", 1, "f", 0, "n", "arr", -1, "obj");
	s = dump(o);
	is_str(s, "{\"arr\":[-1,[],{}],\"f\":false,"
	    "\"max\":9223372036854775807,\"min\":-9223372036854775808,"
	    "\"n\":null,\"obj\":{},\"t\":true,\"zero\":0}",
	    "integers, literals, empty containers; no whitespace");
	ok(s != NULL && s[strlen(s) - 1] == '}', "no final newline");
	ok(same_as_jansson(o), "mixed: same bytes as jansson");
	free(s);
	json_decref(o);

	/* refused: reals, invalid UTF-8, depth */
	o = json_pack("{s:f}", "x", 1.0);
	errno = 0;
	ok(dump(o) == NULL && errno == EINVAL, "a real is refused (EINVAL)");
	json_decref(o);
	v = json_stringn_nocheck("\xc0\xaf", 2);
	errno = 0;
	ok(dump(v) == NULL && errno == EINVAL, "overlong UTF-8 refused");
	json_decref(v);
	v = json_stringn_nocheck("\xed\xa0\x80", 3);
	errno = 0;
	ok(dump(v) == NULL && errno == EINVAL, "UTF-8 surrogate refused");
	json_decref(v);
	v = json_stringn_nocheck("\xf0\x9f\x98", 3);
	errno = 0;
	ok(dump(v) == NULL && errno == EINVAL, "truncated UTF-8 refused");
	json_decref(v);
	o = json_object();
	json_object_set_new_nocheck(o, "\xff", json_true());
	errno = 0;
	ok(dump(o) == NULL && errno == EINVAL, "invalid UTF-8 key refused");
	json_decref(o);
	a = v = json_array();
	for (i = 0; i < 70; i++) {
		json_t *n = json_array();

		json_array_append_new(v, n);
		v = n;
	}
	errno = 0;
	ok(dump(a) == NULL && errno == EINVAL, "nesting deeper than 64 "
	    "refused");
	json_decref(a);

	/* the cap: REC_CANON_MAX bytes are written, one more is refused */
	{
		size_t n = REC_CANON_MAX - 2, len = 0;
		char *big = malloc(n + 1);

		if (big == NULL)
			return 1;
		memset(big, 'a', n + 1);
		v = json_stringn_nocheck(big, n);
		s = rec_canon_dump(v, &len);
		ok(s != NULL && len == REC_CANON_MAX && s[len] == '\0',
		    "a value of REC_CANON_MAX bytes written");
		free(s);
		json_decref(v);
		v = json_stringn_nocheck(big, n + 1);
		errno = 0;
		ok(rec_canon_dump(v, &len) == NULL && errno == EFBIG,
		    "one byte past REC_CANON_MAX refused (EFBIG)");
		json_decref(v);
		/* escapes count: 1 byte in, 6 out */
		memset(big, '\001', n / 5);
		v = json_stringn_nocheck(big, n / 5);
		errno = 0;
		ok(rec_canon_dump(v, &len) == NULL && errno == EFBIG,
		    "escapes past REC_CANON_MAX refused (EFBIG)");
		json_decref(v);
		free(big);
	}

	/* round trip through jansson's parser */
	o = json_loads("{ \"z\" : [ 1 , \"\\u00e9\\ud83d\\ude00\\u0007\" ],"
	    "\"A\":{\"y\":null,\"x\":true} }", 0, NULL);
	s = dump(o);
	is_str(s, "{\"A\":{\"x\":true,\"y\":null},\"z\":[1,"
	    "\"\xc3\xa9\xf0\x9f\x98\x80\\u0007\"]}",
	    "parsed input: \\u escapes decoded, written raw/canonical");
	json_decref(o);
	o = json_loads(s, 0, NULL);
	{
		char *s2 = dump(o);

		is_str(s2, s, "canonical bytes are a fixed point");
		free(s2);
	}
	free(s);
	json_decref(o);
	return done_testing();
}
