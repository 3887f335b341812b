/*
 * replay.h: the parts of the replay module (egressd replay) and what they
 * share.  replay.c parses the command line; supervisor.c runs plans and
 * resumes them; keeper.c is the per-step keeper process; status.c prints
 * --status; plan.c, proc.c and receipt.c are described in their headers.
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <stddef.h>

#include "plan.h"

#define RP_GRACE_MS	2000		/* SIGTERM to SIGKILL */
#define RP_POLL_MS	50		/* the supervisor's waits */
#define RP_PRIV		".private"	/* DIR's private folder (0700) */
#define RP_OUTPUT_CAP	(64ULL << 20)	/* stdout, stderr: bytes each */
#define RP_FILE_CAP	(64ULL << 20)	/* a captured file */

struct rp_opts {
	const char	*config;	/* -c */
	const char	*out;		/* -o */
	const char	*key;		/* --key */
	unsigned	 jobs;		/* -j */
	char *const	*plans;
	size_t		 nplans;
};

/* Exit statuses (SPEC "### replay"). */
enum {
	RP_EX_OK = 0, RP_EX_FAIL = 1, RP_EX_USAGE = 2, RP_EX_RUNTIME = 3,
	RP_EX_UNRESOLVED = 4
};

int	rp_keeper_main(int argc, char *argv[]);
int	rp_run_plans(const struct rp_opts *o);
/* force: --force --reason TEXT (NULL: none) */
int	rp_resume(const char *dir, const char *key, const char *force);
int	rp_cancel(const char *dir, const char *reason);
int	rp_status(const char *dir, int json);

/* Remove dirfd/name and everything under it, never following symlinks. */
int	rp_rmtree(int dirfd, const char *name);

#endif
