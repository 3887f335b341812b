/*
 * test-errmsg.c: egress_errmsg() is the calling thread's.  The session
 * and phase functions may be called from several threads at once
 * (egressd replay -j's job threads do); each failing call's caller must
 * read its own reason, never another thread's written over it or half
 * written, and a thread that did not fail reads "".
 */
#include "egress-int.h"

#include <pthread.h>
#include <unistd.h>

#include "egress.h"
#include "tap.h"

#define NTHR	4
#define NCALLS	20000

static struct egress *ex;

struct job {
	int	idx;
	int	wrong;		/* calls whose message was not their own */
	char	first[256];	/* the first wrong one */
};

static void *
fail_calls(void *arg)
{
	struct job *j = arg;
	char name[32], want[64];
	const char *msg;
	int i;

	snprintf(name, sizeof(name), "nosuch-%.*s", j->idx + 1, "abcdefgh");
	snprintf(want, sizeof(want), "session '%s' does not exist", name);
	for (i = 0; i < NCALLS; i++) {
		if (egress_session_set_phase(ex, name, "a", "api", NULL) !=
		    -1) {
			j->wrong++;
			continue;
		}
		msg = egress_errmsg(ex);
		if (strcmp(msg, want) != 0 && j->wrong++ == 0)
			snprintf(j->first, sizeof(j->first), "%s", msg);
	}
	return NULL;
}

static void *
read_only(void *arg)
{
	snprintf(arg, 256, "%s", egress_errmsg(ex));
	return NULL;
}

int
main(void)
{
	char dir[] = "/tmp/test-errmsg.XXXXXX", ini[512], err[512];
	char other[256];
	struct job jobs[NTHR];
	pthread_t thr[NTHR];
	struct egress *ex2;
	int i, wrong = 0, started = 0;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return done_testing();
	}
	snprintf(ini, sizeof(ini), "[proxy]\nunix = %s/proxy.sock\n"
	    "audit_log = /dev/null\nworkers = 1\n[phase:a]\n"
	    "allow = a.test:443\n", dir);
	ex = egress_new_from_string(ini, err, sizeof(err));
	if (ex == NULL || egress_start(ex) == -1) {
		ok(0, "egress_start: %s", ex != NULL ? egress_errmsg(ex) :
		    err);
		goto out;
	}

	is_str(egress_errmsg(ex), "", "no failure yet: \"\"");
	for (i = 0; i < NTHR; i++) {
		jobs[i].idx = i;
		jobs[i].wrong = 0;
		jobs[i].first[0] = '\0';
		if (pthread_create(&thr[i], NULL, fail_calls, &jobs[i]) != 0)
			break;
	}
	started = i;
	for (i = 0; i < started; i++)
		pthread_join(thr[i], NULL);
	for (i = 0; i < started; i++) {
		if (jobs[i].wrong != 0)
			diag("thread %d: %d of %d messages not its own, "
			    "first: \"%s\"", i, jobs[i].wrong, NCALLS,
			    jobs[i].first);
		wrong += jobs[i].wrong;
	}
	ok(started == NTHR && wrong == 0, "%d threads failing %d calls each "
	    "at once: each read its own reason every time (%d not)", started,
	    NCALLS, wrong);

	/* another thread's failures leave this thread's reason alone */
	is_str(egress_errmsg(ex), "", "the main thread, which did not fail, "
	    "still reads \"\"");
	is_int(egress_session_set_phase(ex, "mine", "a", "api", NULL), -1,
	    "a failure on the main thread");
	other[0] = 'x';
	other[1] = '\0';
	if (pthread_create(&thr[0], NULL, read_only, other) == 0)
		pthread_join(thr[0], NULL);
	is_str(other, "", "a thread that did not fail does not read it");
	is_str(egress_errmsg(ex), "session 'mine' does not exist",
	    "the main thread does");

	/* a failure on another handle is not this handle's */
	if ((ex2 = egress_new_from_string(ini, err, sizeof(err))) == NULL)
		ok(0, "a second handle: %s", err);
	else {
		is_int(egress_session_set_phase(ex2, "x", "a", "api", NULL), -1,
		    "a failure on a second handle");
		is_str(egress_errmsg(ex2), "egress_start() first",
		    "which reads its reason");
	}
	is_str(egress_errmsg(ex), "", "then the first handle's reads \"\"");
	egress_free(ex2);
out:
	egress_free(ex);
	(void)rmdir(dir);
	return done_testing();
}
