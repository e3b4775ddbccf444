/* SPDX-License-Identifier: MIT */
/*
 * pmu-rules: every MSR rule of the PV PMU with bad input. Reserved bits,
 * out-of-range events, unavailable events, INT without sampling, USR/OS
 * without filtering, read-only and unknown MSRs, bad CTR, PMI_CFG and PAGE
 * values all raise #GP and change nothing; ring 3 cannot touch the block.
 * Afterwards the PMU still counts exactly.
 */
#include "guest.h"

#define GP 13
#define BOTH (PV_PMU_CFG_USR | PV_PMU_CFG_OS)

static struct pvpmu_info info;
static uint32_t unexpected; /* accesses that did not #GP (or did) against the rule */
static uint32_t gps;	    /* #GPs seen */

static const char *vec_name(int v)
{
	return v == RT_NO_FAULT ? "no fault" : rt_vector_name((uint32_t)v);
}

/* One write that must #GP; a failure prints its own line. */
static bool wr_gp(uint32_t msr, uint64_t v)
{
	int vec = wrmsr_safe(msr, v);

	if (vec == GP) {
		gps++;
		return true;
	}
	printf("pmu-rules: wrmsr 0x%x <- 0x%lx: %s, want #GP\n", msr, v, vec_name(vec));
	unexpected++;
	return false;
}

static bool wr_ok(uint32_t msr, uint64_t v)
{
	int vec = wrmsr_safe(msr, v);

	if (vec == RT_NO_FAULT)
		return true;
	printf("pmu-rules: wrmsr 0x%x <- 0x%lx: %s, want success\n", msr, v, vec_name(vec));
	unexpected++;
	return false;
}

static bool rd_gp(uint32_t msr)
{
	uint64_t v;
	int vec = rdmsr_safe(msr, &v);

	if (vec == GP) {
		gps++;
		return true;
	}
	printf("pmu-rules: rdmsr 0x%x: %s (0x%lx), want #GP\n", msr, vec_name(vec), v);
	unexpected++;
	return false;
}

