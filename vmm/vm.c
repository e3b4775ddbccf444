// SPDX-License-Identifier: MIT
/*
 * The VM: composes KVM, guest memory, the boot protocol, the devices, the
 * PV PMU, the vCPUs, the profiler, the statistics and the control socket
 * in one visible sequence (create -> configure -> freeze the bus -> start
 * -> wait -> destroy), and tears them down in reverse. It only composes:
 * every step is another file's, and no file calls back into this one.
 */
#include "vmm.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "api.h"
#include "console.h"
#include "control.h"
#include "kvm.h"
#include "mainloop.h"
#include "parts.h"
#include "seccomp.h"
#include "snapshot.h"
#include "vcpu.h"
#include "vm_devices.h"
#include "vm_pmu.h"
#include "vm_profile.h"
#include "vm_stats.h"
#include "vm_virtio.h"
#include "x86.h"

struct vm {
	struct vm_config cfg;
	uint64_t created_ns; /* for a restore's timing */
	struct host_info host;
	struct kvm_sys kvm;
	struct vm_restore restore; /* a --restore: the snapshot, held until the VM ends */
	struct vmctl ctl;
	struct gmem mem;
	int fd;
	struct console console;
	struct boot_result boot; /* the kernel's protocol and entry state (machine/boot.c) */
	struct bus bus;
	struct vm_devices *devs;
	struct vm_virtio *virtio; /* NULL: no virtio device asked for */
	struct vm_pmu *pmu;
	struct vcpu *vcpus;
	unsigned nr_vcpus;
	struct pio_ring pio_ring; /* the UART's THR writes KVM kept without an exit */
	const char *pio_ring_why; /* why there is none (--verbose), or NULL */
	uint32_t tsc_khz;
	struct vm_profile *prof;
	struct vm_stats *stats;
	struct vm_parts parts;
	struct api api;
	/* what the vCPUs, the snapshot and the control socket are given */
	struct vcpu_env venv;
	struct vm_snapshot_env snap;
	struct api_env api_env;
};

static void log_setup(const struct vm *vm)
{
	const struct vm_config *cfg = &vm->cfg;
	char host[96];

	host_describe(&vm->host, host, sizeof(host));
	vm_log("host: %s", host);
	if (cfg->restore) {
		vm_log("restored %s (kernel %s): %u vCPUs, %" PRIu64 " MiB, TSC %u kHz", cfg->restore,
		       cfg->kernel, vm->nr_vcpus, vm->mem.size >> 20, vm->tsc_khz);
		return;
	}
	vm_log("boot protocol %s: %s", boot_proto_name(vm->boot.proto), vm->boot.why);
	if (vm->boot.cache[0])
		vm_log("kernel cache: %s", vm->boot.cache);
	for (unsigned i = 0; i < vm->boot.nr_modules; i++)
		vm_log("initrd %u '%s': %" PRIu64 " bytes at 0x%" PRIx64, i, cfg->initrd[i],
		       vm->boot.mod_len[i], vm->boot.mod_gpa[i]);
	vm_log("kernel %s: entry 0x%" PRIx64 ", %u segments at 0x%" PRIx64 "-0x%" PRIx64
	       "; %u vCPUs, %" PRIu64 " MiB, TSC %u kHz",
	       cfg->kernel, vm->boot.kernel.entry, vm->boot.kernel.nr_segments, vm->boot.kernel.low,
	       vm->boot.kernel.high, vm->nr_vcpus, vm->mem.size >> 20, vm->tsc_khz);
}

/*
 * The UART's transmit register (COM1's THR, 0x3f8) written without an
 * exit: Linux's console polls LSR (an exit) before each byte, so this
 * halves the exits of a console line; the read serves the byte written
 * before it (struct pio_ring). Where KVM cannot coalesce port writes,
 * every byte exits as before. docs/devices.md.
 */
