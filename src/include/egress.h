/*
 * egress.h: the libegress embedding API.
 *
 * libegress is the whole egressd proxy as a library: listeners, the
 * CONNECT / plain-HTTP parser, the per-phase allowlist, DNS (c-ares), the
 * tunnels and the audit log.  An embedder creates a proxy from a
 * configuration file or string, optionally overrides a few settings,
 * starts it (binding listeners, opening the audit log), runs it either
 * in the calling thread or on threads of its own, switches phases,
 * reloads, and finally stops and frees it.
 *
 *	char err[512];
 *	struct egress *ex = egress_new_from_file("egressd.ini", err,
 *	    sizeof(err));
 *	if (ex == NULL || egress_start(ex) == -1 || egress_run_thread(ex) == -1)
 *		... report err or egress_errmsg(ex) ...
 *	egress_set_phase(ex, "judge", "api", NULL);
 *	egress_stop(ex);
 *	egress_join(ex);
 *	egress_free(ex);
 *
 * Conventions.  Functions returning int return 0 on success and -1 on
 * failure; the reason is then in egress_errmsg(ex), for the thread that
 * made the call (each thread has its own, as with dlerror()).  The
 * library never exits, never prints, and never raises signals;
 * diagnostics go to the callback set with egress_set_log_cb() (none by
 * default).  A function that takes a callback never calls it when it
 * returns an error.  All strings passed in are copied.
 *
 * Threads.  egress_stop() may be called from any thread and from a
 * signal handler.  egress_set_phase(), egress_reload(),
 * egress_reopen_audit(), egress_phase(), the egress_session_*()
 * functions and the status functions may be
 * called from any thread except a loop thread (that is, not from an
 * event callback).  Everything else is for the thread that created the
 * proxy.
 */
#ifndef EGRESS_H
#define EGRESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EGRESS_API __attribute__((visibility("default")))
#else
#define EGRESS_API
#endif

struct egress;

enum egress_event_type {
	EGRESS_EV_ALLOW,	/* a tunnel or plain-HTTP request was opened */
	EGRESS_EV_BLOCK,	/* refused by policy or for bad input */
	EGRESS_EV_FAIL,		/* allowed, but the upstream was unreachable */
	EGRESS_EV_CLOSE,	/* an ALLOWed connection ended */
	EGRESS_EV_PHASE,	/* the current phase changed */
	EGRESS_EV_SESSION	/* a session was opened or closed */
};

/*
 * One audit event.  Every pointer is valid only during the callback and
 * may be NULL when the field does not apply to the event type.
 */
struct egress_event {
	enum egress_event_type	 type;
	int64_t			 ts_ms;		/* Unix time, milliseconds */
	uint64_t		 id;		/* connection id; 0 for PHASE */
	const char		*host;		/* normalised (escaped) */
	uint16_t		 port;
	const char		*phase;		/* PHASE: the new phase */
	const char		*session;	/* NULL: session "default" */
	const char		*client;	/* "127.0.0.1:51234", "unix" */
	const char		*method;	/* "CONNECT", "GET", ... */
	const char		*addr;		/* ALLOW: upstream address */
	const char		*rule;		/* ALLOW: the matching entry */
	const char		*reason;	/* BLOCK/FAIL: "not_allowed"... */
	const char		*report;	/* report mode: "not_allowed" */
	uint64_t		 up, down;	/* CLOSE: bytes each way */
	uint64_t		 ms;		/* CLOSE: duration */
	const char		*end;		/* CLOSE: "client_closed"... */
	const char		*sni;		/* CLOSE sni_mismatch */
	const char		*from;		/* PHASE: previous phase */
	/* PHASE: admin|api|signal|reload; SESSION: admin|api|ttl|config|
	 * reload */
	const char		*by;
	unsigned		 closed;	/* PHASE, SESSION close: tunnels
						   closed */
	const char		*action;	/* SESSION: "open", "close" */
	/* appended (layout of the members above unchanged): */
	const char		*step;		/* egress_session_set_step():
						   the step= label, or NULL */
	/* a credential route's request (SPEC "Routes"), else NULL/0/-1: */
	const char		*route;		/* route=NAME */
	const char		*path;		/* path=/REST (no query) */
	const char		*cred;		/* ALLOW: header names added */
	int			 status;	/* CLOSE: status=, 0: none */
	int64_t			 tokens_in;	/* CLOSE: -1: none */
	int64_t			 tokens_out;
	int64_t			 tokens_cached;
	/* ALLOW, BLOCK, FAIL of a request that came through egressd's own
	 * relay (egressd run, replay steps): the process that connected to
	 * the relay, "-" when it could not be found; NULL otherwise */
	const char		*pid;		/* decimal */
	const char		*exe;		/* its executable's path */
};

