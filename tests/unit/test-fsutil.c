/*
 * test-fsutil.c: src/mod/common/fsutil.  An atomic write leaves only the
 * file (no temp file), refuses a symlinked target and leaves what it
 * points at alone; mc_open_beneath refuses a symlink at any component,
 * "..", absolute paths, with openat2 and with the O_NOFOLLOW walk; JSON
 * is compact with sorted keys; SHA-256 matches known vectors.
 */
#include "config.h"

#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/mod/common/fsutil.h"
#include "tap.h"

static char tmpl[] = "/tmp/test-fsutil.XXXXXX";

static int
count_entries(int dfd)
{
	DIR *d;
	struct dirent *de;
	int n = 0, fd;

	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY)) < 0)
		return -1;
	if ((d = fdopendir(fd)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static int
slurp(int dfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

static void
atomic_tests(int dfd)
{
	char buf[256];
	struct stat st;
	json_t *v;
	int wd;

	wd = mkdirat(dfd, "w", 0700) == 0 ?
	    openat(dfd, "w", O_RDONLY | O_DIRECTORY) : -1;
	ok(wd >= 0, "made w/");
	is_int(mc_write_atomic(wd, "a.json", "hello", 5, 0640), 0,
	    "atomic write");
	is_int(slurp(wd, "a.json", buf, sizeof(buf)), 5, "5 bytes");
	is_str(buf, "hello", "content");
	ok(fstatat(wd, "a.json", &st, 0) == 0 && (st.st_mode & 0777) == 0640,
	    "mode 0640");
	is_int(count_entries(wd), 1, "no temp file left");
	is_int(mc_write_atomic(wd, "a.json", "bye", 3, 0640), 0, "overwrite");
	slurp(wd, "a.json", buf, sizeof(buf));
	is_str(buf, "bye", "replaced");
	is_int(count_entries(wd), 1, "still no temp file");

	/* a symlinked target is refused and its target untouched */
	is_int(mc_write_atomic(wd, "victim", "orig", 4, 0600), 0, "victim");
	ok(symlinkat("victim", wd, "link") == 0, "link -> victim");
	errno = 0;
	is_int(mc_write_atomic(wd, "link", "evil", 4, 0600), -1,
	    "write through symlink refused");
	is_int(errno, ELOOP, "ELOOP");
	slurp(wd, "victim", buf, sizeof(buf));
	is_str(buf, "orig", "victim untouched");
	ok(fstatat(wd, "link", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode), "link still a symlink");
	/* a dangling symlink too */
	ok(symlinkat("/tmp/nonexistent-fsutil-target", wd, "dangle") == 0,
	    "dangling link");
	is_int(mc_write_atomic(wd, "dangle", "x", 1, 0600), -1,
	    "dangling symlink refused");
	ok(access("/tmp/nonexistent-fsutil-target", F_OK) != 0,
	    "nothing created at its target");
	/* a planted temp name that is a symlink is not followed */
	snprintf(buf, sizeof(buf), ".t.%ld.tmp", (long)getpid());
	ok(symlinkat("victim", wd, buf) == 0, "planted temp symlink");
	is_int(mc_write_atomic(wd, "t", "new", 3, 0600), 0,
	    "write with planted temp");
	slurp(wd, "victim", buf, sizeof(buf));
	is_str(buf, "orig", "victim untouched by temp symlink");
	slurp(wd, "t", buf, sizeof(buf));
	is_str(buf, "new", "t written");
	is_int(mc_write_atomic(wd, "a/b", "x", 1, 0600), -1, "name with / refused");
	is_int(errno, EINVAL, "EINVAL");
	is_int(mc_write_atomic(wd, "..", "x", 1, 0600), -1, ".. refused");
	ok(mkdirat(wd, "d", 0700) == 0, "dir d");
	is_int(mc_write_atomic(wd, "d", "x", 1, 0600), -1, "directory refused");
	is_int(errno, EISDIR, "EISDIR");

	v = json_pack("{s:i,s:s,s:[i,i],s:n}", "zeta", 1, "alpha", "h\xc3\xa9",
	    "mid", 1, 2, "b", NULL);
	is_int(mc_write_json(wd, "x.json", v), 0, "json written");
	json_decref(v);
	slurp(wd, "x.json", buf, sizeof(buf));
	is_str(buf, "{\"alpha\":\"h\xc3\xa9\",\"b\":null,\"mid\":[1,2],\"zeta\":1}",
	    "compact, sorted, UTF-8, no final newline");
	close(wd);
}

static void
beneath_tests(int dfd, const char *mode)
{
	int fd;

	fd = mc_open_beneath(dfd, "t/a/f", O_RDONLY);
	ok(fd >= 0, "%s: t/a/f opens", mode);
	if (fd >= 0)
		close(fd);
	fd = mc_open_beneath(dfd, "./t//a/./f", O_RDONLY);
	ok(fd >= 0, "%s: ./t//a/./f opens", mode);
	if (fd >= 0)
		close(fd);
	fd = mc_open_beneath(dfd, "t/a", O_RDONLY | O_DIRECTORY);
	ok(fd >= 0, "%s: t/a as directory", mode);
	if (fd >= 0)
		close(fd);
	errno = 0;
	is_int(mc_open_beneath(dfd, "t/a/lf", O_RDONLY), -1,
	    "%s: symlink as last component refused", mode);
	is_int(errno, ELOOP, "%s: ELOOP", mode);
	errno = 0;
	is_int(mc_open_beneath(dfd, "t/la/f", O_RDONLY), -1,
	    "%s: symlinked middle directory refused", mode);
	is_int(errno, ELOOP, "%s: ELOOP", mode);
	errno = 0;
	is_int(mc_open_beneath(dfd, "lt/a/f", O_RDONLY), -1,
	    "%s: symlinked first directory refused", mode);
	is_int(errno, ELOOP, "%s: ELOOP", mode);
	errno = 0;
	is_int(mc_open_beneath(dfd, "t/a/out", O_RDONLY), -1,
	    "%s: symlink leaving the tree refused", mode);
	errno = 0;
	is_int(mc_open_beneath(dfd, "t/../t/a/f", O_RDONLY), -1,
	    "%s: .. refused even when it stays beneath", mode);
	is_int(errno, EXDEV, "%s: EXDEV", mode);
	is_int(mc_open_beneath(dfd, "t/a/..", O_RDONLY), -1,
	    "%s: trailing .. refused", mode);
	errno = 0;
	is_int(mc_open_beneath(dfd, "/etc/passwd", O_RDONLY), -1,
	    "%s: absolute refused", mode);
	is_int(errno, EXDEV, "%s: EXDEV", mode);
	errno = 0;
	is_int(mc_open_beneath(dfd, "", O_RDONLY), -1, "%s: empty refused",
	    mode);
	is_int(errno, ENOENT, "%s: ENOENT", mode);
	is_int(mc_open_beneath(dfd, "t/a/f/", O_RDONLY), -1,
	    "%s: file with trailing slash refused", mode);
	is_int(mc_open_beneath(dfd, "t/a/missing", O_RDONLY), -1,
	    "%s: missing", mode);
	is_int(errno, ENOENT, "%s: ENOENT", mode);
	fd = mc_open_beneath(dfd, "t/a/lf", O_PATH);
	ok(fd < 0, "%s: symlink refused with O_PATH too", mode);
	if (fd >= 0)
		close(fd);
}

int
main(void)
{
	char buf[65], cmd[64];
	int dfd, fd;
	uint64_t sz;

	if (mkdtemp(tmpl) == NULL) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY);
	atomic_tests(dfd);

	mkdirat(dfd, "t", 0700);
	mkdirat(dfd, "t/a", 0700);
	fd = openat(dfd, "t/a/f", O_WRONLY | O_CREAT, 0600);
	ok(fd >= 0 && write(fd, "abc", 3) == 3, "t/a/f");
	close(fd);
	ok(symlinkat("f", dfd, "t/a/lf") == 0, "t/a/lf -> f");
	ok(symlinkat("a", dfd, "t/la") == 0, "t/la -> a");
	ok(symlinkat("t", dfd, "lt") == 0, "lt -> t");
	ok(symlinkat("/etc/passwd", dfd, "t/a/out") == 0, "t/a/out -> /etc/passwd");
	mc_open_beneath_no_openat2 = 0;
	beneath_tests(dfd, "openat2");
	mc_open_beneath_no_openat2 = 1;
	beneath_tests(dfd, "walk");
	mc_open_beneath_no_openat2 = 0;

	mc_sha256_hex("abc", 3, buf);
	is_str(buf, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "sha256(abc)");
	mc_sha256_hex("", 0, buf);
	is_str(buf, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	    "sha256('')");
	fd = openat(dfd, "t/a/f", O_RDONLY);
	is_int(mc_sha256_fd(fd, buf, &sz), 0, "sha256 of fd");
	close(fd);
	is_str(buf, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "sha256 of fd = sha256(abc)");
	is_int(sz, 3, "size 3");

	/* mc_read_fd: up to max bytes, NUL-terminated; one more is EFBIG */
	{
		char *r;
		size_t n = 99;

		fd = openat(dfd, "t/a/f", O_RDONLY);
		r = mc_read_fd(fd, 3, &n);
		ok(r != NULL && n == 3 && memcmp(r, "abc", 4) == 0,
		    "read_fd: 3 bytes with max 3");
		free(r);
		(void)lseek(fd, 0, SEEK_SET);
		errno = 0;
		ok(mc_read_fd(fd, 2, &n) == NULL && errno == EFBIG,
		    "read_fd: 3 bytes with max 2 refused (EFBIG)");
		(void)lseek(fd, 3, SEEK_SET);
		r = mc_read_fd(fd, 0, &n);
		ok(r != NULL && n == 0 && r[0] == '\0', "read_fd: at EOF: empty");
		free(r);
		close(fd);
	}

	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	if (system(cmd) != 0)
		diag("could not remove %s", tmpl);
	return done_testing();
}
