/*
 * replay.c: a plain main() for any fuzz target, so the committed corpora
 * run in "make check" without clang or libFuzzer.  Every file named, and
 * every regular file in every directory named, is passed once to
 * LLVMFuzzerTestOneInput(); a crash is a test failure, as it would be
 * under the fuzzer.  Output is TAP, one test per argument.  Built with
 * -DREPLAY_DEFAULT_DIR='"dir"', it replays that directory when run with
 * no arguments, so it can be listed in TESTS as it is.
 */
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared.h"

#define REPLAY_MAX	(1024 * 1024)	/* larger inputs are an error */

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
run_file(const char *path, size_t *nrun)
{
	struct stat st;
	uint8_t *buf;
	size_t off, len;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd == -1 || fstat(fd, &st) == -1) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (st.st_size < 0 || st.st_size > REPLAY_MAX) {
		fprintf(stderr, "replay: %s: too large\n", path);
		close(fd);
		return -1;
	}
	len = (size_t)st.st_size;
	/* An exact-size copy, so ASan sees reads past the input. */
	buf = malloc(len ? len : 1);
	if (buf == NULL) {
		close(fd);
		return -1;
	}
	off = eg_read_upto(fd, (char *)buf, len);
	close(fd);
	LLVMFuzzerTestOneInput(buf, off);
	free(buf);
	(*nrun)++;
	return 0;
}

static int
run_path(const char *path, size_t *nrun)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	char sub[4096];
	int rc = 0;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path, nrun);
	d = opendir(path);
	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
		    de->d_name) >= sizeof(sub)) {
			rc = -1;
			continue;
		}
		if (stat(sub, &st) == 0 && S_ISREG(st.st_mode) &&
		    run_file(sub, nrun) == -1)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int
main(int argc, char *argv[])
{
#ifdef REPLAY_DEFAULT_DIR
	static char *defargv[] = { NULL, REPLAY_DEFAULT_DIR, NULL };
#endif
	size_t nrun;
	int i, rc = 0;

	if (argc < 2) {
#ifdef REPLAY_DEFAULT_DIR
		defargv[0] = argv[0];
		argv = defargv;
		argc = 2;
#else
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
#endif
	}
	for (i = 1; i < argc; i++) {
		nrun = 0;
		if (run_path(argv[i], &nrun) == -1) {
			printf("not ok %d - %s (%zu inputs)\n", i, argv[i], nrun);
			rc = 1;
		} else
			printf("ok %d - %s (%zu inputs)\n", i, argv[i], nrun);
		fflush(stdout);
	}
	printf("1..%d\n", argc - 1);
	return rc;
}
