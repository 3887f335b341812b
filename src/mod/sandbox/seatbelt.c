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

#include "sandbox.h"

/* An append-only text buffer; on failure it sets oom and stays put. */
struct sbuf {
	char	*s;
	size_t	 len, cap;
	int	 oom;
};

static void
sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	char *ns;
	size_t ncap;

	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		ncap = b->cap ? b->cap : 1024;
		while (ncap < b->len + n + 1)
			ncap *= 2;
		ns = eg_realloc(b->s, ncap);
		if (ns == NULL) {
			b->oom = 1;
			return;
		}
		b->s = ns;
		b->cap = ncap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void
sbuf_str(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

/* An SBPL string literal: double quotes, with " and \ escaped. */
static void
sbuf_quote(struct sbuf *b, const char *s)
{
	sbuf_add(b, "\"", 1);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			sbuf_add(b, "\\", 1);
		sbuf_add(b, s, 1);
	}
	sbuf_add(b, "\"", 1);
}

/* "(subpath "P")" for every path of sv. */
static void
sbuf_subpaths(struct sbuf *b, const struct sb_strv *sv)
{
	size_t i;

	for (i = 0; sv != NULL && i < sv->n; i++) {
		sbuf_str(b, "\n    (subpath ");
		sbuf_quote(b, sv->v[i]);
		sbuf_str(b, ")");
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
paths_ok(const struct sb_strv *sv, const char *what, char *err,
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
	struct sbuf b;
	char num[64];

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

	memset(&b, 0, sizeof(b));
	sbuf_str(&b,
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
		sbuf_str(&b, "(deny file-read* (subpath ");
		sbuf_quote(&b, x->home);
		sbuf_str(&b, "))\n");
	}
	/* stat() of the path down to a working dir under $HOME */
	sbuf_str(&b, "(allow file-read-metadata)\n");
	sbuf_str(&b, "(allow file-read*");
	sbuf_subpaths(&b, x->rw);
	sbuf_subpaths(&b, x->ro);
	sbuf_str(&b, ")\n");

	sbuf_str(&b, "\n;; writes: the working directories and terminals only\n"
	    "(allow file-write*");
	sbuf_subpaths(&b, x->rw);
	sbuf_str(&b, ")\n");
	sbuf_str(&b,
"(allow file-write-data file-ioctl\n"
"    (literal \"/dev/null\")\n"
"    (literal \"/dev/zero\")\n"
"    (literal \"/dev/dtracehelper\")\n"
"    (literal \"/dev/tty\")\n"
"    (regex #\"^/dev/ttys[0-9]+$\")\n"
"    (regex #\"^/dev/fd/[0-9]+$\"))\n"
"\n"
";; network: the proxy on localhost, nothing else\n");
	snprintf(num, sizeof(num), "%u", (unsigned)x->port);
	sbuf_str(&b, "(allow network-outbound (remote ip \"localhost:");
	sbuf_str(&b, num);
	sbuf_str(&b, "\"))\n");
	if (b.oom) {
		eg_free(b.s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return b.s;
}
