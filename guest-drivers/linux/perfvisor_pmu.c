// SPDX-License-Identifier: GPL-2.0-only
/*
 * perfvisor_pmu: a Linux perf PMU for perfvisor's paravirtual PMU.
 *
 * Inside a guest of perfvisor, this module registers a perf PMU named
 * "perfvisor" whose events are the PV PMU's (docs/pvpmu.md,
 * include/perfvisor/pvpmu.h): `perf stat -e perfvisor/exits.io/`,
 * `perf record -e perfvisor/task-clock/`. Each perf event takes one of the
 * vCPU's PV PMU counters while it is scheduled in: per task (the counter
 * runs only while the task runs on that CPU) or per CPU (-a). Counts are read
 * from the vCPU's shared counter page, without a VM exit; an overflow comes
 * as the PV PMU's NMI and becomes a perf sample with the guest's registers.
 * docs/guest-perf.md tells how to build and load it and what each event
 * counts from inside the guest.
 *
 * GPL-2.0 because it uses the kernel's GPL-only interfaces (perf_pmu_register,
 * the NMI and CPU-hotplug registrations). The rest of perfvisor is MIT; the ABI
 * header it includes (include/perfvisor/pvpmu.h) is MIT, which GPL code may use.
 */
#define pr_fmt(fmt) "perfvisor_pmu: " fmt

#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/cpuhotplug.h>
#include <linux/slab.h>
#include <linux/gfp.h>
#include <linux/bitops.h>
#include <linux/kprobes.h>
#include <asm/nmi.h>
#include <asm/msr.h>
#include <asm/processor.h>
#include <asm/cpufeature.h>

#include "perfvisor/pvpmu.h"

/* What CPUID said when the module loaded: the same on every vCPU. */
static struct {
	unsigned int version, nr_counters, width, nr_events, features;
	u32 min_period_events, min_period_ns, max_pmis, host_counters;
	u64 mask; /* (1 << width) - 1 */
	u64 avail[PV_PMU_MAX_BITMAP_WORDS], sample[PV_PMU_MAX_BITMAP_WORDS], filter[PV_PMU_MAX_BITMAP_WORDS];
} pv;

/* Each vCPU's state: its counter page and which perf event holds which counter. */
struct pvp_cpu {
	struct pv_pmu_page *page;
	struct perf_event *events[PV_PMU_MAX_COUNTERS];
	unsigned long used; /* counters held by an event */
	unsigned long intr; /* counters programmed with CFG.INT (their overflow is a PMI) */
	u64 global_ctrl;    /* what this driver last wrote to GLOBAL_CTRL */
	u64 want_ctrl;	    /* what it will write at the end of a perf_pmu_disable section */
	int disabled;	    /* inside such a section (a context switch, the frequency tick) */
	/* counter i's sampling event whose stop waits for the section's end: started again
	 * within it, it runs on without a write */
	struct perf_event *deferred[PV_PMU_MAX_COUNTERS];
	u64 cfg[PV_PMU_MAX_COUNTERS];	 /* what this driver last wrote to CFG(i); 0 after reset */
	u64 reload[PV_PMU_MAX_COUNTERS]; /* ... and to RELOAD(i), with PV_PMU_FEAT_ACK */
};
static DEFINE_PER_CPU(struct pvp_cpu, pvp_cpus);
static enum cpuhp_state pvp_hp_state;
/* An MSR access of the block that raised #GP: a VMM that is not perfvisor's v1, or a bug.
 * Counted and logged (rate-limited), never fatal for the guest. */
static atomic_long_t pvp_msr_faults;

static struct pmu pvp_pmu;

/*
 * perf_event_overflow() turns an overflow into a sample; Linux does not export it
 * (its PMU drivers are built in), so the module finds it by name at load time:
 * a kprobe tells where kallsyms_lookup_name is, and that tells the rest. A kernel
 * without kprobes cannot sample with this PMU; counting needs nothing of the kind.
 */
typedef int (*perf_event_overflow_fn)(struct perf_event *, struct perf_sample_data *, struct pt_regs *);
static perf_event_overflow_fn pvp_overflow;

