// SPDX-License-Identifier: MIT
/*
 * pmu-bench: the PV PMU benchmark guest (bench/pmu.sh runs it for
 * `make bench`; docs/pvpmu.md is the ABI). Raw CPUID/RDMSR/WRMSR, no
 * driver. Measures with the TSC, in one run:
 *
 *  a. RDMSR of PV_PMU_MSR_CTR(0), counter 0 counting `exits`, against
 *  b. RDMSR of PV_PMU_MSR_NOP (the bare userspace MSR exit), interleaved in
 *     batches (alternating which goes first); the median of each;
 *  c. reading counter 0 from the shared counter page in ring 3 (seqlock),
 *     averaged over many reads;
 *  d. PMI latency: counter 0 on `exits.io` with INT and period 1; the TSC
 *     just before the OUTB that overflows it against the TSC at the start
 *     of the NMI handler (which includes the runtime's entry stub); paced
 *     below the PMI rate cap; median and p99;
 *  e. a ring-3 compute loop with no counter enabled, with 4 counting
 *     (task-clock, page-faults, context-switches, exits), and with the same
 *     4 and the counter page registered (refreshed every refresh_us).
 *
 * Without a PV PMU (perfvisor --pmu off) it only runs the loop (e), the
 * baseline. Command line: iters=N (loop iterations; absent: calibrate to
 * ~0.5 s and print BENCH workload_iters=N), reads=N (MSR reads of each kind,
 * default 400), page_reads=N (default 1M), pmis=N (default 200). Prints
 * `BENCH key=value ...` lines; times are in ns or us as their key says.
 */
#include "guest.h"
#include "perfvisor/pvpmu.h"

#define LCG_A 6364136223846793005ULL
#define LCG_C 1442695040888963407ULL
#define CALIBRATE_ITERS 2000000ULL
#define WORKLOAD_US 500000ULL
#define MAX_READS 2000u
#define BATCH 20u
#define MAX_PMIS 1000u
#define SCRATCH_PORT 0x3ff /* the UART's scratch register: an I/O exit that changes nothing */
#define NMI_VECTOR 2

static uint32_t nr_counters;
static uint64_t khz;

static uint64_t msr_cyc[MAX_READS], nop_cyc[MAX_READS], pmi_cyc[MAX_PMIS];
static uint8_t page_mem[4096] __attribute__((aligned(4096)));
static volatile uint64_t sink;

static volatile uint32_t nmi_count;
static volatile uint64_t nmi_tsc, nmi_status;

static void cpuid(uint32_t leaf, uint32_t r[4])
{
	asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0));
}

/* c / div * mul without overflowing for large c (mul * div must fit in 64 bits). */
static uint64_t scale(uint64_t c, uint64_t mul, uint64_t div)
{
	return c / div * mul + c % div * mul / div;
}

/* Prints v / 100 with two decimals. */
static void put_fixed(const char *key, uint64_t v100)
{
	printf(" %s=%lu.%02lu", key, v100 / 100, v100 % 100);
}

/* Whether the host can back event ev, and whether it can interrupt on overflow. */
static bool ev_avail(uint32_t ev)
{
	return (rdmsr(PV_PMU_MSR_AVAIL(ev / 64)) >> (ev % 64)) & 1;
}

static bool ev_can_sample(uint32_t ev)
{
	return (rdmsr(PV_PMU_MSR_SAMPLE(ev / 64)) >> (ev % 64)) & 1;
}

/* The PV PMU's counter count, or 0 without one (--pmu off, another VMM). */
static uint32_t pmu_detect(uint32_t *max_pmis)
{
	uint32_t r[4], n;

	cpuid(PV_PMU_CPUID_SIGNATURE, r);
	if (r[1] != PV_PMU_SIG_EBX || r[2] != PV_PMU_SIG_ECX || r[3] != PV_PMU_SIG_EDX ||
	    r[0] < PV_PMU_CPUID_LIMITS) {
		printf("pmu-bench: no PV PMU signature (cpuid 0x%x: %x %x %x %x)\n", PV_PMU_CPUID_SIGNATURE,
		       r[0], r[1], r[2], r[3]);
		return 0;
	}
	cpuid(PV_PMU_CPUID_INFO, r);
	if (PV_PMU_INFO_EAX_VERSION(r[0]) < 1 || r[1] != PV_PMU_MSR_BASE ||
	    PV_PMU_INFO_ECX_NR_EVENTS(r[2]) <= PV_PMU_EV_EXITS_MSR_WRITE || !(r[3] & PV_PMU_FEAT_PAGE) ||
	    !(r[3] & PV_PMU_FEAT_PMI_NMI)) {
		printf("pmu-bench: unusable PV PMU (cpuid 0x%x: %x %x %x %x)\n", PV_PMU_CPUID_INFO, r[0],
		       r[1], r[2], r[3]);
		return 0;
	}
	n = PV_PMU_INFO_EAX_NR_COUNTERS(r[0]);
	cpuid(PV_PMU_CPUID_LIMITS, r);
	*max_pmis = r[2];
	return n;
}

