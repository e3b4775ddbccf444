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

static uint8_t regs[sizeof(struct kvm_regs)], sregs[sizeof(struct kvm_sregs)], xsave[4096],
	xcrs[sizeof(struct kvm_xcrs)], dregs[sizeof(struct kvm_debugregs)],
	lapic[sizeof(struct kvm_lapic_state)], events[sizeof(struct kvm_vcpu_events)],
	pit[sizeof(struct kvm_pit_state2)], chip[512];
static struct kvm_msr_entry msrs[2] = { { .index = 0x10, .data = 1 }, { .index = 0x6e0, .data = 2 } };
static struct kvm_cpuid_entry2 cpuid[1] = { { .function = 0, .eax = 0xd } };

#define B(a) ((struct snap_bytes){ (a), sizeof(a) })

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
	s->serial.rx_count = 2;
	pmu_caps_init(&s->pmu_caps);
	s->vm_stats.n = 1;
	s->vm_stats.s[0] = (struct snap_stat){ "exits_total", 3 };
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
		v->pmu.global_ctrl = 1;
		v->pmu.cfg[0] = PV_PMU_EV_EXITS_IO | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN;
		v->stats.n = 1;
		v->stats.s[0] = (struct snap_stat){ "exits", 10 };
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
