// SPDX-License-Identifier: MIT
/*
 * Unit tests for the snapshot state file (snapfile/write.c, parse.c), with a
 * schema of the test's own whose parts use every kind of field: a
 * build/parse round trip keeps every field; every kind of damage gives a
 * clear error naming what is wrong (structure, truncation, checksum, newer
 * format, a missing or mis-sized property, a vCPU count that does not
 * match, a memory file name that leaves the directory, part states their
 * own checks refuse); and no single-byte change of a file can crash the
 * parser. The VM's real schema is tested in test_vmm_snapschema.c.
 */
#include "snapfile/snapfile.h"
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "snap_edit.h"

static uint8_t regs[sizeof(struct kvm_regs)], sregs[sizeof(struct kvm_sregs)], xsave[4096],
	xcrs[sizeof(struct kvm_xcrs)], dregs[sizeof(struct kvm_debugregs)],
	lapic[sizeof(struct kvm_lapic_state)], events[sizeof(struct kvm_vcpu_events)],
	pit[sizeof(struct kvm_pit_state2)], chip[3][512];
static struct kvm_msr_entry msrs[3] = { { .index = 0x10, .data = 12345 },
					{ .index = 0x1b, .data = 0xfee00900 },
					{ .index = 0x6e0, .data = 777 } };
static struct kvm_cpuid_entry2 cpuid[2] = { { .function = 0, .eax = 0xd }, { .function = 1, .ebx = 0x800 } };

/* ---- a schema of the test's own: parts with every kind of field -------------------- */

struct uart {
	uint8_t ier;
	uint16_t div;
	uint32_t base;
	bool thri;
	uint64_t count;
	uint64_t hist[3];
	uint16_t n;
	uint8_t rx[16];
};

static const char *uart_check(const struct snap *s, const void *state, const char **prop)
{
	const struct uart *u = state;

	(void)s;
	(void)prop;
	return u->ier & 0xf0 ? "not a state a 16550 can be in" : NULL;
}

static const struct snap_field uart_fields[] = {
	SNAP_FIELD(struct uart, "ier", SNAP_F_U8, ier, 0xff),
	SNAP_FIELD(struct uart, "div", SNAP_F_U16, div, 0xffff),
	SNAP_FIELD(struct uart, "base", SNAP_F_U32, base, 0xffff),
	SNAP_FIELD(struct uart, "thri", SNAP_F_BOOL, thri, 1),
	SNAP_FIELD(struct uart, "count", SNAP_F_U64, count, 0),
	SNAP_FIELD_U64S(struct uart, "hist", hist),
	SNAP_FIELD_BYTES(struct uart, "rx", rx, n),
};

static const struct snap_part uart_part = {
	"serial@3f8",
	sizeof(struct uart),
	uart_fields,
	sizeof(uart_fields) / sizeof(uart_fields[0]),
	0,
	uart_check,
	NULL,
};

struct kbd {
	uint8_t pending;
};

static const char *kbd_check(const struct snap *s, const void *state, const char **prop)
{
	const struct kbd *k = state;

	(void)s;
	*prop = "pending";
	return k->pending && k->pending != 0x60 ? "not a command the i8042 waits on" : NULL;
}

static const struct snap_field kbd_fields[] = { SNAP_FIELD(struct kbd, "pending", SNAP_F_U8, pending, 0xff) };
static const struct snap_part kbd_part = { "i8042", sizeof(struct kbd), kbd_fields, 1, 0, kbd_check, NULL };

struct cfg {
	uint16_t selector;
	uint32_t offset;
	uint32_t later; /* a field added to the part later: optional */
};

static const struct snap_field cfg_fields[] = {
	SNAP_FIELD(struct cfg, "selector", SNAP_F_U16, selector, 0xffff),
	SNAP_FIELD(struct cfg, "offset", SNAP_F_U32, offset, UINT32_MAX),
	SNAP_FIELD_OPT(struct cfg, "later", SNAP_F_U32, later, 100),
};
static const struct snap_part cfg_part = {
	"fw_cfg@510", sizeof(struct cfg), cfg_fields, 3, SNAP_PART_OPTIONAL, NULL, NULL
};

