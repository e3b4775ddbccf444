// SPDX-License-Identifier: MIT
/*
 * Unit tests for the snapshot state file (snapfile/snapfmt.c): a build/parse
 * round trip keeps every field; every kind of damage gives a clear error
 * naming what is wrong (structure, truncation, checksum, newer format, a
 * missing or mis-sized property, a vCPU count that does not match, a
 * memory file name that leaves the directory, device and PMU states that
 * cannot exist); and no single-byte change of a file can crash the parser.
 */
#include "snapfile/snapfile.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static uint8_t regs[sizeof(struct kvm_regs)], sregs[sizeof(struct kvm_sregs)], xsave[4096],
	xcrs[sizeof(struct kvm_xcrs)], dregs[sizeof(struct kvm_debugregs)],
	lapic[sizeof(struct kvm_lapic_state)], events[sizeof(struct kvm_vcpu_events)],
	pit[sizeof(struct kvm_pit_state2)], chip[3][512];
static struct kvm_msr_entry msrs[3] = { { .index = 0x10, .data = 12345 },
					{ .index = 0x1b, .data = 0xfee00900 },
					{ .index = 0x6e0, .data = 777 } };
static struct kvm_cpuid_entry2 cpuid[2] = { { .function = 0, .eax = 0xd }, { .function = 1, .ebx = 0x800 } };

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

#define B(field, arr) ((struct snap_bytes){ (arr), sizeof(arr) })

/* A snapshot of n vCPUs with every field set to something recognisable. */
static struct snap *sample(unsigned n)
{
	struct snap *s = calloc(1, sizeof(*s));

	cr_assert(s);
	pattern(regs, sizeof(regs), 1);
	pattern(sregs, sizeof(sregs), 2);
	pattern(xsave, sizeof(xsave), 3);
	pattern(lapic, sizeof(lapic), 4);
	pattern(events, sizeof(events), 5);
	pattern(pit, sizeof(pit), 6);
	pattern(chip[0], 512, 7);
	s->nr_vcpus = n;
	s->mem_size = 64 << 20;
	s->pmu = true;
	s->host_kind = PV_HOST_KVM_PVM;
	s->host_flags = PV_HOST_NESTED;
	s->tsc_khz = 2600000;
	s->created_ns = 1700000000000000000ULL;
	s->kernel = "guests/snap.elf";
	s->cmdline = "phases=8";
	s->writer = "perfvisor";
	s->mem_checksum = 0x1234567890abcdefULL;
	s->clock = 987654321;
	s->clock_flags = 2;
	s->pit = B(pit, pit);
	s->pic_master = B(chip, chip[0]);
	s->pic_slave = B(chip, chip[1]);
	s->ioapic = B(chip, chip[2]);
	s->serial =
		(struct serial_state){ .ier = 1, .lcr = 3, .mcr = 8, .dll = 12, .msr = 0xb0, .rx_count = 3 };
	memcpy(s->serial.rx, "abc", 3);
	s->testdev = (struct testdev_counters){ 5, 4, 0, 0, 1 };
	s->i8042 = (struct i8042_state){ .ctr = 5, .pending = 0x60 };
	s->fwcfg = (struct fwcfg){ .selector = 0x19, .offset = 3 };
	s->cpuid_hide = CPUID_HIDE_XSAVE | CPUID_HIDE_CX16;
	pmu_caps_init(&s->pmu_caps);
	pmu_caps_set_available(&s->pmu_caps, PV_PMU_EV_TASK_CLOCK);
	s->vm_stats.n = 1;
	s->vm_stats.s[0] = (struct snap_stat){ "exits_total", 99 };
	for (unsigned i = 0; i < n; i++) {
		struct snap_vcpu *v = &s->vcpu[i];

		v->regs = B(regs, regs);
		v->sregs = B(sregs, sregs);
		v->xsave = B(xsave, xsave);
		v->xcrs = B(xcrs, xcrs);
		v->debugregs = B(dregs, dregs);
		v->lapic = B(lapic, lapic);
		v->events = B(events, events);
		v->msrs = B(msrs, msrs);
		v->cpuid = B(cpuid, cpuid);
		v->mp_state = i ? KVM_MP_STATE_HALTED : KVM_MP_STATE_RUNNABLE;
		v->pmu.global_ctrl = 3;
		v->pmu.cfg[0] = PV_PMU_EV_EXITS_IO | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN;
		v->pmu.cfg[1] = PV_PMU_EV_TASK_CLOCK | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN;
		v->pmu.value[0] = 1000000 + i;
		v->pmu.value[1] = 42;
		v->pmu.pmi_cfg = PV_PMU_PMI_MASK;
		v->pmu.page = 0x200000 | PV_PMU_PAGE_ENABLE;
		v->pmu.page_seq = 10;
		v->pmu.page_updates = 5;
		v->pmu.pmi_pending = true;
		v->stats.n = 2;
		v->stats.s[0] = (struct snap_stat){ "exits", 100 + i };
		v->stats.s[1] = (struct snap_stat){ "kvm.halt_exits", 7 };
	}
	return s;
}

