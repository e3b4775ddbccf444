// SPDX-License-Identifier: MIT
/*
 * Guest RAM: one memfd mapped shared at guest-physical 0, and the only
 * place that turns a guest-physical range into a host pointer (checked).
 */
#include "machine/machine.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int gmem_check_size(uint64_t size, struct errbuf *err)
{
	if (size < GMEM_MIN_SIZE)
		return errbuf_set(err, -ERANGE,
				  "memory size %" PRIu64 " bytes is below the minimum of %llu MiB", size,
				  GMEM_MIN_SIZE >> 20);
	if (size > GMEM_MAX_SIZE)
		return errbuf_set(err, -ERANGE,
				  "memory size %" PRIu64 " MiB is above the maximum of %llu MiB", size >> 20,
				  GMEM_MAX_SIZE >> 20);
	if (size % GMEM_ALIGN)
		return errbuf_set(err, -EINVAL, "memory size %" PRIu64 " is not a multiple of 4 KiB", size);
	return 0;
}

/* An empty gmem (safe for gmem_fini), and the size checked. */
static int gmem_reset(struct gmem *m, uint64_t size, struct errbuf *err)
{
	m->fd = -1;
	m->src_fd = -1;
	m->hva = NULL;
	m->size = 0;
	return gmem_check_size(size, err);
}

int gmem_init(struct gmem *m, uint64_t size, struct errbuf *err)
{
	int rc = gmem_reset(m, size, err);

	if (rc)
		return rc;
	m->fd = memfd_create("perfvisor-guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m->fd < 0)
		return errbuf_set(err, -errno, "guest memory: memfd_create: %s", strerror(errno));
	if (ftruncate(m->fd, (off_t)size) < 0) {
		rc = errbuf_set(err, -errno, "guest memory: cannot size %" PRIu64 " MiB: %s", size >> 20,
				strerror(errno));
		goto err_close;
	}
	m->hva = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, m->fd, 0);
	if (m->hva == MAP_FAILED) {
		m->hva = NULL;
		rc = errbuf_set(err, -errno, "guest memory: mmap of %" PRIu64 " MiB: %s", size >> 20,
				strerror(errno));
		goto err_close;
	}
	m->size = size;
	return 0;

err_close:
	close(m->fd);
	m->fd = -1;
	return rc;
}

int gmem_init_private(struct gmem *m, int fd, uint64_t size, struct errbuf *err)
{
	int rc = gmem_reset(m, size, err);

	if (rc)
		return rc;
	/* Copy-on-write: pages come from the file when first touched, the file never changes. */
	m->hva = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	if (m->hva == MAP_FAILED) {
		m->hva = NULL;
		return errbuf_set(err, -errno, "guest memory: mmap of the snapshot's memory file: %s",
				  strerror(errno));
	}
	m->src_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	m->size = size;
	return 0;
}

void gmem_write(struct gmem *m, uint64_t gpa, const void *src, uint64_t len)
{
	const uint8_t *s = src;

	while (m->fd >= 0 && len) {
		ssize_t n = pwrite(m->fd, s, len, (off_t)gpa);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the rest through the mapping */
		s += n;
		gpa += (uint64_t)n;
		len -= (uint64_t)n;
	}
	if (len)
		memcpy(gmem_hva(m, gpa, len), s, len);
}

void gmem_zero(struct gmem *m, uint64_t gpa, uint64_t len)
{
	uint64_t a = (gpa + GMEM_ALIGN - 1) & ~(GMEM_ALIGN - 1), b = (gpa + len) & ~(GMEM_ALIGN - 1);

	if (m->fd >= 0 && b > a &&
	    fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)(b - a)) == 0) {
		if (a > gpa)
			memset(gmem_hva(m, gpa, a - gpa), 0, a - gpa);
		if (gpa + len > b)
			memset(gmem_hva(m, b, gpa + len - b), 0, gpa + len - b);
		return;
	}
	if (len)
		memset(gmem_hva(m, gpa, len), 0, len);
}

void gmem_fini(struct gmem *m)
{
	if (m->hva)
		munmap(m->hva, m->size);
	if (m->fd >= 0)
		close(m->fd);
	if (m->src_fd >= 0)
		close(m->src_fd);
	m->hva = NULL;
	m->fd = -1;
	m->src_fd = -1;
	m->size = 0;
}

void *gmem_hva(const struct gmem *m, uint64_t gpa, uint64_t len)
{
	if (gpa > m->size || len > m->size - gpa)
		return NULL;
	return m->hva + gpa;
}

uint64_t gmem_resident_bytes(const struct gmem *m)
{
	size_t pages = m->size / 4096;
	unsigned char *vec = malloc(pages ? pages : 1);
	uint64_t n = 0;

	if (!vec)
		return 0;
	if (mincore(m->hva, m->size, vec) == 0)
		for (size_t i = 0; i < pages; i++)
			n += vec[i] & 1;
	free(vec);
	return n * 4096;
}
