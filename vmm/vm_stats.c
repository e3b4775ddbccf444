// SPDX-License-Identifier: MIT
/*
 * What the VMM publishes in the statistics region: exits by reason and by
 * device, time in and out of KVM_RUN (live through a since companion), KVM's
 * own binary stats mirrored by name, the thread's CPU time, and the VM
 * record, and their snapshot parts. Fields are declared through the
 * scoreboard before the vCPUs start; a vCPU's entry has one writer at a
 * time (enum vcpu_stats_owner).
 */
#include "vm_stats.h"

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

/* How often a vCPU refreshes its mirror of KVM's binary stats (one pread). */
#define KVM_STATS_PERIOD_NS 100000000ULL
#define VM_STATS_MAX_KVM 128

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
 * Who writes a vCPU's stats entry (struct vm_stats_vcpu.owner): its own
 * thread, except while it is inside KVM_RUN, when the entry is OPEN and
 * the main thread may take it (compare-and-swap to MAIN) for one short
 * update of the kvm.* mirror and time.cpu_ns, with no system call while
 * it holds it. The vCPU thread takes it back when KVM_RUN returns,
 * waiting out such an update. So the seqlock has one writer at a time and
 * readers see one.
 */
enum vcpu_stats_owner {
	VCPU_STATS_VCPU = 0,
	VCPU_STATS_OPEN = 1,
	VCPU_STATS_MAIN = 2,
};

struct vm_stats_vcpu {
	struct sb_entry e;    /* written by its owner of the moment */
	int kvm_fd;	      /* KVM_GET_STATS_FD, -1 if unsupported */
	uint64_t *kvm_buf;    /* the vCPU thread's pread target */
	uint64_t kvm_last_ns; /* when the published mirror was sampled; written by the entry's owner */
	uint32_t owner;	      /* enum vcpu_stats_owner, accessed atomically */
	clockid_t cpu_clock;  /* the thread's CPU-time clock, for the main thread */
	bool cpu_clock_ok;
	uint64_t run_live_last; /* main thread: its last live time.kvm_run_ns (vm_stats_update_vm) */
	/* kvm.* mirror of a restored VM: KVM counts from 0 again, the published value continues */
	uint64_t kvm_base[VM_STATS_MAX_KVM];
	uint64_t cpu_ns_base; /* time.cpu_ns likewise: the new thread's CPU clock starts at 0 */
};

