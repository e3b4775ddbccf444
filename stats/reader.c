// SPDX-License-Identifier: MIT
/*
 * The reader side of the statistics region: map a region read-only,
 * validate every offset and size against the mapping before trusting it,
 * and copy records under the seqlock, one memcpy per record. A hostile
 * region gives an error with one line naming the violated rule; reads
 * never leave the mapping.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stats/stats.h"

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
	int *since;		    /* per descriptor: its "since" companion, or -1 */
	uint8_t *scratch;	    /* one record, for stats_view_read() */
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

/* "NAME_ns" -> is there a "NAME_since_ns" of the same record, an instant time in the same scale? */
static int find_companions(struct stats_view *v)
{
	static const char sfx[] = "_ns", since_sfx[] = "_since_ns";
	size_t scratch = 8;

	v->since = calloc(v->ndesc ? v->ndesc : 1, sizeof(*v->since));
	if (!v->since)
		return -ENOMEM;
	for (unsigned d = 0; d < v->ndesc; d++) {
		const struct pv_stats_desc *a = &v->desc[d];
		size_t n = strlen(a->name);
		char want[PV_STATS_NAME_MAX + 8];

		v->since[d] = -1;
		if (a->kind != PV_STATS_CUMULATIVE || a->unit != PV_STATS_UNIT_SECONDS ||
		    n < sizeof(sfx) - 1 || strcmp(a->name + n - (sizeof(sfx) - 1), sfx))
			continue;
		snprintf(want, sizeof(want), "%.*s%s", (int)(n - (sizeof(sfx) - 1)), a->name, since_sfx);
		for (unsigned e = 0; e < v->ndesc; e++) {
			const struct pv_stats_desc *b = &v->desc[e];

			if (b->record == a->record && b->kind == PV_STATS_INSTANT &&
			    b->unit == PV_STATS_UNIT_SECONDS && b->scale == a->scale &&
			    !strcmp(b->name, want))
				v->since[d] = (int)e;
		}
	}
	if (v->hdr.vm.size > scratch)
		scratch = v->hdr.vm.size;
	if (v->hdr.vcpu.size > scratch)
		scratch = v->hdr.vcpu.size;
	v->scratch = calloc(1, scratch);
	return v->scratch ? 0 : -ENOMEM;
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
	return find_companions(v);
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
	if (rc == -ENOMEM)
		errbuf_set(err, rc, "out of memory for %u descriptors", v->hdr.desc_count);
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
	free(v->since);
	free(v->scratch);
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

size_t stats_view_record_size(const struct stats_view *v, enum pv_stats_record record)
{
	const struct pv_stats_array *a = record_array(&v->hdr, record);

	return a ? a->size : 0;
}

int stats_view_since(const struct stats_view *v, unsigned d)
{
	return d < v->ndesc ? v->since[d] : -1;
}

uint64_t stats_view_field(const struct stats_view *v, unsigned d, const void *rec)
{
	uint64_t x;

	memcpy(&x, (const uint8_t *)rec + v->desc[d].offset, sizeof(x));
	return x;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The reader's backoff once spinning did not help: yield, then sleep 50 us .. 1 ms. */
static void backoff(unsigned round)
{
	struct timespec ts = { 0, 50000L << (round < 16 ? round / 4 : 4) };

	if (round < 4)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

/*
 * The seqlock read of one record: an even seq, one memcpy, an acquire
 * fence (the copy happens before the re-check), the same seq again.
 */
static int copy_record(const uint8_t *rec, uint32_t size, uint8_t *buf)
{
	const uint32_t *seq = (const uint32_t *)rec;
	uint64_t deadline = 0;

	for (unsigned tries = 0;; tries++) {
		/*
		 * Busy only when an attempt begun after the deadline fails: a
		 * reader descheduled past it tries once more first.
		 */
		uint64_t at = deadline ? util_now_ns() : 0;
		uint32_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);

		if (!(s1 & 1)) {
			memcpy(buf, rec, size);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(seq, __ATOMIC_RELAXED) == s1)
				return 0;
		}
		if (tries < STATS_READ_SPINS) {
			cpu_relax();
			continue;
		}
		if (!deadline)
			deadline = util_now_ns() + STATS_READ_TIMEOUT_NS;
		else if (at >= deadline)
			return -EBUSY;
		backoff(tries - STATS_READ_SPINS);
	}
}

/* Where record idx of `record` kind is, or NULL (-ENOENT). */
static const uint8_t *record_at(struct stats_view *v, enum pv_stats_record record, unsigned idx)
{
	const struct pv_stats_array *a = record_array(&v->hdr, record);

	if (!a || idx >= a->slots)
		return NULL;
	if (record == PV_STATS_RECORD_VCPU && idx >= stats_view_online(v))
		return NULL;
	return v->base + a->offset + (uint64_t)idx * a->stride;
}

int stats_view_copy(struct stats_view *v, enum pv_stats_record record, unsigned idx, void *buf,
		    uint32_t *state)
{
	const uint8_t *rec = record_at(v, record, idx);
	int rc;

	if (!rec)
		return -ENOENT;
	rc = copy_record(rec, (uint32_t)stats_view_record_size(v, record), buf);
	if (!rc && state)
		memcpy(state, (const uint8_t *)buf + offsetof(struct pv_stats_record_hdr, state),
		       sizeof(*state));
	return rc;
}

int stats_view_read(struct stats_view *v, enum pv_stats_record record, unsigned idx, uint64_t *values,
		    uint32_t *state)
{
	int rc = stats_view_copy(v, record, idx, v->scratch, state);

	if (rc)
		return rc;
	for (unsigned d = 0; d < v->ndesc; d++)
		values[d] = v->desc[d].record == record ? stats_view_field(v, d, v->scratch) : 0;
	return 0;
}

/* ---- snapshots ------------------------------------------------------------ */

struct stats_snap {
	struct stats_view *v;
	uint64_t t_ns, generation;
	unsigned online, slots;
	size_t vm_size, vcpu_size; /* bytes per copy, multiples of 64 */
	int *rc;		   /* 1 + slots: the VM record, then each vCPU */
	uint8_t *data;		   /* the VM record's copy, then each vCPU's */
};

int stats_snap_create(struct stats_snap **out, struct stats_view *v)
{
	struct stats_snap *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->v = v;
	s->slots = v->hdr.vcpu.slots;
	/* Each copy starts on a cache line, as the records do: memcpy runs at its best. */
	s->vm_size = (v->hdr.vm.size + 63) / 64 * 64;
	s->vcpu_size = (v->hdr.vcpu.size + 63) / 64 * 64;
	s->rc = calloc(1 + (size_t)s->slots, sizeof(*s->rc));
	s->data = aligned_alloc(64, s->vm_size + (size_t)s->slots * s->vcpu_size);
	if (!s->rc || !s->data) {
		stats_snap_destroy(s);
		return -ENOMEM;
	}
	memset(s->data, 0, s->vm_size + (size_t)s->slots * s->vcpu_size);
	for (unsigned i = 0; i <= s->slots; i++)
		s->rc[i] = -ENOENT;
	*out = s;
	return 0;
}

void stats_snap_destroy(struct stats_snap *s)
{
	if (!s)
		return;
	free(s->rc);
	free(s->data);
	free(s);
}

static uint8_t *snap_rec(const struct stats_snap *s, unsigned slot)
{
	return s->data + (slot ? s->vm_size + (size_t)(slot - 1) * s->vcpu_size : 0);
}

int stats_snap_take(struct stats_snap *s)
{
	struct stats_view *v = s->v;
	const uint8_t *vcpu0 = v->base + v->hdr.vcpu.offset;
	int busy = 0;

	/* The time first: a live value computed from it never runs ahead of a later snapshot's. */
	s->t_ns = util_now_ns();
	s->generation = stats_view_header(v)->generation;
	s->online = stats_view_online(v);
	s->rc[0] = copy_record(v->base + v->hdr.vm.offset, v->hdr.vm.size, snap_rec(s, 0));
	busy += s->rc[0] != 0;
	for (unsigned i = 0; i < s->online; i++) {
		s->rc[1 + i] = copy_record(vcpu0 + (uint64_t)i * v->hdr.vcpu.stride, v->hdr.vcpu.size,
					   snap_rec(s, 1 + i));
		busy += s->rc[1 + i] != 0;
	}
	for (unsigned i = s->online; i < s->slots; i++)
		s->rc[1 + i] = -ENOENT;
	return busy;
}

uint64_t stats_snap_time(const struct stats_snap *s)
{
	return s->t_ns;
}

uint64_t stats_snap_generation(const struct stats_snap *s)
{
	return s->generation;
}

unsigned stats_snap_online(const struct stats_snap *s)
{
	return s->online;
}

/* Slot of record idx of `record` kind in rc[] and data, or -1. */
static int snap_slot(const struct stats_snap *s, enum pv_stats_record record, unsigned idx)
{
	if (record == PV_STATS_RECORD_VM)
		return 0;
	if (record == PV_STATS_RECORD_VCPU && idx < s->slots)
		return 1 + (int)idx;
	return -1;
}

int stats_snap_status(const struct stats_snap *s, enum pv_stats_record record, unsigned idx, uint32_t *state)
{
	int slot = snap_slot(s, record, idx);

	if (slot < 0)
		return -ENOENT;
	if (!s->rc[slot] && state)
		memcpy(state, snap_rec(s, (unsigned)slot) + offsetof(struct pv_stats_record_hdr, state),
		       sizeof(*state));
	return s->rc[slot];
}

uint64_t stats_snap_value(const struct stats_snap *s, unsigned d, unsigned idx)
{
	int slot;

	if (d >= s->v->ndesc)
		return 0;
	slot = snap_slot(s, s->v->desc[d].record, idx);
	if (slot < 0 || s->rc[slot])
		return 0;
	return stats_view_field(s->v, d, snap_rec(s, (unsigned)slot));
}

uint64_t stats_snap_live(const struct stats_snap *s, unsigned d, unsigned idx)
{
	uint64_t val = stats_snap_value(s, d, idx), since;
	int c = stats_view_since(s->v, d);

	if (c < 0)
		return val;
	since = stats_snap_value(s, (unsigned)c, idx);
	return since && s->t_ns > since ? val + (s->t_ns - since) : val;
}