static unsigned long pvp_lookup(const char *name)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	unsigned long (*lookup)(const char *name);
	unsigned long addr;
	u32 insn;

	if (!IS_ENABLED(CONFIG_KPROBES) || register_kprobe(&kp))
		return 0;
	addr = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	/* A kprobe at a function's entry sits after its ENDBR64 (f3 0f 1e fa); an indirect
	 * call must land on it. */
	if (!get_kernel_nofault(insn, (u32 *)(addr - 4)) && insn == 0xfa1e0ff3)
		addr -= 4;
	lookup = (void *)addr;
	return lookup(name);
}

static bool ev_bit(const u64 *map, unsigned int id)
{
	return id < pv.nr_events && (map[id / 64] >> (id % 64)) & 1;
}

static void pvp_wrmsr(u32 msr, u64 val)
{
	if (wrmsrl_safe(msr, val)) {
		atomic_long_inc(&pvp_msr_faults);
		pr_warn_ratelimited("wrmsr 0x%x <- 0x%llx raised #GP\n", msr, val);
	}
}

/* Counter i's value from this vCPU's page (the seqlock of docs/pvpmu.md §8). The page
 * is written only while this vCPU is out of the guest, so code on this CPU never sees
 * it odd; the bound is for a VMM stopped in the middle of an update. */
static u64 page_read(struct pvp_cpu *c, unsigned int i, u64 *status)
{
	const struct pv_pmu_page *pg = c->page;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		u32 s1 = READ_ONCE(pg->seq);
		u64 v, st;

		if (s1 & 1) {
			cpu_relax();
			continue;
		}
		smp_rmb();
		v = READ_ONCE(pg->counter[i].value);
		st = READ_ONCE(pg->global_status);
		smp_rmb();
		if (READ_ONCE(pg->seq) == s1) {
			if (status)
				*status = st;
			return v;
		}
	}
	/* Fall back to the MSRs: exact, at the cost of exits. */
	{
		u64 v = 0, st = 0;

		if (rdmsrl_safe(PV_PMU_MSR_CTR(i), &v))
			atomic_long_inc(&pvp_msr_faults);
		if (status && rdmsrl_safe(PV_PMU_MSR_GLOBAL_STATUS, &st))
			atomic_long_inc(&pvp_msr_faults);
		if (status)
			*status = st;
		return v;
	}
}

/* Fold what the counter counted since prev_count into the event. Safe against the
 * NMI handler updating the same event (the cmpxchg, as x86's own PMU driver does). */
static void pvp_update(struct perf_event *event)
{
	struct hw_perf_event *hwc = &event->hw;
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);
	u64 prev, now, delta;

	do {
		prev = local64_read(&hwc->prev_count);
		now = page_read(c, hwc->idx, NULL);
	} while (local64_cmpxchg(&hwc->prev_count, prev, now) != prev);
	delta = (now - prev) & pv.mask;
	local64_add(delta, &event->count);
	local64_sub(delta, &hwc->period_left);
}

/* The smallest period the host honours for this event (CPUID 0x40000102); a smaller
 * one would be raised by the host anyway, and the samples' periods would lie. */
static s64 min_period(unsigned int id)
{
	switch (PV_PMU_EVENT_CLASS(id)) {
	case PV_PMU_CLASS_SW:
		return id == PV_PMU_EV_TASK_CLOCK ? pv.min_period_ns : pv.min_period_events;
	case PV_PMU_CLASS_HW:
		return pv.min_period_events;
	default:
		return 2; /* class 2: exact; 1 would be a PMI at every exit */
	}
}

/* The sampling period as the host honours it: at least its minimum, at most half the counter. */
static s64 clamp_period(struct perf_event *event, s64 left)
{
	s64 min = min_period(event->hw.config & PV_PMU_CFG_EVENT_MASK);

	if (left < min)
		left = min;
	if (left > (s64)(pv.mask >> 1))
		left = pv.mask >> 1;
	return left;
}

static bool has_ack(void)
{
	return pv.features & PV_PMU_FEAT_ACK;
}

/* With PV_PMU_FEAT_ACK: RELOAD(i) holds minus the event's period, so that the PMI's one
 * write (PMI_ACK) re-arms the counter; written only when the period changed. */
