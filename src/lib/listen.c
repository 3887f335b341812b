/*
 * listen.c: binding the listening sockets (listen.h): the proxy's TCP
 * and Unix listeners, at start and when a reload changes them, and the
 * one Unix-socket binder that the admin API shares.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "addrclass.h"
#include "cfg.h"
#include "core.h"
#include "host.h"
#include "listen.h"
#include "log.h"
#include "tcpopt.h"

static int
bind_tcp(struct eg_lsock *ls, const struct eg_listen *l, struct eg_err *err)
{
	int fd, one = 1;

	fd = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		return eg_err_set(err, errno, "listen %s: %s", l->text,
		    strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* accepted sockets inherit it: no setsockopt per connection */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* and its congestion control: unpaced when only this host reaches it */
	if (eg_sa_loopback((const struct sockaddr *)&l->ss))
		eg_tcp_local(fd);
	if (l->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->ss, l->sslen) == -1 ||
	    listen(fd, 4096) == -1) {
		eg_err_set(err, errno, "listen %s: cannot bind: %s", l->text,
		    strerror(errno));
		close(fd);
		return -1;
	}
	ls->sslen = sizeof(ls->ss);
	getsockname(fd, (struct sockaddr *)&ls->ss, &ls->sslen);
	ls->fd = fd;
	return 0;
}

/* Is somebody accepting connections on the Unix socket at sun? */
static int
unix_live(const struct sockaddr_un *sun)
{
	int fd, live;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	live = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0;
	close(fd);
	return live;
}

/*
 * The one Unix-socket binder, for the proxy's listeners and the admin
 * socket.  A stale socket file (nobody listening) is replaced; a live
 * one is 1, anything that is not a socket an error.
 */
