/*
 * test-capture.c: rp_capture_step() and the patch on temp directories.
 *  - stdout/stderr redacted (a value across the 64 KiB read boundary);
 *    declared files redacted into files/PATH; a symlinked file, a
 *    symlinked parent directory, "..", an absolute path, a fifo, a
 *    device, a socket, a directory and a missing file are gaps
 *    not_captured:PATH (and the fifo does not block);
 *  - max_file caps a file (file_truncated:PATH) and the keeper's
 *    "truncated" file gives output_truncated:stdout;
 *  - manifest.json digests equal the files; no file holds a secret; the
 *    raw files are gone; a second run and a run after a simulated crash
 *    give the same bytes;
 *  - patch: tracked + untracked changes, ignored files and the record
 *    directory left out, the repository's .git not written; git never
 *    runs what the step planted (.git/config fsmonitor, filters, textconv,
 *    diff.external, pager, hooks, .gitattributes, a git in PATH inside
 *    the tree, GIT_CONFIG_PARAMETERS in the environment); a secret in a
 *    text or a binary file deletes the patch (secret_in_patch); outside a
 *    work tree and without git: patch_unavailable.
 */
#include "config.h"

/* paths here are short temp paths in PATH_MAX buffers */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../../src/mod/common/fsutil.h"
#include "../../src/mod/replay/capture.h"
#include "tap.h"

#define SECRET1	"sk-test-0123456789abcdefXYZ"
#define SECRET2	"hunter22-correct-horse"

static char root[] = "/tmp/test-capture.XXXXXX";
static const struct rp_secret secrets[] = {
	{ "API_KEY", SECRET1, sizeof(SECRET1) - 1 },
	{ "PASSWORD", SECRET2, sizeof(SECRET2) - 1 },
};

static void
put(const char *path, const void *buf, size_t len)
{
	FILE *fp = fopen(path, "wb");

	if (fp == NULL || fwrite(buf, 1, len, fp) != len || fclose(fp) != 0)
		diag("cannot write %s", path);
}

static void
puts_file(const char *path, const char *s)
{
	put(path, s, strlen(s));
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;

	if (fp == NULL)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, fp) != (size_t)n)
		n = 0;
	buf[n] = '\0';
	fclose(fp);
	if (len != NULL)
		*len = (size_t)n;
	return buf;
}

static int
sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A secret anywhere under a directory (nftw callback state). */
static int secret_found;
static char secret_where[PATH_MAX];

static int
scan_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	size_t len, i;
	char *b;

	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if ((b = slurp(path, &len)) == NULL)
		return 0;
	for (i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		if (memmem(b, len, secrets[i].val, secrets[i].len) != NULL) {
			secret_found = 1;
			snprintf(secret_where, sizeof(secret_where), "%s", path);
		}
	free(b);
	return 0;
}

static int
tree_has_secret(const char *dir)
{
	secret_found = 0;
	nftw(dir, scan_one, 16, FTW_PHYS);
	if (secret_found)
		diag("secret in %s", secret_where);
	return secret_found;
}

static json_t *
load_json(const char *dir, const char *name)
{
	char p[PATH_MAX];
	json_error_t je;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return json_load_file(p, 0, &je);
}

static int
has_str(json_t *a, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return 1;
	return 0;
}

static int
has_gap(const char *step, const char *g)
{
	json_t *c = load_json(step, "capture.json");
	int r = c != NULL && has_str(json_object_get(c, "gaps"), g);

	json_decref(c);
	return r;
}

static int
has_redacted(const char *step, const char *p)
{
	json_t *c = load_json(step, "capture.json");
	int r = c != NULL && has_str(json_object_get(c, "redacted"), p);

	json_decref(c);
	return r;
}

