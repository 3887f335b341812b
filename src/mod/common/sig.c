/*
 * sig.c: blocking the signals a command waits for (see sig.h).
 */
#include <pthread.h>
#include <signal.h>

#include "sig.h"

int
mc_sig_block(sigset_t *set, const int *sigs, size_t n)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < n; i++)
		sigaddset(set, sigs[i]);
	return pthread_sigmask(SIG_BLOCK, set, NULL) == 0 ? 0 : -1;
}
