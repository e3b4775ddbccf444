// SPDX-License-Identifier: MIT
/*
 * The PV PMU glue (docs/pvpmu.md): probes what the host can back, routes
 * the MSR block to userspace with KVM's MSR filter, adds the CPUID leaves,
 * and gives each vCPU's emulation (pmu/) its host: perf fds on the vCPU
 * thread, the VMM's own counts from the stats entry, NMI/MSI injection,
 * guest pages, and the stats region.
 */
#include "vm_pmu.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "control.h"

/* One vCPU's PV PMU: its emulation and what backs it. Its own thread only, but at setup. */
struct vm_pmu_vcpu {
	struct vm_pmu *p;
	unsigned index;
	int fd; /* the vCPU's: KVM_NMI */
	struct pmu_vcpu pmu;
	timer_t timer; /* forces exits while the counter page needs refreshing */
	bool timer_created, timer_armed;
	struct sb_entry e;		      /* its statistics entry (vm_pmu_stats_ready) */
	const struct pmu_vcpu_state *restore; /* a restore's state, loaded before its first KVM_RUN */
};

struct vm_pmu {
	bool on, verbose;
	int vm_fd;
	struct gmem *mem;
	struct pmu_vm pmu; /* shared state: capabilities, the host counter budget */
	unsigned nr_vcpus;
	struct vm_pmu_vcpu *v;
	/* the statistics behind the events the VMM counts, and the PMU's own fields */
	struct stats_region *region;
	struct sb_field event_field[PV_PMU_NR_EVENTS];
	bool event_has_field[PV_PMU_NR_EVENTS];
	struct sb_field msr_read, msr_write, stat_field[PMU_STAT_NR], ctr_field[PMU_NR_COUNTERS];
};

int vm_pmu_signal(void)
{
	return SIGRTMIN + 1;
}

/* ---- host operations, on the vCPU thread (ctx is the struct vm_pmu_vcpu) ---------- */

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
	struct vm_pmu_vcpu *v = ctx;
	struct vm_pmu *p = v->p;

	if (!p->region)
		return 0;
	if (event == PV_PMU_EV_EXITS_MSR)
		return sb_get(p->region, v->index, p->msr_read) + sb_get(p->region, v->index, p->msr_write);
	if (event >= PV_PMU_NR_EVENTS || !p->event_has_field[event])
		return 0;
	return sb_get(p->region, v->index, p->event_field[event]);
}

static int host_inject(void *ctx, uint64_t pmi_cfg)
{
	struct vm_pmu_vcpu *v = ctx;
	struct kvm_msi msi;

	if (!(pmi_cfg & PV_PMU_PMI_MODE_VECTOR))
		return ioctl(v->fd, KVM_NMI) < 0 ? -errno : 0;
	/* A fixed, edge-triggered MSI to this vCPU's own local APIC (APIC id == index). */
	memset(&msi, 0, sizeof(msi));
	msi.address_lo = 0xfee00000u | (v->index << 12);
	msi.data = (uint32_t)(pmi_cfg & PV_PMU_PMI_VECTOR_MASK);
	return ioctl(v->p->vm_fd, KVM_SIGNAL_MSI, &msi) < 0 ? -errno : 0;
}

static void *host_page(void *ctx, uint64_t gpa)
{
	struct vm_pmu_vcpu *v = ctx;

	return gmem_hva(v->p->mem, gpa, 4096);
}

static void host_stat(void *ctx, enum pmu_stat s, uint64_t n)
{
	struct vm_pmu_vcpu *v = ctx;
	struct sb_field f = v->p->stat_field[s];

	if (!v->p->region)
		return;
	sb_begin(v->e);
	if (s == PMU_STAT_HOST_COUNTERS)
		sb_set(v->e, f, n);
	else
		sb_add(v->e, f, n);
	sb_end(v->e);
}

