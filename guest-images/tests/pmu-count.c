/* SPDX-License-Identifier: MIT */
/*
 * pmu-count: counting without interrupts. Hypervisor events are exact (K
 * port writes move EXITS_IO by exactly K, K NOP MSR writes move
 * EXITS_MSR_WRITE by exactly K); task-clock over a ring-3 busy loop agrees
 * with the TSC within a tolerance; page faults count; a written counter
 * continues from the written value; an inactive counter keeps its value.
 * cmdline: k=N (default 1000) port/MSR writes per window, ms=N (default
 * 200) for the task-clock loop, tolerance=N percent (default 25).
 */
#include "guest.h"

#define GP 13
#define BOTH (PV_PMU_CFG_USR | PV_PMU_CFG_OS)

static struct pvpmu_info info;
static uint32_t K;

static void nop_writes(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		wrmsr(PV_PMU_MSR_NOP, i);
}

static void spin_user_us(uint64_t us)
{
	rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(us));
}

/* Ring 3: write one byte per 4 KiB page of [arg[0], arg[1]). */
static long touch_pages(void *arg)
{
	uint64_t *range = arg;

	for (uint64_t a = range[0]; a < range[1]; a += 4096)
		*(volatile uint8_t *)(uintptr_t)a = (uint8_t)a;
	return 0;
}

/* Counter 0 on `event` only; CTR(0) around `work(n)`; returns the delta. */
static uint64_t window(uint32_t event, void (*work)(uint32_t), uint32_t n)
{
	uint64_t r1, r2;

	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	if (pvpmu_program(0, event, BOTH | PV_PMU_CFG_EN, 0) != RT_NO_FAULT)
		return ~0ULL;
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	r1 = pvpmu_read(0);
	work(n);
	r2 = pvpmu_read(0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	return (r2 - r1) & PV_PMU_COUNTER_MASK;
}

static void hypervisor_events(void)
{
	uint64_t v, d0, d1, a;
	uint64_t all = (1ULL << info.nr_counters) - 1;
	bool ok = true;

	/* Counting window = exactly the K port writes: start, K outb, read. */
	report(pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 0) == RT_NO_FAULT,
	       "program counter 0: EXITS_IO");
	/* No printing while an I/O counter counts: each printed line is a port write too. */
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(K);
	v = pvpmu_read(0);
	pvpmu_io_exits(K);
	a = pvpmu_read(0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(v == K, "EXITS_IO from 0 after %u port writes: %lu", K, v);
	report(a == 2ULL * K, "EXITS_IO after %u more: %lu (MSR exits are not I/O exits)", K, a);

	v = window(PV_PMU_EV_EXITS_IO, pvpmu_io_exits, K);
	report(v == K, "EXITS_IO: read, %u outb, read: delta %lu", K, v);
	v = window(PV_PMU_EV_EXITS_IO, nop_writes, K);
	report(v == 0, "EXITS_IO: %u NOP MSR writes: delta %lu", K, v);
	v = window(PV_PMU_EV_EXITS_MSR_WRITE, nop_writes, K);
	report(v == K, "EXITS_MSR_WRITE: read, %u NOP writes, read: delta %lu", K, v);
	v = window(PV_PMU_EV_EXITS_MSR_WRITE, pvpmu_io_exits, K);
	report(v == 0, "EXITS_MSR_WRITE: %u port writes: delta %lu", K, v);
	/* One of the two CTR reads falls inside the window, whichever way reads count themselves. */
	v = window(PV_PMU_EV_EXITS_MSR, nop_writes, K);
	report(v == K + 1ULL, "EXITS_MSR: read, %u NOP writes, read: delta %lu (want K + 1)", K, v);
	v = window(PV_PMU_EV_EXITS_MSR_READ, nop_writes, K);
	report(v == 1, "EXITS_MSR_READ: read, %u NOP writes, read: delta %lu (want 1)", K, v);
	/* All exits: signals may add a few (EXITS_INTR); the difference of two windows is exact-ish. */
	d0 = window(PV_PMU_EV_EXITS, pvpmu_io_exits, 0);
	d1 = window(PV_PMU_EV_EXITS, pvpmu_io_exits, K);
	report(d1 >= K + 1ULL && d1 <= K + 1ULL + 5 && d0 <= 6,
	       "EXITS: %u outb: delta %lu (want K + 1, +5), empty %lu", K, d1, d0);
	v = window(PV_PMU_EV_PMIS, pvpmu_io_exits, K);
	report(v == 0, "PMIS without INT: %lu", v);
	v = window(PV_PMU_EV_KVM_RUN_NS, pvpmu_io_exits, K);
	a = window(PV_PMU_EV_VMM_NS, pvpmu_io_exits, K);
	report(v > 0 && a > 0, "KVM_RUN_NS %lu, VMM_NS %lu over %u exits", v, a, K);

	/* Every counter at once on the same event. */
	for (uint32_t i = 0; i < info.nr_counters; i++)
		ok &= pvpmu_program(i, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 0) == RT_NO_FAULT;
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, all);
	pvpmu_io_exits(K);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	for (uint32_t i = 0; i < info.nr_counters; i++) {
		v = pvpmu_read(i);
		if (v != K) {
			printf("pmu-count: counter %u: %lu\n", i, v);
			ok = false;
		}
	}
	report(ok, "all %u counters on EXITS_IO count %u", info.nr_counters, K);
	v = rdmsr(PV_PMU_MSR_ERROR);
	report(v == 0, "ERROR is 0 (%lx)", v);
	pvpmu_reset();
}

