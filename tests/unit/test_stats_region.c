// SPDX-License-Identifier: MIT
/* Unit tests of the statistics region's producer side: scoreboard, layout, seals. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats/stats.h"

static struct stats_region *region(unsigned vcpus)
{
	struct stats_region *r;
	struct errbuf err;

	cr_assert_eq(stats_region_create(&r, vcpus, &err), 0, "%s", err.msg);
	return r;
}

static struct sb_field declare(struct stats_region *r, enum pv_stats_record rec, const char *name)
{
	struct sb_field f;
	struct errbuf err;

	cr_assert_eq(sb_declare(r, rec, name, PV_STATS_CUMULATIVE, PV_STATS_UNIT_NONE, 0, &f, &err), 0, "%s",
		     err.msg);
	return f;
}

Test(region, declare_rejects_bad_fields)
{
	struct stats_region *r = region(2);
	struct sb_field f;
	struct errbuf err;
	char longname[PV_STATS_NAME_MAX + 1];

	declare(r, PV_STATS_RECORD_VCPU, "exits");
	cr_assert_eq(sb_declare(r, PV_STATS_RECORD_VCPU, "exits", PV_STATS_CUMULATIVE, 0, 0, &f, &err),
		     -EEXIST);
	cr_assert(strstr(err.msg, "declared twice"));
	/* The same name in the other record kind is a different field. */
	declare(r, PV_STATS_RECORD_VM, "exits");
	cr_assert_eq(sb_declare(r, PV_STATS_RECORD_VCPU, "Bad Name", PV_STATS_CUMULATIVE, 0, 0, &f, &err),
		     -EINVAL);
	cr_assert_eq(sb_declare(r, PV_STATS_RECORD_VCPU, "", PV_STATS_CUMULATIVE, 0, 0, &f, &err), -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert_eq(sb_declare(r, PV_STATS_RECORD_VCPU, longname, PV_STATS_CUMULATIVE, 0, 0, &f, &err),
		     -EINVAL);
	cr_assert_eq(sb_declare(r, PV_STATS_RECORD_VCPU, "k", 7, 0, 0, &f, &err), -EINVAL);
	cr_assert_eq(sb_declare(r, 9, "rec", PV_STATS_CUMULATIVE, 0, 0, &f, &err), -EINVAL);
	cr_assert_eq(stats_region_freeze(r, &err), 0, "%s", err.msg);
	cr_assert_eq(sb_declare(r, PV_STATS_RECORD_VCPU, "late", PV_STATS_CUMULATIVE, 0, 0, &f, &err),
		     -EBUSY);
	stats_region_destroy(r);
}

Test(region, create_rejects_bad_slot_counts)
{
	struct stats_region *r;
	struct errbuf err;

	cr_assert_eq(stats_region_create(&r, 0, &err), -EINVAL);
	cr_assert_eq(stats_region_create(&r, 100000, &err), -EINVAL);
	stats_region_destroy(NULL);
}

Test(region, layout_meets_the_abi_invariants)
{
	struct stats_region *r = region(5);
	struct errbuf err;
	struct pv_stats_header h;

	for (int i = 0; i < 9; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		declare(r, PV_STATS_RECORD_VCPU, name);
	}
	declare(r, PV_STATS_RECORD_VM, "uptime");
	cr_assert_eq(stats_region_freeze(r, &err), 0, "%s", err.msg);
	cr_assert_eq(pread(stats_region_fd(r), &h, sizeof(h), 0), (ssize_t)sizeof(h));
	cr_assert_eq(h.magic, PV_STATS_MAGIC);
	cr_assert_eq(h.header_size, sizeof(h));
	cr_assert_eq(h.desc_count, 10);
	cr_assert_eq(h.desc_size, sizeof(struct pv_stats_desc));
	cr_assert_geq(h.desc_offset, h.header_size);
	cr_assert_eq(h.vcpu.size, 8 + 9 * 8);
	cr_assert_geq(h.vcpu.stride, h.vcpu.size);
	cr_assert_eq(h.vcpu.stride % PV_STATS_ALIGN, 0);
	cr_assert_eq(h.vcpu.slots, 5);
	cr_assert_eq(h.vcpu.online, 0);
	cr_assert_eq(h.vm.slots, 1);
	cr_assert_geq(h.vm.offset, h.desc_offset + h.desc_count * h.desc_size);
	cr_assert_geq(h.vcpu.offset, h.vm.offset + h.vm.stride);
	cr_assert_geq(h.region_size, h.vcpu.offset + (uint64_t)h.vcpu.slots * h.vcpu.stride);
	cr_assert_eq((off_t)h.region_size, lseek(stats_region_fd(r), 0, SEEK_END));
	for (unsigned i = 0; i < sizeof(h.reserved) / sizeof(h.reserved[0]); i++)
		cr_assert_eq(h.reserved[i], 0);
	stats_region_destroy(r);
}