/* Every manifest entry's size and sha256 are the file's; n entries. */
static int
manifest_ok(const char *step, size_t *n, int *has_patch)
{
	json_t *m = load_json(step, "manifest.json"), *e;
	char p[PATH_MAX], hex[65];
	size_t i, len;
	char *b;
	int good = m != NULL && json_is_array(m);

	*n = 0;
	*has_patch = 0;
	json_array_foreach(m, i, e) {
		const char *path = json_string_value(json_object_get(e, "path"));

		snprintf(p, sizeof(p), "%s/%s", step, path ? path : "?");
		if (path != NULL && strcmp(path, "patch") == 0)
			*has_patch = 1;
		if ((b = slurp(p, &len)) == NULL) {
			good = 0;
			continue;
		}
		mc_sha256_hex(b, len, hex);
		if (strcmp(hex, json_string_value(json_object_get(e,
		    "sha256"))) != 0 || (json_int_t)len !=
		    json_integer_value(json_object_get(e, "size")))
			good = 0;
		free(b);
		(*n)++;
	}
	json_decref(m);
	return good;
}

struct env {
	char	work[PATH_MAX], step[PATH_MAX], priv[PATH_MAX], raw[PATH_MAX];
	int	stepfd, privfd, rawfd;
};

static void
env_open(struct env *e, const char *name, const char *privsub)
{
	snprintf(e->work, sizeof(e->work), "%s/%s-work", root, name);
	snprintf(e->step, sizeof(e->step), "%s/%s-step", root, name);
	snprintf(e->raw, sizeof(e->raw), "%s/%s-raw", root, name);
	if (privsub != NULL)
		snprintf(e->priv, sizeof(e->priv), "%s/%s", e->work, privsub);
	else
		snprintf(e->priv, sizeof(e->priv), "%s/%s-priv", root, name);
	sh("mkdir -p '%s' '%s' '%s' '%s'", e->work, e->step, e->raw, e->priv);
	e->stepfd = open(e->step, O_RDONLY | O_DIRECTORY);
	e->privfd = open(e->priv, O_RDONLY | O_DIRECTORY);
	e->rawfd = open(e->raw, O_RDONLY | O_DIRECTORY);
}

static void
env_close(struct env *e)
{
	close(e->stepfd);
	close(e->privfd);
	close(e->rawfd);
}

static int
capture(struct env *e, char *const *files, size_t n, uint64_t max,
    char *err, size_t errlen)
{
	struct rp_capture c;

	memset(&c, 0, sizeof(c));
	c.workdir = e->work;
	c.stepfd = e->stepfd;
	c.privfd = e->privfd;
	c.rawfd = e->rawfd;
	c.files = files;
	c.nfiles = n;
	c.secrets = secrets;
	c.nsecrets = 2;
	c.max_file = max;
	return rp_capture_step(&c, err, errlen);
}

