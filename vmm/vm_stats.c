// SPDX-License-Identifier: MIT
/*
 * What the VMM publishes in the statistics region: exits by reason and by
 * device, time in and out of KVM_RUN (live through a since companion), KVM's
 * own binary stats mirrored by name, the thread's CPU time, and the VM
 * record. Fields are declared through the scoreboard before the vCPUs
 * start; a vCPU's entry has one writer at a time (enum vcpu_stats_owner).
 */
#include "vm_internal.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* How often a vCPU refreshes its mirror of KVM's binary stats (one pread). */
#define KVM_STATS_PERIOD_NS 100000000ULL

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
};

static int declare_table(struct vm *vm, enum pv_stats_record rec, const struct field_spec *t, size_t n,
			 struct errbuf *err)
{
	for (size_t i = 0; i < n; i++) {
		struct sb_field *h = (struct sb_field *)((char *)&vm->sf + t[i].handle);
		int rc = sb_declare(vm->stats, rec, t[i].name, t[i].kind, t[i].unit, t[i].scale, h, err);

		if (rc)
			return rc;
	}
	return 0;
}

/* "io.<device>" per PIO range: how many port exits each device took. */
static int declare_io_ranges(struct vm *vm, struct errbuf *err)
{
	const struct bus *b = &vm->bus;

	if (b->nr[BUS_PIO] > VM_STATS_MAX_IO_RANGES)
		return errbuf_set(err, -ENOSPC, "stats: too many I/O ranges");
	for (size_t i = 0; i < b->nr[BUS_PIO]; i++) {
		const struct bus_range *r = &b->ranges[BUS_PIO][i];
		char name[PV_STATS_NAME_MAX];
		int rc;

		snprintf(name, sizeof(name), "io.%s", r->name);
		rc = sb_declare(vm->stats, PV_STATS_RECORD_VCPU, name, CUM, NONE, 0, &vm->sf.io_range[r->id],
				err);
		if (rc)
			return rc;
	}
	return 0;
}

static enum pv_stats_kind kvm_kind(uint32_t flags)
{
	switch (flags & KVM_STATS_TYPE_MASK) {
	case KVM_STATS_TYPE_CUMULATIVE:
		return PV_STATS_CUMULATIVE;
	case KVM_STATS_TYPE_PEAK:
		return PV_STATS_PEAK;
	default:
		return PV_STATS_INSTANT;
	}
}

static enum pv_stats_unit kvm_unit(uint32_t flags)
{
	switch (flags & KVM_STATS_UNIT_MASK) {
	case KVM_STATS_UNIT_BYTES:
		return PV_STATS_UNIT_BYTES;
	case KVM_STATS_UNIT_SECONDS:
		return PV_STATS_UNIT_SECONDS;
	case KVM_STATS_UNIT_CYCLES:
		return PV_STATS_UNIT_CYCLES;
	default:
		return PV_STATS_UNIT_NONE;
	}
}

/*
 * Mirror the scalar (size 1, base-10) values of KVM's per-vCPU binary stats
 * as "kvm.<name>". The descriptors are read once from vCPU 0; every vCPU has
 * the same layout.
 */
