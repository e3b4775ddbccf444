// SPDX-License-Identifier: MIT
/*
 * Unit tests for the kernel cache (machine/kcache.c): a vmlinux kept and
 * mapped back byte for byte; a file cut short, with a wrong checksum, or
 * not a file this code wrote is removed; one larger than the guest is kept
 * and refused; a directory or a symbolic link in a file's place is refused
 * without being followed; and a cached vmlinux handed to the loader but not
 * used goes back through the release function it came with.
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEN 100000

static char dir[64], path[4200], why[600];
static uint8_t data[LEN];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/pv-kcache.XXXXXX");
	cr_assert(mkdtemp(dir));
	for (size_t i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	snprintf(path, sizeof(path), "%s/vmlinux-test", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static int get(uint64_t cap, void **p, size_t *n)
{
	return kcache_get(dir, "vmlinux-test", cap, p, n, why, sizeof(why));
}

TestSuite(kcache, .init = setup, .fini = teardown);

Test(kcache, kept_then_mapped_back_whole)
{
	void *p;
	size_t n;

	cr_assert_eq(get(1 << 20, &p, &n), -ENOENT);
	cr_assert_str_eq(why, "not in the cache");
	cr_assert_eq(kcache_put(dir, "vmlinux-test", data, LEN, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(get(1 << 20, &p, &n), 0, "%s", why);
	cr_assert_eq(n, LEN);
	cr_assert_eq(memcmp(p, data, LEN), 0, "the same bytes");
	cr_assert(strstr(why, "read from the kernel cache"), "%s", why);
	kcache_release(p, n);
	cr_assert_eq(get(1 << 20, &p, &n), 0, "a second hit: %s", why);
	cr_assert_eq(memcmp(p, data, LEN), 0);
	kcache_release(p, n);
}

/* Damage the kept file with f, then: it is not used, and it is gone. */
static void damaged(void (*f)(int fd))
{
	void *p = (void *)1;
	size_t n = 1;
	int fd;

	cr_assert_eq(kcache_put(dir, "vmlinux-test", data, LEN, why, sizeof(why)), 0, "%s", why);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	f(fd);
	close(fd);
	cr_assert_eq(get(1 << 20, &p, &n), -ENOENT);
	cr_assert_null(p);
	cr_assert_eq(n, 0);
	cr_assert(strstr(why, "was damaged (removed)"), "%s", why);
	cr_assert_eq(access(path, F_OK), -1, "a damaged file is removed");
}

static void cut_short(int fd)
{
	cr_assert_eq(ftruncate(fd, LEN / 2), 0);
}

static void flip_a_byte(int fd)
{
	uint8_t b = data[LEN / 3] ^ 1;

	cr_assert_eq(pwrite(fd, &b, 1, LEN / 3), 1);
}

static void too_short_for_a_trailer(int fd)
{
	cr_assert_eq(ftruncate(fd, 8), 0);
}

static void not_ours(int fd)
{
	cr_assert_eq(pwrite(fd, "NOTCACHE", 8, LEN), 8); /* the trailer's magic */
}

Test(kcache, a_file_cut_short_is_removed)
{
	damaged(cut_short);
}

Test(kcache, a_wrong_checksum_is_removed)
{
	damaged(flip_a_byte);
}

Test(kcache, a_file_without_a_trailer_is_removed)
{
	damaged(too_short_for_a_trailer);
}

Test(kcache, a_file_of_another_kind_is_removed)
{
	damaged(not_ours);
}

Test(kcache, larger_than_the_guest_is_kept_and_refused)
{
	void *p;
	size_t n;

	cr_assert_eq(kcache_put(dir, "vmlinux-test", data, LEN, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(get(LEN / 2, &p, &n), -ENOENT);
	cr_assert(strstr(why, "is larger than guest memory"), "%s", why);
	cr_assert_eq(access(path, F_OK), 0, "kept for a larger guest");
	cr_assert_eq(get(1 << 20, &p, &n), 0, "%s", why);
	kcache_release(p, n);
}

Test(kcache, a_directory_or_a_link_in_its_place_is_refused)
{
	char target[4300];
	void *p;
	size_t n;

	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(get(1 << 20, &p, &n), -ENOENT);
	cr_assert(strstr(why, "decoding again"), "%s", why);
	cr_assert_eq(rmdir(path), 0);
	/* A link to a good cache file elsewhere: not followed. */
	cr_assert_eq(kcache_put(dir, "vmlinux-real", data, LEN, why, sizeof(why)), 0, "%s", why);
	snprintf(target, sizeof(target), "%s/vmlinux-real", dir);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(get(1 << 20, &p, &n), -ENOENT);
	cr_assert(strstr(why, "decoding again"), "%s", why);
}

Test(kcache, no_directory_yet)
{
	void *p;
	size_t n;

	teardown();
	cr_assert_eq(get(1 << 20, &p, &n), -ENOENT);
	cr_assert(strstr(why, "no cache yet"), "%s", why);
	cr_assert_eq(mkdir(dir, 0700), 0);
}

static unsigned released;
static void count_release(void *p, size_t len)
{
	released++;
	kcache_release(p, len);
}

Test(kcache, a_cached_vmlinux_the_loader_does_not_use_goes_back_through_its_release)
{
	static const uint8_t not_a_bzimage[4096];
	struct loader_linux lx;
	struct errbuf err;
	void *p;
	size_t n;

	cr_assert_eq(kcache_put(dir, "vmlinux-test", data, LEN, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(get(1 << 20, &p, &n), 0, "%s", why);
	cr_assert_neq(loader_load_linux_with(not_a_bzimage, sizeof(not_a_bzimage), NULL,
					     LOADER_DECOMPRESS_AUTO, p, n, count_release, &lx, &err),
		      0);
	cr_assert_eq(released, 1, "released once, through kcache_release, not free()");
	loader_vmlinux_release(NULL, 0, count_release);
	cr_assert_eq(released, 1, "NULL is nothing to release");
}
