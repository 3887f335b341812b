/*
 * fuzz-receipt.c: libFuzzer target for the replay record directory's JSON
 * readers (receipt.c): the input is written as run.json, receipt.json,
 * exit.json and keeper.json of a scratch directory and read back by
 * rp_run_read (with its force_reason and dir_dev/dir_ino), the
 * receipt, exit and keeper readers.  Every string they fill must end
 * within its buffer; a run.json that is read must write back and read
 * back to the same fields (what --resume and --force rely on).
 */
#include <sys/stat.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/mod/common/fsutil.h"
#include "../../src/mod/replay/receipt.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int dirfd_ = -1;
static char tmpl[] = "/tmp/fuzz-receipt.XXXXXX";

/* the scratch directory goes at exit (make check runs this often) */
static void
cleanup(void)
{
	static const char *const names[] = { "run.json", "receipt.json",
	    "exit.json", "keeper.json", NULL };
	size_t i;

	for (i = 0; names[i] != NULL; i++)
		(void)unlinkat(dirfd_, names[i], 0);
	(void)rmdir(tmpl);
}

static void
bounded(const char *s, size_t cap)
{
	if (memchr(s, '\0', cap) == NULL)
		abort();
}

static void
put(const char *name, const uint8_t *data, size_t len)
{
	int fd;

	fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	if (fd == -1)
		abort();
	if (len > 0 && mc_write_all(fd, data, len) == -1)
		abort();
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct rp_run run, back;
	struct rp_receipt r;
	struct rp_exit x;
	char start[80], cstart[80];
	long pid, cpid;

	if (dirfd_ == -1) {
		if (mkdtemp(tmpl) == NULL ||
		    (dirfd_ = open(tmpl, O_RDONLY | O_DIRECTORY)) == -1)
			abort();
		atexit(cleanup);
	}
	put("run.json", data, len);
	put("receipt.json", data, len);
	put("exit.json", data, len);
	put("keeper.json", data, len);
	if (rp_run_read(dirfd_, &run) == 0) {
		bounded(run.name, sizeof(run.name));
		bounded(run.state, sizeof(run.state));
		bounded(run.cancel_reason, sizeof(run.cancel_reason));
		bounded(run.force_reason, sizeof(run.force_reason));
		bounded(run.sup_start, sizeof(run.sup_start));
		bounded(run.started, sizeof(run.started));
		bounded(run.ended, sizeof(run.ended));
		if (rp_run_write(dirfd_, &run) == 0) {
			if (rp_run_read(dirfd_, &back) != 0)
				abort();
			if (strcmp(back.force_reason, run.force_reason) != 0 ||
			    strcmp(back.state, run.state) != 0 ||
			    back.has_dirid != run.has_dirid ||
			    (run.has_dirid && (back.dir_dev != run.dir_dev ||
			    back.dir_ino != run.dir_ino)))
				abort();
		}
	}
	if (rp_receipt_read(dirfd_, &r) == 0) {
		bounded(r.step, sizeof(r.step));
		bounded(r.note, sizeof(r.note));
		bounded(r.termination, sizeof(r.termination));
		bounded(r.pid_start, sizeof(r.pid_start));
	}
	if (rp_exit_read(dirfd_, &x) == 0)
		bounded(x.termination, sizeof(x.termination));
	if (rp_keeper_read(dirfd_, &pid, start, sizeof(start), &cpid,
	    cstart, sizeof(cstart)) == 0) {
		bounded(start, sizeof(start));
		bounded(cstart, sizeof(cstart));
	}
	return 0;
}
