/* SPDX-License-Identifier: MIT */
/*
 * pmu-overflow: overflow and PMIs. A VMM-kept event armed with period P
 * raises exactly N PMIs over N*P port writes, as NMIs and as a fixed
 * vector; overflow without INT only sets GLOBAL_STATUS; the MASK protocol
 * holds a second PMI until the guest re-arms; task-clock samples; the PMI
 * rate cap throttles. cmdline: p=N (default 50), n=N (default 4),
 * only=minperiod|throttle|taskclock (one group), stress (8 counters at the
 * minimum period).
 */
#include "guest.h"

#define PMI_VECTOR 0x2e
#define BOTH (PV_PMU_CFG_USR | PV_PMU_CFG_OS)
#define LOG_MAX 64

static struct pvpmu_info info;
static uint32_t P, N;

/* PMI callback state: periods to re-arm with, a log of statuses. */
static struct {
	uint64_t period[PV_PMU_MAX_COUNTERS];
	uint32_t nlog;
	uint64_t log[LOG_MAX];
	bool hold; /* leave MASK set once */
} st;

static bool on_pmi(uint64_t status, void *arg)
{
	(void)arg;
	if (st.nlog < LOG_MAX)
		st.log[st.nlog] = status;
	st.nlog++;
	for (uint32_t i = 0; i < info.nr_counters; i++) {
		if (((status >> i) & 1) && st.period[i])
			wrmsr(PV_PMU_MSR_CTR(i), pvpmu_period_value(st.period[i]));
	}
	if (st.hold) {
		st.hold = false;
		return false;
	}
	return true;
}

static void fresh(void)
{
	pvpmu_reset();
	memset(&st, 0, sizeof(st));
	(void)pvpmu_pmi_status_seen();
}

/* The statuses the handler logged are all `want`. */
static bool log_is(uint32_t from, uint32_t n, uint64_t want)
{
	for (uint32_t i = from; i < from + n && i < LOG_MAX; i++) {
		if (st.log[i] != want) {
			printf("pmu-overflow: PMI %u saw status 0x%lx, want 0x%lx\n", i, st.log[i], want);
			return false;
		}
	}
	return true;
}

static void no_int(void)
{
	uint64_t c0 = pvpmu_pmi_count(), v, s, s4;

	fresh();
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 5);
	/* No printing while an I/O counter counts: each printed line is a port write too. */
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(4);
	s4 = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	pvpmu_io_exits(6);
	v = pvpmu_read(0);
	s = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(s4 == 0, "4 of 5: GLOBAL_STATUS still 0 (0x%lx)", s4);
	report(v == 5, "CTR = 2^48 - 5, 10 exits: wrapped to %lu", v);
	report(s == 1, "overflow without INT sets GLOBAL_STATUS bit 0 (0x%lx)", s);
	report(pvpmu_pmi_count() == c0, "no PMI without INT");
	report(rdmsr(PV_PMU_MSR_STATUS_CLEAR) == 0, "STATUS_CLEAR reads 0");
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, 1);
	s = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	report(s == 0, "STATUS_CLEAR bit 0 clears it (0x%lx)", s);
}

static void nmi_mode(void)
{
	uint64_t c0, v, pmis, early;

	fresh();
	report(pvpmu_pmi_install(VEC_NMI, on_pmi, NULL) == RT_NO_FAULT, "PMI as NMI: PMI_CFG = 0");
	st.period[0] = P;
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, P);
	pvpmu_program(1, PV_PMU_EV_PMIS, BOTH | PV_PMU_CFG_EN, 0);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 3);
	pvpmu_io_exits(P - 1);
	early = pvpmu_pmi_count() - c0;
	pvpmu_io_exits(N * P - (P - 1));
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(early == 0, "P-1 = %u writes: no PMI yet (%lu)", P - 1, early);
	v = pvpmu_read(0);
	pmis = pvpmu_read(1);
	report(pvpmu_pmi_count() - c0 == N, "NMI mode: %u x %u port writes: %lu PMIs (want %u)", N, P,
	       pvpmu_pmi_count() - c0, N);
	report(st.nlog == N && log_is(0, N, 1), "every PMI saw GLOBAL_STATUS = 1 (bit 0)");
	report(v == pvpmu_period_value(P), "counter re-armed by the handler: 0x%lx", v);
	report(pmis == N, "PMIS event counted %lu", pmis);
	report(rdmsr(PV_PMU_MSR_GLOBAL_STATUS) == 0, "GLOBAL_STATUS clear after the handler");
	report((rdmsr(PV_PMU_MSR_PMI_CFG) & PV_PMU_PMI_MASK) == 0, "PMI_CFG.MASK clear (re-armed)");

	/* Two counters wrapping at the same exit: one PMI with both bits. */
	fresh();
	st.period[0] = P;
	st.period[2] = 2 * P;
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, P);
	pvpmu_program(2, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, 2 * P);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 5);
	pvpmu_io_exits(4 * P);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(pvpmu_pmi_count() - c0 == 4 && log_is(0, 1, 1) && log_is(1, 1, 5) && log_is(2, 1, 1) &&
		       log_is(3, 1, 5),
	       "counters 0 (P=%u) and 2 (P=%u) over %u writes: %lu PMIs, status 1,5,1,5", P, 2 * P, 4 * P,
	       pvpmu_pmi_count() - c0);
}

