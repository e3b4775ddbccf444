/* SPDX-License-Identifier: MIT */
/*
 * The PV PMU in the VM (docs/pvpmu.md): probes what the host can back,
 * routes the MSR block to userspace with KVM's MSR filter and onto the
 * bus, adds the CPUID leaves, and gives each vCPU's emulation (pmu/) its
 * host: perf fds on the vCPU thread, the VMM's own counts from the
 * statistics, NMI/MSI injection, guest pages. Calls control and the
 * statistics' handles; nothing calls back into it but the vCPU loop.
 */
#ifndef PERFVISOR_VMM_VM_PMU_H
#define PERFVISOR_VMM_VM_PMU_H

#include <linux/kvm.h>
#include <stdbool.h>

#include "kvm.h"
#include "machine/machine.h"
#include "parts.h"
#include "pmu/pmu.h"
#include "vm_stats.h"

struct vm_pmu;

struct vm_pmu_config {
	bool on; /* --pmu: off makes every call here a no-op and hides the leaves */
	bool verbose;
	const struct kvm_sys *kvm;
	int vm_fd;
	struct bus *bus; /* not frozen yet: the MSR block is registered on it */
	struct gmem *mem;
	unsigned nr_vcpus;
	unsigned features_hidden; /* PV_PMU_FEAT_* left out (--cpuid-hide pmu-ack) */
};

/* Probe the host, route the MSR block (KVM's filter, the bus). 0 or -errno with a message. Setup thread. */
int vm_pmu_create(struct vm_pmu **out, const struct vm_pmu_config *cfg, struct errbuf *err);
/* NULL is a no-op. After every vCPU thread ended. */
void vm_pmu_destroy(struct vm_pmu *p);
bool vm_pmu_on(const struct vm_pmu *p);
/* The capabilities the guest is offered (complete once vm_pmu_stats_ready ran). */
const struct pmu_caps *vm_pmu_caps(const struct vm_pmu *p);

#define VM_PMU_CPUID_LEAVES (PV_PMU_CPUID_MAX - PV_PMU_CPUID_SIGNATURE + 1)
/* Append the PV PMU CPUID leaves to c (room for VM_PMU_CPUID_LEAVES more entries), if the PMU is on. */
void vm_pmu_cpuid(const struct vm_pmu *p, struct kvm_cpuid2 *c);
/* vCPU i's emulation, once its fd exists. Setup thread. */
void vm_pmu_vcpu_init(struct vm_pmu *p, unsigned i, int vcpu_fd);
/*
 * Once the statistics region exists: each event kept by the VMM mapped to
 * its field (class 3 available where KVM has the stat), and the PMU's own
 * fields. Setup thread.
 */
void vm_pmu_stats_ready(struct vm_pmu *p, struct vm_stats *s);
/* The PMU's parts of a snapshot: its capabilities, each vCPU's state. Setup thread. */
int vm_pmu_add_parts(struct vm_pmu *p, struct vm_parts *l, struct errbuf *err);

/* vCPU i's thread: at start, after each return from KVM_RUN, after a PMU signal, at the end. */
int vm_pmu_vcpu_start(struct vm_pmu *p, unsigned i, struct errbuf *err);
void vm_pmu_after_exit(struct vm_pmu *p, unsigned i);
void vm_pmu_poll(struct vm_pmu *p, unsigned i);
void vm_pmu_vcpu_stop(struct vm_pmu *p, unsigned i);
/* The signal perf overflow and the refresh timer send to a vCPU thread. */
int vm_pmu_signal(void);

#endif
