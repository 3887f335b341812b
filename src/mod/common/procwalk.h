/*
 * procwalk.h: the process tree below a process, from /proc (Linux), for
 * the modules that stop what they started: the sandbox (egressd run's
 * timeout and clean-up) and replay (the keeper of a step).  libc only;
 * no printing, no exit().
 */
#ifndef MC_PROCWALK_H
#define MC_PROCWALK_H

#include <sys/types.h>
#include <stddef.h>

/*
 * Read /proc/PID/NAME ("comm", "stat") into buf: at most cap - 1 bytes,
 * then a NUL.  The bytes read, or -1 when the process is gone or the
 * file cannot be read.
 */
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

#endif
