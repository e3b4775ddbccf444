/* SPDX-License-Identifier: MIT */
/*
 * pmu-page: the shared counter page. Once registered it carries the
 * version, size and counter count; it agrees with the MSRs (exactly for a
 * VMM-kept event, never ahead for task-clock); ring 3 reads it with the
 * seqlock while task-clock counts and sees it move, monotonic; after
 * unregistering it no longer changes.
 */
#include "guest.h"

#define BOTH (PV_PMU_CFG_USR | PV_PMU_CFG_OS)
#define CFG_IO (PV_PMU_EV_EXITS_IO | BOTH | PV_PMU_CFG_EN)
#define CFG_TASK (PV_PMU_EV_TASK_CLOCK | BOTH | PV_PMU_CFG_EN)

static struct pvpmu_info info;

/* What a ring-3 reader saw while spinning on the page. */
struct watch {
	uint64_t deadline;
	uint64_t reads, changes, failures, backwards;
	uint64_t first, last;
	uint64_t updates_first, updates_last;
};

static long watch_page(void *arg)
{
	struct watch *w = arg;
	const volatile struct pv_pmu_page *p = pvpmu_page();
	uint64_t v;

	w->updates_first = p->updates;
	if (!pvpmu_page_read(1, &w->first, NULL))
		w->failures++;
	w->last = w->first;
	while (rdtsc() < w->deadline) {
		w->reads++;
		if (!pvpmu_page_read(1, &v, NULL)) {
			w->failures++;
			continue;
		}
		if (v < w->last)
			w->backwards++;
		if (v != w->last)
			w->changes++;
		w->last = v;
	}
	w->updates_last = p->updates;
	return 0;
}

static void header(void)
{
	struct pv_pmu_page h;
	uint64_t v;
	bool zero = true;

	report(pvpmu_page_register() == RT_NO_FAULT, "register the page at 0x%lx", (uintptr_t)pvpmu_page());
	wrmsr(PV_PMU_MSR_NOP, 0); /* an exit: the page is written after every PMU MSR access anyway */
	report(pvpmu_page_header(&h), "consistent header read");
	printf("pmu-page: seq %u version %u size %u nr_counters %u updates %lu refresh_us %u flags %u\n",
	       h.seq, h.version, h.size, h.nr_counters, h.updates, h.refresh_us, h.flags);
	report(!(h.seq & 1) && h.seq != 0, "seq even and non-zero (%u)", h.seq);
	report(h.version == PV_PMU_VERSION, "version %u", h.version);
	report(h.size == sizeof(struct pv_pmu_page), "size %u (want %zu)", h.size,
	       sizeof(struct pv_pmu_page));
	report(h.nr_counters == info.nr_counters, "nr_counters %u", h.nr_counters);
	report(h.updates > 0 && h.refresh_us > 0 && h.flags == 0, "updates %lu, refresh_us %u, flags 0",
	       h.updates, h.refresh_us);
	for (uint32_t i = info.nr_counters; i < PV_PMU_MAX_COUNTERS; i++) {
		uint64_t c;

		pvpmu_page_read(i, &v, &c);
		zero &= v == 0 && c == 0;
	}
	report(zero, "counters >= nr_counters are 0 in the page");
}

static void agrees(void)
{
	struct pv_pmu_page h;
	uint64_t msr, pv, pc, pt, mt;
	bool ok = true;

	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 0);
	pvpmu_program(1, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_EN, 0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 3);
	pvpmu_io_exits(100);
	pvpmu_page_read(0, &pv, &pc);
	report(pv == 100 && pc == CFG_IO,
	       "page after 100 exits, before any MSR read: value %lu, config 0x%lx", pv, pc);
	for (int round = 0; round < 5; round++) {
		pvpmu_io_exits(37);
		msr = pvpmu_read(0);
		pvpmu_page_read(0, &pv, NULL);
		ok &= pv == msr;
		if (pv != msr)
			printf("pmu-page: round %d: MSR %lu, page %lu\n", round, msr, pv);
	}
	report(ok, "EXITS_IO: page == MSR after each of 5 reads (last %lu)", msr);

	ok = true;
	for (int round = 0; round < 5; round++) {
		pvpmu_page_read(1, &pt, &pc);
		mt = pvpmu_read(1);
		ok &= pt <= mt && pc == CFG_TASK;
		if (pt > mt)
			printf("pmu-page: round %d: task-clock page %lu > MSR %lu\n", round, pt, mt);
	}
	report(ok, "task-clock: page value <= the MSR read right after (%lu <= %lu)", pt, mt);
	pvpmu_page_header(&h);
	report(h.global_ctrl == 3 && h.global_status == 0 && h.error == 0,
	       "page global_ctrl 0x%lx, global_status 0x%lx, error 0x%lx", h.global_ctrl, h.global_status,
	       h.error);
}

static void ring3_reader(void)
{
	struct watch w = { 0 };
	uint64_t ms = cmdline_get_u64("ms", 100), v;

	w.deadline = tsc_deadline_us(ms * 1000);
	rt_user_call(watch_page, &w);
	v = pvpmu_read(1);
	printf("pmu-page: ring 3 for %lu ms: %lu reads, %lu changes, task-clock %lu -> %lu ns, updates %lu -> %lu\n",
	       ms, w.reads, w.changes, w.first, w.last, w.updates_first, w.updates_last);
	report(w.failures == 0 && w.reads > 0, "ring 3 seqlock reads all consistent (%lu, %lu failed)",
	       w.reads, w.failures);
	report(w.backwards == 0, "task-clock in the page never goes backwards");
	report(w.changes >= 2 && w.updates_last > w.updates_first,
	       "the page refreshes while ring 3 runs without exits (%lu changes)", w.changes);
	report(w.last <= v, "last page value %lu <= MSR %lu", w.last, v);
}

static void unregister(void)
{
	struct pv_pmu_page before, after;
	uint64_t v0, v1, v2;

	pvpmu_page_unregister();
	report(rdmsr(PV_PMU_MSR_PAGE) == 0, "PAGE = 0 unregisters");
	pvpmu_page_header(&before);
	pvpmu_page_read(0, &v0, NULL);
	pvpmu_io_exits(50);
	pvpmu_read(0);
	/* task-clock still counts: a registered page would refresh during this. */
	rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(30000));
	pvpmu_page_header(&after);
	pvpmu_page_read(0, &v1, NULL);
	v2 = pvpmu_read(0);
	report(after.updates == before.updates && after.seq == before.seq && v1 == v0,
	       "no updates after unregistering (updates %lu -> %lu, counter 0 %lu while the MSR says %lu)",
	       before.updates, after.updates, v1, v2);
}

int main(const struct pv_bootinfo *bi)
{
	(void)bi;
	if (!pvpmu_test_init(&info))
		return report_summary();
	pvpmu_reset();
	header();
	agrees();
	ring3_reader();
	unregister();
	pvpmu_reset();
	return report_summary();
}
