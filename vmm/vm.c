// SPDX-License-Identifier: MIT
/*
 * The VM: composes KVM, guest memory, the loader, the devices and the vCPUs
 * in one visible sequence (create -> configure -> freeze the bus -> start),
 * waits for the guest to finish, and tears everything down in reverse.
 */
#include "vm_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "perfvisor/bootinfo.h"

#define TSS_ADDR 0xfffbd000ULL
/* The main thread refreshes the VM record (uptime, totals) this often. */
#define VM_STATS_VM_PERIOD_MS 100 /* three pages below the BIOS area, unused by guests */
/* The main thread drains the profiler's rings this often (PROF_RING_SIZE / PROF_MAX_RATE = 100 ms). */
#define VM_PROFILE_DRAIN_MS 50

void vm_stop_signals(sigset_t *s)
{
	static const int stop[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR2 };

	sigemptyset(s);
	for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); i++)
		sigaddset(s, stop[i]);
}

void vm_log(struct vm *vm, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	(void)vm;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "perfvisor: %s\n", line);
}

void vm_request_stop(struct vm *vm, int status, const char *fmt, ...)
{
	uint64_t one = 1;
	va_list ap;

	pthread_mutex_lock(&vm->stop_lock);
	if (!atomic_load(&vm->stopping)) {
		vm->stop_status = status;
		va_start(ap, fmt);
		vsnprintf(vm->stop_why, sizeof(vm->stop_why), fmt, ap);
		va_end(ap);
		atomic_store(&vm->stopping, true);
		pthread_cond_broadcast(&vm->pause_cond);
		/* One write cannot overflow the eventfd; nothing to handle. */
		(void)!write(vm->stop_efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&vm->stop_lock);
}

static int vm_setup_kvm(struct vm *vm, struct errbuf *err)
{
	struct kvm_userspace_memory_region region;
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };

	if (vm->nr_vcpus > (unsigned)vm->kvm.max_vcpus)
		return errbuf_set(err, -EINVAL, "--cpus %u exceeds this KVM's limit of %d vCPUs",
				  vm->nr_vcpus, vm->kvm.max_vcpus);
	vm->fd = ioctl(vm->kvm.fd, KVM_CREATE_VM, 0);
	if (vm->fd < 0)
		return errbuf_set(err, -errno, "KVM_CREATE_VM: %s", strerror(errno));
	if (ioctl(vm->fd, KVM_SET_TSS_ADDR, (unsigned long)TSS_ADDR) < 0)
		return errbuf_set(err, -errno, "KVM_SET_TSS_ADDR: %s", strerror(errno));
	if (ioctl(vm->fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return errbuf_set(err, -errno, "KVM_CREATE_IRQCHIP: %s", strerror(errno));
	if (ioctl(vm->fd, KVM_CREATE_PIT2, &pit) < 0)
		return errbuf_set(err, -errno, "KVM_CREATE_PIT2: %s", strerror(errno));
	region = (struct kvm_userspace_memory_region){
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = vm->mem.size,
		.userspace_addr = (uintptr_t)vm->mem.hva,
	};
	if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return errbuf_set(err, -errno, "KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
	return 0;
}

static int vm_setup_vcpus(struct vm *vm, struct errbuf *err)
{
	int rc;

	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return errbuf_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		vm->vcpus[i].fd = -1;
		vm->vcpus[i].kvm_stats_fd = -1;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		rc = vcpu_init(vm, &vm->vcpus[i], i, err);
		if (rc)
			return rc;
		rc = x86_setup_cpuid(vm, &vm->vcpus[i], err);
		if (rc)
			return rc;
	}
	/* KVM_GET_TSC_KHZ fails on hosts without a stable TSC; the guest then sees 0. */
	rc = ioctl(vm->vcpus[0].fd, KVM_GET_TSC_KHZ, 0);
	vm->tsc_khz = rc > 0 ? (uint32_t)rc : 0;
	/* APs stay in wait-for-SIPI in the in-kernel LAPIC; only the BSP gets state. */
	return 0;
}

int vm_create(struct vm **out, const struct vm_config *cfg, struct errbuf *err)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	int rc;

	bool restore = cfg->restore != NULL;

	*out = NULL;
	if (!vm)
		return errbuf_set(err, -ENOMEM, "out of memory");
	vm->created_ns = util_now_ns();
	vm->restored_memfd = -1;
	vm->cfg = *cfg;
	vm->nr_vcpus = cfg->nr_cpus;
	vm->fd = -1;
	vm->kvm.fd = -1;
	vm->mem.fd = -1;
	vm->mem.src_fd = -1;
	vm->console.fd = -1;
	for (int s = 0; s < BUS_NR_SPACES; s++)
		vm->unhandled_rl[s] = (struct ratelimit)RATELIMIT_INIT(1000000000ULL, 10);
	pthread_mutex_init(&vm->stop_lock, NULL);
	pthread_cond_init(&vm->pause_cond, NULL);
	vm->api.listen_fd = -1;
	bus_init(&vm->bus);
	vm->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->stop_efd < 0) {
		rc = errbuf_set(err, -errno, "eventfd: %s", strerror(errno));
		goto fail;
	}

	/* create (a restore first reads and checks the whole snapshot: it sets the machine) */
	host_detect("", &vm->kvm_host);
	rc = kvmsys_open(&vm->kvm, err);
	if (!rc && restore)
		rc = vm_restore_load(vm, err);
	if (!rc)
		rc = restore ? vm_restore_memory(vm, err) : gmem_init(&vm->mem, cfg->mem_size, err);
	if (!rc)
		rc = vm_setup_kvm(vm, err);
	if (!rc)
		rc = console_init(&vm->console, &vm->cfg, err);
	/* configure */
	if (!rc && !restore) {
		struct boot_config bc = { cfg->kernel, cfg->cmdline, cfg->initrd, cfg->nr_initrd,
					  cfg->nr_cpus };

		rc = boot_load(&vm->mem, &bc, &vm->boot, err);
		vm->kernel = vm->boot.kernel;
	}
	if (!rc)
		rc = vm_devices_create(vm, err);
	if (!rc)
		rc = vm_pmu_create(vm, err);
	if (!rc)
		rc = vm_setup_vcpus(vm, err);
	if (!rc && !restore)
		rc = vm->boot.proto == BOOT_PROTO_ELF64
			     ? boot_write_elf64(&vm->mem,
						&(struct boot_elf64){ vm->nr_vcpus, cfg->cmdline, vm->tsc_khz,
								      &vm->kvm_host },
						err)
			     : x86_setup_firmware_state(vm, err);
	if (!rc && !restore)
		rc = x86_setup_bsp(vm, &vm->vcpus[0], err);
	if (!rc && restore)
		rc = vm_restore_state(vm, err);
	if (!rc)
		rc = vm_profile_create(vm, err);
	if (!rc)
		rc = vcpu_signal_setup(err);
	if (rc)
		goto fail;
	/* freeze the bus: from here on, dispatch is lock-free */
	bus_freeze(&vm->bus);
	/* the statistics region: fields declared, layout fixed, memfd sealed */
	rc = vm_stats_create(vm, err);
	if (!rc && restore)
		rc = vm_restore_stats(vm, err);
	if (!rc)
		rc = api_init(&vm->api, cfg->api_socket, err);
	/* the guest's clock continues from the snapshot: set last, right before the vCPUs start */
	if (!rc && restore)
		rc = vm_restore_clock(vm, err);
	if (rc)
		goto fail;
	if (cfg->verbose) {
		char host[96];

		host_describe(&vm->kvm_host, host, sizeof(host));
		vm_log(vm, "host: %s", host);
		if (restore) {
			vm_log(vm, "restored %s (kernel %s): %u vCPUs, %" PRIu64 " MiB, TSC %u kHz",
			       cfg->restore, vm->cfg.kernel, vm->nr_vcpus, vm->mem.size >> 20, vm->tsc_khz);
		} else {
			vm_log(vm, "boot protocol %s: %s", boot_proto_name(vm->boot.proto), vm->boot.why);
			for (unsigned i = 0; i < vm->boot.nr_modules; i++)
				vm_log(vm, "initrd %u '%s': %" PRIu64 " bytes at 0x%" PRIx64, i,
				       cfg->initrd[i], vm->boot.mod_len[i], vm->boot.mod_gpa[i]);
			vm_log(vm,
			       "kernel %s: entry 0x%" PRIx64 ", %u segments at 0x%" PRIx64 "-0x%" PRIx64
			       "; %u vCPUs, %" PRIu64 " MiB, TSC %u kHz",
			       cfg->kernel, vm->kernel.entry, vm->kernel.nr_segments, vm->kernel.low,
			       vm->kernel.high, vm->nr_vcpus, vm->mem.size >> 20, vm->tsc_khz);
		}
	}
	*out = vm;
	return 0;
fail:
	vm_destroy(vm);
	return rc;
}

