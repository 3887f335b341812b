/*
 * admin.c: the admin API's server on libmicrohttpd: its listener (a
 * Unix socket, TCP with a bearer token, or one handed in), the daemon and
 * its callbacks; the routes are admin-routes.c's (admin-int.h: the only
 * two files that include microhttpd.h).  MHD runs it on threads of its
 * own, one per connection, so a phase switch that waits for the loops to
 * close tunnels never holds up /healthz; connections are capped
 * (admin_max_connections) and closed when idle (admin_idle_timeout), so
 * idle ones cannot lock it out.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <microhttpd.h>

#include "admin-int.h"
#include "cfg.h"
#include "core.h"
#include "event.h"
#include "listen.h"
#include "log.h"
#include "shared.h"

/*
 * libmicrohttpd's own unescaping, but a NUL it decodes (%00) becomes DEL:
 * the handler gets the URL as a C string, and "/v1/sessions/keep%00x"
 * would otherwise reach it as "/v1/sessions/keep".  DEL is a control
 * character, which eg_admin_dispatch() refuses in a path like any other.
 */
static size_t
unescape(void *cls, struct MHD_Connection *con, char *s)
{
	size_t i, n;

	(void)cls;
	(void)con;
	n = MHD_http_unescape(s);
	for (i = 0; i < n; i++)
		if (s[i] == '\0')
			s[i] = 0x7f;
	return n;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *con, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct eg_admin *ad = cls;
	struct req *rq = *con_cls;
	enum method m;
	size_t n;

	(void)version;
	if (rq == NULL) {
		/* out of memory: refuse the request, not the connection
		 * (the client learns that nothing was done) */
		if ((rq = eg_calloc(1, sizeof(*rq))) == NULL)
			return eg_admin_oom(con);
		*con_cls = rq;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		/* keep the first EG_ADMIN_BODY_MAX bytes; drop the rest */
		n = *upload_data_size;
		if (rq->len + n > sizeof(rq->body)) {
			rq->too_big = 1;
		} else {
			memcpy(rq->body + rq->len, upload_data, n);
			rq->len += n;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		m = M_GET;
	else if (strcmp(method, "PUT") == 0)
		m = M_PUT;
	else if (strcmp(method, "POST") == 0)
		m = M_POST;
	else if (strcmp(method, "DELETE") == 0)
		m = M_DELETE;
	else
		m = M_OTHER;
	return eg_admin_dispatch(ad, con, url, m, rq);
}

static void
on_completed(void *cls, struct MHD_Connection *con, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)con;
	(void)toe;
	eg_admin_req_free(*con_cls);
	*con_cls = NULL;
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct eg_admin *ad = cls;
	char msg[512];
	size_t n;

	if (!eg_log_enabled(ad->ex, EGRESS_LOG_DEBUG))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	eg_log(ad->ex, EGRESS_LOG_DEBUG, "admin: %s", msg);
}

/* --- listeners ------------------------------------------------------------ */

int
eg_admin_default_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (xdg != NULL && *xdg != '\0')
		n = snprintf(buf, len, "%s/egressd/admin.sock", xdg);
	else
		n = snprintf(buf, len, "/tmp/egressd-%lu/admin.sock",
		    (unsigned long)getuid());
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Create the default socket's folder 0700, or check the existing one. */
static int
default_dir(const char *path, struct eg_err *err)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash;
	struct stat st;

	slash = strrchr(path, '/');
	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
		return eg_err_set(err, EINVAL, "admin %s: bad path", path);
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return eg_err_set(err, errno, "admin: cannot create %s: %s",
		    dir, strerror(errno));
	if (lstat(dir, &st) == -1)
		return eg_err_set(err, errno, "admin: %s: %s", dir,
		    strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0)
		return eg_err_set(err, EPERM, "admin: %s must be a folder "
		    "owned by uid %lu with mode 0700; refusing to use it",
		    dir, (unsigned long)getuid());
	return 0;
}

