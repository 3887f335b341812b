/*
 * seal.c: "egressd record seal [--key KEY] DIR".  Reads a replay's record
 * directory (run.json, steps/NN-NAME/{receipt,manifest}.json, audit.log,
 * plan.ini, config.ini: the record directory of SPEC "### replay")
 * and writes DIR/record.json, the canonical run record, and with a key
 * DIR/record.sig, the base64 of the DER ECDSA P-256/SHA-256 signature of
 * record.json's bytes.  Privacy: the receipts pass through
 * rec_receipt_filter() (commands and environment values only as sha256
 * unless the run is public; secrets never, not even hashed).  Usable on
 * its own (after a --resume, or to re-sign with another key); replay
 * calls it at the end of every run through egress_module_main().
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "egress.h"
#include "alloc.h"
#include "canon.h"
#include "../common/fsutil.h"
#include "record.h"
#include "seal.h"

/* record check reads every record.json that seal writes */
_Static_assert(REC_CANON_MAX == REC_JSON_MAX, "record.json's two caps");

static const char seal_usage[] =
"usage: egressd record seal [--key KEY] [--fd N] DIR\n";

/* --- shared helpers ----------------------------------------------------- */

const char *
rec_ftype(mode_t m)
{
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	return "not a regular file";
}

int
rec_open_reg(int dirfd, const char *path, mode_t *type)
{
	struct stat s1, s2;
	int pfd, fd;

	if (type != NULL)
		*type = 0;
	/* look first: O_PATH opens a FIFO or a device without opening it */
	if ((pfd = mc_open_beneath(dirfd, path, O_PATH)) == -1)
		return -1;
	if (fstat(pfd, &s1) == -1) {
		mc_close_errno(pfd);
		return -1;
	}
	close(pfd);
	if (type != NULL)
		*type = s1.st_mode & S_IFMT;
	if (!S_ISREG(s1.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	/* O_NONBLOCK: a FIFO swapped in meanwhile does not wait either */
	fd = mc_open_beneath(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd == -1)
		return -1;
	if (fstat(fd, &s2) == -1 || !S_ISREG(s2.st_mode) ||
	    s1.st_dev != s2.st_dev || s1.st_ino != s2.st_ino) {
		close(fd);
		errno = EINVAL;		/* swapped meanwhile */
		return -1;
	}
	return fd;
}

const char *
rec_open_error(int err, mode_t type)
{
	if (err == EINVAL && S_ISFIFO(type))
		return "a FIFO, not a regular file (not opened)";
	if (err == EINVAL && S_ISDIR(type))
		return "a directory, not a regular file";
	if (err == EINVAL && S_ISSOCK(type))
		return "a socket, not a regular file";
	if (err == EINVAL && (S_ISCHR(type) || S_ISBLK(type)))
		return "a device, not a regular file (not opened)";
	if (err == EINVAL)
		return "not a regular file (replaced while it was opened)";
	if (err == ELOOP)
		return "a symbolic link (not followed)";
	return strerror(err);
}

char *
rec_read_file(int dirfd, const char *path, size_t max, size_t *len,
    mode_t *type)
{
	char *buf;
	int fd;

	if ((fd = rec_open_reg(dirfd, path, type)) == -1)
		return NULL;
	buf = mc_read_fd(fd, max, len);
	mc_close_errno(fd);
	return buf;
}

json_t *
rec_load_json(int dirfd, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *v;
	char *buf;
	size_t len;
	mode_t type;

	if ((buf = rec_read_file(dirfd, path, REC_JSON_MAX, &len, &type)) ==
	    NULL) {
		snprintf(err, errlen, "%s: %s", path, rec_open_error(errno,
		    type));
		return NULL;
	}
	v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	eg_free(buf);
	if (v == NULL)
		snprintf(err, errlen, "%s: line %d: %s", path, je.line,
		    je.text);
	return v;
}

/* Receipt keys kept in every record, and only when public. */
static const char *const receipt_keys[] = {
	"step", "index", "phase", "state", "command_sha256", "pid",
	"pid_start", "started", "ended", "exit_code", "signal",
	"termination", "decisions", "env_sha256", "secrets", "note", "usage",
	NULL
};
static const char *const receipt_public_keys[] = { "command", "env", NULL };

/* 1 when name is listed in the receipt's "secrets" array. */
static int
is_secret(const json_t *secrets, const char *name)
{
	size_t i;

	for (i = 0; i < json_array_size(secrets); i++)
		if (json_is_string(json_array_get(secrets, i)) &&
		    strcmp(json_string_value(json_array_get(secrets, i)),
		    name) == 0)
			return 1;
	return 0;
}

/* An env-like object without the secrets' entries (non-strings too). */
static json_t *
env_filter(const json_t *env, const json_t *secrets)
{
	json_t *out, *v;
	const char *k;

	if (!json_is_object(env))
		return json_incref((json_t *)(uintptr_t)env);
	if ((out = json_object()) == NULL)
		return NULL;
	json_object_foreach((json_t *)(uintptr_t)env, k, v) {
		if (is_secret(secrets, k) || !json_is_string(v))
			continue;
		json_object_set(out, k, v);
	}
	return out;
}

json_t *
rec_receipt_filter(const json_t *receipt, int public)
{
	const json_t *secrets = json_object_get(receipt, "secrets");
	json_t *out, *v;
	size_t i;

	if ((out = json_object()) == NULL)
		return NULL;
	for (i = 0; receipt_keys[i] != NULL; i++) {
		if ((v = json_object_get(receipt, receipt_keys[i])) == NULL)
			continue;
		if (strcmp(receipt_keys[i], "env_sha256") == 0)
			json_object_set_new(out, receipt_keys[i],
			    env_filter(v, secrets));
		else
			json_object_set(out, receipt_keys[i], v);
	}
	for (i = 0; public && receipt_public_keys[i] != NULL; i++) {
		if ((v = json_object_get(receipt, receipt_public_keys[i])) ==
		    NULL)
			continue;
		if (strcmp(receipt_public_keys[i], "env") == 0)
			json_object_set_new(out, "env", env_filter(v,
			    secrets));
		else
			json_object_set(out, receipt_public_keys[i], v);
	}
	return out;
}

json_t *
rec_manifest_filter(const json_t *manifest)
{
	static const char *const keys[] = { "path", "size", "sha256", NULL };
	json_t *out, *e, *o, *v;
	size_t i, j;

	if ((out = json_array()) == NULL)
		return NULL;
	for (i = 0; i < json_array_size(manifest); i++) {
		e = json_array_get(manifest, i);
		if ((o = json_object()) == NULL) {
			json_decref(out);
			return NULL;
		}
		for (j = 0; keys[j] != NULL; j++)
			if ((v = json_object_get(e, keys[j])) != NULL)
				json_object_set(o, keys[j], v);
		json_array_append_new(out, o);
	}
	return out;
}

/* The chain value at the end of line[0..n) (no newline), or "". */
static void
line_head(const char *line, size_t n, char head[65])
{
	const char *h;

	head[0] = '\0';
	while (n > 0 && line[n - 1] == '\r')
		n--;
	if ((h = rec_line_chain(line, n, NULL, NULL)) != NULL) {
		memcpy(head, h, REC_HEX_LEN);
		head[REC_HEX_LEN] = '\0';
	}
}

int
rec_audit_tail(int fd, uint64_t *lines, char head[65])
{
	/* the last line is kept up to this many bytes (a chain value sits
	 * in its last 80 bytes, so a longer line keeps only its tail) */
	enum { TAIL = 256 };
	char buf[65536], last[TAIL];
	size_t lastlen = 0, i, start, seg;
	uint64_t n = 0;
	ssize_t r;
	int open_line = 0;

	head[0] = '\0';
	for (;;) {
		if ((r = mc_read(fd, buf, sizeof(buf))) == -1)
			return -1;
		if (r == 0)
			break;
		start = 0;
		for (i = 0; i <= (size_t)r; i++) {
			if (i < (size_t)r && buf[i] != '\n')
				continue;
			seg = i - start;
			/* append buf[start..i) to last, keeping its tail */
			if (seg >= TAIL) {
				memcpy(last, buf + i - TAIL, TAIL);
				lastlen = TAIL;
			} else if (seg > 0) {
				if (lastlen + seg > TAIL) {
					memmove(last, last + lastlen + seg -
					    TAIL, TAIL - seg);
					lastlen = TAIL - seg;
				}
				memcpy(last + lastlen, buf + start, seg);
				lastlen += seg;
			}
			if (i == (size_t)r) {
				open_line = open_line || seg > 0;
				break;
			}
			/* a complete line: count it, take its head */
			n++;
			line_head(last, lastlen, head);
			lastlen = 0;
			open_line = 0;
			start = i + 1;
		}
	}
	if (open_line && lastlen > 0) {
		n++;
		line_head(last, lastlen, head);
	}
	*lines = n;
	return 0;
}

static int
strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char	**dir_names(int, size_t *);

char **
rec_step_dirs(int dirfd, size_t *np)
{
	char **v;
	size_t n, i, k;
	int fd;

	*np = 0;
	fd = mc_open_beneath(dirfd, "steps", O_RDONLY | O_DIRECTORY |
	    O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT)
			return NULL;
		*np = (size_t)-1;
		return NULL;
	}
	if ((v = dir_names(fd, &n)) == NULL) {
		*np = (size_t)-1;
		return NULL;
	}
	/* the step folders: no dot files */
	for (i = k = 0; i < n; i++) {
		if (v[i][0] == '.')
			eg_free(v[i]);
		else
			v[k++] = v[i];
	}
	if (k == 0) {
		eg_free(v);
		return NULL;
	}
	*np = k;
	return v;
}

/* --- signing ------------------------------------------------------------ */

/* base64 of the DER signature of buf's SHA-256 with pk (from path). */
static int
sign_buf(struct eg_key *pk, const char *path, const void *buf, size_t len,
    char *b64, size_t b64cap, size_t *b64len, char *err, size_t errlen)
{
	unsigned char hash[EG_SHA256_LEN], sig[EG_SIG_MAX];
	size_t siglen = 0;

	eg_sha256(buf, len, hash);
	if (eg_key_sign(pk, hash, sig, &siglen) != 0) {
		snprintf(err, errlen, "%s: signing failed", path);
		return -1;
	}
	if (eg_b64_encode(sig, siglen, b64, b64cap) != 0) {
		snprintf(err, errlen, "base64: buffer too small");
		return -1;
	}
	*b64len = strlen(b64);
	return 0;
}

/* --- seal --------------------------------------------------------------- */

/* sha256 hex (and size) of the regular file name under dirfd. */
static int
file_sha256(int dirfd, const char *name, char out[65], uint64_t *size,
    char *err, size_t errlen)
{
	mode_t type;
	int fd, rc = -1;

	if ((fd = rec_open_reg(dirfd, name, &type)) == -1) {
		snprintf(err, errlen, "%s: %s", name, rec_open_error(errno,
		    type));
		return -1;
	}
	if (mc_sha256_fd(fd, out, size) == -1)
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
	else
		rc = 0;
	close(fd);
	return rc;
}

/* --- the walk over a record directory ----------------------------------- */

/* deeper folders are an error (each level holds one descriptor) */
#define WALK_DEPTH	256

struct walk {
	rec_walk_fn	 fn;
	void		*arg;
	char		 path[REC_PATH_MAX];
};

/* The entries of the directory fd (closed here), sorted; *n of them. */
static char **
dir_names(int fd, size_t *np)
{
	struct dirent *de;
	char **v = NULL, **nv;
	size_t n = 0, cap = 0;
	DIR *d;
	int saved;

	*np = 0;
	if ((d = fdopendir(fd)) == NULL) {
		mc_close_errno(fd);
		return NULL;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = eg_realloc(v, cap * sizeof(*v))) == NULL)
				goto fail;
			v = nv;
		}
		if ((v[n] = eg_strdup(de->d_name)) == NULL)
			goto fail;
		n++;
	}
	if (errno != 0)
		goto fail;
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), strp_cmp);
	*np = n;
	if (v == NULL)
		v = eg_malloc(sizeof(*v));	/* empty, not an error */
	return v;
