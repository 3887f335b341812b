/*
 * hooks.c: the sandbox module as the core sees it (its eg_module table):
 * the [sandbox] section of the configuration, and the decision counters
 * every proxy keeps (init/on_event/fini) for "egressd run"'s summary.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "module.h"
#include "run.h"

int
sb_mode_parse(const char *s, enum sb_mode *mode)
{
	static const char *const names[] = { "auto", "bwrap", "none" };
	static const enum sb_mode modes[] = { SB_AUTO, SB_BWRAP, SB_NONE };
	size_t i;

	for (i = 0; i < nitems(names); i++) {
		if (strcmp(s, names[i]) == 0) {
			*mode = modes[i];
			return 0;
		}
	}
	return -1;
}

static int
sb_config(void **cfgp, const char *key, const char *value, const char *file,
    int line, char *err, size_t errlen)
{
	struct sb_conf *c = *cfgp;
	char q[400];

	(void)file;
	if (c == NULL) {
		if ((c = eg_calloc(1, sizeof(*c))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		*cfgp = c;
	}
	if (strcmp(key, "sandbox") != 0) {
		snprintf(err, errlen, "unknown key '%s' in [sandbox]",
		    eg_module_quote(key, q, sizeof(q)));
		return -1;
	}
	if (c->mode_line != 0) {
		snprintf(err, errlen, "duplicate key 'sandbox' in [sandbox] "
		    "(first at line %d)", c->mode_line);
		return -1;
	}
	if (sb_mode_parse(value, &c->mode) == -1) {
		snprintf(err, errlen, "bad value '%s' for sandbox in "
		    "[sandbox]: use auto, bwrap or none",
		    eg_module_quote(value, q, sizeof(q)));
		return -1;
	}
	c->mode_line = line;
	return 0;
}

static void
sb_config_free(void *cfg)
{
	eg_free(cfg);
}

static int
sb_init(struct egress *ex, const void *cfg, void **state, char *err,
    size_t errlen)
{
	struct run_counts *c;

	(void)ex;
	(void)cfg;
	if ((*state = c = eg_calloc(1, sizeof(struct run_counts))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&c->mtx, NULL);
	return 0;
}

static void
sb_fini(void *state)
{
	struct run_counts *c = state;

	if (c != NULL)
		pthread_mutex_destroy(&c->mtx);
	eg_free(state);
}

/* Count a BLOCK of host:port (host NULL: "-") for the summary. */
static void
count_blocked(struct run_counts *c, const char *host, unsigned port)
{
	char hp[sizeof(c->blk[0].hp)];
	size_t i;
	int n;

	n = port ? snprintf(hp, sizeof(hp), "%s:%u", host ? host : "-", port) :
	    snprintf(hp, sizeof(hp), "%s", host ? host : "-");
	if (n < 0)
		return;
	for (i = 0; hp[i] != '\0'; i++)	/* escaped already; be sure */
		if ((unsigned char)hp[i] <= 0x20 || (unsigned char)hp[i] >= 0x7f)
			hp[i] = '?';
	pthread_mutex_lock(&c->mtx);
	for (i = 0; i < c->nblk; i++)
		if (strcmp(c->blk[i].hp, hp) == 0)
			break;
	if (i < c->nblk)
		c->blk[i].n++;
	else if (c->nblk < RUN_BLK_MAX) {
		memcpy(c->blk[c->nblk].hp, hp, sizeof(hp));
		c->blk[c->nblk++].n = 1;
	} else
		c->blk_other++;
	pthread_mutex_unlock(&c->mtx);
}

/* "egressd: blocked: HOST:PORT (N), ... and K more" (none: nothing). */
void
sb_print_blocked(struct run_counts *c)
{
	unsigned long long more = c->blk_other;
	struct run_blk t;
	size_t i, j;

	if (c->nblk == 0)
		return;
	/* most first; equal counts stay in the order first seen (a stable
	 * insertion sort of at most RUN_BLK_MAX entries) */
	for (i = 1; i < c->nblk; i++) {
		t = c->blk[i];
		for (j = i; j > 0 && c->blk[j - 1].n < t.n; j--)
			c->blk[j] = c->blk[j - 1];
		c->blk[j] = t;
	}
	fputs("egressd: blocked:", stderr);
	for (i = 0; i < c->nblk && i < RUN_BLK_SHOW; i++)
		fprintf(stderr, "%s %s (%llu)", i ? "," : "", c->blk[i].hp,
		    c->blk[i].n);
	for (; i < c->nblk; i++)
		more += c->blk[i].n;
	if (more > 0)
		fprintf(stderr, ", and %llu more", more);
	fputc('\n', stderr);
}

static void
on_event(const struct egress_event *ev, void *arg)
{
	struct run_counts *c = arg;

	switch (ev->type) {
	case EGRESS_EV_ALLOW:
		__atomic_fetch_add(&c->allow, 1, __ATOMIC_RELAXED);
		break;
	case EGRESS_EV_BLOCK:
		__atomic_fetch_add(&c->block, 1, __ATOMIC_RELAXED);
		count_blocked(c, ev->host, ev->port);
		break;
	case EGRESS_EV_FAIL:
		__atomic_fetch_add(&c->fail, 1, __ATOMIC_RELAXED);
		break;
	default:
		break;
	}
}

const struct eg_module eg_mod_sandbox = {
	.name		= "sandbox",
	.summary	= "run commands behind the proxy (bubblewrap)",
	.main		= sb_main,
	.config		= sb_config,
	.config_free	= sb_config_free,
	.init		= sb_init,
	.on_event	= on_event,
	.fini		= sb_fini,
};
