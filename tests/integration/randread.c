// SPDX-License-Identifier: MIT
/*
 * randread: random 4 KiB reads of a block device with O_DIRECT at a given
 * queue depth, for the disk benchmark inside a Linux guest (bench/disk.sh,
 * pvinit=diskbench in tests/integration/linux-initramfs.sh). QD threads
 * each keep one read in flight (pread), so the device sees up to QD
 * requests at once; the offsets are 4 KiB blocks of the first MIB MiB from
 * a fixed seed per thread, the same in every run. Built static, so the
 * guest's busybox initramfs needs no libraries. (fio is the usual tool, but
 * Debian's brings some 120 MB of libraries, more than the initramfs holds.)
 * Usage: randread DEVICE MIB COUNT QD
 * Prints "randread QD COUNT SECONDS" (CLOCK_MONOTONIC) and exits 0, or one
 * line saying what failed and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096u
#define MAX_QD 256u

static int fd;
static uint64_t blocks;
static unsigned long per_thread;

struct worker {
	pthread_t t;
	unsigned id;
	int err; /* the first errno, 0 if every read succeeded */
	unsigned long done;
};

/* xorshift64*: a fixed sequence per thread, no shared state. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (w->id + 1);
	void *buf;

	if (posix_memalign(&buf, BLOCK, BLOCK)) {
		w->err = ENOMEM;
		return NULL;
	}
	for (unsigned long i = 0; i < per_thread; i++) {
		off_t off = (off_t)(next(&seed) % blocks) * BLOCK;
		ssize_t n = pread(fd, buf, BLOCK, off);

		if (n != (ssize_t)BLOCK) {
			w->err = n < 0 ? errno : EIO;
			break;
		}
		w->done++;
	}
	free(buf);
	return NULL;
}

static unsigned long number(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || !v || v > max) {
		fprintf(stderr, "randread: %s must be a number from 1 to %lu, not '%s'\n", what, max, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_QD];
	struct timespec t0, t1;
	unsigned long count, qd, done = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: randread DEVICE MIB COUNT QD\n");
		return 2;
	}
	blocks = number(argv[2], "MIB", 1ul << 30) * (1048576 / BLOCK);
	count = number(argv[3], "COUNT", 100000000);
	qd = number(argv[4], "QD", MAX_QD);
	per_thread = (count + qd - 1) / qd;
	fd = open(argv[1], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		printf("randread failed: open %s with O_DIRECT: %s\n", argv[1], strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < qd; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].t, NULL, run, &w[i])) {
			printf("randread failed: cannot start thread %u\n", i);
			return 1;
		}
	}
	for (unsigned i = 0; i < qd; i++) {
		pthread_join(w[i].t, NULL);
		done += w[i].done;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (unsigned i = 0; i < qd; i++)
		if (w[i].err) {
			printf("randread failed: %lu of %lu reads done; thread %u: %s\n", done,
			       per_thread * qd, i, strerror(w[i].err));
			return 1;
		}
	printf("randread %lu %lu %.6f\n", qd, done,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
