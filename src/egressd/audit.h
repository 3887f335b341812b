/*
 * audit.h: "egressd audit replay|suggest|verify" (SPEC "Audit tools
 * (core)"), the shared log reader and the small helpers both tools use.
 * The policy decisions themselves are libegress's own code (policy.c,
 * select.c, cfg.c), reached through the core archive egressd links.
 */
#ifndef EGRESSD_AUDIT_H
#define EGRESSD_AUDIT_H

#include <stdint.h>
#include <stdio.h>

#include "egress.h"
#include "reason.h"

#define AT_EX_OK	0
#define AT_EX_CHANGED	1
#define AT_EX_USAGE	2

#define AT_VAL_MAX	4096	/* an unescaped value (a line is shorter) */

/* "egressd audit ...": argv[0] is "audit".  Returns the exit status. */
int	audit_main(int argc, char *argv[]);
int	audit_suggest(int argc, char *argv[]);

/*
 * Read every line of the files in order ("-": standard input) and call
 * fn for each audit line; lines that are not audit lines are counted
 * and reported on standard error ("PROG: FILE: N lines skipped ...").
 * Returns 0, or -1 when a file cannot be read (reported).
 */
typedef void	at_line_fn(const struct egress_audit_line *, void *arg);
int	at_read_logs(const char *prog, char *const *files, int nfiles,
	    at_line_fn *fn, void *arg, uint64_t *unparsed);

struct eg_cfg;

/* The command line replay and suggest share: [-c FILE] [--phase NAME]
 * [--json] LOG... */
struct at_opts {
	const char	*prog;		/* "egressd: audit TOOL", in messages */
	const char	*usage;		/* for -h and after a usage error */
	int		 need_cfg;	/* -c is required */
	/* what at_opts_parse() found */
	const char	*cfgfile;	/* -c, or NULL */
	const char	*phase;		/* --phase, or NULL */
	int		 json;		/* --json */
	char *const	*logs;		/* at least one */
	int		 nlogs;
};
/*
 * Parse the options after argv[0] (the tool's name) into o.  Returns -1
 * to go on, else the exit status after -h (usage on standard output) or a
 * usage error (said, with the usage, on standard error).
 */
int	at_opts_parse(int argc, char *argv[], struct at_opts *o);
/* Load and check a configuration file; NULL after printing its errors
 * (FILE:LINE: message) on standard error. */
struct eg_cfg	*at_cfg_load(const char *file);

/*
 * Reason r's name in the audit log (reason=, report=), from the core's
 * reason table (reason.h), so that what the tools decide is spelt as
 * egressd spells it.  at_is_reason(): 1 when s (NULL: no) is the name of
 * one of the reasons rs, a list that ends with EG_R_NONE.
 */
const char	*at_reason(enum eg_reason r);
int		 at_is_reason(const char *s, const enum eg_reason *rs);

/* A value of l unescaped into buf (AT_VAL_MAX); NULL when absent. */
const char *at_get(const struct egress_audit_line *l, const char *key,
	    char *buf);
/*
 * The value of key in l when it is a valid name (session: a session
 * name, else a phase name, shared.h), unescaped into buf (AT_VAL_MAX);
 * NULL when absent, or when present but not a valid name (then *bad = 1).
 */
const char *at_name(const struct egress_audit_line *l, const char *key,
	    char *buf, int session, int *bad);
/* Print untrusted text so that it cannot drive a terminal (shared.h's
 * eg_put_esc(), as egressctl prints what a server answers). */
void	at_put_esc(FILE *fp, const char *s);
/* "PROG: N lines skipped (... not a valid name)" on stderr when n > 0. */
void	at_invalid_report(const char *prog, uint64_t n);
/* Print raw bytes as the text audit writer would (escaped, "-" empty). */
void	at_put_text(FILE *fp, const char *s);
/* Print a JSON string (quoted, eg_put_json_str()); NULL prints null. */
void	at_put_json(FILE *fp, const char *s);

/* A small string-keyed table of counters (insertion order kept). */
struct at_ent {
	char		*key;
	uint64_t	 count;
	uint64_t	 first;		/* order of first appearance */
	void		*data;		/* the caller's */
};
struct at_tab {
	struct at_ent	*ent;		/* open addressing */
	size_t		 cap, n;
};
/* The entry for key (created with count 0), or NULL when out of memory. */
struct at_ent	*at_tab_get(struct at_tab *, const char *key);
/* Every entry, in an allocated array the caller frees (n entries). */
struct at_ent	**at_tab_list(const struct at_tab *);
void		 at_tab_free(struct at_tab *);

#endif
