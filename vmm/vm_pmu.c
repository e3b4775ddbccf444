// SPDX-License-Identifier: MIT
/*
 * The PV PMU glue (docs/pvpmu.md): probes what the host can back, routes
 * the MSR block to userspace with KVM's MSR filter, adds the CPUID leaves,
 * and gives each vCPU's emulation (pmu/) its host: perf fds on the vCPU
 * thread, the VMM's own counts from the stats entry, NMI/MSI injection,
 * guest pages, and the stats region.
 */
#include "vm_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int vm_pmu_signal(void)
{
	return SIGRTMIN + 1;
}

/* ---- host operations, on the vCPU thread (ctx is the struct vcpu) ---------------- */

static int host_open(void *ctx, const struct pmu_event_info *ev, uint64_t cfg, uint64_t period)
{
	(void)ctx;
	return pmu_perf_open(ev, cfg, period, vm_pmu_signal());
}

static int host_read(void *ctx, int h, uint64_t *count)
{
	(void)ctx;
	return pmu_perf_read(h, count);
}

static int host_set_period(void *ctx, int h, uint64_t period)
{
	(void)ctx;
	return pmu_perf_set_period(h, period);
}

static void host_close(void *ctx, int h)
{
	(void)ctx;
	close(h);
}

static uint64_t host_hv_read(void *ctx, uint32_t event)
{
	struct vcpu *v = ctx;
	struct vm *vm = v->vm;

	if (event == PV_PMU_EV_EXITS_MSR)
		return sb_get(vm->stats, v->index, vm->sf.exit_msr_read) +
		       sb_get(vm->stats, v->index, vm->sf.exit_msr_write);
	if (event >= PV_PMU_NR_EVENTS || !vm->pmu_event_has_field[event])
		return 0;
	return sb_get(vm->stats, v->index, vm->pmu_event_field[event]);
}

static int host_inject(void *ctx, uint64_t pmi_cfg)
{
	struct vcpu *v = ctx;
	struct kvm_msi msi;

	if (!(pmi_cfg & PV_PMU_PMI_MODE_VECTOR))
		return ioctl(v->fd, KVM_NMI) < 0 ? -errno : 0;
	/* A fixed, edge-triggered MSI to this vCPU's own local APIC (APIC id == index). */
	memset(&msi, 0, sizeof(msi));
	msi.address_lo = 0xfee00000u | (v->index << 12);
	msi.data = (uint32_t)(pmi_cfg & PV_PMU_PMI_VECTOR_MASK);
	return ioctl(v->vm->fd, KVM_SIGNAL_MSI, &msi) < 0 ? -errno : 0;
}

static void *host_page(void *ctx, uint64_t gpa)
{
	struct vcpu *v = ctx;

	return gmem_hva(&v->vm->mem, gpa, 4096);
}

static void host_stat(void *ctx, enum pmu_stat s, uint64_t n)
{
	struct vcpu *v = ctx;
	struct sb_field f = v->vm->sf.pmu_stat[s];

	sb_begin(v->stats);
	if (s == PMU_STAT_HOST_COUNTERS)
		sb_set(v->stats, f, n);
	else
		sb_add(v->stats, f, n);
	sb_end(v->stats);
}

static void host_log(void *ctx, const char *msg)
{
	struct vcpu *v = ctx;

	vm_log(v->vm, "vCPU %u: %s", v->index, msg);
}

static const struct pmu_host_ops host_ops = {
	.open = host_open,
	.read = host_read,
	.set_period = host_set_period,
	.close = host_close,
	.hv_read = host_hv_read,
	.inject = host_inject,
	.page = host_page,
	.stat = host_stat,
	.log = host_log,
};

/* ---- setup ------------------------------------------------------------------------ */

static int msr_access(void *opaque, struct bus_access *a)
{
	struct vm *vm = opaque;
	struct pmu_vcpu *p = &vm->vcpus[a->vcpu].pmu;
	uint64_t val;

	if (a->is_write) {
		memcpy(&val, a->data, sizeof(val));
		return pmu_msr_write(p, (uint32_t)a->addr, val);
	}
	if (pmu_msr_read(p, (uint32_t)a->addr, &val))
		return -EINVAL;
	memcpy(a->data, &val, sizeof(val));
	return 0;
}