fail:
	saved = errno;
	eg_strv_free(v, n);
	closedir(d);
	errno = saved;
	return NULL;
}

static int
walk_dir(struct walk *w, int dfd, size_t plen, int depth)
{
	struct stat st;
	char **names;
	size_t n, i, nl;
	int fd, r, rc = 0;

	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return w->fn(w->path, NULL, errno, w->arg) == -1 ? -1 : 0;
	if ((names = dir_names(fd, &n)) == NULL)
		return w->fn(w->path, NULL, errno, w->arg) == -1 ? -1 : 0;
	for (i = 0; i < n && rc == 0; i++) {
		w->path[plen] = '\0';
		nl = strlen(names[i]);
		if (plen + (plen > 0) + nl >= sizeof(w->path)) {
			if (w->fn(w->path, NULL, ENAMETOOLONG, w->arg) == -1)
				rc = -1;
			continue;
		}
		if (plen > 0)
			w->path[plen] = '/';
		memcpy(w->path + plen + (plen > 0), names[i], nl + 1);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (w->fn(w->path, NULL, errno, w->arg) == -1)
				rc = -1;
			continue;
		}
		r = w->fn(w->path, &st, 0, w->arg);
		if (r == -1)
			rc = -1;
		else if (r == 1 && S_ISDIR(st.st_mode)) {
			if (depth >= WALK_DEPTH) {
				if (w->fn(w->path, NULL, EMLINK, w->arg) == -1)
					rc = -1;
				continue;
			}
			fd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd == -1) {
				if (w->fn(w->path, NULL, errno, w->arg) == -1)
					rc = -1;
				continue;
			}
			rc = walk_dir(w, fd, plen + (plen > 0) + nl, depth + 1);
			close(fd);
		}
		w->path[plen] = '\0';
	}
	eg_strv_free(names, n);
	return rc;
}

