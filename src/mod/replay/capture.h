/*
 * capture.h: what a replay keeps of a step (stdout, stderr, declared
 * files, the patch), redacted, with its manifest and gaps.  Used by the
 * supervisor (replay.c); interfaces.md section 6.
 *
 * Gap names written to capture.json "gaps" (sorted, each once):
 *   output_truncated:stdout, output_truncated:stderr
 *	the keeper capped the raw output (its "truncated" file says so)
 *   output_truncated		raw stdout/stderr longer than max_file
 *				after redaction (the copy is its head)
 *   not_captured:PATH		PATH is absolute, has "..", is reached
 *				through a symlink, is not a regular file,
 *				is missing or could not be read
 *   file_truncated:PATH	PATH (redacted) is longer than max_file;
 *				files/PATH is its first max_file bytes
 *   patch_unavailable		not a git work tree at run start, git not
 *				found, or git failed (err says why)
 *   secret_in_patch		the patch held a secret value: not kept
 *   missing:stdout, missing:stderr  the keeper left no raw file
 * "redacted" lists the paths (relative to the step folder: "stdout",
 * "files/report.xml") whose copy had at least one replacement.
 */
#ifndef RP_CAPTURE_H
#define RP_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct rp_secret { const char *name; const char *val; size_t len; };	/* len >= 8 only */

/* At run start, before any step: remember workdir's tree for `patch`
 * (tracked + untracked, ignored left out) in privfd; not a git work
 * tree: remembered too (the patch is then the gap patch_unavailable). */
int	rp_patch_begin(const char *workdir, int privfd, char *err, size_t errlen);

struct rp_capture {
	const char		 *workdir;	/* absolute */
	int			  stepfd;	/* steps/NN-NAME, O_DIRECTORY */
	int			  privfd;	/* the run's private folder */
	int			  rawfd;	/* folder holding the keeper's raw
						   "stdout", "stderr" (and the
						   file "truncated": lines
						   "stdout"/"stderr" capped) */
	char *const		 *files;	/* the step's capture = words */
	size_t			  nfiles;	/* "patch" among them = the patch */
	const struct rp_secret	 *secrets;	/* every [replay] secret */
	size_t			  nsecrets;
	uint64_t		  max_file;	/* bytes per captured file */
	int			  keeper_died;	/* no exit record: the output
						   after its death is lost
						   (gap keeper_died) */
};
/*
 * Capture a step: stdout, stderr (from rawfd, redacted), files/… (each
 * a regular file under workdir reached without symlinks or "..",
 * redacted), patch; then manifest.json and capture.json, atomically.
 * Idempotent: after a crash it can run again and produce the same
 * result; the raw files are removed only once both JSON files are
 * durable.  0 ok, -1 error in err (capture.json still written when
 * possible, with what could not be captured as gaps).
 */
int	rp_capture_step(const struct rp_capture *c, char *err, size_t errlen);

/* Streaming redaction (also for anything else that copies bytes). */
struct rp_redactor;
struct rp_redactor *rp_redactor_new(const struct rp_secret *s, size_t n);
void	rp_redactor_free(struct rp_redactor *);
/* Copy in to out, replacing every secret value with [REDACTED], also when
 * it spans reads; *hits counts replacements.  0 ok, -1 errno set. */
int	rp_redact_fd(struct rp_redactor *, int in, int out, uint64_t *hits);

#endif
