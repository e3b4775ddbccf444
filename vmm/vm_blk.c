// SPDX-License-Identifier: MIT
/*
 * A disk image behind virtio-blk, and its I/O engine: one io_uring per
 * disk. Reads and writes are readv/writev at the request's offset with
 * iovecs that point straight into guest RAM (no bounce buffer), a flush
 * is IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, discard and write
 * zeroes are IORING_OP_FALLOCATE. Completions signal an eventfd
 * registered with the ring; the virtio I/O thread reaps them.
 */
#include "vm_blk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "control.h"

#define RING_ENTRIES 256 /* the device's queue size: every request it can have in flight */

struct vm_blk {
	int fd, efd;
	bool readonly, discard, write_zeroes;
	uint64_t sectors;
	unsigned at_kernel; /* submitted (or queued) and not reaped */
	struct io_uring ring;
	bool ring_ok;
	char path[PATH_MAX];
	char serial[VIRTIO_BLK_SERIAL_LEN];
};

static int engine_submit(void *opaque, const struct blk_io *io)
{
	struct vm_blk *b = opaque;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

	if (!sqe) {
		io_uring_submit(&b->ring); /* the queue is full: hand it over, then take an entry */
		sqe = io_uring_get_sqe(&b->ring);
	}
	if (!sqe)
		return -EBUSY;
	switch (io->op) {
	case BLK_OP_READ:
		io_uring_prep_readv(sqe, b->fd, io->iov, io->niov, io->off);
		break;
	case BLK_OP_WRITE:
		io_uring_prep_writev(sqe, b->fd, io->iov, io->niov, io->off);
		break;
	case BLK_OP_FLUSH:
		io_uring_prep_fsync(sqe, b->fd, IORING_FSYNC_DATASYNC);
		break;
	case BLK_OP_DISCARD:
		io_uring_prep_fallocate(sqe, b->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, io->off,
					io->len);
		break;
	case BLK_OP_ZERO:
		io_uring_prep_fallocate(sqe, b->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, io->off,
					io->len);
		break;
	default:
		return -EINVAL;
	}
	io_uring_sqe_set_data64(sqe, io->tag);
	b->at_kernel++;
	return 0;
}

/* Can the file system do mode? Tried past the end of the image (KEEP_SIZE), where it changes no byte. */
static bool probe_fallocate(int fd, uint64_t size, int mode)
{
	uint64_t at = (size + 65535) & ~65535ULL;
	bool ok = fallocate(fd, mode | FALLOC_FL_KEEP_SIZE, (off_t)at, 4096) == 0;

	if (ok && (mode & FALLOC_FL_ZERO_RANGE)) /* give back the block it may have allocated */
		(void)!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)at, 4096);
	return ok;
}

/* The image's checks, with one line for the user. */
static int open_image(struct vm_blk *b, const char *path, bool readonly, uint64_t *size, struct errbuf *err)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errbuf_set(err, -errno, "--disk path=%s: %s", path,
				  errno == ENOENT ? "no such file" : strerror(errno));
	if (S_ISDIR(st.st_mode))
		return errbuf_set(err, -EISDIR, "--disk path=%s: is a directory, not a disk image", path);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return errbuf_set(err, -EINVAL, "--disk path=%s: is not a regular file or a block device",
				  path);
	b->fd = open(path, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (b->fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS))
		return errbuf_set(err, -errno, "--disk path=%s: no permission to open it %s%s", path,
				  readonly ? "for reading" : "for writing",
				  readonly ? "" : " (readonly=on opens it read-only)");
	if (b->fd < 0)
		return errbuf_set(err, -errno, "--disk path=%s: %s", path, strerror(errno));
	if (flock(b->fd, (readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0)
		return errbuf_set(err, -errno, "--disk path=%s: %s", path,
				  errno == EWOULDBLOCK ? "is in use: another VM (or this one) holds its lock"
						       : strerror(errno));
	if (fstat(b->fd, &st) < 0)
		return errbuf_set(err, -errno, "--disk path=%s: %s", path, strerror(errno));
	*size = (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode) && ioctl(b->fd, BLKGETSIZE64, size) < 0)
		return errbuf_set(err, -errno, "--disk path=%s: its size: %s", path, strerror(errno));
	if (*size < 512)
		return errbuf_set(err, -EINVAL,
				  "--disk path=%s: holds no whole 512-byte sector (%" PRIu64 " bytes)", path,
				  *size);
	/* Hole punching on a block device is a discard; offered for images in files only. */
	if (!readonly && S_ISREG(st.st_mode)) {
		b->discard = probe_fallocate(b->fd, *size, FALLOC_FL_PUNCH_HOLE);
		b->write_zeroes = probe_fallocate(b->fd, *size, FALLOC_FL_ZERO_RANGE);
	}
	return 0;
}

/*
 * The ring, its eventfd, and its restrictions: once enabled, it takes the
 * four operations the engine prepares and nothing else (no open, no
 * socket, no new registration), whoever fills its submission queue
 * (docs/security.md: seccomp does not see io_uring's work).
 */