int
rec_walk(int dirfd, rec_walk_fn fn, void *arg)
{
	struct walk w;

	w.fn = fn;
	w.arg = arg;
	w.path[0] = '\0';
	return walk_dir(&w, dirfd, 0, 0);
}

/* A files entry: {"path","sha256","size"}. */
static json_t *
file_entry(const char *path, const char *hex, uint64_t size)
{
	return json_pack("{s:s,s:s,s:I}", "path", path, "sha256", hex,
	    "size", (json_int_t)size);
}

/* What the seal's walk collects. */
struct sealwalk {
	int		 dirfd;
	json_t		*top;		/* "files" of DIR */
	json_t		*steps;		/* the record's steps */
	char		**dirs;		/* their folder names */
	size_t		 ndirs;
	char		*err;
	size_t		 errlen;
};

/* 1 when the manifest m lists path. */
static int
in_manifest(const json_t *m, const char *path)
{
	size_t i;
	const char *p;

	for (i = 0; i < json_array_size(m); i++)
		if ((p = json_string_value(json_object_get(json_array_get(m,
		    i), "path"))) != NULL && strcmp(p, path) == 0)
			return 1;
	return 0;
}

static int
seal_walk_fn(const char *path, const struct stat *st, int err, void *arg)
{
	struct sealwalk *w = arg;
	char hex[65];
	const char *rel;
	json_t *list = w->top, *st_obj;
	uint64_t size;
	size_t i, dl;

	if (st == NULL) {
		snprintf(w->err, w->errlen, "%s: %s", path, strerror(err));
		return -1;
	}
	/* the record itself and the supervisor's lock and private folder
	 * (gone once every step is final) are not listed */
	if (strcmp(path, "record.json") == 0 ||
	    strcmp(path, "record.sig") == 0 || strcmp(path, REC_PRIV) == 0 ||
	    (strcmp(path, REC_LOCK) == 0 && S_ISREG(st->st_mode)))
		return 0;
	if (S_ISDIR(st->st_mode))
		return 1;
	if (!S_ISREG(st->st_mode)) {
		snprintf(w->err, w->errlen, "%s: %s: a record directory holds "
		    "only regular files and directories", path,
		    rec_ftype(st->st_mode));
		return -1;
	}
	rel = path;
	for (i = 0; i < w->ndirs; i++) {
		dl = strlen(w->dirs[i]);
		if (strncmp(path, "steps/", 6) == 0 &&
		    strncmp(path + 6, w->dirs[i], dl) == 0 &&
		    path[6 + dl] == '/') {
			st_obj = json_array_get(w->steps, i);
			rel = path + 6 + dl + 1;
			if (in_manifest(json_object_get(st_obj, "manifest"),
			    rel))
				return 0;
			list = json_object_get(st_obj, "files");
			break;
		}
	}
	if (file_sha256(w->dirfd, path, hex, &size, w->err, w->errlen) == -1)
		return -1;
	if (json_array_append_new(list, file_entry(rel, hex, size)) == -1) {
		snprintf(w->err, w->errlen, "out of memory");
		return -1;
	}
	return 0;
}