static void pvp_set_reload(struct pvp_cpu *c, struct perf_event *event)
{
	u64 want = (u64)(-clamp_period(event, event->hw.sample_period)) & pv.mask;
	int i = event->hw.idx;

	if (c->reload[i] != want) {
		c->reload[i] = want;
		pvp_wrmsr(PV_PMU_MSR_RELOAD(i), want);
	}
}

/* Arm counter idx to overflow after the event's remaining period; false if the
 * period had not run out (no sample is due). */
static bool pvp_set_period(struct perf_event *event)
{
	struct hw_perf_event *hwc = &event->hw;
	s64 left = local64_read(&hwc->period_left), period = hwc->sample_period;
	bool due = false;
	u64 start;

	if (unlikely(left <= -period)) {
		left = period;
		local64_set(&hwc->period_left, left);
		hwc->last_period = period;
		due = true;
	}
	if (unlikely(left <= 0)) {
		left += period;
		local64_set(&hwc->period_left, left);
		hwc->last_period = period;
		due = true;
	}
	left = clamp_period(event, left);
	start = (u64)(-left) & pv.mask;
	local64_set(&hwc->prev_count, start);
	pvp_wrmsr(PV_PMU_MSR_CTR(hwc->idx), (u64)(-left));
	perf_event_update_userpage(event);
	return due;
}

/* GLOBAL_CTRL as the driver wants it: written now, or at the end of a perf_pmu_disable
 * section, so that a counter stopped and started again within one costs no write. */
static void pvp_ctrl(struct pvp_cpu *c, u64 want, bool now)
{
	c->want_ctrl = want;
	if ((now || !c->disabled) && c->global_ctrl != want) {
		c->global_ctrl = want;
		pvp_wrmsr(PV_PMU_MSR_GLOBAL_CTRL, want);
	}
}

static void pvp_pmu_disable(struct pmu *pmu)
{
	this_cpu_ptr(&pvp_cpus)->disabled++;
}

static void pvp_pmu_enable(struct pmu *pmu)
{
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);

	if (c->disabled && !--c->disabled)
		pvp_ctrl(c, c->want_ctrl, true);
}

static void pvp_start(struct perf_event *event, int flags)
{
	struct hw_perf_event *hwc = &event->hw;
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);
	int i = hwc->idx;
	bool live;

	if (WARN_ON_ONCE(!(hwc->state & PERF_HES_STOPPED)))
		return;
	if (flags & PERF_EF_RELOAD)
		WARN_ON_ONCE(!(hwc->state & PERF_HES_UPTODATE));
	hwc->state = 0;
	/* Still running since its stop in this section (the frequency tick's stop and start)? */
	live = c->deferred[i] == event && (c->global_ctrl >> i & 1) && c->cfg[i] == hwc->config;
	c->deferred[i] = NULL;
	/* Otherwise the counter is inactive (its GLOBAL_CTRL bit is clear), so its value holds still. */
	if (c->cfg[i] != hwc->config) {
		c->cfg[i] = hwc->config;
		pvp_wrmsr(PV_PMU_MSR_CFG(i), hwc->config);
	}
	if (hwc->config & PV_PMU_CFG_INT) {
		__set_bit(i, &c->intr);
		/* A live counter runs on to the overflow it was armed for; the PMI's RELOAD brings
		 * a new period (the NMI handler writes RELOAD when the period changed). */
		if (!live || local64_read(&hwc->period_left) <= 0)
			pvp_set_period(event);
		if (has_ack() && !live)
			pvp_set_reload(c, event);
	} else {
		__clear_bit(i, &c->intr);
		/* The page is exact after the CFG write's exit, or unchanged since the last
		 * one: the counter did not count while it was inactive. */
		local64_set(&hwc->prev_count, page_read(c, i, NULL));
	}
	pvp_ctrl(c, c->want_ctrl | BIT_ULL(i), false);
	/* A host that could not back the counter says so in ERROR (docs/pvpmu.md §7). */
	if (READ_ONCE(c->page->error) & BIT_ULL(i))
		pr_warn_ratelimited(
			"counter %d (event 0x%llx): the host could not back it; it counts nothing\n", i,
			hwc->config & PV_PMU_CFG_EVENT_MASK);
}

