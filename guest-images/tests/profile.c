/* SPDX-License-Identifier: MIT */
/*
 * profile: a workload with known proportions for the host-side profiler
 * (docs/profiling.md, tests/integration/tests.sh). Each CPU runs rounds in
 * ring 3 for ms= milliseconds of TSC time (default 1000); a round is
 * hot_a then hot_b, with three times the work in hot_a on even CPUs and
 * three times the work in hot_b on odd ones. Then each CPU spins in ring 0
 * (ring0_spin) for r0ms= milliseconds (default 200). Frame pointers are on
 * (guests.mk), so a sample's stack is user_main;work_round;hot_a.
 */
#include "guest.h"

#define LCG_A 6364136223846793005ULL
#define LCG_C 1442695040888963407ULL
#define UNIT 20000ULL /* LCG steps of the lighter function per round, at least */

#define __hot_fn __attribute__((noinline, noipa))

struct job {
	uint64_t deadline; /* TSC */
	uint64_t a_units, b_units;
	uint64_t rounds, x; /* written in ring 3 */
};

static struct job jobs[PV_MAX_CPUS];

/*
 * n LCG steps, inlined into each hot function (so each is one leaf with
 * its own copy of the loop). The stack slot makes gcc 12 give the leaf a
 * frame pointer, which it omits in leaves without one.
 */
static inline __attribute__((always_inline)) uint64_t lcg_steps(uint64_t x, uint64_t n)
{
	volatile uint64_t frame = n;

	for (uint64_t i = 0; i < frame; i++) {
		x = x * LCG_A + LCG_C;
		asm volatile("" : "+r"(x));
	}
	return x;
}

__hot_fn uint64_t hot_a(uint64_t x, uint64_t n)
{
	return lcg_steps(x, n);
}

__hot_fn uint64_t hot_b(uint64_t x, uint64_t n)
{
	return lcg_steps(x, n);
}

/*
 * One round: its length varies, UNIT to 2 * UNIT steps per unit (from the
 * LCG's top bits), so that rounds cannot lock in phase with a fixed
 * sampling period (a 1 ms period that is exactly two rounds would see the
 * same point of every round); the a:b ratio of each round stays exact.
 */
__hot_fn uint64_t work_round(struct job *j, uint64_t x)
{
	uint64_t n = UNIT + (x >> 40) % UNIT;

	x = hot_a(x, j->a_units * n);
	return hot_b(x, j->b_units * n);
}

__hot_fn long user_main(void *p)
{
	struct job *j = p;
	uint64_t x = 1;

	do {
		x = work_round(j, x);
		j->rounds++;
	} while (rdtsc() < j->deadline);
	j->x = x;
	return 0;
}

/* Ring 0 (emulated, ~1 us an instruction, on kvm_pvm): a short bounded spin. */
__hot_fn void ring0_spin(uint64_t deadline)
{
	while (rdtsc() < deadline)
		cpu_relax();
}

static void run(uint32_t cpu, void *arg)
{
	struct job *j = &jobs[cpu];
	uint64_t ms = cmdline_get_u64("ms", 1000), r0ms = cmdline_get_u64("r0ms", 200);
	long ret = -1;

	(void)arg;
	j->a_units = cpu % 2 ? 1 : 3;
	j->b_units = cpu % 2 ? 3 : 1;
	j->deadline = tsc_deadline_us(ms * 1000);
	if (rt_run_user(user_main, j, &ret, NULL) != RT_NO_FAULT || ret)
		j->rounds = 0;
	ring0_spin(tsc_deadline_us(r0ms * 1000));
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t n = rt_nr_cpus(), started = 0;

	(void)bi;
	if (n > 1)
		started = smp_start_aps(run, NULL);
	run(0, NULL);
	if (n > 1)
		report(started == n - 1 && smp_wait_aps(120000) == 0, "%u APs ran the workload", started);
	for (uint32_t c = 0; c < n; c++) {
		printf("profile: cpu %u: %lu rounds, hot_a:hot_b work %lu:%lu\n", c, jobs[c].rounds,
		       jobs[c].a_units, jobs[c].b_units);
		report(jobs[c].rounds > 0, "cpu %u ran its rounds in ring 3", c);
	}
	return report_summary();
}