static void continuity(void)
{
	const uint64_t start = 0x123456789abULL;
	uint64_t v, v2, v3;

	/* No printing while the I/O counter counts: each printed line is a port write too. */
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(10);
	pvpmu_write(0, start);
	pvpmu_io_exits(K);
	v = pvpmu_read(0);
	nop_writes(5);
	wrmsr(PV_PMU_MSR_CFG(1), 0); /* another MSR: counting goes on */
	pvpmu_io_exits(3);
	v2 = pvpmu_read(0);
	pvpmu_write(0, 0xfffffffffffffff0ULL);
	v3 = pvpmu_read(0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(v == start + K, "CTR written to 0x%lx while counting, then %u exits: 0x%lx", start, K, v);
	report(v2 == start + K + 3, "other MSR writes leave the count alone: 0x%lx", v2);
	report(v3 == 0xfffffffffff0ULL, "CTR = -16 (sign extended) reads 0x%lx", v3);

	/* Inactive through GLOBAL_CTRL, then through CFG.EN: value kept. */
	pvpmu_write(0, 77);
	pvpmu_io_exits(K);
	v = pvpmu_read(0);
	wrmsr(PV_PMU_MSR_CFG(0), PV_PMU_EV_EXITS_IO | BOTH);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(K);
	v2 = pvpmu_read(0);
	wrmsr(PV_PMU_MSR_CFG(0), PV_PMU_EV_EXITS_IO | BOTH | PV_PMU_CFG_EN);
	pvpmu_io_exits(K);
	v3 = pvpmu_read(0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(v == 77, "GLOBAL_CTRL bit clear: %u exits leave 77: %lu", K, v);
	report(v2 == 77, "CFG.EN clear: %u exits leave 77: %lu", K, v2);
	report(v3 == 77 + K, "re-enabled: continues from 77: %lu", v3);

	/* A host counter (task-clock): written value + more, and kept when stopped. */
	pvpmu_program(1, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_EN, 0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 2);
	pvpmu_write(1, start);
	spin_user_us(20000);
	v = pvpmu_read(1);
	report(v > start && v < start + 10000000000ULL, "task-clock written to 0x%lx, 20 ms later: 0x%lx",
	       start, v);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	v = pvpmu_read(1);
	spin_user_us(20000);
	v2 = pvpmu_read(1);
	report(v2 == v, "task-clock stopped: keeps 0x%lx (now 0x%lx)", v, v2);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 2);
	spin_user_us(5000);
	v2 = pvpmu_read(1);
	report(v2 > v, "task-clock restarted: continues 0x%lx -> 0x%lx", v, v2);
	pvpmu_reset();
}

/*
 * task-clock counts the vCPU thread's time on a CPU, the TSC the time that
 * passed: never more (beyond the tolerance), and as much when the host is
 * not busy. A host that runs something else on our CPU makes it less, so a
 * short count is measured again, up to 5 times; one count too many fails.
 */
static void task_clock(void)
{
	uint64_t ms = cmdline_get_u64("ms", 200), tol = cmdline_get_u64("tolerance", 25);
	uint64_t t0, t1, r1, r2, ns = 0, tsc_ns = 0;
	bool within = false, over = false;

	if (!pvpmu_event_available(PV_PMU_EV_TASK_CLOCK)) {
		report(false, "task-clock available");
		return;
	}
	report(pvpmu_program(0, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_EN, 0) == RT_NO_FAULT,
	       "program counter 0: task-clock");
	for (unsigned attempt = 1; attempt <= 5 && !within && !over; attempt++) {
		wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
		t0 = rdtsc();
		r1 = pvpmu_read(0);
		rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(ms * 1000));
		r2 = pvpmu_read(0);
		t1 = rdtsc();
		wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
		ns = r2 - r1;
		tsc_ns = tsc_to_us(t1 - t0) * 1000;
		printf("pmu-count: task-clock %lu ns over %lu ns of TSC time (tsc_khz %u, attempt %u)\n", ns,
		       tsc_ns, tsc_khz(), attempt);
		over = ns * 100 > tsc_ns * (100 + tol);
		within = !over && ns * 100 >= tsc_ns * (100 - tol);
	}
	report(within, "task-clock over a %lu ms ring-3 loop within +-%lu%% of the TSC: %lu us vs %lu us", ms,
	       tol, ns / 1000, tsc_ns / 1000);
	report(rdmsr(PV_PMU_MSR_ERROR) == 0, "ERROR is 0 with task-clock");
	pvpmu_reset();
}

