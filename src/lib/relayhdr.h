/*
 * relayhdr.h: the handoff of egressd's own relay ("egressd relay" inside
 * egressd run's and replay steps' sandboxes, or egressd run's relay
 * thread).  For every TCP client it accepts, the relay connects to the
 * proxy's private Unix socket and sends one message: a PROXY protocol
 * version 2 header (the 12-byte signature, PROXY command, the TCP
 * addresses) with two TLVs of the custom range naming the process that
 * connected, and the client's TCP socket itself as SCM_RIGHTS ancillary
 * data.  egressd then serves that TCP socket directly (conn.c): a reset
 * it makes on a policy close reaches the client.  Accepted only on the
 * Unix listeners egressd made for its relay (option unix_relay); on any
 * other listener such a header is a bad request.
 */
#ifndef EG_RELAYHDR_H
#define EG_RELAYHDR_H

#include <stddef.h>
#include <stdint.h>

#define EG_RLY_SIG		"\r\n\r\n\0\r\nQUIT\n"
#define EG_RLY_SIGLEN		12
#define EG_RLY_FIXED		16	/* signature, ver_cmd, fam, len */
#define EG_RLY_VERCMD		0x21	/* version 2, PROXY */
#define EG_RLY_FAM_TCP4		0x11
#define EG_RLY_FAM_TCP6		0x21
#define EG_RLY_TLV_PID		0xE0	/* 4 bytes, big endian; 0: unknown */
#define EG_RLY_TLV_EXE		0xE1	/* the path, no NUL; empty: unknown */
#define EG_RLY_EXE_MAX		4096
/* the longest header: IPv6 addresses and both TLVs */
#define EG_RLY_MAX		(EG_RLY_FIXED + 36 + 3 + 4 + 3 + \
				 EG_RLY_EXE_MAX)

struct eg_relay_id {
	uint32_t	pid;			/* 0: unknown */
	size_t		exelen;			/* 0: unknown */
	char		exe[EG_RLY_EXE_MAX + 1];	/* NUL-terminated */
};

/*
 * Parse the header at the start of p (len bytes).  Returns 1 when it is
 * complete and good (its length in *need, the identity in *id), 0 when
 * more bytes are needed (the total wanted so far in *need, always more
 * than len and at most EG_RLY_MAX), -1 when it is not such a header (a
 * reason in *why).  Bytes after the header are not looked at.
 */
int	eg_relay_hdr_parse(const uint8_t *p, size_t len, size_t *need,
	    struct eg_relay_id *id, const char **why);

/*
 * Write the header for a TCPv4 client src:sport connected to dst:dport
 * (addresses and ports in network order) and the process pid (0:
 * unknown) running exe (NULL or "": unknown; longer than EG_RLY_EXE_MAX:
 * cut) into buf.  Returns its length, or 0 when cap is too small.
 */
size_t	eg_relay_hdr_build(uint8_t *buf, size_t cap, uint32_t src,
	    uint16_t sport, uint32_t dst, uint16_t dport, uint32_t pid,
	    const char *exe);

/* 1 when the len bytes at p (len > 0) begin like the signature. */
int	eg_relay_hdr_sig(const uint8_t *p, size_t len);

#endif