static void pvp_stop(struct perf_event *event, int flags)
{
	struct hw_perf_event *hwc = &event->hw;
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);

	if (!(hwc->state & PERF_HES_STOPPED)) {
		/* A counting event's value must be exact when perf reads it: it stops now. A
		 * sampling event's stop may wait for the section's end: it may start again. */
		bool now = !(hwc->config & PV_PMU_CFG_INT);

		pvp_ctrl(c, c->want_ctrl & ~BIT_ULL(hwc->idx), now);
		if (!now && c->disabled)
			c->deferred[hwc->idx] = event;
		hwc->state |= PERF_HES_STOPPED;
	}
	if ((flags & PERF_EF_UPDATE) && !(hwc->state & PERF_HES_UPTODATE)) {
		/* Exact for a counting event: the page was written after the GLOBAL_CTRL write's
		 * exit. A sampling event's deferred stop leaves it as of the last exit, and the
		 * counts since come with its next update. */
		pvp_update(event);
		hwc->state |= PERF_HES_UPTODATE;
	}
}

static int pvp_add(struct perf_event *event, int flags)
{
	struct hw_perf_event *hwc = &event->hw;
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);
	int i = find_first_zero_bit(&c->used, pv.nr_counters);

	if (i >= pv.nr_counters)
		return -EAGAIN; /* all counters busy: perf multiplexes */
	__set_bit(i, &c->used);
	c->events[i] = event;
	hwc->idx = i;
	hwc->state = PERF_HES_STOPPED | PERF_HES_UPTODATE;
	if (flags & PERF_EF_START)
		pvp_start(event, PERF_EF_RELOAD);
	perf_event_update_userpage(event);
	return 0;
}

static void pvp_del(struct perf_event *event, int flags)
{
	struct hw_perf_event *hwc = &event->hw;
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);

	pvp_stop(event, PERF_EF_UPDATE);
	__clear_bit(hwc->idx, &c->intr);
	c->events[hwc->idx] = NULL;
	__clear_bit(hwc->idx, &c->used);
	hwc->idx = -1;
	perf_event_update_userpage(event);
}

static void pvp_read(struct perf_event *event)
{
	if (event->hw.idx >= 0 && !(event->hw.state & PERF_HES_STOPPED))
		pvp_update(event);
}

static int pvp_event_init(struct perf_event *event)
{
	struct perf_event_attr *a = &event->attr;
	struct hw_perf_event *hwc = &event->hw;
	u64 id = a->config;
	u64 cfg;

	if (a->type != pvp_pmu.type)
		return -ENOENT;
	/* config is the event id alone (format/event: config:0-15); other bits are reserved. */
	if (id >= pv.nr_events || a->config1 || a->config2)
		return -EINVAL;
	if (!ev_bit(pv.avail, id))
		return -EOPNOTSUPP; /* this host cannot back it: never a fake count */
	if (is_sampling_event(event) && !ev_bit(pv.sample, id))
		return -EOPNOTSUPP; /* counting only (class 3) */
	if (is_sampling_event(event) && !pvp_overflow)
		return -EOPNOTSUPP; /* perf_event_overflow not found at load (pvp_lookup) */
	if (has_branch_stack(event))
		return -EOPNOTSUPP;
	cfg = id | PV_PMU_CFG_EN;
	if (ev_bit(pv.filter, id)) {
		if (!a->exclude_user)
			cfg |= PV_PMU_CFG_USR;
		if (!a->exclude_kernel)
			cfg |= PV_PMU_CFG_OS;
	} else {
		/* The event cannot tell user from kernel mode (docs/pvpmu.md §4). */
		if (a->exclude_user || a->exclude_kernel)
			return -EOPNOTSUPP;
		cfg |= PV_PMU_CFG_USR | PV_PMU_CFG_OS;
	}
	if (is_sampling_event(event))
		cfg |= PV_PMU_CFG_INT;
	else
		hwc->sample_period = pv.mask >> 1; /* counting: no overflow PMI */
	hwc->config = cfg;
	hwc->idx = -1;
	hwc->last_period = hwc->sample_period;
	local64_set(&hwc->period_left, hwc->sample_period);
	return 0;
}

static int pvp_event_idx(struct perf_event *event)
{
	return 0; /* no RDPMC: KVM #GPs it for these counters (docs/pvpmu.md §1) */
}

