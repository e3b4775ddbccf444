// SPDX-License-Identifier: MIT
/*
 * The workloads `perf` runs inside a Linux guest in the guest-perf tests
 * (tests/integration/linux/linux-perf.sh, docs/guest-perf.md), linked static
 * into the test's root file system (tests/integration/linux-perfdisk.sh):
 *
 *   perfwork io N         N one-byte port writes (ioperm + outb) to port 0x87, a port
 *                         perfvisor answers as absent hardware (devices/absent.c):
 *                         exactly N port I/O exits; it prints nothing (a console
 *                         write is port I/O too, in the task's own time)
 *   perfwork io-for SECONDS FILE
 *                         one-byte writes to port 0x87 through /dev/port (the kernel's outb on
 *                         the task's behalf: one port I/O exit each) for SECONDS of wall time,
 *                         then writes how many to FILE (a snapshot taken meanwhile must not
 *                         change what perf counts). Not ioperm: QEMU's TCG, the test host's CPU,
 *                         refuses a ring-3 OUT once a restore has handed KVM the TSS as busy
 *                         (type 11, which real CPUs accept), so the restored program would #GP.
 *   perfwork rounds N     N rounds of the spin loop's work; prints the wall time and CPU time
 *                         it took, in ns (bench/guestperf.sh: the same work with and without perf)
 *   perfwork spin SECONDS CPU-bound in ring 3 for SECONDS of its own CPU time; prints
 *                         the CPU time it measured (CLOCK_THREAD_CPUTIME_ID), in ns
 *   perfwork split SECONDS two functions, heavy() and light(), called so that heavy
 *                         takes 3 parts of the time and light 1 (by work, not by
 *                         clock: 3:1 instructions); a sampling profile sees 75:25
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#define PORT 0x87

static volatile uint64_t sink;

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* The same loop body in both, so the 3:1 split is of the same instructions. */
static __attribute__((noinline)) void work(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

/*
 * heavy and light are leaves; gcc gives a leaf no frame pointer unless it has a stack frame
 * (-fno-omit-frame-pointer notwithstanding), and a frame-pointer walk from a leaf without one
 * skips its caller. The volatile accumulator lives on the stack: both get a frame, so perf's
 * call chains run heavy -> main. The same loop, 3 times as long in heavy.
 */
static __attribute__((noinline)) void heavy(void)
{
	volatile uint64_t x = sink;

	for (uint64_t j = 0; j < 300000; j++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

static __attribute__((noinline)) void light(void)
{
	volatile uint64_t x = sink;

	for (uint64_t j = 0; j < 100000; j++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "io")) {
		long n = atol(argv[2]);

		if (ioperm(PORT, 1, 1)) {
			perror("perfwork: ioperm");
			return 1;
		}
		for (long i = 0; i < n; i++)
			outb((unsigned char)i, PORT);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "io-for")) {
		uint64_t until = (uint64_t)(atof(argv[2]) * 1e9), t0 = clock_ns(CLOCK_MONOTONIC), n = 0;
		int fd = open("/dev/port", O_WRONLY);
		unsigned char b = 0;
		FILE *f;

		if (fd < 0) {
			perror("perfwork: /dev/port");
			return 1;
		}
		while (clock_ns(CLOCK_MONOTONIC) - t0 < until) {
			for (int i = 0; i < 100; i++)
				if (pwrite(fd, &b, 1, PORT) != 1) {
					perror("perfwork: /dev/port");
					return 1;
				}
			n += 100;
		}
		f = fopen(argv[3], "w");
		if (!f || fprintf(f, "%llu\n", (unsigned long long)n) < 0 || fclose(f)) {
			perror("perfwork: io-for");
			return 1;
		}
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "rounds")) {
		uint64_t n = (uint64_t)atoll(argv[2]), w0 = clock_ns(CLOCK_MONOTONIC), c0 = cpu_ns();

		for (uint64_t i = 0; i < n; i++)
			work(100000);
		printf("perfwork: rounds: %llu rounds, wall_ns %llu, cpu_ns %llu\n", (unsigned long long)n,
		       (unsigned long long)(clock_ns(CLOCK_MONOTONIC) - w0),
		       (unsigned long long)(cpu_ns() - c0));
		return 0;
	}
	if (argc == 3 && (!strcmp(argv[1], "spin") || !strcmp(argv[1], "split"))) {
		uint64_t until = (uint64_t)(atof(argv[2]) * 1e9), t0 = cpu_ns(), rounds = 0;
		int split = !strcmp(argv[1], "split");

		while (cpu_ns() - t0 < until) {
			if (split) {
				heavy();
				light();
			} else
				work(100000);
			rounds++;
		}
		printf("perfwork: %s: %llu rounds, cpu_ns %llu\n", argv[1], (unsigned long long)rounds,
		       (unsigned long long)(cpu_ns() - t0));
		return 0;
	}
	fprintf(stderr,
		"usage: perfwork io N | io-for SECONDS FILE | rounds N | spin SECONDS | split SECONDS\n");
	return 2;
}
