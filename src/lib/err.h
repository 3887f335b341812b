/*
 * err.h: error values carried back to callers.  A struct eg_err holds one
 * message; a struct eg_errs collects many (configuration loading reports
 * every problem at once, as FILE:LINE: message).
 */
#ifndef EG_ERR_H
#define EG_ERR_H

#include <stddef.h>

#define EG_ERR_MSGLEN	512
#define EG_ERRS_MAX	64

struct eg_err {
	int	code;
	char	msg[EG_ERR_MSGLEN];
};

struct eg_errs {
	size_t	 n;		/* messages kept */
	size_t	 dropped;	/* messages beyond EG_ERRS_MAX */
	char	*msg[EG_ERRS_MAX];
};

/* Set err (if not NULL) to a formatted message.  Always returns -1. */
int	eg_err_set(struct eg_err *, int, const char *, ...)
	    __attribute__((format(printf, 3, 4)));

/* Append a formatted message to errs.  Always returns -1. */
int	eg_errs_add(struct eg_errs *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	eg_errs_clear(struct eg_errs *);
/* Join every message with '\n' into buf (always NUL-terminated). */
void	eg_errs_join(const struct eg_errs *, char *, size_t);

/*
 * Quote untrusted text for a message: printable ASCII as is, anything
 * else (and '\\') as \xNN, at most max bytes of s, then "...".  Writes
 * into buf (always NUL-terminated) and returns it.
 */
const char *eg_quote(const char *s, size_t len, size_t max, char *buf,
	    size_t cap);

struct egress;

/*
 * Error messages of the public API are the calling thread's, as
 * dlerror()'s are: the API's session and phase functions may be called
 * from several threads at once (replay's job threads do), so one buffer
 * per handle would be written by one failing call while another's caller
 * reads it.  eg_errbuf() is the calling thread's buffer for ex (emptied
 * when its last failure was on another handle), EG_ERRMSG_MAX long;
 * egress_free() forgets ex (eg_errbuf_forget()).
 */
#define EG_ERRMSG_MAX	8192
char	*eg_errbuf(struct egress *ex);
void	 eg_errbuf_forget(struct egress *ex);
/* Format the message of a failed API call on ex; e not 0 is also set in
 * errno (the errno egress.h documents for that call).  Returns -1. */
int	 eg_set_err(struct egress *ex, int e, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
