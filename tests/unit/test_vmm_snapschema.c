// SPDX-License-Identifier: MIT
/*
 * Unit tests for the VM's snapshot schema (vmm/snapschema.c): the parts
 * the devices (devices/table.c), the PV PMU and the statistics declare.
 * tests/unit/data/snapshot-format1.fdt was written by perfvisor's format-1
 * writer before the parts described themselves (at 974c136, from the
 * sample of the state file's own tests, 4 vCPUs): today's parser reads
 * every value of it, and today's writer writes it back byte for byte.
 * Then each part's own checks, as the state file's tests had them.
 */
#include "vmm/vmm.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snap_edit.h"

#define GOLDEN "tests/unit/data/snapshot-format1.fdt"

static void *golden(size_t *len)
{
	FILE *f = fopen(GOLDEN, "rb");
	void *buf = malloc(1 << 20);

	cr_assert(f, "cannot open %s (run from the repository's root)", GOLDEN);
	cr_assert(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	cr_assert_gt(*len, 0);
	return buf;
}

static const void *dev_state(const struct snap *s, const struct dev_desc *d)
{
	const void *st = snap_part_state(s, d->state, -1);

	cr_assert(st, "no state for %s", d->name);
	return st;
}

Test(snapschema, every_device_with_state_has_a_part_in_table_order)
{
	const struct snap_schema *sc = vm_snap_schema();
	unsigned k = 0, n_usecs = 0;

	for (unsigned i = 0; i < dev_table_len; i++) {
		if (!dev_table[i]->state)
			continue;
		cr_assert_lt(k, sc->nr_devices);
		cr_assert_eq(sc->devices[k], dev_table[i]->state, "part %u is not %s's", k,
			     dev_table[i]->name);
		k++;
	}
	/* then the virtio devices', made only when asked for */
	cr_assert_lt(k, sc->nr_devices);
	cr_assert_eq(sc->devices[k], &virtio_rng_part);
	cr_assert(virtio_rng_part.flags & SNAP_PART_OPTIONAL, "older snapshots lack it");
	/* the disks', in order */
	for (unsigned i = 0; i < VIRTIO_BLK_MAX_PARTS; i++) {
		cr_assert_lt(k + 1 + i, sc->nr_devices);
		cr_assert_eq(sc->devices[k + 1 + i], &virtio_blk_parts[i]);
		cr_assert(virtio_blk_parts[i].flags & SNAP_PART_OPTIONAL);
	}
	k += VIRTIO_BLK_MAX_PARTS;
	/* then the nets' */
	for (unsigned i = 0; i < VIRTIO_NET_MAX; i++) {
		cr_assert_lt(k + 1 + i, sc->nr_devices);
		cr_assert_eq(sc->devices[k + 1 + i], &virtio_net_parts[i]);
		cr_assert(virtio_net_parts[i].flags & SNAP_PART_OPTIONAL, "older snapshots lack it");
		/* its coalescing came later: an older snapshot's net reads as coalescing nothing */
		for (unsigned f = 0; f < virtio_net_parts[i].nr_fields; f++) {
			const struct snap_field *fd = &virtio_net_parts[i].fields[f];

			if (!strcmp(fd->name, "rx-usecs") || !strcmp(fd->name, "tx-usecs")) {
				cr_assert(fd->optional, "%s is optional", fd->name);
				cr_assert_eq(fd->max, VIRTIO_NET_USECS_MAX);
				n_usecs++;
			}
		}
	}
	cr_assert_eq(n_usecs, 2 * VIRTIO_NET_MAX, "rx-usecs and tx-usecs in every net's part");
	cr_assert_eq(k + 1 + VIRTIO_NET_MAX, sc->nr_devices);
}

Test(snapschema, format1_file_reads_and_writes_back_byte_for_byte)
{
	struct snap *p = calloc(1, sizeof(*p));
	const struct serial_state *u;
	const struct testdev_counters *t;
	const struct i8042_state *k;
	const struct fwcfg *fw;
	const struct pmu_caps *caps;
	const struct snap_stats *st;
	struct errbuf err;
	size_t len, len2;
	void *blob = golden(&len), *again = NULL;

	cr_assert_eq(snap_parse(blob, len, vm_snap_schema(), p, &err), 0, "%s", err.msg);
	cr_assert_eq(p->nr_vcpus, 4);
	cr_assert(p->pmu);
	cr_assert_str_eq(p->kernel, "guests/snap.elf");
	u = dev_state(p, &dev_serial);
	cr_assert_eq(u->ier, 1);
	cr_assert_eq(u->lcr, 3);
	cr_assert_eq(u->mcr, 8);
	cr_assert_eq(u->dll, 12);
	cr_assert_eq(u->msr, 0xb0);
	cr_assert_eq(u->rx_count, 3);
	cr_assert_eq(memcmp(u->rx, "abc", 3), 0);
	t = dev_state(p, &dev_testdev);
	cr_assert_eq(t->prints, 5);
	cr_assert_eq(t->syncs, 4);
	cr_assert_eq(t->bad_requests, 1);
	k = dev_state(p, &dev_i8042);
	cr_assert_eq(k->ctr, 5);
	cr_assert_eq(k->pending, 0x60);
	fw = dev_state(p, &dev_fwcfg);
	cr_assert_eq(fw->selector, 0x19);
	cr_assert_eq(fw->offset, 3);
	cr_assert_null(dev_debugexit.state, "the debug-exit port has nothing to keep");
	caps = snap_part_state(p, &pmu_caps_part, -1);
	cr_assert(caps);
	cr_assert(pmu_caps_available(caps, PV_PMU_EV_TASK_CLOCK));
	st = snap_part_state(p, &snap_stats_part, -1);
	cr_assert_eq(st->n, 1);
	cr_assert_str_eq(st->s[0].name, "exits_total");
	cr_assert_eq(st->s[0].value, 99);
	for (unsigned i = 0; i < 4; i++) {
		const struct pmu_vcpu_state *v = snap_part_state(p, &pmu_vcpu_part, (int)i);

		cr_assert(v);
		cr_assert_eq(v->global_ctrl, 3);
		cr_assert_eq(v->cfg[0], PV_PMU_EV_EXITS_IO | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN);
		cr_assert_eq(v->value[0], 1000000 + i);
		cr_assert_eq(v->value[1], 42);
		cr_assert_eq(v->pmi_cfg, PV_PMU_PMI_MASK);
		cr_assert_eq(v->page, 0x200000 | PV_PMU_PAGE_ENABLE);
		cr_assert_eq(v->page_seq, 10);
		cr_assert_eq(v->page_updates, 5);
		cr_assert(v->pmi_pending);
		cr_assert(!v->throttled);
		st = snap_part_state(p, &snap_stats_part, (int)i);
		cr_assert_eq(st->n, 2);
		cr_assert_str_eq(st->s[0].name, "exits");
		cr_assert_eq(st->s[0].value, 100 + i);
		cr_assert_str_eq(st->s[1].name, "kvm.halt_exits");
	}
	cr_assert_eq(snap_build(p, &again, &len2, &err), 0, "%s", err.msg);
	cr_assert_eq(len2, len, "the writer wrote %zu bytes, format 1's %zu", len2, len);
	cr_assert_eq(memcmp(again, blob, len), 0, "the writer's file differs from format 1's");
	snap_fini(p);
	free(again);
	free(blob);
	free(p);
}

Test(snapschema, every_part_property_is_required)
{
	static const struct {
		const char *node, *prop, *want;
	} cases[] = {
		{ "/devices/serial@3f8", "lcr", "/devices/serial@3f8/lcr" },
		{ "/devices/serial@3f8", "rx", "/devices/serial@3f8/rx" },
		{ "/devices/testdev", "prints", "/devices/testdev/prints" },
		{ "/devices/i8042", "pending", "/devices/i8042/pending" },
		{ "/devices/fw_cfg@510", "offset", "/devices/fw_cfg@510/offset" },
		{ "/pmu", "avail", "/pmu/avail" },
		{ "/vcpu@1/pmu", "counter-value", "/vcpu@1/pmu/counter-value" },
	};
	size_t len;
	void *blob = golden(&len);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		snap_delete_and_expect(vm_snap_schema(), blob, len, cases[i].node, cases[i].prop,
				       cases[i].want);
	free(blob);
}

Test(snapschema, missing_part_nodes)
{
	static const struct {
		const char *node, *want;
	} cases[] = {
		{ "/devices/serial@3f8", "/devices/serial@3f8: node missing" },
		{ "/devices/testdev", "/devices/testdev: node missing" },
		{ "/devices/i8042", "/devices/i8042: node missing" },
		{ "/pmu", "/pmu: node missing" },
		{ "/stats", "/stats: node missing" },
		{ "/vcpu@0/stats", "/vcpu@0/stats: node missing" },
		{ "/vcpu@0/pmu", "/vcpu@0/pmu: node missing" },
	};
	size_t len;
	void *blob = golden(&len);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		snap_delete_and_expect(vm_snap_schema(), blob, len, cases[i].node, NULL, cases[i].want);
	free(blob);
}

static void set_and_expect(const void *blob, size_t len, const char *path, const char *prop, const void *val,
			   int vlen, const char *want)
{
	snap_set_and_expect(vm_snap_schema(), blob, len, path, prop, val, vlen, want);
}

/* States no device or PMU could be in: each part's own check refuses them. */
Test(snapschema, states_a_component_cannot_be_in)
{
	size_t len;
	void *blob = golden(&len);
	fdt32_t ff = cpu_to_fdt32(0xff), bad_pending = cpu_to_fdt32(0x20), two = cpu_to_fdt32(2);
	fdt64_t other = cpu_to_fdt64(32 << 20);
	uint64_t cfg[PMU_NR_COUNTERS] = { 0 };

	set_and_expect(blob, len, "/devices/serial@3f8", "ier", &ff, 4,
		       "/devices/serial@3f8: not a state a 16550 can be in");
	set_and_expect(blob, len, "/devices/serial@3f8", "thri-pending", &two, 4, "value out of range");
	set_and_expect(blob, len, "/devices/i8042", "pending", &bad_pending, 4,
		       "/devices/i8042/pending: not a command the i8042 waits on");
	/* PMU states a guest could never have made: the same checks as its MSR writes. */
	for (unsigned i = 0; i < PMU_NR_COUNTERS; i++)
		cfg[i] = cpu_to_fdt64(i == 3 ? (1ULL << 40) | PV_PMU_CFG_EN : 0);
	set_and_expect(blob, len, "/vcpu@1/pmu", "counter-config", cfg, sizeof(cfg), "reserved bits");
	cfg[3] = cpu_to_fdt64(PV_PMU_EV_EXITS_IO | PV_PMU_CFG_EN | PV_PMU_CFG_USR | PV_PMU_CFG_OS);
	set_and_expect(blob, len, "/vcpu@1/pmu", "global-ctrl", &other, 8, "GLOBAL_CTRL enables a counter");
	free(blob);
}

/*
 * fw_cfg came within format 1: a snapshot without it parses, with no state
 * for it (a restore leaves the new fw_cfg in its reset state), and is
 * written back without it.
 */
Test(snapschema, fwcfg_is_optional)
{
	struct snap *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len, len2, len3;
	void *blob = golden(&len), *c = editable(blob, len), *again = NULL;

	cr_assert_eq(fdt_del_node(c, node(c, "/devices/fw_cfg@510")), 0);
	len2 = resum(c);
	cr_assert_eq(snap_parse(c, len2, vm_snap_schema(), p, &err), 0, "%s", err.msg);
	cr_assert_null(snap_part_state(p, dev_fwcfg.state, -1));
	cr_assert_eq(snap_build(p, &again, &len3, &err), 0, "%s", err.msg);
	cr_assert_lt(fdt_path_offset(again, "/devices/fw_cfg@510"), 0,
		     "written back with a part the file did not have");
	snap_set_and_expect(vm_snap_schema(), blob, len, "/devices/fw_cfg@510", "selector",
			    &(uint32_t){ cpu_to_fdt32(0x10000) }, 4, "value out of range");
	snap_fini(p);
	free(again);
	free(c);
	free(blob);
	free(p);
}

/* A machine without the PV PMU: its parts are neither needed nor read. */
Test(snapschema, no_pmu_no_pmu_parts)
{
	struct snap *p = calloc(1, sizeof(*p));
	struct errbuf err;
	size_t len;
	void *blob = golden(&len), *c = editable(blob, len);

	cr_assert_eq(fdt_setprop_u32(c, node(c, "/machine"), "pmu", 0), 0);
	cr_assert_eq(fdt_del_node(c, node(c, "/pmu")), 0);
	cr_assert_eq(fdt_del_node(c, node(c, "/vcpu@2/pmu")), 0);
	cr_assert_eq(snap_parse(c, resum(c), vm_snap_schema(), p, &err), 0, "%s", err.msg);
	cr_assert_null(snap_part_state(p, &pmu_caps_part, -1));
	cr_assert_null(snap_part_state(p, &pmu_vcpu_part, 0));
	cr_assert_null(snap_part_state(p, &pmu_vcpu_part, 2));
	snap_fini(p);
	free(c);
	free(blob);
	free(p);
}
