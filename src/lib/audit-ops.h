/*
 * audit-ops.h: the hooks through which the audit writer (audit.c) chains
 * its lines, and the parameters of a chain.  The record module provides
 * them (module.h's struct eg_module .audit); the writer sees only these
 * types, never the module table.  Header only: types, no module of its
 * own.  Private to libegress.
 */
#ifndef EG_AUDIT_OPS_H
#define EG_AUDIT_OPS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Audit chaining (SPEC "### record"), for the module that provides it.
 * The core's writer (audit.c) stays ignorant of the chain's format: for
 * each chained audit file it makes one state with chain_new() and, under
 * that file's writer lock (one thread at a time, never concurrently for
 * one state), hands every formatted line to line() before its single
 * write(2), then tells commit() whether the write succeeded (a line that
 * did not reach the file must not advance the chain).  START lines open a
 * file (start()), CHECKPOINT lines close one and come from the writer's
 * own timer (checkpoint()).  Timestamps are Unix milliseconds; every
 * function that writes into buf returns the length with the final
 * newline, 0 when nothing was written (or no room).
 */
struct eg_chain_params {
	const char	*run;		/* 36-char UUID text */
	const void	*config;	/* the configuration's bytes (START's
					   config= is their SHA-256) */
	size_t		 config_len;
	const char	*key;		/* audit_key path; NULL: no checkpoints */
	unsigned	 checkpoint_lines;	/* 0: none by count */
};

struct eg_audit_ops {
	/* A new chain; NULL with a message in err (bad key, ...). */
	void	*(*chain_new)(const struct eg_chain_params *p, char *err,
		    size_t errlen);
	void	 (*chain_free)(void *st);
	/* Does the chain sign checkpoints (a key was given)? */
	int	 (*keyed)(void *st);
	/*
	 * The START line of a new file, chained (from 64 zeros).  prev: the
	 * last chain value of the file before (64 hex), or NULL for "-".
	 */
	size_t	 (*start)(void *st, int json, int64_t ts_ms, const char *prev,
		    char *buf, size_t cap);
	/*
	 * Chain the formatted line buf[0..len) (len includes its '
') in
	 * place, and append the CHECKPOINT line that checkpoint_lines makes
	 * due after it, if any.  The new length (both lines).
	 */
	size_t	 (*line)(void *st, int json, int64_t ts_ms, char *buf,
		    size_t len, size_t cap);
	/* A CHECKPOINT line now, when a line came since the last one (and a
	 * key is set); else 0. */
	size_t	 (*checkpoint)(void *st, int json, int64_t ts_ms, char *buf,
		    size_t cap);
	/* ok: what the last start()/line()/checkpoint() made is in the
	 * file (advance); else forget it. */
	void	 (*commit)(void *st, int ok);
	/* Chain value of the last committed line (64 hex, or 64 zeros) and
	 * the number of lines of the current file. */
	void	 (*head)(void *st, char head[65], uint64_t *lines);
	/* A new file begins (reopen): the line count and seq restart. */
	void	 (*new_file)(void *st);
	/* The chain value of an audit line (an existing file's last line,
	 * so that a restart continues its chain): 0, or -1 when it has none. */
	int	 (*line_head)(const char *line, size_t len, char head[65]);
};

#endif