static void faults(void)
{
	static const uint32_t ev[] = { PV_PMU_EV_PAGE_FAULTS, PV_PMU_EV_MINOR_FAULTS, PV_PMU_EV_MAJOR_FAULTS,
				       PV_PMU_EV_CONTEXT_SWITCHES, PV_PMU_EV_CPU_MIGRATIONS };
	uint64_t mem = rt_mem_size(), range[2] = { mem / 4, mem / 2 };
	uint64_t r1[ARRAY_SIZE(ev)], r2[ARRAY_SIZE(ev)];
	bool ok = true;

	for (uint32_t i = 0; i < ARRAY_SIZE(ev); i++)
		ok &= pvpmu_program(i, ev[i], BOTH | PV_PMU_CFG_EN, 0) == RT_NO_FAULT;
	report(ok, "programmed page-faults, minor/major faults, context switches, migrations");
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, (1u << ARRAY_SIZE(ev)) - 1);
	for (uint32_t i = 0; i < ARRAY_SIZE(ev); i++)
		r1[i] = pvpmu_read(i);
	/* Fresh guest pages: the host may or may not fault them on this thread. */
	rt_user_call(touch_pages, range);
	spin_user_us(20000);
	for (uint32_t i = 0; i < ARRAY_SIZE(ev); i++)
		r2[i] = pvpmu_read(i);
	for (uint32_t i = 0; i < ARRAY_SIZE(ev); i++) {
		printf("pmu-count: event 0x%x: %lu -> %lu\n", ev[i], r1[i], r2[i]);
		ok &= r2[i] >= r1[i] && r2[i] - r1[i] < (1ULL << 32);
	}
	report(ok, "software event counters read and monotonic over touching %lu KiB",
	       (range[1] - range[0]) >> 10);
	report(rdmsr(PV_PMU_MSR_ERROR) == 0, "ERROR is 0 with 5 host counters");
	pvpmu_reset();
}

int main(const struct pv_bootinfo *bi)
{
	(void)bi;
	K = (uint32_t)cmdline_get_u64("k", 1000);
	if (!pvpmu_test_init(&info))
		return report_summary();
	pvpmu_reset();
	hypervisor_events();
	continuity();
	task_clock();
	faults();
	return report_summary();
}
