/*
 * admin.h: the admin API (SPEC "Admin API"): a libmicrohttpd daemon on
 * its own threads serving JSON routes for status, phases, recent audit
 * events, reload and metrics.  It reaches the data plane only through the
 * control calls of egress.h (egress_set_phase(), egress_reload(), ...)
 * and read-only snapshots taken under egress.lock.
 */
#ifndef EG_ADMIN_H
#define EG_ADMIN_H

#include <sys/socket.h>

#include "err.h"

struct egress;

/* Largest request body accepted (PUT /v1/phase); larger is a 400. */
#define EG_ADMIN_BODY_MAX	4096
/* Largest limit= of GET /v1/audit; the default is 100. */
#define EG_ADMIN_AUDIT_MAX	1000

/*
 * Start the admin API from ex->cfg->admin and store its state in
 * ex->admin.  The listener is:
 *   NULL	the default, $XDG_RUNTIME_DIR/egressd/admin.sock or
 *		/tmp/egressd-UID/admin.sock (its folder created 0700); when
 *		another live server already owns it, a warning is logged and
 *		the proxy runs without an admin API (ex->admin stays NULL);
 *   "none"	no admin API;
 *   a path	(anything containing '/') a Unix socket, created with mode
 *		ex->cfg->admin_mode by eg_listen_unix() (listen.h: a stale
 *		socket file is replaced, a live one is an error) and unlinked
 *		by eg_admin_stop();
 *   ADDR:PORT	TCP; every route but /healthz needs "Authorization: Bearer
 *		TOKEN" with the token read now from ex->cfg->admin_token_file.
 * Call after the workers exist.  Returns 0, or -1 with err set.
 */
int	eg_admin_start(struct egress *ex, struct eg_err *err);

/*
 * Stop the daemon (waits for requests in progress), close and unlink the
 * listener, free ex->admin.  NULL-safe; idempotent.
 */
void	eg_admin_stop(struct egress *ex);

/*
 * The address (with port) the admin API's TCP listener is bound to, into
 * *ss.  Returns 1, or 0 when there is no TCP admin listener.
 */
int	eg_admin_tcp_addr(const struct egress *ex,
	    struct sockaddr_storage *ss);

/*
 * The default admin socket path into buf (also egressctl's default):
 * "$XDG_RUNTIME_DIR/egressd/admin.sock" when that variable is set and
 * not empty, else "/tmp/egressd-UID/admin.sock".  Returns 0, or -1 if it
 * does not fit.
 */
int	eg_admin_default_path(char *buf, size_t len);

/*
 * Parse the body of PUT /v1/phase: exactly {"phase":"NAME"} (whitespace
 * allowed between tokens) with NAME a phase name (eg_phase_name_ok():
 * 1 to EG_PHASE_NAME_MAX of [A-Za-z0-9_.-]).  Copies NAME into name,
 * NUL-terminated (cap >= EG_PHASE_NAME_MAX + 1).  Returns 0, or -1 with a
 * short reason in *why.  Pure; exposed for tests.
 */
int	eg_admin_parse_phase(const char *body, size_t len, char *name,
	    size_t cap, const char **why);

#endif
