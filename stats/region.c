// SPDX-License-Identifier: MIT
/*
 * The statistics region, producer side: fields are declared first (the
 * scoreboard), then the layout is fixed once for every vCPU slot, the
 * memfd is sized, mapped and sealed, and records never move again.
 */
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct stats_region {
	int fd;
	uint8_t *base;
	size_t size;
	bool frozen;
	unsigned max_vcpus;
	unsigned nr_desc;
	uint32_t next_offset[2]; /* per record kind: where the next field goes */
	struct pv_stats_desc desc[STATS_MAX_FIELDS];
	struct pv_stats_header *hdr;
	char name[PV_STATS_VM_NAME_MAX];
	uint64_t start_ns; /* the header's start_time_ns */
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

int stats_region_create(struct stats_region **out, unsigned max_vcpus, struct errbuf *err)
{
	struct stats_region *r;

	*out = NULL;
	if (max_vcpus == 0 || max_vcpus > 4096)
		return errbuf_set(err, -EINVAL, "stats: %u vCPU slots is out of range", max_vcpus);
	r = calloc(1, sizeof(*r));
	if (!r)
		return errbuf_set(err, -ENOMEM, "stats: out of memory");
	r->fd = memfd_create("perfvisor-stats", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->fd < 0) {
		int rc = errbuf_set(err, -errno, "stats: memfd_create: %s", strerror(errno));

		free(r);
		return rc;
	}
	r->max_vcpus = max_vcpus;
	r->start_ns = util_now_ns();
	r->next_offset[PV_STATS_RECORD_VM] = sizeof(struct pv_stats_record_hdr);
	r->next_offset[PV_STATS_RECORD_VCPU] = sizeof(struct pv_stats_record_hdr);
	*out = r;
	return 0;
}

void stats_region_destroy(struct stats_region *r)
{
	if (!r)
		return;
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

static bool valid_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= PV_STATS_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
			return false;
	}
	return true;
}

int sb_declare(struct stats_region *r, enum pv_stats_record record, const char *name, enum pv_stats_kind kind,
	       enum pv_stats_unit unit, int scale, struct sb_field *out, struct errbuf *err)
{
	struct pv_stats_desc *d;

	if (r->frozen)
		return errbuf_set(err, -EBUSY, "stats: field '%s' declared after the layout was fixed", name);
	if (record != PV_STATS_RECORD_VM && record != PV_STATS_RECORD_VCPU)
		return errbuf_set(err, -EINVAL, "stats: field '%s' has a bad record kind", name);
	if (!valid_name(name))
		return errbuf_set(err, -EINVAL, "stats: bad field name '%s' (1-%u chars of [a-z0-9_.])", name,
				  PV_STATS_NAME_MAX - 1);
	if (kind < PV_STATS_CUMULATIVE || kind > PV_STATS_PEAK || scale < -128 || scale > 127)
		return errbuf_set(err, -EINVAL, "stats: field '%s' has a bad kind or scale", name);
	for (unsigned i = 0; i < r->nr_desc; i++)
		if (r->desc[i].record == record && !strcmp(r->desc[i].name, name))
			return errbuf_set(err, -EEXIST, "stats: field '%s' declared twice", name);
	if (r->nr_desc == STATS_MAX_FIELDS)
		return errbuf_set(err, -ENOSPC, "stats: more than %u fields", STATS_MAX_FIELDS);

	d = &r->desc[r->nr_desc++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->offset = r->next_offset[record];
	d->record = (uint8_t)record;
	d->kind = (uint8_t)kind;
	d->unit = (uint8_t)unit;
	d->scale = (int8_t)scale;
	r->next_offset[record] += sizeof(uint64_t);
	*out = (struct sb_field){ .record = record, .offset = d->offset };
	return 0;
}

unsigned sb_nr_fields(const struct stats_region *r)
{
	return r->nr_desc;
}

const struct pv_stats_desc *sb_field_at(const struct stats_region *r, unsigned i, struct sb_field *f)
{
	if (i >= r->nr_desc)
		return NULL;
	*f = (struct sb_field){ .record = r->desc[i].record, .offset = r->desc[i].offset };
	return &r->desc[i];
}

bool stats_vm_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= PV_STATS_VM_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == ':' || c == '-'))
			return false;
	}
	return true;
}

int stats_region_set_name(struct stats_region *r, const char *name, struct errbuf *err)
{
	if (r->frozen)
		return errbuf_set(err, -EBUSY, "stats: the VM name is set after the layout was fixed");
	if (name[0] && !stats_vm_name_ok(name))
		return errbuf_set(err, -EINVAL, "stats: bad VM name '%.80s' (1-%u chars of [A-Za-z0-9_.:-])",
				  name, PV_STATS_VM_NAME_MAX - 1);
	snprintf(r->name, sizeof(r->name), "%s", name);
	return 0;
}

static void set_array(struct pv_stats_array *a, uint64_t offset, uint32_t size, uint32_t slots)
{
	a->offset = offset;
	a->size = size;
	a->stride = (uint32_t)align_up(size, PV_STATS_ALIGN);
	a->slots = slots;
	a->online = 0;
}

