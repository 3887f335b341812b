/*
 * listen.h: binding listening sockets: the proxy's TCP and Unix
 * listeners (struct eg_lsock, core.h) and the one Unix-socket binder
 * that the admin API uses too, and the text of a TCP address.  Private
 * to libegress.
 */
#ifndef EG_LISTEN_H
#define EG_LISTEN_H

#include <sys/types.h>
#include <sys/socket.h>

#include "err.h"

struct egress;
struct eg_cfg;
struct eg_lsock;

/*
 * Bind and listen on a Unix socket at path; what ("unix", "admin")
 * begins every message, which also names the path.  A stale socket file
 * (nobody accepting on it) is replaced; a live one is EADDRINUSE and
 * returns 1; anything that is not a socket is left alone (EEXIST).  The
 * file is never wider than mode, not even between bind(2) and chmod(2)
 * and whatever the umask; a failure after bind(2) removes it.  flags are
 * or-ed into the socket type (SOCK_NONBLOCK); SOCK_CLOEXEC always.
 * Returns 0 with the descriptor in *fdp, 1 (live server), or -1; err is
 * set unless 0.
 */
int	eg_listen_unix(const char *what, const char *path, mode_t mode,
	    int backlog, int flags, int *fdp, struct eg_err *err);

/*
 * Bind one listener into *ls (fd, kind; path for Unix, ss for TCP):
 * TCP at text ("ADDR:PORT", EINVAL when it is not), or a Unix socket at
 * path with mode (eg_listen_unix(); a live server there is EADDRINUSE).
 * 0, or -1 with err set and nothing bound.  (Sessions' listeners.)
 */
int	eg_listen_bind_tcp(struct eg_lsock *ls, const char *text,
	    struct eg_err *err);
int	eg_listen_bind_unix(struct eg_lsock *ls, const char *path,
	    mode_t mode, struct eg_err *err);

/* Close (and for Unix, unlink) one listener; free its strings. */
void	eg_lsock_clear(struct eg_lsock *);

/* Bind every listener of cfg into *out; on error nothing stays bound. */
int	eg_listen_all(struct egress *, const struct eg_cfg *,
	    struct eg_lsock **out, size_t *nout, struct eg_err *);

/*
 * For a reload to cfg: a new listener array into *out that shares the
 * listeners of ex->ls still configured (marked keep, there and in *out)
 * and binds the ones cfg adds.  On error nothing new stays bound and
 * ex->ls is as it was (apart from the keep marks).
 */
int	eg_listen_rebind(struct egress *, const struct eg_cfg *,
	    struct eg_lsock **out, size_t *nout, struct eg_err *);

/*
 * Check that fd is a listening stream socket (TCP or a Unix socket file)
 * and describe it in *ls (kind, text "ADDR:PORT"/path, ss, adopted);
 * the fd is made non-blocking and close-on-exec.  0, or -1 with err.
 */
int	eg_listen_adopt(struct eg_lsock *ls, int fd, struct eg_err *err);
/* Close every adopted descriptor (egress_free()). */
void	eg_listen_adopt_free(struct egress *);

/* Free an array from eg_listen_rebind(), closing the listeners not kept
 * (a rebind given up, or the old array after the swap). */
void	eg_listen_drop(struct eg_lsock *, size_t n);

#endif
