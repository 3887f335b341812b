/*
 * proc.h: process identity and process trees, from /proc.  An identity
 * is a pid plus "BOOTID:TICKS" (the boot id and the process's start time
 * in clock ticks since boot): a pid that was reused, or one from an
 * earlier boot, never matches, so nothing but the process we started is
 * ever signalled.
 */
#ifndef RP_PROC_H
#define RP_PROC_H

#include <sys/types.h>
#include <stddef.h>

#define RP_IDENT_MAX	80

/* "BOOTID:TICKS" of pid into out; -1 (errno ESRCH) when it is gone. */
int	rp_ident_of(pid_t pid, char *out, size_t len);
/* 1 when pid is alive (not a zombie) and still has identity start. */
int	rp_ident_alive(pid_t pid, const char *start);
/*
 * Send sig to pid only if it still is the process of identity start
 * (a pidfd is opened, the identity checked, then pidfd_send_signal, so
 * the pid cannot be reused in between).  0 sent, -1 errno ESRCH when it
 * is not (or no longer) that process.
 */
int	rp_ident_signal(pid_t pid, const char *start, int sig);
/* Every live descendant of root (not root), eg_malloc'd; *n their count. */
pid_t	*eg_rp_descendants(pid_t root, size_t *n);
/* sig to every descendant of root (and their process groups). */
void	eg_rp_kill_descendants(pid_t root, int sig);

#endif