/* ---- ring 3 --------------------------------------------------------------- */

struct work {
	uint64_t iters, result, cycles;
};

static long work_user(void *p)
{
	struct work *w = p;
	uint64_t x = 12345, t0 = rdtsc();

	for (uint64_t i = 0; i < w->iters; i++) {
		x = x * LCG_A + LCG_C;
		asm volatile("" : "+r"(x));
	}
	w->cycles = rdtsc() - t0;
	w->result = x;
	return 0;
}

static uint64_t workload_us(uint64_t iters)
{
	struct work w = { .iters = iters };

	rt_user_call(work_user, &w);
	sink = w.result;
	return scale(w.cycles, 1000, khz);
}

struct sort_job {
	uint64_t *v;
	uint32_t n;
};

/* Shell sort, ascending (ring 3: the ring-0 loop would be emulated on kvm_pvm). */
static long sort_user(void *p)
{
	struct sort_job *j = p;
	static const uint32_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };

	for (uint32_t g = 0; g < ARRAY_SIZE(gaps); g++)
		for (uint32_t i = gaps[g]; i < j->n; i++) {
			uint64_t t = j->v[i];
			uint32_t k = i;

			for (; k >= gaps[g] && j->v[k - gaps[g]] > t; k -= gaps[g])
				j->v[k] = j->v[k - gaps[g]];
			j->v[k] = t;
		}
	return 0;
}

/* Sorts v and returns its percentile pct (nearest rank), 50 = median. */
static uint64_t percentile(uint64_t *v, uint32_t n, uint32_t pct)
{
	struct sort_job j = { .v = v, .n = n };
	uint32_t rank;

	if (!n)
		return 0;
	rt_user_call(sort_user, &j);
	rank = (n * pct + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

struct page_job {
	const struct pv_pmu_page *pg;
	uint64_t n, cycles, sum, busy;
};

static long page_user(void *p)
{
	struct page_job *j = p;
	const struct pv_pmu_page *pg = j->pg;
	uint64_t sum = 0, busy = 0, t0 = rdtsc();

	for (uint64_t i = 0; i < j->n; i++) {
		uint32_t tries;

		for (tries = 0; tries < 1000; tries++) {
			uint32_t s1 = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);
			uint64_t v;

			if (s1 & 1)
				continue;
			v = __atomic_load_n(&pg->counter[0].value, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&pg->seq, __ATOMIC_RELAXED) == s1) {
				sum += v;
				break;
			}
		}
		busy += tries == 1000;
	}
	j->cycles = rdtsc() - t0;
	j->sum = sum;
	j->busy = busy;
	return 0;
}

/* ---- ring 0 --------------------------------------------------------------- */

static void time_msr(uint64_t *cyc, uint32_t msr, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i++) {
		uint64_t t0 = rdtsc();

		sink = rdmsr(msr);
		cyc[i] = rdtsc() - t0;
	}
}