static void cfg_rules(void)
{
	const uint64_t good = PV_PMU_EV_EXITS_IO | BOTH | PV_PMU_CFG_EN;
	uint64_t v;
	bool ok = true;
	uint32_t first_unavail = 0;

	wrmsr(PV_PMU_MSR_CFG(0), good);
	for (uint32_t b = 0; b < 64; b++) {
		if (!(PV_PMU_CFG_VALID & (1ULL << b))) {
			ok &= wr_gp(PV_PMU_MSR_CFG(0), good | (1ULL << b));
			ok &= wr_gp(PV_PMU_MSR_CFG(0), 1ULL << b); /* even with EN clear */
		}
	}
	v = rdmsr(PV_PMU_MSR_CFG(0));
	report(ok && v == good,
	       "CFG: each of the %d reserved bits #GPs, with and without EN; CFG unchanged (0x%lx)",
	       64 - __builtin_popcountll(PV_PMU_CFG_VALID), v);

	ok = wr_gp(PV_PMU_MSR_CFG(0), info.nr_events | BOTH | PV_PMU_CFG_EN);
	ok &= wr_gp(PV_PMU_MSR_CFG(0), 0xffff | BOTH | PV_PMU_CFG_EN);
	report(ok, "CFG: event id %u (= nr_events) and 0xffff with EN #GP", info.nr_events);
	ok = wr_ok(PV_PMU_MSR_CFG(1), 0xffff | BOTH);
	v = rdmsr(PV_PMU_MSR_CFG(1));
	report(ok && v == (0xffff | BOTH), "CFG: EN clear is not checked beyond reserved bits (0x%lx)", v);
	wrmsr(PV_PMU_MSR_CFG(1), 0);

	for (uint32_t id = 0; id < info.nr_events && !first_unavail; id++) {
		if (id != 0 && !pvpmu_event_available(id))
			first_unavail = id;
	}
	ok = wr_gp(PV_PMU_MSR_CFG(0), (PV_PMU_EV_EXITS_MSR_WRITE + 1) | BOTH | PV_PMU_CFG_EN);
	if (first_unavail)
		ok &= wr_gp(PV_PMU_MSR_CFG(0), first_unavail | BOTH | PV_PMU_CFG_EN);
	if (!pvpmu_event_available(PV_PMU_EV_CYCLES))
		ok &= wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_EV_CYCLES | BOTH | PV_PMU_CFG_EN);
	report(ok, "CFG: unavailable events with EN #GP (0x8b, 0x%x%s)", first_unavail,
	       pvpmu_event_available(PV_PMU_EV_CYCLES) ? "" : ", cycles");

	if (pvpmu_event_available(PV_PMU_EV_KVM_EXITS) && !pvpmu_event_can_sample(PV_PMU_EV_KVM_EXITS)) {
		ok = wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_EV_KVM_EXITS | BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN);
		ok &= wr_ok(PV_PMU_MSR_CFG(0), PV_PMU_EV_KVM_EXITS | BOTH | PV_PMU_CFG_EN);
		report(ok, "CFG: INT on a KVM statistics event #GPs, without INT it is accepted");
	} else {
		report_skip("INT on class 3: KVM \"exits\" unavailable or can sample");
	}

	ok = true;
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t ev = k ? PV_PMU_EV_TASK_CLOCK : PV_PMU_EV_EXITS;

		ok &= wr_gp(PV_PMU_MSR_CFG(0), ev | PV_PMU_CFG_USR | PV_PMU_CFG_EN);
		ok &= wr_gp(PV_PMU_MSR_CFG(0), ev | PV_PMU_CFG_OS | PV_PMU_CFG_EN);
		ok &= wr_gp(PV_PMU_MSR_CFG(0), ev | PV_PMU_CFG_EN);
		ok &= wr_ok(PV_PMU_MSR_CFG(0), ev | BOTH | PV_PMU_CFG_EN);
		ok &= wr_ok(PV_PMU_MSR_CFG(0), ev | PV_PMU_CFG_USR); /* not checked without EN */
	}
	report(ok, "CFG: class 1 and 2 events #GP with only USR, only OS, or neither; both is accepted");
	wrmsr(PV_PMU_MSR_CFG(0), 0);

	ok = wr_gp(PV_PMU_MSR_CFG(info.nr_counters), 0) & wr_gp(PV_PMU_MSR_CTR(info.nr_counters), 0) &
	     rd_gp(PV_PMU_MSR_CFG(info.nr_counters)) & rd_gp(PV_PMU_MSR_CTR(info.nr_counters));
	if (info.nr_counters < PV_PMU_MAX_COUNTERS)
		ok &= wr_gp(PV_PMU_MSR_CFG(PV_PMU_MAX_COUNTERS - 1), 0) &
		      rd_gp(PV_PMU_MSR_CTR(PV_PMU_MAX_COUNTERS - 1));
	report(ok, "CFG/CTR of counter %u (= nr_counters) and %u: read and write #GP", info.nr_counters,
	       PV_PMU_MAX_COUNTERS - 1);
}