/* The PV PMU's NMI (docs/pvpmu.md §6, "Writing the guest's PMI handler"). */
static int pvp_nmi(unsigned int cmd, struct pt_regs *regs)
{
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);
	struct perf_sample_data data;
	unsigned long bits;
	u64 status, intr_cfg = 0;
	int i;

	if (!c->page)
		return NMI_DONE;
	/* The counters the host raises PMIs for: CFG.INT, also a counter whose event was just
	 * removed while its stop waited for the end of a section (it must be acknowledged too). */
	for (i = 0; i < pv.nr_counters; i++)
		if (c->cfg[i] & PV_PMU_CFG_INT)
			intr_cfg |= BIT_ULL(i);
	if (!intr_cfg)
		return NMI_DONE;
	page_read(c, 0, &status);
	/* Ours if such a counter overflowed, or a PMI was throttled; counting-only counters set
	 * status bits too but raise no PMI. */
	status &= intr_cfg | PV_PMU_STATUS_THROTTLED;
	if (!status)
		return NMI_DONE;
	bits = status & c->intr;
	for_each_set_bit(i, &bits, pv.nr_counters) {
		struct perf_event *event = c->events[i];

		if (event)
			pvp_update(event);
	}
	if (has_ack()) {
		/* One exit: PMI_ACK clears the status, loads RELOAD(i) into each overflowed counter
		 * and unmasks. The counts are as the counters will start again after it. */
		for_each_set_bit(i, &bits, pv.nr_counters) {
			struct perf_event *event = c->events[i];
			struct hw_perf_event *hwc;
			bool due, stopped;

			if (!event)
				continue;
			hwc = &event->hw;
			stopped = hwc->state & PERF_HES_STOPPED;
			if (!stopped)
				pvp_set_reload(c, event); /* no exit unless the period changed (-F) */
			if (!c->reload[i])
				continue;
			/* The ACK loads RELOAD(i): the count goes on from there, also for an event
			 * stopped in a section that may start it again without a write (the tick). */
			due = local64_read(&hwc->period_left) <= 0;
			local64_set(&hwc->period_left, (pv.mask + 1 - c->reload[i]) & pv.mask);
			local64_set(&hwc->prev_count, c->reload[i]);
			if (stopped)
				continue;
			hwc->last_period = hwc->sample_period;
			perf_sample_data_init(&data, 0, hwc->last_period);
			if (due && pvp_overflow(event, &data, regs))
				pvp_stop(event, 0); /* perf throttled it */
		}
		pvp_wrmsr(PV_PMU_MSR_PMI_ACK, status);
		return NMI_HANDLED;
	}
	/* Clear before re-arming: an overflow after the clear sets its bit again. */
	pvp_wrmsr(PV_PMU_MSR_STATUS_CLEAR, status);
	for_each_set_bit(i, &bits, pv.nr_counters) {
		struct perf_event *event = c->events[i];

		if (!event || (event->hw.state & PERF_HES_STOPPED))
			continue;
		perf_sample_data_init(&data, 0, event->hw.last_period);
		if (!pvp_set_period(event))
			continue;
		if (pvp_overflow(event, &data, regs))
			pvp_stop(event, 0); /* perf throttled it */
	}
	pvp_wrmsr(PV_PMU_MSR_PMI_CFG, 0); /* NMI mode, unmasked: re-arm */
	return NMI_HANDLED;
}

/* ---- sysfs: events/ and format/ ------------------------------------------------ */

