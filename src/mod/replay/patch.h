/*
 * patch.h: the `patch` capture (SPEC "### replay"): the binary git diff
 * between the work tree recorded at run start (tracked and untracked
 * files, ignored ones left out) and the tree at capture time.
 *
 * Git runs outside the sandbox on a tree the step could write, so it is
 * never given anything the step wrote to obey: a private GIT_DIR in the
 * run's private folder (our config, our info/attributes and a copy of
 * the repository's info/exclude made at run start), a private index and
 * object directory (the repository's objects only as an alternate),
 * GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, hooks, fsmonitor,
 * pager, external diff, textconv and filters off, an environment made
 * from nothing, the git binary found at run start by an absolute PATH
 * entry outside the tree, run with posix_spawn (no shell).
 */
#ifndef RP_PATCH_H
#define RP_PATCH_H

#include <stddef.h>

/* rp_patch_begin() is in capture.h. */

/*
 * Write the patch into out (a regular file, at its offset) and a text
 * diff of the same change (binary files as text, for the secret scan)
 * into scan.  0: written; 1: unavailable, why says so ("not a git work
 * tree", "git not found", "git diff-tree failed: ..."); -1: error in
 * why (no baseline: rp_patch_begin() not called).
 */
int	rp_patch_make(int privfd, int out, int scan, char *why, size_t whylen);

#endif
