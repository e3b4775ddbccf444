/* SPDX-License-Identifier: MIT */
/*
 * Private to the statistics the VMM publishes (vm_stats.c, vm_stats_kvm.c,
 * vm_stats_parts.c): its state, and who may write a vCPU's entry when.
 */
#ifndef PERFVISOR_VMM_VM_STATS_INTERNAL_H
#define PERFVISOR_VMM_VM_STATS_INTERNAL_H

#include <time.h>

#include "vm_stats.h"

/* How often a vCPU refreshes its mirror of KVM's binary stats (one pread). */
#define KVM_STATS_PERIOD_NS 100000000ULL
#define VM_STATS_MAX_KVM 128

/* KVM's binary stats of a vCPU (KVM_GET_STATS_FD), mirrored by name. */
struct vm_kvm_stats {
	unsigned nr;			  /* mirrored u64 values */
	uint64_t data_offset;		  /* of the values in the stats fd */
	size_t data_len;		  /* bytes to pread */
	uint32_t index[VM_STATS_MAX_KVM]; /* u64 index of mirrored value i in the data */
	struct sb_field field[VM_STATS_MAX_KVM];
	uint64_t *main_buf; /* the main thread's pread target (vm_stats_refresh_running) */
};

/*
 * Who writes a vCPU's stats entry (struct vm_stats_vcpu.owner): its own
 * thread, except while it is inside KVM_RUN, when the entry is OPEN and
 * the main thread may take it (compare-and-swap to MAIN) for one short
 * update of the kvm.* mirror and time.cpu_ns, with no system call while
 * it holds it. The vCPU thread takes it back when KVM_RUN returns,
 * waiting out such an update. So the seqlock has one writer at a time and
 * readers see one.
 */
enum vcpu_stats_owner {
	VCPU_STATS_VCPU = 0,
	VCPU_STATS_OPEN = 1,
	VCPU_STATS_MAIN = 2,
};

struct vm_stats_vcpu {
	struct sb_entry e;    /* written by its owner of the moment */
	int kvm_fd;	      /* KVM_GET_STATS_FD, -1 if unsupported */
	uint64_t *kvm_buf;    /* the vCPU thread's pread target */
	uint64_t kvm_last_ns; /* when the published mirror was sampled; written by the entry's owner */
	uint32_t owner;	      /* enum vcpu_stats_owner, accessed atomically */
	clockid_t cpu_clock;  /* the thread's CPU-time clock, for the main thread */
	bool cpu_clock_ok;
	uint64_t run_live_last; /* main thread: its last live time.kvm_run_ns (vm_stats_update_vm) */
	/* kvm.* mirror of a restored VM: KVM counts from 0 again, the published value continues */
	uint64_t kvm_base[VM_STATS_MAX_KVM];
	uint64_t cpu_ns_base; /* time.cpu_ns likewise: the new thread's CPU clock starts at 0 */
};

struct vm_stats {
	struct stats_region *region;
	struct vm_stats_fields sf;
	struct vm_kvm_stats kvm;
	unsigned nr_vcpus;
	uint64_t start_ns, mem_size;
	struct host_info host;
	struct vm_stats_vcpu *v;
	void (*publish_hook)(void *ctx, unsigned i, struct sb_entry e);
	void *publish_ctx;
	struct vm_stats_extra extra;
};

/* vm_stats_kvm.c: declare the kvm.* mirror of vCPU 0's binary stats (every vCPU has its layout). */
int vm_stats_declare_kvm(struct vm_stats *s, struct errbuf *err);

#endif
