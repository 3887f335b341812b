/*
 * admin-int.h: what the admin API's server (admin.c: listeners,
 * libmicrohttpd's daemon and callbacks) and its routes (admin-routes.c:
 * the answers) share.  Private to those two files, the only ones that
 * include microhttpd.h.
 */
#ifndef EG_ADMIN_INT_H
#define EG_ADMIN_INT_H

#include <pthread.h>

#include <microhttpd.h>

#include "admin.h"
#include "shared.h"

struct egress;
struct eg_session;

struct eg_admin {
	struct egress		*ex;
	struct MHD_Daemon	*d;
	int			 fd;	/* ours until MHD owns it */
	char			*path;	/* Unix: unlinked at stop */
	char			*where;	/* for messages */
	char			*conf;	/* cfg->admin at start */
	int			 tcp;
	char			*token;	/* TCP: the bearer token */
	size_t			 toklen;
	pthread_mutex_t		 mtx;	/* one switch or reload at once */
};

struct req {				/* one request's state */
	size_t			 len;
	int			 too_big;
	char			 body[EG_ADMIN_BODY_MAX];
	/* /v1/sessions/NAME/...: the session (a reference) and its name */
	struct eg_session	*sess;
	char			 name[EG_SESSION_NAME_MAX + 1];
};

/* The methods a route answers, in the order of struct route's fn[]. */
enum method { M_GET, M_PUT, M_POST, M_DELETE, M_OTHER };

/* The answer to a request: the route for url and method m, its 401, 404
 * or 405, or the 400 of a path with a control character. */
enum MHD_Result	eg_admin_dispatch(struct eg_admin *ad,
		    struct MHD_Connection *con, const char *url,
		    enum method m, struct req *rq);

/* No memory for a request's state: 503 with a fixed JSON body, and the
 * connection closed. */
enum MHD_Result	eg_admin_oom(struct MHD_Connection *con);

/* The request is over: its session reference and its state go. */
void		eg_admin_req_free(struct req *rq);

#endif
