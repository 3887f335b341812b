/*
 * meter.c: token usage from response bodies (meter.h).  Hostile input:
 * the body is the upstream's, any bytes at all; the state is a few
 * integers and a 32-byte key buffer whatever comes.
 */
#include "egress-int.h"

#include "meter.h"
#include "shared.h"

enum { K_NONE, K_USAGE, K_IN, K_OUT, K_CACHED };
/* reader states */
enum { S_TOP, S_STR, S_AFTER_KEY, S_VALUE, S_NUM };
/* de-chunker states */
enum { C_SIZE, C_EXT, C_DATA, C_DATA_END, C_TRAILER, C_DONE };

void
eg_meter_init(struct eg_meter *m, enum eg_meter_kind kind, int chunked)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->in = m->out = m->cached = -1;
	m->chunked = chunked;
}

int
eg_meter_has(const struct eg_meter *m)
{
	return m->in >= 0 || m->out >= 0 || m->cached >= 0;
}

static int
key_of(const struct eg_meter *m)
{
	static const struct { enum eg_meter_kind k; const char *s; int v; }
	    keys[] = {
		{ EG_METER_ANTHROPIC, "input_tokens", K_IN },
		{ EG_METER_ANTHROPIC, "output_tokens", K_OUT },
		{ EG_METER_ANTHROPIC, "cache_read_input_tokens", K_CACHED },
		{ EG_METER_OPENAI, "prompt_tokens", K_IN },
		{ EG_METER_OPENAI, "input_tokens", K_IN },
		{ EG_METER_OPENAI, "completion_tokens", K_OUT },
		{ EG_METER_OPENAI, "output_tokens", K_OUT },
		{ EG_METER_OPENAI, "cached_tokens", K_CACHED },
	};
	size_t i;

	if (m->klen == 5 && memcmp(m->kbuf, "usage", 5) == 0)
		return K_USAGE;
	if (m->usage_depth == 0)
		return K_NONE;
	for (i = 0; i < nitems(keys); i++)
		if (keys[i].k == m->kind && strlen(keys[i].s) == m->klen &&
		    memcmp(keys[i].s, m->kbuf, m->klen) == 0)
			return keys[i].v;
	return K_NONE;
}

static void
num_done(struct eg_meter *m)
{
	int64_t v = (int64_t)m->num;

	if (m->ndig == 0)
		return;
	switch (m->key) {
	case K_IN:	m->in = v;	break;
	case K_OUT:	m->out = v;	break;
	case K_CACHED:	m->cached = v;	break;
	default:	break;
	}
}

/* One byte of JSON (or of an SSE line holding JSON). */
static void
json_byte(struct eg_meter *m, uint8_t c)
{
	if (c == '\n' && m->st == S_STR) {
		/* no raw newline in a JSON string: an SSE line ended */
		m->st = S_TOP;
		m->key = K_NONE;
		return;
	}
	switch (m->st) {
	case S_STR:
		if (m->esc) {
			m->esc = 0;
			m->klen = sizeof(m->kbuf);	/* not a plain key */
		} else if (c == '\\')
			m->esc = 1;
		else if (c == '"') {
			m->st = S_AFTER_KEY;
			return;
		} else if (m->klen < sizeof(m->kbuf))
			m->kbuf[m->klen++] = (char)c;
		else
			m->klen = sizeof(m->kbuf);
		return;
	case S_AFTER_KEY:
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			return;
		if (c == ':') {
			m->key = m->klen < sizeof(m->kbuf) ? key_of(m) :
			    K_NONE;
			m->st = S_VALUE;
			return;
		}
		/* a string value, not a key */
		m->st = S_TOP;
		break;
	case S_VALUE:
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			return;
		if (c >= '0' && c <= '9' && m->key >= K_IN) {
			m->st = S_NUM;
			m->num = 0;
			m->ndig = 0;
			break;
		}
		if (c == '{' && m->key == K_USAGE) {
			m->depth++;
			m->usage_depth = m->depth;
			m->st = S_TOP;
			m->key = K_NONE;
			return;
		}
		m->st = S_TOP;
		m->key = K_NONE;
		break;
	default:
		break;
	}
	if (m->st == S_NUM) {
		if (c >= '0' && c <= '9') {
			if (m->ndig < 18) {
				m->num = m->num * 10 + (uint64_t)(c - '0');
				m->ndig++;
			}
			return;
		}
		num_done(m);
		m->st = S_TOP;
		m->key = K_NONE;
	}
	/* S_TOP */
	switch (c) {
	case '"':
		m->st = S_STR;
		m->klen = 0;
		m->esc = 0;
		break;
	case '{':
	case '[':
		if (m->depth < 1000000)
			m->depth++;
		break;
	case '}':
	case ']':
		if (m->depth > 0) {
			if (m->depth == m->usage_depth)
				m->usage_depth = 0;
			m->depth--;
		}
		break;
	default:
		break;
	}
}

/* The bytes json_byte() acts on in state S_TOP: the rest pass unread. */
static const uint8_t top_byte[256] = {
	['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1,
};

/*
 * n bytes of JSON: as json_byte() on each, but a run of bytes that change
 * nothing at the top (most of a body: text, other keys' values) is passed
 * over, and a run inside a string is added to the key buffer at once.
 */
static void
json_bytes(struct eg_meter *m, const uint8_t *p, size_t n)
{
	size_t i = 0, j, room;

	while (i < n) {
		if (m->st == S_TOP) {
			for (j = i; j < n && !top_byte[p[j]]; j++)
				;
		} else if (m->st == S_STR && !m->esc) {
			for (j = i; j < n && p[j] != '"' && p[j] != '\\' &&
			    p[j] != '\n'; j++)
				;
			/* as many as fit; a longer string is no plain key
			 * (klen stays sizeof(kbuf)) */
			room = sizeof(m->kbuf) - m->klen;
			memcpy(m->kbuf + m->klen, p + i, j - i < room ? j - i :
			    room);
			m->klen += j - i < room ? j - i : room;
		} else
			j = i;
		if (j == n)
			break;
		json_byte(m, p[j]);
		i = j + 1;
	}
}

void
eg_meter_feed(struct eg_meter *m, const uint8_t *p, size_t n)
{
	size_t i = 0, k;
	int hv;

	if (m->kind == EG_METER_NONE)
		return;
	if (!m->chunked) {
		json_bytes(m, p, n);
		return;
	}
	while (i < n) {
		switch (m->cst) {
		case C_SIZE:
			if ((hv = eg_hexval(p[i])) >= 0) {
				if (m->cleft < (1ULL << 56))
					m->cleft = m->cleft * 16 +
					    (uint64_t)hv;
			} else if (p[i] == '\n')
				m->cst = m->cleft == 0 ? C_TRAILER : C_DATA;
			else if (p[i] != '\r')
				m->cst = C_EXT;
			i++;
			break;
		case C_EXT:
			if (p[i++] == '\n')
				m->cst = m->cleft == 0 ? C_TRAILER : C_DATA;
			break;
		case C_DATA:
			k = n - i;
			if (k > m->cleft)
				k = (size_t)m->cleft;
			json_bytes(m, p + i, k);
			i += k;
			m->cleft -= k;
			if (m->cleft == 0)
				m->cst = C_DATA_END;
			break;
		case C_DATA_END:
			if (p[i++] == '\n')
				m->cst = C_SIZE;
			break;
		case C_TRAILER:
		case C_DONE:
			i = n;
			m->cst = C_DONE;
			break;
		}
	}
}