static json_t *
run_part(const json_t *run)
{
	static const char *const keys[] = { "name", "id", "started", "ended",
	    "state", "exit", NULL };
	json_t *out = json_object(), *v;
	size_t i;

	for (i = 0; out != NULL && keys[i] != NULL; i++)
		json_object_set(out, keys[i],
		    (v = json_object_get(run, keys[i])) != NULL ? v :
		    json_null());
	return out;
}

/*
 * The run's use of the credential routes: the steps' "usage" summed per
 * route (SPEC "Routes", Meter), as "usage" of the record when any step
 * used a route.
 */
static void
usage_sum(json_t *rec, const json_t *steps)
{
	static const char *const f[] = { "requests", "tokens_in",
	    "tokens_out" };
	json_t *sum = json_object(), *st, *u, *rv, *acc;
	const char *rk;
	size_t i, k;

	if (sum == NULL)
		return;
	json_array_foreach(steps, i, st) {
		u = json_object_get(st, "usage");
		if (!json_is_object(u))
			continue;
		json_object_foreach(u, rk, rv) {
			if (!json_is_object(rv))
				continue;
			if ((acc = json_object_get(sum, rk)) == NULL) {
				acc = json_pack("{s:I,s:I,s:I}", f[0],
				    (json_int_t)0, f[1], (json_int_t)0, f[2],
				    (json_int_t)0);
				if (acc == NULL)
					continue;
				json_object_set_new(sum, rk, acc);
			}
			for (k = 0; k < 3; k++)
				json_object_set_new(acc, f[k], json_integer(
				    json_integer_value(json_object_get(acc,
				    f[k])) + json_integer_value(
				    json_object_get(rv, f[k]))));
		}
	}
	if (json_object_size(sum) > 0)
		json_object_set_new(rec, "usage", sum);
	else
		json_decref(sum);
}

