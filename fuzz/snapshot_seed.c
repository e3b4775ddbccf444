// SPDX-License-Identifier: MIT
/*
 * Writes valid state files (1 and 4 vCPUs, with and without the PV PMU)
 * into a directory, as the seed corpus of fuzz/snapshot.c. Usage:
 * snapshot_seed DIR
 */
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapfile/snapfile.h"
#include "vmm/vmm.h"

static uint8_t regs[sizeof(struct kvm_regs)], sregs[sizeof(struct kvm_sregs)], xsave[4096],
	xcrs[sizeof(struct kvm_xcrs)], dregs[sizeof(struct kvm_debugregs)],
	lapic[sizeof(struct kvm_lapic_state)], events[sizeof(struct kvm_vcpu_events)],
	pit[sizeof(struct kvm_pit_state2)], chip[512];
static struct kvm_msr_entry msrs[2] = { { .index = 0x10, .data = 1 }, { .index = 0x6e0, .data = 2 } };
static struct kvm_cpuid_entry2 cpuid[1] = { { .function = 0, .eax = 0xd } };

#define B(a) ((struct snap_bytes){ (a), sizeof(a) })

static struct serial_state serial;
static struct pmu_caps caps;
static struct pmu_vcpu_state vpmu = {
	.global_ctrl = 1,
	.cfg = { PV_PMU_EV_EXITS_IO | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN },
};
static struct snap_stats vm_stats, vstats = { 1, { { "exits", 10 } } };
static uint64_t zero[64]; /* the other devices' states: all zero */

static int seed(const char *dir, unsigned n, bool pmu)
{
	struct snap *s = calloc(1, sizeof(*s));
	struct errbuf err;
	char path[512];
	void *blob;
	size_t len;
	FILE *f;

	if (!s)
		return 1;
	s->nr_vcpus = n;
	s->mem_size = 4 << 20;
	s->pmu = pmu;
	s->kernel = "k.elf";
	s->cmdline = "";
	s->writer = "perfvisor";
	s->pit = B(pit);
	s->pic_master = s->pic_slave = s->ioapic = B(chip);
	s->schema = vm_snap_schema();
	serial.rx_count = 2;
	pmu_caps_init(&caps);
	vm_stats.n = 1;
	vm_stats.s[0] = (struct snap_stat){ "exits_total", 3 };
	for (unsigned k = 0; k < s->schema->nr_devices; k++)
		s->dev[k] = !strcmp(s->schema->devices[k]->name, "serial@3f8") ? (void *)&serial : zero;
	s->vm[0] = pmu ? &caps : NULL; /* pmu_caps_part, snap_stats_part (vmm/snapschema.c) */
	s->vm[1] = &vm_stats;
	for (unsigned i = 0; i < n; i++) {
		struct snap_vcpu *v = &s->vcpu[i];

		v->regs = B(regs);
		v->sregs = B(sregs);
		v->xsave = B(xsave);
		v->xcrs = B(xcrs);
		v->debugregs = B(dregs);
		v->lapic = B(lapic);
		v->events = B(events);
		v->msrs = B(msrs);
		v->cpuid = B(cpuid);
		v->part[0] = pmu ? &vpmu : NULL;
		v->part[1] = &vstats;
	}
	if (snap_build(s, &blob, &len, &err)) {
		fprintf(stderr, "snapshot_seed: %s\n", err.msg);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/seed-%u%s.fdt", dir, n, pmu ? "-pmu" : "");
	f = fopen(path, "wb");
	if (!f || fwrite(blob, 1, len, f) != len || fclose(f)) {
		perror(path);
		return 1;
	}
	free(blob);
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: snapshot_seed DIR\n");
		return 2;
	}
	return seed(argv[1], 1, true) || seed(argv[1], 4, true) || seed(argv[1], 2, false);
}
