/* SPDX-License-Identifier: MIT */
/*
 * demo: the guest `make run` boots. Every CPU runs the same ring-3 hash
 * loop (FNV-1a over a counter) and measures itself with perfvisor's PV PMU
 * (docs/pvpmu.md): time on the vCPU thread, the VM exits it caused by kind,
 * time inside KVM_RUN, host context switches. The BSP prints one table row
 * per CPU and checks that all CPUs computed the same hash.
 * Command line: iters=N per CPU (default 50M).
 */
#include "guest.h"

#define DEFAULT_ITERS 50000000ULL
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define COUNT_ALL (PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN)

/* What each CPU counts: counter i counts events[i]. */
static const struct {
	uint32_t id;
	const char *title;
	bool ns; /* print in microseconds */
} events[] = {
	{ PV_PMU_EV_TASK_CLOCK, "task-clock us", true },
	{ PV_PMU_EV_EXITS, "exits", false },
	{ PV_PMU_EV_EXITS_IO, "io", false },
	{ PV_PMU_EV_EXITS_MMIO, "mmio", false },
	{ PV_PMU_EV_EXITS_MSR, "msr", false },
	{ PV_PMU_EV_EXITS_INTR, "intr", false },
	{ PV_PMU_EV_KVM_RUN_NS, "kvm_run us", true },
	{ PV_PMU_EV_CONTEXT_SWITCHES, "ctx-sw", false },
};
#define NR_EVENTS ARRAY_SIZE(events)

struct work {
	uint64_t iters;
	uint64_t hash, t0, t1; /* written in ring 3 */
	int fault;	       /* RT_NO_FAULT or the vector */
	uint32_t counting;     /* bit i: counter i was accepted */
	uint64_t count[NR_EVENTS];
} __attribute__((aligned(64)));

static struct work work[PV_MAX_CPUS];
static bool have_pmu;

static long hash_loop(void *p)
{
	struct work *w = p;
	uint64_t h = FNV_OFFSET;
	uint64_t t0 = rdtsc();

	for (uint64_t i = 0; i < w->iters; i++) {
		h ^= i & 0xff;
		h *= FNV_PRIME;
	}
	w->t1 = rdtsc();
	w->t0 = t0;
	w->hash = h;
	return 0;
}

static void run(uint32_t cpu, void *arg)
{
	struct work *w = &work[cpu];
	uint64_t mask = 0;

	(void)arg;
	for (uint32_t i = 0; have_pmu && i < NR_EVENTS; i++) {
		if (!pvpmu_event_available(events[i].id) ||
		    pvpmu_program(i, events[i].id, COUNT_ALL, 0) != RT_NO_FAULT)
			continue;
		mask |= 1ULL << i;
	}
	w->counting = (uint32_t)mask;
	if (mask)
		pvpmu_start(mask);
	w->fault = rt_run_user(hash_loop, w, NULL, NULL);
	if (mask)
		pvpmu_stop(mask);
	for (uint32_t i = 0; i < NR_EVENTS; i++)
		if (mask >> i & 1)
			w->count[i] = pvpmu_read(i);
}

static int col_width(uint32_t i)
{
	int w = (int)strlen(events[i].title);

	return w < 8 ? 8 : w;
}

static void print_row(uint32_t cpu)
{
	struct work *w = &work[cpu];
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "%4u %10lu %8lu", cpu, w->iters, tsc_to_us(w->t1 - w->t0));
	for (uint32_t i = 0; i < NR_EVENTS; i++) {
		uint64_t v = events[i].ns ? w->count[i] / 1000 : w->count[i];

		if (w->counting >> i & 1)
			n += snprintf(line + n, sizeof(line) - (size_t)n, " %*lu", col_width(i), v);
		else
			n += snprintf(line + n, sizeof(line) - (size_t)n, " %*s", col_width(i), "n/a");
	}
	printf("%s\n", line);
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t n = rt_nr_cpus();
	uint64_t iters = cmdline_get_u64("iters", DEFAULT_ITERS);
	struct pvpmu_info info;
	uint32_t started, agree = 0;

	(void)bi;
	have_pmu = pvpmu_init(&info);
	for (uint32_t i = 0; i < n; i++)
		work[i].iters = iters;
	printf("demo: %u CPUs, %lu hash iterations each in ring 3\n", n, iters);
	if (have_pmu)
		printf("demo: PV PMU version %u, %u counters of %u bits, %u events; measuring each CPU\n",
		       info.version, info.nr_counters, info.width, info.nr_events);
	else
		printf("demo: no PV PMU (perfvisor --pmu off?): timing with the TSC only\n");
	started = smp_start_aps(run, NULL);
	run(0, NULL);
	report(started == n - 1 && smp_wait_aps(120000) == 0, "%u APs ran the workload", started);

	printf("%4s %10s %8s", "cpu", "iterations", "tsc us");
	for (uint32_t i = 0; i < NR_EVENTS; i++)
		printf(" %*s", col_width(i), events[i].title);
	printf("\n");
	for (uint32_t i = 0; i < n; i++) {
		struct work *w = &work[i];

		if (w->fault != RT_NO_FAULT || !w->t1) {
			printf("%4u %10s\n", i,
			       w->fault != RT_NO_FAULT ? rt_vector_name((uint32_t)w->fault)
						       : "(did not run)");
			continue;
		}
		print_row(i);
		agree += w->hash == work[0].hash;
	}
	if (!tsc_khz())
		printf("(TSC frequency unknown: us assume 2 GHz)\n");
	printf("(task-clock and ctx-sw are host counts of the vCPU thread; exits, kvm_run are perfvisor's exact counts)\n");
	report(agree == n, "%u of %u CPUs computed hash 0x%016lx", agree, n, work[0].hash);
	if (have_pmu) {
		uint32_t ok = 0;

		for (uint32_t i = 0; i < n; i++)
			ok += (work[i].counting & 0x7e) == 0x7e && work[i].count[1] > 0;
		report(ok == n, "%u of %u CPUs counted their exits with the PV PMU", ok, n);
	}
	return report_summary();
}
