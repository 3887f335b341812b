/*
 * run.h: "egressd run" inside the sandbox module: its options and state,
 * shared by the files that each do one job of it:
 *
 *   sandbox.c   the run command: set-up, launch, supervision, exit status
 *   opts.c      its command line (usage, --help, option parsing)
 *   env.c       CMD's environment (secrets out, proxy variables in)
 *   runproxy.c  the private proxy, its directory, the --sandbox none relay
 *   bwrap.c     the bubblewrap launch (checks, mounts, argv)
 *   hooks.c     the module's side of the core ([sandbox], the counters)
 *
 * Nothing outside src/mod/sandbox includes this file.
 */
#ifndef SB_RUN_H
#define SB_RUN_H

#include <sys/types.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "sandbox.h"

struct egress;
extern const struct eg_module eg_mod_sandbox;

enum sb_mode { SB_AUTO, SB_BWRAP, SB_NONE };

struct run_opts {
	const char	*config;
	const char	*phase;
	const char	*proxy;		/* --proxy SOCKET */
	int		 handoff;	/* --proxy-handoff: it is a socket
					   egressd made for its own relay */
	const char	*audit;
	enum sb_mode	 mode;
	int		 mode_set;	/* --sandbox given */
	struct mc_strv	 rw, ro;	/* resolved */
	struct mc_strv	 env;		/* NAME or NAME=VALUE */
	struct mc_strv	 hide;		/* --hide, resolved */
	int		 launch_fd;	/* --launch-fd; -1: none */
	double		 timeout;	/* seconds; 0: none */
	char *const	*cmd;
};

/* Decision counters, bumped on loop threads. */
#define RUN_BLK_MAX	64	/* distinct blocked host:ports kept */
#define RUN_BLK_SHOW	10	/* in the closing summary */

struct run_blk {
	char			hp[280];	/* host:port, printable */
	unsigned long long	n;
};

struct run_counts {
	unsigned long long	allow, block, fail;
	/* the blocked host:ports, for the closing summary (under mtx: the
	   loop threads report at once) */
	pthread_mutex_t		mtx;
	struct run_blk		blk[RUN_BLK_MAX];
	size_t			nblk;
	unsigned long long	blk_other;	/* BLOCKs of host:ports past
						   RUN_BLK_MAX */
};

/* The [sandbox] section of the private proxy's configuration. */
struct sb_conf {
	enum sb_mode	 mode;		/* sandbox = auto|bwrap|none */
	int		 mode_line;	/* 0: not given */
};

/* --sandbox none: the relay, in a thread of egressd run. */
struct relay_thr {
	pthread_t	 tid;
	int		 lfd, efd;
	int		 handoff;	/* the socket is our own relay's */
	const char	*sock;
	char		 err[256];
	int		 rc;
};

struct run_state {
	struct run_opts		 o;
	struct run_counts	 cnt;
	struct egress		*ex;
	struct relay_thr	 rt;
	int			 rt_running;
	char			 privdir[PATH_MAX];
	char			 sockdir[PATH_MAX + 8];
	char			 sock[PATH_MAX + 24];
	char			 auditpath[PATH_MAX + 16];
	int			 audit_tmp;
	char			 proxyrp[PATH_MAX];	/* --proxy */
	char			 proxydir[PATH_MAX];	/* its folder */
	int			 launched;	/* CMD's launch was tried (bwrap:
						   the relay is up) */
};

/* opts.c: parse argv into o (rw, ro, env, hide resolved and owned).
 * -1 to go on, else the exit status (0 after --help). */
int	sb_run_opts(int argc, char *argv[], struct run_opts *o);

/* env.c */
/* Length of the name part of "NAME=VALUE" or "NAME". */
size_t	sb_env_name_len(const char *s);
/* 1 if s (length n) is a variable name: [A-Za-z_][A-Za-z0-9_]*. */
int	sb_env_valid_name(const char *s, size_t n);
/* 1 if name (length n) is one of the proxy variables, in any case. */
int	sb_env_is_proxy(const char *name, size_t n);
/*
 * CMD's environment into out: ours without secrets and proxy variables,
 * plus the --env settings, plus the proxy variables pointing at url,
 * plus each credential route's variables (ex: the private proxy; NULL
 * with --proxy).  The names removed are listed on stderr.  0 or -1.
 */
int	sb_env_build(const struct run_opts *o, struct egress *ex,
	    const char *url, struct mc_strv *out);

/* runproxy.c */
/* A fresh 0700 directory outside every writable path into buf; 0/-1. */
int	sb_privdir(const struct run_opts *o, const char *cwd, char *buf,
	    size_t len);
/* Load the private proxy's configuration.  0, or the exit status. */
int	sb_proxy_load(struct run_state *st);
/* Set it up on st->sock and start it.  0, or the exit status. */
int	sb_proxy_start(struct run_state *st);
/* --sandbox none: the relay on a free loopback port, in a thread;
 * stores the port.  0, or -1 after a message. */
int	sb_relay_thread(struct run_state *st, uint16_t *port);
/* Stop the relay thread and the proxy (keeping its counters in
 * st->cnt), remove the private directory.  Again: nothing. */
void	sb_run_cleanup(struct run_state *st);

/* bwrap.c */
/* The working directory would be bound writable: refuse "/" and a whole
 * home directory, unless --rw names it.  0 or -1 after a message. */
int	sb_check_cwd(const struct run_opts *o, const char *cwd);
/* The --proxy socket's directory, hidden inside, must not be one that
 * stays visible.  Fills st->proxydir; 0 or -1 after a message. */
int	sb_check_proxydir(struct run_state *st, const char *cwd);
/* The launcher argv for st into argv; 0, or an exit status. */
int	sb_bwrap_prepare(const struct run_state *st, const char *cwd,
	    int ready_fd, struct mc_strv *argv);
/* bwrap's options moved into a memfd: out is "bwrap --args FD -- ...";
 * the fd (close-on-exec), or -1. */
int	sb_args_memfd(const struct mc_strv *in, struct mc_strv *out);
/* What to say if CMD (host: where the caller's PATH finds it) is not
 * found inside because the sandbox hides its directory; "" if seen. */
void	sb_cmd_hint(const struct run_state *st, const char *cwd,
	    const char *cmd, const char *host, char *out, size_t len);

/* hooks.c */
/* "egressd: blocked: HOST:PORT (N), ..." (none: nothing). */
void	sb_print_blocked(struct run_counts *c);
/* "auto", "bwrap" or "none" (--sandbox, sandbox =) into *mode; 0/-1. */
int	sb_mode_parse(const char *s, enum sb_mode *mode);

/* sandbox.c: the module's main ("run ..." or "relay ..."). */
int	sb_main(int argc, char *argv[]);

#endif
