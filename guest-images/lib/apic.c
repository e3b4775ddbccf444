/* SPDX-License-Identifier: MIT */
/*
 * Local APIC (xAPIC, MMIO at 0xfee00000, inside the identity map): IPIs for
 * AP startup and wake-ups, EOI, and a periodic timer that bounds the BSP's
 * sleeps. Every register access is a VM exit (handled in the host kernel).
 */
#include "rt_internal.h"

#define ICR_BUSY (1u << 12)
#define SVR_ENABLE (1u << 8)
#define LVT_PERIODIC (1u << 17)
#define LVT_MASKED (1u << 16)
#define TIMER_DIV_16 0x3

uint32_t apic_read(uint32_t reg)
{
	return *(volatile uint32_t *)(uintptr_t)(APIC_BASE + reg);
}

void apic_write(uint32_t reg, uint32_t val)
{
	*(volatile uint32_t *)(uintptr_t)(APIC_BASE + reg) = val;
}

uint32_t apic_read_id(void)
{
	return apic_read(APIC_ID) >> 24;
}

/* Fixed interrupts are only accepted by a software-enabled APIC. */
void apic_sw_enable(void)
{
	apic_write(APIC_SVR, SVR_ENABLE | RT_VEC_SPURIOUS);
}

void apic_send_ipi(uint32_t apic_id, uint32_t icr_lo)
{
	/* KVM delivers at once; the bound only matters on odd hardware. */
	for (int i = 0; i < 1000 && (apic_read(APIC_ICR_LO) & ICR_BUSY); i++)
		cpu_relax();
	apic_write(APIC_ICR_HI, apic_id << 24);
	apic_write(APIC_ICR_LO, icr_lo);
}

void apic_self_ipi(uint8_t vector)
{
	apic_sw_enable();
	apic_send_fixed(apic_read_id(), vector);
}

void apic_send_fixed(uint32_t apic_id, uint8_t vector)
{
	apic_send_ipi(apic_id, APIC_ICR_FIXED | vector);
}

void apic_eoi(void)
{
	apic_write(APIC_EOI, 0);
}

/* count is in bus cycles / 16 (KVM's APIC bus runs at 1 GHz: 62500 = 1 ms). */
void apic_timer_periodic(uint8_t vector, uint32_t count)
{
	apic_write(APIC_TIMER_DIV, TIMER_DIV_16);
	apic_write(APIC_LVT_TIMER, LVT_PERIODIC | vector);
	apic_write(APIC_TIMER_INIT, count);
}

void apic_timer_stop(void)
{
	apic_write(APIC_LVT_TIMER, LVT_MASKED | RT_VEC_TIMER);
	apic_write(APIC_TIMER_INIT, 0);
}