/* docs/pvpmu.md §4's names; perf accepts '.' and '-' inside a PMU's event term. */
static const struct {
	const char *name;
	u16 id;
} pvp_event_names[] = {
	{ "cycles", PV_PMU_EV_CYCLES },
	{ "instructions", PV_PMU_EV_INSTRUCTIONS },
	{ "cache-references", PV_PMU_EV_CACHE_REFERENCES },
	{ "cache-misses", PV_PMU_EV_CACHE_MISSES },
	{ "branches", PV_PMU_EV_BRANCHES },
	{ "branch-misses", PV_PMU_EV_BRANCH_MISSES },
	{ "bus-cycles", PV_PMU_EV_BUS_CYCLES },
	{ "stalled-cycles-frontend", PV_PMU_EV_STALLED_FRONTEND },
	{ "stalled-cycles-backend", PV_PMU_EV_STALLED_BACKEND },
	{ "ref-cycles", PV_PMU_EV_REF_CYCLES },
	{ "task-clock", PV_PMU_EV_TASK_CLOCK },
	{ "page-faults", PV_PMU_EV_PAGE_FAULTS },
	{ "context-switches", PV_PMU_EV_CONTEXT_SWITCHES },
	{ "cpu-migrations", PV_PMU_EV_CPU_MIGRATIONS },
	{ "minor-faults", PV_PMU_EV_MINOR_FAULTS },
	{ "major-faults", PV_PMU_EV_MAJOR_FAULTS },
	{ "exits", PV_PMU_EV_EXITS },
	{ "exits.io", PV_PMU_EV_EXITS_IO },
	{ "exits.mmio", PV_PMU_EV_EXITS_MMIO },
	{ "exits.msr", PV_PMU_EV_EXITS_MSR },
	{ "exits.hlt", PV_PMU_EV_EXITS_HLT },
	{ "exits.intr", PV_PMU_EV_EXITS_INTR },
	{ "time.kvm_run", PV_PMU_EV_KVM_RUN_NS },
	{ "time.vmm", PV_PMU_EV_VMM_NS },
	{ "pmis", PV_PMU_EV_PMIS },
	{ "exits.msr_read", PV_PMU_EV_EXITS_MSR_READ },
	{ "exits.msr_write", PV_PMU_EV_EXITS_MSR_WRITE },
	{ "kvm.exits", PV_PMU_EV_KVM_EXITS },
	{ "kvm.io_exits", PV_PMU_EV_KVM_IO_EXITS },
	{ "kvm.mmio_exits", PV_PMU_EV_KVM_MMIO_EXITS },
	{ "kvm.halt_exits", PV_PMU_EV_KVM_HALT_EXITS },
	{ "kvm.irq_exits", PV_PMU_EV_KVM_IRQ_EXITS },
	{ "kvm.nmi_injections", PV_PMU_EV_KVM_NMI_INJECTIONS },
	{ "kvm.irq_injections", PV_PMU_EV_KVM_IRQ_INJECTIONS },
	{ "kvm.signal_exits", PV_PMU_EV_KVM_SIGNAL_EXITS },
	{ "kvm.pf_taken", PV_PMU_EV_KVM_PF_TAKEN },
	{ "kvm.insn_emulation", PV_PMU_EV_KVM_INSN_EMULATION },
	{ "kvm.halt_wakeup", PV_PMU_EV_KVM_HALT_WAKEUP },
	{ "kvm.host_state_reload", PV_PMU_EV_KVM_HOST_STATE_RELOAD },
};
#define PVP_NR_NAMES ARRAY_SIZE(pvp_event_names)

static struct perf_pmu_events_attr pvp_event_attrs[PVP_NR_NAMES];
static struct attribute *pvp_events_list[PVP_NR_NAMES + 1];

static ssize_t pvp_event_show(struct device *dev, struct device_attribute *attr, char *page)
{
	struct perf_pmu_events_attr *a = container_of(attr, struct perf_pmu_events_attr, attr);

	return sysfs_emit(page, "config=0x%02llx\n", a->id);
}

/* Only the events this host backs are listed (perf list shows what can count). */
static umode_t pvp_event_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	return n < PVP_NR_NAMES && ev_bit(pv.avail, pvp_event_names[n].id) ? attr->mode : 0;
}

static struct attribute_group pvp_events_group = {
	.name = "events",
	.attrs = pvp_events_list,
	.is_visible = pvp_event_visible,
};

PMU_FORMAT_ATTR(event, "config:0-15");
static struct attribute *pvp_format_list[] = { &format_attr_event.attr, NULL };
static struct attribute_group pvp_format_group = { .name = "format", .attrs = pvp_format_list };

static const struct attribute_group *pvp_groups[] = { &pvp_events_group, &pvp_format_group, NULL };