#define COM1_THR 0x3f8
static void coalesce_serial(struct vm *vm)
{
	const struct bus_range *r = bus_find(&vm->bus, BUS_PIO, COM1_THR);
	long off;

	vm->pio_ring_why = "no UART at 0x3f8";
	if (!r || strcmp(r->name, "serial"))
		return;
	off = kvmsys_coalesce_pio(&vm->kvm, vm->fd, COM1_THR, 1);
	if (off < 0) {
		vm->pio_ring_why = off == -EOPNOTSUPP ? "KVM has no KVM_CAP_COALESCED_PIO"
						      : "KVM_REGISTER_COALESCED_MMIO failed";
		return;
	}
	vm->pio_ring.ring = (struct kvm_coalesced_mmio_ring *)((uint8_t *)vm->vcpus[0].run + off);
	vm->pio_ring.bus = &vm->bus;
	pthread_mutex_init(&vm->pio_ring.lock, NULL);
	vm->venv.pio_ring = &vm->pio_ring;
	vm->pio_ring_why = NULL;
}

/* Each vCPU: created, its CPUID set, its PV PMU; then the TSC rate KVM gives the guest. */
static int create_vcpus(struct vm *vm, struct errbuf *err)
{
	int rc;

	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return errbuf_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].fd = -1;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		rc = vcpu_create(v, vm->fd, i, (size_t)vm->kvm.vcpu_mmap_size, &vm->venv, err);
		if (!rc)
			rc = x86_setup_cpuid(&vm->kvm, vm->pmu, i, vm->nr_vcpus, vm->cfg.cpuid_add,
					     vm->cfg.cpuid_hide, v->fd, &v->cpuid, err);
		if (rc)
			return rc;
		vm_pmu_vcpu_init(vm->pmu, i, v->fd);
	}
	/* KVM_GET_TSC_KHZ fails on hosts without a stable TSC; the guest then sees 0. */
	rc = ioctl(vm->vcpus[0].fd, KVM_GET_TSC_KHZ, 0);
	vm->tsc_khz = rc > 0 ? (uint32_t)rc : 0;
	vm->snap.vcpus = vm->vcpus;
	vm->snap.machine.tsc_khz = vm->tsc_khz;
	/* APs stay in wait-for-SIPI in the in-kernel LAPIC; only the BSP gets state. */
	return 0;
}

/* A new guest: the ELF64 contract's boot area, or a PC firmware's leftovers; the boot vCPU's entry state. */
static int boot_machine(struct vm *vm, struct errbuf *err)
{
	const struct boot_elf64 b = { vm->nr_vcpus, vm->cfg.cmdline, vm->tsc_khz, &vm->host };
	int rc = vm->boot.proto == BOOT_PROTO_ELF64 ? boot_write_elf64(&vm->mem, &b, err)
						    : x86_setup_firmware_state(vm->fd, err);

	return rc ? rc : x86_setup_bsp(vm->vcpus[0].fd, &vm->boot.cpu, err);
}

/* What the vCPUs, the snapshot and the control socket act on (the vCPUs and what comes after them, later). */
static void fill_envs(struct vm *vm)
{
	const struct vm_config *cfg = &vm->cfg;

	vm->venv = (struct vcpu_env){
		.ctl = &vm->ctl,
		.bus = &vm->bus,
		.seccomp = cfg->seccomp,
		.verbose = cfg->verbose,
		.restore_t0 = cfg->restore ? vm->created_ns : 0,
	};
	for (int s = 0; s < BUS_NR_SPACES; s++)
		vm->venv.unhandled_rl[s] = (struct ratelimit)RATELIMIT_INIT(1000000000ULL, 10);
	vm->snap = (struct vm_snapshot_env){
		.ctl = &vm->ctl,
		.kvm = &vm->kvm,
		.vm_fd = vm->fd,
		.mem = &vm->mem,
		.parts = &vm->parts,
		.verbose = cfg->verbose,
		.machine = { .nr_vcpus = vm->nr_vcpus,
			     .pmu = cfg->pmu,
			     .cpuid_hide = cfg->cpuid_hide,
			     .cpuid_add = cfg->cpuid_add,
			     .host = vm->host,
			     .kernel = cfg->kernel,
			     .cmdline = cfg->cmdline,
			     .profile = cfg->prof.n ? cfg->prof.text : "",
			     .profile_symbols = cfg->prof.n && cfg->symbols ? cfg->symbols : "" },
		.virtio = vm->virtio,
	};
	vm->api_env = (struct api_env){ &vm->ctl, &vm->snap, NULL, NULL, cfg->name };
}

