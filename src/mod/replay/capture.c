/*
 * capture.c: rp_capture_step() (capture.h): what a replay keeps of a
 * step, redacted, with manifest.json and capture.json.
 *
 * Order, so that a crash anywhere leaves something a second run turns
 * into the same result: every copy is a temp file renamed into place;
 * manifest.json, then capture.json; the keeper's raw files are removed
 * last.  Both JSON files present means "captured": a later call only
 * finishes the removal.
 */
#include "config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../common/fsutil.h"
#include "alloc.h"
#include "capture.h"
#include "patch.h"
#include "redact.h"
#include "../common/fsutil.h"

#define RP_PATH_MAX	1024	/* a capture word */

struct cap {
	const struct rp_capture	*c;
	struct rp_redactor	*r;
	json_t			*gaps, *redacted, *files, *notes;
	char			*err;
	size_t			 errlen;
	int			 failed;
};

static void
fail(struct cap *k, const char *what, const char *path, int e)
{
	if (!k->failed && k->err != NULL && k->errlen > 0)
		snprintf(k->err, k->errlen, "capture: %s%s%s: %s", what,
		    path != NULL ? " " : "", path != NULL ? path : "",
		    strerror(e));
	k->failed = 1;
}

/* Append s to the array a unless there. */
static void
add_once(struct cap *k, json_t *a, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return;
	if (json_array_append_new(a, json_string(s)) < 0)
		fail(k, "out of memory", NULL, ENOMEM);
}

static void
gap(struct cap *k, const char *kind, const char *path)
{
	char buf[RP_PATH_MAX + 64];

	if (path != NULL)
		snprintf(buf, sizeof(buf), "%s:%s", kind, path);
	else
		snprintf(buf, sizeof(buf), "%s", kind);
	add_once(k, k->gaps, buf);
}

/*
 * Copy in (redacted, capped at max) to dfd/name through a temp file,
 * fsync, rename, fsync the directory.  0 or -1 with errno.
 */
struct redact_job {
	struct rp_redactor	*r;
	int			 in;
	uint64_t		 max;
	uint64_t		*hits;
	int			*trunc;
};

static int
fill_redacted(int out, void *arg)
{
	struct redact_job *rj = arg;

	return rp_redact_fd_max(rj->r, rj->in, out, rj->max, rj->hits,
	    rj->trunc);
}

static int
copy_redacted(struct rp_redactor *r, int in, int dfd, const char *name,
    uint64_t max, uint64_t *hits, int *trunc)
{
	struct redact_job rj = { r, in, max, hits, trunc };
	char tmp[NAME_MAX + 1];
	struct stat st;
	int out;

	if (strlen(name) > NAME_MAX - 8) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode)) {
		errno = S_ISLNK(st.st_mode) ? ELOOP : EEXIST;
		return -1;
	}
	snprintf(tmp, sizeof(tmp), ".%s.cap", name);
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return -1;
	out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (out < 0)
		return -1;
	if (mc_tmp_finish(dfd, tmp, name, out, fill_redacted, &rj) < 0 ||
	    fsync(dfd) < 0)
		return -1;
	return 0;
}

