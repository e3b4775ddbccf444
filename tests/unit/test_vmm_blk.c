// SPDX-License-Identifier: MIT
/*
 * Unit tests for a disk's host side (vmm/vm_blk.c) without KVM: the
 * image's checks and their one-line errors, the lock that keeps a second
 * writer out, the capacity, and the io_uring engine doing real reads,
 * writes and a flush on a temporary image.
 */
#include "vmm/vm_blk.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static char dir[] = "/tmp/pv-blk-XXXXXX";
static char img[256];
static struct errbuf err;

static void setup(void)
{
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/disk.img", dir);
	fd = open(img, O_CREAT | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 64 * 512 + 100), 0, "not a multiple of 512");
	close(fd);
	memset(&err, 0, sizeof(err));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	strcpy(dir, "/tmp/pv-blk-XXXXXX");
}

TestSuite(vm_blk, .init = setup, .fini = teardown);

#define has(s) cr_assert(strstr(err.msg, (s)), "message '%s' lacks '%s'", err.msg, (s))

Test(vm_blk, bad_images)
{
	struct vm_blk *b;
	char p[300];

	snprintf(p, sizeof(p), "%s/missing.img", dir);
	cr_assert_eq(vm_blk_open(&b, p, false, false, &err), -ENOENT);
	has("missing.img: no such file");
	cr_assert_eq(vm_blk_open(&b, dir, false, false, &err), -EISDIR);
	has("is a directory");
	cr_assert_lt(vm_blk_open(&b, "/dev/null", false, false, &err), 0);
	has("is not a regular file or a block device");
	snprintf(p, sizeof(p), "%s/empty.img", dir);
	close(open(p, O_CREAT | O_RDWR, 0600));
	cr_assert_eq(vm_blk_open(&b, p, false, false, &err), -EINVAL);
	has("holds no whole 512-byte sector");
	cr_assert_null(b);
}

Test(vm_blk, lock)
{
	struct vm_blk *a, *b, *c, *d;

	cr_assert_eq(vm_blk_open(&a, img, false, false, &err), 0, "%s", err.msg);
	cr_assert_eq(vm_blk_open(&b, img, false, false, &err), -EWOULDBLOCK);
	has("is in use");
	cr_assert_eq(vm_blk_open(&b, img, true, false, &err), -EWOULDBLOCK, "no reader beside a writer");
	vm_blk_destroy(a);
	cr_assert_eq(vm_blk_open(&c, img, true, false, &err), 0, "%s", err.msg);
	cr_assert_eq(vm_blk_open(&d, img, true, false, &err), 0, "readers share: %s", err.msg);
	cr_assert_eq(vm_blk_open(&b, img, false, false, &err), -EWOULDBLOCK, "no writer beside readers");
	vm_blk_destroy(c);
	vm_blk_destroy(d);
}

Test(vm_blk, params_and_io)
{
	struct vm_blk *b;
	struct virtio_blk_params p;
	uint8_t buf[1024], back[1024];
	struct iovec iov[2] = { { buf, 512 }, { buf + 512, 512 } }, iov2 = { back, 1024 };
	uint64_t tags[8];
	int64_t res[8];
	unsigned n = 0, left = 1;

	cr_assert_eq(vm_blk_open(&b, img, false, false, &err), 0, "%s", err.msg);
	vm_blk_params(b, &p);
	cr_assert_eq(p.sectors, 64, "rounded down");
	cr_assert_not(p.readonly);
	cr_assert_eq(memcmp(p.serial, "disk.img", 9), 0);
	cr_assert_geq(vm_blk_eventfd(b), 0);
	cr_assert(strchr(vm_blk_path(b), '/') == vm_blk_path(b), "absolute");
	memset(buf, 0x3c, sizeof(buf));
	cr_assert_eq(
		p.engine.submit(p.engine.opaque, &(struct blk_io){ BLK_OP_WRITE, iov, 2, 4096, 1024, 7 }), 0);
	vm_blk_kick(b);
	for (int k = 0; k < 50 && !n; k++)
		n = vm_blk_reap(b, tags, res, 8, 100, &left);
	cr_assert_eq(n, 1);
	cr_assert_eq(tags[0], 7);
	cr_assert_eq(res[0], 1024);
	cr_assert_eq(p.engine.submit(p.engine.opaque, &(struct blk_io){ BLK_OP_FLUSH, NULL, 0, 0, 0, 8 }), 0);
	cr_assert_eq(
		p.engine.submit(p.engine.opaque, &(struct blk_io){ BLK_OP_READ, &iov2, 1, 4096, 1024, 9 }),
		0);
	vm_blk_kick(b);
	n = 0;
	for (int k = 0; k < 50 && n < 2; k++)
		n += vm_blk_reap(b, tags + n, res + n, 8 - n, 100, &left);
	cr_assert_eq(n, 2);
	cr_assert_eq(left, 0);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(res[i], tags[i] == 8 ? 0 : 1024, "tag %lu res %ld", (unsigned long)tags[i],
			     (long)res[i]);
	cr_assert_eq(memcmp(back, buf, 1024), 0);
	vm_blk_destroy(b);
}

Test(vm_blk, readonly)
{
	struct vm_blk *b;
	struct virtio_blk_params p;

	cr_assert_eq(chmod(img, 0400), 0);
	if (geteuid() != 0) {
		cr_assert_lt(vm_blk_open(&b, img, false, false, &err), 0);
		has("no permission to open it for writing (readonly=on opens it read-only)");
	}
	cr_assert_eq(vm_blk_open(&b, img, true, false, &err), 0, "%s", err.msg);
	vm_blk_params(b, &p);
	cr_assert(p.readonly);
	cr_assert_not(p.discard, "no probing on a read-only image");
	vm_blk_destroy(b);
}

Test(vm_blk, ring_refuses_other_operations)
{
	struct vm_blk *b;
	struct virtio_blk_params p;
	struct blk_io bad = { (enum blk_op)99, NULL, 0, 0, 0, 1 };

	cr_assert_eq(vm_blk_open(&b, img, false, false, &err), 0, "%s", err.msg);
	vm_blk_params(b, &p);
	cr_assert_eq(p.engine.submit(p.engine.opaque, &bad), -EINVAL, "the engine prepares only its five");
	vm_blk_destroy(b);
}

Test(vm_blk, discard_through_the_ring)
{
	struct vm_blk *b;
	struct virtio_blk_params p;
	uint64_t tags[2];
	int64_t res[2];
	unsigned n = 0, left;

	cr_assert_eq(vm_blk_open(&b, img, false, false, &err), 0, "%s", err.msg);
	vm_blk_params(b, &p);
	if (!p.discard) {
		vm_blk_destroy(b);
		cr_skip_test("this file system punches no holes");
	}
	cr_assert_eq(
		p.engine.submit(p.engine.opaque, &(struct blk_io){ BLK_OP_DISCARD, NULL, 0, 0, 4096, 3 }), 0);
	vm_blk_kick(b);
	for (int k = 0; k < 50 && !n; k++)
		n = vm_blk_reap(b, tags, res, 2, 100, &left);
	cr_assert_eq(n, 1);
	cr_assert_eq(res[0], 0, "FALLOCATE is one of the ring's allowed operations (%ld)", (long)res[0]);
	vm_blk_destroy(b);
}