/* Once the bus is frozen: the statistics region, and everything that publishes in it or saves state. */
static int create_stats(struct vm *vm, struct errbuf *err)
{
	int *fds = calloc(vm->nr_vcpus, sizeof(*fds));
	struct vm_stats_extra virtio = { .read = vm_virtio_stats_read, .ctx = vm->virtio };
	int rc;

	if (!fds)
		return errbuf_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		fds[i] = vm->vcpus[i].fd;
	vm_virtio_stats_fields(vm->virtio, &virtio.names, &virtio.bytes, &virtio.peak, &virtio.n);
	rc = vm_stats_create(&vm->stats,
			     &(struct vm_stats_config){ vm->nr_vcpus, vm->cfg.name, &vm->bus, fds,
							vm->mem.size, vm->host, virtio },
			     err);
	free(fds);
	if (rc)
		return rc;
	vm_pmu_stats_ready(vm->pmu, vm->stats);
	vm_profile_stats_ready(vm->prof, vm->stats);
	/* The snapshot's parts, in the order a restore loads them. */
	rc = vm_devices_add_parts(vm->devs, &vm->parts, err);
	if (!rc)
		rc = vm_virtio_add_parts(vm->virtio, &vm->parts, err);
	if (!rc)
		rc = vm_pmu_add_parts(vm->pmu, &vm->parts, err);
	if (!rc)
		rc = vm_stats_add_parts(vm->stats, &vm->parts, err);
	return rc;
}