static int declare_kvm_stats(struct vm *vm, struct errbuf *err)
{
	struct vm_kvm_stats *ks = &vm->kvm_stats;
	struct kvm_stats_header h;
	int fd = vm->vcpus[0].kvm_stats_fd;
	size_t dsz;
	char *descs;
	int rc = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		return errbuf_set(err, -EIO, "KVM stats: cannot read the header");
	dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = calloc(h.num_desc, dsz);
	if (!descs)
		return errbuf_set(err, -ENOMEM, "out of memory");
	if (pread(fd, descs, h.num_desc * dsz, h.desc_offset) != (ssize_t)(h.num_desc * dsz)) {
		rc = errbuf_set(err, -EIO, "KVM stats: cannot read the descriptors");
		goto out;
	}
	ks->data_offset = h.data_offset;
	for (uint32_t i = 0; i < h.num_desc && ks->nr < VM_STATS_MAX_KVM; i++) {
		const struct kvm_stats_desc *d = (const void *)(descs + i * dsz);
		char name[PV_STATS_NAME_MAX];
		size_t end = d->offset + (size_t)d->size * sizeof(uint64_t);

		if (end > ks->data_len)
			ks->data_len = end;
		if (d->size != 1 || (d->flags & KVM_STATS_BASE_MASK) != KVM_STATS_BASE_POW10 ||
		    snprintf(name, sizeof(name), "kvm.%.*s", (int)h.name_size, d->name) >= (int)sizeof(name))
			continue;
		rc = sb_declare(vm->stats, PV_STATS_RECORD_VCPU, name, kvm_kind(d->flags), kvm_unit(d->flags),
				d->exponent, &ks->field[ks->nr], err);
		if (rc == -EINVAL || rc == -EEXIST) {
			rc = 0; /* a name our charset cannot carry: not mirrored */
			continue;
		}
		if (rc)
			goto out;
		vm_pmu_map_kvm_stat(vm, name, ks->field[ks->nr]);
		ks->index[ks->nr++] = d->offset / sizeof(uint64_t);
	}
	for (unsigned i = 0; i <= vm->nr_vcpus && ks->data_len; i++) {
		uint64_t **buf = i < vm->nr_vcpus ? &vm->vcpus[i].kvm_stats_buf : &ks->main_buf;

		*buf = calloc(1, ks->data_len);
		if (!*buf) {
			rc = errbuf_set(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
out:
	free(descs);
	return rc;
}

int vm_stats_create(struct vm *vm, struct errbuf *err)
{
	int rc;

	vm->start_ns = util_now_ns();
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].kvm_stats_fd = ioctl(vm->vcpus[i].fd, KVM_GET_STATS_FD, NULL);
	rc = stats_region_create(&vm->stats, vm->nr_vcpus, err);
	if (!rc)
		rc = stats_region_set_name(vm->stats, vm->cfg.name ? vm->cfg.name : "", err);
	if (!rc)
		rc = declare_table(vm, PV_STATS_RECORD_VCPU, vcpu_fields,
				   sizeof(vcpu_fields) / sizeof(vcpu_fields[0]), err);
	if (!rc)
		rc = declare_io_ranges(vm, err);
	if (!rc)
		rc = declare_kvm_stats(vm, err);
	if (!rc)
		rc = declare_table(vm, PV_STATS_RECORD_VCPU, vcpu_late_fields,
				   sizeof(vcpu_late_fields) / sizeof(vcpu_late_fields[0]), err);
	if (!rc)
		rc = declare_table(vm, PV_STATS_RECORD_VM, vm_fields,
				   sizeof(vm_fields) / sizeof(vm_fields[0]), err);
	if (!rc)
		rc = stats_region_freeze(vm->stats, err);
	if (rc)
		return rc;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].stats = stats_vcpu_entry(vm->stats, i);
	vm_pmu_stats_ready(vm);
	vm_stats_update_vm(vm);
	return 0;
}

void vm_stats_destroy(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus && vm->vcpus; i++) {
		if (vm->vcpus[i].kvm_stats_fd >= 0)
			close(vm->vcpus[i].kvm_stats_fd);
		vm->vcpus[i].kvm_stats_fd = -1;
		free(vm->vcpus[i].kvm_stats_buf);
		vm->vcpus[i].kvm_stats_buf = NULL;
	}
	free(vm->kvm_stats.main_buf);
	vm->kvm_stats.main_buf = NULL;
	stats_region_destroy(vm->stats);
	vm->stats = NULL;
}

/* CPU time of a thread's clock, 0 if it cannot be read. */
static uint64_t cpu_time_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Sample KVM's stats of v into buf (if it has them). False if the pread failed. */
static bool kvm_sample(const struct vcpu *v, uint64_t *buf)
{
	const struct vm_kvm_stats *ks = &v->vm->kvm_stats;

	return !buf ||
	       pread(v->kvm_stats_fd, buf, ks->data_len, (off_t)ks->data_offset) == (ssize_t)ks->data_len;
}

/* Publish a sample taken at time t: the mirror (buf may be NULL) and the CPU time. Entry owner only. */
static void publish_sample(struct vcpu *v, const uint64_t *buf, uint64_t cpu_ns, uint64_t t)
{
	const struct vm_kvm_stats *ks = &v->vm->kvm_stats;

	sb_begin(v->stats);
	for (unsigned i = 0; buf && i < ks->nr; i++)
		sb_set(v->stats, ks->field[i], v->kvm_stats_base[i] + buf[ks->index[i]]);
	if (cpu_ns)
		sb_set(v->stats, v->vm->sf.cpu_ns, v->cpu_ns_base + cpu_ns);
	sb_add(v->stats, v->vm->sf.kvm_refreshes, 1);
	vm_profile_publish(v);
	sb_end(v->stats);
	__atomic_store_n(&v->kvm_stats_last_ns, t, __ATOMIC_RELAXED);
}

void vm_stats_kvm_refresh(struct vcpu *v, uint64_t now, bool force)
{
	uint64_t cpu;

	if (!force && now - v->kvm_stats_last_ns < KVM_STATS_PERIOD_NS)
		return;
	/* The system calls stay outside the seqlock, so readers never wait on them. */
	cpu = cpu_time_ns(CLOCK_THREAD_CPUTIME_ID);
	if (kvm_sample(v, v->kvm_stats_buf))
		publish_sample(v, v->kvm_stats_buf, cpu, now);
}

