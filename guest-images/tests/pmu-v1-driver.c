/* SPDX-License-Identifier: MIT */
/*
 * pmu-v1-driver: an older guest driver keeps working. This file is built
 * against the PV PMU header as version 1 published it
 * (tests/abi/pvpmu-v1/perfvisor/pvpmu.h, frozen with its docs/pvpmu.md),
 * not today's, and its driver is that document's worked example (§14):
 * sample every 1000th port-I/O exit on counter 0 with an NMI, with the
 * driver's own NMI handler (not the runtime's PV PMU code). It checks what
 * v1's text promises:
 * - discovery through CPUID as §2 describes, the event available and able to sample;
 * - N port writes give exactly N / PERIOD NMIs, each seeing GLOBAL_STATUS bit 0;
 * - CTR(0) reads back as a 48-bit value ("bits 63:48 read as 0"), exactly
 *   2^48 - PERIOD after the last re-arm when no port write followed;
 * - ERROR stays 0 (class 2 events are always backed).
 * cmdline: n=N port writes (default 5000, a multiple of 1000).
 */
#include "guest.h"

/* ---- docs/pvpmu.md v1, §14, as published ---------------------------------- */
#define PERIOD 1000

static void cpuid4(uint32_t leaf, uint32_t r[4])
{
	asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0));
}

#define EV_BIT(msr, ev) ((rdmsr(msr((ev) / 64)) >> ((ev) % 64)) & 1)

static unsigned nr_counters;
static volatile uint64_t samples, bad_status;

static int v1_pvpmu_start(void)
{
	uint32_t r[4];

	cpuid4(PV_PMU_CPUID_SIGNATURE, r);
	if (r[1] != PV_PMU_SIG_EBX || r[2] != PV_PMU_SIG_ECX || r[3] != PV_PMU_SIG_EDX ||
	    r[0] < PV_PMU_CPUID_LIMITS)
		return -1;
	cpuid4(PV_PMU_CPUID_INFO, r);
	if (PV_PMU_INFO_EAX_VERSION(r[0]) < 1 || r[1] != PV_PMU_MSR_BASE || !(r[3] & PV_PMU_FEAT_PMI_NMI))
		return -2;
	nr_counters = PV_PMU_INFO_EAX_NR_COUNTERS(r[0]);
	if (nr_counters < 1 || PV_PMU_INFO_ECX_NR_EVENTS(r[2]) <= PV_PMU_EV_EXITS_IO)
		return -3;
	if (!EV_BIT(PV_PMU_MSR_AVAIL, PV_PMU_EV_EXITS_IO) || !EV_BIT(PV_PMU_MSR_SAMPLE, PV_PMU_EV_EXITS_IO))
		return -4;
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	wrmsr(PV_PMU_MSR_CFG(0),
	      PV_PMU_EV_EXITS_IO | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_INT | PV_PMU_CFG_EN);
	wrmsr(PV_PMU_MSR_CTR(0), -(uint64_t)PERIOD);
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, rdmsr(PV_PMU_MSR_GLOBAL_STATUS));
	wrmsr(PV_PMU_MSR_PMI_CFG, 0);
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	return rdmsr(PV_PMU_MSR_ERROR) & 1 ? -5 : 0;
}

static int v1_pvpmu_nmi(uint64_t interrupted_rip)
{
	uint64_t st;

	(void)interrupted_rip;
	if (!(rdmsr(PV_PMU_MSR_PMI_CFG) & PV_PMU_PMI_MASK))
		return 0;
	st = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	if (st & 1)
		samples++;
	else
		bad_status++;
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, st);
	if (st & 1)
		wrmsr(PV_PMU_MSR_CTR(0), -(uint64_t)PERIOD);
	wrmsr(PV_PMU_MSR_PMI_CFG, 0);
	return 1;
}

static void v1_pvpmu_stop(void)
{
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	wrmsr(PV_PMU_MSR_CFG(0), 0);
}
/* ---- end of the v1 example ------------------------------------------------ */

static bool on_nmi(struct rt_regs *regs)
{
	return v1_pvpmu_nmi(regs->rip) != 0;
}

int main(const struct pv_bootinfo *bi)
{
	uint64_t n = cmdline_get_u64("n", 5000), ctr, deadline;
	int rc;

	(void)bi;
	rt_set_handler(VEC_NMI, on_nmi);
	rc = v1_pvpmu_start();
	if (rc) {
		report(false, "v1 driver: pvpmu_start() = %d", rc);
		return report_summary();
	}
	/* No printing while the counter counts: every printed line is port I/O too (v1 §14's note). */
	for (uint64_t i = 0; i < n; i++)
		outb(0x3ff, (uint8_t)i); /* the UART's scratch register: an I/O exit that changes nothing */
	/* An NMI due at the last write arrives at the next entry; MSR exits give it entries (bounded). */
	deadline = tsc_deadline_us(2000000);
	while (samples < n / PERIOD && rdtsc() < deadline)
		(void)rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	ctr = rdmsr(PV_PMU_MSR_CTR(0));
	v1_pvpmu_stop();
	report(true, "v1 driver: pvpmu_start() = 0 (discovery, EXITS_IO available and sampling, ERROR 0)");
	report(samples == n / PERIOD, "v1 driver: %lu port writes gave %lu NMIs (want %lu)", n, samples,
	       n / PERIOD);
	report(bad_status == 0, "v1 driver: every NMI of ours saw GLOBAL_STATUS bit 0 (%lu did not)",
	       bad_status);
	report(ctr >> 48 == 0, "v1 driver: CTR(0) bits 63:48 read as 0 (0x%lx)", ctr);
	report(ctr == (1ULL << 48) - PERIOD, "v1 driver: CTR(0) is 2^48 - %u after the last re-arm (0x%lx)",
	       PERIOD, ctr);
	report(rdmsr(PV_PMU_MSR_ERROR) == 0, "v1 driver: ERROR is 0");
	return report_summary();
}
