// SPDX-License-Identifier: MIT
/*
 * A producer as ABI v1 defined it, built only from the frozen header
 * (tests/abi/v1, first on the include path): a 160-byte header, 64-byte
 * descriptors, no since companion, no VM name. The compatibility test
 * reads its region with today's reader (tests/abi/test_compat_new_reader.c).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perfvisor/stats_abi.h"
#include "compat.h"

_Static_assert(sizeof(struct pv_stats_header) == 160, "built against the frozen v1 header");

static void desc(struct pv_stats_desc *d, const char *name, unsigned record, unsigned offset, unsigned kind,
		 unsigned unit, int scale)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->offset = offset;
	d->record = (uint8_t)record;
	d->kind = (uint8_t)kind;
	d->unit = (uint8_t)unit;
	d->scale = (int8_t)scale;
}

int compat_v1_region(void)
{
	const uint64_t size = 8192, desc_off = 192, vm_off = 512, vcpu_off = 1024;
	int fd = memfd_create("perfvisor-stats", MFD_CLOEXEC | MFD_ALLOW_SEALING), ro;
	struct pv_stats_header *h;
	struct pv_stats_desc *d;
	uint8_t *p;
	char path[64];

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return -1;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	h = (struct pv_stats_header *)p;
	d = (struct pv_stats_desc *)(p + desc_off);
	h->magic = PV_STATS_MAGIC;
	h->header_size = sizeof(*h);
	h->region_size = size;
	h->generation = COMPAT_V1_VCPUS;
	h->vm = (struct pv_stats_array){
		.offset = vm_off, .size = 16, .stride = 64, .slots = 1, .online = 1
	};
	h->vcpu = (struct pv_stats_array){ .offset = vcpu_off,
					   .size = 32,
					   .stride = 64,
					   .slots = COMPAT_V1_VCPUS,
					   .online = COMPAT_V1_VCPUS };
	h->desc_offset = desc_off;
	h->desc_size = sizeof(struct pv_stats_desc);
	h->desc_count = 4;
	h->producer_pid = (uint64_t)getpid();
	desc(&d[0], "exits", PV_STATS_RECORD_VCPU, 8, PV_STATS_CUMULATIVE, PV_STATS_UNIT_NONE, 0);
	desc(&d[1], "time.kvm_run_ns", PV_STATS_RECORD_VCPU, 16, PV_STATS_CUMULATIVE, PV_STATS_UNIT_SECONDS,
	     -9);
	desc(&d[2], "exit.io", PV_STATS_RECORD_VCPU, 24, PV_STATS_CUMULATIVE, PV_STATS_UNIT_NONE, 0);
	desc(&d[3], "uptime_ns", PV_STATS_RECORD_VM, 8, PV_STATS_INSTANT, PV_STATS_UNIT_SECONDS, -9);
	((struct pv_stats_record_hdr *)(p + vm_off))->state = PV_STATS_ONLINE;
	*(uint64_t *)(p + vm_off + 8) = COMPAT_V1_UPTIME;
	for (unsigned i = 0; i < COMPAT_V1_VCPUS; i++) {
		uint8_t *r = p + vcpu_off + 64 * i;

		((struct pv_stats_record_hdr *)r)->state = PV_STATS_ONLINE;
		*(uint64_t *)(r + 8) = COMPAT_EXITS(i);
		*(uint64_t *)(r + 16) = COMPAT_RUN_NS(i);
		*(uint64_t *)(r + 24) = COMPAT_EXITS(i) / 2;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
		return -1;
	/* The writable mapping stays, as a VMM's does; readers get an O_RDONLY reopen. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	return ro;
}