/*
 * Called on a loop thread for every audit event, after the line is
 * written.  It must not block, must not call into the proxy (except
 * egress_stop()), and must copy anything it keeps.
 */
typedef void (*egress_event_cb)(const struct egress_event *ev, void *arg);

enum egress_log_level {
	EGRESS_LOG_ERR, EGRESS_LOG_WARN, EGRESS_LOG_INFO, EGRESS_LOG_DEBUG
};
/* Diagnostics (not audit).  Called from any thread; must be thread-safe. */
typedef void (*egress_log_cb)(int level, const char *msg, void *arg);

/* Library version, "1.0.0". */
EGRESS_API const char	*egress_version(void);
/* NULL-terminated list of the optional modules compiled in. */
EGRESS_API const char *const *egress_modules(void);
/*
 * Run the module subcommand cmd ("run", "relay", ...: "egressd CMD
 * ARGS"); argv[0] is cmd.  Returns the subcommand's exit status, or -1
 * when no compiled-in module serves cmd, with the reason in err ("run:
 * module sandbox not compiled in (./configure --enable-sandbox)" or
 * "unknown command 'x'").  For programs like egressd; the subcommand
 * owns the process while it runs (it may print, handle signals and
 * start proxies of its own).
 */
EGRESS_API int	egress_module_main(const char *cmd, int argc, char *argv[],
		    char *err, size_t errlen);

/*
 * Create a proxy from a configuration file, or from INI text.  path NULL
 * means the embedded default.  On failure returns NULL and writes every
 * configuration error ("FILE:LINE: message", one per line) to errbuf.
 */
EGRESS_API struct egress *egress_new_from_file(const char *path,
	    char *errbuf, size_t errlen);
EGRESS_API struct egress *egress_new_from_string(const char *text,
	    char *errbuf, size_t errlen);

/*
 * Override a setting before egress_start(): "listen", "unix" (the first
 * call replaces the file's listeners of that kind, later calls add),
 * "admin", "phase", "audit_log", "audit_format", or any [proxy] key;
 * "run_id" (36-char UUID text) is the run= of the main log's START line
 * when the record module chains it (default: a random UUID v4 made by
 * egress_new*()).
 */
EGRESS_API int	egress_set_option(struct egress *ex, const char *key,
		    const char *value);

/*
 * Copy the value of a setting, with every override applied, to buf:
 * "audit_log" or "run_id".  Returns 1 when the file or egress_set_option()
 * gave it, 0 when it is the default, -1 for another key or a buffer too
 * small (the reason in egress_errmsg()).
 */
EGRESS_API int	egress_get_option(struct egress *ex, const char *key,
		    char *buf, size_t len);

/*
 * Validate the configuration with every override applied (the initial
 * phase exists, there is a listener, ...).  egress_start() does this too.
 * On error, egress_errmsg() holds every problem, one per line.
 */
EGRESS_API int	egress_check(struct egress *ex);

EGRESS_API void	egress_set_log_cb(struct egress *ex, egress_log_cb cb,
		    void *arg);
/*
 * The most verbose level passed to the log callback: EGRESS_LOG_INFO
 * unless set (debug messages are dropped).  A message above the level,
 * or any message while no callback is set, is dropped before it is
 * formatted, so suppressed levels cost no formatting.  Any thread.
 */
