/* SPDX-License-Identifier: MIT */
/*
 * Time from the TSC: the VMM passes its frequency in the boot information.
 * Without it, 2 GHz is assumed, which only makes timeouts inexact.
 */
#include "rt_internal.h"

#define ASSUMED_TSC_KHZ 2000000ULL

uint32_t tsc_khz(void)
{
	const struct pv_bootinfo *bi = rt_bootinfo();

	return bi ? bi->tsc_khz : 0;
}

static uint64_t khz(void)
{
	uint32_t k = tsc_khz();

	return k ? k : ASSUMED_TSC_KHZ;
}

uint64_t tsc_to_us(uint64_t cycles)
{
	uint64_t k = khz();

	/* cycles * 1000 / k without overflowing for large cycle counts. */
	return cycles / k * 1000 + cycles % k * 1000 / k;
}

uint64_t tsc_deadline_us(uint64_t us)
{
	return rdtsc() + us * khz() / 1000;
}

void udelay(uint64_t us)
{
	uint64_t end = tsc_deadline_us(us);

	while (rdtsc() < end)
		cpu_relax();
}
