/* SPDX-License-Identifier: MIT */
/*
 * ring3-compute: a CPU-bound loop in ring 3 (a 64-bit LCG, one multiply
 * and one add per step, ~4 cycles), timed with the TSC. The result is
 * checked against the LCG's jump-ahead formula, computed in O(log n) in
 * ring 0. Command line: iters=N (default 200M, ~0.3 s natively).
 */
#include "guest.h"

#define LCG_A 6364136223846793005ULL /* Knuth's MMIX constants */
#define LCG_C 1442695040888963407ULL
#define DEFAULT_ITERS 200000000ULL

struct job {
	uint64_t iters, seed;
	uint64_t result, t0, t1; /* written in ring 3 */
};

static long lcg_run(void *p)
{
	struct job *j = p;
	uint64_t x = j->seed;
	uint64_t t0 = rdtsc();

	for (uint64_t i = 0; i < j->iters; i++) {
		x = x * LCG_A + LCG_C;
		/* Keep gcc from folding or unrolling the chain into something else. */
		asm volatile("" : "+r"(x));
	}
	j->t1 = rdtsc();
	j->t0 = t0;
	j->result = x;
	return 0;
}

/* x_n = A^n x_0 + C (A^(n-1) + ... + 1), by square-and-multiply. */
static uint64_t lcg_skip(uint64_t x, uint64_t n)
{
	uint64_t mul = 1, add = 0, a = LCG_A, c = LCG_C;

	for (; n; n >>= 1) {
		if (n & 1) {
			mul *= a;
			add = add * a + c;
		}
		c *= a + 1;
		a *= a;
	}
	return mul * x + add;
}

int main(const struct pv_bootinfo *bi)
{
	struct job j = { .iters = cmdline_get_u64("iters", DEFAULT_ITERS), .seed = 12345 };
	uint64_t want = lcg_skip(j.seed, j.iters);
	uint64_t cycles;
	long ret = -1;
	int v;

	(void)bi;
	v = rt_run_user(lcg_run, &j, &ret, NULL);
	report(v == RT_NO_FAULT && ret == 0, "ring 3 loop ran (%s)",
	       v == RT_NO_FAULT ? "returned" : rt_vector_name((uint32_t)v));
	cycles = j.t1 - j.t0;
	if (tsc_khz())
		printf("ring3-compute: %lu iterations in %lu TSC cycles = %lu us (%lu.%02lu "
		       "cycles/iteration)\n",
		       j.iters, cycles, tsc_to_us(cycles), j.iters ? cycles / j.iters : 0,
		       j.iters ? cycles * 100 / j.iters % 100 : 0);
	else
		printf("ring3-compute: %lu iterations in %lu TSC cycles (TSC frequency unknown)\n", j.iters,
		       cycles);
	report(j.result == want, "result 0x%016lx (want 0x%016lx)", j.result, want);
	return report_summary();
}
