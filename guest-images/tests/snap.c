/* SPDX-License-Identifier: MIT */
/*
 * snap: a guest that keeps counting while the harness snapshots and
 * restores it, and checks afterwards that nothing reset and nothing was
 * counted twice. Each CPU runs phases: ring-3 work (a 64-bit LCG, or a
 * ring-0 spin with where=ring0), then K port writes; around the writes it
 * reads its PV PMU counters (exits.io, all exits, task-clock) and checks
 * the deltas are exact (K, K + 3) and task-clock only grows. At the end
 * the LCG state must equal the jump-ahead formula over all steps done, so
 * guest memory and registers survived too. cmdline: phases=N (8), k=K
 * (100), work_ms=M (150), where=ring3|ring0, aps=run|halt|late (run: every
 * CPU runs phases; halt: the APs wait in hlt until the end; late: the APs
 * are started only after the last phase, so they wait for SIPI meanwhile).
 * dirty=MIB: the ring-3 work also writes a page of its own MIB of RAM
 * every 64 steps (or dirty_rate=P pages per ms), each write a value
 * that names the CPU, the page and how often it was written; at the end
 * every page must hold its last value (a migration copied what changed).
 * On every CPU each TSC read must be at least the one before it (a
 * snapshot or a migration continues the TSC; it never goes back).
 */
#include "guest.h"

#define CTR_IO 0
#define CTR_EXITS 1
#define CTR_TASK 2
#define LCG_A 6364136223846793005ULL
#define LCG_C 1442695040888963407ULL
#define SEED 0x5eedULL
#define HALT_WAKE_VECTOR 0x2a

static uint32_t phases, k, work_ms;
static bool ring0_work;
static struct pvpmu_info info;

/* Per CPU: its LCG state, steps done, and what its checks found. */
static struct cpu_state {
	uint64_t x, steps;
	uint32_t bad_io, bad_exits, bad_task, phases_done;
	uint32_t tsc_back; /* times a TSC read was below the one before it on this CPU */
	uint64_t io_total, last_task, last_tsc;
	uint64_t dirty_written; /* dirty=: page writes so far; the next goes to page (this % dirty_pages) */
} cpus[PV_MAX_CPUS];

static uint32_t dirty_pages, dirty_rate; /* per CPU: its pages, and pages per ms (0: one per 64 steps) */
static uintptr_t dirty_base;

static volatile uint32_t halt_release;
static bool halted_ap[PV_MAX_CPUS]; /* aps=halt: this AP only sleeps */

/* What write number `gen` of page `page` of CPU `cpu` stores in the page's first word. */
static uint64_t dirty_value(uint32_t cpu, uint64_t page, uint64_t gen)
{
	return (gen + 1) * LCG_A ^ ((uint64_t)cpu << 48 | page);
}

static uint64_t *dirty_page(uint32_t cpu, uint64_t page)
{
	return (uint64_t *)(dirty_base + ((uint64_t)cpu * dirty_pages + page) * 4096);
}

/* Ring 3: this CPU's next page write (its first and last word). */
static void dirty_one(uint32_t cpu, struct cpu_state *c)
{
	uint64_t page = c->dirty_written % dirty_pages,
		 v = dirty_value(cpu, page, c->dirty_written / dirty_pages);
	uint64_t *p = dirty_page(cpu, page);

	p[0] = v;
	p[511] = ~v;
	c->dirty_written++;
}

/* The TSC now, counted in tsc_back if it is below this CPU's last read. */
static uint64_t rdtsc_checked(struct cpu_state *c)
{
	uint64_t now = rdtsc();

	c->tsc_back += now < c->last_tsc;
	return now;
}

/* Ring 3: step this CPU's LCG until the TSC passes the deadline (and dirty its pages). */
static long lcg_until(void *arg)
{
	uint32_t cpu = smp_cpu_id();
	struct cpu_state *c = &cpus[cpu];
	uint64_t end = (uint64_t)(uintptr_t)arg, x = c->x, n = 0, t0 = rdtsc(), w0 = c->dirty_written;
	uint64_t per_page = dirty_rate ? (tsc_khz() ? tsc_khz() : 2000000) / dirty_rate : 0;

	for (uint64_t now = t0; now < end; now = rdtsc()) {
		c->tsc_back += now < c->last_tsc;
		c->last_tsc = now;
		for (int i = 0; i < 64; i++)
			x = x * LCG_A + LCG_C;
		n += 64;
		if (!dirty_pages)
			continue;
		if (!per_page)
			dirty_one(cpu, c);
		else
			while (c->dirty_written - w0 < (rdtsc() - t0) / (per_page ? per_page : 1))
				dirty_one(cpu, c);
	}
	c->x = x;
	c->steps += n;
	return (long)n;
}

