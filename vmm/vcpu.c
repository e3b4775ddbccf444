// SPDX-License-Identifier: MIT
/*
 * vCPU threads and the run loop (vcpu.h). The loop looks at the VM's
 * state (control), serves the signals that made KVM_RUN return, runs the
 * guest, accounts the return and hands the exit to its handler, which
 * only delegates: I/O, MMIO and MSRs to the bus, everything else to a
 * stop with a reason.
 */
#include "vcpu.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm.h"

/*
 * The PMU signal (a perf counter's overflow, or the counter page's refresh
 * timer) is for the thread it lands on: it notes that the PMU wants a look
 * and makes KVM_RUN return, or not start, as KVM's docs recommend.
 */
static __thread struct kvm_run *tls_run;
static __thread volatile sig_atomic_t tls_pmu_signalled;

/* Make KVM_RUN return, or not start (a handler, after it set its flag). */
static void leave_run(void)
{
	if (tls_run)
		__atomic_store_n(&tls_run->immediate_exit, 1, __ATOMIC_SEQ_CST);
}

static void pmu_signal_handler(int sig)
{
	(void)sig;
	tls_pmu_signalled = 1;
	leave_run();
}

/*
 * The profiler's signal (a sampling counter's overflow): the same, with
 * which counter it was, for vm_profile_sample() once KVM_RUN returned.
 */
static __thread volatile sig_atomic_t tls_prof_signalled;
static __thread volatile sig_atomic_t tls_prof_fd;

static void prof_signal_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	tls_prof_fd = si->si_fd;
	tls_prof_signalled = 1;
	leave_run();
}

/*
 * SIGIO: what the kernel sends instead when this thread's real-time queue
 * is full. It does not say whose overflow it was, so both the PV PMU and
 * the profiler look (the profiler takes the sample under its first event).
 */
static void sigio_handler(int sig)
{
	tls_prof_fd = -1;
	tls_prof_signalled = 1;
	pmu_signal_handler(sig);
}

int vcpu_signal_setup(struct errbuf *err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: KVM_RUN returns -EINTR. */
	sa.sa_handler = pmu_signal_handler;
	if (sigaction(vm_pmu_signal(), &sa, NULL) < 0)
		return errbuf_set(err, -errno, "sigaction: %s", strerror(errno));
	sa.sa_handler = sigio_handler;
	if (sigaction(SIGIO, &sa, NULL) < 0)
		return errbuf_set(err, -errno, "sigaction: %s", strerror(errno));
	sa.sa_handler = NULL;
	sa.sa_sigaction = prof_signal_handler;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(vm_profile_signal(), &sa, NULL) < 0)
		return errbuf_set(err, -errno, "sigaction: %s", strerror(errno));
	return 0;
}

static int kvm_run_ioctl(struct vcpu *v)
{
	return ioctl(v->fd, KVM_RUN, 0);
}

static int kvm_get_regs(struct vcpu *v, struct kvm_regs *regs)
{
	return ioctl(v->fd, KVM_GET_REGS, regs);
}

const struct vcpu_ops vcpu_kvm_ops = { kvm_run_ioctl, kvm_get_regs };

int vcpu_create(struct vcpu *v, int vm_fd, unsigned index, size_t run_size, struct vcpu_env *env,
		struct errbuf *err)
{
	memset(v, 0, sizeof(*v));
	v->fd = -1;
	v->index = index;
	v->env = env;
	v->ops = &vcpu_kvm_ops;
	v->fd = ioctl(vm_fd, KVM_CREATE_VCPU, (unsigned long)index);
	if (v->fd < 0)
		return errbuf_set(err, -errno, "vCPU %u: KVM_CREATE_VCPU: %s", index, strerror(errno));
	v->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		int rc = errbuf_set(err, -errno, "vCPU %u: mmap of kvm_run: %s", index, strerror(errno));

		v->run = NULL;
		return rc;
	}
	v->run_size = run_size;
	vmctl_attach(env->ctl, index, v->run, v);
	return 0;
}