static void
files_test(void)
{
	static char *const words[] = {
		"report.txt", "sub/dir/a.txt", "link.txt", "ldir/a.txt",
		"../outside.txt", "/etc/hostname", "fifo", "dev", "sock",
		"sub", "missing.txt", "big.bin", "sub/../report.txt",
	};
	struct env e;
	struct sockaddr_un sa;
	char p[PATH_MAX + 64], err[512], *out, *m1, *c1, *m2, *c2;
	size_t len, n, i;
	int has_patch, s, rc;

	env_open(&e, "files", NULL);
	/* stdout: 200 KiB with SECRET1 across the 64 KiB read boundary */
	len = 200 * 1024;
	out = malloc(len);
	for (i = 0; i < len; i++)
		out[i] = (char)('a' + i % 23);
	memcpy(out + 65536 - 7, SECRET1, sizeof(SECRET1) - 1);
	memcpy(out + len - (sizeof(SECRET2) - 1), SECRET2, sizeof(SECRET2) - 1);
	snprintf(p, sizeof(p), "%s/stdout", e.raw);
	put(p, out, len);
	free(out);
	snprintf(p, sizeof(p), "%s/stderr", e.raw);
	puts_file(p, "error: token=" SECRET2 "\n");
	snprintf(p, sizeof(p), "%s/truncated", e.raw);
	puts_file(p, "stdout\n");

	snprintf(p, sizeof(p), "%s/report.txt", e.work);
	puts_file(p, "<report key=\"" SECRET1 "\"/>\n");
	sh("mkdir -p '%s/sub/dir' && echo inner > '%s/sub/dir/a.txt'", e.work,
	    e.work);
	snprintf(p, sizeof(p), "%s/outside.txt", root);
	puts_file(p, SECRET1);
	sh("cd '%s' && ln -s report.txt link.txt && ln -s sub/dir ldir && "
	    "mkfifo fifo", e.work);
	snprintf(p, sizeof(p), "%s/dev", e.work);
	if (mknod(p, S_IFCHR | 0600, makedev(1, 3)) != 0)
		diag("mknod: %s (the device case is a missing file then)",
		    strerror(errno));
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", e.work);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		diag("bind: %s", strerror(errno));
	sh("head -c 1048600 /dev/zero > '%s/big.bin'", e.work);

	alarm(60);	/* a fifo opened for reading would block here */
	rc = capture(&e, words, sizeof(words) / sizeof(words[0]), 1 << 20, err,
	    sizeof(err));
	alarm(0);
	is_int(rc, 0, "capture ok (%s)", err);
	close(s);
	ok(has_gap(e.step, "not_captured:link.txt"), "symlinked file refused");
	ok(has_gap(e.step, "not_captured:ldir/a.txt"),
	    "file under a symlinked directory refused");
	ok(has_gap(e.step, "not_captured:../outside.txt"), ".. refused");
	ok(has_gap(e.step, "not_captured:sub/../report.txt"),
	    ".. inside a path refused");
	ok(has_gap(e.step, "not_captured:/etc/hostname"), "absolute refused");
	ok(has_gap(e.step, "not_captured:fifo"), "fifo refused (and no hang)");
	ok(has_gap(e.step, "not_captured:dev"), "device refused");
	ok(has_gap(e.step, "not_captured:sock"), "socket refused");
	ok(has_gap(e.step, "not_captured:sub"), "directory refused");
	ok(has_gap(e.step, "not_captured:missing.txt"), "missing file");
	ok(has_gap(e.step, "file_truncated:big.bin"), "big.bin truncated");
	ok(has_gap(e.step, "output_truncated:stdout"),
	    "keeper's truncated file -> output_truncated:stdout");
	ok(!has_gap(e.step, "output_truncated:stderr"), "stderr not truncated");
	ok(has_gap(e.step, "file_truncated:report.txt") == 0,
	    "report.txt whole");
	snprintf(p, sizeof(p), "%s/files/big.bin", e.step);
	free(slurp(p, &len));
	is_int(len, 1 << 20, "files/big.bin holds max_file bytes");
	snprintf(p, sizeof(p), "%s/files/report.txt", e.step);
	out = slurp(p, &len);
	is_str(out, "<report key=\"[REDACTED]\"/>\n", "report redacted");
	free(out);
	snprintf(p, sizeof(p), "%s/files/sub/dir/a.txt", e.step);
	out = slurp(p, NULL);
	is_str(out, "inner\n", "nested file copied");
	free(out);
	snprintf(p, sizeof(p), "%s/stderr", e.step);
	out = slurp(p, NULL);
	is_str(out, "error: token=[REDACTED]\n", "stderr redacted");
	free(out);
	snprintf(p, sizeof(p), "%s/stdout", e.step);
	out = slurp(p, &len);
	is_int(len, 200 * 1024 - (sizeof(SECRET1) - 1) - (sizeof(SECRET2) - 1) +
	    20, "stdout: two values replaced");
	ok(out != NULL && memmem(out, len, "[REDACTED]", 10) == out + 65536 - 7,
	    "the value across the read boundary replaced in place");
	free(out);
	ok(has_redacted(e.step, "stdout") && has_redacted(e.step, "stderr") &&
	    has_redacted(e.step, "files/report.txt") &&
	    !has_redacted(e.step, "files/sub/dir/a.txt"),
	    "redacted lists stdout, stderr, files/report.txt only");
	ok(manifest_ok(e.step, &n, &has_patch), "manifest digests match");
	is_int(n, 5, "manifest: stdout, stderr and three files");
	ok(!tree_has_secret(e.step), "no secret in the step folder");
	snprintf(p, sizeof(p), "%s/stdout", e.raw);
	ok(access(p, F_OK) != 0, "raw stdout removed");
	snprintf(p, sizeof(p), "%s/truncated", e.raw);
	ok(access(p, F_OK) != 0, "keeper's truncated removed");

	/* idempotent: again, and after a crash before the JSON files */
	snprintf(p, sizeof(p), "%s/manifest.json", e.step);
	m1 = slurp(p, NULL);
	snprintf(p, sizeof(p), "%s/capture.json", e.step);
	c1 = slurp(p, NULL);
	is_int(capture(&e, words, sizeof(words) / sizeof(words[0]), 1 << 20,
	    err, sizeof(err)), 0, "second capture ok");
	snprintf(p, sizeof(p), "%s/manifest.json", e.step);
	m2 = slurp(p, NULL);
	is_str(m2, m1, "same manifest after a second run");
	free(m2);
	snprintf(p, sizeof(p), "%s/capture.json", e.step);
	unlink(p);
	sh("cd '%s' && head -c 200 /dev/zero > .stdout.cap", e.step);
	snprintf(p, sizeof(p), "%s/stdout", e.raw);
	/* the raw files are back as the crash left them */
	out = malloc(200 * 1024);
	for (i = 0; i < 200 * 1024; i++)
		out[i] = (char)('a' + i % 23);
	memcpy(out + 65536 - 7, SECRET1, sizeof(SECRET1) - 1);
	memcpy(out + 200 * 1024 - (sizeof(SECRET2) - 1), SECRET2,
	    sizeof(SECRET2) - 1);
	put(p, out, 200 * 1024);
	free(out);
	snprintf(p, sizeof(p), "%s/stderr", e.raw);
	puts_file(p, "error: token=" SECRET2 "\n");
	snprintf(p, sizeof(p), "%s/truncated", e.raw);
	puts_file(p, "stdout\n");
	is_int(capture(&e, words, sizeof(words) / sizeof(words[0]), 1 << 20,
	    err, sizeof(err)), 0, "capture after a crash ok");
	snprintf(p, sizeof(p), "%s/manifest.json", e.step);
	m2 = slurp(p, NULL);
	snprintf(p, sizeof(p), "%s/capture.json", e.step);
	c2 = slurp(p, NULL);
	is_str(m2, m1, "same manifest after a crash");
	is_str(c2, c1, "same capture.json after a crash");
	snprintf(p, sizeof(p), "%s/.stdout.cap", e.step);
	ok(access(p, F_OK) != 0, "stale temp file gone");
	diag("capture.json: %s", c2 != NULL ? c2 : "(none)");
	free(m1);
	free(m2);
	free(c1);
	free(c2);
	env_close(&e);
}

