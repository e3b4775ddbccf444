// SPDX-License-Identifier: MIT
/*
 * Unit tests for the snapshot's files (snapfile/snapio.c): guest memory
 * written and read back through io_uring and through plain pwrite/pread,
 * with the checksum of every byte, holes kept holes (a memfd's, and a
 * file's), the hash of a file agreeing with the write's; the directory
 * written atomically (nothing visible before the rename, nothing left
 * behind by an abort), and its refusals; whole-file reads with a limit.
 */
#include "snapfile/snapfile.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEN (4u << 20)

static char dir[64];

static void mkroot(void)
{
	snprintf(dir, sizeof(dir), "/tmp/pvsnapio.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void rmroot(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(snapio, .init = mkroot, .fini = rmroot);

/* Guest RAM as a memfd with data in two places and holes elsewhere. */
static uint8_t *guest_ram(int *fd)
{
	uint8_t *p;

	*fd = memfd_create("ram", MFD_CLOEXEC);
	cr_assert_geq(*fd, 0);
	cr_assert_eq(ftruncate(*fd, LEN), 0);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	for (unsigned i = 0; i < 8192; i++)
		p[4096 + i] = (uint8_t)(i * 7 + 1);
	memcpy(p + LEN - 4096, "the last page", 13);
	return p;
}

static uint64_t blocks_of(int fd)
{
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* Written and read back, both ways; the file is sparse and every checksum agrees. */
static void round_trip(bool plain)
{
	char path[128];
	int mfd, fd;
	uint8_t *ram = guest_ram(&mfd), *back;
	uint64_t sum_w = 0, sum_r = 0, sum_f = 0;
	bool uring;

	if (plain)
		setenv("PERFVISOR_SNAPSHOT_IO", "plain", 1);
	snprintf(path, sizeof(path), "%s/memory", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(snapio_memory(fd, ram, LEN, true, mfd, false, &sum_w, &uring), 0);
	if (plain)
		cr_assert(!uring, "PERFVISOR_SNAPSHOT_IO=plain, but io_uring was used");
	else if (!uring)
		cr_log_warn("io_uring is unavailable on this host: its fallback was tested twice");
	cr_assert_eq(sum_w, snap_hash(ram, LEN), "the checksum is not of every byte");
	cr_assert_lt(blocks_of(fd), LEN / 4, "holes were written: %llu bytes on disk",
		     (unsigned long long)blocks_of(fd));
	cr_assert_eq(snapio_hash_file(fd, LEN, &sum_f), 0);
	cr_assert_eq(sum_f, sum_w);
	back = calloc(1, LEN);
	cr_assert(back);
	cr_assert_eq(snapio_memory(fd, back, LEN, false, fd, false, &sum_r, &uring), 0);
	cr_assert_eq(sum_r, sum_w);
	cr_assert_eq(memcmp(back, ram, LEN), 0);
	close(fd);
	free(back);
	munmap(ram, LEN);
	close(mfd);
	unsetenv("PERFVISOR_SNAPSHOT_IO");
}

Test(snapio, memory_round_trip_with_io_uring)
{
	round_trip(false);
}

Test(snapio, memory_round_trip_with_pwrite_and_pread)
{
	round_trip(true);
}

/* A short file reads as an error, never as zeros. */
Test(snapio, a_short_memory_file_is_an_error)
{
	char path[128];
	uint8_t *buf = calloc(1, LEN);
	bool uring;
	int fd;

	snprintf(path, sizeof(path), "%s/short", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	cr_assert(fd >= 0 && buf);
	cr_assert_eq(write(fd, "abc", 3), 3);
	setenv("PERFVISOR_SNAPSHOT_IO", "plain", 1);
	cr_assert_eq(snapio_memory(fd, buf, LEN, false, -1, false, NULL, &uring), -EIO);
	unsetenv("PERFVISOR_SNAPSHOT_IO");
	close(fd);
	free(buf);
}

Test(snapio, directory_appears_whole_or_not_at_all)
{
	char target[128], path[256];
	struct snapio_dir d;
	struct errbuf err;
	struct stat st;
	uint64_t sum;
	int mfd;
	uint8_t *ram = guest_ram(&mfd);

	snprintf(target, sizeof(target), "%s/snap", dir);
	cr_assert_eq(snapio_begin(&d, target, &err), 0, "%s", err.msg);
	cr_assert_neq(stat(target, &st), 0, "the directory is visible before it is finished");
	cr_assert_eq(snapio_write_memory(&d, ram, LEN, mfd, false, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(snapio_finish(&d, "state", 5, &err), 0, "%s", err.msg);
	snapio_abort(&d); /* after finish: changes nothing */
	snprintf(path, sizeof(path), "%s/%s", target, SNAP_STATE_FILE);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 5);
	snprintf(path, sizeof(path), "%s/%s", target, SNAP_MEMORY_FILE);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, LEN);
	/* The same name again is refused; a name whose parent is missing too. */
	cr_assert_eq(snapio_begin(&d, target, &err), -EEXIST);
	cr_assert(strstr(err.msg, "already exists"), "%s", err.msg);
	snprintf(path, sizeof(path), "%s/no/such", dir);
	cr_assert_eq(snapio_begin(&d, path, &err), -ENOENT);
	cr_assert(strstr(err.msg, "does not exist"), "%s", err.msg);
	cr_assert_eq(snapio_begin(&d, "..", &err), -EINVAL);
	munmap(ram, LEN);
	close(mfd);
}

Test(snapio, abort_leaves_nothing)
{
	char target[128], cmd[256];
	struct snapio_dir d;
	struct errbuf err;
	uint64_t sum;
	int mfd;
	uint8_t *ram = guest_ram(&mfd);

	snprintf(target, sizeof(target), "%s/half", dir);
	cr_assert_eq(snapio_begin(&d, target, &err), 0, "%s", err.msg);
	cr_assert_eq(snapio_write_memory(&d, ram, LEN, mfd, false, &sum, &err), 0, "%s", err.msg);
	snapio_abort(&d);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", dir);
	cr_assert_eq(system(cmd), 0, "an aborted snapshot left something in %s", dir);
	munmap(ram, LEN);
	close(mfd);
}

Test(snapio, read_file_has_a_limit)
{
	char path[128];
	struct errbuf err;
	void *buf = NULL;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fputs("0123456789", f);
	fclose(f);
	cr_assert_eq(snapio_read_file(path, 10, &buf, &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, 10);
	cr_assert_eq(memcmp(buf, "0123456789", 10), 0);
	free(buf);
	cr_assert_lt(snapio_read_file(path, 9, &buf, &len, &err), 0, "a file over the limit was read");
	snprintf(path, sizeof(path), "%s/none", dir);
	cr_assert_eq(snapio_read_file(path, 10, &buf, &len, &err), -ENOENT);
}
