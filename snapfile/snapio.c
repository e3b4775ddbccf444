// SPDX-License-Identifier: MIT
/*
 * Snapshot files on disk: guest memory written and read with io_uring
 * (liburing; plain pread/pwrite where the kernel refuses io_uring), the
 * memory checksum, and the atomic directory: everything goes into a
 * temporary directory next to the target, is fsync'ed, and is renamed
 * into place only when complete, so no half snapshot ever looks valid.
 */
#include "snapfile/snapfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define CHUNK (4U << 20) /* bytes per io_uring request */
#define DEPTH 8U	 /* requests in flight */

/* A range of the file (and of buf) that holds data; what lies between reads as zeros. */
struct extent {
	uint64_t off, len;
};

static int add_extent(struct extent **e, unsigned *n, unsigned *cap, uint64_t off, uint64_t len)
{
	if (*n && (*e)[*n - 1].off + (*e)[*n - 1].len == off) {
		(*e)[*n - 1].len += len; /* adjacent: one request stream */
		return 0;
	}
	if (*n == *cap) {
		struct extent *m = realloc(*e, (*cap *= 2) * sizeof(**e));

		if (!m)
			return -ENOMEM;
		*e = m;
	}
	(*e)[(*n)++] = (struct extent){ off, len };
	return 0;
}

/*
 * The data ranges of [0, len): from SEEK_DATA/SEEK_HOLE on seek_fd (a
 * memfd's pages never touched, a sparse file's holes are left out), plus,
 * with `resident`, every page of that mapping mincore() finds in memory
 * (a restored guest's copy-on-write RAM: pages it wrote are not in the
 * file's map). All of it when neither can tell. 0 or -ENOMEM.
 */
static int data_extents(int seek_fd, const void *resident, uint64_t len, struct extent **out, unsigned *n)
{
	uint64_t pages = (len + 4095) / 4096;
	unsigned cap = 64;
	struct extent *e = malloc(cap * sizeof(*e));
	unsigned char *map = NULL;
	off_t pos = 0;
	int rc = 0;

	*n = 0;
	*out = e;
	if (!e)
		return -ENOMEM;
	if (seek_fd < 0 && !resident)
		return len ? add_extent(out, n, &cap, 0, len) : 0;
	map = calloc(1, pages ? pages : 1);
	if (!map)
		return -ENOMEM;
	if (resident && mincore((void *)resident, len, map) < 0)
		memset(map, 1, pages);
	while (seek_fd >= 0 && (uint64_t)pos < len) {
		off_t data = lseek(seek_fd, pos, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		hole = data < 0 ? -1 : lseek(seek_fd, data, SEEK_HOLE);
		if (hole < 0) { /* no hole map: everything is data */
			memset(map, 1, pages);
			break;
		}
		for (uint64_t pg = (uint64_t)data / 4096; pg < pages && pg * 4096 < (uint64_t)hole; pg++)
			map[pg] = 1;
		pos = hole;
	}
	for (uint64_t pg = 0; pg < pages && !rc; pg++) {
		if (map[pg] & 1) {
			uint64_t off = pg * 4096;

			rc = add_extent(out, n, &cap, off, off + 4096 <= len ? 4096 : len - off);
		}
	}
	free(map);
	return rc;
}

/* The checksum is over every byte of [0, len): holes are fed in as zeros, in order. */
struct hcur {
	XXH3_state_t *st;
	uint64_t pos;
};

static void hcur_zeros(struct hcur *h, uint64_t to)
{
	static const uint8_t zeros[64 << 10];

	for (; h->st && h->pos < to;) {
		uint64_t n = to - h->pos < sizeof(zeros) ? to - h->pos : sizeof(zeros);

		XXH3_64bits_update(h->st, zeros, (size_t)n);
		h->pos += n;
	}
}

static void hcur_data(struct hcur *h, const uint8_t *buf, uint64_t off, uint64_t len)
{
	if (!h->st)
		return;
	hcur_zeros(h, off);
	XXH3_64bits_update(h->st, buf + off, (size_t)len);
	h->pos = off + len;
}

/*
 * How long ring_io waits for any completion before it calls the ring
 * stalled: a 4 MiB request takes milliseconds, but a lost completion
 * (seen once on a 6.18 host: two writes queued, no io-wq worker, no CQE)
 * would block the main thread, deaf to signals, for ever.
 * PERFVISOR_SNAPSHOT_IO_STALL_MS overrides it (0 makes the test suite
 * walk the stall path).
 */
#define STALL_MS 10000L

static long stall_ms(void)
{
	const char *e = getenv("PERFVISOR_SNAPSHOT_IO_STALL_MS");

	return e && *e ? strtol(e, NULL, 10) : STALL_MS;
}

/*
 * A stalled ring: cancel everything and wait (bounded) until nothing is
 * in flight. -ETIMEDOUT means the caller may use plain I/O on fd, since no
 * request can touch buf or fd any more; -EIO means some could still, so
 * the snapshot must fail (its files are removed; a late write lands in an
 * unlinked file).
 */
static int ring_stalled(struct io_uring *ring, unsigned *inflight)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct __kernel_timespec ts = { .tv_sec = 1 };

	if (sqe) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, UINT64_MAX); /* the cancel's own CQE */
		(*inflight)++;
		io_uring_submit(ring);
	}
	while (*inflight) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) < 0)
			return -EIO;
		io_uring_cqe_seen(ring, cqe);
		(*inflight)--;
	}
	return -ETIMEDOUT;
}

