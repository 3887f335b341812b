/*
 * check.c: "egressd record check [--pubkey PUB] DIR".  Verifies a sealed
 * record directory and prints one OK / FAIL (or SKIP: not checked) line
 * per check on standard output, then the closing sentence:
 *
 *   record.json      canonical JSON, the SPEC's keys and types
 *   record.sig       ECDSA P-256 signature of record.json's bytes (PUB)
 *   plan.ini, config.ini   their sha256 against the record
 *   files            every file of record.json's "files" (run.json,
 *                    audit.log, plan.ini, config.ini, ...) against its
 *                    size and sha256
 *   run.json         the run's fields against the record
 *   steps/NN-NAME    receipt.json against the record; manifest.json
 *                    against the record and every file it lists (size,
 *                    sha256) against the manifest; the step's other
 *                    files (its "files": receipt, claim, exit and
 *                    capture files) against the record
 *   coverage         every entry of DIR is a regular file the record
 *                    lists (or record.json, record.sig, an empty .lock)
 *                    or a directory holding one; anything else (added,
 *                    a FIFO, a symlink, a device) is a FAIL, never opened
 *   audit.log        the chain (and checkpoint signatures with PUB) as
 *                    "egressd audit verify" does (rec_verify_fds); with
 *                    PUB its last line must be a verified CHECKPOINT;
 *                    then its line count, last chain value and run id
 *                    against the record
 *   audit config     the log's START config= is config.ini's sha256
 *   step order       indexes 1..N, folders NN-NAME in that order, N steps
 *   final states     every step captured or skipped, the run finished or
 *                    cancelled, its exit status consistent with the steps
 *   decisions        per step, the receipt's allowed/blocked/failed equal
 *                    the ALLOW/BLOCK/FAIL lines with its step= in audit.log
 *
 * Every file is opened through the one descriptor of DIR (opened without
 * following a symlink), relative to it and without following symlinks,
 * and only after an O_PATH look says it is a regular file: nothing here
 * waits on a FIFO.  Exit 0 when every check passes, 1 when one fails, 2
 * on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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
#include "verify.h"

static const char check_usage[] =
"usage: egressd record check [--pubkey PUB] DIR\n";

/* FAIL lines of the coverage check at most (then a count). */
#define REC_COVER_MAX	20

static const char closing[] =
"This proves the record is intact and consistent; it cannot prove that the "
"commands ran.\n";

/* Longest audit line looked at for decisions (longer ones: a FAIL). */
#define REC_CHECK_LINE_MAX	(64u << 10)

struct rc {
	const char	*dir;
	const char	*pubkey;
	int		 dirfd;
	int		 failed;
	json_t		*rec;		/* record.json, parsed */
	char		**dirs;		/* steps/ names, sorted */
	size_t		 ndirs;
	char		**listed;	/* every path the record lists, sorted */
	size_t		 nlisted;
	size_t		 uncovered;	/* coverage FAILs */
};

static void report(struct rc *, int, const char *, const char *, ...)
	__attribute__((format(printf, 4, 5)));