static void *build(const struct snap *s, size_t *len)
{
	struct errbuf err;
	void *blob = NULL;

	cr_assert_eq(snap_build(s, &blob, len, &err), 0, "%s", err.msg);
	return blob;
}

/* Parse, expecting failure with rc and a message containing want. */
static void expect_error(const void *blob, size_t len, int rc, const char *want)
{
	struct snap *s = calloc(1, sizeof(*s));
	struct errbuf err = { "" };
	int got = snap_parse(blob, len, s, &err);

	cr_assert_eq(got, rc, "rc %d, want %d (%s)", got, rc, err.msg);
	cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
	free(s);
}

/* A writable copy with room to change it, and the checksum recomputed after. */
static void *editable(const void *blob, size_t len)
{
	void *c = malloc(len + 4096);

	cr_assert(c);
	cr_assert_eq(fdt_open_into(blob, c, (int)len + 4096), 0);
	return c;
}

static size_t resum(void *blob)
{
	cr_assert_eq(fdt_pack(blob), 0);
	cr_assert_eq(fdt_setprop_inplace_u64(blob, 0, "checksum", 0), 0);
	cr_assert_eq(fdt_setprop_inplace_u64(blob, 0, "checksum", snap_hash(blob, fdt_totalsize(blob))), 0);
	return fdt_totalsize(blob);
}

static int node(const void *blob, const char *path)
{
	int n = fdt_path_offset(blob, path);

	cr_assert_geq(n, 0, "no node %s", path);
	return n;
}

Test(snapfmt, round_trip)
{
	struct snap *s = sample(3), *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len;
	void *blob = build(s, &len);

	cr_assert_eq(snap_parse(blob, len, p, &err), 0, "%s", err.msg);
	cr_assert_eq(p->format, SNAP_FORMAT);
	cr_assert_eq(p->nr_vcpus, 3);
	cr_assert_eq(p->mem_size, s->mem_size);
	cr_assert(p->pmu);
	cr_assert_eq(p->host_kind, PV_HOST_KVM_PVM);
	cr_assert_eq(p->host_flags, PV_HOST_NESTED);
	cr_assert_eq(p->tsc_khz, 2600000);
	cr_assert_eq(p->created_ns, s->created_ns);
	cr_assert_str_eq(p->kernel, "guests/snap.elf");
	cr_assert_str_eq(p->cmdline, "phases=8");
	cr_assert_eq(p->mem_checksum, s->mem_checksum);
	cr_assert_eq(p->clock, 987654321);
	cr_assert_eq(p->clock_flags, 2);
	cr_assert_eq(memcmp(p->pit.p, pit, sizeof(pit)), 0);
	cr_assert_eq(memcmp(p->pic_master.p, chip[0], 512), 0);
	cr_assert_eq(memcmp(&p->serial, &s->serial, sizeof(p->serial)), 0);
	cr_assert_eq(memcmp(&p->testdev, &s->testdev, sizeof(p->testdev)), 0);
	cr_assert_eq(memcmp(&p->i8042, &s->i8042, sizeof(p->i8042)), 0);
	cr_assert_eq(p->fwcfg.selector, 0x19);
	cr_assert_eq(p->fwcfg.offset, 3);
	cr_assert_eq(p->cpuid_hide, CPUID_HIDE_XSAVE | CPUID_HIDE_CX16);
	cr_assert(memcmp(&p->pmu_caps, &s->pmu_caps, sizeof(p->pmu_caps)) == 0);
	cr_assert_eq(p->vm_stats.n, 1);
	cr_assert_str_eq(p->vm_stats.s[0].name, "exits_total");
	cr_assert_eq(p->vm_stats.s[0].value, 99);
	for (unsigned i = 0; i < 3; i++) {
		const struct snap_vcpu *v = &p->vcpu[i];

		cr_assert_eq(memcmp(v->regs.p, regs, sizeof(regs)), 0);
		cr_assert_eq(memcmp(v->sregs.p, sregs, sizeof(sregs)), 0);
		cr_assert_eq(v->xsave.len, sizeof(xsave));
		cr_assert_eq(memcmp(v->lapic.p, lapic, sizeof(lapic)), 0);
		cr_assert_eq(memcmp(v->events.p, events, sizeof(events)), 0);
		cr_assert_eq(v->msrs.len, sizeof(msrs));
		cr_assert_eq(memcmp(v->msrs.p, msrs, sizeof(msrs)), 0);
		cr_assert_eq(memcmp(v->cpuid.p, cpuid, sizeof(cpuid)), 0);
		cr_assert_eq(v->mp_state, i ? KVM_MP_STATE_HALTED : KVM_MP_STATE_RUNNABLE);
		cr_assert(memcmp(&v->pmu, &s->vcpu[i].pmu, sizeof(v->pmu)) == 0);
		cr_assert_eq(v->stats.n, 2);
		cr_assert_str_eq(v->stats.s[0].name, "exits");
		cr_assert_eq(v->stats.s[0].value, 100 + i);
		cr_assert_eq(v->stats.s[1].value, 7);
	}
	free(blob);
	free(s);
	free(p);
}