/*
 * Move the extents between buf and fd, in CHUNK requests, DEPTH in flight.
 * A short transfer is an error: on a regular file the disk is full
 * (write) or the file is short (read). Writes are hashed as they are
 * submitted (the kernel only reads buf meanwhile); reads once complete.
 */
static int ring_io(int fd, uint8_t *buf, const struct extent *ext, unsigned n, bool write, struct hcur *h)
{
	struct io_uring ring;
	unsigned inflight = 0, i = 0;
	uint64_t at = n ? ext[0].off : 0; /* next byte to submit, inside ext[i] */
	long stall = stall_ms();
	struct __kernel_timespec ts = { .tv_sec = stall / 1000, .tv_nsec = stall % 1000 * 1000000 };
	int rc = io_uring_queue_init(DEPTH, &ring, 0);

	if (rc < 0)
		return rc;
	while ((i < n || inflight) && rc >= 0) {
		struct io_uring_cqe *cqe;

		while (inflight < DEPTH && i < n) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			uint64_t end = ext[i].off + ext[i].len;
			uint32_t len = end - at < CHUNK ? (uint32_t)(end - at) : CHUNK;

			if (!sqe)
				break;
			if (write)
				io_uring_prep_write(sqe, fd, buf + at, len, at);
			else
				io_uring_prep_read(sqe, fd, buf + at, len, at);
			io_uring_sqe_set_data64(sqe, len);
			inflight++;
			if (write)
				hcur_data(h, buf, at, len);
			at += len;
			if (at == end && ++i < n)
				at = ext[i].off;
		}
		rc = io_uring_submit(&ring);
		if (rc < 0)
			break;
		rc = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (rc == -ETIME) {
			rc = ring_stalled(&ring, &inflight);
			break;
		}
		if (rc < 0)
			break;
		/* Reap what has completed (at least one). */
		while (rc >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0 && cqe) {
			int res = cqe->res;

			rc = res < 0					     ? res
			     : (uint64_t)res != io_uring_cqe_get_data64(cqe) ? (write ? -ENOSPC : -EIO)
									     : 0;
			io_uring_cqe_seen(&ring, cqe);
			inflight--;
		}
	}
	/* After an error, wait out what is still in flight: it points into buf. */
	while (inflight && rc != -EIO) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec one = { .tv_sec = stall / 1000 + 1 };

		if (io_uring_wait_cqe_timeout(&ring, &cqe, &one) < 0) {
			rc = ring_stalled(&ring, &inflight) == -ETIMEDOUT ? rc : -EIO;
			break;
		}
		io_uring_cqe_seen(&ring, cqe);
		inflight--;
	}
	io_uring_queue_exit(&ring);
	return rc < 0 ? rc : 0;
}