struct caps {
	uint32_t nr;
	uint64_t avail[2];
};

static const struct snap_field caps_fields[] = {
	SNAP_FIELD(struct caps, "nr-counters", SNAP_F_U32, nr, 2),
	SNAP_FIELD_U64S(struct caps, "avail", avail),
};
static const struct snap_part caps_part = { "pmu", sizeof(struct caps), caps_fields, 2, SNAP_PART_PMU, NULL,
					    NULL };

struct vctr {
	uint64_t cfg[2], value;
	bool pending;
};

/* A counter configured beyond the capabilities the file offers: the cross-part check. */
static const char *vctr_check(const struct snap *s, const void *state, const char **prop)
{
	const struct caps *c = snap_part_state(s, &caps_part, -1);
	const struct vctr *v = state;

	(void)prop;
	for (unsigned i = 0; i < 2; i++)
		if (v->cfg[i] && (!c || i >= c->nr))
			return "a counter the capabilities do not have";
	return NULL;
}

static const struct snap_field vctr_fields[] = {
	SNAP_FIELD_U64S(struct vctr, "counter-config", cfg),
	SNAP_FIELD(struct vctr, "counter-value", SNAP_F_U64, value, 0),
	SNAP_FIELD(struct vctr, "pmi-pending", SNAP_F_BOOL, pending, 1),
};
static const struct snap_part vctr_part = { "pmu",	   sizeof(struct vctr), vctr_fields, 3,
					    SNAP_PART_PMU, vctr_check,		NULL };

static const struct snap_part *const devices[] = { &uart_part, &kbd_part, &cfg_part };
static const struct snap_part *const vm_parts[] = { &caps_part, &snap_stats_part };
static const struct snap_part *const vcpu_parts[] = { &vctr_part, &snap_stats_part };
static const struct snap_schema schema = { devices, 3, vm_parts, 2, vcpu_parts, 2 };

static struct uart uart;
static struct kbd kbd;
static struct cfg cfg;
static struct caps caps;
static struct vctr vctr[4];
static struct snap_stats vm_stats, vstats[4];

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
	s->cpuid_hide = CPUID_HIDE_XSAVE | CPUID_HIDE_CX16;
	s->cpuid_add = CPUID_ADD_TSC_DEADLINE;
	s->schema = &schema;
	uart = (struct uart){ .ier = 1, .div = 0x1234, .base = 0x3f8, .thri = true, .count = 77, .n = 3 };
	memcpy(uart.rx, "abc", 3);
	uart.hist[0] = 5;
	uart.hist[2] = 0xffffffffffULL;
	kbd = (struct kbd){ .pending = 0x60 };
	cfg = (struct cfg){ .selector = 0x19, .offset = 3, .later = 7 };
	caps = (struct caps){ .nr = 2, .avail = { 0xf0, 1 } };
	vm_stats = (struct snap_stats){ 1, { { "exits_total", 99 } } };
	s->dev[0] = &uart;
	s->dev[1] = &kbd;
	s->dev[2] = &cfg;
	s->vm[0] = &caps;
	s->vm[1] = &vm_stats;
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
		vctr[i] = (struct vctr){ .cfg = { 1, 2 }, .value = 1000000 + i, .pending = true };
		vstats[i] = (struct snap_stats){ 2, { { "exits", 100 + i }, { "kvm.halt_exits", 7 } } };
		v->part[0] = &vctr[i];
		v->part[1] = &vstats[i];
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
	snap_expect_error(&schema, blob, len, rc, want);
}

