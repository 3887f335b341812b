/*
 * sessref.c: the session a connection, a pooled socket or an event
 * belongs to, as the floors below the registry use it: references,
 * connection and verdict counters, redaction of its secrets.  The last
 * reference frees the session through the release function its creator
 * set (the registry's eg_sess_free()), so nothing here knows the
 * registry.
 */
#include "egress-int.h"

#include <strings.h>

#include "core.h"
#include "loop.h"
#include "sessref.h"

void
eg_session_ref(struct eg_session *s)
{
	if (s != NULL && !s->is_default)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void
eg_session_unref(struct eg_session *s)
{
	if (s == NULL || s->is_default)
		return;
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
		s->release(s);
}

void
eg_session_attach(struct eg_session *s)
{
	eg_session_ref(s);
	__atomic_add_fetch(&s->active, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->total, 1, __ATOMIC_RELAXED);
}

void
eg_session_detach(struct eg_session *s)
{
	if (__atomic_sub_fetch(&s->active, 1, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&s->idle_since_ms, eg_wall_ms(),
		    __ATOMIC_RELAXED);
}

struct eg_ring *
eg_session_event(struct egress *ex, struct eg_session *sess,
    enum egress_event_type type)
{
	struct eg_session *s = sess != NULL ? sess : &ex->def;

	switch (type) {
	case EGRESS_EV_ALLOW:
		__atomic_add_fetch(&s->allowed, 1, __ATOMIC_RELAXED);
		break;
	case EGRESS_EV_BLOCK:
		__atomic_add_fetch(&s->blocked, 1, __ATOMIC_RELAXED);
		break;
	case EGRESS_EV_FAIL:
		__atomic_add_fetch(&s->failed, 1, __ATOMIC_RELAXED);
		break;
	default:
		break;
	}
	return s->ring;
}

static const char eg_redacted[] = "[REDACTED]";

const char *
eg_redact_str(const struct eg_redact *r, const char *s, char *out,
    size_t cap)
{
	size_t slen, i, k, best, o = 0, rl = sizeof(eg_redacted) - 1;
	int hit = 0;

	if (r == NULL || r->n == 0 || s == NULL)
		return s;
	slen = strlen(s);
	if (slen < EG_REDACT_MIN)
		return s;
	for (i = 0; i < slen;) {
		/* the longest value that starts here */
		best = 0;
		for (k = 0; k < r->n; k++)
			if (r->len[k] > best && r->len[k] <= slen - i &&
			    strncasecmp(s + i, r->val[k], r->len[k]) == 0)
				best = r->len[k];
		if (best > 0) {
			if (o + rl >= cap)
				goto nospace;
			memcpy(out + o, eg_redacted, rl);
			o += rl;
			i += best;
			hit = 1;
			continue;
		}
		if (o + 1 >= cap)
			goto nospace;
		out[o++] = s[i++];
	}
	if (!hit)
		return s;
	out[o] = '\0';
	return out;
nospace:
	if (cap <= rl)
		return "";
	memcpy(out, eg_redacted, rl + 1);
	return out;
}