/* The steps array: each filtered receipt with its manifest. */
static json_t *
steps_part(int dirfd, int public, char *err, size_t errlen)
{
	char path[512], **names;
	json_t *steps, *rec, *man, *st;
	size_t n, i;

	names = rec_step_dirs(dirfd, &n);
	if (names == NULL && n == (size_t)-1) {
		snprintf(err, errlen, "steps: %s", strerror(errno));
		return NULL;
	}
	if ((steps = json_array()) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "steps/%s/receipt.json",
		    names[i]);
		if ((rec = rec_load_json(dirfd, path, err, errlen)) == NULL)
			goto fail;
		if (!json_is_object(rec)) {
			json_decref(rec);
			snprintf(err, errlen, "%s: not an object", path);
			goto fail;
		}
		st = rec_receipt_filter(rec, public);
		json_decref(rec);
		snprintf(path, sizeof(path), "steps/%s/manifest.json",
		    names[i]);
		man = rec_load_json(dirfd, path, err, errlen);
		if (man == NULL && errno == ENOENT &&
		    strcmp(json_string_value(json_object_get(st, "state")) ?
		    json_string_value(json_object_get(st, "state")) : "",
		    "skipped") == 0) {
			/* a step that never ran has nothing captured */
			man = json_array();
		} else if (man == NULL || !json_is_array(man)) {
			if (man != NULL)
				snprintf(err, errlen, "%s: not an array",
				    path);
			json_decref(man);
			json_decref(st);
			goto fail;
		}
		json_object_set_new(st, "manifest", rec_manifest_filter(man));
		json_decref(man);
		json_array_append_new(steps, st);
	}
	eg_strv_free(names, n);
	return steps;
