/*
 * chain.c: chaining an audit file from the configuration (the record
 * module's audit_chain, audit_key, checkpoints), for the main log and a
 * session's own file (chain.h).
 */
#include "egress-int.h"

#include "audit.h"
#include "cfg.h"
#include "chain.h"
#include "core.h"
#include "module.h"

int
eg_audit_chain_setup(struct egress *ex, struct eg_audit *a, const char *run,
    int force, struct eg_err *err)
{
	const struct eg_audit_ops *ops = eg_module_audit_ops();
	struct eg_chain_params p;
	const struct eg_cfg *cfg = ex->cfg;
	size_t len = 0;

	if (ops == NULL || (!cfg->audit_chain && cfg->audit_key == NULL &&
	    !force))
		return 0;
	memset(&p, 0, sizeof(p));
	p.run = run;
	p.key = cfg->audit_key;
	p.checkpoint_lines = cfg->checkpoint_lines;
	/* config=: the bytes of the file (the text given, the default) */
	if (cfg->src != NULL) {
		p.config = cfg->src;
		len = cfg->src_len;
	} else if (ex->cfg_text != NULL) {
		p.config = ex->cfg_text;
		len = strlen(ex->cfg_text);
	} else {
		p.config = eg_cfg_default_text;
		len = strlen(eg_cfg_default_text);
	}
	p.config_len = len;
	/* the identity of the configuration is its redacted text (routes'
	 * literal header values): what a record keeps of it */
	{
		size_t rlen;
		char *red = eg_cfg_redact(p.config, len, &rlen);
		int rc;

		if (red == NULL) {
			return eg_err_set(err, ENOMEM, "out of memory");
		}
		p.config = red;
		p.config_len = rlen;
		rc = eg_audit_chain(a, ops, &p, p.key != NULL ?
		    cfg->checkpoint_interval_ms : 0, err);
		eg_free(red);
		return rc;
	}
}
