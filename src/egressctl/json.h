/*
 * json.h: egressctl's small bounded JSON reader (json.c).
 *
 * Not jansson, although the daemon's build has it: egressctl prints what
 * the server sent, so it keeps what jansson throws away.  Every value
 * keeps its text in the input (raw/rawlen: audit --json passes each event
 * through as received), numbers stay text (a uint64 seq beyond
 * INT64_MAX, "1.50" printed as sent), the first of two equal keys wins, a
 * \u escape of a surrogate half reads as '?', and nesting stops at
 * JSON_DEPTH.  It also keeps egressctl free of libraries.
 */
#ifndef EGRESSCTL_JSON_H
#define EGRESSCTL_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH	32

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jt		 t;
	const char	*raw;		/* the value's text in the input */
	size_t		 rawlen;
	char		*s;		/* J_STR decoded, J_NUM text */
	int		 b;
	size_t		 n;		/* J_ARR / J_OBJ members */
	struct jv	*kids;
	char		**keys;		/* J_OBJ */
};

/* Parse s (len bytes, one value and white space) into *v; 0, or -1 when
 * it is not JSON (then *v holds nothing).  v->raw points into s. */
int		 json_parse(const char *s, size_t len, struct jv *v);
/* Free what *v holds (not v itself); NULL is a no-op. */
void		 jv_free(struct jv *v);
/* The member key of object o, or NULL (o NULL or not an object). */
const struct jv	*jget(const struct jv *o, const char *key);
/* A scalar member as text ("" if absent); numbers, strings, booleans. */
const char	*jstr(const struct jv *o, const char *key);
/* A number member (0 if absent or not a number). */
uint64_t	 jnum(const struct jv *o, const char *key);

#endif
