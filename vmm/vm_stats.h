/* SPDX-License-Identifier: MIT */
/*
 * What the VMM publishes in the statistics region (docs/stats-abi.md):
 * exits by reason and by device, time in and out of KVM_RUN (live through
 * a since companion), KVM's own binary stats mirrored by name, each vCPU
 * thread's CPU time, and the VM record; and the statistics' snapshot
 * parts. A vCPU's entry has one writer at a time (vm_stats_enter_run).
 * Calls nothing else in vmm/ but control; others reach it through the
 * field handles below.
 */
#ifndef PERFVISOR_VMM_VM_STATS_H
#define PERFVISOR_VMM_VM_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "machine/machine.h"
#include "parts.h"
#include "pmu/pmu.h"
#include "stats/stats.h"

#define VM_STATS_MAX_IO_RANGES 32
#define VM_STATS_MAX_EXTRA 64

/*
 * Cumulative fields of the VM record that another component keeps (the
 * virtio devices' counters), appended after the VMM's own. read fills
 * values[0..n) on the main thread at each update of the VM record.
 */
struct vm_stats_extra {
	unsigned n;
	const char *const *names;
	const uint8_t *bytes; /* n flags: 1 for a byte count, 0 for a count */
	void (*read)(void *ctx, uint64_t *values);
	void *ctx;
};

/* Handles of the fields the VMM publishes (docs/stats-abi.md lists them). */
struct vm_stats_fields {
	/* per vCPU */
	struct sb_field exits, exit_io, exit_mmio, exit_msr_read, exit_msr_write, exit_hlt, exit_shutdown,
		exit_intr, exit_other, unhandled_io, unhandled_mmio, run_ns, user_ns, kvm_refreshes;
	struct sb_field io_range[VM_STATS_MAX_IO_RANGES]; /* by PIO range id: exits per device */
	/* PV PMU, per vCPU */
	struct sb_field pmu_stat[PMU_STAT_NR];
	struct sb_field pmu_ctr[PMU_NR_COUNTERS];
	/* per vCPU, after the kvm.* mirror: when it entered KVM_RUN, its thread's CPU time */
	struct sb_field run_since_ns, cpu_ns;
	/* per vCPU, host-side profiling: samples taken, dropped (ring full), throttled (rate cap), time */
	struct sb_field prof_samples, prof_dropped, prof_throttled, prof_sample_ns;
	/* VM record */
	struct sb_field uptime_ns, vcpus_online, memory_bytes, exits_total, run_ns_total, run_live_ns_total,
		host_kind, host_flags;
	struct sb_field extra[VM_STATS_MAX_EXTRA]; /* VM record: struct vm_stats_extra's */
};

struct vm_stats;

struct vm_stats_config {
	unsigned nr_vcpus;
	const char *name;      /* the VM's name, "" for none */
	const struct bus *bus; /* frozen: its PIO ranges become io.<name> fields */
	const int *vcpu_fds;   /* each vCPU's fd, for KVM's binary stats (KVM_GET_STATS_FD) */
	uint64_t mem_size;
	struct host_info host;
	struct vm_stats_extra extra; /* n = 0: none */
};

/* Declare every field, fix the layout, seal the memfd. 0 or -errno with a message. Setup thread. */
int vm_stats_create(struct vm_stats **out, const struct vm_stats_config *cfg, struct errbuf *err);
/* NULL is a no-op. After every vCPU thread ended. */
void vm_stats_destroy(struct vm_stats *s);
/* The statistics' parts of a snapshot (the VM record's, each vCPU's). Setup thread. */
int vm_stats_add_parts(struct vm_stats *s, struct vm_parts *l, struct errbuf *err);

struct stats_region *vm_stats_region(const struct vm_stats *s);
const struct vm_stats_fields *vm_stats_fields(const struct vm_stats *s);
/* vCPU i's entry: its writer is its own thread (see vm_stats_enter_run). */
struct sb_entry vm_stats_entry(const struct vm_stats *s, unsigned i);
/* When the region was created (the VM's uptime starts there). */
uint64_t vm_stats_start_ns(const struct vm_stats *s);
/*
 * Called inside every update of vCPU i's KVM mirror, by that entry's
 * writer of the moment, to publish counts kept elsewhere (the profiler's
 * in mode=leaf). Setup thread, before the vCPUs start.
 */
void vm_stats_set_publish_hook(struct vm_stats *s, void (*fn)(void *ctx, unsigned i, struct sb_entry e),
			       void *ctx);

/* ---- vCPU i's thread ---------------------------------------------------------------- */
/* Published online before its thread runs, so its final STOPPED state is never overwritten. Main thread. */
void vm_stats_vcpu_online(struct vm_stats *s, unsigned i);
/* Its thread, once started: the main thread samples its CPU time while it stays inside KVM_RUN. */
void vm_stats_vcpu_thread(struct vm_stats *s, unsigned i, pthread_t thread);
/*
 * Around KVM_RUN: publish time.kvm_run_since_ns = t0 and open the entry to
 * the main thread; then take it back (waiting out a main thread's update
 * in progress). Between the two the thread must not write its entry.
 */
void vm_stats_enter_run(struct vm_stats *s, unsigned i, uint64_t t0);
void vm_stats_leave_run(struct vm_stats *s, unsigned i);
/*
 * Account one return from KVM_RUN: time inside (from t0) and outside (from
 * t_user), the exit and its reason, or exit.intr when `interrupted` (a
 * kick, a signal: not an exit). Returns the time that ends the KVM_RUN
 * interval (docs/stats-abi.md "Live values").
 */
uint64_t vm_stats_account_run(struct vm_stats *s, unsigned i, uint64_t t_user, uint64_t t0, bool interrupted,
			      uint32_t exit_reason);
/* One port access handled by PIO range `range`, or unhandled (range < 0). */
void vm_stats_count_io(struct vm_stats *s, unsigned i, int range);
/* One MMIO access no device handled. */
void vm_stats_count_unhandled_mmio(struct vm_stats *s, unsigned i);
/* Refresh the KVM mirror and time.cpu_ns if `now` is past the period (or force). */
void vm_stats_kvm_refresh(struct vm_stats *s, unsigned i, uint64_t now, bool force);
/* Final values, then STOPPED: readers know they will not change. */
void vm_stats_vcpu_stopped(struct vm_stats *s, unsigned i);

/* ---- the main thread ------------------------------------------------------------------ */
/* Refresh kvm.* and time.cpu_ns of vCPUs that stayed inside KVM_RUN for a period. */
void vm_stats_refresh_running(struct vm_stats *s);
/* Update the VM record (uptime, totals). */
void vm_stats_update_vm(struct vm_stats *s);
/* The final VM record, then its state STOPPED: after every vCPU thread ended. */
void vm_stats_stop(struct vm_stats *s);
/* --verbose: a line per vCPU with its exits by kind and its time in KVM_RUN. */
void vm_stats_log_vcpus(const struct vm_stats *s);

#endif