static void vm_stop_vcpus(struct vm *vm)
{
	atomic_store(&vm->stopping, true);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].run)
			vcpu_kick(&vm->vcpus[i]);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_join(&vm->vcpus[i]);
}

static void feed_stdin(struct vm *vm, struct pollfd *p)
{
	uint8_t buf[256];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n > 0)
		serial_push_input(vm_device(vm, &dev_serial), buf, (size_t)n);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		p->fd = -1; /* EOF: stop polling stdin */
}

/* Main thread: wait for a stop request, a signal or the deadline; serve the API. */
static void vm_wait(struct vm *vm, int sfd)
{
	uint64_t deadline = vm->cfg.timeout_ms ? util_now_ns() + vm->cfg.timeout_ms * 1000000ULL : 0;
	struct pollfd p[3 + 1 + API_MAX_CLIENTS] = {
		{ .fd = vm->stop_efd, .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
		{ .fd = vm->cfg.stdin_input ? STDIN_FILENO : -1, .events = POLLIN },
	};

	while (!atomic_load(&vm->stopping)) {
		/* Profiling: drained often enough that a ring at the rate cap never fills. */
		int wait_ms = vm->prof.spec.n ? VM_PROFILE_DRAIN_MS : VM_STATS_VM_PERIOD_MS;
		int napi = api_pollfds(&vm->api, &p[3], 1 + API_MAX_CLIENTS);

		if (deadline) {
			uint64_t now = util_now_ns();

			if (now >= deadline) {
				vm_request_stop(vm, PV_EXIT_TIMEOUT,
						"timeout: the guest ran longer than %" PRIu64 " s",
						vm->cfg.timeout_ms / 1000);
				break;
			}
			if ((deadline - now) / 1000000 < (uint64_t)wait_ms)
				wait_ms = (int)((deadline - now + 999999) / 1000000);
		}
		if (poll(p, (nfds_t)(3 + napi), wait_ms) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				vm_request_stop(vm, PV_EXIT_SIGNAL_BASE + (int)si.ssi_signo,
						"stopped by signal %s", strsignal((int)si.ssi_signo));
		}
		if (p[2].revents & (POLLIN | POLLHUP))
			feed_stdin(vm, &p[2]);
		api_service(vm, &p[3], napi);
		vm_profile_drain(vm);
		vm_stats_refresh_running(vm);
		vm_stats_update_vm(vm);
	}
}

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
		(void)ioctl(v->fd, KVM_RUN, 0); /* returns -EINTR at once */
		break;
	default:
		break;
	}
}

