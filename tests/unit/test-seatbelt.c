/*
 * test-seatbelt.c: the macOS Seatbelt profile of "egressd run", checked
 * as text (sandbox-exec cannot run here): deny by default, network only
 * to the proxy port, home unreadable, writes only to the working
 * directories, hostile paths quoted or refused.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../src/mod/sandbox/sandbox.h"

/* Number of occurrences of needle in hay. */
static int
count(const char *hay, const char *needle)
{
	const char *p;
	int n = 0;

	if (hay == NULL)
		return 0;
	for (p = strstr(hay, needle); p != NULL;
	    p = strstr(p + strlen(needle), needle))
		n++;
	return n;
}

/* Offset of needle in hay, or -1. */
static long
pos(const char *hay, const char *needle)
{
	const char *p;

	if (hay == NULL)
		return -1;
	p = strstr(hay, needle);
	return p == NULL ? -1 : (long)(p - hay);
}

int
main(void)
{
	char *rw1[] = { "/Users/ann/src/proj", "/private/tmp/run.1", NULL };
	char *ro1[] = { "/Users/ann/.cache/pip", NULL };
	char *bad1[] = { "relative/dir", NULL };
	char *bad2[] = { "/tmp/a\nb", NULL };
	char *q1[] = { "/Users/ann/we\"ird\\dir", NULL };
	struct mc_strv rw = { rw1, 2, 3, 0 };
	struct mc_strv ro = { ro1, 1, 2, 0 };
	struct mc_strv bad = { bad1, 1, 2, 0 };
	struct mc_strv ctl = { bad2, 1, 2, 0 };
	struct mc_strv quo = { q1, 1, 2, 0 };
	struct mc_strv none = { NULL, 0, 0, 0 };
	char *longv[41];
	struct mc_strv longsv = { NULL, 0, 41, 0 };
	size_t i;
	struct sb_seatbelt x;
	char err[256], *p;

	memset(&x, 0, sizeof(x));
	x.home = "/Users/ann";
	x.rw = &rw;
	x.ro = &ro;
	x.port = 41234;
	err[0] = '\0';
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p != NULL, "profile generated (%s)", err);
	ok(pos(p, "(version 1)") == 0 || pos(p, "(version 1)") > 0,
	    "has (version 1)");
	ok(pos(p, "(deny default)") >= 0, "deny by default");
	ok(pos(p, "(deny default)") < pos(p, "(allow"),
	    "deny default comes before every allow");
	is_int(count(p, "(allow network"), 1, "exactly one network rule");
	ok(pos(p, "(allow network-outbound (remote ip \"localhost:41234\"))")
	    >= 0, "network only to localhost:41234");
	ok(pos(p, "network-bind") == -1 && pos(p, "network-inbound") == -1,
	    "no bind, no inbound");
	ok(pos(p, "(allow network*") == -1 && pos(p, "(allow default") == -1,
	    "no blanket network or default allow");
	ok(pos(p, "mDNSResponder\")") == -1,
	    "the system resolver is not reachable");
	ok(pos(p, "(allow file-read*)") >= 0, "reads allowed in general");
	ok(pos(p, "(deny file-read* (subpath \"/Users/ann\"))") >
	    pos(p, "(allow file-read*)"), "home denied after the general read");
	ok(pos(p, "(subpath \"/Users/ann/src/proj\")") >
	    pos(p, "(deny file-read* (subpath \"/Users/ann\"))"),
	    "working dir readable again after the home deny");
	ok(pos(p, "(subpath \"/Users/ann/.cache/pip\")") >
	    pos(p, "(deny file-read* (subpath \"/Users/ann\"))"),
	    "read-only path readable again");
	is_int(count(p, "(allow file-write*"), 1, "one file-write* rule");
	ok(pos(p, "(allow file-write*\n    (subpath \"/Users/ann/src/proj\")"
	    "\n    (subpath \"/private/tmp/run.1\"))") >= 0,
	    "writes only to the working dirs");
	ok(pos(p, "(allow file-write*\n    (subpath \"/Users/ann/.cache")
	    == -1, "read-only path is not writable");
	ok(pos(p, "(literal \"/dev/null\")") >= 0, "/dev/null writable");
	free(p);

	/* no home: no deny line */
	x.home = NULL;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p != NULL && pos(p, "(deny file-read*") == -1,
	    "without home no read deny");
	free(p);
	x.home = "/Users/ann";

	/* quoting */
	x.rw = &quo;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p != NULL && pos(p, "(subpath \"/Users/ann/we\\\"ird\\\\dir\")")
	    >= 0, "quote and backslash escaped");
	free(p);

	/* refusals */
	x.rw = &bad;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL && strstr(err, "absolute") != NULL,
	    "relative path refused (%s)", err);
	free(p);
	x.rw = &ctl;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL && strstr(err, "control") != NULL,
	    "control character refused (%s)", err);
	free(p);
	x.rw = &none;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL, "no working dir refused (%s)", err);
	free(p);
	x.rw = &rw;
	x.ro = &bad;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL, "relative read-only path refused");
	free(p);
	x.ro = &ro;
	x.home = "Users/ann";
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL, "relative home refused");
	free(p);
	x.home = "/Users/ann";
	x.port = 0;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL && strstr(err, "port") != NULL, "port 0 refused");
	free(p);
	x.port = 65535;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p != NULL && pos(p, "\"localhost:65535\"") >= 0, "port 65535");
	free(p);

	/* the cap: SB_SEATBELT_MAX bytes of profile, paths included */
	for (i = 0; i < nitems(longv) - 1; i++) {
		longv[i] = malloc(4001);
		if (longv[i] == NULL)
			return 1;
		memset(longv[i], 'a', 4000);
		longv[i][0] = '/';
		longv[i][4000] = '\0';
	}
	longv[i] = NULL;
	longsv.v = longv;
	longsv.n = 20;		/* 20 * 2 * 4000 bytes: under the cap */
	x.rw = &longsv;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p != NULL && strlen(p) > 160000 && strlen(p) < SB_SEATBELT_MAX &&
	    pos(p, "\"localhost:65535\"))\n") == (long)strlen(p) - 20,
	    "20 paths of 4000 bytes: a whole profile (%zu bytes)",
	    p == NULL ? 0 : strlen(p));
	free(p);
	longsv.n = nitems(longv) - 1;	/* 40 of them: past the cap */
	err[0] = '\0';
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p == NULL && strstr(err, "profile longer than 262144 bytes") !=
	    NULL, "40 paths of 4000 bytes: refused at the cap (%s)", err);
	free(p);
	longsv.n = 1;
	longv[0][2000] = '\0';
	memset(longv[0] + 1, '"', 1999);	/* 2000 bytes, 3999 quoted */
	x.ro = &longsv;
	p = sb_seatbelt_profile(&x, err, sizeof(err));
	ok(p != NULL && count(p, "\\\"") == 3 * 1999,
	    "a path of quotes is escaped whole, every time (%d)",
	    count(p, "\\\""));
	free(p);
	for (i = 0; i < nitems(longv) - 1; i++)
		free(longv[i]);
	return done_testing();
}
