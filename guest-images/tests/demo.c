/* SPDX-License-Identifier: MIT */
/*
 * demo: the guest `make run` boots. Every CPU runs the same ring-3 hash
 * loop (FNV-1a over a counter) and times it with the TSC; the BSP prints a
 * per-CPU table and checks that all CPUs computed the same hash.
 * Command line: iters=N per CPU (default 50M).
 */
#include "guest.h"

#define DEFAULT_ITERS 50000000ULL
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

struct work {
	uint64_t iters;
	uint64_t hash, t0, t1; /* written in ring 3 */
	int fault;	       /* RT_NO_FAULT or the vector */
} __attribute__((aligned(64)));

static struct work work[PV_MAX_CPUS];

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
	(void)arg;
	work[cpu].fault = rt_run_user(hash_loop, &work[cpu], NULL, NULL);
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t n = rt_nr_cpus();
	uint64_t iters = cmdline_get_u64("iters", DEFAULT_ITERS);
	uint32_t started, agree = 0;

	(void)bi;
	for (uint32_t i = 0; i < n; i++)
		work[i].iters = iters;
	printf("demo: %u CPUs, %lu hash iterations each in ring 3\n", n, iters);
	started = smp_start_aps(run, NULL);
	run(0, NULL);
	report(started == n - 1 && smp_wait_aps(120000) == 0, "%u APs ran the workload", started);

	printf("%4s %8s %12s %14s %10s %8s\n", "cpu", "apic id", "iterations", "cycles", "us", "cyc/it");
	for (uint32_t i = 0; i < n; i++) {
		struct work *w = &work[i];
		uint64_t cycles = w->t1 - w->t0;

		if (w->fault != RT_NO_FAULT || !w->t1) {
			printf("%4u %8u %12s\n", i, smp_apic_id(i),
			       w->fault != RT_NO_FAULT ? rt_vector_name((uint32_t)w->fault)
						       : "(did not run)");
			continue;
		}
		printf("%4u %8u %12lu %14lu %10lu %8lu\n", i, smp_apic_id(i), w->iters, cycles,
		       tsc_to_us(cycles), iters ? cycles / iters : 0);
		agree += w->hash == work[0].hash;
	}
	if (!tsc_khz())
		printf("(TSC frequency unknown: us assume 2 GHz)\n");
	report(agree == n, "%u of %u CPUs computed hash 0x%016lx", agree, n, work[0].hash);
	return report_summary();
}