Test(region, scoreboard_add_get_sum_and_online)
{
	struct stats_region *r = region(4);
	struct sb_field a = declare(r, PV_STATS_RECORD_VCPU, "a");
	struct sb_field b = declare(r, PV_STATS_RECORD_VCPU, "b");
	struct errbuf err;
	uint32_t seq;

	cr_assert_eq(stats_region_freeze(r, &err), 0, "%s", err.msg);
	for (unsigned i = 0; i < 3; i++) {
		struct sb_entry e = stats_vcpu_entry(r, i);

		stats_vcpu_online(r, i);
		sb_begin(e);
		memcpy(&seq, e.base, sizeof(seq));
		cr_assert_eq(seq % 2, 1, "odd while writing");
		sb_add(e, a, 10 + i);
		sb_add(e, a, 1);
		sb_set(e, b, 7);
		sb_end(e);
		memcpy(&seq, e.base, sizeof(seq));
		cr_assert_eq(seq, 2, "even after one update");
	}
	cr_assert_eq(stats_region_online(r), 3);
	cr_assert_eq(sb_get(r, 1, a), 12);
	cr_assert_eq(sb_get(r, 2, b), 7);
	cr_assert_eq(sb_sum(r, a), 11 + 12 + 13);
	cr_assert_eq(sb_sum(r, b), 21);
	/* Entries never move: the slot of vCPU 3 is where it always was, and still zero. */
	cr_assert_eq(sb_get(r, 3, a), 0);
	stats_region_destroy(r);
}

Test(region, sealed_and_read_only_for_readers)
{
	struct stats_region *r = region(2);
	struct errbuf err;
	int ro, seals;
	void *p;

	declare(r, PV_STATS_RECORD_VCPU, "x");
	cr_assert_eq(stats_region_freeze(r, &err), 0, "%s", err.msg);
	seals = fcntl(stats_region_fd(r), F_GET_SEALS);
	cr_assert_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL),
		     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	ro = stats_region_open_ro(r);
	cr_assert_geq(ro, 0);
	cr_assert_neq(ro, stats_region_fd(r), "a new descriptor, never the producer's");
	cr_assert_eq(fcntl(ro, F_GETFL) & O_ACCMODE, O_RDONLY);
	cr_assert_eq(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0), MAP_FAILED);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro, 0);
	cr_assert_neq(p, MAP_FAILED);
	cr_assert_eq(mprotect(p, 4096, PROT_READ | PROT_WRITE), -1);
	cr_assert_eq(ftruncate(ro, 1 << 20), -1);
	/* Even the producer's fd cannot grow, shrink or map new writable views. */
	cr_assert_eq(ftruncate(stats_region_fd(r), 1 << 20), -1);
	cr_assert_eq(ftruncate(stats_region_fd(r), 0), -1);
	cr_assert_eq(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, stats_region_fd(r), 0), MAP_FAILED);
	munmap(p, 4096);
	close(ro);
	stats_region_destroy(r);
}

Test(region, sb_read_is_consistent_or_busy)
{
	struct stats_region *r = region(2);
	struct sb_field a = declare(r, PV_STATS_RECORD_VCPU, "a");
	struct sb_field b = declare(r, PV_STATS_RECORD_VCPU, "b");
	struct sb_field v = declare(r, PV_STATS_RECORD_VM, "v");
	struct sb_field f[2] = { a, b };
	struct errbuf err;
	struct sb_entry e;
	uint64_t out[2] = { 0, 0 };

	cr_assert_eq(stats_region_freeze(r, &err), 0, "%s", err.msg);
	stats_vcpu_online(r, 0);
	stats_vcpu_online(r, 1);
	e = stats_vcpu_entry(r, 1);
	sb_begin(e);
	sb_set(e, a, 5);
	sb_set(e, b, 6);
	sb_end(e);
	cr_assert_eq(sb_read(r, 1, f, 2, out), 0);
	cr_assert_eq(out[0], 5);
	cr_assert_eq(out[1], 6);
	sb_begin(stats_vm_entry(r));
	sb_set(stats_vm_entry(r), v, 9);
	sb_end(stats_vm_entry(r));
	cr_assert_eq(sb_read(r, 0, &v, 1, out), 0, "the VM record");
	cr_assert_eq(out[0], 9);
	/* A writer inside an update: a bounded number of tries, then -EBUSY. */
	sb_begin(e);
	cr_assert_eq(sb_read(r, 1, f, 2, out), -EBUSY);
	sb_end(e);
	cr_assert_eq(sb_read(r, 1, f, 2, out), 0);
	stats_region_destroy(r);
}
