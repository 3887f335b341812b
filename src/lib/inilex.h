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
 * The key's own grammar and the value's length are the caller's.  A
 * value that would not fit inih's line buffer is never split: it stays
 * here (eg_ini_value() finds it in the handler).
 */
#ifndef EG_INILEX_H
#define EG_INILEX_H

#include <stddef.h>

struct eg_ini {
	const char	*p, *end;	/* text not yet read */
	int		 line;		/* of the line just read, from 1 */
	char		*longval;	/* a value too long for inih's buffer */
};

/* A line, into the text (not terminated). */
struct eg_ini_line {
	const char	*name, *value;
	size_t		 namelen, valuelen;
};

/* What the caller does with the lines it is handed. */
struct eg_ini_ops {
	/* "[name]" */
	void	(*section)(void *arg, const char *name, size_t len);
	/* a line the grammar refuses (why in msg); header: a section header
	 * ("[" without "]"), whose keys are then to be skipped; msg NULL: out
	 * of memory */
	void	(*refused)(void *arg, const char *msg, int header);
	/* "key = value" (name and value set): 0 to hand it to inih, -1 when
	 * the caller refuses it (having said why) */
	int	(*key)(void *arg, const struct eg_ini_line *);
};

void		 eg_ini_init(struct eg_ini *, const char *text, size_t len);
/* Free the value kept for inih. */
void		 eg_ini_clear(struct eg_ini *);
/*
 * The inih reader's work: the next "key=value\n" line in inih's buffer
 * (str, num bytes), the lines before it handed to ops; NULL at the end.
 * A pair that would not fit is given as a marker no checked line can
 * hold (control characters are refused), its key "k" (the handler keeps
 * its own copy of the key) and its value kept here.
 */
char		*eg_ini_read(struct eg_ini *, char *str, int num,
		    const struct eg_ini_ops *, void *arg);
/* In the handler: the value inih passed, or the one kept for it. */
const char	*eg_ini_value(const struct eg_ini *, const char *value);

#endif