/* ok: 1 OK, 0 FAIL, -1 SKIP (not checked). */
static void
report(struct rc *c, int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (ok == 0)
		c->failed = 1;
	printf("%s %s: ", ok == 1 ? "OK" : ok == 0 ? "FAIL" : "SKIP", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static const char *
jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* --- record.json -------------------------------------------------------- */

/* A relative path of at most REC_PATH_MAX bytes, no empty, "." or ".."
 * component. */
static int
path_ok(const char *p)
{
	const char *q;
	size_t n;

	if (p == NULL || *p == '\0' || *p == '/' || strlen(p) >= REC_PATH_MAX)
		return 0;
	for (; *p != '\0'; p = *q != '\0' ? q + 1 : q) {
		q = strchr(p, '/');
		if (q == NULL)
			q = p + strlen(p);
		n = (size_t)(q - p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (*q == '/' && q[1] == '\0')
			return 0;
	}
	return 1;
}

/* A "files" array: [{"path","sha256","size"}], paths in strictly
 * ascending byte order (sorted, no duplicate). */
static int
files_ok(const json_t *files)
{
	const json_t *e;
	const char *p, *h, *prev = NULL;
	size_t i;

	if (!json_is_array(files))
		return 0;
	for (i = 0; i < json_array_size(files); i++) {
		e = json_array_get(files, i);
		p = jstr(e, "path");
		h = jstr(e, "sha256");
		if (!path_ok(p) || h == NULL || strlen(h) != REC_HEX_LEN ||
		    !json_is_integer(json_object_get(e, "size")) ||
		    json_integer_value(json_object_get(e, "size")) < 0)
			return 0;
		if (prev != NULL && strcmp(prev, p) >= 0)
			return 0;
		prev = p;
	}
	return 1;
}

static int
check_record(struct rc *c)
{
	json_error_t je;
	const json_t *run, *audit, *steps;
	char *buf, *canon = NULL;
	size_t len, clen, i;
	const char *why = NULL;

	mode_t type;

	buf = rec_read_file(c->dirfd, "record.json", REC_JSON_MAX, &len,
	    &type);
	if (buf == NULL) {
		report(c, 0, "record.json", "%s", rec_open_error(errno,
		    type));
		return -1;
	}
	c->rec = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (c->rec == NULL) {
		report(c, 0, "record.json", "not JSON: %s", je.text);
		eg_free(buf);
		return -1;
	}
	canon = rec_canon_dump(c->rec, &clen);
	run = json_object_get(c->rec, "run");
	audit = json_object_get(c->rec, "audit");
	steps = json_object_get(c->rec, "steps");
	if (canon == NULL || clen != len || memcmp(canon, buf, len) != 0)
		why = "not canonical JSON (keys sorted, no whitespace, "
		    "integers only, no final newline)";
	else if (!json_is_object(c->rec) ||
	    !json_is_integer(json_object_get(c->rec, "egressd_record")) ||
	    json_integer_value(json_object_get(c->rec, "egressd_record")) != 1)
		why = "\"egressd_record\" is not 1";
	else if (!json_is_object(json_object_get(c->rec, "egressd")) ||
	    !json_is_object(run) || !json_is_string(json_object_get(run,
	    "id")) || !json_is_string(json_object_get(run, "name")))
		why = "\"egressd\" or \"run\" missing or malformed";
	else if (!json_is_string(json_object_get(c->rec, "config_sha256")) ||
	    !json_is_string(json_object_get(c->rec, "plan_sha256")))
		why = "\"config_sha256\" or \"plan_sha256\" missing";
	else if (!json_is_object(audit) || !json_is_string(json_object_get(
	    audit, "file")) || !json_is_integer(json_object_get(audit,
	    "lines")) || !json_is_string(json_object_get(audit, "chain_head")))
		why = "\"audit\" missing or malformed";
	else if (!json_is_boolean(json_object_get(c->rec, "public")))
		why = "\"public\" missing";
	else if (!json_is_array(steps))
		why = "\"steps\" missing";
	else if (!files_ok(json_object_get(c->rec, "files")))
		why = "\"files\" missing or malformed (each {\"path\",\"sha256\","
		    "\"size\"}, a relative path without \"..\", sorted by "
		    "path; a record sealed before files were listed: seal it "
		    "again)";
	for (i = 0; why == NULL && i < json_array_size(steps); i++) {
		const json_t *s = json_array_get(steps, i);
		const char *name = jstr(s, "step"), *p;

		if (!json_is_object(s) || name == NULL || *name == '\0' ||
		    !json_is_integer(json_object_get(s, "index")) ||
		    !json_is_array(json_object_get(s, "manifest")))
			why = "a step without step, index or manifest";
		else if (!files_ok(json_object_get(s, "files")))
			why = "a step without \"files\", or a malformed one";
		for (p = name; why == NULL && *p != '\0'; p++)
			if (!(*p >= 'a' && *p <= 'z') &&
			    !(*p >= 'A' && *p <= 'Z') &&
			    !(*p >= '0' && *p <= '9') && *p != '-' &&
			    *p != '_' && *p != '.')
				why = "a step name outside [A-Za-z0-9._-]";
	}
	eg_free(canon);
	eg_free(buf);
	if (why != NULL) {
		report(c, 0, "record.json", "%s", why);
		json_decref(c->rec);
		c->rec = NULL;
		return -1;
	}
	report(c, 1, "record.json", "canonical, egressd_record 1, %zu steps",
	    json_array_size(steps));
	return 0;
}

/* --- record.sig --------------------------------------------------------- */

static void
check_sig(struct rc *c)
{
	struct eg_key *pk;
	unsigned char hash[32], sig[512];
	char *b64 = NULL, *rec = NULL, msg[512];
	size_t b64len, reclen, siglen, i, j;
	mode_t type;

	if (c->pubkey == NULL) {
		report(c, -1, "record.sig", "not checked (no --pubkey)");
		return;
	}
	if ((pk = eg_key_load(c->pubkey, 0, msg, sizeof(msg))) == NULL) {
		report(c, 0, "record.sig", "%s", msg);
		return;
	}
	if ((b64 = rec_read_file(c->dirfd, "record.sig", 4096, &b64len,
	    &type)) == NULL) {
		report(c, 0, "record.sig", "%s", rec_open_error(errno, type));
		goto out;
	}
	for (i = j = 0; i < b64len; i++)	/* drop the newline(s) */
		if (b64[i] != '\n' && b64[i] != '\r' && b64[i] != ' ')
			b64[j++] = b64[i];
	if (eg_b64_decode(b64, j, sig, sizeof(sig), &siglen) != 0) {
		report(c, 0, "record.sig", "not base64");
		goto out;
	}
	if ((rec = rec_read_file(c->dirfd, "record.json", REC_JSON_MAX,
	    &reclen, NULL)) == NULL) {
		report(c, 0, "record.sig", "record.json: %s", strerror(errno));
		goto out;
	}
	eg_sha256(rec, reclen, hash);
	if (eg_key_verify(pk, hash, sig, siglen) != 0) {
		report(c, 0, "record.sig", "bad signature: not record.json's "
		    "with the key of %s", c->pubkey);
		goto out;
	}
	report(c, 1, "record.sig", "signature of record.json verified with %s",
	    c->pubkey);
out:
	eg_free(rec);
	eg_free(b64);
	eg_key_free(pk);
}

/* --- plan.ini, config.ini, run.json ------------------------------------- */

static void
check_digest(struct rc *c, const char *name, const char *key)
{
	const char *want = jstr(c->rec, key);
	char got[65];
	uint64_t size;
	mode_t type;
	int fd;

	if ((fd = rec_open_reg(c->dirfd, name, &type)) == -1) {
		report(c, 0, name, "%s", rec_open_error(errno, type));
		return;
	}
	if (mc_sha256_fd(fd, got, &size) == -1)
		report(c, 0, name, "%s", strerror(errno));
	else if (strcmp(got, want) != 0)
		report(c, 0, name, "sha256 %s, the record says %s", got, want);
	else
		report(c, 1, name, "sha256 matches the record");
	close(fd);
}

static void
check_run(struct rc *c)
{
	static const char *const keys[] = { "name", "id", "started", "ended",
	    "state", "exit", NULL };
	char err[512];
	const json_t *rrun = json_object_get(c->rec, "run");
	json_t *run;
	size_t i;

	if ((run = rec_load_json(c->dirfd, "run.json", err, sizeof(err))) ==
	    NULL) {
		report(c, 0, "run.json", "%s", err);
		return;
	}
	for (i = 0; keys[i] != NULL; i++) {
		json_t *a = json_object_get(run, keys[i]);

		if (!json_equal(a != NULL ? a : json_null(),
		    json_object_get(rrun, keys[i])))
			break;
	}
	if (keys[i] != NULL)
		report(c, 0, "run.json", "\"%s\" differs from the record",
		    keys[i]);
	else if (json_is_true(json_object_get(run, "public")) !=
	    json_is_true(json_object_get(c->rec, "public")))
		report(c, 0, "run.json", "\"public\" differs from the record");
	else
		report(c, 1, "run.json", "matches the record");
	json_decref(run);
}

/* --- steps -------------------------------------------------------------- */

static void
step_dir(const json_t *s, char *buf, size_t cap)
{
	snprintf(buf, cap, "steps/%02lld-%s",
	    (long long)json_integer_value(json_object_get(s, "index")),
	    jstr(s, "step"));
}

/*
 * A public record has the command and environment in clear next to their
 * sha256: command_sha256 is the SHA-256 of the argv's canonical JSON
 * array, env_sha256[NAME] that of env[NAME].  NULL when they agree.
 */
static const char *
clear_mismatch(const json_t *s)
{
	const json_t *cmd = json_object_get(s, "command");
	const json_t *env = json_object_get(s, "env");
	const json_t *envh = json_object_get(s, "env_sha256"), *v;
	const char *k, *want;
	char hex[65], *buf;
	size_t len;

	if (cmd != NULL) {
		if ((buf = rec_canon_dump(cmd, &len)) == NULL)
			return "its command cannot be written canonically";
		mc_sha256_hex(buf, len, hex);
		eg_free(buf);
		want = jstr(s, "command_sha256");
		if (want == NULL || strcmp(hex, want) != 0)
			return "command_sha256 is not the sha256 of its "
			    "command";
	}
	json_object_foreach((json_t *)(uintptr_t)env, k, v) {
		if (!json_is_string(v))
			return "a non-string env value";
		mc_sha256_hex(json_string_value(v), json_string_length(v),
		    hex);
		want = jstr(envh, k);
		if (want == NULL || strcmp(hex, want) != 0)
			return "an env value does not match its env_sha256";
	}
	return NULL;
}

static void
check_receipt(struct rc *c, const json_t *s)
{
	char dir[300], path[400], err[512];
	const char *why;
	json_t *rec, *f, *want;
	int public = json_is_true(json_object_get(c->rec, "public"));

	step_dir(s, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/receipt.json", dir);
	if ((rec = rec_load_json(c->dirfd, path, err, sizeof(err))) == NULL) {
		/* err is "PATH: reason"; the line already names PATH */
		report(c, 0, path, "%s", strncmp(err, path, strlen(path)) ==
		    0 && err[strlen(path)] == ':' ? err + strlen(path) + 2 :
		    err);
		return;
	}
	f = rec_receipt_filter(rec, public);
	want = json_deep_copy(s);
	json_object_del(want, "manifest");
	json_object_del(want, "files");
	if (f == NULL || want == NULL || !json_equal(f, want))
		report(c, 0, path, "differs from the record");
	else if (public && (why = clear_mismatch(s)) != NULL)
		report(c, 0, path, "%s", why);
	else
		report(c, 1, path, "matches the record%s", public ?
		    "; command and env match their sha256" : "");
	json_decref(want);
	json_decref(f);
	json_decref(rec);
}

/* One manifest or files entry against its file under dir (NULL: DIR):
 * NULL ok, else the reason. */
static const char *
check_entry(struct rc *c, const char *dir, const json_t *e, int manifest,
    char *why, size_t cap)
{
	const char *whose = manifest ? "manifest" : "record";
	const char *p = jstr(e, "path"), *want = jstr(e, "sha256");
	char path[REC_PATH_MAX + 400], got[65];
	uint64_t size = 0;
	mode_t type;
	int fd;

	if (p == NULL || want == NULL || !json_is_integer(json_object_get(e,
	    "size"))) {
		snprintf(why, cap, "a %s entry without path, size or sha256",
		    whose);
		return why;
	}
	snprintf(path, sizeof(path), "%s%s%s", dir != NULL ? dir : "",
	    dir != NULL ? "/" : "", p);
	if ((fd = rec_open_reg(c->dirfd, path, &type)) == -1) {
		snprintf(why, cap, "%s: %s", p, rec_open_error(errno, type));
		return why;
	}
	if (mc_sha256_fd(fd, got, &size) == -1)
		snprintf(why, cap, "%s: %s", p, strerror(errno));
	else if (size != (uint64_t)json_integer_value(json_object_get(e,
	    "size")))
		snprintf(why, cap, "%s: %llu bytes, the %s says %lld", p,
		    (unsigned long long)size, whose,
		    (long long)json_integer_value(json_object_get(e, "size")));
	else if (strcmp(got, want) != 0)
		snprintf(why, cap, "%s: sha256 differs from the %s", p, whose);
	else
		why = NULL;
	close(fd);
	return why;
}

/* check_entry() on every entry of files (manifest: they are a step's
 * manifest); the first failure reported under what.  Their count, or -1
 * after a failure. */
static long
check_each(struct rc *c, const json_t *files, const char *dir, int manifest,
    const char *what)
{
	char why[REC_PATH_MAX + 400];
	size_t i;

	for (i = 0; i < json_array_size(files); i++)
		if (check_entry(c, dir, json_array_get(files, i), manifest,
		    why, sizeof(why)) != NULL) {
			report(c, 0, what, "%s", why);
			return -1;
		}
	return (long)i;
}

static void
check_files(struct rc *c, const json_t *s)
{
	const json_t *man = json_object_get(s, "manifest");
	char dir[300], path[400], err[512];
	json_t *disk, *f;
	long n;

	step_dir(s, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	disk = rec_load_json(c->dirfd, path, err, sizeof(err));
	if (disk == NULL && errno == ENOENT && json_array_size(man) == 0 &&
	    strcmp(jstr(s, "state") ? jstr(s, "state") : "", "skipped") == 0) {
		report(c, 1, dir, "skipped, nothing captured");
		return;
	}
	if (disk == NULL) {
		report(c, 0, dir, "%s", err);
		return;
	}
	f = rec_manifest_filter(disk);
	json_decref(disk);
	if (f == NULL || !json_equal(f, man)) {
		json_decref(f);
		report(c, 0, dir, "manifest.json differs from the record");
		return;
	}
	json_decref(f);
	if ((n = check_each(c, man, dir, 1, dir)) != -1)
		report(c, 1, dir, "%ld captured file%s match the manifest", n,
		    n == 1 ? "" : "s");
}

/* A "files" list (of the step folder dir, or of DIR: dir NULL) against
 * the files: every one there, its size and sha256 the record's. */
static void
check_listed(struct rc *c, const json_t *files, const char *dir,
    const char *what)
{
	long n;

	if ((n = check_each(c, files, dir, 0, what)) != -1)
		report(c, 1, what, "%ld %sfile%s match the record", n,
		    dir != NULL ? "other " : "", n == 1 ? "" : "s");
}

/* --- coverage: every entry of DIR is in the record ----------------------- */

static int
listed_add(struct rc *c, const char *dir, const char *path)
{
	char **nv, *p;
	size_t n;

	n = (dir != NULL ? strlen(dir) + 1 : 0) + strlen(path) + 1;
	if ((p = eg_malloc(n)) == NULL)
		return -1;
	snprintf(p, n, "%s%s%s", dir != NULL ? dir : "", dir != NULL ? "/" :
	    "", path);
	if ((nv = eg_realloc(c->listed, (c->nlisted + 1) *
	    sizeof(*nv))) == NULL) {
		eg_free(p);
		return -1;
	}
	c->listed = nv;
	c->listed[c->nlisted++] = p;
	return 0;
}

static int
strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every path the record lists: its "files", each step's manifest and
 * "files" under the step's folder; sorted.  0 or -1 (out of memory). */
static int
listed_build(struct rc *c)
{
	const json_t *steps = json_object_get(c->rec, "steps"), *s, *l;
	static const char *const lists[] = { "manifest", "files", NULL };
	char dir[300];
	size_t i, j, k;

	l = json_object_get(c->rec, "files");
	for (j = 0; j < json_array_size(l); j++)
		if (listed_add(c, NULL, jstr(json_array_get(l, j), "path")) ==
		    -1)
			return -1;
	for (i = 0; i < json_array_size(steps); i++) {
		s = json_array_get(steps, i);
		step_dir(s, dir, sizeof(dir));
		for (k = 0; lists[k] != NULL; k++) {
			l = json_object_get(s, lists[k]);
			for (j = 0; j < json_array_size(l); j++) {
				const char *p = jstr(json_array_get(l, j),
				    "path");

				if (p != NULL && listed_add(c, dir, p) == -1)
					return -1;
			}
		}
	}
	if (c->nlisted > 0)
		qsort(c->listed, c->nlisted, sizeof(*c->listed), strp_cmp);
	return 0;
}

/* 1 when path is listed; with prefix, when a listed path is under it. */
static int
listed_has(const struct rc *c, const char *path, int prefix)
{
	size_t lo = 0, hi = c->nlisted, mid, n = strlen(path);
	int r;

	/* the first listed path >= path */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(c->listed[mid], path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->nlisted; lo++) {
		r = strncmp(c->listed[lo], path, n);
		if (r != 0)
			return 0;
		if (!prefix && c->listed[lo][n] == '\0')
			return 1;
		/* "a/b" sorts after "a.x" and "a-x": look on past them */
		if (prefix && c->listed[lo][n] == '/')
			return 1;
	}
	return 0;
}

static void
uncovered(struct rc *c, const char *fmt, const char *path, const char *what)
{
	if (++c->uncovered <= REC_COVER_MAX)
		report(c, 0, "coverage", fmt, path, what);
	else
		c->failed = 1;
}

static int
cover_fn(const char *path, const struct stat *st, int err, void *arg)
{
	struct rc *c = arg;

	if (st == NULL) {
		uncovered(c, "%s: %s", path, strerror(err));
		return 0;
	}
	if (S_ISDIR(st->st_mode)) {
		if (strcmp(path, "steps") == 0 || listed_has(c, path, 1))
			return 1;
		uncovered(c, "%s: %s that the record does not list", path,
		    strcmp(path, REC_PRIV) == 0 ? "the supervisor's private "
		    "folder (the run did not end), a directory" :
		    "a directory");
		return 0;
	}
	if (!S_ISREG(st->st_mode)) {
		uncovered(c, "%s: %s, not a regular file (not opened)", path,
		    rec_ftype(st->st_mode));
		return 0;
	}
	if (listed_has(c, path, 0) || strcmp(path, "record.json") == 0 ||
	    strcmp(path, "record.sig") == 0)
		return 0;
	if (strcmp(path, REC_LOCK) == 0) {
		if (st->st_size != 0)
			uncovered(c, "%s: %s", path, "the supervisor's lock "
			    "file is not empty");
		return 0;
	}
	uncovered(c, "%s: %s", path, "a file that the record does not list");
	return 0;
}

static void
check_coverage(struct rc *c)
{
	if (listed_build(c) == -1) {
		report(c, 0, "coverage", "out of memory");
		return;
	}
	if (rec_walk(c->dirfd, cover_fn, c) == -1) {
		report(c, 0, "coverage", "%s: the walk failed", c->dir);
		return;
	}
	if (c->uncovered > REC_COVER_MAX)
		report(c, 0, "coverage", "%zu more entries that the record "
		    "does not cover", c->uncovered - REC_COVER_MAX);
	else if (c->uncovered == 0)
		report(c, 1, "coverage", "every file of the directory is in the "
		    "record (%zu listed)", c->nlisted);
}

/* --- audit.log ---------------------------------------------------------- */

static void
check_audit(struct rc *c)
{
	const json_t *audit = json_object_get(c->rec, "audit");
	const char *file = jstr(audit, "file"), *paths[1];
	struct rec_result r;
	char path[REC_PATH_MAX + 400], err[512];
	mode_t type;
	int fd, rc;

	/* the file named by the record, but only under DIR */
	if ((fd = rec_open_reg(c->dirfd, file, &type)) == -1) {
		report(c, 0, file, "%s", rec_open_error(errno, type));
		report(c, 0, "audit head", "no audit log");
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", c->dir, file);
	paths[0] = path;
	memset(&r, 0, sizeof(r));
	rc = rec_verify_fds(&fd, paths, 1, c->pubkey, &r, err, sizeof(err));
	close(fd);
	if (rc == -1) {
		report(c, 0, file, "%s", err);
		report(c, 0, "audit head", "the audit log could not be read");
		return;
	}
	if (r.broken)
		report(c, 0, file, "%s", r.where);
	else if (c->pubkey != NULL && r.unsigned_tail > 0)
		/* a replay's log ends with a checkpoint at shutdown: lines
		 * after the last one are unsigned, perhaps appended */
		report(c, 0, file, "no verified final checkpoint: the last "
		    "%llu line%s after the last CHECKPOINT %s not signed",
		    (unsigned long long)r.unsigned_tail,
		    r.unsigned_tail == 1 ? "" : "s",
		    r.unsigned_tail == 1 ? "is" : "are");
	else if (c->pubkey == NULL)
		report(c, 1, file, "chain intact, %llu lines (checkpoint "
		    "signatures not checked: no --pubkey)",
		    (unsigned long long)r.lines);
	else
		report(c, 1, file, "chain intact, %llu lines, checkpoint "
		    "signatures verified (%llu lines after the last one)",
		    (unsigned long long)r.lines,
		    (unsigned long long)r.unsigned_tail);
	if (r.lines != (uint64_t)json_integer_value(json_object_get(audit,
	    "lines")))
		report(c, 0, "audit head", "%llu lines, the record says %lld",
		    (unsigned long long)r.lines,
		    (long long)json_integer_value(json_object_get(audit,
		    "lines")));
	else if (strcmp(r.head, jstr(audit, "chain_head")) != 0)
		report(c, 0, "audit head", "last chain value %s, the record "
		    "says %s", r.head, jstr(audit, "chain_head"));
	else if (strcmp(r.run, jstr(json_object_get(c->rec, "run"), "id")) !=
	    0)
		report(c, 0, "audit head", "START run=%s, the record's run is "
		    "%s", r.run, jstr(json_object_get(c->rec, "run"), "id"));
	else
		report(c, 1, "audit head", "line count, last chain value and "
		    "run id match the record");
}

/*
 * The first line of the audit log is START with config= the sha256 of
 * the configuration that ran: it must be config.ini's.
 */
static void
check_audit_config(struct rc *c)
{
	struct egress_audit_line l;
	const char *file = jstr(json_object_get(c->rec, "audit"), "file");
	const char *want = jstr(c->rec, "config_sha256"), *v;
	char buf[REC_LINE_MAX + 1];
	size_t n = 0, vlen = 0;
	ssize_t r;
	mode_t type;
	int fd;

	if ((fd = rec_open_reg(c->dirfd, file, &type)) == -1) {
		report(c, 0, "audit config", "%s: %s", file,
		    rec_open_error(errno, type));
		return;
	}
	while (n < sizeof(buf) && (r = mc_read(fd, buf + n, sizeof(buf) -
	    n)) != 0) {
		if (r == -1)
			break;
		if (memchr(buf + n, '\n', (size_t)r) != NULL) {
			n += (size_t)r;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	v = memchr(buf, '\n', n);
	if (v != NULL)
		n = (size_t)(v - buf);
	if (egress_audit_parse(buf, n, &l) == -1 || l.eventlen != 5 ||
	    memcmp(l.event, "START", 5) != 0 ||
	    (v = egress_audit_get(&l, "config", &vlen)) == NULL)
		report(c, 0, "audit config", "the first line of %s is not a "
		    "START line with config=", file);
	else if (vlen != strlen(want) || memcmp(v, want, vlen) != 0)
		report(c, 0, "audit config", "START config=%.*s, config.ini's "
		    "sha256 is %s", (int)(vlen < 64 ? vlen : 64), v, want);
	else
		report(c, 1, "audit config", "START config= is config.ini's "
		    "sha256");
}

/* --- consistency -------------------------------------------------------- */

static void
check_order(struct rc *c)
{
	const json_t *steps = json_object_get(c->rec, "steps");
	char dir[300];
	json_t *run;
	size_t i, n = json_array_size(steps);
	char err[512];

	for (i = 0; i < n; i++) {
		const json_t *s = json_array_get(steps, i);

		if (json_integer_value(json_object_get(s, "index")) !=
		    (json_int_t)(i + 1)) {
			report(c, 0, "step order", "step %zu (%s) has index "
			    "%lld", i + 1, jstr(s, "step"),
			    (long long)json_integer_value(json_object_get(s,
			    "index")));
			return;
		}
		step_dir(s, dir, sizeof(dir));
		if (i >= c->ndirs || strcmp(dir + 6, c->dirs[i]) != 0) {
			report(c, 0, "step order", "step %zu is %s, the "
			    "folder steps/%s", i + 1, dir + 6,
			    i < c->ndirs ? c->dirs[i] : "(none)");
			return;
		}
	}
	if (c->ndirs != n) {
		report(c, 0, "step order", "%zu step folders, %zu steps in the "
		    "record", c->ndirs, n);
		return;
	}
	run = rec_load_json(c->dirfd, "run.json", err, sizeof(err));
	if (run != NULL && json_is_integer(json_object_get(run, "steps")) &&
	    json_integer_value(json_object_get(run, "steps")) !=
	    (json_int_t)n) {
		report(c, 0, "step order", "the plan has %lld steps, the "
		    "record %zu", (long long)json_integer_value(
		    json_object_get(run, "steps")), n);
		json_decref(run);
		return;
	}
	json_decref(run);
	report(c, 1, "step order", "%zu steps, indexes 1..%zu, folders in "
	    "order", n, n);
}

static void
check_states(struct rc *c)
{
	const json_t *steps = json_object_get(c->rec, "steps");
	const json_t *run = json_object_get(c->rec, "run");
	const char *rs = jstr(run, "state"), *st, *term;
	size_t i, n = json_array_size(steps);
	int all_ok = 1;

	for (i = 0; i < n; i++) {
		const json_t *s = json_array_get(steps, i);

		st = jstr(s, "state");
		term = jstr(s, "termination");
		if (st == NULL || (strcmp(st, "captured") != 0 &&
		    strcmp(st, "skipped") != 0)) {
			report(c, 0, "final states", "step %s is %s, not "
			    "captured or skipped", jstr(s, "step"),
			    st != NULL ? st : "(none)");
			return;
		}
		if (term == NULL) {
			report(c, 0, "final states", "step %s has no "
			    "termination", jstr(s, "step"));
			return;
		}
		if (strcmp(term, "exited") != 0 || !json_is_integer(
		    json_object_get(s, "exit_code")) || json_integer_value(
		    json_object_get(s, "exit_code")) != 0)
			all_ok = 0;
	}
	if (rs == NULL || (strcmp(rs, "finished") != 0 &&
	    strcmp(rs, "cancelled") != 0)) {
		report(c, 0, "final states", "the run is %s, not finished or "
		    "cancelled", rs != NULL ? rs : "(none)");
		return;
	}
	if (!json_is_string(json_object_get(run, "ended")) ||
	    !json_is_integer(json_object_get(run, "exit"))) {
		report(c, 0, "final states", "the run has no end time or exit "
		    "status");
		return;
	}
	if ((json_integer_value(json_object_get(run, "exit")) == 0) !=
	    (all_ok && strcmp(rs, "finished") == 0)) {
		report(c, 0, "final states", "exit status %lld, but %s",
		    (long long)json_integer_value(json_object_get(run, "exit")),
		    all_ok && strcmp(rs, "finished") == 0 ?
		    "every step exited 0" : "not every step exited 0");
		return;
	}
	report(c, 1, "final states", "every step captured or skipped, the run "
	    "%s with exit status %lld", rs,
	    (long long)json_integer_value(json_object_get(run, "exit")));
}

struct counts {
	json_int_t	 allowed, blocked, failed;
};

/* The step index (0-based) whose name is v[0..n), or -1. */
static long
step_of(const json_t *steps, const char *v, size_t n)
{
	size_t i;
	const char *name;

	if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
		v++;
		n -= 2;
	}
	for (i = 0; i < json_array_size(steps); i++) {
		name = jstr(json_array_get(steps, i), "step");
		if (strlen(name) == n && memcmp(name, v, n) == 0)
			return (long)i;
	}
	return -1;
}

/* Count line[0..n) into cnt; 0, or -1 with why set. */
static int
count_line(const json_t *steps, const char *line, size_t n,
    struct counts *cnt, char *why, size_t cap)
{
	struct egress_audit_line l;
	const char *v;
	size_t vlen = 0;
	long i;

	if (egress_audit_parse(line, n, &l) == -1) {
		snprintf(why, cap, "not an audit line");
		return -1;
	}
	if ((v = egress_audit_get(&l, "step", &vlen)) == NULL)
		return 0;
	if ((i = step_of(steps, v, vlen)) == -1) {
		snprintf(why, cap, "a line with step=%.*s, not a step of the "
		    "record", (int)(vlen < 64 ? vlen : 64), v);
		return -1;
	}
	if (l.eventlen == 5 && memcmp(l.event, "ALLOW", 5) == 0)
		cnt[i].allowed++;
	else if (l.eventlen == 5 && memcmp(l.event, "BLOCK", 5) == 0)
		cnt[i].blocked++;
	else if (l.eventlen == 4 && memcmp(l.event, "FAIL", 4) == 0)
		cnt[i].failed++;
	return 0;
}

static void
check_decisions(struct rc *c)
{
	static const char *const names[] = { "allowed", "blocked", "failed" };
	const json_t *steps = json_object_get(c->rec, "steps");
	const char *file = jstr(json_object_get(c->rec, "audit"), "file");
	size_t n = json_array_size(steps), len = 0, i, k, start;
	struct counts *cnt;
	char *line, buf[65536], why[512], lwhy[256];
	uint64_t lines = 0;
	ssize_t r;
	mode_t type;
	int fd, bad = 0, too_long = 0;

	why[0] = '\0';
	if ((fd = rec_open_reg(c->dirfd, file, &type)) == -1) {
		report(c, 0, "decisions", "%s: %s", file,
		    rec_open_error(errno, type));
		return;
	}
	cnt = eg_calloc(n ? n : 1, sizeof(*cnt));
	line = eg_malloc(REC_CHECK_LINE_MAX);
	if (cnt == NULL || line == NULL) {
		report(c, 0, "decisions", "out of memory");
		goto out;
	}
	for (;;) {
		if ((r = mc_read(fd, buf, sizeof(buf))) == -1) {
			snprintf(why, sizeof(why), "%s: %s", file,
			    strerror(errno));
			bad = 1;
			break;
		}
		/* each '\n' ends a line; EOF ends a last line without one */
		for (i = start = 0; !bad && i <= (size_t)r; i++) {
			if (i < (size_t)r && buf[i] != '\n')
				continue;
			k = i - start;
			if (len + k > REC_CHECK_LINE_MAX)
				too_long = 1;
			else if (!too_long) {
				memcpy(line + len, buf + start, k);
				len += k;
			}
			start = i + 1;
			if (i == (size_t)r && (r > 0 || (len == 0 &&
			    !too_long)))
				break;
			lines++;
			if (too_long) {
				snprintf(why, sizeof(why), "%s:%llu: a line "
				    "longer than %u bytes", file,
				    (unsigned long long)lines,
				    REC_CHECK_LINE_MAX);
				bad = 1;
			} else if (count_line(steps, line, len, cnt, lwhy,
			    sizeof(lwhy)) == -1) {
				snprintf(why, sizeof(why), "%s:%llu: %s", file,
				    (unsigned long long)lines, lwhy);
				bad = 1;
			}
			len = 0;
		}
		if (r == 0 || bad)
			break;
	}
	for (i = 0; !bad && i < n; i++) {
		const json_t *d = json_object_get(json_array_get(steps, i),
		    "decisions");
		json_int_t got[3] = { cnt[i].allowed, cnt[i].blocked,
		    cnt[i].failed };

		for (k = 0; k < 3; k++)
			if (json_integer_value(json_object_get(d, names[k])) !=
			    got[k] || !json_is_integer(json_object_get(d,
			    names[k]))) {
				snprintf(why, sizeof(why), "step %s: %s %lld "
				    "in its receipt, %lld in %s",
				    jstr(json_array_get(steps, i), "step"),
				    names[k], (long long)json_integer_value(
				    json_object_get(d, names[k])),
				    (long long)got[k], file);
				bad = 1;
				break;
			}
	}
	if (bad)
		report(c, 0, "decisions", "%s", why);
	else
		report(c, 1, "decisions", "every step's allowed/blocked/failed "
		    "equal its lines in %s", file);
out:
	eg_free(line);
	eg_free(cnt);
	close(fd);
}

/* --- main --------------------------------------------------------------- */

static int
rec_check(const char *dir, const char *pubkey)
{
	struct rc c;
	const json_t *steps;
	size_t i;

	memset(&c, 0, sizeof(c));
	c.dirfd = -1;
	c.dir = dir;
	c.pubkey = pubkey;
	/* DIR once, not following a symlink; everything through it */
	if ((c.dirfd = rec_open_dir(dir)) == -1) {
		report(&c, 0, "record.json", "%s: %s", dir, errno == ELOOP ?
		    "a symbolic link (not followed: give the record directory "
		    "itself)" : strerror(errno));
		goto out;
	}
	if (check_record(&c) == -1)
		goto out;
	check_sig(&c);
	check_digest(&c, "plan.ini", "plan_sha256");
	check_digest(&c, "config.ini", "config_sha256");
	check_listed(&c, json_object_get(c.rec, "files"), NULL, "files");
	check_run(&c);
	c.dirs = rec_step_dirs(c.dirfd, &c.ndirs);
	if (c.dirs == NULL && c.ndirs == (size_t)-1) {
		report(&c, 0, "steps", "%s", strerror(errno));
		c.ndirs = 0;
	}
	steps = json_object_get(c.rec, "steps");
	for (i = 0; i < json_array_size(steps); i++) {
		char sdir[300];

		check_receipt(&c, json_array_get(steps, i));
		check_files(&c, json_array_get(steps, i));
		step_dir(json_array_get(steps, i), sdir, sizeof(sdir));
		check_listed(&c, json_object_get(json_array_get(steps, i),
		    "files"), sdir, sdir);
	}
	check_coverage(&c);
	check_audit(&c);
	check_audit_config(&c);
	check_order(&c);
	check_states(&c);
	check_decisions(&c);
out:
	fputs(closing, stdout);
	fflush(stdout);
	eg_strv_free(c.dirs, c.ndirs);
	eg_strv_free(c.listed, c.nlisted);
	json_decref(c.rec);
	if (c.dirfd != -1)
		close(c.dirfd);
	return c.failed ? 1 : 0;
}

int
rec_check_main(int argc, char *argv[])
{
	static const char *const names[] = { "pubkey", NULL };
	const char *pubkey = NULL;
	int i, rc;

	if ((i = rec_opts1(argc, argv, "check", check_usage, names, &pubkey,
	    &rc)) == -1)
		return rc;
	return rec_check(argv[i], pubkey);
}