void vcpu_destroy(struct vcpu *v)
{
	free(v->cpuid);
	v->cpuid = NULL;
	if (v->run && v->run_size)
		munmap(v->run, v->run_size);
	if (v->fd >= 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}

/* ---- the coalesced-PIO ring ----------------------------------------------------------- */

/* KVM_COALESCED_MMIO_MAX, whose PAGE_SIZE userspace lacks: the ring is one x86 page. */
#define PIO_RING_MAX ((4096 - sizeof(struct kvm_coalesced_mmio_ring)) / sizeof(struct kvm_coalesced_mmio))

void pio_ring_drain(struct pio_ring *r)
{
	struct kvm_coalesced_mmio_ring *ring = r ? r->ring : NULL;
	uint32_t first;

	/* KVM moves `last` (after the entry, with a write barrier); only a consumer moves `first`. */
	if (!ring ||
	    __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE) == __atomic_load_n(&ring->first, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&r->lock);
	first = ring->first;
	while (first != __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE)) {
		struct kvm_coalesced_mmio e = ring->coalesced_mmio[first % PIO_RING_MAX];
		struct bus_access a = {
			.addr = e.phys_addr,
			.len = e.len > sizeof(e.data) ? sizeof(e.data) : e.len,
			.is_write = true,
			.data = e.data,
		};

		/* The entry is copied: KVM may reuse its slot once `first` moves past it. */
		__atomic_store_n(&ring->first, (first + 1) % PIO_RING_MAX, __ATOMIC_RELEASE);
		first = (first + 1) % PIO_RING_MAX;
		if (e.pio)
			(void)bus_dispatch(r->bus, BUS_PIO, &a);
		r->served++;
	}
	pthread_mutex_unlock(&r->lock);
}

/* ---- handling one exit ----------------------------------------------------------------- */

static enum vcpu_outcome stop_with(struct vcpu_stop *stop, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum vcpu_outcome stop_with(struct vcpu_stop *stop, int status, const char *fmt, ...)
{
	va_list ap;

	stop->status = status;
	va_start(ap, fmt);
	vsnprintf(stop->why, sizeof(stop->why), fmt, ap);
	va_end(ap);
	return VCPU_STOP;
}

static void unhandled(struct vcpu *v, enum bus_space space, const struct bus_access *a)
{
	if (ratelimit_allow(&v->env->unhandled_rl[space]))
		vm_log("vCPU %u: unhandled %s %s 0x%" PRIx64 " (%u bytes)%s", v->index, bus_space_name(space),
		       a->is_write ? "write" : "read", a->addr, a->len,
		       a->is_write ? "; ignored" : "; reads as all ones");
	if (!a->is_write)
		memset(a->data, 0xff, a->len);
}

static void handle_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;

	/* String I/O (rep outs/ins) arrives as `count` consecutive items. */
	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size) {
		struct bus_access a = {
			.addr = run->io.port,
			.len = run->io.size,
			.is_write = run->io.direction == KVM_EXIT_IO_OUT,
			.data = data,
			.vcpu = v->index,
		};

		if (bus_dispatch(v->env->bus, BUS_PIO, &a) == -ENOENT) {
			vm_stats_count_io(v->env->stats, v->index, -1);
			unhandled(v, BUS_PIO, &a);
		} else {
			vm_stats_count_io(v->env->stats, v->index, a.range);
		}
	}
}

static void handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	struct bus_access a = {
		.addr = run->mmio.phys_addr,
		.len = run->mmio.len > 8 ? 8 : run->mmio.len,
		.is_write = run->mmio.is_write,
		.data = run->mmio.data,
		.vcpu = v->index,
	};

	if (bus_dispatch(v->env->bus, BUS_MMIO, &a) == -ENOENT) {
		vm_stats_count_unhandled_mmio(v->env->stats, v->index);
		unhandled(v, BUS_MMIO, &a);
	}
}

static void handle_msr(struct vcpu *v, bool is_write)
{
	struct kvm_run *run = v->run;
	uint64_t val = run->msr.data;
	struct bus_access a = {
		.addr = run->msr.index,
		.len = 8,
		.is_write = is_write,
		.data = (uint8_t *)&val,
		.vcpu = v->index,
	};

	/* Any failure, including no device, is a #GP for the guest. */
	run->msr.error = bus_dispatch(v->env->bus, BUS_MSR, &a) ? 1 : 0;
	if (!is_write && !run->msr.error)
		run->msr.data = val;
}

/* An exit that ends the VM: the status and the reason, with the guest's RIP where it helps. */
static enum vcpu_outcome stop_exit(struct vcpu *v, struct vcpu_stop *stop)
{
	struct kvm_run *run = v->run;
	struct kvm_regs regs;
	uint64_t rip = 0;