struct vm_stats {
	struct stats_region *region;
	struct vm_stats_fields sf;
	struct vm_kvm_stats kvm;
	unsigned nr_vcpus;
	uint64_t start_ns, mem_size;
	struct host_info host;
	struct vm_stats_vcpu *v;
	void (*publish_hook)(void *ctx, unsigned i, struct sb_entry e);
	void *publish_ctx;
};

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
static int declare_kvm_stats(struct vm_stats *s, struct errbuf *err)
{
	struct vm_kvm_stats *ks = &s->kvm;
	struct kvm_stats_header h;
	int fd = s->v[0].kvm_fd;
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
		rc = sb_declare(s->region, PV_STATS_RECORD_VCPU, name, kvm_kind(d->flags), kvm_unit(d->flags),
				d->exponent, &ks->field[ks->nr], err);
		if (rc == -EINVAL || rc == -EEXIST) {
			rc = 0; /* a name our charset cannot carry: not mirrored */
			continue;
		}
		if (rc)
			goto out;
		ks->index[ks->nr++] = d->offset / sizeof(uint64_t);
	}
	for (unsigned i = 0; i <= s->nr_vcpus && ks->data_len; i++) {
		uint64_t **buf = i < s->nr_vcpus ? &s->v[i].kvm_buf : &ks->main_buf;

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
	s->start_ns = util_now_ns();
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		s->v[i].kvm_fd = ioctl(cfg->vcpu_fds[i], KVM_GET_STATS_FD, NULL);
	rc = stats_region_create(&s->region, s->nr_vcpus, err);
	if (!rc)
		rc = stats_region_set_name(s->region, cfg->name ? cfg->name : "", err);
	if (!rc)
		rc = declare_table(s, PV_STATS_RECORD_VCPU, vcpu_fields,
				   sizeof(vcpu_fields) / sizeof(vcpu_fields[0]), err);
	if (!rc)
		rc = declare_io_ranges(s, cfg->bus, err);
	if (!rc)
		rc = declare_kvm_stats(s, err);
	if (!rc)
		rc = declare_table(s, PV_STATS_RECORD_VCPU, vcpu_late_fields,
				   sizeof(vcpu_late_fields) / sizeof(vcpu_late_fields[0]), err);
	if (!rc)
		rc = declare_table(s, PV_STATS_RECORD_VM, vm_fields, sizeof(vm_fields) / sizeof(vm_fields[0]),
				   err);
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

/* CPU time of a thread's clock, 0 if it cannot be read. */
static uint64_t cpu_time_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Sample KVM's stats of vCPU i into buf (if it has them). False if the pread failed. */
static bool kvm_sample(const struct vm_stats *s, unsigned i, uint64_t *buf)
{
	const struct vm_kvm_stats *ks = &s->kvm;

	return !buf ||
	       pread(s->v[i].kvm_fd, buf, ks->data_len, (off_t)ks->data_offset) == (ssize_t)ks->data_len;
}

/* Publish a sample taken at time t: the mirror (buf may be NULL) and the CPU time. Entry owner only. */
static void publish_sample(struct vm_stats *s, unsigned i, const uint64_t *buf, uint64_t cpu_ns, uint64_t t)
{
	const struct vm_kvm_stats *ks = &s->kvm;
	struct vm_stats_vcpu *v = &s->v[i];

	sb_begin(v->e);
	for (unsigned k = 0; buf && k < ks->nr; k++)
		sb_set(v->e, ks->field[k], v->kvm_base[k] + buf[ks->index[k]]);
	if (cpu_ns)
		sb_set(v->e, s->sf.cpu_ns, v->cpu_ns_base + cpu_ns);
	sb_add(v->e, s->sf.kvm_refreshes, 1);
	if (s->publish_hook)
		s->publish_hook(s->publish_ctx, i, v->e);
	sb_end(v->e);
	__atomic_store_n(&v->kvm_last_ns, t, __ATOMIC_RELAXED);
}

void vm_stats_kvm_refresh(struct vm_stats *s, unsigned i, uint64_t now, bool force)
{
	struct vm_stats_vcpu *v = &s->v[i];
	uint64_t cpu;

	if (!force && now - v->kvm_last_ns < KVM_STATS_PERIOD_NS)
		return;
	/* The system calls stay outside the seqlock, so readers never wait on them. */
	cpu = cpu_time_ns(CLOCK_THREAD_CPUTIME_ID);
	if (kvm_sample(s, i, v->kvm_buf))
		publish_sample(s, i, v->kvm_buf, cpu, now);
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

void vm_stats_refresh_running(struct vm_stats *s)
{
	for (unsigned i = 0; i < s->nr_vcpus; i++) {
		struct vm_stats_vcpu *v = &s->v[i];
		uint32_t open = VCPU_STATS_OPEN;
		uint64_t t = util_now_ns(), cpu;

		if (__atomic_load_n(&v->owner, __ATOMIC_RELAXED) != VCPU_STATS_OPEN ||
		    t - __atomic_load_n(&v->kvm_last_ns, __ATOMIC_RELAXED) < KVM_STATS_PERIOD_NS)
			continue;
		/* Sample first (system calls), then take the entry for the stores only. */
		cpu = v->cpu_clock_ok ? cpu_time_ns(v->cpu_clock) : 0;
		if (!kvm_sample(s, i, s->kvm.main_buf))
			continue;
		if (!__atomic_compare_exchange_n(&v->owner, &open, VCPU_STATS_MAIN, false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue; /* it left KVM_RUN meanwhile: it refreshes itself */
		/* Older than what the vCPU published since (it left and re-entered meanwhile): dropped. */
		if (v->kvm_last_ns < t)
			publish_sample(s, i, s->kvm.main_buf, cpu, t);
		__atomic_store_n(&v->owner, VCPU_STATS_OPEN, __ATOMIC_RELEASE);
	}
}

/* vCPU i's time.kvm_run_ns up to t (its published value plus the open interval), never less than before. */
static uint64_t run_live(struct vm_stats *s, unsigned i, uint64_t t)
{
	struct sb_field f[2] = { s->sf.run_ns, s->sf.run_since_ns };
	struct vm_stats_vcpu *v = &s->v[i];
	uint64_t val[2], live;

	if (sb_read(s->region, i, f, 2, val))
		return v->run_live_last; /* its writer is inside an update: the last value stands */
	live = val[0] + (val[1] && t > val[1] ? t - val[1] : 0);
	if (live > v->run_live_last)
		v->run_live_last = live;
	return v->run_live_last;
}

void vm_stats_update_vm(struct vm_stats *s)
{
	struct sb_entry e = stats_vm_entry(s->region);
	uint64_t t = util_now_ns(), run = 0;
	unsigned n = stats_region_online(s->region);

	for (unsigned i = 0; i < n; i++)
		run += run_live(s, i, t);
	sb_begin(e);
	sb_set(e, s->sf.uptime_ns, t - s->start_ns);
	sb_set(e, s->sf.vcpus_online, n);
	sb_set(e, s->sf.memory_bytes, s->mem_size);
	sb_set(e, s->sf.exits_total, sb_sum(s->region, s->sf.exits));
	sb_set(e, s->sf.run_ns_total, run);
	sb_set(e, s->sf.host_kind, s->host.kind);
	sb_set(e, s->sf.host_flags, s->host.flags);
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

/* ---- the statistics' snapshot parts ----------------------------------------------------- */

/* The cumulative and peak fields of one record, by name. */
static void save_record(struct vm_stats *s, enum pv_stats_record rec, unsigned idx, struct snap_stats *out)
{
	out->n = 0;
	for (unsigned i = 0; i < sb_nr_fields(s->region) && out->n < SNAP_MAX_STATS; i++) {
		struct sb_field f;
		const struct pv_stats_desc *d = sb_field_at(s->region, i, &f);

		if (d->record != rec || d->kind == PV_STATS_INSTANT)
			continue;
		out->s[out->n++] = (struct snap_stat){ d->name, sb_get(s->region, idx, f) };
	}
}

/* Is f one of the kvm.* mirrors? Its index in s->kvm, or -1. */
static int kvm_mirror(const struct vm_stats *s, struct sb_field f)
{
	for (unsigned k = 0; k < s->kvm.nr; k++)
		if (s->kvm.field[k].offset == f.offset && s->kvm.field[k].record == f.record)
			return (int)k;
	return -1;
}

/*
 * Saved values back into a record, by name. Cumulative and peak fields
 * carry over; a kvm.* mirror's cumulative value becomes its base, because
 * the new VM's KVM counts from 0 (its peaks start over), and so does
 * time.cpu_ns (the new vCPU thread's CPU clock starts at 0). Fields this
 * perfvisor does not have are ignored. Before the vCPUs start.
 */
static void load_record(struct vm_stats *s, enum pv_stats_record rec, unsigned idx,
			const struct snap_stats *st)
{
	struct sb_entry e = rec == PV_STATS_RECORD_VM ? stats_vm_entry(s->region) : s->v[idx].e;

	sb_begin(e);
	for (unsigned j = 0; j < st->n; j++) {
		for (unsigned i = 0; i < sb_nr_fields(s->region); i++) {
			struct sb_field f;
			const struct pv_stats_desc *d = sb_field_at(s->region, i, &f);
			int k = rec == PV_STATS_RECORD_VCPU ? kvm_mirror(s, f) : -1;

			if (d->record != rec || strcmp(d->name, st->s[j].name))
				continue;
			if (d->kind == PV_STATS_INSTANT || (k >= 0 && d->kind != PV_STATS_CUMULATIVE))
				break;
			if (k >= 0)
				s->v[idx].kvm_base[k] = st->s[j].value;
			if (rec == PV_STATS_RECORD_VCPU && f.offset == s->sf.cpu_ns.offset)
				s->v[idx].cpu_ns_base = st->s[j].value;
			sb_set(e, f, st->s[j].value);
			break;
		}
	}
	sb_end(e);
}

static void save_vm(void *obj, void *state)
{
	save_record(obj, PV_STATS_RECORD_VM, 0, state);
}

static int load_vm(void *obj, const void *state, struct errbuf *err)
{
	(void)err;
	load_record(obj, PV_STATS_RECORD_VM, 0, state);
	return 0;
}

/* On vCPU i's thread: the kvm.* mirror as of now, not of the last refresh, then the record. */
static void save_vcpu(void *obj, unsigned i, void *state)
{
	vm_stats_kvm_refresh(obj, i, util_now_ns(), true);
	save_record(obj, PV_STATS_RECORD_VCPU, i, state);
}

static int load_vcpu(void *obj, unsigned i, const void *state, struct errbuf *err)
{
	(void)err;
	load_record(obj, PV_STATS_RECORD_VCPU, i, state);
	return 0;
}

static const struct vm_part_ops vm_ops = { .desc = &snap_stats_part, .save = save_vm, .load = load_vm };
static const struct vm_part_ops vcpu_ops = {
	.desc = &snap_stats_part, .per_vcpu = true, .save_vcpu = save_vcpu, .load_vcpu = load_vcpu
};

int vm_stats_add_parts(struct vm_stats *s, struct vm_parts *l, struct errbuf *err)
{
	return vm_parts_add(l, &vm_ops, s, err) ?: vm_parts_add(l, &vcpu_ops, s, err);
}
