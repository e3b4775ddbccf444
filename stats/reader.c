// SPDX-License-Identifier: MIT
/*
 * The reader side of the statistics region: map a region read-only,
 * validate every offset and size against the mapping before trusting it,
 * and copy records under the seqlock. A hostile region gives an error with
 * one line naming the violated rule; reads never leave the mapping.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "stats/stats.h"
#include "stats/tools_internal.h"

/* The header fields this reader needs (through desc_count); later ones may be absent. */
#define HDR_NEED offsetof(struct pv_stats_header, producer_pid)
/* The descriptor fields this reader needs (through scale). */
#define DESC_NEED offsetof(struct pv_stats_desc, flags)

struct stats_view {
	const uint8_t *base;
	size_t size;
	struct pv_stats_header hdr; /* copy; online/generation refreshed */
	unsigned ndesc;
	struct pv_stats_desc *desc; /* the descriptors this reader understands */
	/* Per record kind, its fields as (descriptor index, offset): the read loop touches only these. */
	struct view_field {
		uint32_t index, offset;
	} * fields[2];
	unsigned nfields[2];
};

static int check_array(const char *what, const struct pv_stats_array *a, uint64_t header_size, uint64_t limit,
		       struct errbuf *err)
{
	uint64_t span = (uint64_t)a->slots * a->stride; /* u32 * u32 cannot overflow a u64 */

	if (a->offset < header_size)
		return errbuf_set(err, -EINVAL, "%s array: offset %llu is inside the header (%llu bytes)",
				  what, (unsigned long long)a->offset, (unsigned long long)header_size);
	if (a->offset % 8)
		return errbuf_set(err, -EINVAL, "%s array: offset %llu is not a multiple of 8", what,
				  (unsigned long long)a->offset);
	if (a->size < sizeof(struct pv_stats_record_hdr))
		return errbuf_set(err, -EINVAL, "%s array: record size %u is smaller than the record header",
				  what, a->size);
	if (a->stride < a->size)
		return errbuf_set(err, -EINVAL, "%s array: stride %u is smaller than the record size %u",
				  what, a->stride, a->size);
	if (a->stride % PV_STATS_ALIGN)
		return errbuf_set(err, -EINVAL, "%s array: stride %u is not a multiple of %u", what,
				  a->stride, PV_STATS_ALIGN);
	if (a->offset > limit || span > limit - a->offset)
		return errbuf_set(
			err, -EINVAL,
			"%s array: offset %llu + %u slots * stride %u is beyond the region (%llu bytes)",
			what, (unsigned long long)a->offset, a->slots, a->stride, (unsigned long long)limit);
	if (a->online > a->slots)
		return errbuf_set(err, -EINVAL, "%s array: online %u is more than slots %u", what, a->online,
				  a->slots);
	return 0;
}

static bool name_ok(const char *name)
{
	size_t i;

	if (!name[0])
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
			return false;
	}
	return true;
}

static const struct pv_stats_array *record_array(const struct pv_stats_header *h, unsigned record)
{
	if (record == PV_STATS_RECORD_VM)
		return &h->vm;
	if (record == PV_STATS_RECORD_VCPU)
		return &h->vcpu;
	return NULL;
}