int
eg_listen_unix(const char *what, const char *path, mode_t mode,
    int backlog, int flags, int *fdp, struct eg_err *err)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return eg_err_set(err, ENAMETOOLONG, "%s %s: path too long",
		    what, path);
	memcpy(sun.sun_path, path, strlen(path));
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return eg_err_set(err, EEXIST, "%s %s: exists and is "
			    "not a socket", what, path);
		if (unix_live(&sun)) {
			eg_err_set(err, EADDRINUSE, "%s %s: another server "
			    "is listening there", what, path);
			return 1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd == -1)
		return eg_err_set(err, errno, "%s %s: %s", what, path,
		    strerror(errno));
	/*
	 * bind(2) creates the file with the socket inode's mode less the
	 * umask: set that to mode first (Linux), so the file is never wider
	 * than mode, whatever the process's umask (which a library must not
	 * change: it is shared by every thread).  chmod(2) then gives the
	 * exact mode, before listen(2) lets anybody connect.
	 */
	(void)fchmod(fd, mode);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		eg_err_set(err, errno, "%s %s: %s", what, path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	if (chmod(path, mode) == -1 || listen(fd, backlog) == -1) {
		eg_err_set(err, errno, "%s %s: %s", what, path,
		    strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	*fdp = fd;
	return 0;
}

static int
bind_unix(struct eg_lsock *ls, const char *path, mode_t mode,
    struct eg_err *err)
{
	int fd;

	if (eg_listen_unix("unix", path, mode, 4096, SOCK_NONBLOCK, &fd,
	    err) != 0)
		return -1;
	ls->fd = fd;
	if ((ls->path = eg_strdup(path)) == NULL) {
		/* not yet ours to unlink at exit: do it now */
		unlink(path);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int
eg_listen_bind_tcp(struct eg_lsock *ls, const char *text,
    struct eg_err *err)
{
	struct eg_listen l;
	char tmp[128];
	size_t n = strlen(text);
	int any = 0;

	memset(&l, 0, sizeof(l));
	l.kind = EG_LISTEN_TCP;
	l.text = (char *)(uintptr_t)text;
	/* port 0 (the configuration grammar refuses it): any free port */
	if (n >= 2 && n < sizeof(tmp) && strcmp(text + n - 2, ":0") == 0) {
		memcpy(tmp, text, n + 1);
		tmp[n - 1] = '1';
		any = 1;
	}
	if (eg_cfg_parse_addr(any ? tmp : text, n, &l.ss, &l.sslen) == -1)
		return eg_err_set(err, EINVAL, "listen %s: expected ADDR:PORT "
		    "(\"[v6]:PORT\" for IPv6)", text);
	if (any && l.ss.ss_family == AF_INET)
		((struct sockaddr_in *)(void *)&l.ss)->sin_port = 0;
	else if (any)
		((struct sockaddr_in6 *)(void *)&l.ss)->sin6_port = 0;
	ls->fd = -1;
	ls->kind = EG_LISTEN_TCP;
	return bind_tcp(ls, &l, err);
}

int
eg_listen_bind_unix(struct eg_lsock *ls, const char *path, mode_t mode,
    struct eg_err *err)
{
	ls->fd = -1;
	ls->kind = EG_LISTEN_UNIX;
	return bind_unix(ls, path, mode, err);
}

void
eg_lsock_clear(struct eg_lsock *ls)
{
	if (ls->adopted) {	/* ex->adopt owns the fd and the text */
		ls->fd = -1;
		ls->text = NULL;
		return;
	}
	if (ls->fd != -1)
		close(ls->fd);
	if (ls->path != NULL)
		unlink(ls->path);
	eg_free(ls->path);
	eg_free(ls->text);
	ls->fd = -1;
	ls->path = ls->text = NULL;
}

/* --- adopted listeners (egress_adopt_fd) --------------------------------- */

static int
sa_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		    a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return a6->sin6_port == b6->sin6_port &&
		    memcmp(&a6->sin6_addr, &b6->sin6_addr,
		    sizeof(a6->sin6_addr)) == 0;
	return 0;
}

/* The adopted listener serving the configured l (same address), or NULL. */
static const struct eg_lsock *
adopted_for(const struct egress *ex, const struct eg_listen *l)
{
	size_t i;

	for (i = 0; i < ex->nadopt; i++) {
		if (ex->adopt[i].kind != l->kind)
			continue;
		if (l->kind == EG_LISTEN_UNIX ?
		    strcmp(ex->adopt[i].text, l->text) == 0 :
		    sa_same(&ex->adopt[i].ss, &l->ss))
			return &ex->adopt[i];
	}
	return NULL;
}

/* Not bound by us at all: served on an adopted socket, or the implicit
 * default listener while sockets were handed in (they replace it). */
static int
listen_skipped(const struct egress *ex, const struct eg_listen *l)
{
	return ex->nadopt > 0 && (l->line == -1 || adopted_for(ex, l) != NULL);
}

int
eg_listen_adopt(struct eg_lsock *ls, int fd, struct eg_err *err)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)(void *)&ls->ss;
	char text[sizeof(sun->sun_path) + 16];
	int type = 0, acc = 0, fl, one = 1;
	socklen_t len;
	size_t plen;

	memset(ls, 0, sizeof(*ls));
	ls->fd = -1;
	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1)
		return eg_err_set(err, errno, "descriptor %d: not a socket "
		    "(%s)", fd, strerror(errno));
	len = sizeof(acc);
	if (type != SOCK_STREAM || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN,
	    &acc, &len) == -1 || !acc)
		return eg_err_set(err, EINVAL, "descriptor %d: not a "
		    "listening stream socket", fd);
	ls->sslen = sizeof(ls->ss);
	if (getsockname(fd, (struct sockaddr *)&ls->ss, &ls->sslen) == -1)
		return eg_err_set(err, errno, "descriptor %d: getsockname: "
		    "%s", fd, strerror(errno));
	switch (ls->ss.ss_family) {
	case AF_INET:
	case AF_INET6:
		(void)eg_addr_text((const struct sockaddr *)&ls->ss, text,
		    sizeof(text));
		ls->kind = EG_LISTEN_TCP;
		break;
	case AF_UNIX:
		/* explicit length: sun_path need not be NUL-terminated */
		plen = ls->sslen > offsetof(struct sockaddr_un, sun_path) ?
		    ls->sslen - offsetof(struct sockaddr_un, sun_path) : 0;
		if (plen > sizeof(sun->sun_path))
			plen = sizeof(sun->sun_path);
		if (plen == 0 || sun->sun_path[0] == '\0')
			return eg_err_set(err, EINVAL, "descriptor %d: an "
			    "unnamed or abstract Unix socket; only a socket "
			    "file can be adopted", fd);
		plen = strnlen(sun->sun_path, plen);
		memcpy(text, sun->sun_path, plen);
		text[plen] = '\0';
		ls->kind = EG_LISTEN_UNIX;
		break;
	default:
		return eg_err_set(err, EAFNOSUPPORT, "descriptor %d: not a "
		    "TCP or Unix socket", fd);
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
		return eg_err_set(err, errno, "descriptor %d: fcntl: %s", fd,
		    strerror(errno));
	if (ls->kind == EG_LISTEN_TCP) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (eg_sa_loopback((const struct sockaddr *)&ls->ss))
			eg_tcp_local(fd);
	}
	if ((ls->text = eg_strdup(text)) == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	ls->fd = fd;
	ls->adopted = 1;
	return 0;
}

int
egress_adopt_fd(struct egress *ex, int fd, const char *role)
{
	struct eg_err err;
	struct eg_lsock ls;
	int type = 0, acc = 0;
	socklen_t len = sizeof(type);

	if (ex->started) {
		return eg_set_err(ex, EBUSY, "sockets must be adopted "
		    "before egress_start()");
	}
	if (role != NULL && strcmp(role, "admin") == 0) {
		if (ex->admin_fd != -1) {
			return eg_set_err(ex, EEXIST, "adopt fd %d: the "
			    "admin API already has a socket (fd %d)", fd,
			    ex->admin_fd);
		}
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
		    type != SOCK_STREAM || (len = sizeof(acc),
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len)) ==
		    -1 || !acc) {
			return eg_set_err(ex, EINVAL, "adopt fd %d (admin): "
			    "not a listening stream socket", fd);
		}
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		ex->admin_fd = fd;
		return 0;
	}
	if (role == NULL || strcmp(role, "proxy") != 0) {
		return eg_set_err(ex, EINVAL, "adopt fd %d: unknown role "
		    "'%s' (proxy or admin)", fd, role ? role : "(null)");
	}
	if (ex->nadopt == EG_ADOPT_MAX) {
		return eg_set_err(ex, ENOSPC, "adopt fd %d: more than %d "
		    "proxy sockets", fd, EG_ADOPT_MAX);
	}
	if (eg_listen_adopt(&ls, fd, &err) == -1) {
		return eg_set_err(ex, err.code, "adopt: %s", err.msg);
	}
	ls.sess = &ex->def;
	ex->adopt[ex->nadopt++] = ls;
	return 0;
}