static struct pmu pvp_pmu = {
	.module = THIS_MODULE, /* events hold the module: rmmod is refused while one is open */
	/* The hardware context: perf rotates its events when there are more than counters (it does
	 * not rotate the software context). In a guest with a CPU PMU too, both PMUs share it, as
	 * the PMUs of heterogeneous CPUs do: the capability says so (else Linux 6.1 warns and
	 * takes the context away, also from this module loaded a second time). */
	.task_ctx_nr = perf_hw_context,
	.capabilities = PERF_PMU_CAP_HETEROGENEOUS_CPUS,
	.attr_groups = pvp_groups,
	.pmu_enable = pvp_pmu_enable,
	.pmu_disable = pvp_pmu_disable,
	.event_init = pvp_event_init,
	.add = pvp_add,
	.del = pvp_del,
	.start = pvp_start,
	.stop = pvp_stop,
	.read = pvp_read,
	.event_idx = pvp_event_idx,
};

/* ---- per vCPU: the page and the reset state --------------------------------------- */

static int pvp_cpu_online(unsigned int cpu)
{
	struct pvp_cpu *c = this_cpu_ptr(&pvp_cpus);
	unsigned int i;

	memset(c->cfg, 0, sizeof(c->cfg));
	memset(c->reload, 0, sizeof(c->reload));
	memset(c->deferred, 0, sizeof(c->deferred));
	c->global_ctrl = c->want_ctrl = 0;
	c->disabled = 0;
	c->used = c->intr = 0;
	pvp_wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	for (i = 0; has_ack() && i < pv.nr_counters; i++)
		pvp_wrmsr(PV_PMU_MSR_RELOAD(i), 0); /* what an earlier load of this module left */
	pvp_wrmsr(PV_PMU_MSR_PMI_CFG, 0);	    /* NMI mode, unmasked */
	pvp_wrmsr(PV_PMU_MSR_PAGE, virt_to_phys(c->page) | PV_PMU_PAGE_ENABLE);
	return 0;
}

static int pvp_cpu_offline(unsigned int cpu)
{
	pvp_wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	this_cpu_ptr(&pvp_cpus)->global_ctrl = this_cpu_ptr(&pvp_cpus)->want_ctrl = 0;
	pvp_wrmsr(PV_PMU_MSR_PAGE, 0);
	return 0;
}

static void pvp_free_pages(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct pvp_cpu *c = per_cpu_ptr(&pvp_cpus, cpu);

		if (c->page)
			free_page((unsigned long)c->page);
		c->page = NULL;
	}
}

static int pvp_read_bitmaps(void)
{
	unsigned int w, words = DIV_ROUND_UP(pv.nr_events, 64);

	for (w = 0; w < words; w++)
		if (rdmsrl_safe(PV_PMU_MSR_AVAIL(w), &pv.avail[w]) ||
		    rdmsrl_safe(PV_PMU_MSR_SAMPLE(w), &pv.sample[w]) ||
		    rdmsrl_safe(PV_PMU_MSR_FILTER(w), &pv.filter[w]))
			return -EIO;
	return 0;
}

