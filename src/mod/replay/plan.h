/*
 * plan.h: a replay plan (SPEC "### replay"), parsed from its INI text.
 * rp_plan_parse() does no I/O beyond what its caller gives it: the text,
 * the plan's folder, the caller's environment and whether the sandbox
 * module is built.  Checks that need the proxy configuration (the phases)
 * are rp_plan_check_phases()'s.
 */
#ifndef RP_PLAN_H
#define RP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "../common/strv.h"

#define RP_NAME_MAX	64
#define RP_MAX_STEPS	99	/* NN in steps/NN-NAME */
#define RP_PLAN_MAX	(1024 * 1024)	/* bytes of plan text */

enum rp_sandbox { RP_SB_DEFAULT = -1, RP_SB_BWRAP = 0, RP_SB_NONE = 1 };

struct rp_step {
	char		*name;
	int		 line;		/* of [step:NAME] */
	char		*phase;
	int		 phase_line;
	char		*run;
	int		 run_line;
	int		 shell;
	struct mc_strv	 argv;		/* split run, or /bin/sh -c RUN */
	unsigned	 timeout;	/* seconds; 0 none */
	int		 sandbox;	/* enum rp_sandbox, resolved */
	struct mc_strv	 rw, ro;	/* absolute */
	struct mc_strv	 env;		/* NAME=VALUE, resolved, merged */
	struct mc_strv	 secrets;	/* names */
	struct mc_strv	 capture;	/* relative paths, "patch" */
	int		 on_failure_continue;
};

struct rp_plan {
	char		*file;		/* as given */
	char		*dir;		/* the plan's folder, absolute */
	char		*base;		/* base name without .ini (%n) */
	char		*name;
	char		*config;	/* absolute, or NULL: embedded default */
	char		*workdir;	/* absolute */
	char		*record;	/* template, absolute (%n, %t) */
	unsigned	 deadline;
	int		 sandbox;
	int		 public;
	struct mc_strv	 env;		/* [replay] env, resolved */
	struct mc_strv	 secrets;	/* declared names */
	struct rp_step	*steps;
	size_t		 nsteps;
};

/*
 * Errors: "FILE:LINE: message" lines in an eg_buf of at most
 * RP_ERRS_MAX - 1 bytes (a line that does not fit whole is left out);
 * n counts them all.  A zeroed struct is an empty one.
 */
#define RP_ERRS_MAX	(64 * 1024)
struct rp_errs {
	struct eg_buf	 b;
	int		 n;
};

/*
 * Parse text[0..len) of the plan file (as named by file), relative
 * paths against dir (absolute).  getenv_fn gives the caller's variables
 * (NULL: none); has_sandbox: the default sandbox is bwrap.  NULL on any
 * error, every error appended to errs.
 */
struct rp_plan	*rp_plan_parse(const char *text, size_t len, const char *file,
		    const char *dir, const char *(*getenv_fn)(const char *),
		    int has_sandbox, const char *config_override,
		    struct rp_errs *errs);
void		 rp_plan_free(struct rp_plan *p);
/* Append "FILE:LINE: msg" (line 0: "FILE: msg"). */
void		 rp_errs_add(struct rp_errs *e, const char *file, int line,
		    const char *fmt, ...)
		    __attribute__((format(printf, 4, 5)));
void		 rp_errs_free(struct rp_errs *e);

/* Split a run = value into argv; -1 with a reason in why. */
int		 rp_split_argv(const char *s, struct mc_strv *out,
		    const char **why);
/* 1 if s is 1..64 of A-Z a-z 0-9 . _ -, not starting with . or - */
int		 rp_valid_name(const char *s, size_t n);

#endif