/* The same with pread/pwrite, for kernels without (or refusing) io_uring. */
static int plain_io(int fd, uint8_t *buf, const struct extent *ext, unsigned n, bool write, struct hcur *h)
{
	for (unsigned i = 0; i < n; i++) {
		for (uint64_t off = ext[i].off, end = off + ext[i].len; off < end;) {
			size_t len = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
			ssize_t r = write ? pwrite(fd, buf + off, len, (off_t)off)
					  : pread(fd, buf + off, len, (off_t)off);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (r == 0)
				return write ? -ENOSPC : -EIO;
			if (write)
				hcur_data(h, buf, off, (uint64_t)r);
			off += (uint64_t)r;
		}
	}
	return 0;
}

int snapio_memory(int fd, void *buf, uint64_t len, bool write, int seek_fd, bool resident, uint64_t *checksum,
		  bool *used_uring)
{
	struct hcur h = { checksum ? XXH3_createState() : NULL, 0 };
	struct extent *ext = NULL;
	unsigned n = 0;
	int rc;

	if (checksum && !h.st)
		return -ENOMEM;
	if (h.st)
		XXH3_64bits_reset(h.st);
	rc = data_extents(seek_fd, resident ? buf : NULL, len, &ext, &n);
	/* The file is as long as the RAM, holes and all. */
	if (!rc && write && ftruncate(fd, (off_t)len) < 0)
		rc = -errno;
	/* PERFVISOR_SNAPSHOT_IO=plain forces the fallback (it is tested, like the io_uring path). */
	*used_uring = !(getenv("PERFVISOR_SNAPSHOT_IO") && !strcmp(getenv("PERFVISOR_SNAPSHOT_IO"), "plain"));
	if (!rc && *used_uring) {
		rc = ring_io(fd, buf, ext, n, write, &h);
		/* io_uring missing, forbidden (kernel.io_uring_disabled) or stalled: plain I/O. */
		if (rc == -ETIMEDOUT)
			fprintf(stderr,
				"perfvisor: snapshot: io_uring made no progress in %ld ms; using %s instead\n",
				stall_ms(), write ? "pwrite" : "pread");
		*used_uring = rc != -ENOSYS && rc != -EPERM && rc != -EOPNOTSUPP && rc != -ETIMEDOUT;
		if (!*used_uring) {
			rc = 0;
			if (h.st) {
				XXH3_64bits_reset(h.st);
				h.pos = 0;
			}
		}
	}
	if (!rc && !*used_uring)
		rc = plain_io(fd, buf, ext, n, write, &h);
	if (!rc && h.st && !write)
		for (unsigned i = 0; i < n; i++)
			hcur_data(&h, buf, ext[i].off, ext[i].len);
	if (h.st) {
		hcur_zeros(&h, len);
		*checksum = XXH3_64bits_digest(h.st);
		XXH3_freeState(h.st);
	}
	free(ext);
	return rc;
}

int snapio_hash_file(int fd, uint64_t len, uint64_t *checksum)
{
	uint8_t *buf = malloc(CHUNK);
	struct hcur h = { XXH3_createState(), 0 };
	struct extent *ext = NULL;
	unsigned n = 0;
	int rc = buf && h.st ? data_extents(fd, NULL, len, &ext, &n) : -ENOMEM;

	if (h.st)
		XXH3_64bits_reset(h.st);
	/* Data ranges through a small buffer; holes hashed as zeros without reading them. */
	for (unsigned i = 0; i < n && !rc; i++) {
		for (uint64_t off = ext[i].off, end = off + ext[i].len; off < end && !rc;) {
			size_t want = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
			ssize_t r = pread(fd, buf, want, (off_t)off);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				rc = r < 0 ? -errno : -EIO;
				break;
			}
			hcur_zeros(&h, off);
			XXH3_64bits_update(h.st, buf, (size_t)r);
			off += (uint64_t)r;
			h.pos = off;
		}
	}
	if (!rc) {
		hcur_zeros(&h, len);
		*checksum = XXH3_64bits_digest(h.st);
	}
	XXH3_freeState(h.st);
	free(ext);
	free(buf);
	return rc;
}

int snapio_read_file(const char *path, size_t max, void **out, size_t *len, struct errbuf *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	uint8_t *buf;
	size_t got = 0;

	*out = NULL;
	if (fd < 0)
		return errbuf_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return errbuf_set(err, -EINVAL, "%s is not a regular file", path);
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return errbuf_set(err, -EFBIG, "%s is %lld bytes, more than the %zu a state file may have",
				  path, (long long)st.st_size, max);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return errbuf_set(err, -ENOMEM, "out of memory");
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*out = buf;
	*len = got;
	return 0;
}

