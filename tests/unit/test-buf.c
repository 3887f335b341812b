/*
 * test-buf.c: the bounded buffer: the overflow rule (an append that does
 * not fit appends nothing and sets a sticky error), the max of a heap
 * buffer, growth failure, the helpers, and consume.
 */
#include "egress-int.h"

#include "alloc.h"
#include "buf.h"
#include "tap.h"

/* The buffer's bytes as a string, for comparisons. */
static const char *
str(const struct eg_buf *b)
{
	static char s[1024];
	size_t n = eg_buf_len(b) < sizeof(s) - 1 ? eg_buf_len(b) :
	    sizeof(s) - 1;

	if (n != 0)
		memcpy(s, eg_buf_data(b), n);
	s[n] = '\0';
	return s;
}

static void
test_fixed(void)
{
	char st[8];
	struct eg_buf b;

	memset(st, 'Z', sizeof(st));
	eg_buf_init(&b, st, 6);
	is_int(eg_buf_add(&b, "abc", 3), 0, "fixed: an append that fits");
	is_int(eg_buf_room(&b), 3, "fixed: room is what is left");
	is_int(eg_buf_add(&b, "defg", 4), -1,
	    "fixed: an append that does not fit fails");
	is_str(str(&b), "abc", "fixed: ... and appends nothing of it");
	is_int(eg_buf_failed(&b), EG_BUF_FULL, "fixed: the error is FULL");
	is_int(eg_buf_add(&b, "d", 1), -1,
	    "fixed: the error is sticky: a later append that would fit fails");
	is_int(eg_buf_len(&b), 3, "fixed: ... and appends nothing");
	is_int(eg_buf_room(&b), 0, "fixed: no room once failed");
	ok(st[3] == 'Z' && st[6] == 'Z' && st[7] == 'Z',
	    "fixed: nothing written past the data, no NUL");
	eg_buf_reset(&b);
	is_int(eg_buf_failed(&b), 0, "reset clears the error");
	is_int(eg_buf_add(&b, "123456", 6), 0, "fixed: exactly full fits");
	is_int(eg_buf_add(&b, "", 0), 0, "fixed: an empty append always fits");
	is_int(eg_buf_add(&b, "7", 1), -1, "fixed: one more does not");
	ok(st[6] == 'Z', "fixed: the cap is the size given, not the array");
	eg_buf_clear(&b);
	is_int(eg_buf_len(&b), 0, "clear empties a fixed buffer");
	ok(b.p == st, "clear keeps the caller's storage");

	eg_buf_init(&b, NULL, 0);
	is_int(eg_buf_add(&b, "", 0), 0, "zero-size buffer: empty append");
	is_int(eg_buf_add(&b, "x", 1), -1, "zero-size buffer: full");
}

static void
test_consume(void)
{
	char st[8];
	struct eg_buf b;

	eg_buf_init(&b, st, sizeof(st));
	eg_buf_add(&b, "abcdef", 6);
	eg_buf_consume(&b, 2);
	is_str(str(&b), "cdef", "consume drops bytes from the front");
	is_int(eg_buf_room(&b), 2, "unconsumed bytes are not moved: room 2");
	is_int(eg_buf_add(&b, "xyz", 3), -1,
	    "appends never compact: 3 do not fit");
	eg_buf_reset(&b);
	eg_buf_add(&b, "abcdef", 6);
	eg_buf_consume(&b, 6);
	is_int(eg_buf_len(&b), 0, "all consumed: empty");
	is_int(eg_buf_room(&b), 8, "all consumed: the whole storage again");
	is_int(eg_buf_add(&b, "12345678", 8), 0, "... and usable");
	ok(eg_buf_data(&b) == st, "... from its beginning");
	eg_buf_consume(&b, 100);
	is_int(eg_buf_len(&b), 0, "consume past the end empties");

	/* a read straight into the free storage */
	eg_buf_reset(&b);
	eg_buf_add(&b, "ab", 2);
	is_int(eg_buf_space(&b), 6, "space: the free storage after the data");
	ok(eg_buf_tail(&b) == st + 2, "tail: right after the data");
	memcpy(eg_buf_tail(&b), "cd", 2);
	eg_buf_commit(&b, 2);
	is_str(str(&b), "abcd", "commit adds what was written");
	eg_buf_commit(&b, 100);
	is_int(eg_buf_len(&b), 8, "commit never passes the storage");
	eg_buf_add(&b, "x", 1);
	is_int(eg_buf_space(&b), 0, "no space once failed");
}

