/*
 * ctl.h: what every file of egressctl shares: the exit statuses and the
 * settings main() takes from the command line and the environment.
 * The files by job: egressctl.c (main: options, defaults), http.c (the
 * HTTP client), json.c (the JSON reader), print.c (what goes to the
 * terminal), cmd.c and sessions.c (the commands).
 */
#ifndef EGRESSCTL_CTL_H
#define EGRESSCTL_CTL_H

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "dev"
#endif

#define EX_OK		0
#define EX_REFUSED	1
#define EX_USAGE	2
#define EX_UNREACH	3

/* Set once by main() before a command runs, read-only afterwards. */
extern const char	*ctl_admin;	/* -s: a socket path or ADDR:PORT */
extern const char	*ctl_session;	/* -S, or NULL */
extern char		*ctl_token;	/* TCP bearer token, or NULL */
extern int		 ctl_json;	/* --json */
extern int		 ctl_tty_out;	/* stdout is a terminal */
extern int		 ctl_tty_bold;	/* ... and bold and colours wanted
					   (NO_COLOR unset or empty) */

#endif