/* Same directory (the keeper may write its raw files in the step's). */
static int
same_dir(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The keeper's "truncated" file names stdout and/or stderr. */
static int
keeper_truncated(int rawfd, const char *name)
{
	char buf[256], *p, *q;
	ssize_t n;
	int fd;

	if ((fd = mc_open_beneath(rawfd, "truncated", O_RDONLY)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (p = buf; *p != '\0'; p = q) {
		q = p + strcspn(p, "\n");
		if ((size_t)(q - p) == strlen(name) &&
		    memcmp(p, name, (size_t)(q - p)) == 0)
			return 1;
		if (*q == '\n')
			q++;
	}
	return 0;
}

static void
capture_output(struct cap *k, const char *name)
{
	const struct rp_capture *c = k->c;
	uint64_t hits = 0;
	int in, trunc = 0, e;

	in = mc_open_beneath(c->rawfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (in < 0 && errno == ENOENT) {
		/* no raw output (launch failure): an empty file, a gap */
		gap(k, "output_missing", name);
		if (mc_write_atomic(c->stepfd, name, "", 0, 0644) < 0)
			fail(k, "write", name, errno);
		else
			add_once(k, k->files, name);
		return;
	}
	if (in < 0) {
		e = errno;
		gap(k, "output_missing", name);
		fail(k, "open raw", name, e);
		return;
	}
	if (copy_redacted(k->r, in, c->stepfd, name, c->max_file, &hits,
	    &trunc) < 0) {
		e = errno;
		close(in);
		gap(k, "output_missing", name);
		fail(k, "copy", name, e);
		return;
	}
	close(in);
	if (trunc || keeper_truncated(c->rawfd, name))
		gap(k, "output_truncated", name);
	if (hits > 0)
		add_once(k, k->redacted, name);
	add_once(k, k->files, name);
}

/* A capture word: relative, no "..", no empty or "." components. */
static int
word_ok(const char *w)
{
	const char *p, *q;
	size_t n;

	if (*w == '\0' || *w == '/' || strlen(w) >= RP_PATH_MAX)
		return 0;
	for (p = w; ; p = q + 1) {
		q = p + strcspn(p, "/");
		n = (size_t)(q - p);
		if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (*q == '\0')
			return 1;
	}
}

/* stepfd/files/DIRS of w, made as needed; the fd of the last directory,
 * *base set to w's last component. */
static int
dest_dir(int stepfd, const char *w, const char **base)
{
	char comp[NAME_MAX + 1];
	const char *p, *q;
	int cur, next;

	/* a directory made here is fsynced into its parent, so that the
	 * manifest never outlives the entries of what it lists */
	if (mkdirat(stepfd, "files", 0755) == 0) {
		if (fsync(stepfd) < 0)
			return -1;
	} else if (errno != EEXIST)
		return -1;
	if ((cur = mc_open_beneath(stepfd, "files", O_RDONLY | O_DIRECTORY)) < 0)
		return -1;
	for (p = w; (q = strchr(p, '/')) != NULL; p = q + 1) {
		int made;

		memcpy(comp, p, (size_t)(q - p));
		comp[q - p] = '\0';
		made = mkdirat(cur, comp, 0755) == 0;
		if ((!made && errno != EEXIST) || (made && fsync(cur) < 0) ||
		    (next = mc_open_beneath(cur, comp,
		    O_RDONLY | O_DIRECTORY)) < 0) {
			int e = errno;

			close(cur);
			errno = e;
			return -1;
		}
		close(cur);
		cur = next;
	}
	*base = p;
	return cur;
}

static void
capture_file(struct cap *k, int wfd, const char *w)
{
	const struct rp_capture *c = k->c;
	char dst[RP_PATH_MAX + 8];
	struct stat s1, s2;
	const char *base;
	uint64_t hits = 0;
	int pfd, in, dfd, trunc = 0;

	if (!word_ok(w)) {
		gap(k, "not_captured", w);
		return;
	}
	/* look first (O_PATH: a fifo or a device is not opened) */
	if ((pfd = mc_open_beneath(wfd, w, O_PATH)) < 0) {
		gap(k, "not_captured", w);
		return;
	}
	if (fstat(pfd, &s1) < 0 || !S_ISREG(s1.st_mode)) {
		close(pfd);
		gap(k, "not_captured", w);
		return;
	}
	close(pfd);
	in = mc_open_beneath(wfd, w, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (in < 0 || fstat(in, &s2) < 0 || !S_ISREG(s2.st_mode) ||
	    s1.st_dev != s2.st_dev || s1.st_ino != s2.st_ino) {
		if (in >= 0)
			close(in);
		gap(k, "not_captured", w);	/* swapped meanwhile */
		return;
	}
	snprintf(dst, sizeof(dst), "files/%s", w);
	if ((dfd = dest_dir(c->stepfd, w, &base)) < 0) {
		fail(k, "mkdir", dst, errno);
		close(in);
		gap(k, "not_captured", w);
		return;
	}
	if (copy_redacted(k->r, in, dfd, base, c->max_file, &hits,
	    &trunc) < 0) {
		fail(k, "copy", dst, errno);
		gap(k, "not_captured", w);
	} else {
		if (trunc)
			gap(k, "file_truncated", w);
		if (hits > 0)
			add_once(k, k->redacted, dst);
		add_once(k, k->files, dst);
	}
	close(dfd);
	close(in);
}

/* A message (git's) holding a secret value is not written as it is. */
static int
holds_secret(const struct rp_capture *c, const char *msg)
{
	size_t i, len = strlen(msg);

	for (i = 0; i < c->nsecrets; i++)
		if (c->secrets[i].len >= RP_REDACT_MIN &&
		    memmem(msg, len, c->secrets[i].val, c->secrets[i].len) != NULL)
			return 1;
	return 0;
}

static int
tmp_at(int dfd, const char *name)
{
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -1;
	return openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
}

static void
capture_patch(struct cap *k)
{
	const struct rp_capture *c = k->c;
	char why[768];
	uint64_t hits = 0, h2 = 0;
	int out, scan, nul, rc, trunc = 0;

	out = tmp_at(c->privfd, "capture-patch.tmp");
	scan = tmp_at(c->privfd, "capture-scan.tmp");
	nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (out < 0 || scan < 0 || nul < 0) {
		fail(k, "patch temp", NULL, errno);
		gap(k, "patch_unavailable", NULL);
		goto out;
	}
	why[0] = '\0';
	rc = rp_patch_make(c->privfd, out, scan, why, sizeof(why));
	if (rc != 0) {
		gap(k, "patch_unavailable", NULL);
		json_object_set_new(k->notes, "patch", json_string(
		    holds_secret(c, why) ? "git failed (its message held a "
		    "secret value)" : why));
		goto out;
	}
	/* a secret in either form (binary hunks are compressed: the text
	 * form shows them) and the patch is not kept */
	if (lseek(out, 0, SEEK_SET) < 0 || lseek(scan, 0, SEEK_SET) < 0 ||
	    rp_redact_fd(k->r, out, nul, &hits) < 0 ||
	    rp_redact_fd(k->r, scan, nul, &h2) < 0) {
		fail(k, "patch scan", NULL, errno);
		gap(k, "patch_unavailable", NULL);
		goto out;
	}
	if (hits + h2 > 0) {
		gap(k, "secret_in_patch", NULL);
		if (unlinkat(c->stepfd, "patch", 0) < 0 && errno != ENOENT)
			fail(k, "unlink", "patch", errno);
		goto out;
	}
	if (lseek(out, 0, SEEK_SET) < 0 ||
	    copy_redacted(k->r, out, c->stepfd, "patch", c->max_file, &hits,
	    &trunc) < 0) {
		fail(k, "copy", "patch", errno);
		gap(k, "patch_unavailable", NULL);
		goto out;
	}
	if (trunc)
		gap(k, "file_truncated", "patch");
	add_once(k, k->files, "patch");
out:
	if (out >= 0)
		close(out);
	if (scan >= 0)
		close(scan);
	if (nul >= 0)
		close(nul);
	unlinkat(c->privfd, "capture-patch.tmp", 0);
	unlinkat(c->privfd, "capture-scan.tmp", 0);
}

static json_t *
make_manifest(struct cap *k)
{
	json_t *m = json_array(), *v;
	char hex[65];
	uint64_t size;
	size_t i;
	int fd;

	if (m == NULL)
		return NULL;
	json_array_foreach(k->files, i, v) {
		const char *p = json_string_value(v);

		if ((fd = mc_open_beneath(k->c->stepfd, p, O_RDONLY)) < 0 ||
		    mc_sha256_fd(fd, hex, &size) < 0) {
			fail(k, "digest", p, errno);
			if (fd >= 0)
				close(fd);
			continue;
		}
		close(fd);
		if (json_array_append_new(m, json_pack("{s:s,s:I,s:s}",
		    "path", p, "size", (json_int_t)size, "sha256", hex)) < 0)
			fail(k, "out of memory", NULL, ENOMEM);
	}
	return m;
}

static void
remove_raw(const struct rp_capture *c)
{
	if (!same_dir(c->rawfd, c->stepfd)) {
		unlinkat(c->rawfd, "stdout", 0);
		unlinkat(c->rawfd, "stderr", 0);
	}
	unlinkat(c->rawfd, "truncated", 0);
}

static int
exists(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}

int
rp_capture_step(const struct rp_capture *c, char *err, size_t errlen)
{
	struct cap k;
	json_t *manifest = NULL, *cj = NULL;
	size_t i;
	int wfd = -1, want_patch = 0;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (exists(c->stepfd, "manifest.json") &&
	    exists(c->stepfd, "capture.json")) {
		remove_raw(c);		/* captured before a crash */
		return 0;
	}
	memset(&k, 0, sizeof(k));
	k.c = c;
	k.err = err;
	k.errlen = errlen;
	k.gaps = json_array();
	k.redacted = json_array();
	k.files = json_array();
	k.notes = json_object();
	k.r = rp_redactor_new(c->secrets, c->nsecrets);
	if (k.gaps == NULL || k.redacted == NULL || k.files == NULL ||
	    k.notes == NULL || k.r == NULL) {
		fail(&k, "out of memory", NULL, ENOMEM);
		goto out;
	}
	capture_output(&k, "stdout");
	capture_output(&k, "stderr");
	/* the keeper copied the output; dead, what came after is lost */
	if (c->keeper_died)
		gap(&k, "keeper_died", NULL);
	wfd = open(c->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; i < c->nfiles; i++) {
		if (strcmp(c->files[i], "patch") == 0) {
			want_patch = 1;
			continue;
		}
		if (wfd < 0) {
			gap(&k, "not_captured", c->files[i]);
			continue;
		}
		capture_file(&k, wfd, c->files[i]);
	}
	if (wfd < 0 && c->nfiles > 0)
		fail(&k, "workdir", c->workdir, errno);
	if (want_patch)
		capture_patch(&k);
	if ((manifest = make_manifest(&k)) == NULL ||
	    mc_write_json(c->stepfd, "manifest.json", manifest) < 0)
		fail(&k, "write", "manifest.json", errno);
	if (json_object_size(k.notes) > 0)
		cj = json_pack("{s:O,s:O,s:O}", "gaps", k.gaps, "redacted",
		    k.redacted, "notes", k.notes);
	else
		cj = json_pack("{s:O,s:O}", "gaps", k.gaps, "redacted",
		    k.redacted);
	if (cj == NULL || mc_write_json(c->stepfd, "capture.json", cj) < 0)
		fail(&k, "write", "capture.json", cj == NULL ? ENOMEM : errno);
	else if (!k.failed && manifest != NULL)
		remove_raw(c);
out:
	if (wfd >= 0)
		close(wfd);
	json_decref(cj);
	json_decref(manifest);
	json_decref(k.gaps);
	json_decref(k.redacted);
	json_decref(k.files);
	json_decref(k.notes);
	rp_redactor_free(k.r);
	return k.failed ? -1 : 0;
}