static int __init pvp_init(void)
{
	unsigned int eax, ebx, ecx, edx, i, n = 0, ns = 0;
	int cpu, ret;

	if (!boot_cpu_has(X86_FEATURE_HYPERVISOR))
		return -ENODEV;
	cpuid(PV_PMU_CPUID_SIGNATURE, &eax, &ebx, &ecx, &edx);
	if (ebx != PV_PMU_SIG_EBX || ecx != PV_PMU_SIG_ECX || edx != PV_PMU_SIG_EDX ||
	    eax < PV_PMU_CPUID_LIMITS) {
		pr_info("no perfvisor PV PMU here (CPUID 0x%x has no PerfvisorPMU signature)\n",
			PV_PMU_CPUID_SIGNATURE);
		return -ENODEV;
	}
	cpuid(PV_PMU_CPUID_INFO, &eax, &ebx, &ecx, &edx);
	pv.version = PV_PMU_INFO_EAX_VERSION(eax);
	pv.nr_counters = PV_PMU_INFO_EAX_NR_COUNTERS(eax);
	pv.width = PV_PMU_INFO_EAX_WIDTH(eax);
	pv.nr_events = PV_PMU_INFO_ECX_NR_EVENTS(ecx);
	pv.features = edx;
	if (pv.version < 1 || ebx != PV_PMU_MSR_BASE || pv.nr_counters < 1 ||
	    pv.nr_counters > PV_PMU_MAX_COUNTERS || pv.width < 32 || pv.width > 63 ||
	    pv.nr_events > 64 * PV_PMU_MAX_BITMAP_WORDS) {
		pr_err("PV PMU version %u, MSR base 0x%x, %u counters of %u bits, %u events: not a layout this driver knows\n",
		       pv.version, ebx, pv.nr_counters, pv.width, pv.nr_events);
		return -ENODEV;
	}
	if (!(pv.features & PV_PMU_FEAT_PAGE) || !(pv.features & PV_PMU_FEAT_PMI_NMI)) {
		pr_err("the PV PMU offers no counter page or no NMI PMIs (features 0x%x): both are needed\n",
		       pv.features);
		return -ENODEV;
	}
	pv.mask = (1ULL << pv.width) - 1;
	cpuid(PV_PMU_CPUID_LIMITS, &eax, &ebx, &ecx, &edx);
	pv.min_period_events = max(eax, 1u);
	pv.min_period_ns = max(ebx, 1u);
	pv.max_pmis = ecx;
	pv.host_counters = edx;
	if (pvp_read_bitmaps()) {
		pr_err("reading the event bitmaps raised #GP\n");
		return -EIO;
	}

	pvp_overflow = (perf_event_overflow_fn)pvp_lookup("perf_event_overflow");
	if (!pvp_overflow)
		pr_warn("perf_event_overflow not found (no kprobes?): events count, none can sample\n");

	for (i = 0; i < PVP_NR_NAMES; i++) {
		struct perf_pmu_events_attr *a = &pvp_event_attrs[i];

		sysfs_attr_init(&a->attr.attr);
		a->attr.attr.name = pvp_event_names[i].name;
		a->attr.attr.mode = 0444;
		a->attr.show = pvp_event_show;
		a->id = pvp_event_names[i].id;
		pvp_events_list[i] = &a->attr.attr;
	}
	for (i = 0; i < pv.nr_events; i++) {
		n += ev_bit(pv.avail, i);
		ns += ev_bit(pv.avail, i) && ev_bit(pv.sample, i);
	}

	for_each_possible_cpu(cpu) {
		struct page *p = alloc_pages_node(cpu_to_node(cpu), GFP_KERNEL | __GFP_ZERO, 0);

		if (!p) {
			pvp_free_pages();
			return -ENOMEM;
		}
		per_cpu_ptr(&pvp_cpus, cpu)->page = page_address(p);
	}
	ret = register_nmi_handler(NMI_LOCAL, pvp_nmi, 0, "perfvisor_pmu");
	if (ret)
		goto fail_pages;
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "perf/perfvisor:online", pvp_cpu_online,
				pvp_cpu_offline);
	if (ret < 0)
		goto fail_nmi;
	pvp_hp_state = ret;
	ret = perf_pmu_register(&pvp_pmu, "perfvisor", -1);
	if (ret)
		goto fail_hp;
	pr_info("PV PMU version %u: %u counters of %u bits per vCPU, %u events available (%u can sample), PMIs as NMI "
		"acknowledged in %s; perf PMU 'perfvisor' type %d\n",
		pv.version, pv.nr_counters, pv.width, n, ns,
		has_ack() ? "one write (PMI_ACK)" : "three writes", pvp_pmu.type);
	return 0;

fail_hp:
	cpuhp_remove_state(pvp_hp_state);
fail_nmi:
	unregister_nmi_handler(NMI_LOCAL, "perfvisor_pmu");
fail_pages:
	pvp_free_pages();
	return ret;
}

static void __exit pvp_exit(void)
{
	perf_pmu_unregister(&pvp_pmu);
	cpuhp_remove_state(pvp_hp_state);
	unregister_nmi_handler(NMI_LOCAL, "perfvisor_pmu");
	pvp_free_pages();
	if (atomic_long_read(&pvp_msr_faults))
		pr_info("unloaded; %ld PV PMU MSR accesses raised #GP\n", atomic_long_read(&pvp_msr_faults));
}

module_init(pvp_init);
module_exit(pvp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("perf PMU for perfvisor's paravirtual PMU");
MODULE_AUTHOR("the perfvisor developers");
