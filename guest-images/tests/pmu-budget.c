/* SPDX-License-Identifier: MIT */
/*
 * pmu-budget: the per-VM budget of host counters (CPUID 0x40000102 EDX).
 * Every CPU enables all its counters on task-clock (a host perf event
 * each); the VM as a whole asks for nr_cpus * nr_counters of them. Exactly
 * the ones beyond the budget must be refused softly, through the ERROR
 * register (never a #GP); once the CPUs release theirs, a CPU gets its
 * counters back and ERROR clears. Run it with enough CPUs to exceed the
 * budget (9 CPUs x 8 counters > 64). With `host_failures` (perfvisor run
 * under a low file-descriptor limit) some perf_event_open calls fail
 * instead: those counters must get ERROR bits too, and nothing else break.
 */
#include "guest.h"

#define COUNT_ALL (PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN)

static struct pvpmu_info info;
static uint64_t error[PV_MAX_CPUS];
static int fault[PV_MAX_CPUS];

static uint64_t all_counters(void)
{
	return info.nr_counters >= 64 ? ~0ULL : (1ULL << info.nr_counters) - 1;
}

static void grab(uint32_t cpu, void *arg)
{
	(void)arg;
	fault[cpu] = RT_NO_FAULT;
	for (uint32_t i = 0; i < info.nr_counters && fault[cpu] == RT_NO_FAULT; i++)
		fault[cpu] = pvpmu_program(i, PV_PMU_EV_TASK_CLOCK, COUNT_ALL, 0);
	pvpmu_start(all_counters());
	error[cpu] = rdmsr(PV_PMU_MSR_ERROR);
}

static void release(uint32_t cpu, void *arg)
{
	(void)cpu;
	(void)arg;
	pvpmu_reset();
}

static uint32_t popcount(uint64_t v)
{
	uint32_t n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t n = rt_nr_cpus(), refused = 0, faults = 0, want;
	uint64_t asked;

	(void)bi;
	if (!pvpmu_test_init(&info))
		return report_summary();
	if (!pvpmu_event_available(PV_PMU_EV_TASK_CLOCK)) {
		report_skip(
			"task-clock is not available on this host (perf_event_paranoid?): no host counters");
		return report_summary();
	}
	asked = (uint64_t)n * info.nr_counters;
	want = asked > info.host_counters ? (uint32_t)(asked - info.host_counters) : 0;
	printf("pmu-budget: %u CPUs x %u counters = %lu host counters asked, budget %u\n", n,
	       info.nr_counters, asked, info.host_counters);

	report(smp_start_aps(grab, NULL) == n - 1, "all APs started");
	grab(0, NULL);
	report(smp_wait_aps(60000) == 0, "all CPUs programmed their counters");
	for (uint32_t c = 0; c < n; c++) {
		refused += popcount(error[c]);
		faults += fault[c] != RT_NO_FAULT;
	}
	report(faults == 0, "no CPU got a #GP for asking (%u did)", faults);
	if (cmdline_has("host_failures")) {
		uint64_t v;

		report(refused >= 1 && refused < asked,
		       "host failures: %u of %lu counters refused through ERROR", refused, asked);
		pvpmu_reset();
		report(pvpmu_program(0, PV_PMU_EV_EXITS_IO, COUNT_ALL, 0) == RT_NO_FAULT,
		       "program a VMM-kept event");
		pvpmu_start(1);
		pvpmu_io_exits(100);
		v = pvpmu_read(0);
		report(v == 100, "and it counts 100 port writes exactly: %lu", v);
		pvpmu_reset();
		return report_summary();
	}
	report(refused == want, "ERROR bits over all CPUs: %u, want %u (the counters beyond the budget)",
	       refused, want);
	if (!want)
		printf("pmu-budget: note: %u CPUs do not exceed the budget; run with more CPUs\n", n);

	/* Everyone gives their host counters back; then CPU 0 gets all of its own. */
	report(smp_start_aps(release, NULL) == n - 1 && smp_wait_aps(60000) == 0, "all APs released theirs");
	release(0, NULL);
	grab(0, NULL);
	report(error[0] == 0, "after the release, CPU 0's %u counters are all backed (ERROR 0x%lx)",
	       info.nr_counters, error[0]);
	report(pvpmu_read(0) > 0, "and count (task-clock %lu ns)", pvpmu_read(0));
	pvpmu_reset();
	return report_summary();
}
