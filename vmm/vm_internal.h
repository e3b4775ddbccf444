/* SPDX-License-Identifier: MIT */
/*
 * Private state of the VMM: struct vm and struct vcpu, and the functions
 * the vmm/ files share. Not part of the public API (vmm/vmm.h).
 */
#ifndef PERFVISOR_VM_INTERNAL_H
#define PERFVISOR_VM_INTERNAL_H

#include <linux/kvm.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include <time.h>

#include "devices/devices.h"
#include "pmu/pmu.h"
#include "snapfile/snapfile.h"
#include "stats/stats.h"
#include "vmm.h"

#define VM_STATS_MAX_IO_RANGES 16
#define VM_STATS_MAX_KVM 128

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
	struct sb_field uptime_ns, vcpus_online, memory_bytes, exits_total, run_ns_total, host_kind,
		host_flags;
};

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
 * Who writes a vCPU's stats entry (struct vcpu.stats_owner): its own thread,
 * except while it is inside KVM_RUN, when the entry is OPEN and the main
 * thread may take it (compare-and-swap to MAIN) for one short update of the
 * kvm.* mirror and time.cpu_ns, with no system call while it holds it. The
 * vCPU thread takes it back when KVM_RUN returns, waiting out such an
 * update. So the seqlock has one writer at a time and readers see one.
 */
enum vcpu_stats_owner {
	VCPU_STATS_VCPU = 0,
	VCPU_STATS_OPEN = 1,
	VCPU_STATS_MAIN = 2,
};

struct vcpu {
	struct vm *vm;
	unsigned index; /* 0 = boot vCPU; APIC id == index */
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool thread_started;
	struct sb_entry stats;	    /* written only by this vCPU's thread */
	int kvm_stats_fd;	    /* KVM_GET_STATS_FD, -1 if unsupported */
	uint64_t *kvm_stats_buf;    /* pread target */
	uint64_t kvm_stats_last_ns; /* when the published mirror was sampled; written by the entry's owner */
	uint32_t stats_owner;	    /* enum vcpu_stats_owner, accessed atomically */
	clockid_t cpu_clock;	    /* the thread's CPU-time clock, for the main thread */
	bool cpu_clock_ok;
	uint64_t run_live_last; /* main thread: its last live time.kvm_run_ns (vm_stats_update_vm) */
	struct pmu_vcpu pmu;	/* this vCPU's PV PMU; its thread only */
	timer_t pmu_timer;	/* forces exits while the counter page needs refreshing */
	bool pmu_timer_created, pmu_timer_armed;
	struct kvm_cpuid2 *cpuid; /* as configured (KVM_SET_CPUID2), kept for snapshots */
	/* kvm.* mirror of a restored VM: KVM counts from 0 again, the published value continues */
	uint64_t kvm_stats_base[VM_STATS_MAX_KVM];
	uint64_t cpu_ns_base; /* time.cpu_ns likewise: the new thread's CPU clock starts at 0 */
	/* Work the main thread gives this vCPU while it is parked (vm_on_parked_vcpus); under stop_lock. */
	void (*park_work)(struct vcpu *v, void *arg);
	void *park_arg;
	/* Host-side profiling (vm_profile.c): its counters and ring; this thread, the ring's consumer aside. */
	int prof_fd[PROF_MAX_EVENTS];
	struct prof_ring prof_ring;
	uint64_t prof_last_ns; /* the last sample, for the rate cap */
	/* This process's counts (the stats fields continue across a restore); main reads them relaxed. */
	uint64_t prof_samples, prof_dropped, prof_throttled, prof_sample_ns;
	/*
	 * mode=leaf: each counter's perf ring buffer, mapped by this thread
	 * before its filter goes on, read and unmapped by the main thread,
	 * which then also keeps the counts above; prof_pub_* is what the stats
	 * entry's writer of the moment published of them (vm_profile_publish).
	 */
	void *prof_map[PROF_MAX_EVENTS];
	size_t prof_map_len[PROF_MAX_EVENTS];
	uint64_t prof_pub_samples, prof_pub_dropped, prof_pub_throttled;
	/* A restore: the PV PMU state this thread loads before its first KVM_RUN, or NULL. */
	const struct pmu_vcpu_state *restore_pmu;
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

#define API_MAX_CLIENTS 8

#define API_IDLE_TIMEOUT_MS 10000 /* a client silent this long is closed: it holds a slot */

struct api_client {
	int fd; /* -1 = free */
	size_t len;
	uint64_t last_ns; /* connected or last request */
	char buf[4096];
};

/* The control socket (api.c); served by the main thread only. */
struct api {
	int listen_fd;	/* -1 = no --api-socket */
	int reserve_fd; /* /dev/null, given up to accept and refuse a client when out of fds */
	const char *path;
	struct api_client client[API_MAX_CLIENTS];
	uint64_t requests, bad_requests;
};

#define VM_MAX_DEVICES 16

/* A device of the machine: its declaration, the device, and the host services it was given. */
struct vm_dev {
	const struct dev_desc *desc;
	void *dev;
	struct dev_host host; /* opaque: this struct */
	struct vm *vm;
};

struct vm {
	struct vm_config cfg;
	struct kvm_sys kvm;
	int fd;
	struct gmem mem;
	struct loader_info kernel;
	struct boot_result boot; /* the kernel's protocol and entry state (boot.c) */
	struct bus bus;
	struct console console;
	struct vm_dev devs[VM_MAX_DEVICES]; /* devices/table.c's, in its order (vm_devices.c) */
	unsigned nr_devs;
	struct ratelimit unhandled_rl[BUS_NR_SPACES]; /* one per space: a port flood cannot hide MMIO */
	struct vcpu *vcpus;
	unsigned nr_vcpus;
	uint32_t tsc_khz;
	struct host_info kvm_host; /* which kind of KVM host (host.c) */
	struct stats_region *stats;
	struct vm_stats_fields sf;
	struct vm_kvm_stats kvm_stats;
	uint64_t start_ns;
	/* PV PMU (vm_pmu.c): shared state and the stats field behind each class 2/3 event */
	struct pmu_vm pmu;
	struct sb_field pmu_event_field[PV_PMU_NR_EVENTS];
	bool pmu_event_has_field[PV_PMU_NR_EVENTS];

