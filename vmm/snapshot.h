/* SPDX-License-Identifier: MIT */
/*
 * Snapshot and restore, the VMM side (docs/snapshot.md). A snapshot
 * pauses every vCPU, has each save its KVM state and its parts on its own
 * thread, adds the VM's KVM state and the VM-wide parts, and writes the
 * directory atomically (snapfile/). A restore reads and checks the whole
 * snapshot before the VM is built, then applies it in the order KVM
 * needs. The components' states come and go through the parts list
 * (parts.h): nothing here knows a device, the PMU or the statistics.
 * Calls control and kvm.
 */
#ifndef PERFVISOR_VMM_SNAPSHOT_H
#define PERFVISOR_VMM_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "control.h"
#include "kvm.h"
#include "migrate.h"
#include "parts.h"
#include "snapfile/snapfile.h"
#include "vcpu.h"

struct vm_virtio;
#include "vmm.h"

/* The machine as a snapshot describes it (the state file's machine node). */
struct vm_machine {
	unsigned nr_vcpus;
	bool pmu;
	unsigned cpuid_hide;
	unsigned cpuid_add;
	struct host_info host;
	uint32_t tsc_khz;
	const char *kernel, *cmdline;
	const char *profile, *profile_symbols; /* the --profile spec and --symbols file, "" for none */
};

/* What a snapshot needs of a running VM; filled once by the VM, stable while it runs. */
struct vm_snapshot_env {
	struct vmctl *ctl;
	const struct kvm_sys *kvm;
	int vm_fd;
	struct vcpu *vcpus;
	struct gmem *mem;
	const struct vm_parts *parts;
	struct vm_machine machine;
	bool verbose;
	/* a live migration: the virtio devices (their own writes to guest RAM, their disks and taps) */
	struct vm_virtio *virtio;
};

struct vm_snapshot_result {
	uint64_t paused_ns; /* the guest did not run for this long */
	uint64_t memory_ns; /* writing the memory file */
	uint64_t state_bytes, memory_bytes;
	bool used_uring;
};

/* Pause, save everything into `dir` atomically, then resume (or stop the VM). Main thread. */
int vm_snapshot(const struct vm_snapshot_env *e, const char *dir, bool stop_after,
		struct vm_snapshot_result *res, struct errbuf *err);

/*
 * The paused VM's state file (everything but guest RAM; its memory
 * checksum 0), malloc'ed: what a migration sends last. Main thread.
 */
int vm_snapshot_state(const struct vm_snapshot_env *e, void **state, size_t *len, struct errbuf *err);

/* A snapshot being restored: read and checked by vm_restore_load, applied by the rest. */
struct vm_restore {
	const char *dir;
	struct snap *snap; /* points into blob */
	void *blob;
	int memfd; /* the memory file until RAM is set up, else -1 */
};

/*
 * Read and check the snapshot cfg->restore names (state file, memory file
 * size) and set the machine from it: vCPUs, memory, PV PMU, CPUID mask,
 * kernel and command line, and the profiling configuration (refused with
 * --profile-output or --symbols if it had none). Setup thread.
 */
int vm_restore_load(struct vm_restore *r, struct vm_config *cfg, struct errbuf *err);
/* Guest RAM from the memory file (mapped or read, checksum checked). */
int vm_restore_memory(struct vm_restore *r, const struct vm_config *cfg, struct gmem *mem,
		      struct errbuf *err);
/* After the vCPUs exist: the same CPUID required, then each vCPU's and the VM's KVM state. */
int vm_restore_kvm(const struct vm_restore *r, const struct vm_snapshot_env *e, struct errbuf *err);
/*
 * Once every part is registered (the statistics region exists: the PMU's
 * capabilities are complete): each part's state, in the list's order,
 * before the vCPUs start.
 */
int vm_restore_parts(const struct vm_restore *r, const struct vm_parts *parts, unsigned nr_vcpus,
		     struct errbuf *err);
/* The kvmclock, last before the vCPUs start. */
int vm_restore_clock(const struct vm_restore *r, int vm_fd, struct errbuf *err);
/* Free what the restore holds. Safe on a zeroed one; after the vCPUs took their state. */
void vm_restore_fini(struct vm_restore *r);

#endif