void
eg_listen_adopt_free(struct egress *ex)
{
	size_t i;

	for (i = 0; i < ex->nadopt; i++) {
		close(ex->adopt[i].fd);
		eg_free(ex->adopt[i].text);
	}
	ex->nadopt = 0;
	if (ex->admin_fd != -1)
		close(ex->admin_fd);
	ex->admin_fd = -1;
}

/* Bind every listener of cfg (and take up the adopted ones); on error
 * nothing stays bound. */
int
eg_listen_all(struct egress *ex, const struct eg_cfg *cfg,
    struct eg_lsock **out, size_t *nout, struct eg_err *err)
{
	struct eg_lsock *ls;
	size_t i, k = 0, n = cfg->nlisten + ex->nadopt;
	int rc;

	if ((ls = eg_calloc(n ? n : 1, sizeof(*ls))) == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	for (i = 0; i < cfg->nlisten; i++) {
		if (listen_skipped(ex, &cfg->listen[i]))
			continue;
		ls[k].fd = -1;
		ls[k].kind = cfg->listen[i].kind;
		ls[k].sess = &ex->def;
		if ((ls[k].text = eg_strdup(cfg->listen[i].text)) == NULL)
			rc = eg_err_set(err, ENOMEM, "out of memory");
		else if (cfg->listen[i].kind == EG_LISTEN_TCP)
			rc = bind_tcp(&ls[k], &cfg->listen[i], err);
		else
			rc = bind_unix(&ls[k], cfg->listen[i].text,
			    cfg->unix_mode, err);
		if (rc == -1) {
			eg_lsock_clear(&ls[k]);	/* its text */
			while (k-- > 0)
				eg_lsock_clear(&ls[k]);
			eg_free(ls);
			return -1;
		}
		k++;
	}
	for (i = 0; i < ex->nadopt; i++)
		ls[k++] = ex->adopt[i];		/* shares fd and text */
	*out = ls;
	*nout = k;
	return 0;
}

static int
listen_same(const struct eg_lsock *ls, const struct eg_listen *l)
{
	return !ls->adopted && ls->kind == l->kind &&
	    strcmp(ls->text, l->text) == 0;
}

/* listeners: keep the ones still configured, bind the new ones; the
 * adopted ones stay whatever the configuration says (nobody could bind
 * them again) */
int
eg_listen_rebind(struct egress *ex, const struct eg_cfg *cfg,
    struct eg_lsock **out, size_t *nout, struct eg_err *err)
{
	struct eg_lsock *nls;
	size_t i, j, nn = 0, n = cfg->nlisten + ex->nadopt;

	if ((nls = eg_calloc(n ? n : 1, sizeof(*nls))) == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	for (i = 0; i < ex->nls; i++)
		ex->ls[i].keep = 0;
	for (j = 0; j < cfg->nlisten; j++) {
		if (listen_skipped(ex, &cfg->listen[j]))
			continue;
		for (i = 0; i < ex->nls; i++)
			if (!ex->ls[i].keep && listen_same(&ex->ls[i],
			    &cfg->listen[j]))
				break;
		if (i < ex->nls) {
			ex->ls[i].keep = 1;
			nls[nn] = ex->ls[i];	/* shares fd and strings */
			nn++;
			continue;
		}
		nls[nn].fd = -1;
		nls[nn].kind = cfg->listen[j].kind;
		nls[nn].sess = &ex->def;
		if ((nls[nn].text = eg_strdup(cfg->listen[j].text)) == NULL) {
			eg_listen_drop(nls, nn);
			return eg_err_set(err, ENOMEM, "out of memory");
		}
		if ((cfg->listen[j].kind == EG_LISTEN_TCP ?
		    bind_tcp(&nls[nn], &cfg->listen[j], err) :
		    bind_unix(&nls[nn], cfg->listen[j].text,
		    cfg->unix_mode, err)) == -1) {
			/* err names the listener and the cause */
			eg_lsock_clear(&nls[nn]);
			eg_listen_drop(nls, nn);
			return -1;
		}
		nn++;
	}
	for (i = 0; i < ex->nadopt; i++)
		nls[nn++] = ex->adopt[i];
	*out = nls;
	*nout = nn;
	return 0;
}

void
eg_listen_drop(struct eg_lsock *ls, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!ls[i].keep)
			eg_lsock_clear(&ls[i]);
	eg_free(ls);
}
