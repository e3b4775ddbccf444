// SPDX-License-Identifier: MIT
/*
 * The kernel cache (docs/boot.md, "The kernel cache"): the vmlinux a
 * bzImage's payload decompresses to, kept in a directory under the
 * payload's XXH3, so that the next boot of the same kernel reads it back
 * instead of decoding it again (xz: about 1 s of CPU for Debian's kernel).
 *
 * A file is "vmlinux-KEY-LEN" (KEY: the payload's XXH3-64, LEN: its
 * length, both in hex): the vmlinux, then a trailer (magic, the vmlinux's
 * length and XXH3-64), read back whole by the loader's own reader. It is written to a temporary name and renamed, so a
 * reader sees it whole or not at all; a file whose length or checksum is
 * wrong is removed and the payload decoded again. At most KCACHE_KEEP
 * files stay: adding one removes the least recently used (a hit touches
 * its file). The cache only saves time: any failure to read or write it
 * leaves the boot to the decoder, with a reason for --verbose.
 */
#include "machine/machine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define KCACHE_MAGIC "PVKCACH1"
#define KCACHE_KEEP 4

/* After the vmlinux, so that the file read whole is the vmlinux the loader takes (and frees). */
struct kcache_trailer {
	char magic[8];
	uint64_t len;	/* the vmlinux's bytes, before this trailer */
	uint64_t xxh3;	/* XXH3-64 of those bytes */
	uint64_t spare; /* 0 */
};

void kcache_name(const void *payload, size_t payload_len, char *name, size_t size)
{
	snprintf(name, size, "vmlinux-%016" PRIx64 "-%zx", (uint64_t)XXH3_64bits(payload, payload_len),
		 payload_len);
}

static int write_full(int fd, const void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const uint8_t *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

void kcache_release(void *vmlinux, size_t len)
{
	if (vmlinux)
		munmap(vmlinux, len + sizeof(struct kcache_trailer));
}

/*
 * The cache file mapped read-only and populated at once: its pages are
 * the page cache's, so a hit costs no copy of the 66 MB and no page faults
 * of a buffer (reading it took three quarters of perfvisor's start-up of a
 * Debian kernel). The file is owner-only and replaced by rename, never
 * rewritten, so the mapping stays whole. 0 with *p and *n (the whole
 * file), or -errno (-E2BIG above max).
 */
static int map_file(const char *path, uint64_t max, uint8_t **p, size_t *n)
{
	struct errbuf e;
	size_t size;
	void *m;
	int fd, rc;

	*p = NULL;
	*n = 0;
	/* The loader's own checks: a regular file (a link is not followed), at most max bytes. */
	rc = loader_open_file(path, "kernel cache file", max, O_NOFOLLOW, &fd, &size, &e);
	if (rc)
		return rc;
	if (size <= sizeof(struct kcache_trailer))
		rc = -EBADMSG;
	if (!rc) {
		/* Read-only: a writable private mapping would be populated by copying every page. */
		m = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (m == MAP_FAILED)
			rc = -errno;
		else
			*p = m, *n = size;
	}
	close(fd);
	return rc;
}

int kcache_get(const char *dir, const char *name, uint64_t cap, void **vmlinux, size_t *len, char *why,
	       size_t whylen)
{
	struct kcache_trailer t;
	struct stat st;
	char path[4200];
	uint8_t *buf = NULL;
	size_t n = 0;
	int rc = stat(dir, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

	*vmlinux = NULL;
	*len = 0;
	if (rc) {
		snprintf(why, whylen, "no cache yet (%s: %s)", dir, strerror(rc));
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* A regular file, at most guest RAM (and the trailer). */
	rc = map_file(path, cap + sizeof(t), &buf, &n);
	if (rc == -ENOENT) {
		snprintf(why, whylen, "not in the cache");
		return -ENOENT;
	}
	if (!rc) {
		n -= sizeof(t);
		memcpy(&t, buf + n, sizeof(t));
		/* A wrong length or checksum: cut short, damaged, or not a file this code wrote. */
		if (memcmp(t.magic, KCACHE_MAGIC, sizeof(t.magic)) || t.len != n ||
		    XXH3_64bits(buf, n) != t.xxh3)
			rc = -EBADMSG;
	}
	if (rc) {
		kcache_release(buf, n);
		/* Damaged: removed, so the decoder's result replaces it. Too large: kept for a larger guest. */
		if (rc == -EBADMSG || rc == -EIO)
			unlink(path);
		snprintf(why, whylen, "%s %s: decoding again", path,
			 rc == -EBADMSG || rc == -EIO ? "was damaged (removed)"
			 : rc == -E2BIG		      ? "is larger than guest memory"
						      : strerror(-rc));
		return -ENOENT;
	}
	/* Recently used: the last to be removed. */
	utimensat(AT_FDCWD, path, NULL, 0);
	snprintf(why, whylen, "read from the kernel cache %s", path);
	*vmlinux = buf;
	*len = n;
	return 0;
}

/* Remove the least recently used files of the cache until fewer than KCACHE_KEEP are left. */
static void make_room(int dfd)
{
	for (;;) {
		DIR *d = fdopendir(dup(dfd));
		struct dirent *e;
		struct stat st;
		char oldest[256] = "";
		struct timespec t = { 0 };
		unsigned n = 0;

		if (!d)
			return;
		while ((e = readdir(d))) {
			if (strncmp(e->d_name, "vmlinux-", 8) || strchr(e->d_name, '.') ||
			    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
				continue;
			n++;
			if (!oldest[0] || st.st_mtim.tv_sec < t.tv_sec ||
			    (st.st_mtim.tv_sec == t.tv_sec && st.st_mtim.tv_nsec < t.tv_nsec)) {
				snprintf(oldest, sizeof(oldest), "%s", e->d_name);
				t = st.st_mtim;
			}
		}
		closedir(d);
		if (n < KCACHE_KEEP || unlinkat(dfd, oldest, 0) < 0)
			return;
	}
}

int kcache_put(const char *dir, const char *name, const void *vmlinux, size_t len, char *why, size_t whylen)
{
	struct kcache_trailer t = { .len = len, .xxh3 = XXH3_64bits(vmlinux, len) };
	char tmp[300];
	int dfd, fd, rc;

	memcpy(t.magic, KCACHE_MAGIC, sizeof(t.magic));
	/* The directory and its parents, owner-only where this makes them. */
	for (char *p = strchr(dir + 1, '/');; p = strchr(p + 1, '/')) {
		char part[4096];

		snprintf(part, sizeof(part), "%.*s", p ? (int)(p - dir) : (int)strlen(dir), dir);
		if (mkdir(part, 0700) < 0 && errno != EEXIST)
			break;
		if (!p)
			break;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(why, whylen, "not kept: the kernel cache %s: %s", dir, strerror(errno));
		return -errno;
	}
	make_room(dfd);
	snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	rc = fd < 0 ? -errno : write_full(fd, vmlinux, len);
	if (!rc)
		rc = write_full(fd, &t, sizeof(t));
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc) {
		unlinkat(dfd, tmp, 0);
		snprintf(why, whylen, "not kept: writing %s/%s: %s", dir, name, strerror(-rc));
	} else {
		snprintf(why, whylen, "kept in the kernel cache %s/%s", dir, name);
	}
	close(dfd);
	return rc;
}