/* The markers a planted command would create. */
static int
markers(const char *dir)
{
	char p[PATH_MAX + 16];
	int i, n = 0;

	for (i = 1; i <= 12; i++) {
		snprintf(p, sizeof(p), "%s/MARK%d", dir, i);
		if (access(p, F_OK) == 0) {
			diag("marker MARK%d exists: a planted command ran", i);
			n++;
		}
	}
	return n;
}

static void
plant(const char *work, const char *mk, int base)
{
	char p[PATH_MAX + 64];
	int i;
	static const char *const hooks[] = { "pre-commit", "post-index-change",
		"post-checkout", "reference-transaction", "fsmonitor-watchman",
		"pre-auto-gc" };

	snprintf(p, sizeof(p), "%s/.git/config", work);
	sh("cat >> '%s' <<'EOF'\n"
	    "[core]\n\tfsmonitor = \"touch %s/MARK%d\"\n"
	    "\tpager = \"touch %s/MARK%d\"\n"
	    "\thooksPath = %s/.git/evilhooks\n"
	    "\tattributesFile = %s/evilattr\n"
	    "[filter \"x\"]\n\tclean = \"touch %s/MARK%d; cat\"\n"
	    "\tsmudge = \"touch %s/MARK%d; cat\"\n\trequired = true\n"
	    "[diff \"x\"]\n\ttextconv = \"touch %s/MARK%d; cat\"\n"
	    "[diff]\n\texternal = \"touch %s/MARK%d\"\n"
	    "[pager]\n\tdiff = \"touch %s/MARK%d\"\n"
	    "EOF", p, mk, base, mk, base + 1, work, work, mk, base + 2, mk,
	    base + 3, mk, base + 4, mk, base + 5, mk, base + 6);
	sh("mkdir -p '%s/.git/evilhooks' '%s/.git/hooks'", work, work);
	for (i = 0; i < (int)(sizeof(hooks) / sizeof(hooks[0])); i++) {
		sh("printf '#!/bin/sh\\ntouch %s/MARK%d\\n' > '%s/.git/hooks/%s' "
		    "&& cp '%s/.git/hooks/%s' '%s/.git/evilhooks/%s' && "
		    "chmod +x '%s/.git/hooks/%s' '%s/.git/evilhooks/%s'",
		    mk, base + 7, work, hooks[i], work, hooks[i], work,
		    hooks[i], work, hooks[i], work, hooks[i]);
	}
	sh("printf '* filter=x diff=x\\n' >> '%s/.gitattributes'", work);
	sh("printf '* filter=x diff=x\\n' > '%s/evilattr'", work);
}