Test(snapfmt, not_a_tree_or_truncated)
{
	struct snap *s = sample(1);
	size_t len;
	uint8_t *blob = build(s, &len);
	static const char junk[64] = "not a device tree at all";

	expect_error(junk, sizeof(junk), -EINVAL, "not a flattened device tree");
	expect_error(blob, 10, -EINVAL, "not a flattened device tree");
	expect_error(blob, len - 1, -EINVAL, "truncated");
	expect_error(blob, len / 2, -EINVAL, "truncated");
	free(blob);
	free(s);
}

Test(snapfmt, flipped_byte_fails_the_checksum)
{
	struct snap *s = sample(2);
	size_t len;
	uint8_t *blob = build(s, &len);
	int n = node(blob, "/vcpu@1");
	int plen;
	uint8_t *p = (uint8_t *)fdt_getprop(blob, n, "lapic", &plen);

	p[100] ^= 0x10;
	expect_error(blob, len, -EPROTO, "checksum mismatch");
	free(blob);
	free(s);
}

Test(snapfmt, newer_format_is_refused_by_version)
{
	struct snap *s = sample(1);
	size_t len;
	uint8_t *blob = build(s, &len);

	/* No checksum fix-up: the version is checked first, a newer format may checksum differently. */
	cr_assert_eq(fdt_setprop_inplace_u32(blob, 0, "format", SNAP_FORMAT + 1), 0);
	expect_error(blob, len, -ENOTSUP, "snapshot format 2: this perfvisor reads formats 1 to 1");
	cr_assert_eq(fdt_setprop_inplace_u32(blob, 0, "format", 0), 0);
	expect_error(blob, len, -ENOTSUP, "format 0");
	free(blob);
	free(s);
}

/* Each property the format needs, deleted (checksum recomputed): the error names it. */
Test(snapfmt, every_required_property)
{
	static const struct {
		const char *node, *prop, *want;
	} cases[] = {
		{ "/", "format", "/format: property missing" },
		{ "/machine", "vcpus", "/machine/vcpus: property missing" },
		{ "/machine", "memory-size", "/machine/memory-size" },
		{ "/memory", "checksum", "/memory/checksum" },
		{ "/vm", "pit", "/vm/pit" },
		{ "/vm", "ioapic", "/vm/ioapic" },
		{ "/devices/serial@3f8", "lcr", "/devices/serial@3f8/lcr" },
		{ "/devices/i8042", "pending", "/devices/i8042/pending" },
		{ "/pmu", "avail", "/pmu/avail" },
		{ "/vcpu@1", "regs", "/vcpu@1/regs" },
		{ "/vcpu@1", "lapic", "/vcpu@1/lapic" },
		{ "/vcpu@1", "msrs", "/vcpu@1/msrs" },
		{ "/vcpu@1", "mp-state", "/vcpu@1/mp-state" },
		{ "/vcpu@1/pmu", "counter-value", "/vcpu@1/pmu/counter-value" },
	};
	struct snap *s = sample(2);
	size_t len;
	void *blob = build(s, &len);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *c = editable(blob, len);

		cr_assert_eq(fdt_delprop(c, node(c, cases[i].node), cases[i].prop), 0, "%s", cases[i].prop);
		expect_error(c, resum(c), -EINVAL, cases[i].want);
		free(c);
	}
	free(blob);
	free(s);
}

