/*
 * receipt.h: the JSON files of a record directory (run.json, each step's
 * receipt.json, the keeper's keeper.json and exit.json), written
 * atomically (fsutil's mc_write_json: temp file, fsync, rename, fsync of
 * the folder) and read back for --resume and --status.
 */
#ifndef RP_RECEIPT_H
#define RP_RECEIPT_H

#include <sys/types.h>
#include <stdint.h>

#include <jansson.h>

#include "plan.h"

#define RP_TS_MAX	64

/* A step's use of one credential route (SPEC "Routes", Meter). */
#define RP_USAGE_MAX	16	/* routes counted per step */
struct rp_usage {
	char		route[65];
	uint64_t	requests, tokens_in, tokens_out;
};

/*
 * A step's state (receipt.json "state"), in the order a step goes
 * through them (step.c); step.c's step_set_state() is the one writer,
 * rp_step_state_name() the one enum -> string table (receipt.c).
 */
enum rp_step_state {
	RP_SS_NONE,		/* "": a receipt without a known state */
	RP_SS_PREPARED,		/* receipt made, nothing started */
	RP_SS_STARTING,		/* about to claim launch.claim */
	RP_SS_RUNNING,		/* the keeper's identity recorded */
	RP_SS_CAPTURING,	/* the exit status known; capturing */
	RP_SS_CAPTURED,		/* final */
	RP_SS_SKIPPED		/* final: never run */
};

struct rp_receipt {
	char		step[RP_NAME_MAX + 1];
	int		index;
	char		phase[RP_NAME_MAX + 1];
	enum rp_step_state state;
	char		command_sha256[65];
	long		pid;		/* 0: null */
	char		pid_start[80];	/* "": null */
	char		started[RP_TS_MAX], ended[RP_TS_MAX];	/* "": null */
	int		has_exit, exit_code;
	int		has_signal, signal;
	char		termination[32];	/* "": null */
	uint64_t	allowed, blocked, failed;
	char		note[256];	/* "": none */
	struct rp_usage	usage[RP_USAGE_MAX];	/* "usage": per route */
	size_t		nusage;
};

struct rp_run {
	char		name[RP_NAME_MAX + 1];
	char		id[37];
	char		started[RP_TS_MAX], ended[RP_TS_MAX];
	char		state[16];	/* running finished cancelled unresolved */
	int		has_exit, exit;
	unsigned	deadline;
	char		cancel_reason[512];	/* "": null */
	char		force_reason[512];	/* --force; "": null */
	int		public;
	/* the record directory's identity when it was made (has_dirid 0:
	 * a run.json from before it was recorded) */
	int		has_dirid;
	unsigned long long dir_dev, dir_ino;
	long		sup_pid;
	char		sup_start[80];
	int		steps;
};

/* What the keeper writes: exit.json. */
struct rp_exit {
	int		has_exit, exit_code;
	int		has_signal, signal;
	char		termination[32];
	char		started[RP_TS_MAX], ended[RP_TS_MAX];
	long		pid;		/* the command's */
};

/* UTC ISO 8601 with milliseconds, of now or of ms since the epoch. */
void	rp_ts_now(char out[RP_TS_MAX]);
void	rp_ts_of(int64_t ms, char out[RP_TS_MAX]);
int64_t	rp_ts_parse(const char *ts);	/* ms, or -1 */

/* "prepared", ...; "" for RP_SS_NONE.  The string's state, RP_SS_NONE
 * when it names none. */
const char	*rp_step_state_name(enum rp_step_state s);
enum rp_step_state rp_step_state_of(const char *name);

/* sha256 of the canonical JSON array of argv. */
void	rp_command_sha256(const struct mc_strv *argv, char out[65]);

int	rp_receipt_write(int stepfd, const struct rp_receipt *r,
	    const struct rp_step *st, const char *const *envp, int public);
int	rp_receipt_read(int stepfd, struct rp_receipt *r);
json_t	*rp_receipt_json_read(int stepfd);	/* for --status --json */
int	rp_run_write(int dirfd, const struct rp_run *r);
int	rp_run_read(int dirfd, struct rp_run *r);
int	rp_exit_write(int stepfd, const struct rp_exit *x);
int	rp_exit_read(int stepfd, struct rp_exit *x);	/* -1: none */
/* keeper.json: the keeper's identity, and its command's once started
 * (cpid 0: not yet). */
int	rp_keeper_write(int stepfd, pid_t pid, const char *start,
	    pid_t cpid, const char *cstart);
int	rp_keeper_read(int stepfd, long *pid, char *start, size_t len,
	    long *cpid, char *cstart, size_t clen);

#endif
