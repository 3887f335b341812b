/*
 * relay-host.c: a driver for tests/integ/sandbox-relay.test.  It embeds
 * the proxy as egressd replay does for its sandboxed steps: one Unix
 * socket made for egressd's own relay (options unix_relay, unix_client
 * "sandbox"), no TCP listener, no admin API; "egressd run
 * --proxy-handoff SOCK" then runs a command behind it.  Commands on
 * standard input, one a line, each answered on standard output:
 *
 *	phase NAME	egress_set_phase(NAME, "api"): "phase NAME closed=N"
 *	reload		egress_reload("reload"): "reloaded"
 *
 * End of input stops the proxy.
 *
 *	relay-host CONFIG SOCK AUDIT PHASE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

int
main(int argc, char *argv[])
{
	char err[2048], line[256];
	struct egress *ex;
	unsigned closed;
	size_t n;

	if (argc != 5) {
		fprintf(stderr, "usage: relay-host CONFIG SOCK AUDIT PHASE\n");
		return 2;
	}
	if ((ex = egress_new_from_file(argv[1], err, sizeof(err))) == NULL) {
		fprintf(stderr, "relay-host: %s", err);
		return 1;
	}
	if (egress_set_option(ex, "unix", argv[2]) == -1 ||
	    egress_set_option(ex, "unix_client", "sandbox") == -1 ||
	    egress_set_option(ex, "unix_relay", "yes") == -1 ||
	    egress_set_option(ex, "listen", "none") == -1 ||
	    egress_set_option(ex, "admin", "none") == -1 ||
	    egress_set_option(ex, "audit_log", argv[3]) == -1 ||
	    egress_set_option(ex, "phase", argv[4]) == -1 ||
	    egress_start(ex) == -1 || egress_run_thread(ex) == -1) {
		fprintf(stderr, "relay-host: %s\n", egress_errmsg(ex));
		egress_free(ex);
		return 3;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		n = strcspn(line, "\r\n");
		line[n] = '\0';
		if (strncmp(line, "phase ", 6) == 0) {
			closed = 0;
			if (egress_set_phase(ex, line + 6, "api", &closed) == -1)
				printf("error %s\n", egress_errmsg(ex));
			else
				printf("phase %s closed=%u\n", line + 6, closed);
		} else if (strcmp(line, "reload") == 0) {
			if (egress_reload(ex, "reload") == -1)
				printf("error %s\n", egress_errmsg(ex));
			else
				printf("reloaded\n");
		} else
			printf("error unknown command\n");
		fflush(stdout);
	}
	egress_stop(ex);
	egress_join(ex);
	egress_free(ex);
	return 0;
}