static void mask_protocol(void)
{
	uint64_t c0, s, cfg, c1, c2, c3, c4, cfg2;

	fresh();
	st.period[0] = P;
	st.hold = true;
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, P);
	c0 = pvpmu_pmi_count();
	/* No printing while the I/O counter counts: each printed line is a port write too. */
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(P);
	c1 = pvpmu_pmi_count() - c0;
	cfg = rdmsr(PV_PMU_MSR_PMI_CFG);
	pvpmu_io_exits(2 * P);
	c2 = pvpmu_pmi_count() - c0;
	s = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	pvpmu_pmi_unmask();
	c3 = pvpmu_pmi_count() - c0;
	cfg2 = rdmsr(PV_PMU_MSR_PMI_CFG);
	pvpmu_io_exits(P);
	c4 = pvpmu_pmi_count() - c0;
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(c1 == 1, "first PMI after %u writes (%lu)", P, c1);
	report(cfg & PV_PMU_PMI_MASK, "the VMM set PMI_CFG.MASK (0x%lx), the handler left it", cfg);
	report(c2 == 1, "masked: a second overflow raises no PMI (%lu)", c2);
	report(s & 1, "masked: the overflow is pending in GLOBAL_STATUS (0x%lx)", s);
	report(c3 == 2, "clearing MASK delivers the pending PMI (%lu)", c3);
	report(st.nlog >= 2 && log_is(1, 1, 1), "the delivered PMI saw status bit 0");
	report(!(cfg2 & PV_PMU_PMI_MASK), "the handler re-armed: PMI_CFG 0x%lx", cfg2);
	report(c4 == 3, "and the next overflow raises a PMI again (%lu)", c4);
}

/* rt_wait_irq condition: the PMI handler ran `arg` more times since pmis_base. */
static uint64_t pmis_base;
static bool pmis_arrived(void *arg)
{
	return pvpmu_pmi_count() - pmis_base >= (uint64_t)(uintptr_t)arg;
}

static void vector_mode(void)
{
	uint64_t c0;

	fresh();
	report(pvpmu_pmi_install(PMI_VECTOR, on_pmi, NULL) == RT_NO_FAULT, "PMI as vector 0x%x", PMI_VECTOR);
	report(rdmsr(PV_PMU_MSR_PMI_CFG) == (PV_PMU_PMI_MODE_VECTOR | PMI_VECTOR), "PMI_CFG reads 0x%lx",
	       rdmsr(PV_PMU_MSR_PMI_CFG));
	st.period[0] = P;
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, P);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	asm volatile("sti" ::: "memory");
	pvpmu_io_exits(N * P);
	pmis_base = c0;
	rt_wait_irq(pmis_arrived, (void *)(uintptr_t)N, 100000);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(pvpmu_pmi_count() - c0 == N, "vector mode: %u x %u port writes: %lu interrupts (want %u)", N,
	       P, pvpmu_pmi_count() - c0, N);
	report(st.nlog == N && log_is(0, N, 1), "every vector PMI saw status bit 0");
	/* Masked interrupts: the IRR holds it until sti. */
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, P);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(P);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(pvpmu_pmi_count() == c0, "with interrupts off the vector waits");
	/* Bounded wait, not a fixed count of instructions: kvm_pvm delivers after sti late. */
	pmis_base = c0;
	rt_wait_irq(pmis_arrived, (void *)1, 100000);
	report(pvpmu_pmi_count() - c0 == 1, "interrupts on: it arrives (%lu)", pvpmu_pmi_count() - c0);
	pvpmu_pmi_remove();
	report(pvpmu_pmi_install(VEC_NMI, on_pmi, NULL) == RT_NO_FAULT, "back to NMI mode");
}