/* 1 live server (not an error for the default), 0 bound, -1 error. */
static int
listen_unix(struct eg_admin *ad, const char *path, mode_t mode,
    struct eg_err *err)
{
	int fd, rc;

	rc = eg_listen_unix("admin", path, mode, SOMAXCONN, 0, &fd, err);
	if (rc != 0)
		return rc;
	ad->fd = fd;
	ad->path = eg_strdup(path);
	if (ad->path == NULL) {
		unlink(path);	/* admin_free() cannot: it has no path */
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int
listen_tcp(struct eg_admin *ad, const char *text, struct eg_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (eg_cfg_parse_addr(text, strlen(text), &ss, &sl) == -1)
		return eg_err_set(err, EINVAL, "admin %s: expected ADDR:PORT",
		    text);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return eg_err_set(err, errno, "admin %s: %s", text,
		    strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(fd, SOMAXCONN) == -1) {
		eg_err_set(err, errno, "admin %s: %s", text, strerror(errno));
		close(fd);
		return -1;
	}
	ad->fd = fd;
	ad->tcp = 1;
	return 0;
}

/* Read the bearer token (eg_token_read(): the same rules as egressctl). */
static int
read_token(struct eg_admin *ad, const char *file, struct eg_err *err)
{
	char buf[EG_TOKEN_MAX + 1], msg[512];
	const char *why;
	size_t len;

	if (file == NULL)
		return eg_err_set(err, EINVAL, "admin on TCP requires "
		    "admin_token_file");
	if ((why = eg_token_read(file, buf, msg, sizeof(msg))) != NULL)
		return eg_err_set(err, EINVAL, "admin_token_file %s: %s",
		    file, why);
	len = strlen(buf);
	ad->token = eg_strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	if (ad->token == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	ad->toklen = len;
	return 0;
}

static void
admin_free(struct eg_admin *ad)
{
	if (ad == NULL)
		return;
	if (ad->d != NULL)
		MHD_stop_daemon(ad->d);		/* closes ad->fd */
	else if (ad->fd != -1)
		close(ad->fd);
	if (ad->path != NULL)
		unlink(ad->path);
	eg_free(ad->path);
	eg_free(ad->where);
	eg_free(ad->conf);
	if (ad->token != NULL) {
		explicit_bzero(ad->token, ad->toklen);
		eg_free(ad->token);
	}
	pthread_mutex_destroy(&ad->mtx);
	eg_free(ad);
}

static int	admin_adopted(struct egress *, struct eg_err *);
static int	admin_serve(struct egress *, struct eg_admin *,
		    struct eg_err *);

int
eg_admin_start(struct egress *ex, struct eg_err *err)
{
	struct eg_admin *ad;
	const char *admin = ex->cfg->admin;
	char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int rc;

	if (ex->admin != NULL)
		return 0;
	if (ex->admin_fd != -1)
		return admin_adopted(ex, err);
	if (admin != NULL && strcmp(admin, "none") == 0)
		return 0;
	if ((ad = eg_calloc(1, sizeof(*ad))) == NULL)
		return eg_err_set(err, ENOMEM, "out of memory");
	ad->ex = ex;
	ad->fd = -1;
	pthread_mutex_init(&ad->mtx, NULL);
	if (admin == NULL) {
		if (eg_admin_default_path(def, sizeof(def)) == -1) {
			admin_free(ad);
			return eg_err_set(err, ENAMETOOLONG, "admin: the "
			    "default socket path is too long; set admin =");
		}
		if (default_dir(def, err) == -1) {
			admin_free(ad);
			return -1;
		}
		rc = listen_unix(ad, def, ex->cfg->admin_mode, err);
		if (rc == 1) {
			eg_log(ex, EGRESS_LOG_WARN, "%s; running without an "
			    "admin API (set admin = PATH to have one)",
			    err->msg);
			admin_free(ad);
			return 0;
		}
	} else if (strchr(admin, '/') != NULL)
		rc = listen_unix(ad, admin, ex->cfg->admin_mode, err);
	else {
		rc = read_token(ad, ex->cfg->admin_token_file, err);
		if (rc == 0)
			rc = listen_tcp(ad, admin, err);
	}
	if (rc != 0) {
		admin_free(ad);
		return -1;
	}
	ad->where = eg_strdup(admin != NULL ? admin : def);
	if (admin != NULL && (ad->conf = eg_strdup(admin)) == NULL) {
		admin_free(ad);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return admin_serve(ex, ad, err);
}

/*
 * The admin API on the socket egress_adopt_fd(ex, fd, "admin") handed in
 * (socket activation): admin = is not bound; a TCP socket still needs
 * the token.  The fd is the admin API's from here on (closed by
 * admin_free(), even on failure).
 */
static int
admin_adopted(struct egress *ex, struct eg_err *err)
{
	struct eg_admin *ad;
	struct eg_lsock ls;
	int fd = ex->admin_fd;

	ex->admin_fd = -1;
	if ((ad = eg_calloc(1, sizeof(*ad))) == NULL) {
		close(fd);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	ad->ex = ex;
	ad->fd = fd;
	pthread_mutex_init(&ad->mtx, NULL);
	if (eg_listen_adopt(&ls, fd, err) == -1) {
		admin_free(ad);
		return -1;
	}
	/* MHD's own sockets block; the listener must too (MHD polls it) */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	ad->where = ls.text;	/* not ad->path: never unlinked */
	if (ls.kind == EG_LISTEN_TCP) {
		ad->tcp = 1;
		if (read_token(ad, ex->cfg->admin_token_file, err) == -1) {
			admin_free(ad);
			return -1;
		}
	}
	if (ex->cfg->admin != NULL && (ad->conf = eg_strdup(ex->cfg->admin))
	    == NULL) {
		admin_free(ad);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return admin_serve(ex, ad, err);
}

/* Start the HTTP server on ad->fd (ad->where names it); ad is freed on
 * failure. */
static int
admin_serve(struct egress *ex, struct eg_admin *ad, struct eg_err *err)
{
	unsigned maxc;

	/*
	 * Idle connections must not lock the control plane: up to
	 * admin_max_connections at once (within the descriptor limit), each
	 * closed after admin_idle_timeout seconds without a byte.  poll(),
	 * not select(): descriptors above FD_SETSIZE are normal here.
	 */
	maxc = ex->cfg->admin_max_connections;
	if (ex->fd_limit > 0 && maxc > ex->fd_limit / 4) {
		maxc = ex->fd_limit / 4 > 0 ? ex->fd_limit / 4 : 1;
		eg_log(ex, EGRESS_LOG_WARN, "admin: admin_max_connections "
		    "%u is more than a quarter of the descriptor limit (%u); "
		    "using %u", ex->cfg->admin_max_connections, ex->fd_limit,
		    maxc);
	}
	ad->d = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
	    0, NULL, NULL, on_request, ad,
	    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)ad->fd,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, ad,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape, ad,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, ad,
	    MHD_OPTION_CONNECTION_LIMIT, maxc,
	    MHD_OPTION_CONNECTION_TIMEOUT, ex->cfg->admin_idle_timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
	    MHD_OPTION_END);
	if (ad->d == NULL || ad->where == NULL) {
		eg_err_set(err, EIO, "admin %s: cannot start the HTTP server",
		    ad->where != NULL ? ad->where : "(out of memory)");
		admin_free(ad);
		return -1;
	}
	ex->admin = ad;
	eg_log(ex, EGRESS_LOG_INFO, "admin API on %s", ad->where);
	return 0;
}

int
eg_admin_tcp_addr(const struct egress *ex, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if (ex->admin == NULL || !ex->admin->tcp)
		return 0;
	memset(ss, 0, sizeof(*ss));
	if (getsockname(ex->admin->fd, (struct sockaddr *)ss, &len) == -1)
		return 0;
	return 1;
}

void
eg_admin_stop(struct egress *ex)
{
	struct eg_admin *ad;

	if (ex == NULL || (ad = ex->admin) == NULL)
		return;
	ex->admin = NULL;
	admin_free(ad);
}