	/* Host-side profiling (vm_profile.c, docs/profiling.md); the main thread's part. */
	struct vm_profile {
		struct prof_spec spec; /* spec.n == 0: off */
		struct prof_symtab syms;
		struct prof_data data;
		char out_dir[4096];
		uint64_t start_ns;
		const char *kernel; /* whose symbols */
		bool sync_regs;	    /* KVM_CAP_SYNC_REGS: registers in kvm_run, no ioctl per sample */
		bool sigio;	    /* PERFVISOR_PROFILE_SIGIO (tests): counters send plain SIGIO */
	} prof;

	/* Stop protocol: the first request sets status and wakes the main thread. */
	atomic_bool stopping;
	pthread_mutex_t stop_lock;
	/* Pause protocol (vm_pause/vm_resume): vCPUs park on pause_cond. */
	atomic_bool paused;
	pthread_cond_t pause_cond; /* signalled on park, resume and stop; under stop_lock */
	unsigned nr_parked;
	struct api api;
	int stop_status;
	char stop_why[160];
	int stop_efd; /* eventfd the main thread polls */
	/* A restored VM: the parsed snapshot (its blob kept until the vCPUs took their state). */
	struct snap *restored;
	void *restored_blob;
	int restored_memfd;  /* the snapshot's memory file until RAM is set up, else -1 */
	uint64_t created_ns; /* util_now_ns() at vm_create, for the restore timing */
	bool start_gate;     /* every thread has its seccomp filter: the vCPUs may run; under stop_lock */
	bool first_run_logged;
};

/* kvm.c */
int kvmsys_open(struct kvm_sys *k, struct errbuf *err);
void kvmsys_close(struct kvm_sys *k);

/* x86.c: the boot vCPU's state and each vCPU's CPUID */
int x86_setup_bsp(struct vm *vm, struct vcpu *v, struct errbuf *err);
int x86_setup_cpuid(struct vm *vm, struct vcpu *v, struct errbuf *err);
/* firmware.c: PIC and PIT as a PC firmware leaves them (multiboot, PVH, Linux guests). */
int x86_setup_firmware_state(struct vm *vm, struct errbuf *err);

/* console.c */
int console_init(struct console *c, const struct vm_config *cfg, struct errbuf *err);
void console_fini(struct console *c);
void console_write(struct console *c, const void *buf, size_t len);

/* devices glue (vm_devices.c) */
int vm_devices_create(struct vm *vm, struct errbuf *err);
void vm_devices_destroy(struct vm *vm);
/* The device made from `desc`, or NULL. */
void *vm_device(const struct vm *vm, const struct dev_desc *desc);

/* vcpu.c */
int vcpu_init(struct vm *vm, struct vcpu *v, unsigned index, struct errbuf *err);
void vcpu_fini(struct vcpu *v);
int vcpu_start(struct vcpu *v, struct errbuf *err);
/* Make the vCPU leave KVM_RUN (or not enter it) soon. Any thread. */
void vcpu_kick(struct vcpu *v);
void vcpu_join(struct vcpu *v);
int vcpu_signal_setup(struct errbuf *err);

/* vm_stats.c: the statistics region (docs/stats-abi.md) */
int vm_stats_create(struct vm *vm, struct errbuf *err);
void vm_stats_destroy(struct vm *vm);
/* Refresh the vCPU's mirror of KVM's binary stats and time.cpu_ns if `now` is past the period (or force).
 * vCPU thread, outside sb_begin/sb_end: the pread runs before its own update of the entry. */
void vm_stats_kvm_refresh(struct vcpu *v, uint64_t now, bool force);
/*
 * Around KVM_RUN, on the vCPU thread: publish time.kvm_run_since_ns = t0 and
 * open the entry to the main thread; then take it back (waiting out a main
 * thread's update in progress). Between the two the thread must not write
 * its entry.
 */
void vm_stats_enter_run(struct vcpu *v, uint64_t t0);
void vm_stats_leave_run(struct vcpu *v);
/* Main thread: refresh kvm.* and time.cpu_ns of vCPUs that stayed inside KVM_RUN for a period. */
void vm_stats_refresh_running(struct vm *vm);
/* Update the VM record (uptime, totals). Main thread. */
void vm_stats_update_vm(struct vm *vm);
/* The final VM record, then its state STOPPED: after every vCPU thread ended. Main thread. */
void vm_stats_stop(struct vm *vm);
/* The field counting exits of this KVM exit reason. */
struct sb_field vm_stats_exit_field(const struct vm *vm, uint32_t exit_reason);

/* vm_pmu.c: the PV PMU glue (docs/pvpmu.md) */
/* Probe the host, route the MSR block to userspace, register it on the bus. Setup thread. */
int vm_pmu_create(struct vm *vm, struct errbuf *err);
/* Set up a vCPU's emulation (after vcpu_init). */
void vm_pmu_vcpu_init(struct vcpu *v);
/* vm_stats.c: KVM's stat `name` ("kvm.<stat>") is mirrored in field f. */
void vm_pmu_map_kvm_stat(struct vm *vm, const char *name, struct sb_field f);
#define VM_PMU_CPUID_LEAVES (PV_PMU_CPUID_MAX - PV_PMU_CPUID_SIGNATURE + 1)
/* Append the PV PMU CPUID leaves to c (room for VM_PMU_CPUID_LEAVES more entries), if the PMU is on. */
void vm_pmu_cpuid(const struct vm *vm, struct kvm_cpuid2 *c);
/* Once the stats region exists: class 3 availability and the event -> field map. Setup thread. */
void vm_pmu_stats_ready(struct vm *vm);
/* vCPU thread: at start, after each return from KVM_RUN, after a PMU signal, at the end. */
int vm_pmu_vcpu_start(struct vcpu *v, struct errbuf *err);
void vm_pmu_after_exit(struct vcpu *v);
void vm_pmu_poll(struct vcpu *v);
void vm_pmu_vcpu_stop(struct vcpu *v);
/* The signal perf overflow and the refresh timer send to a vCPU thread. */
int vm_pmu_signal(void);

/* vm_profile.c: host-side guest profiling (docs/profiling.md) */
/* Setup thread, after the vCPUs exist: symbols, rings, the output directory's check. */
int vm_profile_create(struct vm *vm, struct errbuf *err);
void vm_profile_destroy(struct vm *vm);
/* vCPU thread, before its seccomp filter: open its sampling counters. */
int vm_profile_vcpu_start(struct vcpu *v, struct errbuf *err);
/* vCPU thread: after an overflow signal (from counter fd, -1 if unknown), take one sample. */
void vm_profile_sample(struct vcpu *v, int fd);
void vm_profile_vcpu_stop(struct vcpu *v);
/* The signal the profiler's counters send; its handler (vcpu.c) is SA_SIGINFO. */
int vm_profile_signal(void);
/* Main thread: move the rings' samples into the profile. */
void vm_profile_drain(struct vm *vm);
/* mode=leaf: publish the main thread's sample counts in v's stats entry; its writer, inside an update. */
void vm_profile_publish(struct vcpu *v);
/* Main thread: the profile so far as JSON (profile.json's format), NULL if off. */
json_t *vm_profile_json(struct vm *vm);
/* Main thread, after the vCPUs ended: write the output directory. 0 or -errno with a message. */
int vm_profile_write(struct vm *vm, struct errbuf *err);

/* api.c: the control socket */
int api_init(struct api *api, const char *path, struct errbuf *err);
void api_fini(struct api *api);
/* Fill pollfds for the socket and its clients; returns how many. */
int api_pollfds(struct api *api, struct pollfd *p, int max);
/* Serve whatever those pollfds reported. Main thread. */
void api_service(struct vm *vm, const struct pollfd *p, int n);

/* vm.c: pause/resume all vCPUs (returns once all are parked / released). Main thread. */
void vm_pause(struct vm *vm);
void vm_resume(struct vm *vm);
/* vCPU thread: park while the VM is paused. */
void vm_park_vcpu(struct vcpu *v);

/* seccomp.c (docs/security.md) */
enum seccomp_thread {
	SECCOMP_THREAD_MAIN,
	SECCOMP_THREAD_VCPU,
};
/* Before any filter: the SIGSYS handler that reports a denied call, and its table of names. */
int seccomp_prepare(struct errbuf *err);
/* Load the calling thread's filter (SECCOMP_OFF: only name the thread). */
int seccomp_install(enum seccomp_mode mode, enum seccomp_thread which, unsigned index, struct errbuf *err);
/* How many system calls (and ioctl requests) a thread's list allows: for docs and the bench. */
unsigned seccomp_allowed_count(enum seccomp_thread which, unsigned *ioctls);

/* vm.c: a vCPU thread with its filter waits here until the main thread has its own. */
void vm_wait_start_gate(struct vm *vm);

/* vm.c: a restored VM's first KVM_RUN (vCPU 0): log how long the restore took, once. */
void vm_log_first_run(struct vm *vm, uint64_t now);
/* vm.c: run fn(v, arg) on every parked vCPU's own thread and wait for all. Main thread, VM paused. */
void vm_on_parked_vcpus(struct vm *vm, void (*fn)(struct vcpu *v, void *arg), void *arg);

/* snapshot.c (docs/snapshot.md) */
struct vm_snapshot_result {
	uint64_t paused_ns; /* the guest did not run for this long */
	uint64_t memory_ns; /* writing the memory file */
	uint64_t state_bytes, memory_bytes;
	bool used_uring;
};
/* Pause, save everything into `dir` atomically, then resume (or stop the VM). Main thread. */
int vm_snapshot(struct vm *vm, const char *dir, bool stop_after, struct vm_snapshot_result *res,
		struct errbuf *err);
/* Restore: read and check the snapshot cfg->restore names; fills vm->restored, vm->nr_vcpus. */
int vm_restore_load(struct vm *vm, struct errbuf *err);
/* Restore: guest RAM from the memory file (mapped or read, checksum checked). */
int vm_restore_memory(struct vm *vm, struct errbuf *err);
/* Restore: after the vCPUs exist: the same CPUID and PMU, then every piece of KVM and device state. */
int vm_restore_state(struct vm *vm, struct errbuf *err);
/*
 * Restore: after the stats region exists (the PMU's capabilities are then
 * complete): the same PV PMU required, the statistics' cumulative values,
 * and each vCPU's PMU state handed to its thread. Before the vCPUs start.
 */
int vm_restore_stats(struct vm *vm, struct errbuf *err);
/* Restore: the kvmclock, last before the vCPUs start. */
int vm_restore_clock(struct vm *vm, struct errbuf *err);
void vm_restore_free(struct vm *vm);

/* vm.c: ask the VM to stop (first caller's status wins). Any thread. */
void vm_request_stop(struct vm *vm, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vm_log(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
