/* SPDX-License-Identifier: MIT */
/*
 * smp: start every AP; each CPU (the BSP too) checks in by setting its bit
 * in a shared mask and recording the APIC id its LAPIC reports. Passes only
 * if every CPU checked in with the APIC id the boot information lists.
 */
#include "guest.h"

static uint64_t online_mask;
static uint32_t apic_seen[PV_MAX_CPUS];

static void check_in(uint32_t cpu, void *arg)
{
	(void)arg;
	apic_seen[cpu] = apic_read_id();
	__atomic_or_fetch(&online_mask, 1ULL << cpu, __ATOMIC_ACQ_REL);
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