	if (v->ops->get_regs(v, &regs) == 0)
		rip = regs.rip;
	switch (run->exit_reason) {
	case KVM_EXIT_SHUTDOWN:
		/* AMD's KVM re-initializes the vCPU at a shutdown intercept: rip is then the reset vector's. */
		return stop_with(stop, PV_EXIT_GUEST_CRASH,
				 "vCPU %u: guest triple fault (shutdown) at rip 0x%" PRIx64 "%s", v->index,
				 rip,
				 rip == 0xfff0 ? " (the reset vector: AMD's KVM resets a vCPU at a triple "
						 "fault; where it faulted is lost)"
					       : "");
	case KVM_EXIT_HLT:
		return stop_with(stop, 0, "vCPU %u: guest halted", v->index);
	case KVM_EXIT_SYSTEM_EVENT:
		return stop_with(stop, 0, "vCPU %u: guest system event %u (%s)", v->index,
				 run->system_event.type,
				 run->system_event.type == KVM_SYSTEM_EVENT_RESET ? "reset" : "shutdown");
	case KVM_EXIT_INTERNAL_ERROR:
		return stop_with(stop, PV_EXIT_GUEST_CRASH,
				 "vCPU %u: KVM internal error, suberror %u, at rip 0x%" PRIx64, v->index,
				 run->internal.suberror, rip);
	case KVM_EXIT_FAIL_ENTRY:
		return stop_with(stop, PV_EXIT_GUEST_CRASH,
				 "vCPU %u: KVM entry failed, hardware reason 0x%llx", v->index,
				 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
	default:
		return stop_with(stop, PV_EXIT_GUEST_CRASH,
				 "vCPU %u: unexpected KVM exit reason %u at rip 0x%" PRIx64, v->index,
				 run->exit_reason, rip);
	}
}

enum vcpu_outcome vcpu_handle_exit(struct vcpu *v, struct vcpu_stop *stop)
{
	switch (v->run->exit_reason) {
	case KVM_EXIT_IO:
		handle_io(v);
		return VCPU_HANDLED;
	case KVM_EXIT_MMIO:
		handle_mmio(v);
		return VCPU_HANDLED;
	case KVM_EXIT_X86_RDMSR:
		handle_msr(v, false);
		return VCPU_HANDLED;
	case KVM_EXIT_X86_WRMSR:
		handle_msr(v, true);
		return VCPU_HANDLED;
	case KVM_EXIT_INTR:
		return VCPU_INTERRUPTED;
	default:
		return stop_exit(v, stop);
	}
}

enum vcpu_outcome vcpu_run_once(struct vcpu *v, struct vcpu_stop *stop)
{
	struct vcpu_env *env = v->env;
	uint64_t t0 = util_now_ns();
	bool interrupted;
	int rc, saved_errno;