Test(snapfmt, round_trip)
{
	struct snap *s = sample(3), *p = calloc(1, sizeof(*p));
	const struct snap_stats *pstats;
	struct errbuf err;
	size_t len;
	void *blob = build(s, &len);

	cr_assert_eq(snap_parse(blob, len, &schema, p, &err), 0, "%s", err.msg);
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
	cr_assert_eq(memcmp(p->dev[0], &uart, sizeof(uart)), 0);
	cr_assert_eq(memcmp(p->dev[1], &kbd, sizeof(kbd)), 0);
	cr_assert_eq(((const struct cfg *)p->dev[2])->selector, 0x19);
	cr_assert_eq(((const struct cfg *)p->dev[2])->offset, 3);
	cr_assert_eq(((const struct cfg *)p->dev[2])->later, 7);
	cr_assert_eq(p->cpuid_hide, CPUID_HIDE_XSAVE | CPUID_HIDE_CX16);
	cr_assert_eq(p->cpuid_add, CPUID_ADD_TSC_DEADLINE);
	cr_assert(memcmp(p->vm[0], &caps, sizeof(caps)) == 0);
	cr_assert_eq(snap_part_state(p, &caps_part, -1), p->vm[0]);
	pstats = snap_part_state(p, &snap_stats_part, -1);
	cr_assert_eq(pstats->n, 1);
	cr_assert_str_eq(pstats->s[0].name, "exits_total");
	cr_assert_eq(pstats->s[0].value, 99);
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
		cr_assert(memcmp(v->part[0], &vctr[i], sizeof(vctr[i])) == 0);
		pstats = snap_part_state(p, &snap_stats_part, (int)i);
		cr_assert_eq(pstats->n, 2);
		cr_assert_str_eq(pstats->s[0].name, "exits");
		cr_assert_eq(pstats->s[0].value, 100 + i);
		cr_assert_eq(pstats->s[1].value, 7);
	}
	snap_fini(p);
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
		{ "/devices/serial@3f8", "div", "/devices/serial@3f8/div" },
		{ "/devices/serial@3f8", "rx", "/devices/serial@3f8/rx" },
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

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		snap_delete_and_expect(&schema, blob, len, cases[i].node, cases[i].prop, cases[i].want);
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
		{ "/devices/i8042", "/devices/i8042: node missing" },
		{ "/pmu", "/pmu: node missing" },
		{ "/vcpu@0/stats", "/vcpu@0/stats: node missing" },
		{ "/vcpu@0/pmu", "/vcpu@0/pmu: node missing" },
		{ "/vcpu@0", "differs from machine/vcpus" },
	};
	struct snap *s = sample(1);
	size_t len;
	void *blob = build(s, &len);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		snap_delete_and_expect(&schema, blob, len, cases[i].node, NULL, cases[i].want);
	free(blob);
	free(s);
}

static void set_and_expect(const void *blob, size_t len, const char *path, const char *prop, const void *val,
			   int vlen, const char *want)
{
	snap_set_and_expect(&schema, blob, len, path, prop, val, vlen, want);
}

Test(snapfmt, wrong_sizes_and_values)
{
	struct snap *s = sample(2);
	size_t len;
	void *blob = build(s, &len);
	uint8_t ten[10] = { 0 };
	uint8_t big_rx[17] = { 0 };
	fdt32_t two = cpu_to_fdt32(2), big = cpu_to_fdt32(65), zero = 0, ff = cpu_to_fdt32(0xff),
		bad_pending = cpu_to_fdt32(0x20), big_ier = cpu_to_fdt32(0x100), one = cpu_to_fdt32(1);
	fdt64_t odd_size = cpu_to_fdt64((64 << 20) + 1), other = cpu_to_fdt64(32 << 20);

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
	set_and_expect(blob, len, "/devices/serial@3f8", "ier", &ff, 4,
		       "/devices/serial@3f8: not a state a 16550");
	set_and_expect(blob, len, "/devices/serial@3f8", "ier", &big_ier, 4,
		       "/devices/serial@3f8/ier: value out of range");
	set_and_expect(blob, len, "/devices/serial@3f8", "thri", &two, 4,
		       "/devices/serial@3f8/thri: value out of range");
	set_and_expect(blob, len, "/devices/serial@3f8", "hist", ten, 8,
		       "/devices/serial@3f8/hist: wrong number");
	set_and_expect(blob, len, "/devices/serial@3f8", "rx", big_rx, sizeof(big_rx),
		       "/devices/serial@3f8/rx: wrong size");
	set_and_expect(blob, len, "/devices/serial@3f8", "count", ten, 4,
		       "/devices/serial@3f8/count: not a 64-bit value");
	set_and_expect(blob, len, "/devices/i8042", "pending", &bad_pending, 4,
		       "/devices/i8042/pending: not a command the i8042 waits on");
	set_and_expect(blob, len, "/vcpu@1", "index", &two, 4, "does not match the node name");
	set_and_expect(blob, len, "/stats", "Exits", &other, 8, "not a statistics field name");
	set_and_expect(blob, len, "/stats", "exits", ten, 4, "not a 64-bit value");
	/* A part's check may look at another part: a counter beyond the file's capabilities. */
	set_and_expect(blob, len, "/pmu", "nr-counters", &one, 4, "/vcpu@0/pmu: a counter the capabilities");
	free(blob);
	free(s);
}