void vm_stats_enter_run(struct vcpu *v, uint64_t t0)
{
	sb_begin(v->stats);
	sb_set(v->stats, v->vm->sf.run_since_ns, t0);
	sb_end(v->stats);
	/* Release: a main thread that takes the entry sees this update complete. */
	__atomic_store_n(&v->stats_owner, VCPU_STATS_OPEN, __ATOMIC_RELEASE);
}

void vm_stats_leave_run(struct vcpu *v)
{
	uint32_t open = VCPU_STATS_OPEN;
	unsigned spins = 0;

	/* The main thread holds it only for a few stores: spin, and yield if it was preempted. */
	while (!__atomic_compare_exchange_n(&v->stats_owner, &open, VCPU_STATS_VCPU, false, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		open = VCPU_STATS_OPEN;
		if (++spins % 1024 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

void vm_stats_refresh_running(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		uint32_t open = VCPU_STATS_OPEN;
		uint64_t t = util_now_ns(), cpu;

		if (__atomic_load_n(&v->stats_owner, __ATOMIC_RELAXED) != VCPU_STATS_OPEN ||
		    t - __atomic_load_n(&v->kvm_stats_last_ns, __ATOMIC_RELAXED) < KVM_STATS_PERIOD_NS)
			continue;
		/* Sample first (system calls), then take the entry for the stores only. */
		cpu = v->cpu_clock_ok ? cpu_time_ns(v->cpu_clock) : 0;
		if (!kvm_sample(v, vm->kvm_stats.main_buf))
			continue;
		if (!__atomic_compare_exchange_n(&v->stats_owner, &open, VCPU_STATS_MAIN, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue; /* it left KVM_RUN meanwhile: it refreshes itself */
		/* Older than what the vCPU published since (it left and re-entered meanwhile): dropped. */
		if (v->kvm_stats_last_ns < t)
			publish_sample(v, vm->kvm_stats.main_buf, cpu, t);
		__atomic_store_n(&v->stats_owner, VCPU_STATS_OPEN, __ATOMIC_RELEASE);
	}
}

/* vCPU i's time.kvm_run_ns up to t (its published value plus the open interval), never less than before. */
static uint64_t run_live(struct vm *vm, unsigned i, uint64_t t)
{
	struct sb_field f[2] = { vm->sf.run_ns, vm->sf.run_since_ns };
	struct vcpu *v = &vm->vcpus[i];
	uint64_t val[2], live;

	if (sb_read(vm->stats, i, f, 2, val))
		return v->run_live_last; /* its writer is inside an update: the last value stands */
	live = val[0] + (val[1] && t > val[1] ? t - val[1] : 0);
	if (live > v->run_live_last)
		v->run_live_last = live;
	return v->run_live_last;
}

void vm_stats_update_vm(struct vm *vm)
{
	struct sb_entry e = stats_vm_entry(vm->stats);
	uint64_t t = util_now_ns(), run = 0;
	unsigned n = stats_region_online(vm->stats);

	for (unsigned i = 0; i < n; i++)
		run += run_live(vm, i, t);
	sb_begin(e);
	sb_set(e, vm->sf.uptime_ns, t - vm->start_ns);
	sb_set(e, vm->sf.vcpus_online, n);
	sb_set(e, vm->sf.memory_bytes, vm->mem.size);
	sb_set(e, vm->sf.exits_total, sb_sum(vm->stats, vm->sf.exits));
	sb_set(e, vm->sf.run_ns_total, run);
	sb_set(e, vm->sf.host_kind, vm->kvm_host.kind);
	sb_set(e, vm->sf.host_flags, vm->kvm_host.flags);
	sb_end(e);
}

void vm_stats_stop(struct vm *vm)
{
	vm_stats_update_vm(vm);
	sb_set_state(stats_vm_entry(vm->stats), PV_STATS_STOPPED);
}

struct sb_field vm_stats_exit_field(const struct vm *vm, uint32_t exit_reason)
{
	switch (exit_reason) {
	case KVM_EXIT_IO:
		return vm->sf.exit_io;
	case KVM_EXIT_MMIO:
		return vm->sf.exit_mmio;
	case KVM_EXIT_X86_RDMSR:
		return vm->sf.exit_msr_read;
	case KVM_EXIT_X86_WRMSR:
		return vm->sf.exit_msr_write;
	case KVM_EXIT_HLT:
		return vm->sf.exit_hlt;
	case KVM_EXIT_SHUTDOWN:
		return vm->sf.exit_shutdown;
	case KVM_EXIT_INTR:
		return vm->sf.exit_intr;
	default:
		return vm->sf.exit_other;
	}
}