static void global_rules(void)
{
	uint64_t all = (1ULL << info.nr_counters) - 1, v;
	uint32_t words = (info.nr_events + 63) / 64;
	bool ok;

	ok = wr_gp(PV_PMU_MSR_GLOBAL_CTRL, 1ULL << info.nr_counters) &
	     wr_gp(PV_PMU_MSR_GLOBAL_CTRL, 1ULL << 63);
	ok &= wr_gp(PV_PMU_MSR_GLOBAL_CTRL, ~0ULL);
	ok &= wr_ok(PV_PMU_MSR_GLOBAL_CTRL, all);
	v = rdmsr(PV_PMU_MSR_GLOBAL_CTRL);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(ok && v == all, "GLOBAL_CTRL: bits >= nr_counters #GP, all counters accepted (0x%lx)", v);

	ok = wr_gp(PV_PMU_MSR_GLOBAL_STATUS, 0) & wr_gp(PV_PMU_MSR_GLOBAL_STATUS, 1);
	ok &= wr_gp(PV_PMU_MSR_ERROR, 0);
	for (uint32_t w = 0; w < words; w++)
		ok &= wr_gp(PV_PMU_MSR_AVAIL(w), 0) & wr_gp(PV_PMU_MSR_SAMPLE(w), 0) &
		      wr_gp(PV_PMU_MSR_FILTER(w), 0);
	report(ok, "read-only MSRs (GLOBAL_STATUS, ERROR, %u words of each bitmap): writes #GP", words);

	ok = wr_gp(PV_PMU_MSR_STATUS_CLEAR, 1ULL << info.nr_counters) &
	     wr_gp(PV_PMU_MSR_STATUS_CLEAR, 1ULL << 62);
	ok &= wr_ok(PV_PMU_MSR_STATUS_CLEAR, all | PV_PMU_STATUS_THROTTLED);
	report(ok, "STATUS_CLEAR: bits other than counters and THROTTLED #GP");

	ok = true;
	for (uint32_t w = words; w < PV_PMU_MAX_BITMAP_WORDS; w++)
		ok &= rd_gp(PV_PMU_MSR_AVAIL(w)) & rd_gp(PV_PMU_MSR_SAMPLE(w)) & rd_gp(PV_PMU_MSR_FILTER(w));
	report(ok, "bitmap words %u..%u: reads #GP", words, PV_PMU_MAX_BITMAP_WORDS - 1);

	{
		static const uint32_t holes[] = { 0x07, 0x08, 0x10, 0x1f, 0x7f, 0xb0, 0xc0, 0xfe, 0xff };
		ok = true;
		for (uint32_t i = 0; i < ARRAY_SIZE(holes); i++)
			ok &= rd_gp(PV_PMU_MSR_BASE + holes[i]) & wr_gp(PV_PMU_MSR_BASE + holes[i], 0);
		report(ok,
		       "unknown offsets in the block (0x07, 0x08, 0x10, 0x1f, 0x7f, 0xb0, 0xc0, 0xfe, 0xff): #GP");
	}

	v = 1;
	ok = rdmsr_safe(PV_PMU_MSR_NOP, &v) == RT_NO_FAULT && v == 0;
	ok &= wr_ok(PV_PMU_MSR_NOP, 0x1234) && rdmsr(PV_PMU_MSR_NOP) == 0;
	report(ok, "NOP reads 0 and ignores writes");
}

static void ctr_rules(void)
{
	static const uint64_t bad[] = { 1ULL << 48,
					0x8000000000000000ULL,
					0x0001000000000001ULL,
					0xfffe000000000000ULL,
					0x7fff000000000000ULL,
					0xfffbffffffffffffULL };
	uint64_t v;
	bool ok = true;

	wrmsr(PV_PMU_MSR_CTR(0), 42);
	for (uint32_t i = 0; i < ARRAY_SIZE(bad); i++)
		ok &= wr_gp(PV_PMU_MSR_CTR(0), bad[i]);
	v = rdmsr(PV_PMU_MSR_CTR(0));
	report(ok && v == 42, "CTR: bits 63:48 not a sign extension #GP, value unchanged (%lu)", v);
	ok = wr_ok(PV_PMU_MSR_CTR(0), 0xffff800000000001ULL) && rdmsr(PV_PMU_MSR_CTR(0)) == 0x800000000001ULL;
	ok &= wr_ok(PV_PMU_MSR_CTR(0), PV_PMU_COUNTER_MASK) &&
	      rdmsr(PV_PMU_MSR_CTR(0)) == PV_PMU_COUNTER_MASK;
	wrmsr(PV_PMU_MSR_CTR(0), 0);
	report(ok, "CTR: sign-extended and 48-bit values are accepted and read back modulo 2^48");
}

static void pmi_cfg_rules(void)
{
	static const uint64_t bad[] = {
		PV_PMU_PMI_MODE_VECTOR | 0x1f,
		PV_PMU_PMI_MODE_VECTOR | 0x02,
		PV_PMU_PMI_MODE_VECTOR,
		1ULL << 9,
		1ULL << 15,
		1ULL << 17,
		1ULL << 63,
		PV_PMU_PMI_MODE_VECTOR | 0x30 | (1ULL << 32),
	};
	uint64_t v;
	bool ok = true;

	for (uint32_t i = 0; i < ARRAY_SIZE(bad); i++)
		ok &= wr_gp(PV_PMU_MSR_PMI_CFG, bad[i]);
	v = rdmsr(PV_PMU_MSR_PMI_CFG);
	report(ok && v == 0, "PMI_CFG: vector < 0x20 and reserved bits #GP, value unchanged (0x%lx)", v);
	ok = wr_ok(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MODE_VECTOR | 0x20) &&
	     rdmsr(PV_PMU_MSR_PMI_CFG) == (PV_PMU_PMI_MODE_VECTOR | 0x20);
	ok &= wr_ok(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MODE_VECTOR | 0xff);
	ok &= wr_ok(PV_PMU_MSR_PMI_CFG, 0) && rdmsr(PV_PMU_MSR_PMI_CFG) == 0;
	report(ok, "PMI_CFG: vectors 0x20 and 0xff, and NMI mode, are accepted");
}