void vm_park_vcpu(struct vcpu *v)
{
	struct vm *vm = v->vm;

	complete_pending_exit(v);
	pthread_mutex_lock(&vm->stop_lock);
	vm->nr_parked++;
	pthread_cond_broadcast(&vm->pause_cond);
	while (atomic_load(&vm->paused) && !atomic_load(&vm->stopping)) {
		if (v->park_work) {
			void (*fn)(struct vcpu *, void *) = v->park_work;

			pthread_mutex_unlock(&vm->stop_lock);
			fn(v, v->park_arg);
			pthread_mutex_lock(&vm->stop_lock);
			v->park_work = NULL;
			pthread_cond_broadcast(&vm->pause_cond);
			continue;
		}
		pthread_cond_wait(&vm->pause_cond, &vm->stop_lock);
	}
	vm->nr_parked--;
	pthread_mutex_unlock(&vm->stop_lock);
	/* The kick that parked us set immediate_exit; clear it unless we are stopping. */
	if (!atomic_load(&vm->stopping))
		__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
}

void vm_pause(struct vm *vm)
{
	if (atomic_exchange(&vm->paused, true))
		return;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_kick(&vm->vcpus[i]);
	pthread_mutex_lock(&vm->stop_lock);
	while (vm->nr_parked < vm->nr_vcpus && !atomic_load(&vm->stopping))
		pthread_cond_wait(&vm->pause_cond, &vm->stop_lock);
	pthread_mutex_unlock(&vm->stop_lock);
}

void vm_wait_start_gate(struct vm *vm)
{
	pthread_mutex_lock(&vm->stop_lock);
	while (!vm->start_gate && !atomic_load(&vm->stopping))
		pthread_cond_wait(&vm->pause_cond, &vm->stop_lock);
	pthread_mutex_unlock(&vm->stop_lock);
}

void vm_on_parked_vcpus(struct vm *vm, void (*fn)(struct vcpu *v, void *arg), void *arg)
{
	bool busy = true;

	pthread_mutex_lock(&vm->stop_lock);
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		vm->vcpus[i].park_work = fn;
		vm->vcpus[i].park_arg = arg;
	}
	pthread_cond_broadcast(&vm->pause_cond);
	while (busy && !atomic_load(&vm->stopping)) {
		busy = false;
		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			busy |= vm->vcpus[i].park_work != NULL;
		if (busy)
			pthread_cond_wait(&vm->pause_cond, &vm->stop_lock);
	}
	pthread_mutex_unlock(&vm->stop_lock);
}

void vm_log_first_run(struct vm *vm, uint64_t now)
{
	vm->first_run_logged = true;
	if (vm->cfg.verbose)
		vm_log(vm, "restore: the guest's first KVM_RUN %" PRIu64 " us after the restore began",
		       (now - vm->created_ns) / 1000);
}

