/*
 * procwalk.h: the process tree below a process, from /proc (Linux), for
 * the modules that stop what they started: the sandbox (egressd run's
 * timeout and clean-up) and replay (the keeper of a step); with the two
 * chores around their children (reaping, descriptors kept from exec).
 * libc only; no printing, no exit().
 */
#ifndef MC_PROCWALK_H
#define MC_PROCWALK_H

#include <sys/types.h>
#include <stddef.h>

/*
 * Read a small file (of /proc: one read(2) gets it whole) into buf: at
 * most cap - 1 bytes, then a NUL.  The bytes read, or -1 when the file
 * cannot be opened or read.
 */
ssize_t	 mc_proc_read_file(const char *path, char *buf, size_t cap);
/* The same for /proc/PID/NAME ("comm", "stat"): -1 when pid is gone. */
ssize_t	 mc_proc_read(pid_t pid, const char *name, char *buf, size_t cap);
/* The parent of pid, from /proc/PID/stat; -1 when it is gone. */
pid_t	 mc_proc_ppid(pid_t pid);
/*
 * Every process below root (children, theirs, and so on; not root),
 * parents before children, in an eg_malloc'd array (eg_free it), their
 * count in *np.  NULL with *np 0 when there is none or /proc cannot be
 * read; out of memory while reading /proc: the tree of the processes
 * read so far.
 */
pid_t	*mc_proc_descendants(pid_t root, size_t *np);
/*
 * Reap every exited child (WNOHANG); when one is child, its wait status
 * goes to *status and *done becomes 1 (child -1: none is).
 */
void	 mc_proc_reap(pid_t child, int *status, int *done);
/*
 * In a child before exec: every descriptor from 3 up becomes close-on-
 * exec (close_range(2), else one by one up to the limit, at most 65536).
 * Async-signal-safe.
 */
void	 mc_proc_cloexec_fds(void);

#endif
