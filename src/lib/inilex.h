/*
 * inilex.h: the lines of egressd's INI files (egressd.ini and replay
 * plans), cut for inih.
 *
 * inih (Debian's libinih) calls a handler for every key = value; its
 * reader callback hands it one line at a time.  Both parsers give it
 * lines from here, already checked: comments, blank lines and section
 * headers are consumed by the reader, so inih's multi-line continuation,
 * inline-comment and BOM settings never come into play, an empty section
 * is still seen, and the line number of every key is known.  One grammar
 * for both files:
 *
 *	a UTF-8 BOM on the first line and CRLF line ends are accepted;
 *	blank lines and lines starting with ';' or '#' are comments;
 *	an inline comment starts at white space followed by ';';
 *	a line with a control character (other than tab) is refused;
 *	"[name]" starts a section (white space around name trimmed);
 *	anything else is "key = value" (white space around both trimmed).
 *
 * A key's characters and length and a value's length are the caller's
 * (struct eg_ini_ops); a key refused by them is reported here in one
 * wording for both files.  A value that would not fit inih's line buffer
 * is never split: it stays here (eg_ini_value() finds it in the handler).
 */
#ifndef EG_INILEX_H
#define EG_INILEX_H

#include <stddef.h>

#define EG_INI_KEY_MAX	272	/* the longest key a caller may allow */

/* What the caller does with the lines it is handed. */
struct eg_ini_ops {
	/* "[name]" */
	void	(*section)(void *arg, const char *name, size_t len);
	/* a line refused (why in msg; NULL: out of memory); the keys after
	 * a refused section header ("[" without "]") are skipped, unseen */
	void	(*refused)(void *arg, const char *msg);
	int	(*key_char)(int c);	/* may c be in a key? */
	size_t	  key_max;		/* a key's length, at most */
	size_t	  value_max;		/* a value's length, at most */
};

struct eg_ini {
	const char	*p, *end;	/* text not yet read */
	int		 line;		/* of the line just read, from 1 */
	char		 key[EG_INI_KEY_MAX + 1];  /* the line's whole key */
	char		*longval;	/* a value too long for inih's buffer */
	int		 skip;		/* after a refused section header */
	const struct eg_ini_ops *ops;
	void		*arg;		/* for ops */
};

/* Read text[0..len) handing lines to ops with arg. */
void		 eg_ini_init(struct eg_ini *, const char *text, size_t len,
		    const struct eg_ini_ops *ops, void *arg);
/* Free the value kept for inih. */
void		 eg_ini_clear(struct eg_ini *);
/*
 * The reader for ini_parse_stream(reader, lx, ...): the next "key=value\n"
 * line in inih's buffer (str, num bytes), the lines before it handed to
 * lx->ops; NULL at the end.  The handler takes the key from lx->key,
 * whole: a pair that would not fit inih's buffer is given as a marker no
 * checked line can hold (control characters are refused), its key "k"
 * and its value kept here.
 */
char		*eg_ini_reader(char *str, int num, void *lx);
/* In the handler: the value inih passed, or the one kept for it. */
const char	*eg_ini_value(const struct eg_ini *, const char *value);

#endif
