/*
 * bench/epoll-timeout.c: what an epoll_wait() timeout costs.  Two
 * processes ping-pong one byte over two pipes, each waiting in
 * epoll_wait(TIMEOUT_MS) before it reads; prints the round trip.  Run it
 * on one CPU with -1 (no timeout), a timeout shorter than the kernel's
 * clock tick, and a longer one:
 *
 *   make -C bench epoll-timeout
 *   for t in -1 2 20; do taskset 1 bench/epoll-timeout $t; done
 *
 * On the 2-vCPU VM of doc/PERFORMANCE.md (HZ 250: a 4 ms tick) the round
 * trip was 5.0 us with no timeout, 5.8 us at 20 ms and 8.5-8.8 us at 2 ms:
 * a timeout that is the vCPU's next timer event makes the kernel program
 * its timer device at each wait.  Why the audit batch waits 20 ms, not 2
 * (src/lib/audit.h).
 */
#include <sys/epoll.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS	200000

static double
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* ROUNDS times: wait for in (epoll_wait(tmo)), read a byte, write it to
 * out; the parent writes first. */
static void
pong(int in, int out, int tmo, int first)
{
	struct epoll_event ev = { .events = EPOLLIN }, got;
	char c = 'x';
	int ep, i;

	if ((ep = epoll_create1(0)) == -1 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, in, &ev) == -1) {
		perror("epoll");
		exit(1);
	}
	for (i = 0; i < ROUNDS; i++) {
		if (first && write(out, &c, 1) != 1)
			exit(1);
		if (epoll_wait(ep, &got, 1, tmo) != 1 || read(in, &c, 1) != 1)
			exit(1);
		if (!first && write(out, &c, 1) != 1)
			exit(1);
	}
}

int
main(int argc, char *argv[])
{
	int a[2], b[2], tmo;
	double t0;
	pid_t pid;

	if (argc != 2) {
		fprintf(stderr, "usage: epoll-timeout TIMEOUT_MS (-1: none)\n");
		return 2;
	}
	tmo = atoi(argv[1]);
	if (pipe(a) == -1 || pipe(b) == -1) {
		perror("pipe");
		return 1;
	}
	if ((pid = fork()) == -1) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		pong(a[0], b[1], tmo, 0);
		_exit(0);
	}
	t0 = now_ns();
	pong(b[0], a[1], tmo, 1);
	printf("timeout %d ms: %.2f us per round trip\n", tmo,
	    (now_ns() - t0) / ROUNDS / 1000);
	waitpid(pid, NULL, 0);
	return 0;
}