/*
 * fw_cfg, cpuid-hide and cpuid-add came within format 1: a snapshot without them parses (no
 * state; cpuid-hide 0; cpuid-add 0, so an older snapshot's guest keeps the CPUID it had).
 */
Test(snapfmt, fwcfg_and_cpuid_hide_are_optional)
{
	struct snap *s = sample(1), *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len;
	void *blob = build(s, &len), *c = editable(blob, len);
	uint32_t bad = 16; /* beyond every CPUID_HIDE_* bit */

	cr_assert_eq(fdt_del_node(c, node(c, "/devices/fw_cfg@510")), 0);
	cr_assert_eq(fdt_delprop(c, node(c, "/machine"), "cpuid-hide"), 0);
	cr_assert_eq(fdt_delprop(c, node(c, "/machine"), "cpuid-add"), 0);
	cr_assert_eq(snap_parse(c, resum(c), &schema, p, &err), 0, "%s", err.msg);
	cr_assert_null(p->dev[2],
		       "an optional part that is absent has no state (the component keeps its own)");
	cr_assert_eq(p->cpuid_hide, 0);
	cr_assert_eq(p->cpuid_add, 0);
	snap_fini(p);
	set_and_expect(blob, len, "/machine", "cpuid-hide", &(uint32_t){ cpu_to_fdt32(bad) }, 4,
		       "value out of range");
	set_and_expect(blob, len, "/machine", "cpuid-add", &(uint32_t){ cpu_to_fdt32(2) }, 4,
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
	cr_assert_eq(snap_parse(c, len, &schema, p, &err), 0, "%s", err.msg);
	snap_fini(p);
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
			if (snap_parse(c, len, &schema, p, &err) == 0)
				ok++;
			else
				refused++;
			snap_fini(p);
		}
	}
	cr_assert_gt(refused, 0);
	cr_log_info("%u changed files parsed, %u refused", ok, refused);
	free(c);
	free(blob);
	free(s);
	free(p);
}

/* A field added to a part later (SNAP_FIELD_OPT): absent reads as 0, present is checked as any other. */
Test(snapfmt, optional_fields_of_a_part)
{
	struct snap *s = sample(1), *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len;
	void *blob = build(s, &len), *c = editable(blob, len);

	cr_assert_eq(fdt_delprop(c, node(c, "/devices/fw_cfg@510"), "later"), 0);
	cr_assert_eq(snap_parse(c, resum(c), &schema, p, &err), 0, "%s", err.msg);
	cr_assert_eq(((const struct cfg *)p->dev[2])->offset, 3, "the other fields are read");
	cr_assert_eq(((const struct cfg *)p->dev[2])->later, 0, "an older writer's file: 0");
	snap_fini(p);
	snap_delete_and_expect(&schema, blob, len, "/devices/fw_cfg@510", "offset",
			       "/devices/fw_cfg@510/offset: property missing");
	set_and_expect(blob, len, "/devices/fw_cfg@510", "later", &(uint32_t){ cpu_to_fdt32(101) }, 4,
		       "value out of range");
	free(c);
	free(blob);
	/* Written only when not 0: a state an older perfvisor could have made writes back as it did. */
	((struct cfg *)s->dev[2])->later = 0;
	blob = build(s, &len);
	cr_assert_null(fdt_getprop(blob, node(blob, "/devices/fw_cfg@510"), "later", NULL), "0: not written");
	cr_assert_not_null(fdt_getprop(blob, node(blob, "/devices/fw_cfg@510"), "offset", NULL));
	free(blob);
	free(s);
	free(p);
}
