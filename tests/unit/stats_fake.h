/* SPDX-License-Identifier: MIT */
/*
 * A small fake producer for the stats reader's unit tests: a region built
 * from the ABI header alone (2 VM fields, 4 vCPU slots with 5 fields each,
 * 2 online), so tests can corrupt any byte of it.
 */
#ifndef PERFVISOR_TEST_STATS_FAKE_H
#define PERFVISOR_TEST_STATS_FAKE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats/stats.h"

#define REGION_SIZE 8192U
#define DESC_OFF 256U
#define VM_OFF 2048U
#define VCPU_OFF 4096U
#define VCPU_SIZE 48U /* record header + 5 fields */
#define VCPU_SLOTS 4U
#define NVCPU_FIELDS 5U

struct fake {
	int fd;
	uint8_t *p;
	size_t size;
	struct pv_stats_header *h;
};

static inline void put_desc(struct fake *f, unsigned i, unsigned desc_size, const char *name, unsigned record,
			    unsigned offset, unsigned kind)
{
	struct pv_stats_desc *d = (struct pv_stats_desc *)(f->p + DESC_OFF + i * desc_size);

	snprintf(d->name, sizeof(d->name), "%s", name);
	d->offset = offset;
	d->record = (uint8_t)record;
	d->kind = (uint8_t)kind;
	d->unit = PV_STATS_UNIT_NONE;
}

static inline uint8_t *vcpu_rec(struct fake *f, unsigned i)
{
	return f->p + f->h->vcpu.offset + (size_t)i * f->h->vcpu.stride;
}

static inline uint64_t *field(uint8_t *rec, unsigned off)
{
	return (uint64_t *)(rec + off);
}

/* A good region: a VM record with 2 fields, 4 vCPU slots (2 online) with 5 fields each. */
static inline void fake_create(struct fake *f)
{
	static const char *const vcpu_names[NVCPU_FIELDS] = { "exits", "io_exits", "mmio_exits", "run_ns",
							      "max_batch" };
	struct pv_stats_header *h;
	unsigned i, n = 0;

	f->size = REGION_SIZE;
	f->fd = memfd_create("perfvisor-stats", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert(f->fd >= 0);
	cr_assert_eq(ftruncate(f->fd, (off_t)f->size), 0);
	f->p = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	cr_assert(f->p != MAP_FAILED);
	h = f->h = (struct pv_stats_header *)f->p;
	h->magic = PV_STATS_MAGIC;
	h->header_size = sizeof(*h);
	h->region_size = f->size;
	h->generation = 3;
	h->vm = (struct pv_stats_array){
		.offset = VM_OFF, .size = 24, .stride = 64, .slots = 1, .online = 1
	};
	h->vcpu = (struct pv_stats_array){
		.offset = VCPU_OFF, .size = VCPU_SIZE, .stride = 64, .slots = VCPU_SLOTS, .online = 2
	};
	h->desc_offset = DESC_OFF;
	h->desc_size = sizeof(struct pv_stats_desc);
	h->producer_pid = (uint64_t)getpid();
	put_desc(f, n++, h->desc_size, "exits_total", PV_STATS_RECORD_VM, 8, PV_STATS_CUMULATIVE);
	put_desc(f, n++, h->desc_size, "vcpus", PV_STATS_RECORD_VM, 16, PV_STATS_INSTANT);
	for (i = 0; i < NVCPU_FIELDS; i++)
		put_desc(f, n++, h->desc_size, vcpu_names[i], PV_STATS_RECORD_VCPU, 8 + 8 * i,
			 i == 4 ? PV_STATS_PEAK : PV_STATS_CUMULATIVE);
	h->desc_count = n;
	((struct pv_stats_record_hdr *)(f->p + VM_OFF))->state = PV_STATS_ONLINE;
	*field(f->p + VM_OFF, 8) = 300; /* exits_total: the sum of exits (100 + 200), as documented */
	*field(f->p + VM_OFF, 16) = 2;
	for (i = 0; i < 2; i++) {
		uint8_t *r = vcpu_rec(f, i);
		unsigned j;

		((struct pv_stats_record_hdr *)r)->state = PV_STATS_ONLINE;
		for (j = 0; j < NVCPU_FIELDS; j++)
			*field(r, 8 + 8 * j) = 100 * (i + 1) + j;
	}
}

static inline void fake_destroy(struct fake *f)
{
	munmap(f->p, f->size);
	close(f->fd);
}

#endif
