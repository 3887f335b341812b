/*
 * sig.h: blocking the signals a module's command waits for (sigwait(),
 * signalfd()), for replay and the sandbox.
 */
#ifndef MC_SIG_H
#define MC_SIG_H

#include <signal.h>
#include <stddef.h>

/*
 * Block sigs[0..n) in the calling thread (threads it starts afterwards
 * inherit the mask); *set is left holding exactly those signals.
 * 0, or -1 when the mask cannot be changed.
 */
int	mc_sig_block(sigset_t *set, const int *sigs, size_t n);

#endif
