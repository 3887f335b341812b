/*
 * fuzz-cfg.c: feeds arbitrary bytes to the configuration parser as INI
 * text.  The parser must never crash, leak or read beyond the input; a
 * snapshot that does come back is matched against once and released.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cfg.h"
#include "host.h"
#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eg_errs errs;
	struct eg_cfg *cfg;
	const struct eg_rule *r;
	struct eg_host h;
	const char *why;
	size_t i;

	memset(&errs, 0, sizeof(errs));
	cfg = eg_cfg_parse((const char *)data, size, "fuzz.ini", &errs);
	if (cfg != NULL) {
		eg_cfg_check(cfg, &errs);
		if (eg_host_parse("a.example.com", 13, &h, &why) == 0) {
			for (i = 0; i < cfg->nphases; i++)
				(void)eg_phase_match(&cfg->phases[i], &h, 443,
				    cfg->ports, cfg->nports, &r);
			(void)eg_cfg_pin(cfg, &h);
		}
		(void)eg_cfg_override(cfg, "listen", "127.0.0.1:1", NULL);
		eg_cfg_unref(cfg);
	}
	eg_errs_clear(&errs);
	return 0;
}
