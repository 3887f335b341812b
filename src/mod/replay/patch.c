/*
 * patch.c: the `patch` capture with a private git directory (patch.h).
 *
 * Layout in the run's private folder:
 *   patch/state.json	{"state":"ok","git","top","alt","tree","format"}
 *			or {"state":"unavailable","reason":S}; written last
 *			by rp_patch_begin(), so its presence means "begun"
 *   patch/git/		private GIT_DIR: config, HEAD, info/attributes,
 *			info/exclude, objects/ (blobs of untracked files),
 *			index.base, index.cap
 *   patch/home/	HOME and XDG_CONFIG_HOME of git (empty)
 */
#include "config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "capture.h"
#include "patch.h"
#include "../common/fsutil.h"

#define GIT_ERR_MAX	512		/* bytes of git's stderr kept */
#define EXCLUDE_MAX	(1024 * 1024)	/* the repository's info/exclude */
/* ours: the repository's, a newline, two escaped record-directory lines */
#define EXCLUDE_OUT_MAX	(EXCLUDE_MAX + 1 + 2 * (2 * PATH_MAX + 2))

/* What every git invocation runs with (paths absolute). */
struct gitctx {
	char	git[PATH_MAX];		/* the binary */
	char	top[PATH_MAX];		/* GIT_WORK_TREE */
	char	pdir[PATH_MAX];		/* priv/patch */
	char	alt[PATH_MAX];		/* the repository's objects */
	int	pfd;			/* priv/patch, O_DIRECTORY */
};

static void
why_set(char *why, size_t len, const char *fmt, const char *a, const char *b)
{
	if (why != NULL && len > 0)
		snprintf(why, len, fmt, a, b);
}

/* snprintf for paths: -1 (ENAMETOOLONG) when it does not fit. */
static int
pathf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Read at most cap - 1 bytes of path (dirfd-relative), NUL-terminated,
 * trailing white space cut.  Length or -1. */
static ssize_t
read_small(int dirfd, const char *path, char *buf, size_t cap)
{
	ssize_t n, off = 0;
	int fd;

	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
		return -1;
	while ((size_t)off < cap - 1) {
		n = mc_read(fd, buf + off, cap - 1 - (size_t)off);
		if (n <= 0)
			break;
		off += n;
	}
	close(fd);
	buf[off] = '\0';
	while (off > 0 && (buf[off - 1] == '\n' || buf[off - 1] == '\r' ||
	    buf[off - 1] == ' ' || buf[off - 1] == '\t'))
		buf[--off] = '\0';
	return off;
}

static int
is_hex_oid(const char *s, size_t len)
{
	size_t i;

	if (len != 40 && len != 64)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* p is under dir (or is dir), both canonical. */
static int
path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return 1;
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* git by an absolute PATH entry, not inside top. */
static int
find_git(const char *top, char *out, size_t outlen)
{
	const char *path = getenv("PATH"), *p, *q;
	char cand[PATH_MAX], real[PATH_MAX];
	struct stat st;
	size_t n;

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p != '\0'; p = *q != '\0' ? q + 1 : q) {
		q = strchr(p, ':');
		if (q == NULL)
			q = p + strlen(p);
		n = (size_t)(q - p);
		if (n == 0 || *p != '/' || n + 5 >= sizeof(cand))
			continue;
		memcpy(cand, p, n);
		memcpy(cand + n, "/git", 5);
		if (stat(cand, &st) != 0 || !S_ISREG(st.st_mode) ||
		    access(cand, X_OK) != 0)
			continue;
		if (realpath(cand, real) == NULL)
			continue;
		if (top != NULL && path_under(real, top))
			continue;	/* planted in the tree */
		if (strlen(real) >= outlen)
			continue;
		strcpy(out, real);
		return 0;
	}
	return -1;
}

/*
 * The work tree holding dir: top, its git dir and the common dir (where
 * objects, refs and info/ live; differs in a linked worktree).
 */