static int route_msrs(struct vm *vm, struct errbuf *err)
{
	static uint8_t deny_all[PV_PMU_MSR_BLOCK_SIZE / 8]; /* 0 bits: every access exits */
	struct kvm_enable_cap cap = { .cap = KVM_CAP_X86_USER_SPACE_MSR,
				      .args = { KVM_MSR_EXIT_REASON_FILTER } };
	struct kvm_msr_filter filter = {
		.flags = KVM_MSR_FILTER_DEFAULT_ALLOW,
		.ranges = { {
			.flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE,
			.nmsrs = PV_PMU_MSR_BLOCK_SIZE,
			.base = PV_PMU_MSR_BASE,
			.bitmap = deny_all,
		} },
	};

	if (ioctl(vm->kvm.fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_USER_SPACE_MSR) <= 0 ||
	    ioctl(vm->kvm.fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_MSR_FILTER) <= 0)
		return errbuf_set(
			err, -ENOTSUP,
			"this KVM cannot send MSR accesses to userspace (KVM_CAP_X86_USER_SPACE_MSR, "
			"KVM_CAP_X86_MSR_FILTER), which the PV PMU needs; run with --pmu off");
	if (ioctl(vm->fd, KVM_ENABLE_CAP, &cap) < 0)
		return errbuf_set(err, -errno, "KVM_ENABLE_CAP(KVM_CAP_X86_USER_SPACE_MSR): %s",
				  strerror(errno));
	if (ioctl(vm->fd, KVM_X86_SET_MSR_FILTER, &filter) < 0)
		return errbuf_set(err, -errno, "KVM_X86_SET_MSR_FILTER: %s", strerror(errno));
	return 0;
}

int vm_pmu_create(struct vm *vm, struct errbuf *err)
{
	struct pmu_caps caps;
	int rc, n;

	if (!vm->cfg.pmu)
		return 0;
	pmu_caps_init(&caps);
	n = pmu_caps_probe(&caps, pmu_perf_probe);
	if (vm->cfg.verbose)
		vm_log(vm, "PV PMU: %d host events can be backed here%s", n,
		       caps.features & PV_PMU_FEAT_HOST_HW ? " (hardware PMU present)"
							   : " (no hardware PMU)");
	pmu_vm_init(&vm->pmu, &caps);
	rc = route_msrs(vm, err);
	if (!rc)
		rc = bus_register(&vm->bus, BUS_MSR, PV_PMU_MSR_BASE, PV_PMU_MSR_BLOCK_SIZE, msr_access, vm,
				  "pvpmu", err);
	return rc;
}

void vm_pmu_vcpu_init(struct vcpu *v)
{
	if (v->vm->cfg.pmu)
		pmu_vcpu_init(&v->pmu, &v->vm->pmu, &host_ops, v);
}

void vm_pmu_cpuid(const struct vm *vm, struct kvm_cpuid2 *c)
{
	if (!vm->cfg.pmu)
		return;
	for (uint32_t leaf = PV_PMU_CPUID_SIGNATURE; leaf <= PV_PMU_CPUID_MAX; leaf++) {
		struct kvm_cpuid_entry2 *e = &c->entries[c->nent++];
		uint32_t r[4];

		memset(e, 0, sizeof(*e));
		pmu_cpuid(&vm->pmu.caps, leaf, r);
		e->function = leaf;
		e->eax = r[0];
		e->ebx = r[1];
		e->ecx = r[2];
		e->edx = r[3];
	}
}

static void map_event(struct vm *vm, uint32_t id, struct sb_field f)
{
	vm->pmu_event_field[id] = f;
	vm->pmu_event_has_field[id] = true;
}

