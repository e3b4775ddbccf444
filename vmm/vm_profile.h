/* SPDX-License-Identifier: MIT */
/*
 * Host-side guest profiling (docs/profiling.md): each vCPU thread opens
 * sampling counters on itself and, on an overflow signal, records where
 * its guest is (RIP, ring, a frame-pointer walk of the guest stack read
 * through the guest's page tables); mode=leaf has the host kernel write
 * the samples instead. The main thread drains the rings and writes the
 * profile at the end. Calls control; nothing calls back into it but the
 * vCPU loop, the main loop and the control socket.
 */
#ifndef PERFVISOR_VMM_VM_PROFILE_H
#define PERFVISOR_VMM_VM_PROFILE_H

#include <linux/kvm.h>
#include <stdbool.h>

#include "kvm.h"
#include "machine/machine.h"
#include "pmu/pmu.h"
#include "vm_stats.h"

typedef struct json_t json_t;
struct vm_profile;

struct vm_profile_config {
	const struct prof_spec *spec; /* spec->n == 0: off, every call here a no-op */
	const char *output;	      /* --profile-output, NULL = perfvisor-profile.PID */
	const char *symbols;	      /* --symbols, NULL = the kernel's own table */
	const char *kernel;
	/* The kernel's vmlinux if the loader decompressed it (boot_result); NULL: read from kernel. */
	const void *vmlinux;
	size_t vmlinux_len;
	unsigned nr_vcpus;
	const struct kvm_sys *kvm;
	const struct gmem *mem;
	bool verbose;
};

/* Symbols, rings, the output directory's check. 0 or -errno with a message. Setup thread. */
int vm_profile_create(struct vm_profile **out, const struct vm_profile_config *cfg, struct errbuf *err);
/* NULL is a no-op. After every vCPU thread ended. */
void vm_profile_destroy(struct vm_profile *p);
bool vm_profile_on(const struct vm_profile *p);
/* Once the statistics region exists: the profile.* fields, and mode=leaf's counts published through it. */
void vm_profile_stats_ready(struct vm_profile *p, struct vm_stats *s);

/* vCPU i's thread, before its seccomp filter: open its sampling counters on itself. */
int vm_profile_vcpu_start(struct vm_profile *p, unsigned i, int vcpu_fd, struct kvm_run *run,
			  struct errbuf *err);
/* vCPU i's thread: after an overflow signal (from counter fd, -1 if unknown), take one sample. */
void vm_profile_sample(struct vm_profile *p, unsigned i, int fd);
void vm_profile_vcpu_stop(struct vm_profile *p, unsigned i);
/* The signal the profiler's counters send; its handler (vcpu.c) is SA_SIGINFO. */
int vm_profile_signal(void);

/* Main thread: move the rings' samples into the profile. */
void vm_profile_drain(struct vm_profile *p);
/* Main thread: the profile so far as JSON (profile.json's format), NULL if off or out of memory. */
json_t *vm_profile_json(struct vm_profile *p);
/* Main thread, after the vCPUs ended: write the output directory. 0 or -errno with a message. */
int vm_profile_write(struct vm_profile *p, struct errbuf *err);

#endif