/* x after n steps from seed, by squaring the affine map (a, c) -> (a*a, a*c + c). */
static uint64_t lcg_jump(uint64_t seed, uint64_t n)
{
	uint64_t a = LCG_A, c = LCG_C, ra = 1, rc = 0;

	for (; n; n >>= 1) {
		if (n & 1) {
			ra *= a;
			rc = rc * a + c;
		}
		c = (a + 1) * c;
		a *= a;
	}
	return ra * seed + rc;
}

static void work(void)
{
	uint64_t deadline = tsc_deadline_us((uint64_t)work_ms * 1000);

	if (!ring0_work) {
		rt_user_call(lcg_until, (void *)(uintptr_t)deadline);
		return;
	}
	while (rdtsc() < deadline)
		cpu_relax();
}

static void phase(uint32_t cpu, uint32_t p)
{
	struct cpu_state *c = &cpus[cpu];
	uint64_t e0, i0, i1, e1, t;

	(void)rdtsc_checked(c);
	work();
	e0 = pvpmu_read(CTR_EXITS);
	i0 = pvpmu_read(CTR_IO);
	pvpmu_io_exits(k);
	i1 = pvpmu_read(CTR_IO);
	e1 = pvpmu_read(CTR_EXITS);
	t = pvpmu_read(CTR_TASK);
	/* Exactly K I/O exits; all exits: the K, the two reads after them, plus a few at most. */
	c->bad_io += i1 - i0 != k;
	c->bad_exits += e1 - e0 < k + 3ULL || e1 - e0 > k + 3ULL + 5;
	c->bad_task += t <= c->last_task; /* the work ran on this vCPU's thread: task-clock moved */
	c->io_total += i1 - i0;
	c->last_task = t;
	c->last_tsc = rdtsc_checked(c);
	c->phases_done++;
	printf("snap: cpu %u phase %u/%u: exits.io +%lu, exits +%lu, task-clock %lu us, lcg steps %lu\n", cpu,
	       p, phases, i1 - i0, e1 - e0, t / 1000, c->steps);
}

static void program(void)
{
	pvpmu_reset();
	pvpmu_program(CTR_IO, PV_PMU_EV_EXITS_IO, PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN, 0);
	pvpmu_program(CTR_EXITS, PV_PMU_EV_EXITS, PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN, 0);
	pvpmu_program(CTR_TASK, PV_PMU_EV_TASK_CLOCK, PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN, 0);
	pvpmu_page_register();
	pvpmu_start((1u << CTR_IO) | (1u << CTR_EXITS) | (1u << CTR_TASK));
}

static void run_phases(uint32_t cpu, void *arg)
{
	(void)arg;
	cpus[cpu].x = SEED;
	program();
	for (uint32_t p = 1; p <= phases; p++)
		phase(cpu, p);
}

static bool released(void *arg)
{
	(void)arg;
	return __atomic_load_n(&halt_release, __ATOMIC_ACQUIRE) != 0;
}

static bool wake_handler(struct rt_regs *regs)
{
	(void)regs;
	apic_eoi();
	return true;
}

/* aps=halt: an AP that sleeps in hlt until CPU 0 has finished (it is halted at the snapshot). */
static void halt_until_released(uint32_t cpu, void *arg)
{
	(void)arg;
	halted_ap[cpu] = true;
	printf("snap: cpu %u halts until the end\n", cpu);
	while (!released(NULL))
		rt_wait_irq(released, NULL, 1000000);
	cpus[cpu].phases_done = phases; /* nothing to check but that it woke */
}