void vm_pmu_stats_ready(struct vm *vm)
{
	const struct vm_stats_fields *sf = &vm->sf;

	map_event(vm, PV_PMU_EV_EXITS, sf->exits);
	map_event(vm, PV_PMU_EV_EXITS_IO, sf->exit_io);
	map_event(vm, PV_PMU_EV_EXITS_MMIO, sf->exit_mmio);
	map_event(vm, PV_PMU_EV_EXITS_HLT, sf->exit_hlt);
	map_event(vm, PV_PMU_EV_EXITS_INTR, sf->exit_intr);
	map_event(vm, PV_PMU_EV_KVM_RUN_NS, sf->run_ns);
	map_event(vm, PV_PMU_EV_VMM_NS, sf->user_ns);
	map_event(vm, PV_PMU_EV_PMIS, sf->pmu_stat[PMU_STAT_PMI]);
	map_event(vm, PV_PMU_EV_EXITS_MSR_READ, sf->exit_msr_read);
	map_event(vm, PV_PMU_EV_EXITS_MSR_WRITE, sf->exit_msr_write);
	/* Class 3: available where KVM has the stat (vm_stats.c mapped its "kvm.<name>" mirror). */
	for (uint32_t id = 0; id < PV_PMU_NR_EVENTS && vm->cfg.pmu; id++) {
		const struct pmu_event_info *ev = pmu_event_info(id);

		if (ev && ev->cls == PV_PMU_CLASS_KVM && vm->pmu_event_has_field[id])
			pmu_caps_set_available(&vm->pmu.caps, id);
	}
}

void vm_pmu_map_kvm_stat(struct vm *vm, const char *name, struct sb_field f)
{
	const struct pmu_event_info *ev = pmu_event_by_name(name);

	if (ev && ev->cls == PV_PMU_CLASS_KVM)
		map_event(vm, ev->id, f);
}

/* ---- the vCPU thread -------------------------------------------------------------- */

static int vm_pmu_vcpu_restore(struct vcpu *v, struct errbuf *err);

int vm_pmu_vcpu_start(struct vcpu *v, struct errbuf *err)
{
	struct sigevent sev;

	if (!v->vm->cfg.pmu)
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = vm_pmu_signal();
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &v->pmu_timer) < 0)
		return errbuf_set(err, -errno, "vCPU %u: timer_create: %s", v->index, strerror(errno));
	v->pmu_timer_created = true;
	return vm_pmu_vcpu_restore(v, err);
}

static void refresh_timer(struct vcpu *v);
static void publish_counters(struct vcpu *v);

/*
 * A restored VM: this thread re-creates the host counters behind its PMU,
 * continuing from the saved values, before its first KVM_RUN.
 */
static int vm_pmu_vcpu_restore(struct vcpu *v, struct errbuf *err)
{
	const char *why;

	if (!v->restore_pmu)
		return 0;
	if (pmu_vcpu_restore(&v->pmu, v->restore_pmu, &why))
		return errbuf_set(err, -EINVAL, "restore: vCPU %u: PV PMU state: %s", v->index, why);
	v->restore_pmu = NULL;
	publish_counters(v);
	refresh_timer(v);
	return 0;
}

/* Arm or disarm the refresh timer when the PMU's need for it changes. */
static void refresh_timer(struct vcpu *v)
{
	bool want = pmu_wants_refresh(&v->pmu);
	struct itimerspec its;

	if (want == v->pmu_timer_armed || !v->pmu_timer_created)
		return;
	memset(&its, 0, sizeof(its));
	if (want) {
		its.it_value.tv_nsec = PMU_REFRESH_US * 1000L;
		its.it_interval = its.it_value;
	}
	if (timer_settime(v->pmu_timer, 0, &its, NULL) == 0)
		v->pmu_timer_armed = want;
}

/* The counters' values in the stats entry, as of the PMU's last sync. */
static void publish_counters(struct vcpu *v)
{
	const struct pmu_vcpu *p = &v->pmu;

	sb_begin(v->stats);
	for (unsigned i = 0; i < PMU_NR_COUNTERS; i++)
		sb_set(v->stats, v->vm->sf.pmu_ctr[i], p->ctr[i].value);
	sb_end(v->stats);
}

void vm_pmu_after_exit(struct vcpu *v)
{
	struct pmu_vcpu *p = &v->pmu;

	if (!p->vm || (!p->nr_counting && !p->page && !p->pmi_pending && !v->pmu_timer_armed))
		return;
	pmu_after_exit(p);
	publish_counters(v);
	refresh_timer(v);
}

void vm_pmu_poll(struct vcpu *v)
{
	if (!v->pmu.vm)
		return;
	pmu_poll(&v->pmu);
	publish_counters(v);
	refresh_timer(v);
}

void vm_pmu_vcpu_stop(struct vcpu *v)
{
	if (v->pmu.vm) {
		pmu_vcpu_fini(&v->pmu);
		publish_counters(v);
	}
	if (v->pmu_timer_created)
		timer_delete(v->pmu_timer);
	v->pmu_timer_created = v->pmu_timer_armed = false;
}