int stats_region_freeze(struct stats_region *r, struct errbuf *err)
{
	const unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
	struct pv_stats_header h;
	uint64_t off;

	if (r->frozen)
		return errbuf_set(err, -EBUSY, "stats: layout already fixed");
	memset(&h, 0, sizeof(h));
	h.magic = PV_STATS_MAGIC;
	h.header_size = sizeof(h);
	h.producer_pid = (uint64_t)getpid();
	h.start_time_ns = r->start_ns;
	h.desc_offset = align_up(sizeof(h), PV_STATS_ALIGN);
	h.desc_size = sizeof(struct pv_stats_desc);
	h.desc_count = r->nr_desc;
	memcpy(h.name, r->name, sizeof(h.name));
	off = align_up(h.desc_offset + (uint64_t)r->nr_desc * sizeof(struct pv_stats_desc), PV_STATS_ALIGN);
	set_array(&h.vm, off, r->next_offset[PV_STATS_RECORD_VM], 1);
	off = align_up(off + h.vm.stride, PV_STATS_ALIGN);
	set_array(&h.vcpu, off, r->next_offset[PV_STATS_RECORD_VCPU], r->max_vcpus);
	r->size = align_up(off + (uint64_t)h.vcpu.stride * r->max_vcpus, 4096);
	h.region_size = r->size;
	/* The VM record has one writer, the VMM's main thread: online from the start. */
	h.vm.online = 1;

	if (ftruncate(r->fd, (off_t)r->size) < 0)
		return errbuf_set(err, -errno, "stats: sizing the region: %s", strerror(errno));
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return errbuf_set(err, -errno, "stats: mapping the region: %s", strerror(errno));
	}
	memcpy(r->base + h.desc_offset, r->desc, (size_t)r->nr_desc * sizeof(struct pv_stats_desc));
	((struct pv_stats_record_hdr *)(r->base + h.vm.offset))->state = PV_STATS_ONLINE;
	memcpy(r->base, &h, sizeof(h));
	r->hdr = (struct pv_stats_header *)r->base;
	/* Sealed after the producer's writable mapping exists: nobody can write, grow or shrink it. */
	if (fcntl(r->fd, F_ADD_SEALS, seals) < 0)
		return errbuf_set(err, -errno, "stats: sealing the region: %s", strerror(errno));
	r->frozen = true;
	return 0;
}

struct sb_entry stats_vcpu_entry(struct stats_region *r, unsigned idx)
{
	return (struct sb_entry){ r->base + r->hdr->vcpu.offset + (uint64_t)idx * r->hdr->vcpu.stride };
}

struct sb_entry stats_vm_entry(struct stats_region *r)
{
	return (struct sb_entry){ r->base + r->hdr->vm.offset };
}

void sb_set_state(struct sb_entry e, enum pv_stats_state state)
{
	__atomic_store_n(&((struct pv_stats_record_hdr *)e.base)->state, (uint32_t)state, __ATOMIC_RELEASE);
}

void stats_vcpu_online(struct stats_region *r, unsigned idx)
{
	sb_set_state(stats_vcpu_entry(r, idx), PV_STATS_ONLINE);
	/* Release: a reader that sees the new count also sees the entry's state. */
	__atomic_store_n(&r->hdr->vcpu.online, idx + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->hdr->generation, r->hdr->generation + 1, __ATOMIC_RELEASE);
}

unsigned stats_region_online(struct stats_region *r)
{
	return __atomic_load_n(&r->hdr->vcpu.online, __ATOMIC_ACQUIRE);
}

int stats_region_open_ro(struct stats_region *r)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", r->fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int stats_region_fd(const struct stats_region *r)
{
	return r->fd;
}

uint64_t sb_get(struct stats_region *r, unsigned idx, struct sb_field f)
{
	struct sb_entry e = f.record == PV_STATS_RECORD_VM ? stats_vm_entry(r) : stats_vcpu_entry(r, idx);

	return __atomic_load_n(sb_slot(e, f), __ATOMIC_RELAXED);
}

uint64_t sb_sum(struct stats_region *r, struct sb_field f)
{
	unsigned n = stats_region_online(r);
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += sb_get(r, i, f);
	return sum;
}

int sb_read(struct stats_region *r, unsigned idx, const struct sb_field *f, unsigned n, uint64_t *out)
{
	struct sb_entry e =
		n && f[0].record == PV_STATS_RECORD_VM ? stats_vm_entry(r) : stats_vcpu_entry(r, idx);
	const uint32_t *seq = (const uint32_t *)e.base;

	for (unsigned tries = 0; tries < 10000; tries++) {
		uint32_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);

		if (!(s1 & 1)) {
			for (unsigned i = 0; i < n; i++)
				out[i] = __atomic_load_n(sb_slot(e, f[i]), __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(seq, __ATOMIC_RELAXED) == s1)
				return 0;
		}
		__builtin_ia32_pause();
	}
	return -EBUSY;
}

uint64_t stats_region_start_ns(const struct stats_region *r)
{
	return r->start_ns;
}
