/*
 * sandbox.h: private interfaces of the sandbox module (egressd run and
 * egressd relay).  Nothing outside src/mod/sandbox includes this file,
 * except the unit test of the Seatbelt profile generator.
 */
#ifndef SB_SANDBOX_H
#define SB_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "../common/strv.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* Fixed paths inside the bubblewrap sandbox. */
#define SB_IN_SOCKDIR	"/run/egressd"		/* read-only */
#define SB_IN_SOCK	"/run/egressd/proxy.sock"
#define SB_IN_EXE	"/run/egressd-bin/egressd" /* read-only */
#define SB_IN_PORT	3128		/* the relay's port inside */

/* Relay limits: memory is bounded by MAXCONN * 2 * BUFSZ. */
#define SB_RELAY_MAXCONN	512
#define SB_RELAY_BUFSZ		16384

/* 1 if path is dir or below it ("/a/b" is under "/a", "/ab" is not). */
int	sb_path_under(const char *path, const char *dir);
/* s as a decimal number in [lo, hi] into *out: 0, or -1 (nothing else
 * in s, no overflow). */
int	sb_num(const char *s, long lo, long hi, long *out);

/*
 * relay.c.  A relay accepts TCP connections on a listening socket and
 * forwards each one, byte for byte and with half-closes, to a Unix
 * socket.
 */
struct sb_relay_ctl {
	int	  fd;		/* extra fd to watch, or -1 */
	/* called when fd is readable; a nonzero return stops the loop */
	int	(*cb)(void *arg);
	void	 *arg;
};

/*
 * Listen on 127.0.0.1:port (0: any free port), non-blocking, close on
 * exec.  Returns the fd and stores the bound port, or -1 with a message
 * in err.
 */
int	sb_relay_listen(uint16_t port, uint16_t *bound, char *err,
	    size_t errlen);
/*
 * Run the relay on lfd until ctl->cb returns nonzero.  With handoff,
 * every client is passed to the proxy (relay.c, relayhdr.h) instead of
 * copied: sockpath must be a socket egressd made for its own relay.  Connections still
 * open are closed on return; lfd is not.  Returns 0, or -1 with a
 * message in err when the loop itself cannot run.
 */
int	sb_relay_loop(int lfd, const char *sockpath, int handoff,
	    const struct sb_relay_ctl *ctl, char *err, size_t errlen);
/* "egressd relay ...": argv[0] is "relay".  Returns the exit status. */
int	sb_relay_main(int argc, char *argv[]);

/*
 * seccomp.c: the filter on the command inside the sandbox (no Unix
 * sockets of its own: socket(AF_UNIX) and AF_UNIX datagram socketpairs
 * fail with EPERM; no io_uring).  Build it before fork, load it in the
 * child just before exec.
 */
struct sb_filter;

/* The filter, or NULL with a message in err. */
struct sb_filter *sb_filter_new(char *err, size_t errlen);
/* Install it on the calling thread, for good.  0, or -1 with err. */
int	sb_filter_load(struct sb_filter *f, char *err, size_t errlen);
void	sb_filter_free(struct sb_filter *f);

/*
 * bwrap.c: the bubblewrap command line.
 */
struct sb_bwrap_spec {
	const char	*bwrap;		/* launcher, absolute */
	const char	*exe;		/* egressd binary, resolved */
	const char	*cwd;		/* bound writable, chdir'd to */
	const struct mc_strv *rw;	/* bound writable */
	const struct mc_strv *ro;	/* bound read-only */
	const struct mc_strv *homes;	/* hidden under tmpfs */
	const struct mc_strv *libs;	/* bound read-only, same path */
	const char	*audit;		/* ro over itself, last; or NULL */
	const char	*sockdir;	/* in-process proxy's dir, or */
	const char	*sockfile;	/* --proxy: the socket itself */
	const char	*hostdir;	/* the socket's host dir: hidden */
	const struct mc_strv *hide;	/* --hide: hidden after the binds,
					   those below shown again */
	int		 ready_fd;	/* relay reports readiness */
	int		 exec_fd;	/* relay reports an exec failure;
					   -1: none */
	int		 handoff;	/* relay --handoff */
	char *const	*cmd;		/* NULL-terminated */
};

/*
 * Find the launcher in the system directories only (never $PATH); copy
 * its path into buf and return buf, or NULL.
 */
const char	*sb_bwrap_find(char *buf, size_t len);
/* The first "bwrap" present in those directories (even one that is not
 * a regular executable file), or NULL: to tell "not installed" from
 * "installed but unusable". */
const char	*sb_bwrap_unusable(char *buf, size_t len);
/* s to stderr with control characters as \ooo (file names come from the
 * working directory, which the command may have written; bwrap's lines). */
void	sb_put_safe(const char *s);
/* Build the bwrap argv for spec into out (empty on entry).  0 or -1. */
int		 sb_bwrap_argv(const struct sb_bwrap_spec *spec,
		    struct mc_strv *out);
/*
 * The directories to hide: /home, /root, every /etc/passwd home of a
 * regular user (uid >= 1000) and home (may be NULL); existing
 * directories only, resolved, without duplicates.
 */
void		 sb_homes(struct mc_strv *out, const char *home);
/*
 * Files mapped into this process (the shared libraries of a build-tree
 * egressd) that lie under one of the hidden directories, so the relay
 * can still be loaded inside.
 */
void		 sb_maplibs(struct mc_strv *out,
		    const struct mc_strv *hidden);
/*
 * Explain on stderr why bubblewrap could not create a sandbox and how
 * to fix it, from the kernel settings of this machine.
 */
void		 sb_bwrap_explain(const char *bwrap);

/*
 * seatbelt.c: the macOS sandbox-exec profile.  Every path must be
 * absolute and already resolved (/private/tmp, not /tmp).
 */
struct sb_seatbelt {
	const char	*home;		/* reads denied below; NULL */
	const struct mc_strv *rw;	/* the working directories */
	const struct mc_strv *ro;	/* readable even under home */
	uint16_t	 port;		/* the proxy's localhost port */
};

/* The profile's cap: the fixed rules are 1.5 KiB, the rest is paths. */
#define SB_SEATBELT_MAX	(256 * 1024)

/*
 * The profile text (malloc'd, the caller frees), or NULL with a message
 * in err for a relative path, a path with control characters, port 0, or
 * a profile that would pass SB_SEATBELT_MAX.
 */
char	*sb_seatbelt_profile(const struct sb_seatbelt *sbx, char *err,
	    size_t errlen);

#endif