/* (a), (b): counter 0 counts exits while both kinds of read run. */
static void bench_msr(uint32_t reads)
{
	uint64_t before, after, msr_med, nop_med;

	wrmsr(PV_PMU_MSR_CFG(0), PV_PMU_EV_EXITS | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN);
	wrmsr(PV_PMU_MSR_CTR(0), 0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	before = rdmsr(PV_PMU_MSR_CTR(0));
	time_msr(msr_cyc, PV_PMU_MSR_CTR(0), 0, BATCH); /* warm-up */
	time_msr(nop_cyc, PV_PMU_MSR_NOP, 0, BATCH);
	for (uint32_t i = 0; i < reads; i += BATCH) {
		uint32_t n = reads - i < BATCH ? reads - i : BATCH;

		if ((i / BATCH) % 2) {
			time_msr(nop_cyc, PV_PMU_MSR_NOP, i, n);
			time_msr(msr_cyc, PV_PMU_MSR_CTR(0), i, n);
		} else {
			time_msr(msr_cyc, PV_PMU_MSR_CTR(0), i, n);
			time_msr(nop_cyc, PV_PMU_MSR_NOP, i, n);
		}
	}
	after = rdmsr(PV_PMU_MSR_CTR(0));
	report(after - before >= 2 * (uint64_t)reads, "counter 0 counted the exits (%lu, at least %lu)",
	       after - before, 2 * (uint64_t)reads);
	msr_med = percentile(msr_cyc, reads, 50);
	nop_med = percentile(nop_cyc, reads, 50);
	printf("BENCH msr_reads=%u", reads);
	put_fixed("msr_read_ns", scale(msr_med, 100000000, khz));
	put_fixed("nop_exit_ns", scale(nop_med, 100000000, khz));
	printf("\n");
}

/* (c): counter 0 still counts exits; the page is registered by the caller. */
static void bench_page(const struct pv_pmu_page *pg, uint64_t reads)
{
	struct page_job j = { .pg = pg, .n = reads };
	uint64_t v;

	v = rdmsr(PV_PMU_MSR_CTR(0)); /* an exit: the page is updated after it */
	report(pg->version == PV_PMU_VERSION && pg->size >= sizeof(*pg) && pg->nr_counters == nr_counters &&
		       !(pg->seq & 1) && pg->updates > 0,
	       "counter page: version %u size %u counters %u seq %u updates %lu", pg->version, pg->size,
	       pg->nr_counters, pg->seq, pg->updates);
	report(pg->counter[0].value >= v && pg->counter[0].value - v <= 4,
	       "page counter 0 = %lu, CTR(0) read %lu just before", pg->counter[0].value, v);
	rt_user_call(page_user, &j);
	sink = j.sum;
	report(j.busy == 0, "page reads: none gave up (%lu did)", j.busy);
	printf("BENCH page_reads=%lu", reads);
	put_fixed("page_read_ns", scale(j.cycles, 100000000, khz) / reads);
	printf("\n");
}

static bool on_nmi(struct rt_regs *r)
{
	uint64_t t = rdtsc();
	uint64_t st = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);

	(void)r;
	nmi_tsc = t;
	nmi_status |= st;
	nmi_count = nmi_count + 1;
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, st);
	wrmsr(PV_PMU_MSR_PMI_CFG, 0); /* NMI mode, MASK clear: re-arm */
	return true;
}

/* (d) */
static void bench_pmi(uint32_t pmis, uint32_t max_pmis_per_s)
{
	uint64_t pace_us = max_pmis_per_s ? 1000000 / max_pmis_per_s + 250 : 1250;
	uint64_t valid = (1ULL << nr_counters) - 1;
	uint32_t got = 0, missed = 0, throttled = 0;

	if (!ev_avail(PV_PMU_EV_EXITS_IO) || !ev_can_sample(PV_PMU_EV_EXITS_IO)) {
		report_skip("PMI latency: exits.io cannot sample here");
		return;
	}
	rt_set_handler(NMI_VECTOR, on_nmi);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	wrmsr(PV_PMU_MSR_CFG(0),
	      PV_PMU_EV_EXITS_IO | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_INT | PV_PMU_CFG_EN);
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, rdmsr(PV_PMU_MSR_GLOBAL_STATUS) & (valid | PV_PMU_STATUS_THROTTLED));
	wrmsr(PV_PMU_MSR_PMI_CFG, 0);
	wrmsr(PV_PMU_MSR_CTR(0), PV_PMU_COUNTER_MASK);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	for (uint32_t k = 0; k < pmis; k++) {
		uint32_t before = nmi_count;
		uint64_t t0, deadline;

		nmi_status = 0;
		wrmsr(PV_PMU_MSR_CTR(0), PV_PMU_COUNTER_MASK); /* period 1 */
		t0 = rdtsc();
		outb(SCRATCH_PORT, (uint8_t)k);
		deadline = tsc_deadline_us(100000);
		while (nmi_count == before && rdtsc() < deadline)
			cpu_relax();
		if (nmi_count == before) {
			missed++;
			break; /* a late NMI would land in the next sample */
		}
		throttled += !!(nmi_status & PV_PMU_STATUS_THROTTLED);
		pmi_cyc[got++] = nmi_tsc - t0;
		udelay(pace_us); /* stay below the PMI rate cap */
	}
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	wrmsr(PV_PMU_MSR_CFG(0), 0);
	rt_set_handler(NMI_VECTOR, NULL);
	report(got == pmis && !missed, "PMIs: %u of %u arrived (%u throttled)", got, pmis, throttled);
	printf("BENCH pmis=%u pmi_missed=%u pmi_throttled=%u", got, missed, throttled);
	put_fixed("pmi_latency_median_us", scale(percentile(pmi_cyc, got, 50), 100000, khz));
	put_fixed("pmi_latency_p99_us", scale(percentile(pmi_cyc, got, 99), 100000, khz));
	printf("\n");
}

/* (e): the workload with the counters of `events` counting; their values in vals[]. */
static const uint32_t events[] = { PV_PMU_EV_TASK_CLOCK, PV_PMU_EV_PAGE_FAULTS, PV_PMU_EV_CONTEXT_SWITCHES,
				   PV_PMU_EV_EXITS };

