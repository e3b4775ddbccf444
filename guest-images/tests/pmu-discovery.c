/* SPDX-License-Identifier: MIT */
/*
 * pmu-discovery: the PV PMU's CPUID leaves and event bitmaps. Default: the
 * leaves are present and sane, hypervisor and software events are
 * available (unavailable and refused with `expect_sw=0`, for a host that
 * cannot open them), class-0 availability matches `expect_hw=0|1` (if given).
 * `expect_absent` (perfvisor run --pmu off): no leaves, the MSRs #GP.
 */
#include "guest.h"

#define GP 13

static const char *vec_name(int v)
{
	return v == RT_NO_FAULT ? "no fault" : rt_vector_name((uint32_t)v);
}

static int check_absent(void)
{
	uint32_t a, b, c, d;
	uint64_t v = 0;
	int vec;

	cpuid_count(PV_PMU_CPUID_SIGNATURE, 0, &a, &b, &c, &d);
	printf("pmu-discovery: cpuid 0x%x = %x %x %x %x\n", PV_PMU_CPUID_SIGNATURE, a, b, c, d);
	report(!pvpmu_probe(NULL), "no PV PMU signature in CPUID 0x%x", PV_PMU_CPUID_SIGNATURE);
	vec = rdmsr_safe(PV_PMU_MSR_GLOBAL_CTRL, &v);
	report(vec == GP, "rdmsr GLOBAL_CTRL without PV PMU: %s", vec_name(vec));
	vec = wrmsr_safe(PV_PMU_MSR_CFG(0), PV_PMU_EV_EXITS | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN);
	report(vec == GP, "wrmsr CFG(0) without PV PMU: %s", vec_name(vec));
	return report_summary();
}

static void check_cpuid(const struct pvpmu_info *in)
{
	uint32_t need = PV_PMU_FEAT_PAGE | PV_PMU_FEAT_PMI_NMI | PV_PMU_FEAT_PMI_VECTOR;

	printf("pmu-discovery: version %u, %u counters of %u bits, msr base 0x%x, %u events, features 0x%x\n",
	       in->version, in->nr_counters, in->width, in->msr_base, in->nr_events, in->features);
	printf("pmu-discovery: limits: min period %u events / %u ns, %u PMIs/s, %u host counters\n",
	       in->min_period, in->min_period_ns, in->max_pmi_rate, in->host_counters);
	report(in->max_leaf >= PV_PMU_CPUID_MAX, "highest leaf 0x%x", in->max_leaf);
	report(in->version == PV_PMU_VERSION, "version %u", in->version);
	report(in->nr_counters >= 1 && in->nr_counters <= PV_PMU_MAX_COUNTERS, "nr_counters %u",
	       in->nr_counters);
	report(in->width == PV_PMU_COUNTER_WIDTH, "width %u", in->width);
	report(in->msr_base == PV_PMU_MSR_BASE, "msr base 0x%x", in->msr_base);
	report(in->nr_events >= 0xc0 && in->nr_events <= 64 * PV_PMU_MAX_BITMAP_WORDS, "nr_events %u",
	       in->nr_events);
	report((in->features & need) == need, "features 0x%x include PAGE, PMI_NMI, PMI_VECTOR",
	       in->features);
	report(in->min_period >= 1 && in->min_period <= 1000000, "min period %u events", in->min_period);
	report(in->min_period_ns >= 1 && in->min_period_ns <= 100000000, "min period %u ns",
	       in->min_period_ns);
	report(in->max_pmi_rate >= 10 && in->max_pmi_rate <= 1000000, "PMI rate cap %u/s", in->max_pmi_rate);
	report(in->host_counters >= 1, "host counter budget %u", in->host_counters);
}

/* Every id of [first, last] has the bit in `which` (0 avail, 1 sample, 2 filter) == want. */
static bool range_is(uint32_t first, uint32_t last, uint32_t which, bool want, uint32_t *bad)
{
	for (uint32_t id = first; id <= last; id++) {
		bool b = which == 0   ? pvpmu_event_available(id)
			 : which == 1 ? pvpmu_event_can_sample(id)
				      : pvpmu_event_filters(id);
		if (b != want) {
			*bad = id;
			return false;
		}
	}
	return true;
}

