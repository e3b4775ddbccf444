/* SPDX-License-Identifier: MIT */
/*
 * Private state of the VMM: struct vm and struct vcpu, and the functions
 * the vmm/ files share. Not part of the public API (vmm/vmm.h).
 */
#ifndef PERFVISOR_VM_INTERNAL_H
#define PERFVISOR_VM_INTERNAL_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdatomic.h>

#include "devices/devices.h"
#include "vmm.h"

/* Per-vCPU exit counters; written only by the vCPU's thread. */
struct vcpu_counters {
	uint64_t exits, io, mmio, msr_read, msr_write, hlt, shutdown, intr, other;
	uint64_t unhandled_io, unhandled_mmio;
	uint64_t run_ns; /* time inside KVM_RUN */
};

struct vcpu {
	struct vm *vm;
	unsigned index; /* 0 = boot vCPU; APIC id == index */
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool thread_started;
	struct vcpu_counters cnt;
};

/* Where console bytes go; shared by the UART and the test device. */
struct console {
	int fd;	    /* -1 = discard */
	bool owned; /* close on fini */
	pthread_mutex_t lock;
};

/* Open /dev/kvm and check everything perfvisor uses. */
struct kvm_sys {
	int fd;
	int vcpu_mmap_size;
	int max_vcpus;
	struct kvm_cpuid2 *cpuid; /* KVM_GET_SUPPORTED_CPUID */
};

struct vm {
	struct vm_config cfg;
	struct kvm_sys kvm;
	int fd;
	struct gmem mem;
	struct loader_info kernel;
	struct bus bus;
	struct console console;
	struct dev_host host;
	struct serial *serial;
	struct testdev *testdev;
	struct i8042 *i8042;
	struct ratelimit unhandled_rl[BUS_NR_SPACES]; /* one per space: a port flood cannot hide MMIO */
	struct vcpu *vcpus;
	unsigned nr_vcpus;
	uint32_t tsc_khz;

	/* Stop protocol: the first request sets status and wakes the main thread. */
	atomic_bool stopping;
	pthread_mutex_t stop_lock;
	int stop_status;
	char stop_why[160];
	int stop_efd; /* eventfd the main thread polls */
};

/* kvm.c */
int kvmsys_open(struct kvm_sys *k, struct errbuf *err);
void kvmsys_close(struct kvm_sys *k);

/* x86.c: guest boot structures and CPU state */
int x86_setup_boot_area(struct vm *vm, struct errbuf *err);
int x86_setup_bsp(struct vm *vm, struct vcpu *v, struct errbuf *err);
int x86_setup_cpuid(struct vm *vm, struct vcpu *v, struct errbuf *err);

/* console.c */
int console_init(struct console *c, const struct vm_config *cfg, struct errbuf *err);
void console_fini(struct console *c);
void console_write(struct console *c, const void *buf, size_t len);

/* devices glue (vm_devices.c) */
int vm_devices_create(struct vm *vm, struct errbuf *err);
void vm_devices_destroy(struct vm *vm);

/* vcpu.c */
int vcpu_init(struct vm *vm, struct vcpu *v, unsigned index, struct errbuf *err);
void vcpu_fini(struct vcpu *v);
int vcpu_start(struct vcpu *v, struct errbuf *err);
/* Make the vCPU leave KVM_RUN (or not enter it) soon. Any thread. */
void vcpu_kick(struct vcpu *v);
void vcpu_join(struct vcpu *v);
int vcpu_signal_setup(struct errbuf *err);

/* vm.c: ask the VM to stop (first caller's status wins). Any thread. */
void vm_request_stop(struct vm *vm, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vm_log(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