static void host_log(void *ctx, const char *msg)
{
	struct vm_pmu_vcpu *v = ctx;

	vm_log("vCPU %u: %s", v->index, msg);
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
	struct vm_pmu *pm = opaque;
	struct pmu_vcpu *p;
	uint64_t val;

	if (a->vcpu >= pm->nr_vcpus)
		return -EINVAL;
	p = &pm->v[a->vcpu].pmu;

	if (a->is_write) {
		memcpy(&val, a->data, sizeof(val));
		return pmu_msr_write(p, (uint32_t)a->addr, val);
	}
	if (pmu_msr_read(p, (uint32_t)a->addr, &val))
		return -EINVAL;
	memcpy(a->data, &val, sizeof(val));
	return 0;
}

static int route_msrs(const struct vm_pmu_config *cfg, struct errbuf *err)
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

	if (ioctl(cfg->kvm->fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_USER_SPACE_MSR) <= 0 ||
	    ioctl(cfg->kvm->fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_MSR_FILTER) <= 0)
		return errbuf_set(
			err, -ENOTSUP,
			"this KVM cannot send MSR accesses to userspace (KVM_CAP_X86_USER_SPACE_MSR, "
			"KVM_CAP_X86_MSR_FILTER), which the PV PMU needs; run with --pmu off");
	if (ioctl(cfg->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
		return errbuf_set(err, -errno, "KVM_ENABLE_CAP(KVM_CAP_X86_USER_SPACE_MSR): %s",
				  strerror(errno));
	if (ioctl(cfg->vm_fd, KVM_X86_SET_MSR_FILTER, &filter) < 0)
		return errbuf_set(err, -errno, "KVM_X86_SET_MSR_FILTER: %s", strerror(errno));
	return 0;
}

int vm_pmu_create(struct vm_pmu **out, const struct vm_pmu_config *cfg, struct errbuf *err)
{
	struct vm_pmu *p = calloc(1, sizeof(*p));
	struct pmu_caps caps;
	int rc, n;

	*out = p;
	if (!p || !(p->v = calloc(cfg->nr_vcpus ? cfg->nr_vcpus : 1, sizeof(*p->v))))
		return errbuf_set(err, -ENOMEM, "out of memory");
	p->on = cfg->on;
	p->verbose = cfg->verbose;
	p->vm_fd = cfg->vm_fd;
	p->mem = cfg->mem;
	p->nr_vcpus = cfg->nr_vcpus;
	if (!p->on)
		return 0;
	pmu_caps_init(&caps);
	n = pmu_caps_probe(&caps, pmu_perf_probe);
	caps.features &= ~cfg->features_hidden;
	if (cfg->verbose)
		vm_log("PV PMU: %d host events can be backed here%s", n,
		       caps.features & PV_PMU_FEAT_HOST_HW ? " (hardware PMU present)"
							   : " (no hardware PMU)");
	pmu_vm_init(&p->pmu, &caps);
	rc = route_msrs(cfg, err);
	if (!rc)
		rc = bus_register(cfg->bus, BUS_MSR, PV_PMU_MSR_BASE, PV_PMU_MSR_BLOCK_SIZE, msr_access, p,
				  "pvpmu", err);
	return rc;
}

void vm_pmu_destroy(struct vm_pmu *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

bool vm_pmu_on(const struct vm_pmu *p)
{
	return p && p->on;
}

const struct pmu_caps *vm_pmu_caps(const struct vm_pmu *p)
{
	return &p->pmu.caps;
}

void vm_pmu_vcpu_init(struct vm_pmu *p, unsigned i, int vcpu_fd)
{
	struct vm_pmu_vcpu *v = &p->v[i];

	v->p = p;
	v->index = i;
	v->fd = vcpu_fd;
	if (p->on)
		pmu_vcpu_init(&v->pmu, &p->pmu, &host_ops, v);
}

void vm_pmu_cpuid(const struct vm_pmu *p, struct kvm_cpuid2 *c)
{
	if (!vm_pmu_on(p))
		return;
	for (uint32_t leaf = PV_PMU_CPUID_SIGNATURE; leaf <= PV_PMU_CPUID_MAX; leaf++) {
		struct kvm_cpuid_entry2 *e = &c->entries[c->nent++];
		uint32_t r[4];

		memset(e, 0, sizeof(*e));
		pmu_cpuid(&p->pmu.caps, leaf, r);
		e->function = leaf;
		e->eax = r[0];
		e->ebx = r[1];
		e->ecx = r[2];
		e->edx = r[3];
	}
}

static void map_event(struct vm_pmu *p, uint32_t id, struct sb_field f)
{
	p->event_field[id] = f;
	p->event_has_field[id] = true;
}

void vm_pmu_stats_ready(struct vm_pmu *p, struct vm_stats *s)
{
	const struct vm_stats_fields *sf = vm_stats_fields(s);
	struct stats_region *r = vm_stats_region(s);

	p->region = r;
	p->msr_read = sf->exit_msr_read;
	p->msr_write = sf->exit_msr_write;
	memcpy(p->stat_field, sf->pmu_stat, sizeof(p->stat_field));
	memcpy(p->ctr_field, sf->pmu_ctr, sizeof(p->ctr_field));
	for (unsigned i = 0; i < p->nr_vcpus; i++)
		p->v[i].e = vm_stats_entry(s, i);
	map_event(p, PV_PMU_EV_EXITS, sf->exits);
	map_event(p, PV_PMU_EV_EXITS_IO, sf->exit_io);
	map_event(p, PV_PMU_EV_EXITS_MMIO, sf->exit_mmio);
	map_event(p, PV_PMU_EV_EXITS_HLT, sf->exit_hlt);
	map_event(p, PV_PMU_EV_EXITS_INTR, sf->exit_intr);
	map_event(p, PV_PMU_EV_KVM_RUN_NS, sf->run_ns);
	map_event(p, PV_PMU_EV_VMM_NS, sf->user_ns);
	map_event(p, PV_PMU_EV_PMIS, sf->pmu_stat[PMU_STAT_PMI]);
	map_event(p, PV_PMU_EV_EXITS_MSR_READ, sf->exit_msr_read);
	map_event(p, PV_PMU_EV_EXITS_MSR_WRITE, sf->exit_msr_write);
	/* Class 3: the events named after KVM's stats, available where this KVM has the stat ("kvm.<name>"). */
	for (unsigned i = 0; i < sb_nr_fields(r); i++) {
		struct sb_field f;
		const struct pv_stats_desc *d = sb_field_at(r, i, &f);
		const struct pmu_event_info *ev =
			d->record == PV_STATS_RECORD_VCPU ? pmu_event_by_name(d->name) : NULL;

		if (!ev || ev->cls != PV_PMU_CLASS_KVM)
			continue;
		map_event(p, ev->id, f);
		if (p->on)
			pmu_caps_set_available(&p->pmu.caps, ev->id);
	}
}

/* ---- the snapshot's parts ------------------------------------------------------------ */

static void save_caps(void *obj, void *state)
{
	struct vm_pmu *p = obj;

	memcpy(state, &p->pmu.caps, sizeof(p->pmu.caps));
}

/* The PMU's capabilities are complete only once the statistics exist (class 3 comes from KVM's stats). */
static int load_caps(void *obj, const void *state, struct errbuf *err)
{
	struct vm_pmu *p = obj;
	const char *why;

	if (!pmu_caps_equal(state, &p->pmu.caps, &why))
		return errbuf_set(
			err, -EINVAL,
			"this host's PV PMU differs from the snapshot's (%s): restore on a host like the one "
			"it was taken on",
			why);
	return 0;
}

/* On vCPU i's own thread: sync every counter, then copy the state out. */
static void save_vcpu(void *obj, unsigned i, void *state)
{
	struct vm_pmu *p = obj;

	pmu_vcpu_save(&p->v[i].pmu, state);
}

/* Kept for vCPU i's thread, which re-creates its host counters before its first KVM_RUN. */
static int load_vcpu(void *obj, unsigned i, const void *state, struct errbuf *err)
{
	struct vm_pmu *p = obj;

	(void)err;
	p->v[i].restore = state;
	return 0;
}

static const struct vm_part_ops caps_ops = { .save = save_caps, .load = load_caps };
static const struct vm_part_ops vcpu_ops = { .per_vcpu = true,
					     .save_vcpu = save_vcpu,
					     .load_vcpu = load_vcpu };

int vm_pmu_add_parts(struct vm_pmu *p, struct vm_parts *l, struct errbuf *err)
{
	if (!p->on)
		return 0; /* a machine without the PV PMU has no PMU parts */
	return vm_parts_add(l, &pmu_caps_part, &caps_ops, p, err)
		       ?: vm_parts_add(l, &pmu_vcpu_part, &vcpu_ops, p, err);
}

/* ---- the vCPU thread -------------------------------------------------------------- */

/* Arm or disarm the refresh timer when the PMU's need for it changes. */
static void refresh_timer(struct vm_pmu_vcpu *v)
{
	bool want = pmu_wants_refresh(&v->pmu);
	struct itimerspec its;

	if (want == v->timer_armed || !v->timer_created)
		return;
	memset(&its, 0, sizeof(its));
	if (want) {
		its.it_value.tv_nsec = PMU_REFRESH_US * 1000L;
		its.it_interval = its.it_value;
	}
	if (timer_settime(v->timer, 0, &its, NULL) == 0)
		v->timer_armed = want;
}

/* The counters' values in the stats entry, as of the PMU's last sync. */
static void publish_counters(struct vm_pmu_vcpu *v)
{
	if (!v->p->region)
		return;
	sb_begin(v->e);
	for (unsigned i = 0; i < PMU_NR_COUNTERS; i++)
		sb_set(v->e, v->p->ctr_field[i], v->pmu.ctr[i].value);
	sb_end(v->e);
}

/*
 * A restored VM: this thread re-creates the host counters behind its PMU,
 * continuing from the saved values, before its first KVM_RUN.
 */
static int vcpu_restore(struct vm_pmu_vcpu *v, struct errbuf *err)
{
	const char *why;

	if (!v->restore)
		return 0;
	if (pmu_vcpu_restore(&v->pmu, v->restore, &why))
		return errbuf_set(err, -EINVAL, "restore: vCPU %u: PV PMU state: %s", v->index, why);
	v->restore = NULL;
	publish_counters(v);
	refresh_timer(v);
	return 0;
}

int vm_pmu_vcpu_start(struct vm_pmu *p, unsigned i, struct errbuf *err)
{
	struct vm_pmu_vcpu *v;
	struct sigevent sev;

	if (!vm_pmu_on(p))
		return 0;
	v = &p->v[i];
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = vm_pmu_signal();
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &v->timer) < 0)
		return errbuf_set(err, -errno, "vCPU %u: timer_create: %s", i, strerror(errno));
	v->timer_created = true;
	return vcpu_restore(v, err);
}

void vm_pmu_after_exit(struct vm_pmu *p, unsigned i)
{
	struct vm_pmu_vcpu *v;

	if (!vm_pmu_on(p))
		return;
	v = &p->v[i];
	if (!v->pmu.vm || (!v->pmu.nr_counting && !v->pmu.page && !v->pmu.pmi_pending && !v->timer_armed))
		return;
	pmu_after_exit(&v->pmu);
	publish_counters(v);
	refresh_timer(v);
}

void vm_pmu_poll(struct vm_pmu *p, unsigned i)
{
	struct vm_pmu_vcpu *v;

	if (!vm_pmu_on(p) || !p->v[i].pmu.vm)
		return;
	v = &p->v[i];
	pmu_poll(&v->pmu);
	publish_counters(v);
	refresh_timer(v);
}

void vm_pmu_vcpu_stop(struct vm_pmu *p, unsigned i)
{
	struct vm_pmu_vcpu *v;

	if (!vm_pmu_on(p))
		return;
	v = &p->v[i];
	if (v->pmu.vm) {
		pmu_vcpu_fini(&v->pmu);
		publish_counters(v);
	}
	if (v->timer_created)
		timer_delete(v->timer);
	v->timer_created = v->timer_armed = false;
}