static void check_bitmaps(const struct pvpmu_info *in)
{
	uint32_t words = (in->nr_events + 63) / 64, bad = 0;
	bool hw_any = false, ok;
	const char *hw = cmdline_get("expect_hw");

	for (uint32_t w = 0; w < words; w++)
		printf("pmu-discovery: word %u: avail %016lx sample %016lx filter %016lx\n", w,
		       pvpmu_bitmap(0, w), pvpmu_bitmap(1, w), pvpmu_bitmap(2, w));

	/* Class 2: counted by the VMM, all defined ids, can sample, no filter. */
	ok = range_is(PV_PMU_EV_EXITS, PV_PMU_EV_EXITS_MSR_WRITE, 0, true, &bad);
	report(ok, "hypervisor events 0x80..0x8a available%s", ok ? "" : " (a hole)");
	ok = range_is(PV_PMU_EV_EXITS, PV_PMU_EV_EXITS_MSR_WRITE, 1, true, &bad);
	report(ok, "hypervisor events can sample");
	ok = range_is(PV_PMU_EV_EXITS, PV_PMU_EV_EXITS_MSR_WRITE, 2, false, &bad);
	report(ok, "hypervisor events do not honour USR/OS");
	ok = range_is(PV_PMU_EV_EXITS_MSR_WRITE + 1, 0xbf, 0, false, &bad);
	report(ok, "undefined hypervisor ids 0x8b..0xbf unavailable (first bad 0x%x)", ok ? 0 : bad);

	/* Class 1: host software events (expect_sw=0: a host that may not open them, e.g. not root). */
	if (cmdline_has("expect_sw") && cmdline_get_u64("expect_sw", 1) == 0) {
		int vec;

		ok = range_is(PV_PMU_EV_TASK_CLOCK, PV_PMU_EV_MAJOR_FAULTS, 0, false, &bad);
		report(ok, "expect_sw=0: software events 0x40..0x45 unavailable (first available 0x%x)",
		       ok ? 0 : bad);
		vec = wrmsr_safe(PV_PMU_MSR_CFG(0),
				 PV_PMU_EV_TASK_CLOCK | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN);
		report(vec == GP, "CFG = task-clock|EN where the host cannot back it: %s", vec_name(vec));
		wrmsr(PV_PMU_MSR_CFG(0), 0);
	} else {
		ok = range_is(PV_PMU_EV_TASK_CLOCK, PV_PMU_EV_MAJOR_FAULTS, 0, true, &bad);
		report(ok, "software events 0x40..0x45 available (first missing 0x%x)", ok ? 0 : bad);
		ok = range_is(PV_PMU_EV_TASK_CLOCK, PV_PMU_EV_MAJOR_FAULTS, 1, true, &bad);
		report(ok, "software events can sample");
	}
	ok = range_is(PV_PMU_EV_TASK_CLOCK, PV_PMU_EV_MAJOR_FAULTS, 2, false, &bad);
	report(ok, "software events do not honour USR/OS");
	ok = range_is(PV_PMU_EV_MAJOR_FAULTS + 1, 0x7f, 0, false, &bad);
	report(ok, "undefined software ids 0x46..0x7f unavailable");

	/* Class 3: KVM statistics: never sample, no filter. */
	ok = range_is(0xc0, in->nr_events - 1, 1, false, &bad) &&
	     range_is(0xc0, in->nr_events - 1, 2, false, &bad);
	report(ok, "KVM statistics events neither sample nor filter");
	report(pvpmu_event_available(PV_PMU_EV_KVM_EXITS), "KVM statistic \"exits\" (0xc0) available");
	ok = range_is(PV_PMU_EV_KVM_HOST_STATE_RELOAD + 1, in->nr_events - 1, 0, false, &bad);
	report(ok, "undefined ids 0xcc.. unavailable");

	/* Class 0: what the host has. */
	for (uint32_t id = 0; id < 0x40; id++)
		hw_any |= pvpmu_event_available(id);
	ok = range_is(PV_PMU_EV_REF_CYCLES + 1, 0x3f, 0, false, &bad);
	report(ok, "undefined hardware ids 0x0a..0x3f unavailable");
	printf("pmu-discovery: host hardware PMU: feature %s, hardware events %s\n",
	       in->features & PV_PMU_FEAT_HOST_HW ? "set" : "clear", hw_any ? "available" : "none");
	if (!(in->features & PV_PMU_FEAT_HOST_HW))
		report(!hw_any, "no HOST_HW feature: no hardware event available");
	for (uint32_t id = 0; id < 0x40; id++) {
		if (pvpmu_event_available(id) && !pvpmu_event_filters(id)) {
			report(false, "hardware event 0x%x available but does not honour USR/OS", id);
			break;
		}
	}
	if (hw && *hw) {
		bool want = strtoull(hw, NULL, 0) != 0;

		report(want == !!(in->features & PV_PMU_FEAT_HOST_HW) && want == hw_any,
		       "expect_hw=%d: the host %s a hardware PMU", want, hw_any ? "has" : "has no");
	}
	if (!pvpmu_event_available(PV_PMU_EV_CYCLES)) {
		int vec = wrmsr_safe(PV_PMU_MSR_CFG(0),
				     PV_PMU_EV_CYCLES | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN);

		report(vec == GP, "CFG = cycles|EN without a hardware PMU: %s", vec_name(vec));
		wrmsr(PV_PMU_MSR_CFG(0), 0);
	} else {
		int vec =
			pvpmu_program(0, PV_PMU_EV_CYCLES, PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_EN, 0);

		report(vec == RT_NO_FAULT, "CFG = cycles|EN accepted (hardware PMU): %s", vec_name(vec));
		wrmsr(PV_PMU_MSR_CFG(0), 0);
	}
}

int main(const struct pv_bootinfo *bi)
{
	struct pvpmu_info info;

	(void)bi;
	if (cmdline_has("expect_absent"))
		return check_absent();
	if (!pvpmu_init(&info)) {
		report(false, "PV PMU signature in CPUID 0x%x", PV_PMU_CPUID_SIGNATURE);
		return report_summary();
	}
	report(true, "PV PMU signature in CPUID 0x%x", PV_PMU_CPUID_SIGNATURE);
	check_cpuid(&info);
	check_bitmaps(&info);
	return report_summary();
}