EGRESS_API void	egress_set_log_level(struct egress *ex, int level);
/* Subscribe to audit events (before egress_start()).  Up to 8. */
EGRESS_API int	egress_subscribe(struct egress *ex, egress_event_cb cb,
		    void *arg);

/* Bind every listener and open the audit log.  Nothing runs yet. */
EGRESS_API int	egress_start(struct egress *ex);
/* Run the proxy until egress_stop(): starts the loop threads (one per
 * worker) and waits for them; the calling thread only waits. */
EGRESS_API int	egress_run(struct egress *ex);
/* Run the event loops on threads of their own; returns at once. */
EGRESS_API int	egress_run_thread(struct egress *ex);
/* Wait for the threads started by egress_run_thread() to finish. */
EGRESS_API int	egress_join(struct egress *ex);
/*
 * Ask the proxy to stop: stop accepting, close every tunnel (CLOSE
 * end=shutdown), flush the audit log.  Thread-safe, async-signal-safe.
 */
EGRESS_API void	egress_stop(struct egress *ex);
/* Release everything (after egress_run() returned or egress_join()). */
EGRESS_API void	egress_free(struct egress *ex);

/*
 * The reason the calling thread's last failed call on ex failed, never
 * NULL: "" when this thread's last failure was on another handle, or it
 * had none.  Another thread's failures do not change it.
 */
EGRESS_API const char *egress_errmsg(struct egress *ex);

/*
 * Switch the current phase of the default session.  by is "admin",
 * "api", "signal" or "reload" (it appears in the PHASE audit line).  When
 * this returns 0, every later decision uses the new phase and, with
 * on_phase_change = close, every tunnel it forbids is closed; *closed
 * (may be NULL) gets their number.  An unknown phase fails with errno
 * ENOENT and changes nothing.
 */
EGRESS_API int	egress_set_phase(struct egress *ex, const char *name,
		    const char *by, unsigned *closed);
/* Copy the current phase's name into buf. */
EGRESS_API int	egress_phase(struct egress *ex, char *buf, size_t len);

/*
 * Re-read the configuration file (or string) and apply it.  On any error
 * nothing changes and egress_errmsg() holds every error, one per line.
 */
EGRESS_API int	egress_reload(struct egress *ex, const char *by);
/* Reopen the audit log (after rotation). */
EGRESS_API int	egress_reopen_audit(struct egress *ex);

/*
 * Sessions (SPEC "Sessions"): one proxy, many runs, each with its own
 * listeners, phase, counters and audit ring.  A client's session is that
 * of the listener it connected to.  The session "default" is the one of
 * the configuration's listeners; the functions above act on it.  These
 * are for any thread but a loop thread (not from an event callback),
 * after egress_start(); they return 0, or -1 with the reason in
 * egress_errmsg() and errno set as documented, and change nothing then.
 */

/* A phase of a session's own: allow is NULL-terminated, patterns as in
 * the configuration's allow = lines. */
struct egress_phase_spec {
	const char		 *name;
	const char *const	 *allow;
};

/*
 * Create the session name (1 to 64 of A-Z a-z 0-9 . _ -, not beginning
 * with '.' or '-') in phase (NULL: the configuration's initial phase).
 * It gets a Unix socket session_dir/NAME.sock (mode unix_mode; the folder
 * is created 0711 when missing, refused when a symlink or writable by
 * others) and, when listen is not NULL, a TCP listener at listen
 * ("127.0.0.1:0" picks a free port).  ttl_s > 0 deletes the session once
 * it has had no open connection for that many seconds.  phases, when not
 * NULL, gives it nphases phases of its own (phase must then be one of
 * them); otherwise it uses the configuration's, and follows reloads.
 * The socket path is copied to sock and the bound TCP address
 * ("127.0.0.1:PORT", or "" without listen) to addr (either may be NULL).
 * errno: EINVAL bad name, pattern or listen address, EEXIST the name is
 * taken, ENOENT no such phase, ENOSPC max_sessions reached; others for
 * system failures (cannot bind, ...).
 */
