/* SPDX-License-Identifier: MIT */
/*
 * vCPU threads and the run loop. Each return from KVM_RUN is accounted,
 * then handled, and handling says what happened: handled (run again),
 * interrupted (a kick or a signal: look at the VM's state first), or stop
 * (with a status and a reason). The loop's states are control's
 * (running, paused, stopping). KVM_RUN and the register read go through
 * struct vcpu_ops, so exit handling and the loop are unit-tested with
 * injected exits and no KVM (tests/unit/test_vmm_vcpu.c).
 */
#ifndef PERFVISOR_VMM_VCPU_H
#define PERFVISOR_VMM_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "control.h"
#include "machine/machine.h"
#include "seccomp.h"
#include "vm_pmu.h"
#include "vm_profile.h"
#include "vm_stats.h"

/*
 * KVM's coalesced-PIO ring (KVM_CAP_COALESCED_PIO), one page every vCPU's
 * kvm_run mapping shows: the port writes of a zone registered with
 * KVM_REGISTER_COALESCED_MMIO (the UART's THR) are appended there instead
 * of exiting. Any thread drains it, in order, through the bus: every vCPU
 * after each return from KVM_RUN, before it handles that exit (so a device
 * sees its accesses in the order the guest made them, and a read that exits
 * finds every write before it served), and the main thread on each wake-up
 * (so output a guest left there and never exited after still comes out).
 */
struct pio_ring {
	struct kvm_coalesced_mmio_ring *ring; /* NULL: no coalescing (unit tests, an older KVM) */
	pthread_mutex_t lock;		      /* one consumer at a time */
	const struct bus *bus;
	uint64_t served; /* writes taken from it (under lock) */
};

/*
 * Serve every write in the ring (a no-op when it is empty or absent). Any
 * thread; a write whose port no device takes is ignored, as an exit's is.
 */
void pio_ring_drain(struct pio_ring *r);

/* What every vCPU thread shares; set up before the first one starts, read-only after. */
struct vcpu_env {
	struct pio_ring *pio_ring; /* NULL: none */
	struct vmctl *ctl;
	const struct bus *bus; /* frozen */
	struct vm_stats *stats;
	struct vm_pmu *pmu;	   /* may be off (or NULL) */
	struct vm_profile *prof;   /* may be off (or NULL) */
	enum seccomp_mode seccomp; /* each thread's filter, before its first KVM_RUN */
	bool verbose;
	uint64_t restore_t0; /* a restore: when it began (vCPU 0 logs its first KVM_RUN), else 0 */
	struct ratelimit unhandled_rl[BUS_NR_SPACES]; /* one per space: a port flood cannot hide MMIO */
};

struct vcpu;

/* How a vCPU reaches KVM: its own ioctls (vcpu_kvm_ops), or a test's fakes. */
struct vcpu_ops {
	int (*run)(struct vcpu *v);				/* KVM_RUN: 0, or -1 with errno */
	int (*get_regs)(struct vcpu *v, struct kvm_regs *regs); /* 0, or -1 */
};

extern const struct vcpu_ops vcpu_kvm_ops;

struct vcpu {
	unsigned index; /* 0 = boot vCPU; APIC id == index */
	int fd;
	struct kvm_run *run;
	size_t run_size;	  /* of the mapping, 0 if not KVM's */
	struct kvm_cpuid2 *cpuid; /* as configured (KVM_SET_CPUID2), kept for snapshots */
	pthread_t thread;
	bool thread_started;
	struct vcpu_env *env;
	const struct vcpu_ops *ops;
	uint64_t t_user; /* when KVM_RUN last returned: the start of time outside it */
	bool ran;	 /* entered KVM_RUN at least once */
};

/* What handling one return from KVM_RUN came to. */
enum vcpu_outcome {
	VCPU_HANDLED,	  /* the exit was served: run again */
	VCPU_INTERRUPTED, /* a kick or a signal, no exit: look at the VM's state, then run again */
	VCPU_STOP,	  /* the VM must stop: status and reason in struct vcpu_stop */
};

struct vcpu_stop {
	int status; /* the VM's exit status (PV_EXIT_*, 0 for a clean end) */
	char why[160];
};

/* KVM_CREATE_VCPU and its kvm_run, registered with control. 0 or -errno with a message. Setup thread. */
int vcpu_create(struct vcpu *v, int vm_fd, unsigned index, size_t run_size, struct vcpu_env *env,
		struct errbuf *err);
/* Close and unmap (its thread must have ended). Safe on a zeroed or failed one. */
void vcpu_destroy(struct vcpu *v);
/* The handlers of the PV PMU's and the profiler's signals (and SIGIO). Setup thread, once. */
int vcpu_signal_setup(struct errbuf *err);
/* Start its thread: PMU, profiler, seccomp filter, the start gate, the loop. Main thread. */
int vcpu_start(struct vcpu *v, struct errbuf *err);
void vcpu_join(struct vcpu *v);

/*
 * Handle the exit in v->run: I/O, MMIO and MSRs go to the bus (an access
 * no device takes is counted, logged rate-limited, reads as all ones or
 * #GPs an MSR); KVM_EXIT_INTR is an interruption; HLT, SHUTDOWN, system
 * events, KVM errors and unknown exits stop the VM (*stop says how). The
 * vCPU's thread.
 */
enum vcpu_outcome vcpu_handle_exit(struct vcpu *v, struct vcpu_stop *stop);
/* One KVM_RUN, accounted in the statistics, then handled. The vCPU's thread. */
enum vcpu_outcome vcpu_run_once(struct vcpu *v, struct vcpu_stop *stop);
/*
 * Run until the VM stops: park while it is paused, serve the PMU's and
 * the profiler's signals, and request the VM's stop when an exit says so.
 * The vCPU's thread (a test's thread in the unit tests).
 */
void vcpu_loop(struct vcpu *v);

#endif
