/*
 * tcpopt.h: the congestion control of a TCP connection whose two ends are
 * on this host.  Private to libegress.
 */
#ifndef EG_TCPOPT_H
#define EG_TCPOPT_H

/*
 * fd is a TCP socket (a listener, or one about to connect) whose peers
 * are on this host: when the host's default congestion control is not
 * cubic or reno (BBR, say), give fd cubic (reno where cubic is not
 * allowed).  Nothing when it is already one of those, or neither can be
 * had.  Errors are ignored: the socket works either way, only slower.
 */
void	eg_tcp_local(int fd);

#endif
