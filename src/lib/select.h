/*
 * select.h: the address-selection step of a decision.  Given the
 * candidate addresses of a target (from [hosts], an IP literal, or DNS),
 * keep those egressd may dial: never one of its own listeners (loop),
 * and with deny_private never a non-public address that came from DNS.
 * Pure: the loop test is a callback.
 */
#ifndef EG_SELECT_H
#define EG_SELECT_H

#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>

enum eg_select {
	EG_SELECT_OK,		/* at least one address is left */
	EG_SELECT_LOOP,		/* every address was egressd itself */
	EG_SELECT_PRIVATE	/* every address was non-public (or loop) */
};

/* Returns 1 if sa (with its port) is one of egressd's own listeners. */
typedef int	eg_is_loop_fn(void *arg, const struct sockaddr *sa);

/*
 * Set the port of each of the n addresses, then compact the array in
 * place to the dialable ones, preserving order; *left gets their number.
 * trusted: the addresses were written by the operator (deny_private does
 * not apply to them).
 */
enum eg_select	eg_addr_select(struct sockaddr_storage *addrs, size_t n,
		    uint16_t port, int deny_private, int trusted,
		    eg_is_loop_fn *is_loop, void *arg, size_t *left);

#endif