static void
test_heap(void)
{
	struct eg_buf b;
	char big[1000];
	size_t i;
	int fails = 0;

	memset(big, 'q', sizeof(big));
	eg_buf_init_heap(&b, 700);
	ok(eg_buf_data(&b) == NULL && eg_buf_len(&b) == 0,
	    "heap: starts empty, nothing allocated");
	for (i = 0; i < 70; i++)
		fails += eg_buf_add(&b, big, 10) == -1;
	is_int(fails, 0, "heap: grows to its max in small appends");
	is_int(eg_buf_len(&b), 700, "heap: holds max bytes");
	ok(b.cap <= 700, "heap: never allocates past max");
	is_int(eg_buf_add(&b, "x", 1), -1, "heap: max + 1 does not fit");
	is_int(eg_buf_failed(&b), EG_BUF_FULL, "heap: error FULL at max");
	eg_buf_clear(&b);
	ok(b.p == NULL && eg_buf_len(&b) == 0 && !eg_buf_failed(&b),
	    "heap: clear frees and resets");
	is_int(eg_buf_add(&b, big, 701), -1,
	    "heap: one append past max fails whole");
	is_int(eg_buf_len(&b), 0, "heap: ... and appends nothing");
	eg_buf_clear(&b);
	is_int(eg_buf_add(&b, big, 700), 0, "heap: one append of max fits");
	eg_buf_clear(&b);

	/* growth failure: the next allocation fails */
	eg_buf_init_heap(&b, 1 << 20);
	eg_buf_add(&b, "abc", 3);
	eg_alloc_fail_at(1);
	is_int(eg_buf_add(&b, big, sizeof(big)), -1,
	    "heap: a failed growth fails the append");
	eg_alloc_fail_at(0);
	is_int(eg_buf_failed(&b), EG_BUF_NOMEM, "heap: error NOMEM");
	is_str(str(&b), "abc", "heap: the bytes before are kept");
	is_int(eg_buf_add(&b, "d", 1), -1,
	    "heap: NOMEM is sticky although memory is back");
	eg_buf_clear(&b);
	eg_alloc_fail_at(1);
	is_int(eg_buf_add(&b, "a", 1), -1, "heap: a failed first allocation");
	eg_alloc_fail_at(0);
	ok(b.p == NULL, "heap: ... leaves nothing allocated");
	eg_buf_clear(&b);

	eg_buf_init_heap(&b, 1 << 20);
	is_int(eg_buf_reserve(&b, 5000), 0, "heap: reserve grows");
	ok(b.cap >= 5000, "heap: ... to at least the room asked");
	is_int(eg_buf_reserve(&b, 2 << 20), -1, "heap: reserve past max fails");
	is_int(eg_buf_failed(&b), EG_BUF_FULL, "heap: ... with FULL");
	eg_buf_clear(&b);
}

static void
test_helpers(void)
{
	char st[64], lng[600];
	struct eg_buf b, h;

	eg_buf_init(&b, st, sizeof(st));
	eg_buf_u64(&b, 0);
	eg_buf_str(&b, " ");
	eg_buf_u64(&b, UINT64_MAX);
	is_str(str(&b), "0 18446744073709551615", "u64 in decimal");
	eg_buf_reset(&b);
	eg_buf_printf(&b, "%s=%03d", "k", 7);
	is_str(str(&b), "k=007", "printf");
	is_int(eg_buf_printf(&b, "%60s", "x"), -1,
	    "printf that does not fit fails");
	is_str(str(&b), "k=007", "... and appends nothing");
	eg_buf_reset(&b);
	eg_buf_json_str(&b, "a\"b\\c\n\x01\xff/");
	is_str(str(&b), "\"a\\\"b\\\\c\\u000a\\u0001\\u00ff/\"",
	    "JSON string: quotes, backslash, control and 8-bit escaped");
	eg_buf_reset(&b);
	eg_buf_json_str(&b, NULL);
	is_str(str(&b), "\"\"", "JSON string: NULL is empty");
	eg_buf_reset(&b);
	eg_buf_json(&b, "a\0b", 3);
	is_str(str(&b), "\"a\\u0000b\"", "JSON string: explicit length, NUL");
	eg_buf_reset(&b);
	eg_buf_add(&b, "[", 1);
	memset(lng, '\x01', 20);
	is_int(eg_buf_json(&b, lng, 20), -1,
	    "JSON string that does not fit fails");
	is_str(str(&b), "[", "... and appends nothing of it");
	is_int(eg_buf_failed(&b), EG_BUF_FULL, "... the error is set");

	/* a long printf on a heap buffer, and one past its max */
	memset(lng, 'L', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	eg_buf_init_heap(&h, 1000);
	is_int(eg_buf_printf(&h, "<%s>", lng), 0, "printf longer than 256");
	is_int(eg_buf_len(&h), sizeof(lng) + 1, "... whole");
	is_int(eg_buf_printf(&h, "<%s>", lng), -1, "printf past max fails");
	is_int(eg_buf_len(&h), sizeof(lng) + 1, "... and appends nothing");
	eg_buf_clear(&h);
}

int
main(void)
{
	test_fixed();
	test_consume();
	test_heap();
	test_helpers();
	return done_testing();
}