static void page_rules(void)
{
	uint64_t mem = rt_mem_size(), pg = (uintptr_t)pvpmu_page(), v;
	bool ok;

	ok = wr_gp(PV_PMU_MSR_PAGE, pg | PV_PMU_PAGE_ENABLE | (1ULL << 1));
	ok &= wr_gp(PV_PMU_MSR_PAGE, pg | PV_PMU_PAGE_ENABLE | (1ULL << 11));
	ok &= wr_gp(PV_PMU_MSR_PAGE, pg | (1ULL << 5));
	report(ok && rdmsr(PV_PMU_MSR_PAGE) == 0, "PAGE: reserved bits 11:1 #GP");
	ok = wr_gp(PV_PMU_MSR_PAGE, mem | PV_PMU_PAGE_ENABLE);
	ok &= wr_gp(PV_PMU_MSR_PAGE, (mem + 0x100000) | PV_PMU_PAGE_ENABLE);
	ok &= wr_gp(PV_PMU_MSR_PAGE, (1ULL << 51) | PV_PMU_PAGE_ENABLE);
	ok &= wr_gp(PV_PMU_MSR_PAGE, 0xfffffffffffff001ULL);
	ok &= wr_gp(PV_PMU_MSR_PAGE, 0xfee00000ULL | PV_PMU_PAGE_ENABLE); /* the LAPIC, not RAM */
	report(ok && rdmsr(PV_PMU_MSR_PAGE) == 0,
	       "PAGE: pages beyond RAM (0x%lx, +1 MiB, 2^51, ~0, LAPIC) #GP", mem);
	ok = wr_ok(PV_PMU_MSR_PAGE, pg | PV_PMU_PAGE_ENABLE);
	v = rdmsr(PV_PMU_MSR_PAGE);
	ok &= wr_ok(PV_PMU_MSR_PAGE, 0) && rdmsr(PV_PMU_MSR_PAGE) == 0;
	report(ok && v == (pg | PV_PMU_PAGE_ENABLE), "PAGE: our page is accepted and reads back (0x%lx)", v);
}

/* Ring 3 may not execute rdmsr/wrmsr at all: the CPU raises #GP, no exit. */
static long user_rdmsr(void *arg)
{
	(void)arg;
	return (long)rdmsr(PV_PMU_MSR_GLOBAL_CTRL);
}

static long user_wrmsr(void *arg)
{
	(void)arg;
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	return 0;
}

static void still_works(void)
{
	const uint32_t k = 500;
	struct rt_fault f;
	uint64_t v;
	int v1, v2;

	v1 = rt_run_user(user_rdmsr, NULL, NULL, &f);
	v2 = rt_run_user(user_wrmsr, NULL, NULL, &f);
	report(v1 == GP && v2 == GP && rdmsr(PV_PMU_MSR_GLOBAL_CTRL) == 0, "ring 3 rdmsr/wrmsr: %s, %s",
	       vec_name(v1), vec_name(v2));

	pvpmu_reset();
	report(pvpmu_program(3, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 0) == RT_NO_FAULT,
	       "after all that: program counter 3");
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1 << 3);
	pvpmu_io_exits(k);
	v = pvpmu_read(3);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	report(v == k, "after all that: %u port writes count %lu", k, v);
	report(rdmsr(PV_PMU_MSR_ERROR) == 0 && rdmsr(PV_PMU_MSR_GLOBAL_STATUS) == 0,
	       "ERROR and GLOBAL_STATUS 0");
}

int main(const struct pv_bootinfo *bi)
{
	(void)bi;
	if (!pvpmu_test_init(&info))
		return report_summary();
	pvpmu_reset();
	cfg_rules();
	global_rules();
	ctr_rules();
	pmi_cfg_rules();
	page_rules();
	still_works();
	printf("pmu-rules: %u #GPs as expected, %u accesses against the rules\n", gps, unexpected);
	return report_summary();
}