/* Copy and check descriptor i; returns 1 if understood, 0 to skip, -errno if invalid. */
static int check_desc(const struct stats_view *v, uint32_t i, struct pv_stats_desc *d, struct errbuf *err)
{
	const struct pv_stats_header *h = &v->hdr;
	const uint8_t *p = v->base + h->desc_offset + (uint64_t)i * h->desc_size;
	const struct pv_stats_array *a;

	memset(d, 0, sizeof(*d));
	memcpy(d, p, h->desc_size < sizeof(*d) ? h->desc_size : sizeof(*d));
	if (!memchr(d->name, 0, sizeof(d->name)))
		return errbuf_set(err, -EINVAL, "descriptor %u: name is not NUL-terminated", i);
	a = record_array(h, d->record);
	if (!a)
		return 0; /* a record kind from a newer producer */
	if (d->kind < PV_STATS_CUMULATIVE || d->kind > PV_STATS_PEAK)
		return 0; /* a value behaviour from a newer producer */
	if (!name_ok(d->name))
		return errbuf_set(err, -EINVAL,
				  "descriptor %u: name is empty or has a character outside [a-z0-9_.]", i);
	if (d->offset % 8 || d->offset < sizeof(struct pv_stats_record_hdr))
		return errbuf_set(err, -EINVAL,
				  "descriptor %u (%s): offset %u is not a multiple of 8 that is >= 8", i,
				  d->name, d->offset);
	if ((uint64_t)d->offset + 8 > a->size)
		return errbuf_set(err, -EINVAL,
				  "descriptor %u (%s): offset %u + 8 is beyond the record size %u", i,
				  d->name, d->offset, a->size);
	return 1;
}

static int validate(struct stats_view *v, struct errbuf *err)
{
	struct pv_stats_header *h = &v->hdr;
	uint64_t magic, limit, span;
	uint32_t i;
	int rc;

	memcpy(&magic, v->base, sizeof(magic));
	if (magic != PV_STATS_MAGIC)
		return errbuf_set(err, -EPROTO,
				  "bad magic 0x%016llx: not a perfvisor stats region of epoch 1",
				  (unsigned long long)magic);
	memcpy(&h->header_size, v->base + offsetof(struct pv_stats_header, header_size), sizeof(uint32_t));
	if (h->header_size < HDR_NEED)
		return errbuf_set(err, -EPROTO,
				  "header_size %u is smaller than the %zu bytes this reader needs",
				  h->header_size, HDR_NEED);
	if (h->header_size > v->size)
		return errbuf_set(err, -EINVAL, "header_size %u is larger than the file (%zu bytes)",
				  h->header_size, v->size);
	memcpy(h, v->base, h->header_size < sizeof(*h) ? h->header_size : sizeof(*h));
	if (h->region_size > v->size)
		return errbuf_set(err, -EINVAL, "region_size %llu is larger than the file (%zu bytes)",
				  (unsigned long long)h->region_size, v->size);
	if (h->region_size < h->header_size)
		return errbuf_set(err, -EINVAL, "region_size %llu is smaller than header_size %u",
				  (unsigned long long)h->region_size, h->header_size);
	limit = h->region_size;
	rc = check_array("vm", &h->vm, h->header_size, limit, err);
	if (rc)
		return rc;
	if (h->vm.slots != 1)
		return errbuf_set(err, -EINVAL, "vm array: slots is %u, must be 1", h->vm.slots);
	rc = check_array("vcpu", &h->vcpu, h->header_size, limit, err);
	if (rc)
		return rc;
	if (h->desc_size < DESC_NEED)
		return errbuf_set(err, -EPROTO,
				  "desc_size %u is smaller than the %zu bytes this reader needs",
				  h->desc_size, DESC_NEED);
	span = (uint64_t)h->desc_count * h->desc_size;
	if (h->desc_offset < h->header_size || h->desc_offset > limit || span > limit - h->desc_offset)
		return errbuf_set(
			err, -EINVAL,
			"descriptor table: offset %llu + %u * %u bytes is outside [header_size, region_size)",
			(unsigned long long)h->desc_offset, h->desc_count, h->desc_size);
	v->desc = calloc(h->desc_count ? h->desc_count : 1, sizeof(*v->desc));
	if (!v->desc)
		return errbuf_set(err, -ENOMEM, "out of memory for %u descriptors", h->desc_count);
	for (i = 0; i < h->desc_count; i++) {
		rc = check_desc(v, i, &v->desc[v->ndesc], err);
		if (rc < 0)
			return rc;
		v->ndesc += (unsigned)rc;
	}
	for (unsigned k = 0; k < 2; k++) {
		v->fields[k] = calloc(v->ndesc ? v->ndesc : 1, sizeof(*v->fields[k]));
		if (!v->fields[k])
			return errbuf_set(err, -ENOMEM, "out of memory for %u descriptors", v->ndesc);
	}
	for (i = 0; i < v->ndesc; i++) {
		unsigned k = v->desc[i].record;

		if (k < 2)
			v->fields[k][v->nfields[k]++] = (struct view_field){ i, v->desc[i].offset };
	}
	return 0;
}

