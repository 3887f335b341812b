/*
 * cmd.h: egressctl's commands, each one admin API call and its printing
 * (cmd.c: status, phase, phases, audit, reload; sessions.c: session
 * ls|new|show|rm).  Each returns the exit status.
 */
#ifndef EGRESSCTL_CMD_H
#define EGRESSCTL_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "json.h"

/*
 * Call a route; on 2xx parse the answer into *v (unless --json printed
 * it).  Returns EX_OK with *done set when nothing is left to print, else
 * the exit status of a refusal or failure, already reported.
 */
int	call(const char *what, const char *method, const char *path,
	    const char *body, struct jv *v, int *done);
/* Report a non-2xx answer; returns EX_REFUSED. */
int	refused(const char *what, const struct resp *r);

int	cmd_status(void);
int	cmd_phase_show(void);
int	cmd_phase_set(const char *name);
int	cmd_phases(void);
int	cmd_audit(uint64_t since, unsigned limit, int follow);
int	cmd_reload(void);

/* session ls | new NAME | show NAME | rm NAME (w: the words after it). */
int	cmd_session(const char *const *w, size_t n, const char *phase,
	    const char *listen, int has_ttl, uint64_t ttl);
int	cmd_session_show(const char *name);
/* The usage error for a name that is not a session name. */
int	name_err(const char *name);

#endif