static void
patch_test(void)
{
	static char *const words[] = { "patch" };
	struct env e;
	char p[PATH_MAX + 64], err[512], mk[PATH_MAX], *pt, *oldpath;
	char *before, *after;
	size_t n, len;
	int has_patch;

	env_open(&e, "git", "records/r1/priv");
	snprintf(mk, sizeof(mk), "%s/markers", root);
	sh("mkdir -p '%s'", mk);
	if (sh("cd '%s' && git init -q . && git config user.name t && "
	    "git config user.email t@example.test && "
	    "printf 'one\\ntwo\\n' > a.txt && printf 'bin\\000ary' > b.bin && "
	    "printf 'ignored.txt\\n' > .gitignore && echo keep > ign-tracked && "
	    "git add a.txt b.bin .gitignore ign-tracked && "
	    "echo ign-tracked >> .gitignore && "
	    "git commit -qm base && echo before > u.txt && "
	    "echo secretish > ignored.txt", e.work) != 0) {
		ok(1, "# SKIP git cannot make a repository");
		return;
	}
	/* a git planted in the tree and first in PATH, and hostile config
	 * before the run began */
	sh("mkdir -p '%s/bin' && printf '#!/bin/sh\\ntouch %s/MARK12\\n"
	    "exec /usr/bin/git \"$@\"\\n' > '%s/bin/git' && chmod +x "
	    "'%s/bin/git' && git -C '%s' add -f bin/git >/dev/null && "
	    "git -C '%s' commit -qm bin", e.work, mk, e.work, e.work, e.work,
	    e.work);
	oldpath = strdup(getenv("PATH"));
	snprintf(p, sizeof(p), "%s/bin:%s", e.work, oldpath);
	setenv("PATH", p, 1);
	setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='touch /tmp/x'", 1);
	plant(e.work, mk, 1);
	sh("cd '%s' && find .git -type f | sort | xargs sha256sum > '%s/before'",
	    e.work, root);
	is_int(rp_patch_begin(e.work, e.privfd, err, sizeof(err)), 0,
	    "rp_patch_begin (%s)", err);
	setenv("PATH", oldpath, 1);

	/* the step: changes, a hostile config planted again */
	sh("cd '%s' && printf 'one\\nTWO\\nthree\\n' > a.txt && "
	    "echo after > u.txt && echo new > n.txt && echo more >> ignored.txt "
	    "&& printf 'bin\\000ARY' > b.bin && echo changed > ign-tracked",
	    e.work);
	plant(e.work, mk, 1);
	/* and an embedded repository with its own hostile config */
	sh("cd '%s' && mkdir nested && cd nested && git init -q . && "
	    "echo x > x && git add x && git -c user.name=t "
	    "-c user.email=t@example.test commit -qm x && "
	    "git config core.fsmonitor 'touch %s/MARK10' && "
	    "git config core.hooksPath /nonexistent && "
	    "git config filter.x.clean 'touch %s/MARK11' && "
	    "echo '* filter=x' > .gitattributes", e.work, mk, mk);
	is_int(capture(&e, words, 1, 1 << 20, err, sizeof(err)), 0,
	    "capture with patch (%s)", err);
	unsetenv("GIT_CONFIG_PARAMETERS");
	is_int(markers(mk), 0, "no planted command ran");
	snprintf(p, sizeof(p), "%s/patch", e.step);
	pt = slurp(p, &len);
	ok(pt != NULL && len > 0, "patch written (%zu bytes)", len);
	if (pt == NULL)
		pt = strdup("");
	ok(strstr(pt, "+TWO") != NULL && strstr(pt, "+three") != NULL,
	    "tracked change in the patch");
	ok(strstr(pt, "-before") != NULL && strstr(pt, "+after") != NULL,
	    "untracked file's change (against run start)");
	ok(strstr(pt, "b/n.txt") != NULL, "new file in the patch");
	ok(strstr(pt, "GIT binary patch") != NULL, "binary change as binary");
	ok(strstr(pt, "+changed") != NULL, "tracked-but-ignored file kept");
	ok(strstr(pt, "ignored.txt") == NULL, "ignored file left out");
	ok(strstr(pt, "records/") == NULL, "record directory left out");
	ok(strstr(pt, "Subproject commit") != NULL,
	    "embedded repository as a gitlink");
	ok(strstr(pt, ".gitattributes") != NULL,
	    ".gitattributes change shown, not obeyed");
	free(pt);
	ok(manifest_ok(e.step, &n, &has_patch) && has_patch,
	    "manifest lists the patch");
	ok(!has_gap(e.step, "patch_unavailable"), "no patch gap");
	/* the user's .git is not written by us (the step's plant aside) */
	sh("cd '%s' && git -c core.fsmonitor=false status >/dev/null 2>&1; true",
	    root);
	sh("cd '%s' && mv .git/config .git/config.planted; "
	    "find .git -type f ! -name config.planted | sort | "
	    "xargs sha256sum > '%s/after'; mv .git/config.planted .git/config",
	    e.work, root);
	snprintf(p, sizeof(p), "%s/before", root);
	before = slurp(p, NULL);
	snprintf(p, sizeof(p), "%s/after", root);
	after = slurp(p, NULL);
	/* before held the config as planted at begin; compare the rest */
	sh("grep -v ' ./.git/config$\\| .git/config$' '%s/before' > '%s/b2'; "
	    "grep -v ' .git/config$' '%s/after' > '%s/a2'", root, root, root,
	    root);
	ok(sh("cmp -s '%s/b2' '%s/a2'", root, root) == 0,
	    "repository's .git unchanged (index, objects, refs)");
	free(before);
	free(after);

	/* a secret in a text file, then only in a binary file */
	snprintf(p, sizeof(p), "%s/capture.json", e.step);
	unlink(p);
	snprintf(p, sizeof(p), "%s/manifest.json", e.step);
	unlink(p);
	snprintf(p, sizeof(p), "%s/leak.txt", e.work);
	puts_file(p, "key=" SECRET1 "\n");
	is_int(capture(&e, words, 1, 1 << 20, err, sizeof(err)), 0,
	    "capture with a secret in the tree");
	ok(has_gap(e.step, "secret_in_patch"), "secret_in_patch");
	snprintf(p, sizeof(p), "%s/patch", e.step);
	ok(access(p, F_OK) != 0, "patch deleted");
	ok(manifest_ok(e.step, &n, &has_patch) && !has_patch,
	    "manifest without the patch");
	ok(!tree_has_secret(e.step), "no secret in the step folder");
	snprintf(p, sizeof(p), "%s/leak.txt", e.work);
	unlink(p);
	snprintf(p, sizeof(p), "%s/capture.json", e.step);
	unlink(p);
	snprintf(p, sizeof(p), "%s/manifest.json", e.step);
	unlink(p);
	snprintf(p, sizeof(p), "%s/leak.bin", e.work);
	{
		char bin[256];

		memset(bin, 0, sizeof(bin));
		memcpy(bin + 100, SECRET2, sizeof(SECRET2) - 1);
		put(p, bin, sizeof(bin));
	}
	is_int(capture(&e, words, 1, 1 << 20, err, sizeof(err)), 0,
	    "capture with a secret in a binary file");
	ok(has_gap(e.step, "secret_in_patch"),
	    "secret_in_patch for a binary file (compressed in the patch)");
	snprintf(p, sizeof(p), "%s/patch", e.step);
	ok(access(p, F_OK) != 0, "patch deleted");
	ok(!tree_has_secret(e.step), "no secret in the step folder");
	is_int(markers(mk), 0, "still no planted command ran");
	free(oldpath);
	env_close(&e);
}

