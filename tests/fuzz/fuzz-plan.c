/*
 * fuzz-plan.c: feeds arbitrary bytes to the replay plan loader
 * (src/mod/replay/plan.c) as a plan file.  The loader must never crash,
 * leak or read beyond the input, whatever the bytes (NULs, control
 * characters, huge lines, unbalanced quotes); a plan that does load is
 * walked once and freed, and its run = values are split again.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../src/mod/replay/plan.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *
fake_env(const char *name)
{
	if (strcmp(name, "HOME") == 0)
		return "/home/fuzz";
	if (strcmp(name, "LANG") == 0)
		return "C.UTF-8";
	return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rp_errs errs;
	struct rp_plan *p;
	struct mc_strv v;
	const char *why;
	size_t i;

	memset(&errs, 0, sizeof(errs));
	p = rp_plan_parse((const char *)data, size, "fuzz.ini",
	    "/plans", fake_env, (int)(size & 1), NULL, &errs);
	if (p != NULL) {
		for (i = 0; i < p->nsteps; i++) {
			memset(&v, 0, sizeof(v));
			if (p->steps[i].run != NULL &&
			    rp_split_argv(p->steps[i].run, &v, &why) == 0 &&
			    !p->steps[i].shell && v.n != p->steps[i].argv.n)
				__builtin_trap();
			mc_strv_free(&v);
		}
		rp_plan_free(p);
	} else if (errs.n == 0)
		__builtin_trap();	/* refused without saying why */
	rp_errs_free(&errs);
	return 0;
}
