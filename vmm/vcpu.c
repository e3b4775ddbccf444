// SPDX-License-Identifier: MIT
/*
 * vCPU threads and the run loop. The loop switches on the exit reason and
 * only delegates: I/O and MMIO to the bus, MSRs to the bus, stop-type exits
 * to vm_request_stop(). Every exit is counted in the vCPU's counters.
 */
#include "vm_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* The kick signal only interrupts KVM_RUN; its handler does nothing. */
#define VCPU_KICK_SIGNAL SIGUSR1

static void kick_handler(int sig)
{
	(void)sig;
}

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
	sa.sa_handler = kick_handler; /* no SA_RESTART: KVM_RUN returns -EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0)
		return errbuf_set(err, -errno, "sigaction: %s", strerror(errno));
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

int vcpu_init(struct vm *vm, struct vcpu *v, unsigned index, struct errbuf *err)
{
	memset(v, 0, sizeof(*v));
	v->kvm_stats_fd = -1;
	v->vm = vm;
	v->index = index;
	v->fd = ioctl(vm->fd, KVM_CREATE_VCPU, (unsigned long)index);
	if (v->fd < 0)
		return errbuf_set(err, -errno, "vCPU %u: KVM_CREATE_VCPU: %s", index, strerror(errno));
	v->run = mmap(NULL, (size_t)vm->kvm.vcpu_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		int rc = errbuf_set(err, -errno, "vCPU %u: mmap of kvm_run: %s", index, strerror(errno));

		v->run = NULL;
		close(v->fd);
		v->fd = -1;
		return rc;
	}
	vm_pmu_vcpu_init(v);
	return 0;
}

void vcpu_fini(struct vcpu *v)
{
	free(v->cpuid);
	v->cpuid = NULL;
	if (v->run)
		munmap(v->run, (size_t)v->vm->kvm.vcpu_mmap_size);
	if (v->fd >= 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}

/* Count one event in this vCPU's entry. vCPU thread only. */
static void count(struct vcpu *v, struct sb_field f)
{
	sb_begin(v->stats);
	sb_add(v->stats, f, 1);
	sb_end(v->stats);
}