static void
nogit_test(void)
{
	static char *const words[] = { "patch" };
	struct env e;
	char err[512], *oldpath;
	json_t *c;

	env_open(&e, "plain", NULL);
	is_int(rp_patch_begin(e.work, e.privfd, err, sizeof(err)), 0,
	    "begin outside a work tree");
	is_int(capture(&e, words, 1, 1 << 20, err, sizeof(err)), 0,
	    "capture outside a work tree");
	ok(has_gap(e.step, "patch_unavailable"), "patch_unavailable");
	c = load_json(e.step, "capture.json");
	is_str(json_string_value(json_object_get(json_object_get(c, "notes"),
	    "patch")), "not a git work tree", "note: not a git work tree");
	json_decref(c);
	ok(has_gap(e.step, "output_missing:stdout"),
	    "no raw stdout: output_missing:stdout");
	env_close(&e);

	env_open(&e, "nogit", NULL);
	sh("cd '%s' && git init -q .", e.work);
	oldpath = strdup(getenv("PATH"));
	setenv("PATH", "/nonexistent", 1);
	is_int(rp_patch_begin(e.work, e.privfd, err, sizeof(err)), 0,
	    "begin without git");
	setenv("PATH", oldpath, 1);
	free(oldpath);
	is_int(capture(&e, words, 1, 1 << 20, err, sizeof(err)), 0,
	    "capture without git");
	ok(has_gap(e.step, "patch_unavailable"), "patch_unavailable");
	c = load_json(e.step, "capture.json");
	is_str(json_string_value(json_object_get(json_object_get(c, "notes"),
	    "patch")), "git not found", "note: git not found");
	json_decref(c);
	env_close(&e);
}

int
main(void)
{
	if (mkdtemp(root) == NULL) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	files_test();
	if (system("git --version >/dev/null 2>&1") == 0)
		patch_test();
	else if (getenv("EGRESSD_REQUIRE_GIT") != NULL)
		ok(0, "git missing and EGRESSD_REQUIRE_GIT set");
	else
		ok(1, "# SKIP git not installed: patch tests");
	nogit_test();
	if (getenv("KEEP_TMP") == NULL)
		sh("rm -rf '%s'", root);
	return done_testing();
}
