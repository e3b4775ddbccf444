// SPDX-License-Identifier: MIT
/*
 * The PV PMU event namespace (docs/pvpmu.md), what this host can back
 * (probed at start-up, never assumed), and the CPUID leaves that advertise
 * the PMU to the guest.
 */
#include "pmu.h"

#include <linux/perf_event.h>
#include <string.h>

#define HW(id_, name_, cfg_)                                                          \
	{                                                                             \
		.id = id_, .name = name_, .cls = PV_PMU_CLASS_HW, .perf_config = cfg_ \
	}
#define SW(id_, name_, cfg_, ns_)                                                                \
	{                                                                                        \
		.id = id_, .name = name_, .cls = PV_PMU_CLASS_SW, .ns = ns_, .perf_config = cfg_ \
	}
#define HV(id_, name_, ns_)                                                 \
	{                                                                   \
		.id = id_, .name = name_, .cls = PV_PMU_CLASS_HV, .ns = ns_ \
	}
#define KV(id_, stat_)                                                                      \
	{                                                                                   \
		.id = id_, .name = "kvm." stat_, .cls = PV_PMU_CLASS_KVM, .kvm_name = stat_ \
	}

static const struct pmu_event_info events[] = {
	HW(PV_PMU_EV_CYCLES, "cycles", PERF_COUNT_HW_CPU_CYCLES),
	HW(PV_PMU_EV_INSTRUCTIONS, "instructions", PERF_COUNT_HW_INSTRUCTIONS),
	HW(PV_PMU_EV_CACHE_REFERENCES, "cache-references", PERF_COUNT_HW_CACHE_REFERENCES),
	HW(PV_PMU_EV_CACHE_MISSES, "cache-misses", PERF_COUNT_HW_CACHE_MISSES),
	HW(PV_PMU_EV_BRANCHES, "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS),
	HW(PV_PMU_EV_BRANCH_MISSES, "branch-misses", PERF_COUNT_HW_BRANCH_MISSES),
	HW(PV_PMU_EV_BUS_CYCLES, "bus-cycles", PERF_COUNT_HW_BUS_CYCLES),
	HW(PV_PMU_EV_STALLED_FRONTEND, "stalled-cycles-frontend", PERF_COUNT_HW_STALLED_CYCLES_FRONTEND),
	HW(PV_PMU_EV_STALLED_BACKEND, "stalled-cycles-backend", PERF_COUNT_HW_STALLED_CYCLES_BACKEND),
	HW(PV_PMU_EV_REF_CYCLES, "ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES),
	SW(PV_PMU_EV_TASK_CLOCK, "task-clock", PERF_COUNT_SW_TASK_CLOCK, true),
	SW(PV_PMU_EV_PAGE_FAULTS, "page-faults", PERF_COUNT_SW_PAGE_FAULTS, false),
	SW(PV_PMU_EV_CONTEXT_SWITCHES, "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES, false),
	SW(PV_PMU_EV_CPU_MIGRATIONS, "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS, false),
	SW(PV_PMU_EV_MINOR_FAULTS, "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN, false),
	SW(PV_PMU_EV_MAJOR_FAULTS, "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ, false),
	HV(PV_PMU_EV_EXITS, "exits", false),
	HV(PV_PMU_EV_EXITS_IO, "exits.io", false),
	HV(PV_PMU_EV_EXITS_MMIO, "exits.mmio", false),
	HV(PV_PMU_EV_EXITS_MSR, "exits.msr", false),
	HV(PV_PMU_EV_EXITS_HLT, "exits.hlt", false),
	HV(PV_PMU_EV_EXITS_INTR, "exits.intr", false),
	HV(PV_PMU_EV_KVM_RUN_NS, "time.kvm_run", true),
	HV(PV_PMU_EV_VMM_NS, "time.vmm", true),
	HV(PV_PMU_EV_PMIS, "pmis", false),
	HV(PV_PMU_EV_EXITS_MSR_READ, "exits.msr_read", false),
	HV(PV_PMU_EV_EXITS_MSR_WRITE, "exits.msr_write", false),
	KV(PV_PMU_EV_KVM_EXITS, "exits"),
	KV(PV_PMU_EV_KVM_IO_EXITS, "io_exits"),
	KV(PV_PMU_EV_KVM_MMIO_EXITS, "mmio_exits"),
	KV(PV_PMU_EV_KVM_HALT_EXITS, "halt_exits"),
	KV(PV_PMU_EV_KVM_IRQ_EXITS, "irq_exits"),
	KV(PV_PMU_EV_KVM_NMI_INJECTIONS, "nmi_injections"),
	KV(PV_PMU_EV_KVM_IRQ_INJECTIONS, "irq_injections"),
	KV(PV_PMU_EV_KVM_SIGNAL_EXITS, "signal_exits"),
	KV(PV_PMU_EV_KVM_PF_TAKEN, "pf_taken"),
	KV(PV_PMU_EV_KVM_INSN_EMULATION, "insn_emulation"),
	KV(PV_PMU_EV_KVM_HALT_WAKEUP, "halt_wakeup"),
	KV(PV_PMU_EV_KVM_HOST_STATE_RELOAD, "host_state_reload"),
};

const struct pmu_event_info *pmu_event_info(uint32_t id)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i].id == id)
			return &events[i];
	return NULL;
}

const struct pmu_event_info *pmu_event_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (!strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}

static void set_bit64(uint64_t *w, uint32_t bit)
{
	w[bit / 64] |= 1ULL << (bit % 64);
}

void pmu_caps_init(struct pmu_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->nr_counters = PMU_NR_COUNTERS;
	c->features = PV_PMU_FEAT_PAGE | PV_PMU_FEAT_PMI_NMI | PV_PMU_FEAT_PMI_VECTOR | PV_PMU_FEAT_ACK;
	c->min_period = PMU_MIN_PERIOD;
	c->min_period_ns = PMU_MIN_PERIOD_NS;
	c->max_pmis_per_s = PMU_MAX_PMIS_PER_S;
	c->host_budget = PMU_HOST_BUDGET;
	/* The VMM counts class 2 itself: always there. */
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i].cls == PV_PMU_CLASS_HV)
			pmu_caps_set_available(c, events[i].id);
}

void pmu_caps_set_available(struct pmu_caps *c, uint32_t id)
{
	const struct pmu_event_info *ev = pmu_event_info(id);

	if (!ev)
		return;
	set_bit64(c->avail, id);
	/* Class 3 is refreshed every 100 ms: too coarse to interrupt on. */
	if (ev->cls != PV_PMU_CLASS_KVM)
		set_bit64(c->sample, id);
	/* Only hardware counters see the guest's CPL (perf exclude_user/kernel with exclude_host). */
	if (ev->cls == PV_PMU_CLASS_HW)
		set_bit64(c->filter, id);
}

bool pmu_caps_available(const struct pmu_caps *c, uint32_t id)
{
	return id < PV_PMU_NR_EVENTS && (c->avail[id / 64] >> (id % 64)) & 1;
}

int pmu_caps_probe(struct pmu_caps *c, int (*open_fn)(const struct pmu_event_info *ev))
{
	int n = 0;

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		const struct pmu_event_info *ev = &events[i];

		if (ev->cls != PV_PMU_CLASS_HW && ev->cls != PV_PMU_CLASS_SW)
			continue;
		if (open_fn(ev) < 0)
			continue;
		pmu_caps_set_available(c, ev->id);
		if (ev->cls == PV_PMU_CLASS_HW)
			c->features |= PV_PMU_FEAT_HOST_HW;
		n++;
	}
	return n;
}

bool pmu_cpuid(const struct pmu_caps *c, uint32_t leaf, uint32_t r[4])
{
	switch (leaf) {
	case PV_PMU_CPUID_SIGNATURE:
		r[0] = PV_PMU_CPUID_MAX;
		r[1] = PV_PMU_SIG_EBX;
		r[2] = PV_PMU_SIG_ECX;
		r[3] = PV_PMU_SIG_EDX;
		return true;
	case PV_PMU_CPUID_INFO:
		r[0] = PV_PMU_VERSION | c->nr_counters << 8 | PV_PMU_COUNTER_WIDTH << 16;
		r[1] = PV_PMU_MSR_BASE;
		r[2] = PV_PMU_NR_EVENTS;
		r[3] = c->features;
		return true;
	case PV_PMU_CPUID_LIMITS:
		r[0] = c->min_period;
		r[1] = c->min_period_ns;
		r[2] = c->max_pmis_per_s;
		r[3] = c->host_budget;
		return true;
	default:
		return false;
	}
}