void vm_resume(struct vm *vm)
{
	pthread_mutex_lock(&vm->stop_lock);
	atomic_store(&vm->paused, false);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->stop_lock);
}

/* Bytes of guest RAM resident in host memory (for --verbose and the bench). */
static uint64_t vm_guest_resident(const struct vm *vm)
{
	size_t pages = vm->mem.size / 4096;
	unsigned char *vec = malloc(pages);
	uint64_t n = 0;

	if (!vec)
		return 0;
	if (mincore(vm->mem.hva, vm->mem.size, vec) == 0)
		for (size_t i = 0; i < pages; i++)
			n += vec[i] & 1;
	free(vec);
	return n * 4096;
}

int vm_run(struct vm *vm, struct errbuf *why)
{
	struct errbuf perr;
	sigset_t sigs;
	int sfd, rc = 0;

	vm_stop_signals(&sigs);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (sfd < 0)
		return errbuf_set(why, PV_EXIT_VMM_ERROR, "signalfd: %s", strerror(errno));

	/* start: every vCPU thread loads its seccomp filter, then the main thread its own, then they run */
	rc = seccomp_prepare(why);
	for (unsigned i = 0; i < vm->nr_vcpus && !rc; i++)
		rc = vcpu_start(&vm->vcpus[i], why);
	if (!rc && vm->cfg.verbose && vm->cfg.seccomp != SECCOMP_OFF) {
		unsigned vi, mi, vn = seccomp_allowed_count(SECCOMP_THREAD_VCPU, &vi),
				 mn = seccomp_allowed_count(SECCOMP_THREAD_MAIN, &mi);

		vm_log(vm,
		       "seccomp %s: vCPU threads allow %u system calls (%u ioctl requests), the main thread %u (%u)",
		       vm->cfg.seccomp == SECCOMP_LOG ? "log" : "on", vn, vi, mn, mi);
	}
	if (!rc)
		rc = seccomp_install(vm->cfg.seccomp, SECCOMP_THREAD_MAIN, 0, why);
	pthread_mutex_lock(&vm->stop_lock);
	vm->start_gate = true;
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->stop_lock);
	if (rc)
		vm_request_stop(vm, PV_EXIT_VMM_ERROR, "%s", why->msg);
	else
		vm_wait(vm, sfd);
	vm_stop_vcpus(vm);
	close(sfd);

	vm_stats_stop(vm);
	if (vm_profile_write(vm, &perr))
		vm_log(vm, "%s", perr.msg);
	if (vm->cfg.verbose)
		for (unsigned i = 0; i < vm->nr_vcpus; i++) {
			const struct vm_stats_fields *f = &vm->sf;
			struct stats_region *r = vm->stats;

			vm_log(vm,
			       "vCPU %u: %" PRIu64 " exits (io %" PRIu64 ", mmio %" PRIu64 ", msr %" PRIu64
			       "/%" PRIu64 ", intr %" PRIu64 ", other %" PRIu64 "), %" PRIu64
			       " us in KVM_RUN",
			       i, sb_get(r, i, f->exits), sb_get(r, i, f->exit_io),
			       sb_get(r, i, f->exit_mmio), sb_get(r, i, f->exit_msr_read),
			       sb_get(r, i, f->exit_msr_write), sb_get(r, i, f->exit_intr),
			       sb_get(r, i, f->exit_other), sb_get(r, i, f->run_ns) / 1000);
		}
	if (vm->cfg.verbose)
		vm_log(vm, "guest memory resident: %" PRIu64 " KiB", vm_guest_resident(vm) >> 10);
	pthread_mutex_lock(&vm->stop_lock);
	snprintf(why->msg, sizeof(why->msg), "%s", vm->stop_why);
	rc = vm->stop_status;
	pthread_mutex_unlock(&vm->stop_lock);
	return rc;
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	/* Reverse of vm_create: threads, API, stats (uses the vCPUs), vCPUs, devices, ... */
	if (vm->vcpus)
		vm_stop_vcpus(vm);
	api_fini(&vm->api);
	vm_stats_destroy(vm);
	vm_profile_destroy(vm);
	if (vm->vcpus) {
		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			vcpu_fini(&vm->vcpus[i]);
		free(vm->vcpus);
		vm->vcpus = NULL;
	}
	vm_devices_destroy(vm);
	bus_fini(&vm->bus);
	console_fini(&vm->console);
	if (vm->fd >= 0)
		close(vm->fd);
	gmem_fini(&vm->mem);
	kvmsys_close(&vm->kvm);
	vm_restore_free(vm);
	if (vm->stop_efd >= 0)
		close(vm->stop_efd);
	pthread_cond_destroy(&vm->pause_cond);
	pthread_mutex_destroy(&vm->stop_lock);
	free(vm);
}