static int
find_top(const char *dir, char *top, char *gitdir, char *common)
{
	char cur[PATH_MAX], buf[PATH_MAX + 16], tmp[PATH_MAX];
	struct stat st;
	char *slash;
	int dfd;

	if (realpath(dir, cur) == NULL)
		return -1;
	for (;;) {
		pathf(buf, sizeof(buf), "%s/.git", strcmp(cur, "/") == 0 ?
		    "" : cur);
		if (lstat(buf, &st) == 0 && (S_ISDIR(st.st_mode) ||
		    S_ISREG(st.st_mode)))
			break;
		if (strcmp(cur, "/") == 0)
			return -1;
		slash = strrchr(cur, '/');
		if (slash == cur)
			cur[1] = '\0';
		else
			*slash = '\0';
	}
	strcpy(top, cur);
	if (S_ISDIR(st.st_mode)) {
		if (realpath(buf, gitdir) == NULL)
			return -1;
	} else {
		/* "gitdir: PATH" (relative to the work tree) */
		if (read_small(AT_FDCWD, buf, tmp, sizeof(tmp)) < 8 ||
		    strncmp(tmp, "gitdir: ", 8) != 0)
			return -1;
		if ((tmp[8] == '/' ? pathf(buf, sizeof(buf), "%s",
		    tmp + 8) : pathf(buf, sizeof(buf), "%s/%s", cur,
		    tmp + 8)) < 0 ||
		    realpath(buf, gitdir) == NULL)
			return -1;
	}
	if ((dfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if (faccessat(dfd, "HEAD", F_OK, 0) != 0) {
		close(dfd);
		return -1;
	}
	if (read_small(dfd, "commondir", tmp, sizeof(tmp)) > 0) {
		if ((tmp[0] == '/' ? pathf(buf, sizeof(buf), "%s", tmp) :
		    pathf(buf, sizeof(buf), "%s/%s", gitdir, tmp)) < 0 ||
		    realpath(buf, common) == NULL) {
			close(dfd);
			return -1;
		}
	} else
		strcpy(common, gitdir);
	close(dfd);
	return 0;
}

/* HEAD's commit (40 or 64 hex) into oid; 0 found, 1 unborn or unknown. */
static int
resolve_head(const char *gitdir, const char *common, char oid[65])
{
	char ref[PATH_MAX], val[PATH_MAX], line[PATH_MAX + 80];
	FILE *fp;
	int depth, gfd, cfd, found;
	size_t n;

	if ((gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 1;
	if ((cfd = open(common, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		close(gfd);
		return 1;
	}
	found = 1;
	if (read_small(gfd, "HEAD", val, sizeof(val)) < 0)
		goto out;
	for (depth = 0; depth < 5; depth++) {
		n = strlen(val);
		if (is_hex_oid(val, n)) {
			memcpy(oid, val, n + 1);
			found = 0;
			goto out;
		}
		if (strncmp(val, "ref: ", 5) != 0)
			goto out;
		if (pathf(ref, sizeof(ref), "%s", val + 5) < 0)
			goto out;
		if (strncmp(ref, "refs/", 5) != 0 || strstr(ref, "..") != NULL)
			goto out;
		if (read_small(gfd, ref, val, sizeof(val)) >= 0 ||
		    read_small(cfd, ref, val, sizeof(val)) >= 0)
			continue;
		/* packed-refs: "OID NAME" lines */
		if (pathf(line, sizeof(line), "%s/packed-refs", common) < 0)
			goto out;
		if ((fp = fopen(line, "re")) == NULL)
			goto out;
		while (fgets(line, sizeof(line), fp) != NULL) {
			char *sp = strchr(line, ' ');

			if (sp == NULL || line[0] == '#' || line[0] == '^')
				continue;
			line[strcspn(line, "\r\n")] = '\0';
			if (strcmp(sp + 1, ref) == 0 &&
			    is_hex_oid(line, (size_t)(sp - line))) {
				memcpy(oid, line, (size_t)(sp - line));
				oid[sp - line] = '\0';
				found = 0;
				break;
			}
		}
		fclose(fp);
		goto out;
	}
out:
	close(gfd);
	close(cfd);
	return found;
}

static void
add_env(char **envp, size_t *n, char *slot, size_t len, const char *k,
    const char *v)
{
	if (pathf(slot, len, "%s=%s", k, v) < 0)
		slot[0] = '\0';	/* cannot happen: slots hold PATH_MAX */
	envp[(*n)++] = slot;
}

/* GIT_ALTERNATE_OBJECT_DIRECTORIES takes ':' lists; quote when needed. */
static void
quote_alt(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (strpbrk(in, ":\"\\") == NULL && *in != '"') {
		snprintf(out, len, "%s", in);
		return;
	}
	if (o < len - 1)
		out[o++] = '"';
	for (; *in != '\0' && o + 3 < len; in++) {
		if (*in == '"' || *in == '\\')
			out[o++] = '\\';
		out[o++] = *in;
	}
	if (o < len - 1)
		out[o++] = '"';
	out[o] = '\0';
}

/* execve's argv is char *const[]: the strings are not written. */
static char *
unconst(const char *s)
{
	return (char *)(uintptr_t)s;
}

/*
 * Run git SUB... with the private directory and an environment made
 * from nothing; stdout to outfd (-1: /dev/null).  0, or -1 with why set.
 */
static int
run_git(const struct gitctx *g, const char *index, const char *const *sub,
    int outfd, char *why, size_t whylen)
{
	static const char *const fixed[] = {
		"--no-pager",
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "core.untrackedCache=false",
		"-c", "core.pager=cat",
		"-c", "core.attributesFile=/dev/null",
		"-c", "core.excludesFile=/dev/null",
		"-c", "core.autocrlf=false",
		"-c", "core.safecrlf=false",
		"-c", "core.splitIndex=false",
		"-c", "core.symlinks=true",
		"-c", "core.sparseCheckout=false",
		"-c", "gc.auto=0",
		"-c", "maintenance.auto=false",
		"-c", "submodule.recurse=false",
		"-c", "diff.noprefix=false",
		"-c", "color.ui=false",
		"-c", "index.version=2",
	};
	/* after PATH, HOME, XDG_CONFIG_HOME and the GIT_ paths (9 at most) */
	static const char *const fixed_env[] = {
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_PAGER=cat", "PAGER=cat", "GIT_TERMINAL_PROMPT=0",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_OPTIONAL_LOCKS=0",
		"GIT_NOGLOB_PATHSPECS=1", "LC_ALL=C", "TZ=UTC",
	};
	struct {
		char	path[64], home[PATH_MAX + 8], xdg[PATH_MAX + 40];
		char	dir[PATH_MAX + 16], wt[PATH_MAX + 16];
		char	idx[PATH_MAX + 32], obj[PATH_MAX + 32];
		char	alt[2 * PATH_MAX + 40], altq[2 * PATH_MAX];
		char	tmp[PATH_MAX + 40];
	} *e;
	char *argv[80];
	char *envp[32], ebuf[GIT_ERR_MAX];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	size_t na = 0, ne = 0, i;
	int errfd, nullfd, st, rc = -1;
	ssize_t n;
	pid_t pid;

	if ((e = eg_malloc(sizeof(*e))) == NULL) {
		why_set(why, whylen, "%s%s", "out of memory", "");
		return -1;
	}
	argv[na++] = unconst(g->git);
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[na++] = unconst(fixed[i]);
	for (i = 0; sub[i] != NULL && na < sizeof(argv) / sizeof(argv[0]) - 1;
	    i++)
		argv[na++] = unconst(sub[i]);
	argv[na] = NULL;

	add_env(envp, &ne, e->path, sizeof(e->path), "PATH", "/usr/bin:/bin");
	pathf(e->tmp, sizeof(e->tmp), "%s/home", g->pdir);
	add_env(envp, &ne, e->home, sizeof(e->home), "HOME", e->tmp);
	pathf(e->tmp, sizeof(e->tmp), "%s/home/.config", g->pdir);
	add_env(envp, &ne, e->xdg, sizeof(e->xdg), "XDG_CONFIG_HOME", e->tmp);
	pathf(e->tmp, sizeof(e->tmp), "%s/git", g->pdir);
	add_env(envp, &ne, e->dir, sizeof(e->dir), "GIT_DIR", e->tmp);
	add_env(envp, &ne, e->wt, sizeof(e->wt), "GIT_WORK_TREE", g->top);
	pathf(e->tmp, sizeof(e->tmp), "%s/git/%s", g->pdir, index);
	add_env(envp, &ne, e->idx, sizeof(e->idx), "GIT_INDEX_FILE", e->tmp);
	pathf(e->tmp, sizeof(e->tmp), "%s/git/objects", g->pdir);
	add_env(envp, &ne, e->obj, sizeof(e->obj), "GIT_OBJECT_DIRECTORY",
	    e->tmp);
	if (g->alt[0] != '\0') {
		quote_alt(g->alt, e->altq, sizeof(e->altq));
		add_env(envp, &ne, e->alt, sizeof(e->alt),
		    "GIT_ALTERNATE_OBJECT_DIRECTORIES", e->altq);
	}
	for (i = 0; i < sizeof(fixed_env) / sizeof(fixed_env[0]); i++)
		envp[ne++] = unconst(fixed_env[i]);
	envp[ne] = NULL;

	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	errfd = openat(g->pfd, "git.err", O_RDWR | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (nullfd < 0 || errfd < 0) {
		why_set(why, whylen, "git: %s%s", strerror(errno), "");
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addchdir_np(&fa, g->top);
	posix_spawn_file_actions_adddup2(&fa, nullfd, 0);
	posix_spawn_file_actions_adddup2(&fa, outfd >= 0 ? outfd : nullfd, 1);
	posix_spawn_file_actions_adddup2(&fa, errfd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&dfl);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF);
	st = posix_spawn(&pid, g->git, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (st != 0) {
		why_set(why, whylen, "git: %s%s", strerror(st), "");
		goto out;
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			why_set(why, whylen, "git: waitpid: %s%s",
			    strerror(errno), "");
			goto out;
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		rc = 0;
		goto out;
	}
	n = pread(errfd, ebuf, sizeof(ebuf) - 1, 0);
	ebuf[n > 0 ? n : 0] = '\0';
	ebuf[strcspn(ebuf, "\n")] = '\0';
	why_set(why, whylen, "git %s failed: %s", sub[0],
	    ebuf[0] != '\0' ? ebuf : "(no message)");
out:
	if (nullfd >= 0)
		close(nullfd);
	if (errfd >= 0)
		close(errfd);
	eg_free(e);
	return rc;
}

/* git write-tree into oid. */
static int
write_tree(const struct gitctx *g, const char *index, char oid[65],
    char *why, size_t whylen)
{
	static const char *const wt[] = { "write-tree", NULL };
	char buf[80];
	ssize_t n;
	int fd, rc;

	fd = openat(g->pfd, "tree.out", O_RDWR | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		why_set(why, whylen, "tree.out: %s%s", strerror(errno), "");
		return -1;
	}
	rc = run_git(g, index, wt, fd, why, whylen);
	if (rc == 0) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (!is_hex_oid(buf, strlen(buf))) {
			why_set(why, whylen, "git write-tree: no tree%s%s", "",
			    "");
			rc = -1;
		} else
			strcpy(oid, buf);
	}
	close(fd);
	return rc;
}

/*
 * The tree of the work tree into oid, in the private index "index",
 * starting from base (a commit or tree; NULL: empty).  The index starts
 * without stat data, so every file is hashed again: a copy of the
 * baseline's index would make git trust sizes and times the step could
 * arrange (and lose the racy-git check with the copy's new mtime).
 */
static int
snapshot(const struct gitctx *g, const char *index, const char *base,
    char oid[65], char *why, size_t whylen)
{
	const char *rt[] = { "read-tree", base != NULL ? base : "--empty",
		NULL };
	static const char *const add[] = { "add", "--all", NULL };
	char lock[64];

	/* a lock left by a git killed with us */
	if (pathf(lock, sizeof(lock), "git/%s.lock", index) < 0 ||
	    (unlinkat(g->pfd, lock, 0) < 0 && errno != ENOENT)) {
		why_set(why, whylen, "index lock: %s%s", strerror(errno), "");
		return -1;
	}
	if (run_git(g, index, rt, -1, why, whylen) < 0 ||
	    run_git(g, index, add, -1, why, whylen) < 0 ||
	    write_tree(g, index, oid, why, whylen) < 0)
		return -1;
	return 0;
}

/* Append an anchored, escaped exclude line for dir (under top); a
 * failure sticks in b (buf.h). */
static void
exclude_line(struct eg_buf *b, const char *top, const char *dir)
{
	const char *rel;

	if (!path_under(dir, top) || strcmp(dir, top) == 0)
		return;
	rel = dir + (strcmp(top, "/") == 0 ? 0 : strlen(top));
	for (; *rel != '\0'; rel++) {
		if (strchr("*?[]\\!# ", *rel) != NULL)
			(void)eg_buf_add(b, "\\", 1);
		(void)eg_buf_add(b, rel, 1);
	}
	(void)eg_buf_add(b, "/\n", 2);
}

static int
write_file_at(int dfd, const char *name, const char *s)
{
	return mc_write_atomic(dfd, name, s, strlen(s), 0600);
}

/*
 * The private GIT_DIR: config (ours), HEAD, info/attributes (highest
 * precedence: no filter, no conversion), info/exclude (the repository's
 * copy, plus the record directory when it is inside the tree).
 */
static int
setup_gitdir(const struct gitctx *g, const char *common, int sha256,
    char *why, size_t whylen)
{
	static const char cfg_head[] =
	    "[core]\n"
	    "\tbare = false\n"
	    "\tfsmonitor = false\n"
	    "\thooksPath = /dev/null\n"
	    "\tpager = cat\n"
	    "\tuntrackedCache = false\n"
	    "\tautocrlf = false\n"
	    "\tattributesFile = /dev/null\n"
	    "\texcludesFile = /dev/null\n"
	    "\tsplitIndex = false\n"
	    "\tsymlinks = true\n"
	    "\tfilemode = true\n"
	    "[gc]\n\tauto = 0\n"
	    "[maintenance]\n\tauto = false\n";
	char cfg[1024], ppath[PATH_MAX + 8], privp[PATH_MAX];
	struct eg_buf b = EG_BUF_HEAP(EXCLUDE_OUT_MAX);
	ssize_t n;
	int gfd = -1, ifd = -1, rc = -1;

	snprintf(cfg, sizeof(cfg), "%s[core]\n\trepositoryformatversion = %d\n%s",
	    cfg_head, sha256 ? 1 : 0,
	    sha256 ? "[extensions]\n\tobjectFormat = sha256\n" : "");
	if ((mkdirat(g->pfd, "git", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(g->pfd, "home", 0700) < 0 && errno != EEXIST) ||
	    (gfd = mc_open_beneath(g->pfd, "git", O_RDONLY | O_DIRECTORY)) < 0)
		goto fail;
	if ((mkdirat(gfd, "objects", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(gfd, "objects/info", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(gfd, "objects/pack", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(gfd, "refs", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(gfd, "info", 0700) < 0 && errno != EEXIST) ||
	    (ifd = mc_open_beneath(gfd, "info", O_RDONLY | O_DIRECTORY)) < 0)
		goto fail;
	if (write_file_at(gfd, "config", cfg) < 0 ||
	    write_file_at(gfd, "HEAD", "ref: refs/heads/egressd-baseline\n") < 0 ||
	    write_file_at(ifd, "attributes",
	    "* -text -filter -ident -working-tree-encoding !eol !diff\n") < 0)
		goto fail;
	/* info/exclude: the repository's, then the record directory */
	if (pathf(ppath, sizeof(ppath), "%s/info/exclude", common) < 0)
		goto fail;
	{
		char *ex = eg_malloc(EXCLUDE_MAX + 1);

		if (ex != NULL) {
			n = read_small(AT_FDCWD, ppath, ex, EXCLUDE_MAX + 1);
			if (n > 0) {
				(void)eg_buf_add(&b, ex, (size_t)n);
				(void)eg_buf_add(&b, "\n", 1);
			}
			eg_free(ex);
		}
	}
	/* pdir is PRIV/patch: PRIV and its parent (the record directory) */
	if (pathf(privp, sizeof(privp), "%s", g->pdir) < 0)
		goto fail;
	if (strrchr(privp, '/') != NULL && strrchr(privp, '/') != privp) {
		*strrchr(privp, '/') = '\0';
		exclude_line(&b, g->top, privp);
		if (strrchr(privp, '/') != NULL &&
		    strrchr(privp, '/') != privp) {
			*strrchr(privp, '/') = '\0';
			exclude_line(&b, g->top, privp);
		}
	}
	if (eg_buf_failed(&b)) {
		errno = eg_buf_failed(&b) == EG_BUF_FULL ? EFBIG : ENOMEM;
		goto fail;
	}
	if (mc_write_atomic(ifd, "exclude", eg_buf_len(&b) != 0 ?
	    eg_buf_data(&b) : "", eg_buf_len(&b), 0600) < 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	why_set(why, whylen, "private git directory: %s%s", strerror(errno),
	    "");
out:
	eg_buf_clear(&b);
	if (gfd >= 0)
		close(gfd);
	if (ifd >= 0)
		close(ifd);
	return rc;
}

/* The absolute path of an open directory (Linux: /proc/self/fd). */
static int
fd_path(int fd, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n <= 0 || (size_t)n >= len - 1 || out[0] != '/')
		return -1;
	out[n] = '\0';
	return 0;
}

static int
state_unavailable(int pfd, const char *reason)
{
	json_t *v = json_pack("{s:s,s:s}", "state", "unavailable", "reason",
	    reason);
	int rc;

	if (v == NULL) {
		errno = ENOMEM;
		return -1;
	}
	rc = mc_write_json(pfd, "state.json", v);
	json_decref(v);
	return rc;
}

int
rp_patch_begin(const char *workdir, int privfd, char *err, size_t errlen)
{
	struct gitctx *g;
	char gitdir[PATH_MAX], common[PATH_MAX], head[65], tree[65];
	char why[GIT_ERR_MAX + 64];
	struct stat st;
	json_t *v;
	int rc = -1, found;

	if ((g = eg_calloc(1, sizeof(*g))) == NULL) {
		why_set(err, errlen, "patch: %s%s", strerror(errno), "");
		return -1;
	}
	g->pfd = -1;
	if (mkdirat(privfd, "patch", 0700) < 0 && errno != EEXIST) {
		why_set(err, errlen, "patch: %s%s", strerror(errno), "");
		goto out;
	}
	if ((g->pfd = mc_open_beneath(privfd, "patch",
	    O_RDONLY | O_DIRECTORY)) < 0 || fd_path(g->pfd, g->pdir,
	    sizeof(g->pdir)) < 0) {
		why_set(err, errlen, "patch: %s%s", strerror(errno), "");
		goto out;
	}
	if (fstatat(g->pfd, "state.json", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		rc = 0;		/* begun already: the baseline stays */
		goto out;
	}
	if (find_top(workdir, g->top, gitdir, common) < 0) {
		rc = state_unavailable(g->pfd, "not a git work tree");
		goto done;
	}
	if (find_git(g->top, g->git, sizeof(g->git)) < 0) {
		rc = state_unavailable(g->pfd, "git not found");
		goto done;
	}
	if (pathf(g->alt, sizeof(g->alt), "%s/objects", common) < 0) {
		rc = state_unavailable(g->pfd, "repository path too long");
		goto done;
	}
	found = resolve_head(gitdir, common, head) == 0;
	if (setup_gitdir(g, common, found && strlen(head) == 64, why,
	    sizeof(why)) < 0 || snapshot(g, "index.base", found ? head : NULL,
	    tree, why, sizeof(why)) < 0) {
		rc = state_unavailable(g->pfd, why);
		goto done;
	}
	v = json_pack("{s:s,s:s,s:s,s:s,s:s}", "state", "ok", "git", g->git,
	    "top", g->top, "alt", g->alt, "tree", tree);
	if (v == NULL) {
		errno = ENOMEM;
		rc = -1;
	} else {
		rc = mc_write_json(g->pfd, "state.json", v);
		json_decref(v);
	}
done:
	if (rc < 0)
		why_set(err, errlen, "patch: state.json: %s%s", strerror(errno),
		    "");
out:
	if (g->pfd >= 0)
		close(g->pfd);
	eg_free(g);
	return rc;
}

static int
copy_str(char *dst, size_t len, json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (s == NULL || strlen(s) >= len)
		return -1;
	strcpy(dst, s);
	return 0;
}

int
rp_patch_make(int privfd, int out, int scan, char *why, size_t whylen)
{
	struct gitctx *g;
	json_error_t je;
	json_t *v = NULL;
	char base[65], cur[65];
	const char *state;
	int fd = -1, rc = -1;

	if ((g = eg_calloc(1, sizeof(*g))) == NULL) {
		why_set(why, whylen, "patch: %s%s", strerror(errno), "");
		return -1;
	}
	if ((g->pfd = mc_open_beneath(privfd, "patch",
	    O_RDONLY | O_DIRECTORY)) < 0 || fd_path(g->pfd, g->pdir,
	    sizeof(g->pdir)) < 0 || (fd = mc_open_beneath(g->pfd,
	    "state.json", O_RDONLY)) < 0 ||
	    (v = json_loadfd(fd, 0, &je)) == NULL) {
		why_set(why, whylen, "patch: no baseline (%s)%s",
		    errno != 0 ? strerror(errno) : "bad state.json", "");
		goto out;
	}
	state = json_string_value(json_object_get(v, "state"));
	if (state == NULL || strcmp(state, "ok") != 0) {
		const char *r = json_string_value(json_object_get(v, "reason"));

		why_set(why, whylen, "%s%s", r != NULL ? r : "unavailable", "");
		rc = 1;
		goto out;
	}
	if (copy_str(g->git, sizeof(g->git), v, "git") < 0 ||
	    copy_str(g->top, sizeof(g->top), v, "top") < 0 ||
	    copy_str(g->alt, sizeof(g->alt), v, "alt") < 0 ||
	    copy_str(base, sizeof(base), v, "tree") < 0) {
		why_set(why, whylen, "patch: bad state.json%s%s", "", "");
		goto out;
	}
	if (snapshot(g, "index.cap", base, cur, why, whylen) < 0) {
		rc = 1;
		goto out;
	}
	{
		const char *const bin[] = { "diff-tree", "-r", "-p",
			"--binary", "--full-index", "--no-renames",
			"--no-ext-diff", "--no-textconv", "--no-color",
			"--ignore-submodules=none", base, cur, NULL };
		const char *const txt[] = { "diff-tree", "-r", "-p", "-a",
			"-U0", "--no-renames", "--no-ext-diff", "--no-textconv",
			"--no-color", base, cur, NULL };

		if (run_git(g, "index.cap", bin, out, why, whylen) < 0 ||
		    run_git(g, "index.cap", txt, scan, why, whylen) < 0) {
			rc = 1;
			goto out;
		}
	}
	rc = 0;
out:
	if (v != NULL)
		json_decref(v);
	if (fd >= 0)
		close(fd);
	if (g->pfd >= 0)
		close(g->pfd);
	eg_free(g);
	return rc;
}
