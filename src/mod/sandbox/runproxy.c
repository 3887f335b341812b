/*
 * runproxy.c: the proxy side of "egressd run": the private directory of
 * its socket and audit log, the in-process proxy (loaded, set up on that
 * socket, started, stopped with its counters kept), and with --sandbox
 * none the relay in a thread of its own.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "module.h"
#include "run.h"
#include "../common/proxylog.h"

static int
relay_thr_stop(void *arg)
{
	(void)arg;
	return 1;
}

static void *
relay_thr_main(void *arg)
{
	struct relay_thr *t = arg;
	struct sb_relay_ctl ctl;

	ctl.fd = t->efd;
	ctl.cb = relay_thr_stop;
	ctl.arg = t;
	t->rc = sb_relay_loop(t->lfd, t->sock, t->handoff, &ctl, t->err,
	    sizeof(t->err));
	return NULL;
}

/*
 * A fresh 0700 directory for the socket and the audit log, outside
 * everything the command may write (cwd NULL: no sandbox, no such
 * constraint).  Returns 0 and fills buf.
 */
int
sb_privdir(const struct run_opts *o, const char *cwd, char *buf,
    size_t len)
{
	const char *cand[5];
	struct stat st;
	size_t i, j;
	int bad, n;

	cand[0] = getenv("XDG_RUNTIME_DIR");
	cand[1] = getenv("TMPDIR");
	cand[2] = "/tmp";
	cand[3] = "/var/tmp";
	cand[4] = "/dev/shm";
	for (i = 0; i < nitems(cand); i++) {
		if (cand[i] == NULL || cand[i][0] != '/' ||
		    stat(cand[i], &st) == -1 || !S_ISDIR(st.st_mode) ||
		    access(cand[i], W_OK | X_OK) == -1)
			continue;
		/* the sandbox must not see this directory writable */
		bad = cwd != NULL && sb_path_under(cand[i], cwd);
		for (j = 0; cwd != NULL && j < o->rw.n; j++)
			if (sb_path_under(cand[i], o->rw.v[j]))
				bad = 1;
		/* room for "/sock/proxy.sock" in sun_path (108) */
		n = snprintf(buf, len, "%s/egressd-run.XXXXXX", cand[i]);
		if (bad || n < 0 || (size_t)n >= len || n + 16 >= 100)
			continue;
		if (mkdtemp(buf) != NULL)
			return 0;
	}
	fprintf(stderr, "egressd: cannot create a private directory "
	    "outside the writable paths (tried $XDG_RUNTIME_DIR, $TMPDIR, "
	    "/tmp, /var/tmp, /dev/shm)\n");
	return -1;
}

/*
 * Load the private proxy's configuration (before anything else: its
 * [sandbox] section gives the default of --sandbox).  0, or the exit
 * status.
 */
int
sb_proxy_load(struct run_state *st)
{
	const struct sb_conf *c;
	char err[4096];

	err[0] = '\0';
	st->ex = egress_new_from_file(st->o.config, err, sizeof(err));
	if (st->ex == NULL) {
		fprintf(stderr, "%s%s", err,
		    err[0] != '\0' && err[strlen(err) - 1] != '\n' ? "\n" :
		    "");
		if (err[0] == '\0')
			fprintf(stderr, "egressd: cannot load the "
			    "configuration\n");
		return 1;
	}
	egress_set_log_cb(st->ex, mc_proxy_log, (void *)"egressd: ");
	c = eg_module_config(st->ex, &eg_mod_sandbox);
	if (!st->o.mode_set && c != NULL && c->mode_line != 0)
		st->o.mode = c->mode;
	return 0;
}

int
sb_proxy_start(struct run_state *st)
{
	/* --audit, else the configuration's audit_log, else discarded */
	if (st->o.audit != NULL)
		snprintf(st->auditpath, sizeof(st->auditpath), "%s",
		    st->o.audit);
	else if (egress_get_option(st->ex, "audit_log", st->auditpath,
	    sizeof(st->auditpath)) != 1) {
		snprintf(st->auditpath, sizeof(st->auditpath),
		    "%s/audit.log", st->privdir);
		st->audit_tmp = 1;
	}
	/* the private socket first: a proxy with no listener is invalid */
	if (egress_set_option(st->ex, "unix", st->sock) == -1 ||
	    egress_set_option(st->ex, "unix_client", "sandbox") == -1 ||
	    egress_set_option(st->ex, "unix_relay", "yes") == -1 ||
	    egress_set_option(st->ex, "listen", "none") == -1 ||
	    egress_set_option(st->ex, "admin", "none") == -1 ||
	    (st->o.phase != NULL &&
	    egress_set_option(st->ex, "phase", st->o.phase) == -1) ||
	    egress_set_option(st->ex, "audit_log", st->auditpath) == -1) {
		fprintf(stderr, "egressd: %s\n", egress_errmsg(st->ex));
		return 1;
	}
	if (egress_start(st->ex) == -1 || egress_run_thread(st->ex) == -1) {
		fprintf(stderr, "egressd: %s\n", egress_errmsg(st->ex));
		return 3;
	}
	return 0;
}

void
sb_run_cleanup(struct run_state *st)
{
	const struct run_counts *c;
	uint64_t one = 1;

	if (st->rt_running) {
		(void)write(st->rt.efd, &one, sizeof(one));
		pthread_join(st->rt.tid, NULL);
		close(st->rt.efd);
		close(st->rt.lfd);
		st->rt_running = 0;
	}
	if (st->ex != NULL) {
		egress_stop(st->ex);
		egress_join(st->ex);
		/* the module's counters die with the proxy */
		if ((c = eg_module_state(st->ex, &eg_mod_sandbox)) != NULL) {
			st->cnt.allow = c->allow;
			st->cnt.block = c->block;
			st->cnt.fail = c->fail;
			memcpy(st->cnt.blk, c->blk, sizeof(c->blk));
			st->cnt.nblk = c->nblk;
			st->cnt.blk_other = c->blk_other;
		}
		egress_free(st->ex);
		st->ex = NULL;
	}
	if (st->privdir[0] != '\0') {
		(void)unlink(st->sock);
		(void)rmdir(st->sockdir);
		if (st->audit_tmp)
			(void)unlink(st->auditpath);
		(void)rmdir(st->privdir);
		st->privdir[0] = '\0';
	}
}

int
sb_relay_thread(struct run_state *st, uint16_t *port)
{
	char err[256];

	st->rt.sock = st->o.proxy != NULL ? st->proxyrp : st->sock;
	st->rt.handoff = st->o.proxy == NULL || st->o.handoff;
	st->rt.lfd = sb_relay_listen(0, port, err, sizeof(err));
	if (st->rt.lfd == -1) {
		fprintf(stderr, "egressd: relay: %s\n", err);
		return -1;
	}
	st->rt.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (st->rt.efd == -1 || pthread_create(&st->rt.tid, NULL,
	    relay_thr_main, &st->rt) != 0) {
		fprintf(stderr, "egressd: relay thread: %s\n",
		    strerror(errno));
		if (st->rt.efd != -1)
			close(st->rt.efd);
		close(st->rt.lfd);
		return -1;
	}
	st->rt_running = 1;
	return 0;
}
