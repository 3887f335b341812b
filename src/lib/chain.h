/*
 * chain.h: chaining an audit file (the record module).  Private to
 * libegress.
 */
#ifndef EG_CHAIN_H
#define EG_CHAIN_H

struct egress;
struct eg_audit;
struct eg_err;

/* Chain a (its START run=run) when the configuration asks for it, or
 * force, and the record module is built; else nothing.  0 or -1. */
int	eg_audit_chain_setup(struct egress *, struct eg_audit *a,
	    const char *run, int force, struct eg_err *err);

#endif
