/*
 * inilex.c: the lines of egressd's INI files, cut for inih (inilex.h).
 */
#include <string.h>

#include "alloc.h"
#include "inilex.h"

#define LONG_MARK	"\001"	/* no checked line can contain it */

static int
is_space(char c)
{
	return c == ' ' || c == '\t';
}

void
eg_ini_init(struct eg_ini *lx, const char *text, size_t len)
{
	lx->p = text;
	lx->end = text + len;
	lx->line = 0;
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
eg_ini_read(struct eg_ini *lx, char *str, int num,
    const struct eg_ini_ops *ops, void *arg)
{
	struct eg_ini_line l;
	const char *msg = NULL;
	enum tok t;

	for (;;) {
		switch ((t = next_line(lx, &l, &msg))) {
		case TOK_END:
			return NULL;
		case TOK_BAD_HEADER:
		case TOK_BAD:
			ops->refused(arg, msg, t == TOK_BAD_HEADER);
			continue;
		case TOK_SECTION:
			ops->section(arg, l.name, l.namelen);
			continue;
		case TOK_KEY:
			break;
		}
		if (ops->key(arg, &l) == -1)
			continue;
		if (give(lx, str, num, &l) != NULL)
			return str;
		ops->refused(arg, NULL, 0);
	}
}

const char *
eg_ini_value(const struct eg_ini *lx, const char *value)
{
	if (lx->longval != NULL && strcmp(value, LONG_MARK) == 0)
		return lx->longval;
	return value;
}
