// SPDX-License-Identifier: MIT
/*
 * What the VMM publishes in the statistics region: the fields it declares
 * (docs/stats-abi.md), exits by reason and by device, time in and out of
 * KVM_RUN (live through a since companion) and the VM record. Fields are
 * declared through the scoreboard before the vCPUs start; a vCPU's entry
 * has one writer at a time (vm_stats_internal.h). KVM's own stats and the
 * thread's CPU time: vm_stats_kvm.c; the snapshot parts: vm_stats_parts.c.
 */
#include "vm_stats_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "control.h"

#define CUM PV_STATS_CUMULATIVE
#define NONE PV_STATS_UNIT_NONE
#define NS PV_STATS_UNIT_SECONDS, -9

struct field_spec {
	const char *name;
	size_t handle; /* offsetof(struct vm_stats_fields, ...) */
	enum pv_stats_kind kind;
	enum pv_stats_unit unit;
	int scale;
};

#define F(n, member, kind, ...)                                                \
	{                                                                      \
		n, offsetof(struct vm_stats_fields, member), kind, __VA_ARGS__ \
	}

static const struct field_spec vcpu_fields[] = {
	F("exits", exits, CUM, NONE, 0),
	F("exit.io", exit_io, CUM, NONE, 0),
	F("exit.mmio", exit_mmio, CUM, NONE, 0),
	F("exit.msr_read", exit_msr_read, CUM, NONE, 0),
	F("exit.msr_write", exit_msr_write, CUM, NONE, 0),
	F("exit.hlt", exit_hlt, CUM, NONE, 0),
	F("exit.shutdown", exit_shutdown, CUM, NONE, 0),
	F("exit.intr", exit_intr, CUM, NONE, 0),
	F("exit.other", exit_other, CUM, NONE, 0),
	F("unhandled.io", unhandled_io, CUM, NONE, 0),
	F("unhandled.mmio", unhandled_mmio, CUM, NONE, 0),
	F("time.kvm_run_ns", run_ns, CUM, NS),
	F("time.user_ns", user_ns, CUM, NS),
	F("kvm.refreshes", kvm_refreshes, CUM, NONE, 0),
	F("pmu.msr_reads", pmu_stat[PMU_STAT_MSR_READ], CUM, NONE, 0),
	F("pmu.msr_writes", pmu_stat[PMU_STAT_MSR_WRITE], CUM, NONE, 0),
	F("pmu.gp", pmu_stat[PMU_STAT_GP], CUM, NONE, 0),
	F("pmu.errors", pmu_stat[PMU_STAT_ERROR], CUM, NONE, 0),
	F("pmu.pmis", pmu_stat[PMU_STAT_PMI], CUM, NONE, 0),
	F("pmu.pmis_throttled", pmu_stat[PMU_STAT_THROTTLED], CUM, NONE, 0),
	F("pmu.overflows", pmu_stat[PMU_STAT_OVERFLOW], CUM, NONE, 0),
	F("pmu.host_counters", pmu_stat[PMU_STAT_HOST_COUNTERS], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr0", pmu_ctr[0], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr1", pmu_ctr[1], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr2", pmu_ctr[2], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr3", pmu_ctr[3], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr4", pmu_ctr[4], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr5", pmu_ctr[5], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr6", pmu_ctr[6], PV_STATS_INSTANT, NONE, 0),
	F("pmu.ctr7", pmu_ctr[7], PV_STATS_INSTANT, NONE, 0),
};
_Static_assert(PMU_NR_COUNTERS == 8, "one pmu.ctrN field per counter");

/* Appended after the kvm.* mirror: fields only ever grow at the end of the record. */
static const struct field_spec vcpu_late_fields[] = {
	F("time.kvm_run_since_ns", run_since_ns, PV_STATS_INSTANT, NS),
	F("time.cpu_ns", cpu_ns, CUM, NS),
	/* host-side profiling (docs/profiling.md): 0 without --profile */
	F("profile.samples", prof_samples, CUM, NONE, 0),
	F("profile.dropped", prof_dropped, CUM, NONE, 0),
	F("profile.throttled", prof_throttled, CUM, NONE, 0),
	F("profile.sample_ns", prof_sample_ns, CUM, NS),
};

static const struct field_spec vm_fields[] = {
	F("uptime_ns", uptime_ns, PV_STATS_INSTANT, NS),
	F("vcpus_online", vcpus_online, PV_STATS_INSTANT, NONE, 0),
	F("memory_bytes", memory_bytes, PV_STATS_INSTANT, PV_STATS_UNIT_BYTES, 0),
	F("exits_total", exits_total, CUM, NONE, 0),
	F("time.kvm_run_ns_total", run_ns_total, CUM, NS),
	F("host.kind", host_kind, PV_STATS_INSTANT, NONE, 0),
	F("host.flags", host_flags, PV_STATS_INSTANT, NONE, 0),
	/* Appended after host.*: a field's meaning never changes (docs/stats-abi.md "Compatibility"). */
	F("time.kvm_run_live_ns_total", run_live_ns_total, CUM, NS),
};

static int declare_table(struct vm_stats *s, enum pv_stats_record rec, const struct field_spec *t, size_t n,
			 struct errbuf *err)
{
	for (size_t i = 0; i < n; i++) {
		struct sb_field *h = (struct sb_field *)((char *)&s->sf + t[i].handle);
		int rc = sb_declare(s->region, rec, t[i].name, t[i].kind, t[i].unit, t[i].scale, h, err);

		if (rc)
			return rc;
	}
	return 0;
}

/* "io.<device>" per PIO range: how many port exits each device took. */
static int declare_io_ranges(struct vm_stats *s, const struct bus *b, struct errbuf *err)
{
	if (b->nr[BUS_PIO] > VM_STATS_MAX_IO_RANGES)
		return errbuf_set(err, -ENOSPC, "stats: too many I/O ranges");
	for (size_t i = 0; i < b->nr[BUS_PIO]; i++) {
		const struct bus_range *r = &b->ranges[BUS_PIO][i];
		char name[PV_STATS_NAME_MAX];
		int rc;

		snprintf(name, sizeof(name), "io.%s", r->name);
		rc = sb_declare(s->region, PV_STATS_RECORD_VCPU, name, CUM, NONE, 0, &s->sf.io_range[r->id],
				err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The extra VM-record fields (struct vm_stats_extra), after the VMM's own. */
static int declare_extra(struct vm_stats *s, const struct vm_stats_extra *x, struct errbuf *err)
{
	if (x->n > VM_STATS_MAX_EXTRA)
		return errbuf_set(err, -ENOSPC, "stats: too many device fields");
	for (unsigned i = 0; i < x->n; i++) {
		int rc = sb_declare(s->region, PV_STATS_RECORD_VM, x->names[i], CUM,
				    x->bytes[i] ? PV_STATS_UNIT_BYTES : NONE, 0, &s->sf.extra[i], err);

		if (rc)
			return rc;
	}
	s->extra = *x;
	return 0;
}

int vm_stats_create(struct vm_stats **out, const struct vm_stats_config *cfg, struct errbuf *err)
{
	struct vm_stats *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s || !(s->v = calloc(cfg->nr_vcpus, sizeof(*s->v)))) {
		free(s);
		return errbuf_set(err, -ENOMEM, "out of memory");
	}
	s->nr_vcpus = cfg->nr_vcpus;
	s->mem_size = cfg->mem_size;
	s->host = cfg->host;
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		s->v[i].kvm_fd = ioctl(cfg->vcpu_fds[i], KVM_GET_STATS_FD, NULL);
	rc = stats_region_create(&s->region, s->nr_vcpus, err);
	if (!rc)
		s->start_ns = stats_region_start_ns(
			s->region); /* uptime_ns counts from the header's start_time_ns */
	if (!rc)
		rc = stats_region_set_name(s->region, cfg->name ? cfg->name : "", err);
	if (!rc)
		rc = declare_table(s, PV_STATS_RECORD_VCPU, vcpu_fields,
				   sizeof(vcpu_fields) / sizeof(vcpu_fields[0]), err);
	if (!rc)
		rc = declare_io_ranges(s, cfg->bus, err);
	if (!rc)
		rc = vm_stats_declare_kvm(s, err);
	if (!rc)
		rc = declare_table(s, PV_STATS_RECORD_VCPU, vcpu_late_fields,
				   sizeof(vcpu_late_fields) / sizeof(vcpu_late_fields[0]), err);
	if (!rc)
		rc = declare_table(s, PV_STATS_RECORD_VM, vm_fields, sizeof(vm_fields) / sizeof(vm_fields[0]),
				   err);
	if (!rc)
		rc = declare_extra(s, &cfg->extra, err);
	if (!rc)
		rc = stats_region_freeze(s->region, err);
	if (rc) {
		vm_stats_destroy(s);
		return rc;
	}
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		s->v[i].e = stats_vcpu_entry(s->region, i);
	vm_stats_update_vm(s);
	*out = s;
	return 0;
}

void vm_stats_destroy(struct vm_stats *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nr_vcpus; i++) {
		if (s->v[i].kvm_fd >= 0)
			close(s->v[i].kvm_fd);
		free(s->v[i].kvm_buf);
	}
	free(s->v);
	free(s->kvm.main_buf);
	stats_region_destroy(s->region);
	free(s);
}

struct stats_region *vm_stats_region(const struct vm_stats *s)
{
	return s->region;
}

const struct vm_stats_fields *vm_stats_fields(const struct vm_stats *s)
{
	return &s->sf;
}

struct sb_entry vm_stats_entry(const struct vm_stats *s, unsigned i)
{
	return s->v[i].e;
}

uint64_t vm_stats_start_ns(const struct vm_stats *s)
{
	return s->start_ns;
}

void vm_stats_set_publish_hook(struct vm_stats *s, void (*fn)(void *ctx, unsigned i, struct sb_entry e),
			       void *ctx)
{
	s->publish_hook = fn;
	s->publish_ctx = ctx;
}

void vm_stats_vcpu_online(struct vm_stats *s, unsigned i)
{
	stats_vcpu_online(s->region, i);
}

void vm_stats_vcpu_thread(struct vm_stats *s, unsigned i, pthread_t thread)
{
	/* For the main thread's samples of its CPU time while it stays inside KVM_RUN. */
	s->v[i].cpu_clock_ok = pthread_getcpuclockid(thread, &s->v[i].cpu_clock) == 0;
}

void vm_stats_vcpu_stopped(struct vm_stats *s, unsigned i)
{
	vm_stats_kvm_refresh(s, i, util_now_ns(), true);
	sb_set_state(s->v[i].e, PV_STATS_STOPPED);
}

void vm_stats_enter_run(struct vm_stats *s, unsigned i, uint64_t t0)
{
	struct vm_stats_vcpu *v = &s->v[i];

	sb_begin(v->e);
	sb_set(v->e, s->sf.run_since_ns, t0);
	sb_end(v->e);
	/* Release: a main thread that takes the entry sees this update complete. */
	__atomic_store_n(&v->owner, VCPU_STATS_OPEN, __ATOMIC_RELEASE);
}

void vm_stats_leave_run(struct vm_stats *s, unsigned i)
{
	uint32_t open = VCPU_STATS_OPEN;
	unsigned spins = 0;

	/* The main thread holds it only for a few stores: spin, and yield if it was preempted. */
	while (!__atomic_compare_exchange_n(&s->v[i].owner, &open, VCPU_STATS_VCPU, false, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		open = VCPU_STATS_OPEN;
		if (++spins % 1024 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

/* The field counting exits of this KVM exit reason. */
static struct sb_field exit_field(const struct vm_stats_fields *sf, uint32_t exit_reason)
{
	switch (exit_reason) {
	case KVM_EXIT_IO:
		return sf->exit_io;
	case KVM_EXIT_MMIO:
		return sf->exit_mmio;
	case KVM_EXIT_X86_RDMSR:
		return sf->exit_msr_read;
	case KVM_EXIT_X86_WRMSR:
		return sf->exit_msr_write;
	case KVM_EXIT_HLT:
		return sf->exit_hlt;
	case KVM_EXIT_SHUTDOWN:
		return sf->exit_shutdown;
	case KVM_EXIT_INTR:
		return sf->exit_intr;
	default:
		return sf->exit_other;
	}
}

uint64_t vm_stats_account_run(struct vm_stats *s, unsigned i, uint64_t t_user, uint64_t t0, bool interrupted,
			      uint32_t exit_reason)
{
	const struct vm_stats_fields *sf = &s->sf;
	struct sb_entry e = s->v[i].e;
	uint64_t t1;

	sb_begin(e);
	/* Taken inside the update that clears time.kvm_run_since_ns: no reader computed a live time past it. */
	t1 = util_now_ns();
	sb_add(e, sf->run_ns, t1 - t0);
	sb_set(e, sf->run_since_ns, 0);
	sb_add(e, sf->user_ns, t0 - t_user);
	if (interrupted) {
		/* A kick or a signal: not an exit to handle, so not in `exits`. */
		sb_add(e, sf->exit_intr, 1);
	} else {
		sb_add(e, sf->exits, 1);
		sb_add(e, exit_field(sf, exit_reason), 1);
	}
	sb_end(e);
	vm_stats_kvm_refresh(s, i, t1, false);
	return t1;
}

/* Count one event in vCPU i's entry. Its thread only. */
static void count(struct vm_stats *s, unsigned i, struct sb_field f)
{
	sb_begin(s->v[i].e);
	sb_add(s->v[i].e, f, 1);
	sb_end(s->v[i].e);
}

void vm_stats_count_io(struct vm_stats *s, unsigned i, int range)
{
	if (range < 0)
		count(s, i, s->sf.unhandled_io);
	else if (range < VM_STATS_MAX_IO_RANGES)
		count(s, i, s->sf.io_range[range]);
}

void vm_stats_count_unhandled_mmio(struct vm_stats *s, unsigned i)
{
	count(s, i, s->sf.unhandled_mmio);
}

/* vCPU i's time.kvm_run_ns up to t (its published value plus the open interval), never less than before. */
static uint64_t run_live(struct vm_stats *s, unsigned i, uint64_t t)
{
	struct sb_field f[2] = { s->sf.run_ns, s->sf.run_since_ns };
	struct vm_stats_vcpu *v = &s->v[i];
	uint64_t val[2], live;

	if (sb_read(s->region, i, f, 2, val))
		live = sb_get(s->region, i,
			      s->sf.run_ns); /* its writer is inside an update: what it published */
	else
		live = val[0] + (val[1] && t > val[1] ? t - val[1] : 0);
	if (live > v->run_live_last)
		v->run_live_last = live;
	return v->run_live_last;
}

void vm_stats_update_vm(struct vm_stats *s)
{
	struct sb_entry e = stats_vm_entry(s->region);
	/* v1's time.kvm_run_ns_total, the published sum, first: the live sum taken after it is never smaller. */
	uint64_t run_published = sb_sum(s->region, s->sf.run_ns);
	uint64_t t = util_now_ns(), run = 0, extra[VM_STATS_MAX_EXTRA];
	unsigned n = stats_region_online(s->region);

	for (unsigned i = 0; i < n; i++)
		run += run_live(s, i, t);
	if (s->extra.n)
		s->extra.read(s->extra.ctx, extra);
	sb_begin(e);
	sb_set(e, s->sf.uptime_ns, t - s->start_ns);
	sb_set(e, s->sf.vcpus_online, n);
	sb_set(e, s->sf.memory_bytes, s->mem_size);
	sb_set(e, s->sf.exits_total, sb_sum(s->region, s->sf.exits));
	sb_set(e, s->sf.run_ns_total, run_published);
	sb_set(e, s->sf.run_live_ns_total, run);
	sb_set(e, s->sf.host_kind, s->host.kind);
	sb_set(e, s->sf.host_flags, s->host.flags);
	for (unsigned i = 0; i < s->extra.n; i++)
		sb_set(e, s->sf.extra[i], extra[i]);
	sb_end(e);
}

void vm_stats_stop(struct vm_stats *s)
{
	vm_stats_update_vm(s);
	sb_set_state(stats_vm_entry(s->region), PV_STATS_STOPPED);
}

void vm_stats_log_vcpus(const struct vm_stats *s)
{
	const struct vm_stats_fields *f = &s->sf;
	struct stats_region *r = s->region;

	for (unsigned i = 0; i < s->nr_vcpus; i++)
		vm_log("vCPU %u: %" PRIu64 " exits (io %" PRIu64 ", mmio %" PRIu64 ", msr %" PRIu64
		       "/%" PRIu64 ", intr %" PRIu64 ", other %" PRIu64 "), %" PRIu64 " us in KVM_RUN",
		       i, sb_get(r, i, f->exits), sb_get(r, i, f->exit_io), sb_get(r, i, f->exit_mmio),
		       sb_get(r, i, f->exit_msr_read), sb_get(r, i, f->exit_msr_write),
		       sb_get(r, i, f->exit_intr), sb_get(r, i, f->exit_other),
		       sb_get(r, i, f->run_ns) / 1000);
}
