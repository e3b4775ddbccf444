// SPDX-License-Identifier: MIT
/*
 * spin: a guest workload the host profiles (tests/integration/linux/linux-boot.sh,
 * pvinit.work=profile in tests/integration/linux-initramfs.sh). Names itself NAME (its comm,
 * which the host's profile shows), then for SECONDS either spins in user mode at nice NICE,
 * or, with "sys" for NICE, reads a byte of /dev/zero and writes it to /dev/null in a loop (all
 * its time in system calls). At the end it prints "spin NAME: N loops in S s" (bench/linuxprof.sh
 * compares N with and without profiling). Built static for the busybox initramfs.
 * Usage: spin NAME NICE|sys SECONDS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	volatile unsigned long n = 0;
	unsigned long loops = 0;
	double start, end;
	char c;
	int in, out;

	if (argc != 4) {
		fprintf(stderr, "usage: spin NAME NICE|sys SECONDS\n");
		return 2;
	}
	prctl(PR_SET_NAME, argv[1]);
	start = now();
	end = start + atof(argv[3]);
	if (strcmp(argv[2], "sys")) {
		if (setpriority(PRIO_PROCESS, 0, atoi(argv[2])) < 0)
			perror("spin: setpriority");
		for (; now() < end; loops++)
			for (int i = 0; i < 100000; i++)
				n++;
		printf("spin %s: %lu loops in %.2f s\n", argv[1], loops, now() - start);
		return 0;
	}
	in = open("/dev/zero", O_RDONLY);
	out = open("/dev/null", O_WRONLY);
	if (in < 0 || out < 0) {
		perror("spin: /dev/zero, /dev/null");
		return 1;
	}
	for (; now() < end; loops++)
		for (int i = 0; i < 1000; i++)
			if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1)
				return 1;
	printf("spin %s: %lu loops in %.2f s\n", argv[1], loops, now() - start);
	return 0;
}