static int make_ring(struct vm_blk *b)
{
	static const uint8_t ops[] = { IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC,
				       IORING_OP_FALLOCATE };
	struct io_uring_restriction r[sizeof(ops)];
	int rc = io_uring_queue_init(RING_ENTRIES, &b->ring, IORING_SETUP_R_DISABLED);

	if (rc < 0)
		return rc;
	b->ring_ok = true;
	b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->efd < 0)
		return -errno;
	rc = io_uring_register_eventfd(&b->ring, b->efd);
	for (size_t i = 0; i < sizeof(ops); i++)
		r[i] = (struct io_uring_restriction){ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = ops[i] };
	/* The system call itself: Debian's liburing 2.3 does not export its wrappers for these two. */
	if (!rc && syscall(__NR_io_uring_register, b->ring.ring_fd, IORING_REGISTER_RESTRICTIONS, r,
			   sizeof(ops)) < 0)
		rc = -errno;
	if (!rc &&
	    syscall(__NR_io_uring_register, b->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		rc = -errno;
	return rc < 0 ? rc : 0;
}

int vm_blk_handover(struct vm_blk *b, bool release, struct errbuf *err)
{
	if (release) {
		/* What the guest wrote is on the image before another perfvisor opens it. */
		if (!b->readonly && fdatasync(b->fd) < 0)
			return errbuf_set(err, -errno, "disk %s: fdatasync: %s", b->path, strerror(errno));
		flock(b->fd, LOCK_UN);
		return 0;
	}
	if (flock(b->fd, (b->readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0)
		return errbuf_set(err, -errno, "disk %s: cannot take its lock back: %s", b->path,
				  errno == EWOULDBLOCK ? "another VM holds it" : strerror(errno));
	return 0;
}

int vm_blk_open(struct vm_blk **out, const char *path, bool readonly, bool verbose, struct errbuf *err)
{
	struct vm_blk *b = calloc(1, sizeof(*b));
	const char *base;
	uint64_t size = 0;
	int rc;

	*out = NULL;
	if (!b)
		return errbuf_set(err, -ENOMEM, "out of memory");
	b->fd = b->efd = -1;
	b->readonly = readonly;
	rc = open_image(b, path, readonly, &size, err);
	if (rc) {
		vm_blk_destroy(b);
		return rc;
	}
	if (!realpath(path, b->path))
		snprintf(b->path, sizeof(b->path), "%s", path);
	b->sectors = size / 512;
	if (size % 512)
		vm_log("--disk path=%s: %" PRIu64 " bytes, not a multiple of 512: the guest sees %" PRIu64
		       " sectors, the last %" PRIu64 " bytes not at all",
		       path, size, b->sectors, size % 512);
	/* GET_ID: the image's name, as much of it as fits in 20 bytes */
	base = strrchr(b->path, '/');
	base = base ? base + 1 : b->path;
	memcpy(b->serial, base, strnlen(base, sizeof(b->serial))); /* NUL-padded, not terminated when 20 */
	rc = make_ring(b);
	if (rc < 0) {
		vm_blk_destroy(b);
		return errbuf_set(err, rc, "--disk path=%s: io_uring: %s", path, strerror(-rc));
	}
	if (verbose)
		vm_log("--disk path=%s: %" PRIu64 " sectors%s; discard %s, write zeroes %s; serial '%.20s'",
		       b->path, b->sectors, readonly ? ", read-only" : "", b->discard ? "yes" : "no",
		       b->write_zeroes ? "yes" : "no", b->serial);
	*out = b;
	return 0;
}

void vm_blk_params(struct vm_blk *b, struct virtio_blk_params *p)
{
	*p = (struct virtio_blk_params){
		.sectors = b->sectors,
		.readonly = b->readonly,
		.discard = b->discard,
		.write_zeroes = b->write_zeroes,
		.engine = { b, engine_submit },
	};
	memcpy(p->serial, b->serial, sizeof(p->serial));
}

const char *vm_blk_path(const struct vm_blk *b)
{
	return b->path;
}

void vm_blk_describe(const struct vm_blk *b, bool *readonly, uint64_t *sectors)
{
	*readonly = b->readonly;
	*sectors = b->sectors;
}

int vm_blk_eventfd(const struct vm_blk *b)
{
	return b->efd;
}

void vm_blk_kick(struct vm_blk *b)
{
	if (io_uring_sq_ready(&b->ring))
		io_uring_submit(&b->ring);
}

unsigned vm_blk_reap(struct vm_blk *b, uint64_t *tags, int64_t *res, unsigned max, int wait_ms,
		     unsigned *left)
{
	struct io_uring_cqe *cqe;
	unsigned n = 0;

	if (wait_ms > 0 && b->at_kernel && io_uring_cq_ready(&b->ring) == 0) {
		struct __kernel_timespec ts = { wait_ms / 1000, (long long)(wait_ms % 1000) * 1000000 };

		vm_blk_kick(b);
		(void)io_uring_wait_cqe_timeout(&b->ring, &cqe, &ts);
	}
	while (n < max && io_uring_peek_cqe(&b->ring, &cqe) == 0) {
		tags[n] = io_uring_cqe_get_data64(cqe);
		res[n] = cqe->res;
		n++;
		io_uring_cqe_seen(&b->ring, cqe);
		b->at_kernel--;
	}
	if (left)
		*left = b->at_kernel;
	return n;
}

void vm_blk_destroy(struct vm_blk *b)
{
	uint64_t tags[64];
	int64_t res[64];
	unsigned left = 0;

	if (!b)
		return;
	/* Operations at the kernel may still write guest RAM: wait for them (bounded: 30 s). */
	for (int tries = 0; b->ring_ok && b->at_kernel && tries < 300; tries++)
		vm_blk_reap(b, tags, res, 64, 100, &left);
	if (b->ring_ok)
		io_uring_queue_exit(&b->ring);
	if (b->efd >= 0)
		close(b->efd);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}