	if (!v->ran && v->index == 0 && env->restore_t0 && env->verbose)
		vm_log("restore: the guest's first KVM_RUN %" PRIu64 " us after the restore began",
		       (t0 - env->restore_t0) / 1000);
	v->ran = true;
	vm_stats_enter_run(env->stats, v->index, t0);
	rc = v->ops->run(v);
	saved_errno = errno;
	vm_stats_leave_run(env->stats, v->index);
	/* Writes KVM coalesced while the guest ran come before whatever this return brings. */
	pio_ring_drain(env->pio_ring);
	interrupted = rc < 0 || v->run->exit_reason == KVM_EXIT_INTR;
	v->t_user =
		vm_stats_account_run(env->stats, v->index, v->t_user, t0, interrupted, v->run->exit_reason);
	/*
	 * VMM-kept PMU counters overflow exactly at the exit that wraps them.
	 * A return for the PMU signal is left to vm_pmu_poll(), which does the
	 * same and more before the next run.
	 */
	if (!(rc < 0 && tls_pmu_signalled))
		vm_pmu_after_exit(env->pmu, v->index);
	if (rc < 0) {
		if (saved_errno == EINTR || saved_errno == EAGAIN)
			return VCPU_INTERRUPTED;
		return stop_with(stop, PV_EXIT_VMM_ERROR, "vCPU %u: KVM_RUN failed: %s", v->index,
				 strerror(saved_errno));
	}
	return vcpu_handle_exit(v, stop);
}

/* ---- the loop ---------------------------------------------------------------------------- */

/*
 * An I/O, MMIO or MSR exit is complete (RIP advanced, a read's value in the
 * guest's registers) only once KVM_RUN is entered again: do that now, with
 * immediate_exit set so no guest instruction runs, so the state a snapshot
 * reads is consistent (KVM's api.rst, KVM_RUN). Not an exit: not counted.
 */
static void complete_pending_exit(struct vcpu *v)
{
	switch (v->run->exit_reason) {
	case KVM_EXIT_IO:
	case KVM_EXIT_MMIO:
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		(void)v->ops->run(v); /* returns -EINTR at once */
		break;
	default:
		break;
	}
}

static void park(struct vcpu *v)
{
	struct vmctl *ctl = v->env->ctl;

	complete_pending_exit(v);
	vmctl_park(ctl, v->index);
	/* The kick that parked it set immediate_exit; cleared unless the VM is stopping. */
	if (!vmctl_stopping(ctl))
		__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
}

/*
 * A signal made KVM_RUN return (or not start): serve it where the thread
 * is. immediate_exit is cleared before the loop looks at the VM's state
 * again: a kick sets the stop or pause flag first, so it is not lost.
 */
static bool serve_signals(struct vcpu *v)
{
	if (tls_pmu_signalled) {
		tls_pmu_signalled = 0;
		__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
		vm_pmu_poll(v->env->pmu, v->index);
		return true;
	}
	if (tls_prof_signalled) {
		tls_prof_signalled = 0;
		__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
		vm_profile_sample(v->env->prof, v->index, tls_prof_fd);
		return true;
	}
	return false;
}

void vcpu_loop(struct vcpu *v)
{
	struct vmctl *ctl = v->env->ctl;
	struct vcpu_stop stop;

	v->t_user = util_now_ns();
	for (;;) {
		switch (vmctl_vcpu_state(ctl)) {
		case VCPU_STOPPING:
			return;
		case VCPU_PAUSED:
			park(v);
			continue;
		case VCPU_RUNNING:
			break;
		}
		if (serve_signals(v))
			continue;
		if (vcpu_run_once(v, &stop) == VCPU_STOP) {
			vmctl_request_stop(ctl, stop.status, "%s", stop.why);
			return;
		}
	}
}

/* ---- the thread ---------------------------------------------------------------------------- */

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vcpu_env *env = v->env;
	struct errbuf err;

	tls_run = v->run;
	if (vm_pmu_vcpu_start(env->pmu, v->index, &err) ||
	    vm_profile_vcpu_start(env->prof, v->index, v->fd, v->run, &err))
		vmctl_request_stop(env->ctl, PV_EXIT_VMM_ERROR, "%s", err.msg);
	/* The filter goes on before the first KVM_RUN, and the main thread's before any vCPU runs. */
	else if (seccomp_install(env->seccomp, SECCOMP_THREAD_VCPU, v->index, &err))
		vmctl_request_stop(env->ctl, PV_EXIT_VMM_ERROR, "%s", err.msg);
	vmctl_wait_gate(env->ctl);
	vcpu_loop(v);
	/* Final values, then STOPPED: readers know they will not change. */
	vm_pmu_vcpu_stop(env->pmu, v->index);
	vm_profile_vcpu_stop(env->prof, v->index);
	vm_stats_vcpu_stopped(env->stats, v->index);
	return NULL;
}

int vcpu_start(struct vcpu *v, struct errbuf *err)
{
	sigset_t kick, old;
	int rc;

	vm_stats_vcpu_online(v->env->stats, v->index);
	/* The thread inherits the signal mask: keep its signals unblocked in it. */
	sigemptyset(&kick);
	sigaddset(&kick, vmctl_kick_signal());
	sigaddset(&kick, vm_pmu_signal());
	sigaddset(&kick, SIGIO);
	sigaddset(&kick, vm_profile_signal());
	pthread_sigmask(SIG_UNBLOCK, &kick, &old);
	rc = pthread_create(&v->thread, NULL, vcpu_thread, v);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return errbuf_set(err, -rc, "vCPU %u: cannot start thread: %s", v->index, strerror(rc));
	v->thread_started = true;
	vmctl_started(v->env->ctl, v->index, v->thread);
	vm_stats_vcpu_thread(v->env->stats, v->index, v->thread);
	return 0;
}

void vcpu_join(struct vcpu *v)
{
	if (v->thread_started) {
		pthread_join(v->thread, NULL);
		vmctl_joined(v->env->ctl, v->index);
	}
	v->thread_started = false;
}