int vm_create(struct vm **out, const struct vm_config *cfg, struct errbuf *err)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	struct acpi_mmio_dev acpi_devs[VM_VIRTIO_MAX]; /* the virtio devices, for the DSDT */
	bool restore = cfg->restore != NULL;
	unsigned pmu_hidden;
	int rc;

	*out = NULL;
	if (!vm)
		return errbuf_set(err, -ENOMEM, "out of memory");
	vm->created_ns = util_now_ns();
	vm->cfg = *cfg;
	vm->fd = vm->kvm.fd = vm->mem.fd = vm->mem.src_fd = vm->console.fd = vm->restore.memfd = -1;
	vm->ctl.stop_efd = vm->api.listen_fd = vm->api.reserve_fd = -1;
	bus_init(&vm->bus);

	/* create (a restore first reads and checks the whole snapshot: it sets the machine) */
	host_detect("", &vm->host);
	if (cfg->incoming_vm && cfg->incoming_vm->vm_fd >= 0) {
		/* A migration's destination made the VM as the memory came (incoming.c). */
		vm->kvm = cfg->incoming_vm->kvm;
		vm->fd = cfg->incoming_vm->vm_fd;
		cfg->incoming_vm->kvm = (struct kvm_sys){ .fd = -1 };
		cfg->incoming_vm->vm_fd = -1;
		rc = 0;
	} else {
		rc = kvmsys_open(&vm->kvm, err);
	}
	if (!rc && restore) {
		rc = vm_restore_load(&vm->restore, &vm->cfg, err);
		if (!rc && (vm->cfg.cpuid_add & ~kvmsys_cpuid_add(&vm->kvm)))
			rc = errbuf_set(
				err, -EOPNOTSUPP,
				"restore %s: its guest has the TSC-deadline LAPIC timer, which this host's KVM does "
				"not offer (KVM_CAP_TSC_DEADLINE_TIMER)",
				cfg->restore);
	} else if (!rc) {
		vm->cfg.cpuid_add = kvmsys_cpuid_add(&vm->kvm) & ~cpuid_add_hidden(cfg->cpuid_hide);
	}
	vm->nr_vcpus = vm->cfg.nr_cpus;
	if (!rc)
		rc = vmctl_init(&vm->ctl, vm->nr_vcpus, err);
	if (!rc)
		rc = restore ? vm_restore_memory(&vm->restore, &vm->cfg, &vm->mem, err)
			     : gmem_init(&vm->mem, cfg->mem_size, err);
	if (!rc && vm->fd < 0)
		rc = kvmsys_create_vm(&vm->kvm, &vm->mem, vm->nr_vcpus, &vm->fd, err);
	if (!rc)
		rc = console_init(&vm->console, cfg->console, cfg->console_path, err);
	/* configure: the kernel, the devices, the PV PMU, the vCPUs, their boot state or the snapshot's */
	if (!rc && !restore) {
		/* the DSDT lists the virtio devices: rng, then the disks, then the nets (vm_virtio_plan) */
		const struct vm_virtio_plan_in plan = { cfg->rng, cfg->nr_disks, cfg->nr_net };

		rc = boot_load(&vm->mem,
			       &(struct boot_config){ cfg->kernel, cfg->cmdline, cfg->initrd, cfg->nr_initrd,
						      cfg->nr_cpus, acpi_devs,
						      vm_virtio_acpi_devs(&plan, acpi_devs, VM_VIRTIO_MAX),
						      cfg->kernel_decompress, cfg->kernel_cache },
			       &vm->boot, err);
	}
	if (!rc)
		rc = vm_devices_create(&vm->devs,
				       &(struct vm_devices_config){ vm->nr_vcpus, vm->fd, &vm->mem,
								    &vm->console, &vm->ctl, &vm->bus },
				       err);
	if (!rc)
		rc = vm_virtio_create(&vm->virtio,
				      &(struct vm_virtio_config){ .rng = vm->cfg.rng,
								  .disks = vm->cfg.disks,
								  .nr_disks = vm->cfg.nr_disks,
								  .vm_fd = vm->fd,
								  .mem = &vm->mem,
								  .ctl = &vm->ctl,
								  .bus = &vm->bus,
								  .verbose = cfg->verbose,
								  .net = vm->cfg.net,
								  .nr_net = vm->cfg.nr_net,
								  .vm_name = vm->cfg.name },
				      err);
	/* --cpuid-hide pmu-ack (also a restore's, for an older snapshot's guest): no PMI_ACK. */
	pmu_hidden = vm->cfg.cpuid_hide & CPUID_HIDE_PMU_ACK ? PV_PMU_FEAT_ACK : 0;
	if (!rc)
		rc = vm_pmu_create(&vm->pmu,
				   &(struct vm_pmu_config){ vm->cfg.pmu, cfg->verbose, &vm->kvm, vm->fd,
							    &vm->bus, &vm->mem, vm->nr_vcpus, pmu_hidden },
				   err);
	if (!rc) {
		fill_envs(vm);
		rc = create_vcpus(vm, err);
	}
	if (!rc)
		rc = restore ? vm_restore_kvm(&vm->restore, &vm->snap, err) : boot_machine(vm, err);
	if (!rc)
		rc = vm_profile_create(
			&vm->prof,
			&(struct vm_profile_config){ &vm->cfg.prof, vm->cfg.profile_output, vm->cfg.symbols,
						     vm->cfg.kernel, vm->boot.vmlinux, vm->boot.vmlinux_len,
						     vm->nr_vcpus, &vm->kvm, &vm->mem, cfg->verbose },
			err);
	boot_result_fini(&vm->boot); /* the profile has read what it needs of the vmlinux */
	if (!rc)
		rc = vmctl_signal_setup(err);
	if (!rc)
		rc = vcpu_signal_setup(err);
	if (rc)
		goto fail;
	/* freeze the bus: from here on, dispatch is lock-free */
	bus_freeze(&vm->bus);
	coalesce_serial(vm); /* the bus finds its UART once frozen */
	/* the statistics region: fields declared, layout fixed, memfd sealed; the snapshot's parts */
	rc = create_stats(vm, err);
	vm->venv.stats = vm->stats;
	vm->venv.pmu = vm->pmu;
	vm->venv.prof = vm->prof;
	vm->api_env.prof = vm->prof;
	vm->api_env.stats = vm->stats;
	if (!rc && restore)
		rc = vm_restore_parts(&vm->restore, &vm->parts, vm->nr_vcpus, err);
	if (!rc)
		rc = api_init(&vm->api, cfg->api_socket, err);
	/* the guest's clock continues from the snapshot: set last, right before the vCPUs start */
	if (!rc && restore)
		rc = vm_restore_clock(&vm->restore, vm->fd, err);
	if (rc)
		goto fail;
	if (cfg->verbose)
		log_setup(vm);
	*out = vm;
	return 0;
fail:
	vm_destroy(vm);
	return rc;
}

static void stop_vcpus(struct vm *vm)
{
	vmctl_stop_all(&vm->ctl);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_join(&vm->vcpus[i]);
}

