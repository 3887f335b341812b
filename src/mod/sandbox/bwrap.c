/*
 * bwrap.c: the bubblewrap side of "egressd run".  It finds the launcher
 * in the system directories, checks what would be bound (the working
 * directory, the --proxy socket's directory, the audit log), lists what
 * must be hidden (home directories) or bound in (the proxy socket, the
 * egressd binary and any library it was loaded from), builds the bwrap
 * command line (its options through a memfd), and explains in plain
 * words why a sandbox could not be created or CMD not found inside.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

/*
 * The first bwrap in the fixed directories, never $PATH (a planted bwrap
 * there would see everything): with usable, a regular file we may
 * execute; without, anything by that name.  Its path in buf, or NULL.
 */
static const char *
bwrap_scan(char *buf, size_t len, int usable)
{
	static const char *const dirs[] = {
		"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"
	};
	struct stat st;
	size_t i;
	int n;

	for (i = 0; i < nitems(dirs); i++) {
		n = snprintf(buf, len, "%s/bwrap", dirs[i]);
		if (n < 0 || (size_t)n >= len)
			continue;
		if (!usable && lstat(buf, &st) == 0)
			return buf;
		if (usable && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

const char *
sb_bwrap_find(char *buf, size_t len)
{
	return bwrap_scan(buf, len, 1);
}

const char *
sb_bwrap_unusable(char *buf, size_t len)
{
	return bwrap_scan(buf, len, 0);
}

/*
 * Run "bwrap --unshare-all --ro-bind / / true" and keep the first line
 * of what it says in line: 0 when it created a sandbox, else -1.  Called
 * from a process with threads: the child only dup2()s and execs.
 */
static int
bwrap_probe(const char *bwrap, char *line, size_t len)
{
	char a0[PATH_MAX], a1[] = "--unshare-all", a2[] = "--ro-bind";
	char a3[] = "/", a4[] = "/", a5[] = "true";
	char *const av[] = { a0, a1, a2, a3, a4, a5, NULL };
	char *const envp[] = { NULL };
	struct pollfd pfd;
	size_t n = 0;
	ssize_t r;
	pid_t pid;
	int p[2], st = 0, nul;

	line[0] = '\0';
	snprintf(a0, sizeof(a0), "%s", bwrap);
	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	pid = fork();
	if (pid == 0) {
		nul = open("/dev/null", O_RDWR);
		if (nul == -1 || dup2(nul, 0) == -1 || dup2(nul, 1) == -1 ||
		    dup2(p[1], 2) == -1)
			_exit(127);
		execve(bwrap, av, envp);
		_exit(127);
	}
	close(p[1]);
	if (pid == -1) {
		close(p[0]);
		return -1;
	}
	/* at most 5 s: a probe must not hang the error path */
	pfd.fd = p[0];
	pfd.events = POLLIN;
	while (n + 1 < len && poll(&pfd, 1, 5000) > 0) {
		r = read(p[0], line + n, len - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	close(p[0]);
	(void)kill(pid, SIGKILL);	/* gone already, unless hung */
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Add the resolved directory p to out unless absent, "/" or covered. */
static void
homes_add(struct mc_strv *out, const char *p)
{
	char rp[PATH_MAX];
	struct stat st;
	size_t i;

	if (p == NULL || p[0] != '/' || realpath(p, rp) == NULL)
		return;
	if (strcmp(rp, "/") == 0 || stat(rp, &st) == -1 ||
	    !S_ISDIR(st.st_mode))
		return;
	for (i = 0; i < out->n; i++)
		if (sb_path_under(rp, out->v[i]))
			return;
	mc_strv_add(out, rp);
}

void
sb_homes(struct mc_strv *out, const char *home)
{
	struct passwd *pw;
	static const char *const sys[] = {
		"/", "/bin", "/sbin", "/usr", "/usr/bin", "/usr/sbin", "/etc",
		"/dev", "/proc", "/var", "/tmp", "/nonexistent", "/run"
	};
	size_t i;
	int skip;

	homes_add(out, "/home");
	homes_add(out, "/root");
	if (home != NULL && home[0] != '\0')
		homes_add(out, home);
	/* regular users' homes elsewhere (/var/home, /srv/users ...) */
	setpwent();
	while ((pw = getpwent()) != NULL) {
		if (pw->pw_uid < 1000 || pw->pw_uid == 65534 ||
		    pw->pw_dir == NULL)
			continue;
		skip = 0;
		for (i = 0; i < nitems(sys); i++)
			if (strcmp(pw->pw_dir, sys[i]) == 0)
				skip = 1;
		if (!skip)
			homes_add(out, pw->pw_dir);
	}
	endpwent();
}

void
sb_maplibs(struct mc_strv *out, const struct mc_strv *hidden)
{
	char line[PATH_MAX + 256], *p, *nl;
	FILE *fp;
	size_t i;

	fp = fopen("/proc/self/maps", "re");
	if (fp == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		nl = strchr(line, '\n');
		if (nl == NULL)
			continue;	/* too long: not ours to guess */
		*nl = '\0';
		p = strchr(line, '/');
		if (p == NULL || strstr(p, " (deleted)") != NULL)
			continue;
		if (mc_strv_has(out, p))
			continue;
		for (i = 0; i < hidden->n; i++) {
			if (sb_path_under(p, hidden->v[i])) {
				mc_strv_add(out, p);
				break;
			}
		}
	}
	fclose(fp);
}

/*
 * The binds of the working directory, --rw, --ro and the libraries, in
 * that order (later ones go on top); with under set, only those strictly
 * below it.
 */
static void
add_binds(const struct sb_bwrap_spec *s, struct mc_strv *a,
    const char *under)
{
	size_t i;

#define BIND(opt, p) do {						\
	if (under == NULL || (sb_path_under((p), under) &&		\
	    strcmp((p), under) != 0)) {					\
		mc_strv_add(a, (opt));				\
		mc_strv_add(a, (p));					\
		mc_strv_add(a, (p));					\
	}								\
} while (0)
	for (i = 0; s->libs != NULL && i < s->libs->n; i++)
		BIND("--ro-bind", s->libs->v[i]);
	BIND("--bind", s->cwd);
	for (i = 0; s->rw != NULL && i < s->rw->n; i++)
		BIND("--bind", s->rw->v[i]);
	for (i = 0; s->ro != NULL && i < s->ro->n; i++)
		BIND("--ro-bind", s->ro->v[i]);
#undef BIND
}

/*
 * A hidden path lying below a writable bind (the working directory, a
 * --rw path) could still be moved away with a folder above it (mv out
 * out.old, and a new out/... put in its place): each folder between that
 * bind and the path is bound over itself, a mount point that cannot be
 * renamed or removed (EBUSY) while it stays as writable as it was; the
 * binds below it go on top again.
 */
static void
pin_parents(const struct sb_bwrap_spec *s, struct mc_strv *a,
    const char *path)
{
	const char *root = NULL;
	char anc[PATH_MAX], *p;
	size_t i, n;

	if (sb_path_under(path, s->cwd) && strcmp(path, s->cwd) != 0)
		root = s->cwd;
	for (i = 0; s->rw != NULL && i < s->rw->n; i++)
		if (sb_path_under(path, s->rw->v[i]) &&
		    strcmp(path, s->rw->v[i]) != 0 && (root == NULL ||
		    strlen(s->rw->v[i]) > strlen(root)))
			root = s->rw->v[i];
	if (root == NULL || snprintf(anc, sizeof(anc), "%s", path) >=
	    (int)sizeof(anc))
		return;
	n = strlen(root);
	/* each ancestor strictly between root and path, outermost first */
	for (p = anc + n + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mc_strv_add(a, "--bind");
		mc_strv_add(a, anc);
		mc_strv_add(a, anc);
		add_binds(s, a, anc);
		*p = '/';
	}
}

int
sb_bwrap_argv(const struct sb_bwrap_spec *s, struct mc_strv *a)
{
	static const char *const tmpfs[] = { "/tmp", "/var/tmp", "/run" };
	char num[16];
	size_t i;

	mc_strv_add(a, s->bwrap);
	mc_strv_add(a, "--unshare-all");	/* network included */
	mc_strv_add(a, "--die-with-parent");
	mc_strv_add(a, "--new-session");	/* no TIOCSTI on our tty */
	/*
	 * No capability at all, even as root: with them, root inside could
	 * remount / read-write or unmount the tmpfs that hide /run and the
	 * homes.  (The relay sets no_new_privs before it runs the command.)
	 */
	mc_strv_add(a, "--cap-drop");
	mc_strv_add(a, "ALL");
	mc_strv_add(a, "--ro-bind");
	mc_strv_add(a, "/");
	mc_strv_add(a, "/");
	mc_strv_add(a, "--dev");
	mc_strv_add(a, "/dev");
	mc_strv_add(a, "--proc");
	mc_strv_add(a, "/proc");
	for (i = 0; i < nitems(tmpfs); i++) {
		mc_strv_add(a, "--tmpfs");
		mc_strv_add(a, tmpfs[i]);
	}
	/* later mounts go on top, so hide first, then bind */
	for (i = 0; s->homes != NULL && i < s->homes->n; i++) {
		mc_strv_add(a, "--tmpfs");
		mc_strv_add(a, s->homes->v[i]);
	}
	add_binds(s, a, NULL);
	/*
	 * The socket's host directory may hold other sockets (a running
	 * egressd's admin.sock next to its proxy.sock, in /srv or /var/lib
	 * that / shows): an empty tmpfs goes over it, and the binds below
	 * it go on top again.  The caller refuses a directory that is "/",
	 * the working directory or a --rw/--ro path.
	 */
	if (s->hostdir != NULL) {
		mc_strv_add(a, "--tmpfs");
		mc_strv_add(a, s->hostdir);
		add_binds(s, a, s->hostdir);
		mc_strv_add(a, "--remount-ro");
		mc_strv_add(a, s->hostdir);
	}
	/*
	 * --hide paths (egressd replay: the caller's home, the record
	 * directories): an empty read-only tmpfs over each, after the binds
	 * so that it also covers what the working directory shows (a record
	 * directory under it); the binds strictly below it come back on top.
	 */
	for (i = 0; s->hide != NULL && i < s->hide->n; i++) {
		pin_parents(s, a, s->hide->v[i]);
		mc_strv_add(a, "--tmpfs");
		mc_strv_add(a, s->hide->v[i]);
		add_binds(s, a, s->hide->v[i]);
		mc_strv_add(a, "--remount-ro");
		mc_strv_add(a, s->hide->v[i]);
	}
	/* an audit log in a writable path: read-only, on top of them all */
	if (s->audit != NULL) {
		mc_strv_add(a, "--ro-bind");
		mc_strv_add(a, s->audit);
		mc_strv_add(a, s->audit);
	}
	/*
	 * The socket's directory is read-only inside, so the command can
	 * connect to the socket but not remove or replace it.  A --proxy
	 * socket is bound alone into a read-only tmpfs: its real directory
	 * may hold the admin socket.
	 */
	if (s->sockdir != NULL) {
		mc_strv_add(a, "--ro-bind");
		mc_strv_add(a, s->sockdir);
		mc_strv_add(a, SB_IN_SOCKDIR);
	} else {
		mc_strv_add(a, "--tmpfs");
		mc_strv_add(a, SB_IN_SOCKDIR);
		mc_strv_add(a, "--ro-bind");
		mc_strv_add(a, s->sockfile);
		mc_strv_add(a, SB_IN_SOCK);
		mc_strv_add(a, "--remount-ro");
		mc_strv_add(a, SB_IN_SOCKDIR);
	}
	mc_strv_add(a, "--ro-bind");
	mc_strv_add(a, s->exe);
	mc_strv_add(a, SB_IN_EXE);
	mc_strv_add(a, "--chdir");
	mc_strv_add(a, s->cwd);
	mc_strv_add(a, "--");
	mc_strv_add(a, SB_IN_EXE);
	mc_strv_add(a, "relay");
	mc_strv_add(a, "--socket");
	mc_strv_add(a, SB_IN_SOCK);
	snprintf(num, sizeof(num), "%u", SB_IN_PORT);
	mc_strv_add(a, "--port");
	mc_strv_add(a, num);
	if (s->handoff)
		mc_strv_add(a, "--handoff");
	if (s->ready_fd != -1) {
		snprintf(num, sizeof(num), "%d", s->ready_fd);
		mc_strv_add(a, "--ready-fd");
		mc_strv_add(a, num);
	}
	if (s->exec_fd != -1) {
		snprintf(num, sizeof(num), "%d", s->exec_fd);
		mc_strv_add(a, "--exec-fd");
		mc_strv_add(a, num);
	}
	mc_strv_add(a, "--");
	for (i = 0; s->cmd[i] != NULL; i++)
		mc_strv_add(a, s->cmd[i]);
	return a->oom ? -1 : 0;
}

/* Read a small integer sysctl; -1 when absent. */
static long
sysctl_num(const char *path)
{
	char buf[32];
	FILE *fp;
	long v = -1;

	fp = fopen(path, "re");
	if (fp == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), fp) != NULL)
		v = strtol(buf, NULL, 10);
	fclose(fp);
	return v;
}

void
sb_bwrap_explain(const char *bwrap)
{
	char line[512];
	struct stat st;
	int setuid_bwrap;

	setuid_bwrap = stat(bwrap, &st) == 0 && (st.st_mode & S_ISUID) &&
	    st.st_uid == 0;
	/* can it make any sandbox here, or was it our command line? */
	if (bwrap_probe(bwrap, line, sizeof(line)) == -1) {
		fprintf(stderr, "egressd: bwrap cannot create a sandbox here: ");
		sb_put_safe(line[0] != '\0' ? line : "(no message)");
		fprintf(stderr, "\n  (%s --unshare-all --ro-bind / / true "
		    "fails)\n", bwrap);
	} else
		fprintf(stderr, "egressd: bubblewrap (%s) could not create "
		    "the sandbox (its own message is above)\n", bwrap);
	if (geteuid() != 0 && !setuid_bwrap &&
	    sysctl_num("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	    == 1) {
		fprintf(stderr,
"egressd: cause: AppArmor forbids unprivileged user namespaces\n"
"  (kernel.apparmor_restrict_unprivileged_userns=1, the default since\n"
"  Ubuntu 23.10/24.04), and bwrap needs one.\n"
"egressd: fix: give bwrap an AppArmor profile that allows them, as root:\n"
"\n"
"  cat > /etc/apparmor.d/bwrap <<'EOF'\n"
"  abi <abi/4.0>,\n"
"  include <tunables/global>\n"
"  profile bwrap %s flags=(unconfined) {\n"
"    userns,\n"
"    include if exists <local/bwrap>\n"
"  }\n"
"  EOF\n"
"  apparmor_parser -r /etc/apparmor.d/bwrap\n"
"\n"
"  (or, for the whole machine: sysctl "
"kernel.apparmor_restrict_unprivileged_userns=0)\n", bwrap);
		return;
	}
	if (geteuid() != 0 && !setuid_bwrap &&
	    sysctl_num("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
		fprintf(stderr,
"egressd: cause: unprivileged user namespaces are disabled\n"
"  (kernel.unprivileged_userns_clone=0).\n"
"egressd: fix, as root: sysctl -w kernel.unprivileged_userns_clone=1\n"
"  (persist it in /etc/sysctl.d/), or install bwrap setuid root.\n");
		return;
	}
	if (sysctl_num("/proc/sys/user/max_user_namespaces") == 0) {
		fprintf(stderr,
"egressd: cause: user namespaces are disabled (user.max_user_namespaces=0).\n"
"egressd: fix, as root: sysctl -w user.max_user_namespaces=15000\n"
"  (persist it in /etc/sysctl.d/).\n");
		return;
	}
	fprintf(stderr,
"egressd: the kernel settings for user namespaces look fine, so the cause\n"
"  is in bwrap's message: a path that cannot be bound, a process limit\n"
"  (ulimit -u), or a container that forbids namespaces (Docker: a seccomp\n"
"  profile allowing unshare and clone of namespaces, or --privileged).\n"
"  Check with: %s --unshare-all --ro-bind / / true\n"
"  (--sandbox none runs without any isolation.)\n", bwrap);
}

void
sb_put_safe(const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(stderr, "\\%03o", *p);
		else
			fputc(*p, stderr);
	}
}

/*
 * The working directory is bound writable: refuse "/" and a whole home
 * directory (it holds ~/.ssh), unless --rw names it.  0 or -1.
 */
int
sb_check_cwd(const struct run_opts *o, const char *cwd)
{
	struct mc_strv homes = { 0 };
	int bad;

	sb_homes(&homes, getenv("HOME"));
	bad = strcmp(cwd, "/") == 0 ||
	    (mc_strv_has(&homes, cwd) && !mc_strv_has(&o->rw, cwd));
	mc_strv_free(&homes);
	if (!bad)
		return 0;
	fprintf(stderr, "egressd: the working directory %s would be writable "
	    "inside the sandbox, with everything in it;\n"
	    "  cd into a project directory (or pass --rw %s to mean it)\n",
	    cwd, cwd);
	return -1;
}

/*
 * The --proxy socket's directory is hidden inside (it may hold the admin
 * socket): refuse one that must stay visible, "/", the working directory
 * or a --rw/--ro path.  Fills st->proxydir; 0 or -1.
 */
int
sb_check_proxydir(struct run_state *st, const char *cwd)
{
	char *slash;
	size_t i;
	int bad;

	snprintf(st->proxydir, sizeof(st->proxydir), "%s", st->proxyrp);
	slash = strrchr(st->proxydir, '/');
	if (slash == NULL)
		return -1;	/* realpath() is absolute */
	if (slash == st->proxydir)
		slash[1] = '\0';
	else
		*slash = '\0';
	bad = strcmp(st->proxydir, "/") == 0 || strcmp(st->proxydir, cwd) == 0;
	for (i = 0; i < st->o.rw.n; i++)
		bad |= strcmp(st->proxydir, st->o.rw.v[i]) == 0;
	for (i = 0; i < st->o.ro.n; i++)
		bad |= strcmp(st->proxydir, st->o.ro.v[i]) == 0;
	if (!bad)
		return 0;
	fprintf(stderr, "egressd: --proxy %s: its directory %s is hidden "
	    "inside the sandbox (only the socket is bound in), so it cannot "
	    "be the working directory, a --rw/--ro path or /;\n"
	    "  put the socket in a directory of its own\n", st->proxyrp,
	    st->proxydir);
	return -1;
}

/*
 * Hand bwrap its options through a memfd (--args FD) rather than its
 * command line, which would show every host path in the sandbox's
 * /proc/1/cmdline and in ps; the command after "--" stays on the command
 * line (bwrap wants it there).  Returns the fd (close-on-exec; the child
 * clears that) and fills out with "bwrap --args FD -- relay ...", or -1.
 */
int
sb_args_memfd(const struct mc_strv *in, struct mc_strv *out)
{
	char num[16];
	size_t i, len, off;
	ssize_t n;
	int fd;

	fd = memfd_create("egressd-bwrap-args", MFD_CLOEXEC);
	if (fd == -1) {
		fprintf(stderr, "egressd: memfd_create: %s\n",
		    strerror(errno));
		return -1;
	}
	for (i = 1; i < in->n && strcmp(in->v[i], "--") != 0; i++) {
		len = strlen(in->v[i]) + 1;	/* NUL-separated */
		for (off = 0; off < len; off += (size_t)n) {
			n = write(fd, in->v[i] + off, len - off);
			if (n <= 0) {
				fprintf(stderr, "egressd: memfd: %s\n",
				    strerror(errno));
				close(fd);
				return -1;
			}
		}
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	snprintf(num, sizeof(num), "%d", fd);
	mc_strv_add(out, in->v[0]);
	mc_strv_add(out, "--args");
	mc_strv_add(out, num);
	for (; i < in->n; i++)
		mc_strv_add(out, in->v[i]);
	if (out->oom) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The audit log must never be writable from inside: when it lies in the
 * working directory or a --rw path (--audit run.log), it is bound
 * read-only over itself, so that writing, truncating, removing or
 * renaming over it fails (EROFS, EBUSY) while egressd keeps appending
 * through the descriptor it holds.  A file with more than one hard link
 * is refused: another name of it may lie in a writable path.  Stores the
 * path to bind in out ("" for none); 0, or an exit status.
 */
static int
audit_guard(const struct run_state *st, const char *cwd, char *out,
    size_t len)
{
	char rp[PATH_MAX];
	struct stat sst;
	size_t i;
	int fd, w;

	out[0] = '\0';
	if (st->o.proxy != NULL || st->audit_tmp ||
	    strcmp(st->auditpath, "-") == 0)
		return 0;
	/* egress_start() created it; make sure, it must exist to be bound */
	fd = open(st->auditpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0640);
	if (fd == -1 || fstat(fd, &sst) == -1 ||
	    realpath(st->auditpath, rp) == NULL) {
		fprintf(stderr, "egressd: audit log %s: %s\n", st->auditpath,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return 3;
	}
	close(fd);
	if (!S_ISREG(sst.st_mode))
		return 0;	/* /dev/null, a FIFO: nothing to erase */
	if (sst.st_nlink > 1) {
		fprintf(stderr, "egressd run: the audit log %s has %lu hard "
		    "links; another name of it may be writable inside the "
		    "sandbox;\n  keep the audit log in a file of its own, "
		    "outside the working directory\n  (e.g. --audit "
		    "$XDG_STATE_HOME/egressd/run.log)\n", rp,
		    (unsigned long)sst.st_nlink);
		return 2;
	}
	w = sb_path_under(rp, cwd);
	for (i = 0; i < st->o.rw.n; i++)
		w |= sb_path_under(rp, st->o.rw.v[i]);
	if (w && snprintf(out, len, "%s", rp) >= (int)len) {
		fprintf(stderr, "egressd: audit log %s: %s\n", rp,
		    strerror(ENAMETOOLONG));
		return 3;
	}
	return 0;
}

/*
 * 1 if the host path p (resolved) is bound inside the sandbox: it lies in
 * the working directory, a --rw or a --ro path.
 */
static int
bound_inside(const struct run_state *st, const char *cwd, const char *p)
{
	size_t i;

	if (sb_path_under(p, cwd))
		return 1;
	for (i = 0; i < st->o.rw.n; i++)
		if (sb_path_under(p, st->o.rw.v[i]))
			return 1;
	for (i = 0; i < st->o.ro.n; i++)
		if (sb_path_under(p, st->o.ro.v[i]))
			return 1;
	return 0;
}

/* 1 if the host path p (resolved) can be seen inside the sandbox. */
static int
seen_inside(const struct run_state *st, const char *cwd,
    const struct mc_strv *hidden, const char *p)
{
	size_t i;

	if (bound_inside(st, cwd, p))
		return 1;
	for (i = 0; i < hidden->n; i++)
		if (sb_path_under(p, hidden->v[i]))
			return 0;
	return 1;
}

/*
 * CMD, found on the host at host (through the caller's PATH), lies in a
 * directory the sandbox hides (a home, /tmp, /var/tmp, /run), or is a
 * link into one: what to say if it then cannot be run inside (exit
 * 127), with the --ro options that show it, into out.  out is empty
 * when it is visible inside.
 */
void
sb_cmd_hint(const struct run_state *st, const char *cwd, const char *cmd,
    const char *host, char *out, size_t len)
{
	struct mc_strv homes = { 0 };
	char abs[PATH_MAX], dir[2][PATH_MAX], opts[2 * PATH_MAX + 16], *s;
	size_t i, o = 0;
	int n;

	out[0] = '\0';
	opts[0] = '\0';
	n = host[0] == '/' ? snprintf(abs, sizeof(abs), "%s", host) :
	    snprintf(abs, sizeof(abs), "%s/%s", cwd, host);
	if (n < 0 || (size_t)n >= sizeof(abs))
		return;
	/* the directory PATH named, and the one the file really is in */
	snprintf(dir[0], sizeof(dir[0]), "%s", abs);
	if ((s = strrchr(dir[0], '/')) != NULL)
		s[s == dir[0] ? 1 : 0] = '\0';
	if (realpath(dir[0], dir[1]) == NULL)
		return;
	memcpy(dir[0], dir[1], sizeof(dir[0]));
	if (realpath(abs, dir[1]) == NULL)
		return;
	if ((s = strrchr(dir[1], '/')) != NULL)
		s[s == dir[1] ? 1 : 0] = '\0';
	sb_homes(&homes, getenv("HOME"));
	mc_strv_add(&homes, "/tmp");
	mc_strv_add(&homes, "/var/tmp");
	mc_strv_add(&homes, "/run");
	for (i = 0; i < 2; i++) {
		if (seen_inside(st, cwd, &homes, dir[i]) ||
		    (i == 1 && strcmp(dir[0], dir[1]) == 0))
			continue;
		n = snprintf(opts + o, sizeof(opts) - o, " --ro %s", dir[i]);
		if (n > 0 && (size_t)n < sizeof(opts) - o)
			o += (size_t)n;
	}
	mc_strv_free(&homes);
	if (o == 0)
		return;
	snprintf(out, len, "egressd: %s: not found inside the sandbox; on "
	    "this host it is %s, in a directory the sandbox hides (the home "
	    "directories, /tmp, /var/tmp and /run are empty inside)\n"
	    "egressd: fix: add%s to make it visible (read-only)\n", cmd, abs,
	    opts);
}

/* bwrap mode: the launcher argv; 0, or an exit status. */
int
sb_bwrap_prepare(const struct run_state *st, const char *cwd, int ready_fd,
    struct mc_strv *argv)
{
	struct sb_bwrap_spec spec;
	struct mc_strv homes = { 0 }, hidden = { 0 }, libs = { 0 };
	struct mc_strv keep = { 0 };
	char bw[PATH_MAX], exe[PATH_MAX], audit[PATH_MAX];
	ssize_t n;
	size_t i, j;
	int rc = 3, covered;

	rc = audit_guard(st, cwd, audit, sizeof(audit));
	if (rc != 0)
		return rc;
	rc = 3;

	if (sb_bwrap_find(bw, sizeof(bw)) == NULL &&
	    sb_bwrap_unusable(bw, sizeof(bw)) != NULL) {
		struct stat bst;

		fprintf(stderr, "egressd: bwrap cannot be used: %s is %s\n"
		    "egressd: fix: reinstall bubblewrap, or run without any "
		    "isolation with --sandbox none\n", bw,
		    stat(bw, &bst) == -1 ? "a dangling link" :
		    !S_ISREG(bst.st_mode) ? "not a regular file" :
		    "not executable");
		return 3;
	}
	if (sb_bwrap_find(bw, sizeof(bw)) == NULL) {
		fprintf(stderr,
"egressd: bubblewrap (bwrap) is not installed: looked in /usr/bin, /bin,\n"
"  /usr/local/bin and /usr/sbin (never $PATH).\n"
"egressd: fix: apt-get install bubblewrap (Debian, Ubuntu), dnf install\n"
"  bubblewrap (Fedora), apk add bubblewrap (Alpine); or run without any\n"
"  isolation with --sandbox none.\n");
		return 3;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe) - 1) {
		fprintf(stderr, "egressd: /proc/self/exe: %s\n",
		    strerror(errno));
		return 3;
	}
	exe[n] = '\0';
	if (strstr(exe, " (deleted)") != NULL) {
		fprintf(stderr, "egressd: %s was replaced while running; "
		    "run it again\n", exe);
		return 3;
	}
	sb_homes(&homes, getenv("HOME"));
	for (i = 0; i < homes.n; i++)
		mc_strv_add(&hidden, homes.v[i]);
	for (i = 0; i < st->o.hide.n; i++)
		mc_strv_add(&hidden, st->o.hide.v[i]);
	mc_strv_add(&hidden, "/tmp");
	mc_strv_add(&hidden, "/var/tmp");
	mc_strv_add(&hidden, "/run");
	sb_maplibs(&libs, &hidden);
	/* those already visible through a bind need nothing more */
	for (i = 0; i < libs.n; i++)
		if (!bound_inside(st, cwd, libs.v[i]) &&
		    strcmp(libs.v[i], exe) != 0)
			mc_strv_add(&keep, libs.v[i]);
	memset(&spec, 0, sizeof(spec));
	spec.bwrap = bw;
	spec.exe = exe;
	spec.cwd = cwd;
	spec.rw = &st->o.rw;
	spec.ro = &st->o.ro;
	spec.homes = &homes;
	spec.libs = &keep;
	if (st->o.proxy != NULL) {
		spec.sockfile = st->proxyrp;
		spec.hostdir = st->proxydir;
	} else {
		spec.sockdir = st->sockdir;
		spec.hostdir = st->privdir;
	}
	/* one already hidden (/tmp, a home) needs nothing, unless bound */
	covered = bound_inside(st, cwd, spec.hostdir);
	for (j = 0; !covered && j < hidden.n; j++) {
		if (sb_path_under(spec.hostdir, hidden.v[j])) {
			spec.hostdir = NULL;
			break;
		}
	}
	spec.audit = audit[0] != '\0' ? audit : NULL;
	spec.ready_fd = ready_fd;
	spec.exec_fd = st->o.launch_fd;
	spec.hide = &st->o.hide;
	spec.handoff = st->o.proxy == NULL || st->o.handoff;
	spec.cmd = st->o.cmd;
	if (sb_bwrap_argv(&spec, argv) == -1 || homes.oom || libs.oom ||
	    keep.oom) {
		fprintf(stderr, "egressd: out of memory\n");
		goto out;
	}
	rc = 0;
out:
	mc_strv_free(&homes);
	mc_strv_free(&hidden);
	mc_strv_free(&libs);
	mc_strv_free(&keep);
	return rc;
}
