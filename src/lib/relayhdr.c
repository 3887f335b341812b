/*
 * relayhdr.c: the relay's handoff header (relayhdr.h), read by conn.c
 * and written by the sandbox module's relay.  Hostile input: every
 * length is checked against what is there and against EG_RLY_MAX.
 */
#include <string.h>

#include "relayhdr.h"

int
eg_relay_hdr_sig(const uint8_t *p, size_t len)
{
	if (len > EG_RLY_SIGLEN)
		len = EG_RLY_SIGLEN;
	return memcmp(p, EG_RLY_SIG, len) == 0;
}

int
eg_relay_hdr_parse(const uint8_t *p, size_t len, size_t *need,
    struct eg_relay_id *id, const char **why)
{
	size_t total, alen, off, tl;
	int havepid = 0, haveexe = 0;
	uint8_t type;

	*why = NULL;
	if (len > 0 && !eg_relay_hdr_sig(p, len)) {
		*why = "not a relay header";
		return -1;
	}
	if (len < EG_RLY_FIXED) {
		*need = EG_RLY_FIXED;
		return 0;
	}
	if (p[12] != EG_RLY_VERCMD) {
		*why = "relay header: not PROXY protocol version 2";
		return -1;
	}
	switch (p[13]) {
	case EG_RLY_FAM_TCP4:
		alen = 12;
		break;
	case EG_RLY_FAM_TCP6:
		alen = 36;
		break;
	default:
		*why = "relay header: not a TCP client";
		return -1;
	}
	total = EG_RLY_FIXED + ((size_t)p[14] << 8 | p[15]);
	if (total > EG_RLY_MAX || total < EG_RLY_FIXED + alen) {
		*why = "relay header: bad length";
		return -1;
	}
	if (len < total) {
		*need = total;
		return 0;
	}
	memset(id, 0, offsetof(struct eg_relay_id, exe));
	id->exe[0] = '\0';
	for (off = EG_RLY_FIXED + alen; off < total; off += 3 + tl) {
		if (total - off < 3) {
			*why = "relay header: truncated TLV";
			return -1;
		}
		type = p[off];
		tl = (size_t)p[off + 1] << 8 | p[off + 2];
		if (tl > total - off - 3) {
			*why = "relay header: truncated TLV";
			return -1;
		}
		if (type == EG_RLY_TLV_PID && !havepid && tl == 4) {
			id->pid = (uint32_t)p[off + 3] << 24 |
			    (uint32_t)p[off + 4] << 16 |
			    (uint32_t)p[off + 5] << 8 | p[off + 6];
			havepid = 1;
		} else if (type == EG_RLY_TLV_EXE && !haveexe &&
		    tl <= EG_RLY_EXE_MAX &&
		    memchr(p + off + 3, '\0', tl) == NULL) {
			memcpy(id->exe, p + off + 3, tl);
			id->exe[tl] = '\0';
			id->exelen = tl;
			haveexe = 1;
		} else {
			*why = "relay header: bad TLV";
			return -1;
		}
	}
	if (!havepid || !haveexe) {
		*why = "relay header: no process named";
		return -1;
	}
	*need = total;
	return 1;
}

size_t
eg_relay_hdr_build(uint8_t *buf, size_t cap, uint32_t src, uint16_t sport,
    uint32_t dst, uint16_t dport, uint32_t pid, const char *exe)
{
	size_t el = exe != NULL ? strlen(exe) : 0, total, o;

	if (el > EG_RLY_EXE_MAX)
		el = EG_RLY_EXE_MAX;
	total = EG_RLY_FIXED + 12 + 3 + 4 + 3 + el;
	if (cap < total)
		return 0;
	memcpy(buf, EG_RLY_SIG, EG_RLY_SIGLEN);
	buf[12] = EG_RLY_VERCMD;
	buf[13] = EG_RLY_FAM_TCP4;
	buf[14] = (uint8_t)((total - EG_RLY_FIXED) >> 8);
	buf[15] = (uint8_t)(total - EG_RLY_FIXED);
	memcpy(buf + 16, &src, 4);
	memcpy(buf + 20, &dst, 4);
	memcpy(buf + 24, &sport, 2);
	memcpy(buf + 26, &dport, 2);
	o = 28;
	buf[o++] = EG_RLY_TLV_PID;
	buf[o++] = 0;
	buf[o++] = 4;
	buf[o++] = (uint8_t)(pid >> 24);
	buf[o++] = (uint8_t)(pid >> 16);
	buf[o++] = (uint8_t)(pid >> 8);
	buf[o++] = (uint8_t)pid;
	buf[o++] = EG_RLY_TLV_EXE;
	buf[o++] = (uint8_t)(el >> 8);
	buf[o++] = (uint8_t)el;
	if (el > 0)
		memcpy(buf + o, exe, el);
	return o + el;
}