Test(snapfmt, missing_nodes)
{
	static const struct {
		const char *node, *want;
	} cases[] = {
		{ "/machine", "/machine: node missing" },
		{ "/memory", "/memory: node missing" },
		{ "/vm", "/vm: node missing" },
		{ "/devices", "/devices: node missing" },
		{ "/devices/testdev", "/devices/testdev: node missing" },
		{ "/pmu", "/pmu: node missing" },
		{ "/vcpu@0/stats", "/vcpu@0/stats: node missing" },
		{ "/vcpu@0/pmu", "/vcpu@0/pmu: node missing" },
		{ "/vcpu@0", "differs from machine/vcpus" },
	};
	struct snap *s = sample(1);
	size_t len;
	void *blob = build(s, &len);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *c = editable(blob, len);

		cr_assert_eq(fdt_del_node(c, node(c, cases[i].node)), 0);
		expect_error(c, resum(c), -EINVAL, cases[i].want);
		free(c);
	}
	free(blob);
	free(s);
}

static void set_and_expect(const void *blob, size_t len, const char *path, const char *prop, const void *val,
			   int vlen, const char *want)
{
	void *c = editable(blob, len);

	cr_assert_eq(fdt_setprop(c, node(c, path), prop, val, vlen), 0);
	expect_error(c, resum(c), -EINVAL, want);
	free(c);
}

Test(snapfmt, wrong_sizes_and_values)
{
	struct snap *s = sample(2);
	size_t len;
	void *blob = build(s, &len);
	uint8_t ten[10] = { 0 };
	fdt32_t two = cpu_to_fdt32(2), big = cpu_to_fdt32(65), zero = 0, ff = cpu_to_fdt32(0xff),
		bad_pending = cpu_to_fdt32(0x20);
	fdt64_t odd_size = cpu_to_fdt64((64 << 20) + 1), other = cpu_to_fdt64(32 << 20);
	uint64_t cfg[PMU_NR_COUNTERS] = { 0 };

	set_and_expect(blob, len, "/vcpu@0", "regs", ten, sizeof(ten), "/vcpu@0/regs: wrong size");
	set_and_expect(blob, len, "/vcpu@0", "msrs", ten, sizeof(ten), "/vcpu@0/msrs: wrong size");
	set_and_expect(blob, len, "/vcpu@0", "cpuid", ten, 0, "/vcpu@0/cpuid: wrong size");
	set_and_expect(blob, len, "/machine", "vcpus", ten, 2, "not a 32-bit value");
	set_and_expect(blob, len, "/machine", "vcpus", &big, 4, "value out of range");
	set_and_expect(blob, len, "/machine", "vcpus", &zero, 4, "zero vCPUs");
	set_and_expect(blob, len, "/machine", "memory-size", &odd_size, 8, "not a multiple of 4 KiB");
	set_and_expect(blob, len, "/memory", "size", &other, 8, "differs from machine/memory-size");
	set_and_expect(blob, len, "/memory", "file", "../../etc/passwd", 17, "the memory file must be");
	set_and_expect(blob, len, "/machine", "kernel", "no terminator", 13, "not a string");
	set_and_expect(blob, len, "/devices/serial@3f8", "ier", &ff, 4, "not a state a 16550 can be in");
	set_and_expect(blob, len, "/devices/i8042", "pending", &bad_pending, 4,
		       "not a command the i8042 waits on");
	set_and_expect(blob, len, "/vcpu@1", "index", &two, 4, "does not match the node name");
	set_and_expect(blob, len, "/stats", "Exits", &other, 8, "not a statistics field name");
	set_and_expect(blob, len, "/stats", "exits", ten, 4, "not a 64-bit value");
	/* PMU states a guest could never have made: the same checks as its MSR writes. */
	for (unsigned i = 0; i < PMU_NR_COUNTERS; i++)
		cfg[i] = cpu_to_fdt64(i == 3 ? (1ULL << 40) | PV_PMU_CFG_EN : 0);
	set_and_expect(blob, len, "/vcpu@1/pmu", "counter-config", cfg, sizeof(cfg), "reserved bits");
	cfg[3] = cpu_to_fdt64(PV_PMU_EV_EXITS_IO | PV_PMU_CFG_EN | PV_PMU_CFG_USR | PV_PMU_CFG_OS);
	set_and_expect(blob, len, "/vcpu@1/pmu", "global-ctrl", &other, 8, "GLOBAL_CTRL enables a counter");
	free(blob);
	free(s);
}