static void check(uint32_t cpu)
{
	const struct cpu_state *c = &cpus[cpu];

	report(c->phases_done == phases, "cpu %u: %u of %u phases", cpu, c->phases_done, phases);
	if (halted_ap[cpu])
		return; /* it only had to sleep through the snapshot and wake up */
	report(c->bad_io == 0 && c->io_total == (uint64_t)k * phases,
	       "cpu %u: exits.io counted exactly %u per phase, %lu in all (want %lu)", cpu, k, c->io_total,
	       (uint64_t)k * phases);
	report(c->bad_exits == 0, "cpu %u: all exits counted exactly (%u bad phases)", cpu, c->bad_exits);
	report(c->bad_task == 0, "cpu %u: task-clock grew every phase (%u bad phases), %lu us", cpu,
	       c->bad_task, c->last_task / 1000);
	report(c->tsc_back == 0, "cpu %u: its TSC never went back (%u reads below the one before)", cpu,
	       c->tsc_back);
	if (dirty_pages) {
		uint64_t bad = 0, full = c->dirty_written / dirty_pages,
			 part = c->dirty_written % dirty_pages;

		for (uint64_t pg = 0; pg < dirty_pages; pg++) {
			uint64_t gens = full + (pg < part), *p = dirty_page(cpu, pg);
			uint64_t want = gens ? dirty_value(cpu, pg, gens - 1) : 0;

			bad += p[0] != want || p[511] != (gens ? ~want : 0);
		}
		report(bad == 0,
		       "cpu %u: its %u dirtied pages hold their last writes (%lu writes, %lu pages wrong)",
		       cpu, dirty_pages, c->dirty_written, bad);
	}
	if (!ring0_work)
		report(c->x == lcg_jump(SEED, c->steps),
		       "cpu %u: LCG state after %lu ring-3 steps matches the jump-ahead formula", cpu,
		       c->steps);
}

extern char _end[]; /* guest.ld */

/* Ring 3: a pattern over [arg, end of RAM), one 64-bit store per word. */
static long fill_ram(void *arg)
{
	uint64_t *p = arg, *end = (uint64_t *)(uintptr_t)rt_mem_size();

	for (uint64_t i = 0; p < end; p++, i++)
		*p = i * LCG_A;
	return 0;
}

int main(const struct pv_bootinfo *bi)
{
	const char *aps = cmdline_get("aps") ? cmdline_get("aps") : "run";
	uint32_t n = rt_nr_cpus();

	(void)bi;
	phases = (uint32_t)cmdline_get_u64("phases", 8);
	k = (uint32_t)cmdline_get_u64("k", 100);
	work_ms = (uint32_t)cmdline_get_u64("work_ms", 150);
	ring0_work = cmdline_get("where") && !strcmp(cmdline_get("where"), "ring0");
	if (!pvpmu_test_init(&info))
		return report_summary();
	if (cmdline_has("fill")) {
		uintptr_t from = ((uintptr_t)_end + 4095) & ~(uintptr_t)4095;

		rt_user_call(fill_ram, (void *)from);
		printf("snap: filled %lu MiB of RAM\n", (rt_mem_size() - from) >> 20);
	}
	dirty_pages = (uint32_t)(cmdline_get_u64("dirty", 0) << 8); /* MiB: 256 pages each */
	dirty_rate = (uint32_t)cmdline_get_u64("dirty_rate", 0);
	if (dirty_pages) {
		dirty_base = ((uintptr_t)_end + 4095) & ~(uintptr_t)4095;
		if (dirty_base + (uint64_t)n * dirty_pages * 4096 > rt_mem_size()) {
			report(false, "dirty=%u MiB for %u CPUs does not fit in RAM", dirty_pages >> 8, n);
			return report_summary();
		}
		if (dirty_rate)
			printf("snap: each CPU dirties %u MiB, %u pages per ms\n", dirty_pages >> 8,
			       dirty_rate);
		else
			printf("snap: each CPU dirties %u MiB, a page per 64 steps\n", dirty_pages >> 8);
	}
	printf("snap: %u CPUs, %u phases of %u ms (%s) and %u port writes, APs: %s\n", n, phases, work_ms,
	       ring0_work ? "ring 0" : "ring 3", k, aps);
	if (n > 1 && !strcmp(aps, "run")) {
		smp_start_aps(run_phases, NULL);
	} else if (n > 1 && !strcmp(aps, "halt")) {
		rt_set_handler(HALT_WAKE_VECTOR, wake_handler);
		smp_start_aps(halt_until_released, NULL);
	}
	run_phases(0, NULL);
	if (n > 1 && !strcmp(aps, "halt")) {
		__atomic_store_n(&halt_release, 1, __ATOMIC_RELEASE);
		for (uint32_t i = 1; i < n; i++)
			apic_send_fixed(smp_apic_id(i), HALT_WAKE_VECTOR);
	} else if (n > 1 && !strcmp(aps, "late")) {
		printf("snap: starting the APs only now\n");
		report(smp_start_aps(run_phases, NULL) == n - 1, "late APs started after the last phase");
	}
	report(n == 1 || smp_wait_aps(600000) == 0, "every AP finished");
	for (uint32_t i = 0; i < n; i++)
		check(i);
	printf("snap: done\n");
	return report_summary();
}
