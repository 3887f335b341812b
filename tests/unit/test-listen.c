/*
 * test-listen.c: the one Unix-socket binder (listen.c), through the
 * public API, for a proxy listener (unix =) and the admin socket alike:
 * the socket file is never wider than its configured mode, even for an
 * instant and with umask 0, and a binding that fails after bind(2)
 * leaves no file behind and names the path.
 *
 * The test interposes chmod(2): the library's calls land here, which
 * records the file's mode at that moment (the widest it has been) and can
 * make the call fail for one path.
 */
#include "egress-int.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "egress.h"
#include "tap.h"

static char fail_path[256];		/* chmod() of this path fails */
static struct {
	char	path[256];
	mode_t	mode;			/* lstat() mode when chmod() came */
} seen[8];
static size_t nseen;

int	chmod(const char *, mode_t);

int
chmod(const char *path, mode_t mode)
{
	struct stat st;

	if (nseen < nitems(seen) && lstat(path, &st) == 0) {
		snprintf(seen[nseen].path, sizeof(seen[nseen].path), "%s",
		    path);
		seen[nseen].mode = st.st_mode & 07777;
		nseen++;
	}
	if (strcmp(path, fail_path) == 0) {
		errno = EPERM;
		return -1;
	}
	return fchmodat(AT_FDCWD, path, mode, 0);
}

/* The mode recorded for path, or -1 if chmod() never saw it. */
static long
seen_mode(const char *path)
{
	size_t i;

	for (i = 0; i < nseen; i++)
		if (strcmp(seen[i].path, path) == 0)
			return (long)seen[i].mode;
	return -1;
}

static struct egress *
start(const char *psock, const char *asock, char *err, size_t errlen)
{
	char ini[1024];
	struct egress *ex;

	snprintf(ini, sizeof(ini), "[proxy]\nunix = %s\nunix_mode = 0600\n"
	    "admin = %s\nadmin_mode = 0600\naudit_log = /dev/null\n"
	    "workers = 1\n[phase:a]\nallow = a.test:443\n", psock, asock);
	if ((ex = egress_new_from_string(ini, err, errlen)) == NULL)
		return NULL;
	if (egress_start(ex) == -1) {
		snprintf(err, errlen, "%s", egress_errmsg(ex));
		egress_free(ex);
		return NULL;
	}
	return ex;
}

int
main(void)
{
	char dir[] = "/tmp/test-listen.XXXXXX", psock[128], asock[128];
	char err[1024];
	struct egress *ex;
	struct stat st;
	long m;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return done_testing();
	}
	snprintf(psock, sizeof(psock), "%s/proxy.sock", dir);
	snprintf(asock, sizeof(asock), "%s/admin.sock", dir);
	umask(0);

	/* never wider than the mode, even before chmod() */
	ex = start(psock, asock, err, sizeof(err));
	ok(ex != NULL, "egress_start with unix and admin sockets: %s",
	    ex != NULL ? "ok" : err);
	m = seen_mode(psock);
	ok(m != -1 && (m & ~0600L) == 0, "proxy socket never wider than "
	    "0600 under umask 0 (was %03lo)", m);
	m = seen_mode(asock);
	ok(m != -1 && (m & ~0600L) == 0, "admin socket never wider than "
	    "0600 under umask 0 (was %03lo)", m);
	ok(stat(psock, &st) == 0 && (st.st_mode & 07777) == 0600,
	    "proxy socket ends up 0600");
	ok(stat(asock, &st) == 0 && (st.st_mode & 07777) == 0600,
	    "admin socket ends up 0600");
	egress_free(ex);
	ok(access(psock, F_OK) == -1 && access(asock, F_OK) == -1,
	    "both socket files removed by egress_free");

	/* a failure after bind(): no file left, the path named */
	snprintf(fail_path, sizeof(fail_path), "%s", psock);
	ex = start(psock, asock, err, sizeof(err));
	ok(ex == NULL, "egress_start fails when the proxy socket's chmod "
	    "fails");
	egress_free(ex);
	ok(strstr(err, psock) != NULL && strstr(err, "unix ") == err,
	    "the error names the proxy socket: %s", err);
	ok(access(psock, F_OK) == -1, "no proxy socket file left behind");

	snprintf(fail_path, sizeof(fail_path), "%s", asock);
	ex = start(psock, asock, err, sizeof(err));
	ok(ex == NULL, "egress_start fails when the admin socket's chmod "
	    "fails");
	egress_free(ex);
	ok(strstr(err, asock) != NULL && strstr(err, "admin ") == err,
	    "the error names the admin socket: %s", err);
	ok(access(asock, F_OK) == -1, "no admin socket file left behind");
	ok(access(psock, F_OK) == -1, "nor the proxy socket's");

	rmdir(dir);
	return done_testing();
}