static uint64_t counted_workload(uint64_t iters, uint32_t *nr, uint64_t *err, uint64_t vals[4])
{
	uint32_t n = 0;
	uint64_t us;

	for (uint32_t i = 0; i < ARRAY_SIZE(events) && n < nr_counters; i++) {
		if (!ev_avail(events[i]))
			continue;
		wrmsr(PV_PMU_MSR_CFG(n), events[i] | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN);
		wrmsr(PV_PMU_MSR_CTR(n), 0);
		n++;
	}
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, (1ULL << n) - 1);
	*err = rdmsr(PV_PMU_MSR_ERROR);
	us = workload_us(iters);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	for (uint32_t i = 0; i < 4; i++)
		vals[i] = 0;
	for (uint32_t i = 0; i < n; i++) {
		vals[i] = rdmsr(PV_PMU_MSR_CTR(i));
		wrmsr(PV_PMU_MSR_CFG(i), 0);
	}
	*nr = n;
	return us;
}

/*
 * (e): no counter; 4 counters without the page (no refresh exits); 4
 * counters with the page registered (refreshed every refresh_us while host
 * counters run). In the order A B C C B A, to cancel drift; each result is
 * the mean of its two runs.
 */
static void bench_workload(uint64_t iters, uint64_t page_msr)
{
	const struct pv_pmu_page *pg =
		(const struct pv_pmu_page *)(uintptr_t)(page_msr & PV_PMU_PAGE_ADDR_MASK);
	uint64_t us[3] = { 0 }, err = 0, e, vals[4], pvals[4], updates = 0, u0;
	uint32_t n = 0;

	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	for (uint32_t i = 0; i < nr_counters; i++)
		wrmsr(PV_PMU_MSR_CFG(i), 0);
	for (uint32_t k = 0; k < 6; k++) {
		uint32_t v = k < 3 ? k : 5 - k;

		wrmsr(PV_PMU_MSR_PAGE, v == 2 ? page_msr : 0);
		if (v == 0) {
			us[0] += workload_us(iters);
			continue;
		}
		u0 = pg->updates;
		us[v] += counted_workload(iters, &n, &e, v == 1 ? vals : pvals);
		err |= e;
		if (v == 2)
			updates += pg->updates - u0;
	}
	wrmsr(PV_PMU_MSR_PAGE, page_msr);
	report(n == ARRAY_SIZE(events) && !err, "workload: %u counters counting (error bits 0x%lx)", n, err);
	printf("BENCH workload_iters=%lu workload_idle_us=%lu workload_us=%lu workload_page_us=%lu "
	       "workload_counters=%u\n",
	       iters, us[0] / 2, us[1] / 2, us[2] / 2, n);
	printf("BENCH counted_task_clock_ns=%lu counted_page_faults=%lu counted_context_switches=%lu "
	       "counted_exits=%lu counted_exits_page=%lu page_updates=%lu\n",
	       vals[0], vals[1], vals[2], vals[3], pvals[3], updates / 2);
}

static uint64_t calibrate(void)
{
	uint64_t us = workload_us(CALIBRATE_ITERS);

	return us ? CALIBRATE_ITERS * WORKLOAD_US / us : CALIBRATE_ITERS * 100;
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t reads = (uint32_t)cmdline_get_u64("reads", 400);
	uint32_t pmis = (uint32_t)cmdline_get_u64("pmis", 200);
	uint64_t page_reads = cmdline_get_u64("page_reads", 1000000);
	uint64_t iters = cmdline_get_u64("iters", 0);
	uint32_t max_pmis = 0;

	(void)bi;
	khz = tsc_khz() ? tsc_khz() : 2000000;
	reads = reads < BATCH ? BATCH : reads > MAX_READS ? MAX_READS : reads;
	pmis = pmis < 1 ? 1 : pmis > MAX_PMIS ? MAX_PMIS : pmis;
	page_reads = page_reads ? page_reads : 1;
	if (!iters) {
		iters = calibrate();
		printf("BENCH calibrated_iters=%lu\n", iters);
	}
	nr_counters = pmu_detect(&max_pmis);
	printf("BENCH pmu=%u tsc_khz=%u nr_counters=%u\n", nr_counters ? 1 : 0, tsc_khz(), nr_counters);
	if (!nr_counters) {
		/* The baseline: no PMU, just the workload. */
		printf("BENCH workload_iters=%lu workload_us=%lu\n", iters, workload_us(iters));
		return report_summary();
	}
	bench_msr(reads);
	wrmsr(PV_PMU_MSR_PAGE, (uint64_t)(uintptr_t)page_mem | PV_PMU_PAGE_ENABLE);
	bench_page((const struct pv_pmu_page *)page_mem, page_reads);
	bench_pmi(pmis, max_pmis);
	bench_workload(iters, (uint64_t)(uintptr_t)page_mem | PV_PMU_PAGE_ENABLE);
	wrmsr(PV_PMU_MSR_PAGE, 0);
	return report_summary();
}