EGRESS_API int	egress_session_create(struct egress *ex, const char *name,
		    const char *phase, const char *listen, unsigned ttl_s,
		    const struct egress_phase_spec *phases, size_t nphases,
		    char *sock, size_t socklen, char *addr, size_t addrlen);
/*
 * Switch the phase of one session, as egress_set_phase() does for the
 * default one (session NULL or "default" is that).  Only that session's
 * tunnels are rechecked; when this returns, those its new phase forbids
 * are closed.  errno ENOENT: no such session or phase.
 */
EGRESS_API int	egress_session_set_phase(struct egress *ex,
		    const char *session, const char *phase, const char *by,
		    unsigned *closed);
/* Copy a session's current phase name into buf.  errno ENOENT. */
EGRESS_API int	egress_session_phase(struct egress *ex, const char *session,
		    char *buf, size_t len);
/*
 * Delete a session: its listeners are closed (socket files removed) and
 * its connections closed (CLOSE end=session_closed); *closed (may be
 * NULL) gets the number of tunnels closed.  by ("admin", "api", "ttl")
 * appears in the SESSION line.  errno ENOENT no such session, EPERM for
 * "default" or a session of the configuration file.
 */
EGRESS_API int	egress_session_delete(struct egress *ex, const char *name,
		    const char *by, unsigned *closed);

/*
 * Label the lines of one session (NULL/"default": the default one) with
 * step=NAME after phase= and session= (text and JSON, every event type;
 * on a SESSION line right after the session's name), and set ev->step of
 * its events; NULL clears it.  Same thread rules as the other
 * egress_session_*() functions.  errno ENOENT, EINVAL (name not of the
 * session-name alphabet: 1 to 64 of A-Z a-z 0-9 . _ -).
 */
EGRESS_API int	egress_session_set_step(struct egress *ex,
		    const char *session, const char *step);
/*
 * Redact the audit lines of one session (NULL/"default": the default
 * one): from now on every occurrence of each of the n values (each 8
 * bytes or more; shorter ones are ignored) in any string field of its
 * events (host, sni, method, client, addr, rule, phase, step, ...) is
 * replaced by "[REDACTED]" before the line is formatted, chained and
 * written, kept in the ring or passed to a subscriber.  The match ignores
 * ASCII case (hosts are lower-cased).  The values are copied; a later
 * call replaces the list (n 0: none).  errno ENOENT, ENOMEM.
 */
EGRESS_API int	egress_session_set_redact(struct egress *ex,
		    const char *session, const char *const *values, size_t n);
/*
 * Send one session's audit lines (and only its lines, including its
 * PHASE lines and its SESSION close line from now on) to the file path,
 * opened O_APPEND|O_CREAT|O_NOFOLLOW mode 0600, instead of the main log.
 * run_id (36-char UUID text, or NULL: a random one) is the run= of that
 * file's START line when the record module chains it.  chain: 1 forces
 * audit_chain for this file even when the configuration has it off (a
 * replay's audit.log is always chained); 0 follows the configuration.
 * Without the record module chain is ignored (no chain=, no START).
 * NULL path: back to the main log.  The file is closed when the session
 * is deleted (after its last line) and at egress_free().  errno ENOENT
 * no such session, EINVAL bad run_id, others from open(2).
 */
EGRESS_API int	egress_session_set_audit(struct egress *ex,
		    const char *session, const char *path, const char *run_id,
		    int chain);
/*
 * The chain head (64 hex + NUL) and the number of lines written so far to
 * the session's audit file (or the main log for NULL/"default", or when
 * the session has no file of its own), for a run record.  errno ENOENT;
 * ENOTSUP when that file is not chained (or the record module is not
 * compiled in).
 */
EGRESS_API int	egress_session_audit_head(struct egress *ex,
		    const char *session, char head[65], uint64_t *lines);
