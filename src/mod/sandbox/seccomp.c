/*
 * seccomp.c: the system call filter "egressd relay" puts on the command
 * it starts inside the sandbox (the only file including seccomp.h).
 *
 * "/" is bound read-only, which does not stop a connect(2) to a Unix
 * socket of the host lying outside the hidden folders (a database, a
 * container engine, another user's agent).  The filter takes Unix
 * sockets away from the command instead, as sandbox-runtime does:
 *
 *   socket(AF_UNIX, ...)                      EPERM
 *   socketpair(AF_UNIX, SOCK_DGRAM, ...)      EPERM: a datagram socket
 *                                             can sendto(2) any path
 *   io_uring_setup/enter/register             EPERM: IORING_OP_SOCKET
 *                                             and _CONNECT are not
 *                                             seen by the filter
 *
 * Stream and seqpacket socketpairs stay: they are connected at birth and
 * cannot be pointed anywhere else (connect gives EISCONN), and event
 * loops use them.  The relay itself keeps its own socket to the proxy:
 * it opens that before the filter exists and is not filtered.  The
 * arguments are compared on their low 32 bits, the ones the kernel
 * reads (an "int"), so garbage in the high half changes nothing.
 * Another ABI than the native one (x32, i386 socketcall) is not
 * described by the filter and kills the process.
 */
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seccomp.h>

#include "sandbox.h"

struct sb_filter {
	scmp_filter_ctx	ctx;
};

struct sb_filter *
sb_filter_new(char *err, size_t errlen)
{
	static const char *const uring[] = {
		"io_uring_setup", "io_uring_enter", "io_uring_register"
	};
	struct sb_filter *f;
	const char *what = "seccomp_init";
	size_t i;
	int rc, nr;

	f = eg_calloc(1, sizeof(*f));
	if (f == NULL) {
		snprintf(err, errlen, "seccomp: out of memory");
		return NULL;
	}
	f->ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (f->ctx == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	what = "seccomp_attr_set";
	rc = seccomp_attr_set(f->ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS);
	if (rc < 0)
		goto fail;
	what = "socket(AF_UNIX) rule";
	rc = seccomp_rule_add(f->ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket),
	    1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffU, AF_UNIX));
	if (rc < 0)
		goto fail;
	what = "socketpair(AF_UNIX, SOCK_DGRAM) rule";
	rc = seccomp_rule_add(f->ctx, SCMP_ACT_ERRNO(EPERM),
	    SCMP_SYS(socketpair), 2,
	    SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffU, AF_UNIX),
	    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xfU, SOCK_DGRAM));
	if (rc < 0)
		goto fail;
	for (i = 0; i < nitems(uring); i++) {
		what = uring[i];
		nr = seccomp_syscall_resolve_name(uring[i]);
		if (nr == __NR_SCMP_ERROR) {
			rc = -ENOSYS;
			goto fail;
		}
		rc = seccomp_rule_add(f->ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (rc < 0)
			goto fail;
	}
	return f;
fail:
	snprintf(err, errlen, "seccomp: %s: %s", what, strerror(-rc));
	sb_filter_free(f);
	return NULL;
}

int
sb_filter_load(struct sb_filter *f, char *err, size_t errlen)
{
	int rc;

	/* libseccomp sets no_new_privs first (SCMP_FLTATR_CTL_NNP) */
	rc = seccomp_load(f->ctx);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp_load: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

void
sb_filter_free(struct sb_filter *f)
{
	if (f == NULL)
		return;
	if (f->ctx != NULL)
		seccomp_release(f->ctx);
	eg_free(f);
}