int stats_view_open_fd(struct stats_view **out, int fd, struct errbuf *err)
{
	struct stats_view *v;
	struct stat st;
	void *p;
	int rc;

	*out = NULL;
	if (fstat(fd, &st) < 0)
		return errbuf_set(err, -errno, "fstat of the stats fd: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return errbuf_set(err, -EINVAL, "the stats fd is not a regular file (memfd)");
	if ((uint64_t)st.st_size < HDR_NEED)
		return errbuf_set(err, -EPROTO, "the region is %lld bytes, smaller than a stats header",
				  (long long)st.st_size);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errbuf_set(err, -errno, "mmap of the stats region: %s", strerror(errno));
	v = calloc(1, sizeof(*v));
	if (!v) {
		munmap(p, (size_t)st.st_size);
		return errbuf_set(err, -ENOMEM, "out of memory");
	}
	v->base = p;
	v->size = (size_t)st.st_size;
	rc = validate(v, err);
	if (rc) {
		stats_view_close(v);
		return rc;
	}
	*out = v;
	return 0;
}

void stats_view_close(struct stats_view *v)
{
	if (!v)
		return;
	if (v->base)
		munmap((void *)v->base, v->size);
	free(v->desc);
	free(v->fields[0]);
	free(v->fields[1]);
	free(v);
}

unsigned stats_view_online(struct stats_view *v)
{
	const uint32_t *p = (const uint32_t *)(v->base + offsetof(struct pv_stats_header, vcpu.online));
	uint32_t n = __atomic_load_n(p, __ATOMIC_ACQUIRE);

	return n < v->hdr.vcpu.slots ? n : v->hdr.vcpu.slots;
}

const struct pv_stats_header *stats_view_header(struct stats_view *v)
{
	const uint64_t *gen = (const uint64_t *)(v->base + offsetof(struct pv_stats_header, generation));

	v->hdr.generation = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
	v->hdr.vcpu.online = stats_view_online(v);
	return &v->hdr;
}

unsigned stats_view_ndesc(const struct stats_view *v)
{
	return v->ndesc;
}

const struct pv_stats_desc *stats_view_desc(const struct stats_view *v, unsigned i)
{
	return i < v->ndesc ? &v->desc[i] : NULL;
}

const uint8_t *stats_view_base(const struct stats_view *v, size_t *size)
{
	if (size)
		*size = v->size;
	return v->base;
}

int stats_view_read(struct stats_view *v, enum pv_stats_record record, unsigned idx, uint64_t *values,
		    uint32_t *state)
{
	const struct pv_stats_array *a = record_array(&v->hdr, record);
	const uint8_t *rec;
	const uint32_t *seq;
	const struct view_field *f;
	uint32_t s1, s2, st;
	unsigned i, n, tries;

	if (!a || idx >= a->slots)
		return -ENOENT;
	if (record == PV_STATS_RECORD_VCPU && idx >= stats_view_online(v))
		return -ENOENT;
	rec = v->base + a->offset + (uint64_t)idx * a->stride;
	seq = (const uint32_t *)rec;
	f = v->fields[record];
	n = v->nfields[record];
	/* Fields of the other record kind read as 0; this kind's are all overwritten below. */
	memset(values, 0, (size_t)v->ndesc * sizeof(*values));
	for (tries = 0; tries < STATS_READ_RETRIES; tries++) {
		s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		st = __atomic_load_n((const uint32_t *)(rec + offsetof(struct pv_stats_record_hdr, state)),
				     __ATOMIC_RELAXED);
		for (i = 0; i < n; i++)
			values[f[i].index] =
				__atomic_load_n((const uint64_t *)(rec + f[i].offset), __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			if (state)
				*state = st;
			return 0;
		}
	}
	return -EBUSY;
}

/* ---- finding a region -------------------------------------------------- */

int stats_pid_fd(pid_t pid, struct errbuf *err)
{
	static const char want[] = "/memfd:" STATS_MEMFD_NAME " (deleted)";
	char path[64], link[sizeof(want) + 1];
	struct dirent *de;
	DIR *dir;
	int fd = -1;

	if (pid <= 0)
		return errbuf_set(err, -EINVAL, "%d is not a process id", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir) {
		if (errno == ENOENT)
			return errbuf_set(err, -ESRCH, "no such process %d", (int)pid);
		if (errno == EACCES || errno == EPERM)
			return errbuf_set(err, -EACCES,
					  "permission denied reading %s (run as the VMM's user or as root)",
					  path);
		return errbuf_set(err, -errno, "%s: %s", path, strerror(errno));
	}
	while ((de = readdir(dir))) {
		char fdpath[sizeof(path) + sizeof(de->d_name) + 1];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		n = readlink(fdpath, link, sizeof(link));
		if (n != (ssize_t)sizeof(want) - 1 || memcmp(link, want, (size_t)n))
			continue;
		fd = open(fdpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			closedir(dir);
			if (e == EACCES || e == EPERM)
				return errbuf_set(err, -EACCES, "permission denied opening %s", fdpath);
			return errbuf_set(err, -e, "%s: %s", fdpath, strerror(e));
		}
		break;
	}
	closedir(dir);
	if (fd < 0)
		return errbuf_set(err, -ENOENT, "process %d has no perfvisor statistics region", (int)pid);
	return fd;
}

int stats_view_open_pid(struct stats_view **out, pid_t pid, struct errbuf *err)
{
	int fd = stats_pid_fd(pid, err);
	int rc;

	*out = NULL;
	if (fd < 0)
		return fd;
	rc = stats_view_open_fd(out, fd, err);
	close(fd);
	return rc;
}

/*
 * The control socket protocol: send {"cmd":"stats-fd"}\n, receive one JSON
 * line with the fd attached (SCM_RIGHTS). Without an fd, the line is the
 * error. The reply is not parsed further: the fd is the answer.
 */
int stats_socket_fd(const char *path, struct errbuf *err)
{
	char line[256];
	int s, fd, rc;
	size_t n;

	s = util_api_connect(path, err);
	if (s < 0)
		return s;
	rc = util_api_request(s, "{\"cmd\":\"stats-fd\"}", line, sizeof(line), &fd, 10000, err);
	close(s);
	if (rc)
		return rc;
	if (fd >= 0)
		return fd;
	n = strlen(line);
	for (size_t i = 0; i < n; i++) /* keep the message printable */
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			line[i] = i + 1 == n ? 0 : ' ';
	return errbuf_set(err, -EPROTO, "%s sent no stats fd%s%s", path, n ? ": " : "", line);
}

int stats_target_fd(const char *target, pid_t *pid, struct errbuf *err)
{
	struct stat st;
	uint64_t v;

	*pid = 0;
	if (target[0] >= '0' && target[0] <= '9' && util_parse_u64(target, 1, INT_MAX, &v) == 0) {
		*pid = (pid_t)v;
		return stats_pid_fd(*pid, err);
	}
	if (stat(target, &st) < 0)
		return errbuf_set(err, -ENOENT,
				  "TARGET %s is neither a process id nor an existing socket path", target);
	if (!S_ISSOCK(st.st_mode))
		return errbuf_set(err, -EINVAL,
				  "TARGET %s is not a Unix socket (give a PID or --api-socket path)", target);
	return stats_socket_fd(target, err);
}
