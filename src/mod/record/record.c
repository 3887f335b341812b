/*
 * record.c: the record module's table and "egressd record ..." dispatch.
 * MINIMAL SKELETON made by record-run so that seal/check build before
 * record-chain's module lands; record-chain's record.c replaces it (its
 * dispatcher calls rr_seal_main() and rr_check_main() from seal.h with
 * argv[0] = the subcommand).
 */
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "module.h"
#include "seal.h"

extern const struct eg_module eg_mod_record;

static const char record_usage[] =
"usage: egressd record seal [--key KEY] DIR\n";

static int
record_main(int argc, char *argv[])
{
	if (argc < 2) {
		fputs(record_usage, stderr);
		return 2;
	}
	if (strcmp(argv[1], "seal") == 0)
		return rr_seal_main(argc - 1, argv + 1);
	fprintf(stderr, "egressd record: unknown subcommand '%s'\n%s",
	    argv[1], record_usage);
	return 2;
}

const struct eg_module eg_mod_record = {
	.name = "record",
	.summary = "chained, signed audit logs and run records",
	.main = record_main,
};
