/* SPDX-License-Identifier: MIT */
/*
 * smp: start every AP; each CPU (the BSP too) checks in by setting its bit
 * in a shared mask and recording the APIC id its LAPIC reports. Passes only
 * if every CPU checked in with the APIC id the boot information lists, and
 * CPUID's topology (leaf 1, leaf 0xB, and the vendor's own: leaf 4 on
 * Intel, 0x80000008/0x8000001E on AMD) agrees with it and with --cpus.
 */
#include "guest.h"

static uint64_t online_mask;
static uint32_t apic_seen[PV_MAX_CPUS];
static uint32_t leaf1_apic[PV_MAX_CPUS];   /* CPUID.1:EBX[31:24] */
static uint32_t leafb_x2apic[PV_MAX_CPUS]; /* CPUID.0xB:EDX */
static uint32_t leafb_count[PV_MAX_CPUS];  /* CPUID.(0xB,1):EBX, CPUs in the package */
static uint32_t ext_apic[PV_MAX_CPUS];	   /* CPUID.0x8000001E:EAX (AMD), ~0 if absent */
static uint32_t ext_cores;		   /* CPUID.0x80000008:ECX[7:0] + 1 (AMD), 0 if absent */
static uint32_t leaf4_cores[PV_MAX_CPUS];  /* CPUID.4:EAX[31:26] + 1 (Intel), 0 if absent */

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static bool is_amd(void)
{
	uint32_t r[4];

	cpuid(0, 0, r);
	return r[1] == 0x68747541u /* "Auth" */ || r[1] == 0x6f677948u /* "Hygo" */;
}

/* Intel's topology twin of AMD's 0x80000008: cores per package in leaf 4 EAX[31:26]. */
static void check_in_intel(uint32_t cpu)
{
	uint32_t r[4];

	cpuid(0, 0, r);
	if (r[0] < 4)
		return;
	cpuid(4, 0, r);
	if ((r[0] & 0x1f) != 0) /* cache type 0: no cache leaves */
		leaf4_cores[cpu] = (r[0] >> 26) + 1;
}

static void check_in_amd(uint32_t cpu)
{
	uint32_t r[4];

	cpuid(0x80000000, 0, r);
	if (r[0] >= 0x80000008 && cpu == 0) {
		uint32_t e[4];

		cpuid(0x80000008, 0, e);
		ext_cores = (e[2] & 0xff) + 1;
	}
	if (r[0] >= 0x8000001e) {
		cpuid(0x8000001e, 0, r);
		ext_apic[cpu] = r[0];
	}
}

/* Every CPU, whatever its vendor, records what it sees and sets its bit. */
static void check_in(uint32_t cpu, void *arg)
{
	uint32_t r[4];

	(void)arg;
	apic_seen[cpu] = apic_read_id();
	cpuid(1, 0, r);
	leaf1_apic[cpu] = r[1] >> 24;
	cpuid(0, 0, r);
	if (r[0] >= 0xb) {
		cpuid(0xb, 0, r);
		leafb_x2apic[cpu] = r[3];
		cpuid(0xb, 1, r);
		leafb_count[cpu] = r[1] & 0xffff;
	}
	ext_apic[cpu] = ~0u;
	if (is_amd())
		check_in_amd(cpu);
	else
		check_in_intel(cpu);
	__atomic_or_fetch(&online_mask, 1ULL << cpu, __ATOMIC_ACQ_REL);
}

/* The vendor's own core-count leaf agrees with --cpus on every CPU. */
static void check_vendor_topology(uint32_t n)
{
	uint32_t bad = 0;

	if (is_amd()) {
		if (ext_cores == 0)
			report_skip("CPUID leaf 0x80000008 core count: not offered by this AMD host");
		else
			report(ext_cores == n, "CPUID leaf 0x80000008 (AMD): %u cores (got %u)", n,
			       ext_cores);
		if (ext_apic[0] == ~0u) {
			report_skip("CPUID leaf 0x8000001E not offered by this host");
		} else {
			for (uint32_t i = 0; i < n; i++)
				bad += ext_apic[i] != smp_apic_id(i);
			report(bad == 0, "CPUID leaf 0x8000001E gives each CPU its extended APIC id");
		}
		return;
	}
	if (leaf4_cores[0] == 0) {
		report_skip("CPUID leaf 4 (Intel cache topology) not offered by this host");
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		bad += leaf4_cores[i] != (n > 64 ? 64 : n);
	report(bad == 0, "CPUID leaf 4 (Intel): %u cores per package on every CPU (cpu 0 got %u)", n,
	       leaf4_cores[0]);
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t n = rt_nr_cpus();
	uint64_t want = n >= 64 ? ~0ULL : (1ULL << n) - 1;
	uint32_t started, bad = 0, online = 0;
	uint64_t mask;

	(void)bi;
	printf("smp: starting %u APs\n", n - 1);
	started = smp_start_aps(check_in, NULL);
	check_in(0, NULL);
	report(started == n - 1, "%u of %u APs started", started, n - 1);
	report(smp_wait_aps(30000) == 0, "all APs returned");

	mask = __atomic_load_n(&online_mask, __ATOMIC_ACQUIRE);
	report(mask == want, "check-in mask 0x%lx (want 0x%lx)", mask, want);
	for (uint32_t i = 0; i < n; i++) {
		online += (mask >> i) & 1;
		if (apic_seen[i] != smp_apic_id(i)) {
			printf("smp: cpu %u: LAPIC id %u, bootinfo says %u\n", i, apic_seen[i],
			       smp_apic_id(i));
			bad++;
		}
	}
	report(bad == 0, "every CPU has the APIC id the bootinfo lists");
	printf("smp: %u CPUs online\n", online);

	bad = 0;
	for (uint32_t i = 0; i < n; i++)
		bad += leaf1_apic[i] != smp_apic_id(i);
	report(bad == 0, "CPUID leaf 1 gives each CPU its APIC id");
	if (leafb_count[0] == 0) {
		report_skip("CPUID leaf 0xB not offered by this host");
	} else {
		bad = 0;
		for (uint32_t i = 0; i < n; i++)
			bad += leafb_x2apic[i] != smp_apic_id(i) || leafb_count[i] != n;
		report(bad == 0, "CPUID leaf 0xB: x2APIC ids match, %u CPUs at core level (got %u)", n,
		       leafb_count[0]);
	}
	check_vendor_topology(n);

	/* A second round re-INITs the parked APs. */
	if (n > 1) {
		__atomic_store_n(&online_mask, 0, __ATOMIC_RELEASE);
		started = smp_start_aps(check_in, NULL);
		check_in(0, NULL);
		report(started == n - 1 && smp_wait_aps(30000) == 0 &&
			       __atomic_load_n(&online_mask, __ATOMIC_ACQUIRE) == want,
		       "second round: all %u APs restarted and checked in", n - 1);
	}
	return report_summary();
}