/* start: every vCPU thread loads its seccomp filter, then the main thread its own, then they run. */
static int start(struct vm *vm, struct errbuf *why)
{
	int rc = seccomp_prepare(why);

	if (!rc)
		rc = vm_virtio_start(vm->virtio, vm->cfg.seccomp, why);
	for (unsigned i = 0; i < vm->nr_vcpus && !rc; i++)
		rc = vcpu_start(&vm->vcpus[i], why);
	if (!rc && vm->cfg.verbose && vm->cfg.seccomp != SECCOMP_OFF) {
		unsigned vi, mi, vn = seccomp_allowed_count(SECCOMP_THREAD_VCPU, &vi),
				 mn = seccomp_allowed_count(SECCOMP_THREAD_MAIN, &mi);

		vm_log("seccomp %s: vCPU threads allow %u system calls (%u ioctl requests), the main thread %u (%u)",
		       vm->cfg.seccomp == SECCOMP_LOG ? "log" : "on", vn, vi, mn, mi);
	}
	if (!rc)
		rc = seccomp_install(vm->cfg.seccomp, SECCOMP_THREAD_MAIN, 0, why);
	vmctl_open_gate(&vm->ctl);
	return rc;
}

int vm_run(struct vm *vm, struct errbuf *why)
{
	struct errbuf perr;
	sigset_t sigs;
	int sfd;

	vm_stop_signals(&sigs);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (sfd < 0)
		return errbuf_set(why, PV_EXIT_VMM_ERROR, "signalfd: %s", strerror(errno));
	if (start(vm, why)) {
		vmctl_request_stop(&vm->ctl, PV_EXIT_VMM_ERROR, "%s", why->msg);
	} else {
		/* A migration's destination: the guest runs here now; the source may exit. */
		if (vm->cfg.incoming_vm)
			mig_incoming_running(vm->cfg.incoming_vm, vm->cfg.verbose);
		vm_main_loop(&(struct main_loop_env){
			.ctl = &vm->ctl,
			.timeout_ms = vm->cfg.timeout_ms,
			.signal_fd = sfd,
			.input = vm->cfg.stdin_input ? vm_devices_find(vm->devs, &dev_serial) : NULL,
			.api = &vm->api,
			.api_env = &vm->api_env,
			.prof = vm->prof,
			.stats = vm->stats,
			.pio_ring = vm->venv.pio_ring,
		});
	}
	stop_vcpus(vm);
	close(sfd);

	vm_stats_stop(vm->stats);
	if (vm_profile_write(vm->prof, &perr))
		vm_log("%s", perr.msg);
	if (vm->cfg.verbose) {
		vm_stats_log_vcpus(vm->stats);
		if (vm->venv.pio_ring)
			vm_log("serial: %" PRIu64 " writes to 0x3f8 coalesced by KVM (not exits)",
			       vm->pio_ring.served);
		else
			vm_log("serial: every byte exits (%s)",
			       vm->pio_ring_why ? vm->pio_ring_why : "no vCPU");
		vm_virtio_log(vm->virtio);
		vm_log("guest memory resident: %" PRIu64 " KiB", gmem_resident_bytes(&vm->mem) >> 10);
	}
	return vmctl_stop_status(&vm->ctl, why->msg, sizeof(why->msg));
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	/* Reverse of vm_create: threads, API, stats (uses the vCPUs), vCPUs, devices, ... */
	if (vm->vcpus && vm->ctl.vcpu)
		stop_vcpus(vm);
	api_fini(&vm->api);
	vm_stats_destroy(vm->stats);
	vm_profile_destroy(vm->prof);
	boot_result_fini(&vm->boot);
	for (unsigned i = 0; vm->vcpus && i < vm->nr_vcpus; i++)
		vcpu_destroy(&vm->vcpus[i]);
	free(vm->vcpus);
	vm_pmu_destroy(vm->pmu);
	vm_virtio_destroy(vm->virtio);
	vm_devices_destroy(vm->devs);
	bus_fini(&vm->bus);
	console_fini(&vm->console);
	if (vm->fd >= 0)
		close(vm->fd);
	gmem_fini(&vm->mem);
	kvmsys_close(&vm->kvm);
	vm_restore_fini(&vm->restore);
	vmctl_fini(&vm->ctl);
	free(vm);
}