/* Write all of buf to a new file `name` in dirfd, then fsync it. */
static int write_small(int dirfd, const char *name, const void *buf, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = 0;

	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && !rc;) {
		ssize_t r = write(fd, (const uint8_t *)buf + off, len - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			rc = r < 0 ? -errno : -ENOSPC;
		else
			off += (size_t)r;
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = -errno;
	close(fd);
	return rc;
}

/* Remove the temporary directory and what is in it (only our two files). */
static void remove_tmp(struct snapio_dir *d)
{
	unlinkat(d->dfd, SNAP_MEMORY_FILE, 0);
	unlinkat(d->dfd, SNAP_STATE_FILE, 0);
	close(d->dfd);
	d->dfd = -1;
	rmdir(d->tmp);
}

int snapio_begin(struct snapio_dir *d, const char *dir, struct errbuf *err)
{
	const char *slash = strrchr(dir, '/'), *base = slash ? slash + 1 : dir;
	struct stat st;

	memset(d, 0, sizeof(*d));
	d->dfd = -1;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || strlen(dir) >= sizeof(d->dir) - 32)
		return errbuf_set(err, -EINVAL, "snapshot: '%s' is not a directory name to create", dir);
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	if (slash)
		snprintf(d->parent, sizeof(d->parent), "%.*s", slash == dir ? 1 : (int)(slash - dir), dir);
	else
		snprintf(d->parent, sizeof(d->parent), ".");
	if (lstat(dir, &st) == 0)
		return errbuf_set(err, -EEXIST, "snapshot: %s already exists (remove it or choose another)",
				  dir);
	if (stat(d->parent, &st) < 0 || !S_ISDIR(st.st_mode))
		return errbuf_set(err, -ENOENT, "snapshot: the directory %s does not exist", d->parent);
	snprintf(d->tmp, sizeof(d->tmp), "%s/.%s.tmp-XXXXXX", d->parent, base);
	if (!mkdtemp(d->tmp))
		return errbuf_set(err, -errno, "snapshot: cannot create a directory in %s: %s", d->parent,
				  strerror(errno));
	d->dfd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dfd < 0) {
		int rc = errbuf_set(err, -errno, "snapshot: %s: %s", d->tmp, strerror(errno));

		rmdir(d->tmp);
		return rc;
	}
	return 0;
}

int snapio_write_memory(struct snapio_dir *d, const void *mem, uint64_t len, int seek_fd, bool resident,
			uint64_t *checksum, struct errbuf *err)
{
	uint64_t t0 = util_now_ns();
	int fd = openat(d->dfd, SNAP_MEMORY_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc;

	if (fd < 0)
		return errbuf_set(err, -errno, "snapshot: cannot create the memory file: %s",
				  strerror(errno));
	rc = snapio_memory(fd, (void *)mem, len, true, seek_fd, resident, checksum, &d->used_uring);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	d->memory_ns = util_now_ns() - t0;
	if (rc)
		return errbuf_set(err, rc, "snapshot: writing guest memory (%llu MiB) in %s: %s",
				  (unsigned long long)(len >> 20), d->parent, strerror(-rc));
	return 0;
}

int snapio_finish(struct snapio_dir *d, const void *state, size_t state_len, struct errbuf *err)
{
	int rc = write_small(d->dfd, SNAP_STATE_FILE, state, state_len);

	if (!rc && fsync(d->dfd) < 0)
		rc = -errno;
	if (rc)
		return errbuf_set(err, rc, "snapshot: writing the state file in %s: %s", d->parent,
				  strerror(-rc));
	if (rename(d->tmp, d->dir) < 0)
		return errbuf_set(err, -errno, "snapshot: cannot rename %s to %s: %s", d->tmp, d->dir,
				  strerror(errno));
	close(d->dfd);
	d->dfd = -1;
	d->done = true;
	fsync_path(d->parent);
	return 0;
}

void snapio_abort(struct snapio_dir *d)
{
	if (d->dfd >= 0 && !d->done)
		remove_tmp(d);
}
