/* SPDX-License-Identifier: MIT */
/*
 * /dev/kvm and the VM's KVM objects: opening KVM and checking everything
 * perfvisor relies on, creating the VM with its in-kernel irqchip, PIT
 * and guest RAM, and the lists a snapshot needs. Calls nothing else in
 * vmm/.
 */
#ifndef PERFVISOR_VMM_KVM_H
#define PERFVISOR_VMM_KVM_H

#include <linux/kvm.h>
#include <stdint.h>

#include "machine/machine.h"
#include "util/util.h"

/* /dev/kvm, opened and checked. */
struct kvm_sys {
	int fd;
	int vcpu_mmap_size;
	int max_vcpus;
	struct kvm_cpuid2 *cpuid; /* KVM_GET_SUPPORTED_CPUID */
};

/* Open /dev/kvm and check every capability perfvisor uses: 0 or -errno with one clear line. */
int kvmsys_open(struct kvm_sys *k, struct errbuf *err);
void kvmsys_close(struct kvm_sys *k);
/*
 * A VM for nr_vcpus vCPUs: its TSS, in-kernel irqchip and PIT, and `mem`
 * as slot 0 at guest-physical 0. *vm_fd, or -errno with a message.
 */
int kvmsys_create_vm(const struct kvm_sys *k, const struct gmem *mem, unsigned nr_vcpus, int *vm_fd,
		     struct errbuf *err);
/* The MSRs KVM saves and restores (KVM_GET_MSR_INDEX_LIST), malloc'ed. 0 or -errno with a message. */
/*
 * Live migration: KVM's dirty-page log of guest RAM on or off (any time,
 * also while the vCPUs run), and the pages written since the last call,
 * one bit per 4 KiB page (the bitmap: mem->size / 4096 bits, in u64s).
 * 0 or -errno with a message.
 */
int kvmsys_dirty_log(int vm_fd, const struct gmem *mem, bool on, struct errbuf *err);
int kvmsys_get_dirty_log(int vm_fd, uint64_t *bitmap, struct errbuf *err);
int kvmsys_msr_index_list(const struct kvm_sys *k, uint32_t **out, uint32_t *n, struct errbuf *err);
/* The CPUID_ADD_* features this KVM offers (each by its capability). */
unsigned kvmsys_cpuid_add(const struct kvm_sys *k);
/*
 * Have KVM keep the guest's writes of len bytes at port `port` in its
 * coalesced-PIO ring instead of exiting (KVM_REGISTER_COALESCED_MMIO, pio):
 * the ring's byte offset in a vCPU's kvm_run mapping (> 0), -EOPNOTSUPP
 * where KVM cannot (no KVM_CAP_COALESCED_PIO, or the page beyond the
 * mapping), or -errno.
 */
long kvmsys_coalesce_pio(const struct kvm_sys *k, int vm_fd, uint16_t port, uint32_t len);
/* Bytes of a vCPU's XSAVE state on this VM (KVM_CAP_XSAVE2, at least struct kvm_xsave's). */
uint32_t kvmsys_xsave_size(int vm_fd);

#endif
