/*
 * replay.c: "egressd replay", the replay module's entry point: the
 * command line, then supervisor.c (run, --resume, --cancel), status.c
 * (--status) or keeper.c (--keeper, internal: the per-step keeper the
 * supervisor execs).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "module.h"
#include "replay.h"

static const char usage[] =
"usage: egressd replay [-c FILE] [-o DIR] [-j N] [--key KEY] PLAN.ini...\n"
"       egressd replay --resume DIR [--key KEY] [--force --reason TEXT]\n"
"       egressd replay --cancel DIR [--reason TEXT]\n"
"       egressd replay --status [--json] DIR\n";

static const char help[] =
"\n"
"Run a plan of steps phase by phase behind a private egressd proxy and\n"
"leave a record directory that says what happened, even after a crash.\n"
"\n"
"Options:\n"
"  -c, --config FILE  the proxy configuration when the plan has no config =\n"
"  -o, --output DIR   the record directory (one plan only)\n"
"  -j, --jobs N       run up to N plans at once (one session each)\n"
"  --key KEY          sign the audit checkpoints and record.json\n"
"  --resume DIR       finish a run whose supervisor died\n"
"  --cancel DIR       stop a run (SIGTERM to the step, 2 s, SIGKILL)\n"
"  --force            with --resume: close a step that cannot be decided\n"
"                     as original_exit_unknown (needs --reason)\n"
"  --reason TEXT      why (kept in run.json)\n"
"  --status DIR       one line per step; --json: the run and the receipts\n"
"  -h, --help         this text\n"
"\n"
"Exit status: 0 every step exited 0; 1 a step failed, timed out, could not\n"
"launch, or the run was cancelled; 2 usage or plan error; 3 runtime\n"
"failure; 4 a step cannot be decided after a crash (its name is printed).\n"
"--status: 0, or 3 when the run's supervisor is gone (interrupted).\n"
"\n"
"See egressd-replay(1).\n";

static int
usage_err(const char *msg, const char *arg)
{
	fprintf(stderr, "egressd replay: %s%s%s\n%s", msg, arg ? ": " : "",
	    arg ? arg : "", usage);
	return RP_EX_USAGE;
}

static int
replay_main(int argc, char *argv[])
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "key", required_argument, NULL, 'K' },
		{ "resume", required_argument, NULL, 'R' },
		{ "cancel", required_argument, NULL, 'C' },
		{ "reason", required_argument, NULL, 'r' },
		{ "status", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'J' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct rp_opts o;
	const char *resume = NULL, *cancel = NULL, *reason = NULL;
	const char *status = NULL;
	char *end;
	unsigned long n;
	int ch, json = 0, modes, force = 0;

	if (argc >= 2 && strcmp(argv[1], "--keeper") == 0)
		return rp_keeper_main(argc, argv);
	memset(&o, 0, sizeof(o));
	o.jobs = 1;
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+c:o:j:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.config = optarg;
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'j':
			n = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || n < 1 || n > 64)
				return usage_err("-j: want 1 to 64", optarg);
			o.jobs = (unsigned)n;
			break;
		case 'K':
			o.key = optarg;
			break;
		case 'R':
			resume = optarg;
			break;
		case 'C':
			cancel = optarg;
			break;
		case 'r':
			reason = optarg;
			break;
		case 'S':
			status = "";
			break;
		case 'J':
			json = 1;
			break;
		case 'F':
			force = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			fputs(help, stdout);
			return 0;
		default:
			return usage_err("unknown option or missing argument",
			    argv[optind - 1]);
		}
	}
	modes = (resume != NULL) + (cancel != NULL) + (status != NULL);
	if (modes > 1)
		return usage_err("--resume, --cancel and --status go alone",
		    NULL);
	if (status != NULL) {
		/* --status [--json] DIR */
		if (optind + 1 != argc)
			return usage_err(optind < argc ? "unexpected argument" :
			    "--status: no DIR given", optind < argc ?
			    argv[argc - 1] : NULL);
		status = argv[optind++];
	}
	if (modes == 1 && optind < argc)
		return usage_err("unexpected argument", argv[optind]);
	if (modes == 1 && (o.config != NULL || o.out != NULL))
		return usage_err("-c and -o are for a new run", NULL);
	if (force && resume == NULL)
		return usage_err("--force goes with --resume", NULL);
	if (force && (reason == NULL || reason[0] == '\0'))
		return usage_err("--force needs --reason TEXT", NULL);
	if (reason != NULL && cancel == NULL && !force)
		return usage_err("--reason goes with --cancel or --resume "
		    "--force", NULL);
	if (json && status == NULL)
		return usage_err("--json goes with --status", NULL);
	if (resume != NULL)
		return rp_resume(resume, o.key, force ? reason : NULL);
	if (cancel != NULL)
		return o.key != NULL ? usage_err("--key is for a run", NULL) :
		    rp_cancel(cancel, reason);
	if (status != NULL)
		return rp_status(status, json);
	if (optind >= argc)
		return usage_err("no plan given", NULL);
	o.plans = argv + optind;
	o.nplans = (size_t)(argc - optind);
	if (o.out != NULL && o.nplans > 1)
		return usage_err("-o is for one plan only", NULL);
	return rp_run_plans(&o);
}

const struct eg_module eg_mod_replay = {
	.name		= "replay",
	.summary	= "run plans of steps behind the proxy, crash-safe",
	.main		= replay_main,
};
