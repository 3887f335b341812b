/*
 * fuzz-record.c: "egressd record check" (src/mod/record/check.c) on a
 * record directory whose record.json is the input.  The directory (made
 * once, under $TMPDIR) holds a tiny audit.log, plan.ini, config.ini, a
 * run.json, a step folder with a receipt and a FIFO: whatever record.json
 * says (paths with "..", absolute, empty components, duplicates, huge
 * sizes, steps naming folders that do not exist), check must never crash,
 * leak, follow a path out of the directory, or open (and wait on) the
 * FIFO; its exit status is 0 or 1, and 0 only when no check failed.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/mod/record/record.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char dir[4096];

static int
put(const char *name, const char *text)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* The directory goes when the process ends. */
static void
cleanup(void)
{
	static const char *const names[] = { "steps/01-a/stdout",
	    "steps/01-a/receipt.json", "plan.ini", "config.ini", "run.json",
	    "audit.log", "record.json", NULL };
	char path[4200];
	size_t i;

	for (i = 0; names[i] != NULL; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		(void)unlink(path);
	}
	snprintf(path, sizeof(path), "%s/steps/01-a", dir);
	(void)rmdir(path);
	snprintf(path, sizeof(path), "%s/steps", dir);
	(void)rmdir(path);
	(void)rmdir(dir);
}

static void
setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[4200];

	snprintf(dir, sizeof(dir), "%s/fuzz-record.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		abort();
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/steps", dir);
	if (mkdir(path, 0755) == -1)
		abort();
	snprintf(path, sizeof(path), "%s/steps/01-a", dir);
	if (mkdir(path, 0755) == -1)
		abort();
	snprintf(path, sizeof(path), "%s/steps/01-a/stdout", dir);
	if (mkfifo(path, 0644) == -1)
		abort();
	if (put("plan.ini", "[replay]\n") == -1 ||
	    put("config.ini", "[proxy]\n") == -1 ||
	    put("run.json", "{\"egressd_run\":1,\"state\":\"finished\"}") ==
	    -1 ||
	    put("audit.log", "2026-12-01T17:00:00.000Z START - run=x "
	    "config=y prev=- chain=00\n") == -1 ||
	    put("steps/01-a/receipt.json", "{\"step\":\"a\",\"index\":1}") ==
	    -1)
		abort();
	/* the closing sentence and the OK/FAIL lines go nowhere */
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[3], cmd[] = "check";
	int rc;

	if (dir[0] == '\0')
		setup();
	{
		char path[4200];
		int fd;

		snprintf(path, sizeof(path), "%s/record.json", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd == -1)
			abort();
		if (size > 0 && write(fd, data, size) != (ssize_t)size)
			abort();
		close(fd);
	}
	argv[0] = cmd;
	argv[1] = dir;
	argv[2] = NULL;
	rc = rec_check_main(2, argv);
	/* the FIFO is never listed as a regular file, so never all OK */
	if (rc != 1)
		__builtin_trap();
	return 0;
}