static void unhandled(struct vcpu *v, enum bus_space space, const struct bus_access *a)
{
	if (ratelimit_allow(&v->vm->unhandled_rl[space]))
		vm_log(v->vm, "vCPU %u: unhandled %s %s 0x%" PRIx64 " (%u bytes)%s", v->index,
		       bus_space_name(space), a->is_write ? "write" : "read", a->addr, a->len,
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

		if (bus_dispatch(&v->vm->bus, BUS_PIO, &a) == -ENOENT) {
			count(v, v->vm->sf.unhandled_io);
			unhandled(v, BUS_PIO, &a);
		} else if (a.range < VM_STATS_MAX_IO_RANGES) {
			count(v, v->vm->sf.io_range[a.range]);
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

	if (bus_dispatch(&v->vm->bus, BUS_MMIO, &a) == -ENOENT) {
		count(v, v->vm->sf.unhandled_mmio);
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
	run->msr.error = bus_dispatch(&v->vm->bus, BUS_MSR, &a) ? 1 : 0;
	if (!is_write && !run->msr.error)
		run->msr.data = val;
}

static void report_stop_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	struct kvm_regs regs;
	uint64_t rip = 0;

	if (ioctl(v->fd, KVM_GET_REGS, &regs) == 0)
		rip = regs.rip;
	switch (run->exit_reason) {
	case KVM_EXIT_SHUTDOWN:
		vm_request_stop(v->vm, PV_EXIT_GUEST_CRASH,
				"vCPU %u: guest triple fault (shutdown) at rip 0x%" PRIx64, v->index, rip);
		break;
	case KVM_EXIT_HLT:
		vm_request_stop(v->vm, 0, "vCPU %u: guest halted", v->index);
		break;
	case KVM_EXIT_SYSTEM_EVENT:
		vm_request_stop(v->vm, 0, "vCPU %u: guest system event %u (%s)", v->index,
				run->system_event.type,
				run->system_event.type == KVM_SYSTEM_EVENT_RESET ? "reset" : "shutdown");
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		vm_request_stop(v->vm, PV_EXIT_GUEST_CRASH,
				"vCPU %u: KVM internal error, suberror %u, at rip 0x%" PRIx64, v->index,
				run->internal.suberror, rip);
		break;
	case KVM_EXIT_FAIL_ENTRY:
		vm_request_stop(v->vm, PV_EXIT_GUEST_CRASH,
				"vCPU %u: KVM entry failed, hardware reason 0x%llx", v->index,
				(unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		break;
	default:
		vm_request_stop(v->vm, PV_EXIT_GUEST_CRASH,
				"vCPU %u: unexpected KVM exit reason %u at rip 0x%" PRIx64, v->index,
				run->exit_reason, rip);
		break;
	}
}

/* Returns false when the loop must end. */
static bool handle_exit(struct vcpu *v)
{
	switch (v->run->exit_reason) {
	case KVM_EXIT_IO:
		handle_io(v);
		return true;
	case KVM_EXIT_MMIO:
		handle_mmio(v);
		return true;
	case KVM_EXIT_X86_RDMSR:
		handle_msr(v, false);
		return true;
	case KVM_EXIT_X86_WRMSR:
		handle_msr(v, true);
		return true;
	case KVM_EXIT_INTR:
		return true;
	default:
		report_stop_exit(v);
		return false;
	}
}

/*
 * Account one return from KVM_RUN in this vCPU's stats entry: time inside
 * and outside KVM_RUN, the exit and its reason, KVM's own stats now and
 * then. Returns the time that ends the KVM_RUN interval: it is taken inside
 * the update that clears time.kvm_run_since_ns, so no reader ever computed a
 * live time.kvm_run_ns past it (docs/stats-abi.md "Live values").
 */
static uint64_t account_run(struct vcpu *v, uint64_t t_user, uint64_t t0, int rc)
{
	const struct vm_stats_fields *sf = &v->vm->sf;
	uint64_t t1;

	sb_begin(v->stats);
	t1 = util_now_ns();
	sb_add(v->stats, sf->run_ns, t1 - t0);
	sb_set(v->stats, sf->run_since_ns, 0);
	sb_add(v->stats, sf->user_ns, t0 - t_user);
	if (rc < 0 || v->run->exit_reason == KVM_EXIT_INTR) {
		/* Interrupted (a kick, a signal): not an exit to handle, so not in `exits`. */
		sb_add(v->stats, sf->exit_intr, 1);
	} else {
		sb_add(v->stats, sf->exits, 1);
		sb_add(v->stats, vm_stats_exit_field(v->vm, v->run->exit_reason), 1);
	}
	sb_end(v->stats);
	vm_stats_kvm_refresh(v, t1, false);
	/*
	 * VMM-kept PMU counters overflow exactly at the exit that wraps them.
	 * A return for the PMU signal is left to vm_pmu_poll(), which does the
	 * same and more at the top of the loop.
	 */
	if (!(rc < 0 && tls_pmu_signalled))
		vm_pmu_after_exit(v);
	return t1;
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	uint64_t t_user = util_now_ns();
	struct errbuf err;

	tls_run = v->run;
	if (vm_pmu_vcpu_start(v, &err) || vm_profile_vcpu_start(v, &err))
		vm_request_stop(vm, PV_EXIT_VMM_ERROR, "%s", err.msg);
	/* The filter goes on before the first KVM_RUN, and the main thread's before any vCPU runs. */
	else if (seccomp_install(vm->cfg.seccomp, SECCOMP_THREAD_VCPU, v->index, &err))
		vm_request_stop(vm, PV_EXIT_VMM_ERROR, "%s", err.msg);
	vm_wait_start_gate(vm);
	while (!atomic_load(&vm->stopping)) {
		uint64_t t0;

		if (atomic_load(&vm->paused)) {
			vm_park_vcpu(v);
			continue;
		}
		if (tls_pmu_signalled) {
			/*
			 * Clear immediate_exit before looking at the stop and pause
			 * flags again: a kick sets its flag first, so it is not lost.
			 */
			tls_pmu_signalled = 0;
			__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
			vm_pmu_poll(v);
			continue;
		}
		if (tls_prof_signalled) {
			/* As above: the sample is taken where the thread is, after KVM_RUN returned. */
			tls_prof_signalled = 0;
			__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
			vm_profile_sample(v, tls_prof_fd);
			continue;
		}
		t0 = util_now_ns();
		if (!vm->first_run_logged && v->index == 0 && vm->restored)
			vm_log_first_run(vm, t0);
		vm_stats_enter_run(v, t0);
		int rc = ioctl(v->fd, KVM_RUN, 0), saved_errno = errno;

		vm_stats_leave_run(v);
		t_user = account_run(v, t_user, t0, rc);
		if (rc < 0) {
			if (saved_errno == EINTR || saved_errno == EAGAIN)
				continue;
			vm_request_stop(vm, PV_EXIT_VMM_ERROR, "vCPU %u: KVM_RUN failed: %s", v->index,
					strerror(saved_errno));
			break;
		}
		if (!handle_exit(v))
			break;
	}
	/* Final values, then STOPPED: readers know they will not change. */
	vm_pmu_vcpu_stop(v);
	vm_profile_vcpu_stop(v);
	vm_stats_kvm_refresh(v, util_now_ns(), true);
	sb_set_state(v->stats, PV_STATS_STOPPED);
	return NULL;
}

int vcpu_start(struct vcpu *v, struct errbuf *err)
{
	sigset_t kick, old;
	int rc;

	/* Published before the thread runs, so its final STOPPED state is never overwritten. */
	stats_vcpu_online(v->vm->stats, v->index);
	/* The thread inherits the signal mask: keep the kick signal unblocked in it. */
	sigemptyset(&kick);
	sigaddset(&kick, VCPU_KICK_SIGNAL);
	sigaddset(&kick, vm_pmu_signal());
	sigaddset(&kick, SIGIO);
	sigaddset(&kick, vm_profile_signal());
	pthread_sigmask(SIG_UNBLOCK, &kick, &old);
	rc = pthread_create(&v->thread, NULL, vcpu_thread, v);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return errbuf_set(err, -rc, "vCPU %u: cannot start thread: %s", v->index, strerror(rc));
	v->thread_started = true;
	/* For the main thread's samples of its CPU time while it stays inside KVM_RUN. */
	v->cpu_clock_ok = pthread_getcpuclockid(v->thread, &v->cpu_clock) == 0;
	return 0;
}

void vcpu_kick(struct vcpu *v)
{
	/*
	 * immediate_exit covers a thread about to enter KVM_RUN; the signal
	 * covers one already inside it (including an AP waiting for a SIPI).
	 */
	__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (v->thread_started)
		pthread_kill(v->thread, VCPU_KICK_SIGNAL);
}

void vcpu_join(struct vcpu *v)
{
	if (v->thread_started)
		pthread_join(v->thread, NULL);
	v->thread_started = false;
}
