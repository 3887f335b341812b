/*
 * sessattr.c: what a session carries for the replay and record modules:
 * its step label, its redaction list (eg_redact_str(), used by every
 * event of it) and its own audit file (egress_session_set_*()).
 */
#include "egress-int.h"

#include <strings.h>

#include "alloc.h"
#include "audit.h"
#include "cfg.h"
#include "chain.h"
#include "core.h"
#include "session.h"
#include "sessref.h"
#include "sessreg.h"
#include "uuid.h"

/* --- step labels, audit files (the replay module's needs) ---------------- */

void
eg_labels_free(struct eg_label *l)
{
	struct eg_label *n;

	for (; l != NULL; l = n) {
		n = l->next;
		eg_free(l);
	}
}

int
egress_session_set_step(struct egress *ex, const char *session,
    const char *step)
{
	struct eg_session *s;
	struct eg_label *l = NULL;
	size_t n = 0;

	if (step != NULL && !eg_phase_name_ok(step, n = strlen(step)))
		return eg_set_err(ex, EINVAL, "bad step name '%.80s': 1 to %d "
		    "of A-Z a-z 0-9 _ . -", step, EG_SESSION_NAME_MAX);
	if (step != NULL) {
		if ((l = eg_malloc(sizeof(*l) + n + 1)) == NULL)
			return eg_set_err(ex, ENOMEM, "out of memory");
		memcpy(l->name, step, n + 1);
	}
	if ((s = eg_sess_lock(ex, session)) == NULL) {
		eg_free(l);
		return -1;
	}
	/* the old label stays allocated: a loop thread may be writing it */
	if (l != NULL) {
		l->next = s->labels;
		s->labels = l;
	}
	__atomic_store_n(&s->step, l != NULL ? l->name : NULL,
	    __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ex->ctl);
	eg_session_unref(s);
	return 0;
}

void
eg_redacts_free(struct eg_redact *r)
{
	struct eg_redact *n;

	for (; r != NULL; r = n) {
		n = r->next;
		eg_strv_free(r->val, r->n);
		eg_free(r->len);
		eg_free(r);
	}
}

int
egress_session_set_redact(struct egress *ex, const char *session,
    const char *const *values, size_t n)
{
	struct eg_session *s;
	struct eg_redact *r;
	size_t i, len;

	if ((r = eg_calloc(1, sizeof(*r))) == NULL ||
	    (n > 0 && ((r->val = eg_calloc(n, sizeof(*r->val))) == NULL ||
	    (r->len = eg_calloc(n, sizeof(*r->len))) == NULL))) {
		eg_redacts_free(r);
		return eg_set_err(ex, ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++) {
		if (values[i] == NULL ||
		    (len = strlen(values[i])) < EG_REDACT_MIN)
			continue;
		if ((r->val[r->n] = eg_strdup(values[i])) == NULL) {
			eg_redacts_free(r);
			return eg_set_err(ex, ENOMEM, "out of memory");
		}
		r->len[r->n++] = len;
		if (len > r->maxlen)
			r->maxlen = len;
	}
	if ((s = eg_sess_lock(ex, session)) == NULL) {
		eg_redacts_free(r);
		return -1;
	}
	/* the old list stays allocated: a loop thread may be using it */
	r->next = s->redacts;
	s->redacts = r;
	__atomic_store_n(&s->redact, r->n > 0 ? r : NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ex->ctl);
	eg_session_unref(s);
	return 0;
}

int
egress_session_set_audit(struct egress *ex, const char *session,
    const char *path, const char *run_id, int chain)
{
	struct eg_session *s;
	struct eg_audit *a;
	struct eg_err err;
	char run[37];
	int json;

	if (!ex->started)
		return eg_set_err(ex, EINVAL, "egress_start() first");
	if (run_id != NULL && !eg_uuid_ok(run_id))
		return eg_set_err(ex, EINVAL, "run_id: '%.80s' is not a UUID",
		    run_id);
	if ((s = eg_sess_lock(ex, session)) == NULL)
		return -1;
	if (path == NULL) {
		/* back to the main log; the file stays open (a loop
		 * thread may be writing to it) until the session goes */
		__atomic_store_n(&s->audit, NULL, __ATOMIC_RELEASE);
		goto done;
	}
	pthread_rwlock_rdlock(&ex->lock);
	json = ex->cfg->audit_json;
	pthread_rwlock_unlock(&ex->lock);
	if ((a = s->audit_file) != NULL) {
		/* another file: the same writer (and chain) moves to it */
		if (eg_audit_reconfigure(a, path, json, &err) == -1)
			goto fail;
	} else {
		if ((a = eg_audit_open_private(path, json, &err)) == NULL)
			goto fail;
		if (run_id != NULL)
			snprintf(run, sizeof(run), "%s", run_id);
		else
			eg_uuid4(run);
		/* under ctl: a reload cannot swap ex->cfg meanwhile */
		if (eg_audit_chain_setup(ex, a, run, chain, &err) == -1) {
			eg_audit_close(a);
			goto fail;
		}
		s->audit_file = a;
	}
	__atomic_store_n(&s->audit, a, __ATOMIC_RELEASE);
done:
	pthread_mutex_unlock(&ex->ctl);
	eg_session_unref(s);
	return 0;
fail:
	pthread_mutex_unlock(&ex->ctl);
	eg_session_unref(s);
	return eg_set_err(ex, err.code, "%s", err.msg);
}

int
egress_session_audit_head(struct egress *ex, const char *session,
    char head[65], uint64_t *lines)
{
	struct eg_session *s;
	struct eg_audit *a;
	int rc;

	if ((s = eg_sess_named(ex, session)) == NULL)
		return -1;
	a = __atomic_load_n(&s->audit, __ATOMIC_ACQUIRE);
	rc = eg_audit_head(a != NULL ? a : ex->audit, head, lines);
	eg_session_unref(s);
	if (rc == -1)
		return eg_set_err(ex, ENOTSUP, "that audit file is not "
		    "chained");
	return 0;
}
