/*
 * reason.h: what egressd answers itself when it refuses a request.  One
 * table says, per audit reason, its name in the log, its status code and
 * verdict; eg_refusal_reply() writes the whole reply (SPEC "Proxy
 * behaviour": the status line's reason phrase carries the body's text,
 * X-Egressd-Verdict, X-Egressd-Reason, a one-line text/plain body).
 * CONNECT, plain HTTP and routes all refuse through it.
 */
#ifndef EG_REASON_H
#define EG_REASON_H

#include <stddef.h>


/* Why a request was refused or failed (BLOCK and FAIL reason=). */
enum eg_reason {
	EG_R_NONE,
	EG_R_NOT_ALLOWED,
	EG_R_PORT_NOT_ALLOWED,
	EG_R_PRIVATE_ADDRESS,
	EG_R_BAD_REQUEST,
	EG_R_TIMEOUT,
	EG_R_DNS_FAILURE,
	EG_R_CONNECT_FAILED,
	EG_R_CONNECT_TIMEOUT,
	EG_R_TOO_MANY,
	EG_R_LOOP,
	EG_R_SHUTDOWN,
	EG_R_AUDIT_FAILED,	/* the ALLOW line could not be written */
	EG_R_BUDGET,		/* a budget of the phase is spent */
	EG_R_TLS_TO_PROXY,	/* a TLS ClientHello instead of a request */
	EG_R_NO_ROUTE,		/* routes (route.c): no route of that name */
	EG_R_ROUTE_NOT_ALLOWED,	/* ... method or path not allowed by it */
	EG_R_TLS_FAILED,	/* ... upstream certificate refused */
	EG_R_COUNT		/* (how many; not a reason) */
};
extern const char *const eg_reason_name[];

#define EG_REFUSAL_MAX	3072	/* a reply eg_refusal_reply() writes */
#define EG_HINT_MAX	256	/* bytes of a phase's hint */

struct eg_reason_info {
	const char	*name;		/* the audit log's reason= */
	int		 status;	/* the usual status code */
	int		 fail;		/* verdict FAIL, else BLOCK */
};

extern const struct eg_reason_info eg_reason_tab[EG_R_COUNT];

/* The standard reason phrase of a status code ("Error" if unknown). */
const char	*eg_status_text(int status);

/*
 * Write the refusal for reason r into buf (len bytes; 256 or more for
 * the text to fit):
 * status (0: the reason's usual one), its standard phrase followed by
 * " (BODY)", the headers, and BODY as a line.  Any byte of body that
 * is not visible ASCII or a space is written as '?', so neither the
 * phrase nor the body can hold CR, LF or another control byte; a body
 * too long for buf is cut.  Returns the reply's length.
 */
size_t		 eg_refusal_reply(char *buf, size_t len, enum eg_reason r,
		    int status, const char *body);

#endif
