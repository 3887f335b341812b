/*
 * test-log.c: diagnostics check the level before formatting.  A message
 * above egress_set_log_level(), or any message while no callback is set,
 * never evaluates its arguments and never reaches the callback.
 */
#include "egress-int.h"

#include "core.h"
#include "log.h"
#include "tap.h"

static int nevals, ncalls, last_level;
static char last_msg[256];

/* An argument with a side effect: counts its evaluations. */
static const char *
arg(void)
{
	nevals++;
	return "x";
}

static void
on_log(int level, const char *msg, void *cb_arg)
{
	(void)cb_arg;
	ncalls++;
	last_level = level;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

static void
reset(void)
{
	nevals = ncalls = 0;
	last_level = -1;
	last_msg[0] = '\0';
}

int
main(void)
{
	static const char ini[] =
	    "[proxy]\nlisten = 127.0.0.1:1\nadmin = none\n"
	    "[phase:a]\nallow = a.test:443\n";
	struct egress *ex;
	char err[1024];
	int lv;

	ex = egress_new_from_string(ini, err, sizeof(err));
	ok(ex != NULL, "egress_new_from_string: %s", ex != NULL ? "ok" : err);
	if (ex == NULL)
		return done_testing();

	/* no callback: nothing is formatted, at any level */
	reset();
	for (lv = EGRESS_LOG_ERR; lv <= EGRESS_LOG_DEBUG; lv++)
		eg_log(ex, lv, "m %s", arg());
	is_int(nevals, 0, "no callback: no argument evaluated");
	ok(!eg_log_enabled(ex, EGRESS_LOG_ERR), "no callback: ERR disabled");

	/* the default level is INFO */
	egress_set_log_cb(ex, on_log, NULL);
	reset();
	eg_log(ex, EGRESS_LOG_DEBUG, "debug %s", arg());
	is_int(nevals, 0, "default level: DEBUG arguments not evaluated");
	is_int(ncalls, 0, "default level: DEBUG not delivered");
	eg_log(ex, EGRESS_LOG_INFO, "info %s %d", arg(), 7);
	is_int(nevals, 1, "default level: INFO arguments evaluated once");
	is_int(ncalls, 1, "default level: INFO delivered");
	is_int(last_level, EGRESS_LOG_INFO, "INFO delivered as INFO");
	is_str(last_msg, "info x 7", "INFO formatted");

	/* WARN: INFO and DEBUG dropped, WARN and ERR delivered */
	egress_set_log_level(ex, EGRESS_LOG_WARN);
	reset();
	eg_log(ex, EGRESS_LOG_INFO, "%s", arg());
	eg_log(ex, EGRESS_LOG_DEBUG, "%s", arg());
	is_int(nevals, 0, "level WARN: INFO and DEBUG not evaluated");
	is_int(ncalls, 0, "level WARN: INFO and DEBUG not delivered");
	eg_log(ex, EGRESS_LOG_WARN, "w %s", arg());
	eg_log(ex, EGRESS_LOG_ERR, "e %s", arg());
	is_int(nevals, 2, "level WARN: WARN and ERR evaluated");
	is_int(ncalls, 2, "level WARN: WARN and ERR delivered");
	is_str(last_msg, "e x", "ERR formatted");

	/* DEBUG: everything */
	egress_set_log_level(ex, EGRESS_LOG_DEBUG);
	reset();
	eg_log(ex, EGRESS_LOG_DEBUG, "d %s", arg());
	is_int(ncalls, 1, "level DEBUG: DEBUG delivered");
	is_str(last_msg, "d x", "DEBUG formatted");

	/* removing the callback disables logging again; the level stays */
	egress_set_log_cb(ex, NULL, NULL);
	reset();
	eg_log(ex, EGRESS_LOG_ERR, "%s", arg());
	is_int(nevals, 0, "callback removed: nothing evaluated");
	egress_set_log_cb(ex, on_log, NULL);
	ok(eg_log_enabled(ex, EGRESS_LOG_DEBUG),
	    "callback set again: the DEBUG level still applies");

	/* -1 (or below) delivers nothing */
	egress_set_log_level(ex, -5);
	reset();
	eg_log(ex, EGRESS_LOG_ERR, "%s", arg());
	is_int(nevals + ncalls, 0, "level -1: ERR dropped too");

	egress_free(ex);
	return done_testing();
}
