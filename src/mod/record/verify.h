/*
 * verify.h: checking chained audit logs (SPEC "### record", "egressd
 * audit verify"), streaming and in constant memory.  Also used by
 * "egressd record check" (record-run).
 */
#ifndef REC_VERIFY_H
#define REC_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#define REC_LINE_MAX	16384	/* a longer line is a break */

struct rec_result {
	uint64_t	lines;		/* lines of the last file */
	char		head[65];	/* chain value of the last line */
	char		run[37];	/* run= of the first START */
	int		broken;		/* 0 intact */
	char		where[512];	/* "LOG:LINE: reason" of the first break */
	uint64_t	unsigned_tail;	/* lines after the last checkpoint */
	uint64_t	checkpoints;	/* checkpoints of the last file */
};

/*
 * Verify files in order (START continuity across them); pubkey NULL:
 * signatures not checked; with pubkey, a file without a checkpoint is a
 * break (a log written unsigned, or stripped of its checkpoints).  0
 * done (see r->broken), -1 error in err (a file that cannot be read, a
 * bad public key).
 */
int	rec_verify_files(const char *const *paths, size_t n, const char *pubkey,
	    struct rec_result *r, char *err, size_t errlen);
/* The same over open descriptors (read from their offset, not closed);
 * names[i] is fds[i]'s name in messages. */
int	rec_verify_fds(const int *fds, const char *const *names, size_t n,
	    const char *pubkey, struct rec_result *r, char *err,
	    size_t errlen);

/* Per file, for the command line: called once per file when it is done
 * (where is "" when the file is intact). */
struct rec_file_report {
	const char	*path;
	uint64_t	 lines;
	uint64_t	 checkpoints;
	uint64_t	 unsigned_tail;
	const char	*where;
};
int	rec_verify_files_cb(const char *const *paths, size_t n,
	    const char *pubkey, struct rec_result *r,
	    void (*cb)(const struct rec_file_report *, void *), void *arg,
	    char *err, size_t errlen);

/* Verify an in-memory log (the fuzz target): as one file. */
int	rec_verify_buf(const char *buf, size_t len, struct rec_result *r);

#endif