/*
 * Reading audit lines back (SPEC "Audit log"; the audit tools and the
 * record module use it).  egress_audit_parse() accepts exactly the lines
 * egressd writes, text or JSON, every event (ALLOW BLOCK FAIL CLOSE
 * PHASE SESSION START CHECKPOINT), chained or not, and refuses anything
 * else: a bad timestamp, an unknown event, a duplicate key, a raw
 * control byte, an escape the writer would not make, chain= that is not
 * the last field or not 64 lower-case hex digits, more fields than
 * field[] holds.  line is len bytes (one trailing '\n' is allowed), not
 * necessarily NUL-terminated.  Nothing is allocated: every pointer in
 * *out points into line (START and CHECKPOINT JSON lines: subject is a
 * static "-"), so it lives as long as line does.
 *
 * subject: text lines, the third field as written ("host:port", or "-",
 * or for a refused request its raw target without a port; the phase of
 * PHASE, the name of SESSION, "-" for START and CHECKPOINT).  JSON
 * lines: the value of "host" (ALLOW..CLOSE; the port is the field
 * "port"), "phase" or "session"; "-".  field[] holds the key=value pairs
 * after the subject (text) or every member after "ts" and "event"
 * (JSON), in order; values are as written, still escaped, JSON strings
 * without their quotes.  The bytes a chain= value covers end at
 * field[nfields - 1].key - 1 (text: before " chain=") or - 2 (JSON:
 * before ',"chain":').  Any thread; pure.
 */
struct egress_audit_field { const char *key, *val; size_t keylen, vallen; };
struct egress_audit_line {
	int		 json;			/* 1: a JSON line */
	const char	*ts, *event, *subject;	/* subject: "host:port", phase, "-" */
	size_t		 tslen, eventlen, subjectlen;
	size_t		 nfields;
	struct egress_audit_field field[48];	/* key=value pairs in order */
};
/* 0 parsed, -1 not an audit line.  Values are as written (still escaped). */
EGRESS_API int	egress_audit_parse(const char *line, size_t len,
		    struct egress_audit_line *out);
/* The value of key, or NULL (and *len untouched). */
EGRESS_API const char *egress_audit_get(const struct egress_audit_line *l,
		    const char *key, size_t *len);
/*
 * The target of an ALLOW, BLOCK, FAIL or CLOSE line: *host (as written,
 * still escaped) and *port (0 when the line has none: host "-", or the
 * raw target of a bad request, which is then the whole host).  Returns
 * 0, or -1 for the other events.
 */
EGRESS_API int	egress_audit_target(const struct egress_audit_line *l,
		    const char **host, size_t *hostlen, unsigned *port);

/*
 * Hand the proxy a socket that someone else bound and listens on
 * (systemd socket activation, a supervisor), before egress_start().
 * role "proxy": a TCP or Unix-socket listener of the default session.
 * A configured listener at the same address (ADDR:PORT, or the same
 * socket path) is served on fd instead of being bound; the implicit
 * default listener (no listen = nor unix = at all) is then not bound;
 * other configured listeners are bound as usual, and fd is served in
 * any case.  Adopted listeners stay across reloads whatever the new
 * configuration says, and a Unix one's file is never removed.  role
 * "admin": the admin API listens on fd instead of binding admin = (a
 * TCP one still needs admin_token_file).  On success the proxy owns fd
 * (it is made non-blocking and close-on-exec, and closed by
 * egress_free()); on failure the caller keeps it.  errno EINVAL (not a
 * listening stream socket, unknown role), EEXIST (a second admin
 * socket), EBUSY (already started), ENOSPC (more than 64).
 */
EGRESS_API int	egress_adopt_fd(struct egress *ex, int fd, const char *role);

/*
 * Are the loop threads alive?  Wakes every loop and waits up to
 * timeout_ms for each to go once round its event loop.  1: every loop
 * did; 0: one did not (stuck: a watchdog should not be fed); -1: not
 * running.  Any thread but a loop thread.
 */
EGRESS_API int	egress_ping(struct egress *ex, unsigned timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
