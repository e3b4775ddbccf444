/* SPDX-License-Identifier: MIT */
/*
 * x86 state of a VM at boot (docs/boot.md): the boot vCPU's registers as
 * the boot protocol asks, each vCPU's CPUID (with the PV PMU's leaves),
 * and the PIC and PIT as a PC firmware leaves them. Calls the PV PMU for
 * its leaves; nothing calls back.
 */
#ifndef PERFVISOR_VMM_X86_H
#define PERFVISOR_VMM_X86_H

#include <linux/kvm.h>

#include "kvm.h"
#include "machine/machine.h"
#include "vm_pmu.h"

/* The boot vCPU (its fd) in the state the protocol defines. 0 or -errno with a message. */
int x86_setup_bsp(int vcpu_fd, const struct boot_cpu *bc, struct errbuf *err);
/*
 * Vcpu `index` of n's CPUID: KVM's supported list with perfvisor's topology,
 * the features of `add` (CPUID_ADD_*) set, those of `hide` (CPUID_HIDE_*)
 * cleared and the PV PMU's leaves added; set with KVM_SET_CPUID2 and returned in *out (malloc'ed: a
 * snapshot saves it, a restore compares it); with vcpu_fd -1 only computed (a migration's check).
 * 0 or -errno with a message.
 */
int x86_setup_cpuid(const struct kvm_sys *kvm, const struct vm_pmu *pmu, unsigned index, unsigned n,
		    unsigned add, unsigned hide, int vcpu_fd, struct kvm_cpuid2 **out, struct errbuf *err);
/* firmware.c: PIC and PIT as a PC firmware leaves them (multiboot, PVH, Linux guests). */
int x86_setup_firmware_state(int vm_fd, struct errbuf *err);

#endif
