/* SPDX-License-Identifier: MIT */
/*
 * VM control, the bottom of vmm/: the one place where threads agree on
 * what the VM is doing. Stop (the first request's status and reason wins,
 * an eventfd wakes the main thread), pause (vCPUs park; work can be run
 * on each parked vCPU's own thread), the start gate (no vCPU runs before
 * every thread has its seccomp filter), the vCPU kick, and the log. It
 * calls nothing else in vmm/; everything else may call it.
 */
#ifndef PERFVISOR_VMM_CONTROL_H
#define PERFVISOR_VMM_CONTROL_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

struct vcpu;

/* What the VM asks of its vCPUs, in order of precedence. */
enum vcpu_state {
	VCPU_RUNNING,  /* run the guest */
	VCPU_PAUSED,   /* park until resumed (vmctl_park) */
	VCPU_STOPPING, /* leave the loop */
};

/* One vCPU as control knows it: enough to kick it and to hand it work while parked. */
struct vmctl_vcpu {
	struct kvm_run *run; /* its immediate_exit: a kick that comes before KVM_RUN */
	pthread_t thread;
	bool started;
	struct vcpu *owner;			      /* what park work gets */
	void (*park_work)(struct vcpu *v, void *arg); /* under the lock */
	void *park_arg;
};

struct vmctl {
	atomic_bool stopping, paused;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* parked, resumed, stopped, gate open, park work done */
	unsigned nr_vcpus, nr_parked;
	int stop_status;
	char stop_why[160];
	int stop_efd; /* the main thread polls it */
	bool start_gate;
	struct vmctl_vcpu *vcpu;
	bool locks_ok;
};

/* Set up for nr_vcpus vCPUs: 0 or -errno with a message. fini on a zeroed or failed one is safe. */
int vmctl_init(struct vmctl *c, unsigned nr_vcpus, struct errbuf *err);
void vmctl_fini(struct vmctl *c);

/* A line on stderr: "perfvisor: ...". Any thread. */
void vm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ask the VM to stop: the first caller's status and reason win. Any thread. */
void vmctl_request_stop(struct vmctl *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool vmctl_stopping(const struct vmctl *c);
/* The stop's status and reason (after the stop). Main thread. */
int vmctl_stop_status(struct vmctl *c, char *why, size_t len);
/* Readable once a stop was requested (for poll). */
int vmctl_stop_fd(const struct vmctl *c);
/* What vCPUs should do now: stopping before paused before running. Any thread. */
enum vcpu_state vmctl_vcpu_state(const struct vmctl *c);

/* The kick signal's handler (it only interrupts KVM_RUN). Setup thread, once. */
int vmctl_signal_setup(struct errbuf *err);
int vmctl_kick_signal(void);
/* vCPU i's kvm_run and owner (at its creation), its thread (once started). Setup thread. */
void vmctl_attach(struct vmctl *c, unsigned i, struct kvm_run *run, struct vcpu *owner);
void vmctl_started(struct vmctl *c, unsigned i, pthread_t thread);
/* Its thread was joined: never signal it again (its descriptor may be gone). Main thread. */
void vmctl_joined(struct vmctl *c, unsigned i);
/* Make vCPU i leave KVM_RUN (or not enter it) soon. Any thread. */
void vmctl_kick(struct vmctl *c, unsigned i);
/* Stop every vCPU: the stop flag, then a kick each. Main thread. */
void vmctl_stop_all(struct vmctl *c);

/* Pause: every started vCPU parks; returns once all did (or the VM stops). Main thread. */
void vmctl_pause(struct vmctl *c);
void vmctl_resume(struct vmctl *c);
bool vmctl_paused(const struct vmctl *c);
/* vCPU i's thread: parked until resumed or stopped, running the work it is handed meanwhile. */
void vmctl_park(struct vmctl *c, unsigned i);
/* Run fn(vCPU, arg) on every parked vCPU's own thread and wait for all. Main thread, VM paused. */
void vmctl_on_parked(struct vmctl *c, void (*fn)(struct vcpu *v, void *arg), void *arg);

/* The start gate: vCPU threads wait until the main thread has its own seccomp filter. */
void vmctl_open_gate(struct vmctl *c);
void vmctl_wait_gate(struct vmctl *c);

#endif
