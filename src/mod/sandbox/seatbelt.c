/*
 * seatbelt.c: the macOS sandbox-exec (Seatbelt, SBPL) profile for
 * "egressd run".  A pure function of the paths and the proxy port, so it
 * is unit-tested on any system: deny by default, network only to the
 * proxy's port on localhost, reads anywhere but under $HOME, writes only
 * to the working directories.  In SBPL the last matching rule wins.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sandbox.h"

/* An SBPL string literal: double quotes, with " and \ escaped. */
static void
put_quoted(struct eg_buf *b, const char *s)
{
	size_t run;

	eg_buf_add(b, "\"", 1);
	for (;;) {
		run = strcspn(s, "\"\\");
		eg_buf_add(b, s, run);
		if (s[run] == '\0')
			break;
		eg_buf_add(b, "\\", 1);
		eg_buf_add(b, s + run, 1);
		s += run + 1;
	}
	eg_buf_add(b, "\"", 1);
}

/* "(subpath "P")" for every path of sv. */
static void
put_subpaths(struct eg_buf *b, const struct mc_strv *sv)
{
	size_t i;

	for (i = 0; sv != NULL && i < sv->n; i++) {
		eg_buf_str(b, "\n    (subpath ");
		put_quoted(b, sv->v[i]);
		eg_buf_str(b, ")");
	}
}

static int
path_ok(const char *p, const char *what, char *err, size_t errlen)
{
	const unsigned char *u;

	if (p == NULL || p[0] != '/') {
		snprintf(err, errlen, "%s: not an absolute path: %s", what,
		    p == NULL ? "(null)" : p);
		return 0;
	}
	for (u = (const unsigned char *)p; *u != '\0'; u++) {
		if (*u < 0x20 || *u == 0x7f) {
			snprintf(err, errlen, "%s: control character in path",
			    what);
			return 0;
		}
	}
	return 1;
}

static int
paths_ok(const struct mc_strv *sv, const char *what, char *err,
    size_t errlen)
{
	size_t i;

	for (i = 0; sv != NULL && i < sv->n; i++)
		if (!path_ok(sv->v[i], what, err, errlen))
			return 0;
	return 1;
}

char *
sb_seatbelt_profile(const struct sb_seatbelt *x, char *err, size_t errlen)
{
	struct eg_buf b = EG_BUF_HEAP(SB_SEATBELT_MAX);

	if (x->port == 0) {
		snprintf(err, errlen, "proxy port: 0 is not a port");
		return NULL;
	}
	if ((x->home != NULL && !path_ok(x->home, "home", err, errlen)) ||
	    !paths_ok(x->rw, "writable", err, errlen) ||
	    !paths_ok(x->ro, "read-only", err, errlen))
		return NULL;
	if (x->rw == NULL || x->rw->n == 0) {
		snprintf(err, errlen, "writable: at least the working "
		    "directory is needed");
		return NULL;
	}

	eg_buf_str(&b,
";; egressd run: generated Seatbelt profile for sandbox-exec(1)\n"
"(version 1)\n"
"(deny default)\n"
"\n"
";; processes: run programs, fork, signal our own tree\n"
"(allow process-exec process-fork)\n"
"(allow signal (target same-sandbox))\n"
"(allow sysctl-read)\n"
"(allow ipc-posix-shm-read-data ipc-posix-shm-read-metadata)\n"
";; system services needed by ordinary programs and TLS; not the\n"
";; resolver (com.apple.mDNSResponder): names resolve at the proxy\n"
"(allow mach-lookup\n"
"    (global-name \"com.apple.system.logger\")\n"
"    (global-name \"com.apple.system.notification_center\")\n"
"    (global-name \"com.apple.system.opendirectoryd.libinfo\")\n"
"    (global-name \"com.apple.trustd\")\n"
"    (global-name \"com.apple.trustd.agent\")\n"
"    (global-name \"com.apple.SecurityServer\")\n"
"    (global-name \"com.apple.coreservices.launchservicesd\"))\n"
"\n"
";; reads: everywhere but the home directory\n"
"(allow file-read*)\n");
	if (x->home != NULL) {
		eg_buf_str(&b, "(deny file-read* (subpath ");
		put_quoted(&b, x->home);
		eg_buf_str(&b, "))\n");
	}
	/* stat() of the path down to a working dir under $HOME */
	eg_buf_str(&b, "(allow file-read-metadata)\n");
	eg_buf_str(&b, "(allow file-read*");
	put_subpaths(&b, x->rw);
	put_subpaths(&b, x->ro);
	eg_buf_str(&b, ")\n");

	eg_buf_str(&b, "\n;; writes: the working directories and terminals only\n"
	    "(allow file-write*");
	put_subpaths(&b, x->rw);
	eg_buf_str(&b, ")\n");
	eg_buf_str(&b,
"(allow file-write-data file-ioctl\n"
"    (literal \"/dev/null\")\n"
"    (literal \"/dev/zero\")\n"
"    (literal \"/dev/dtracehelper\")\n"
"    (literal \"/dev/tty\")\n"
"    (regex #\"^/dev/ttys[0-9]+$\")\n"
"    (regex #\"^/dev/fd/[0-9]+$\"))\n"
"\n"
";; network: the proxy on localhost, nothing else\n");
	eg_buf_str(&b, "(allow network-outbound (remote ip \"localhost:");
	eg_buf_u64(&b, x->port);
	eg_buf_add(&b, "\"))\n", 5);	/* and the NUL */
	if (eg_buf_failed(&b)) {
		if (eg_buf_failed(&b) == EG_BUF_FULL)
			snprintf(err, errlen, "profile longer than %u bytes "
			    "(too many or too long paths)",
			    (unsigned)SB_SEATBELT_MAX);
		else
			snprintf(err, errlen, "out of memory");
		eg_buf_clear(&b);
		return NULL;
	}
	return eg_buf_data(&b);
}
