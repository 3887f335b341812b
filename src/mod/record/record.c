/*
 * record.c: the record module's table (module.h): the audit chain's ops
 * (chain.c) and the commands "egressd record keygen|seal|check" and
 * "egressd audit verify" (dispatched here as "audit-verify").
 */
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "module.h"
#include "record.h"

static const char usage_text[] =
"usage: egressd record keygen KEY\n"
"       egressd record seal [--key KEY] DIR\n"
"       egressd record check [--pubkey PUB] DIR\n"
"       egressd audit verify [--pubkey PUB] LOG...\n";

static int
record_main(int argc, char *argv[])
{
	if (argc > 0 && strcmp(argv[0], "audit-verify") == 0)
		return rec_verify_main(argc, argv);
	if (argc < 2 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "keygen") == 0)
		return rec_keygen_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "seal") == 0)
		return rec_seal_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "check") == 0)
		return rec_check_main(argc - 1, argv + 1);
	fprintf(stderr, "egressd: record: unknown subcommand '%.80s'\n%s",
	    argv[1], usage_text);
	return 2;
}

const struct eg_module eg_mod_record = {
	.name		= "record",
	.summary	= "chained, signed audit logs and run records",
	.main		= record_main,
	.audit		= &rec_audit_ops,
};