static void task_clock(void)
{
	uint64_t period = cmdline_get_u64("period_ns", 1000000), ms = cmdline_get_u64("ms", 50);
	uint64_t c0, r1, r2, pmis, expect, t0, t1;

	fresh();
	if (!pvpmu_event_can_sample(PV_PMU_EV_TASK_CLOCK)) {
		report(false, "task-clock can sample");
		return;
	}
	st.period[0] = period;
	report(pvpmu_program(0, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, period) ==
		       RT_NO_FAULT,
	       "task-clock with INT, period %lu ns", period);
	pvpmu_program(1, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_EN, 0);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 3);
	t0 = rdtsc();
	r1 = pvpmu_read(1);
	rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(ms * 1000));
	r2 = pvpmu_read(1);
	t1 = rdtsc();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	pmis = pvpmu_pmi_count() - c0;
	expect = (r2 - r1) / period;
	printf("pmu-overflow: task-clock %lu us (TSC %lu us), %lu PMIs, statuses seen 0x%lx\n",
	       (r2 - r1) / 1000, tsc_to_us(t1 - t0), pmis, pvpmu_pmi_status_seen());
	report(pmis >= 2 && pmis * 4 >= expect && pmis <= expect + 2,
	       "task-clock PMIs over a %lu ms ring-3 loop: %lu, task-clock says %lu periods (want 25%%..100%%+2)",
	       ms, pmis, expect);
	report(st.nlog == pmis && log_is(0, st.nlog < LOG_MAX ? st.nlog : LOG_MAX, 1),
	       "task-clock PMIs saw status bit 0 only");
}

/* A host counter near its wrap: the sampling period is clamped to the minimum, one PMI. */
static void min_period(void)
{
	uint64_t c0, pmis, v;

	fresh();
	pvpmu_program(0, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, 44);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(30000));
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	pmis = pvpmu_pmi_count() - c0;
	v = pvpmu_read(0);
	report(pmis == 1 && log_is(0, 1, 1),
	       "task-clock 44 ns before the wrap (period clamped to %u ns): %lu PMI, then counts on (%lu ns)",
	       info.min_period_ns, pmis, v);

	/*
	 * Every counter at once: each overflows once; PMIs may combine several
	 * bits. Opt-in (cmdline stress): on the emulated test host this has
	 * wedged the host kernel (a storm of perf hrtimer signals).
	 */
	if (!cmdline_has("stress"))
		return;
	fresh();
	for (uint32_t i = 0; i < info.nr_counters; i++)
		pvpmu_program(i, PV_PMU_EV_TASK_CLOCK, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, 44 + i);
	c0 = pvpmu_pmi_count();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, (1ULL << info.nr_counters) - 1);
	rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(30000));
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	pmis = pvpmu_pmi_count() - c0;
	v = pvpmu_pmi_status_seen() | rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	report(pmis >= 1 && pmis <= info.nr_counters && v == (1ULL << info.nr_counters) - 1,
	       "%u task-clock counters at the minimum period: %lu PMIs, status bits seen 0x%lx",
	       info.nr_counters, pmis, v);
	pvpmu_reset();
}

static void throttle(void)
{
	const uint32_t writes = 400;
	uint64_t c0, t0, t1, pmis, seen, allowed;

	fresh();
	st.period[0] = 1;
	pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN, 1);
	c0 = pvpmu_pmi_count();
	t0 = rdtsc();
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(writes);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	t1 = rdtsc();
	pmis = pvpmu_pmi_count() - c0;
	seen = pvpmu_pmi_status_seen() | rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	/* Burst 100 (spec), then max_pmi_rate per second; +2 for rounding at both ends. */
	allowed = 100 + info.max_pmi_rate * tsc_to_us(t1 - t0) / 1000000 + 2;
	printf("pmu-overflow: period 1 over %u writes in %lu us: %lu PMIs, status seen 0x%lx, cap allows %lu\n",
	       writes, tsc_to_us(t1 - t0), pmis, seen, allowed);
	report(pmis <= writes && pmis <= allowed, "PMI rate cap: %lu PMIs <= %lu", pmis, allowed);
	report(pmis == writes || (seen & PV_PMU_STATUS_THROTTLED),
	       "fewer PMIs than overflows only with STATUS.THROTTLED (%lu of %u)", pmis, writes);
	/* Let the bucket refill and a pending PMI drain before anything else. */
	rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(200000));
	wrmsr(PV_PMU_MSR_NOP, 0);
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, PV_PMU_STATUS_THROTTLED | 1);
}

int main(const struct pv_bootinfo *bi)
{
	(void)bi;
	P = (uint32_t)cmdline_get_u64("p", 50);
	N = (uint32_t)cmdline_get_u64("n", 4);
	if (P < 2)
		P = 2;
	if (N > LOG_MAX)
		N = LOG_MAX;
	if (!pvpmu_test_init(&info))
		return report_summary();
	pvpmu_reset();
	if (cmdline_has("only")) {
		/* only=NAME: one group, for debugging. */
		const char *o = cmdline_get("only");

		pvpmu_pmi_install(VEC_NMI, on_pmi, NULL);
		if (!strcmp(o, "minperiod"))
			min_period();
		else if (!strcmp(o, "throttle"))
			throttle();
		else if (!strcmp(o, "taskclock"))
			task_clock();
		return report_summary();
	}
	no_int();
	nmi_mode();
	mask_protocol();
	vector_mode();
	task_clock();
	min_period();
	throttle();
	pvpmu_reset();
	pvpmu_pmi_remove();
	return report_summary();
}