/* fw_cfg and cpuid-hide came within format 1: a snapshot without them reads as their reset state. */
Test(snapfmt, fwcfg_and_cpuid_hide_are_optional)
{
	struct snap *s = sample(1), *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len;
	void *blob = build(s, &len), *c = editable(blob, len);
	uint32_t bad = 4;

	cr_assert_eq(fdt_del_node(c, node(c, "/devices/fw_cfg@510")), 0);
	cr_assert_eq(fdt_delprop(c, node(c, "/machine"), "cpuid-hide"), 0);
	cr_assert_eq(snap_parse(c, resum(c), p, &err), 0, "%s", err.msg);
	cr_assert_eq(p->fwcfg.selector, 0);
	cr_assert_eq(p->fwcfg.offset, 0);
	cr_assert_eq(p->cpuid_hide, 0);
	set_and_expect(blob, len, "/machine", "cpuid-hide", &(uint32_t){ cpu_to_fdt32(bad) }, 4,
		       "value out of range");
	set_and_expect(blob, len, "/devices/fw_cfg@510", "selector", &(uint32_t){ cpu_to_fdt32(0x10000) }, 4,
		       "value out of range");
	free(c);
	free(blob);
	free(s);
	free(p);
}

Test(snapfmt, vcpu_nodes_must_match_the_count)
{
	struct snap *s = sample(3);
	size_t len;
	void *blob = build(s, &len), *c = editable(blob, len);

	/* machine/vcpus says 2, three vcpu@ nodes are there. */
	cr_assert_eq(fdt_setprop_u32(c, node(c, "/machine"), "vcpus", 2), 0);
	expect_error(c, resum(c), -EINVAL, "the number of vcpu@ nodes differs from machine/vcpus");
	free(c);
	c = editable(blob, len);
	cr_assert_eq(fdt_del_node(c, node(c, "/vcpu@2")), 0);
	expect_error(c, resum(c), -EINVAL, "differs from machine/vcpus");
	free(c);
	free(blob);
	free(s);
}

Test(snapfmt, unknown_properties_and_nodes_are_ignored)
{
	struct snap *s = sample(1), *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len;
	void *blob = build(s, &len), *c = editable(blob, len);

	/* What a later version might add: older readers carry on. */
	cr_assert_eq(fdt_setprop_u32(c, node(c, "/machine"), "future-feature", 7), 0);
	cr_assert_geq(fdt_add_subnode(c, 0, "future-device"), 0);
	len = resum(c);
	cr_assert_eq(snap_parse(c, len, p, &err), 0, "%s", err.msg);
	free(c);
	free(blob);
	free(s);
	free(p);
}

/* Every byte of a one-vCPU file changed three ways (checksum fixed up where it can be): never a crash. */
Test(snapfmt, no_single_byte_change_crashes_the_parser)
{
	static const uint8_t deltas[] = { 0x01, 0x80, 0xff };
	struct snap *s = sample(1), *p = calloc(1, sizeof(*p));
	size_t len;
	uint8_t *blob = build(s, &len), *c = malloc(len);
	unsigned ok = 0, refused = 0;

	for (size_t i = 0; i < len; i++) {
		for (size_t d = 0; d < sizeof(deltas); d++) {
			struct errbuf err;

			memcpy(c, blob, len);
			c[i] ^= deltas[d];
			/* Where the tree is still sound, fix the checksum so the deeper checks run. */
			if (fdt_check_full(c, len) == 0 && fdt_setprop_inplace_u64(c, 0, "checksum", 0) == 0)
				fdt_setprop_inplace_u64(c, 0, "checksum", snap_hash(c, len));
			if (snap_parse(c, len, p, &err) == 0)
				ok++;
			else
				refused++;
		}
	}
	cr_assert_gt(refused, 0);
	cr_log_info("%u changed files parsed, %u refused", ok, refused);
	free(c);
	free(blob);
	free(s);
	free(p);
}
