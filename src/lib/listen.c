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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "cfg.h"
#include "listen.h"
#include "proxy.h"

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
	if (l->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->ss, l->sslen) == -1 ||
	    listen(fd, 4096) == -1) {
		eg_err_set(err, errno, "listen %s: %s", l->text,
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
	if (ls->fd != -1)
		close(ls->fd);
	if (ls->path != NULL)
		unlink(ls->path);
	eg_free(ls->path);
	eg_free(ls->text);
	ls->fd = -1;
	ls->path = ls->text = NULL;
}

/* Bind every listener of cfg; on error nothing stays bound. */
int
eg_listen_all(struct egress *ex, const struct eg_cfg *cfg,
    struct eg_lsock **out, size_t *nout, struct eg_err *err)
{
	struct eg_lsock *ls;
	size_t i;
	int rc;

	if ((ls = eg_calloc(cfg->nlisten ? cfg->nlisten : 1, sizeof(*ls))) ==
	    NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	for (i = 0; i < cfg->nlisten; i++) {
		ls[i].fd = -1;
		ls[i].kind = cfg->listen[i].kind;
		ls[i].sess = &ex->def;
		if ((ls[i].text = eg_strdup(cfg->listen[i].text)) == NULL)
			rc = eg_err_set(err, ENOMEM, "out of memory");
		else if (cfg->listen[i].kind == EG_LISTEN_TCP)
			rc = bind_tcp(&ls[i], &cfg->listen[i], err);
		else
			rc = bind_unix(&ls[i], cfg->listen[i].text,
			    cfg->unix_mode, err);
		if (rc == -1) {
			eg_lsock_clear(&ls[i]);	/* its text */
			while (i-- > 0)
				eg_lsock_clear(&ls[i]);
			eg_free(ls);
			return -1;
		}
	}
	*out = ls;
	*nout = cfg->nlisten;
	return 0;
}

static int
listen_same(const struct eg_lsock *ls, const struct eg_listen *l)
{
	return ls->kind == l->kind && strcmp(ls->text, l->text) == 0;
}

/* listeners: keep the ones still configured, bind the new ones */
int
eg_listen_rebind(struct egress *ex, const struct eg_cfg *cfg,
    struct eg_lsock **out, size_t *nout, struct eg_err *err)
{
	struct eg_lsock *nls;
	size_t i, j, nn = 0;

	if ((nls = eg_calloc(cfg->nlisten ? cfg->nlisten : 1, sizeof(*nls))) ==
	    NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	for (i = 0; i < ex->nls; i++)
		ex->ls[i].keep = 0;
	for (j = 0; j < cfg->nlisten; j++) {
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
