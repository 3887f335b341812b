/*
 * inilex.c: the lines of egressd's INI files, cut for inih (inilex.h).
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "inilex.h"

#define LONG_MARK	"\001"	/* no checked line can contain it */

/* A line, into the text (not terminated). */
struct eg_ini_line {
	const char	*name, *value;
	size_t		 namelen, valuelen;
};

static int
is_space(char c)
{
	return c == ' ' || c == '\t';
}

void
eg_ini_init(struct eg_ini *lx, const char *text, size_t len,
    const struct eg_ini_ops *ops, void *arg)
{
	lx->ops = ops;
	lx->arg = arg;
	lx->p = text;
	lx->end = text + len;
	lx->line = 0;
	lx->skip = 0;
	lx->longval = NULL;
}

void
eg_ini_clear(struct eg_ini *lx)
{
	eg_free(lx->longval);
	lx->longval = NULL;
}

enum tok {
	TOK_END,		/* no line left */
	TOK_SECTION,		/* "[name]": name, namelen */
	TOK_KEY,		/* "key = value" */
	TOK_BAD_HEADER,		/* "[" without "]": *msg */
	TOK_BAD			/* a line the grammar refuses: *msg */
};

/* The next line that is not blank or a comment. */
static enum tok
next_line(struct eg_ini *lx, struct eg_ini_line *l, const char **msg)
{
	const char *s, *e, *nl, *c, *eq;

	memset(l, 0, sizeof(*l));
	for (;;) {
		if (lx->p >= lx->end)
			return TOK_END;
		s = lx->p;
		nl = memchr(s, '\n', (size_t)(lx->end - s));
		e = nl != NULL ? nl : lx->end;
		lx->p = nl != NULL ? nl + 1 : lx->end;
		lx->line++;
		if (e > s && e[-1] == '\r')
			e--;
		if (lx->line == 1 && e - s >= 3 &&
		    memcmp(s, "\xef\xbb\xbf", 3) == 0)
			s += 3;
		while (s < e && is_space(*s))
			s++;
		if (s == e || *s == ';' || *s == '#')
			continue;
		break;
	}
	for (c = s + 1; c < e; c++)
		if (*c == ';' && is_space(c[-1]))
			break;
	e = c;
	while (e > s && (is_space(e[-1]) || e[-1] == '\r'))
		e--;
	for (c = s; c < e; c++)
		if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
			break;
	if (c < e) {
		*msg = "control character in line";
		return TOK_BAD;
	}
	if (*s == '[') {
		if (e[-1] != ']' || e - s < 2) {
			*msg = "bad section header: missing ']'";
			return TOK_BAD_HEADER;
		}
		s++;
		e--;
		while (s < e && is_space(*s))
			s++;
		while (e > s && is_space(e[-1]))
			e--;
		l->name = s;
		l->namelen = (size_t)(e - s);
		return TOK_SECTION;
	}
	if ((eq = memchr(s, '=', (size_t)(e - s))) == NULL) {
		*msg = "expected 'key = value' or '[section]'";
		return TOK_BAD;
	}
	l->name = s;
	for (c = eq; c > s && is_space(c[-1]); c--)
		;
	l->namelen = (size_t)(c - s);
	for (c = eq + 1; c < e && is_space(*c); c++)
		;
	l->value = c;
	l->valuelen = (size_t)(e - c);
	return TOK_KEY;
}

/* "key=value\n" for inih, or the marker (inilex.h); NULL: out of memory */
static char *
give(struct eg_ini *lx, char *str, int num, const struct eg_ini_line *l)
{
	const char *k = l->name, *v = l->value;
	size_t klen = l->namelen, vlen = l->valuelen;

	eg_ini_clear(lx);
	if (num < 8 || klen + 1 + vlen + 2 > (size_t)num) {
		if ((lx->longval = eg_strndup(v, vlen)) == NULL)
			return NULL;
		v = LONG_MARK;
		vlen = 1;
		k = "k";
		klen = 1;
	}
	/* inih sees "key=value": nothing left for it to interpret */
	memcpy(str, k, klen);
	str[klen] = '=';
	memcpy(str + klen + 1, v, vlen);
	str[klen + 1 + vlen] = '\n';
	str[klen + 2 + vlen] = '\0';
	return str;
}

char *
eg_ini_reader(char *str, int num, void *stream)
{
	struct eg_ini *lx = stream;
	const struct eg_ini_ops *ops = lx->ops;
	void *arg = lx->arg;
	struct eg_ini_line l;
	const char *msg = NULL;
	char q[400], why[480];
	enum tok t;
	size_t i;

	for (;;) {
		switch ((t = next_line(lx, &l, &msg))) {
		case TOK_END:
			return NULL;
		case TOK_BAD_HEADER:
		case TOK_BAD:
			lx->skip |= t == TOK_BAD_HEADER;
			ops->refused(arg, msg);
			continue;
		case TOK_SECTION:
			lx->skip = 0;
			ops->section(arg, l.name, l.namelen);
			continue;
		case TOK_KEY:
			break;
		}
		for (i = 0; i < l.namelen; i++)
			if (!ops->key_char((unsigned char)l.name[i]))
				break;
		if (l.namelen == 0 || l.namelen > ops->key_max ||
		    i < l.namelen) {
			snprintf(why, sizeof(why), "bad key name '%s'",
			    eg_quote(l.name, l.namelen, 80, q, sizeof(q)));
			ops->refused(arg, why);
			continue;
		}
		if (l.valuelen > ops->value_max) {
			snprintf(why, sizeof(why), "line too long (at most %zu "
			    "bytes of value)", ops->value_max);
			ops->refused(arg, why);
			continue;
		}
		if (lx->skip)		/* a key of a refused header's */
			continue;
		memcpy(lx->key, l.name, l.namelen);
		lx->key[l.namelen] = '\0';
		if (give(lx, str, num, &l) != NULL)
			return str;
		ops->refused(arg, NULL);
	}
}

const char *
eg_ini_value(const struct eg_ini *lx, const char *value)
{
	if (lx->longval != NULL && strcmp(value, LONG_MARK) == 0)
		return lx->longval;
	return value;
}