fail:
	eg_strv_free(names, n);
	json_decref(steps);
	return NULL;
}

static int
entry_cmp(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a,
	    "path")), json_string_value(json_object_get(*(json_t *const *)b,
	    "path")));
}

/* A files list sorted by path (byte order: what record check wants, so
 * that it finds a duplicate in one pass). */
static int
sort_files(json_t *list)
{
	json_t **v;
	size_t n = json_array_size(list), i;

	if (n < 2)
		return 0;
	if ((v = eg_malloc(n * sizeof(*v))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(list, i));
	qsort(v, n, sizeof(*v), entry_cmp);
	json_array_clear(list);
	for (i = 0; i < n; i++)
		json_array_append_new(list, v[i]);
	eg_free(v);
	return 0;
}

/* The steps part with every file the walk finds listed ("files"). */
static int
files_part(int dirfd, json_t *steps, json_t *top, char *err, size_t errlen)
{
	struct sealwalk w;
	size_t i, n;
	int rc;

	memset(&w, 0, sizeof(w));
	w.dirs = rec_step_dirs(dirfd, &n);
	if (w.dirs == NULL && n == (size_t)-1) {
		snprintf(err, errlen, "steps: %s", strerror(errno));
		return -1;
	}
	w.ndirs = n;
	w.dirfd = dirfd;
	w.top = top;
	w.steps = steps;
	w.err = err;
	w.errlen = errlen;
	for (i = 0; i < json_array_size(steps); i++)
		json_object_set_new(json_array_get(steps, i), "files",
		    json_array());
	rc = rec_walk(dirfd, seal_walk_fn, &w);
	eg_strv_free(w.dirs, w.ndirs);
	for (i = 0; rc == 0 && i < json_array_size(steps); i++)
		rc = sort_files(json_object_get(json_array_get(steps, i),
		    "files"));
	if (rc == 0)
		rc = sort_files(top);
	if (rc == -1 && err[0] == '\0')
		snprintf(err, errlen, "out of memory");
	return rc;
}

int
rec_seal_at(int dirfd, const char *key, char *err, size_t errlen)
{
	char plan[65], conf[65], head[65], b64[256], *buf = NULL;
	const char *const *m;
	json_t *run = NULL, *rec = NULL, *mods, *steps, *top;
	struct eg_key *pk = NULL;
	struct stat st;
	uint64_t lines = 0;
	size_t len, b64len;
	mode_t type;
	int fd, public, rc = -1;

	err[0] = '\0';
	if (fstat(dirfd, &st) == -1 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "not a directory");
		return -1;
	}
	/* the key first: one that group or others may read is refused
	 * before anything is written */
	if (key != NULL && (pk = eg_key_load(key, 1, err, errlen)) == NULL)
		return -1;
	if ((run = rec_load_json(dirfd, "run.json", err, errlen)) == NULL)
		goto out;
	if (!json_is_object(run) ||
	    json_integer_value(json_object_get(run, "egressd_run")) != 1) {
		snprintf(err, errlen, "run.json: not a run receipt "
		    "(\"egressd_run\":1)");
		goto out;
	}
	public = json_is_true(json_object_get(run, "public"));
	if (file_sha256(dirfd, "plan.ini", plan, NULL, err, errlen) == -1 ||
	    file_sha256(dirfd, "config.ini", conf, NULL, err, errlen) == -1)
		goto out;
	if ((fd = rec_open_reg(dirfd, "audit.log", &type)) == -1) {
		snprintf(err, errlen, "audit.log: %s", rec_open_error(errno,
		    type));
		goto out;
	}
	if (rec_audit_tail(fd, &lines, head) == -1) {
		snprintf(err, errlen, "audit.log: %s", strerror(errno));
		close(fd);
		goto out;
	}
	close(fd);
	if (head[0] == '\0') {
		snprintf(err, errlen, "audit.log: %s", lines == 0 ? "empty" :
		    "its last line has no chain= value (not chained)");
		goto out;
	}
	if ((steps = steps_part(dirfd, public, err, errlen)) == NULL)
		goto out;
	if ((top = json_array()) == NULL ||
	    files_part(dirfd, steps, top, err, errlen) == -1) {
		json_decref(top);
		json_decref(steps);
		goto out;
	}
	mods = json_array();
	for (m = egress_modules(); *m != NULL; m++)
		json_array_append_new(mods, json_string(*m));
	rec = json_pack("{s:i,s:{s:s,s:o},s:o,s:s,s:s,s:o,s:{s:s,s:I,s:s},"
	    "s:b,s:o}",
	    "egressd_record", 1,
	    "egressd", "version", egress_version(), "modules", mods,
	    "run", run_part(run),
	    "config_sha256", conf,
	    "plan_sha256", plan,
	    "steps", steps,
	    "audit", "file", "audit.log", "lines", (json_int_t)lines,
	    "chain_head", head,
	    "public", public,
	    "files", top);
	if (rec == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	usage_sum(rec, steps);
	if ((buf = rec_canon_dump(rec, &len)) == NULL) {
		if (errno == EFBIG)
			snprintf(err, errlen, "record.json: longer than %u "
			    "bytes", REC_CANON_MAX);
		else
			snprintf(err, errlen, "record.json: %s", errno ==
			    EINVAL ? "a value cannot be written canonically "
			    "(a real number, or invalid UTF-8, in run.json, a "
			    "receipt or a file name)" : strerror(errno));
		goto out;
	}
	if (mc_write_atomic(dirfd, "record.json", buf, len, 0644) == -1) {
		snprintf(err, errlen, "record.json: %s", strerror(errno));
		goto out;
	}
	if (key == NULL) {
		if (unlinkat(dirfd, "record.sig", 0) == -1 && errno != ENOENT) {
			snprintf(err, errlen, "record.sig: %s",
			    strerror(errno));
			goto out;
		}
	} else {
		if (sign_buf(pk, key, buf, len, b64, sizeof(b64) - 1,
		    &b64len, err, errlen) == -1)
			goto out;
		b64[b64len++] = '\n';
		if (mc_write_atomic(dirfd, "record.sig", b64, b64len, 0644) ==
		    -1) {
			snprintf(err, errlen, "record.sig: %s",
			    strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	eg_free(buf);
	json_decref(rec);
	json_decref(run);
	eg_key_free(pk);
	return rc;
}

int
rec_open_dir(const char *dir)
{
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	/* O_DIRECTORY|O_NOFOLLOW on a symlink is ENOTDIR: say ELOOP */
	if (fd == -1 && errno == ENOTDIR &&
	    fstatat(AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		errno = ELOOP;
	return fd;
}

int
rec_seal(const char *dir, const char *key, char *err, size_t errlen)
{
	int dirfd, rc;

	if ((dirfd = rec_open_dir(dir)) == -1) {
		snprintf(err, errlen, "%s", errno == ELOOP ? "a symbolic link "
		    "(not followed: give the record directory itself)" :
		    strerror(errno));
		return -1;
	}
	rc = rec_seal_at(dirfd, key, err, errlen);
	close(dirfd);
	return rc;
}

/*
 * Options without getopt(3): replay calls "record seal" from several job
 * threads at once (-j N), and getopt's optind is process-global.  argv[0]
 * is the subcommand; "--NAME VALUE", "--NAME=VALUE", "-h"/"--help" and
 * "--" are understood, for each NAME of names (NULL-terminated; its value
 * in values[i]).  Returns the index of the first operand, -1 after a
 * usage error (message printed), -2 for --help.
 */
int
rec_opts(int argc, char *argv[], const char *cmd,
    const char *const *names, const char **values)
{
	size_t nl, k;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			return i + 1;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return -2;
		if (a[0] != '-' || a[1] == '\0')
			return i;
		for (k = 0; names[k] != NULL; k++) {
			nl = strlen(names[k]);
			if (strncmp(a, "--", 2) != 0 ||
			    strncmp(a + 2, names[k], nl) != 0)
				continue;
			if (a[2 + nl] == '=') {
				values[k] = a + 3 + nl;
				break;
			}
			if (a[2 + nl] == '\0') {
				if (i + 1 >= argc) {
					fprintf(stderr, "egressd record %s: "
					    "--%s needs a value\n", cmd,
					    names[k]);
					return -1;
				}
				values[k] = argv[++i];
				break;
			}
		}
		if (names[k] != NULL)
			continue;
		fprintf(stderr, "egressd record %s: unknown option '%.80s'\n",
		    cmd, a);
		return -1;
	}
	return i;
}

int
rec_opts1(int argc, char *argv[], const char *cmd, const char *usage,
    const char *const *names, const char **values, int *rc)
{
	int i = rec_opts(argc, argv, cmd, names, values);

	if (i >= 0 && argc - i == 1)
		return i;
	fputs(usage, i == -2 ? stdout : stderr);
	*rc = i == -2 ? 0 : 2;
	return -1;
}

int
rec_seal_main(int argc, char *argv[])
{
	static const char *const names[] = { "key", "fd", NULL };
	const char *vals[2] = { NULL, NULL };
	char err[1024], *end;
	long fd;
	int i, rc;

	if ((i = rec_opts1(argc, argv, "seal", seal_usage, names, vals,
	    &rc)) == -1)
		return rc;
	if (vals[1] == NULL)
		rc = rec_seal(argv[i], vals[0], err, sizeof(err));
	else {
		/* the directory open at descriptor N; DIR only names it */
		errno = 0;
		fd = strtol(vals[1], &end, 10);
		if (errno != 0 || end == vals[1] || *end != '\0' || fd < 0 ||
		    fd > INT_MAX) {
			fprintf(stderr, "egressd record seal: --fd '%.40s': "
			    "not a descriptor number\n%s", vals[1],
			    seal_usage);
			return 2;
		}
		rc = rec_seal_at((int)fd, vals[0], err, sizeof(err));
		if (rc == -1 && strcmp(err, "not a directory") == 0)
			snprintf(err, sizeof(err), "--fd %ld: not a descriptor "
			    "of an open directory", fd);
	}
	if (rc == -1) {
		fprintf(stderr, "egressd record seal: %s: %s\n", argv[i], err);
		return 1;
	}
	return 0;
}
