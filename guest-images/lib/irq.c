/* SPDX-License-Identifier: MIT */
/*
 * Waiting for interrupts the way every KVM host delivers them: with
 * interrupts enabled, asleep in hlt, bounded by a 1 ms LAPIC timer tick.
 * On kvm_pvm an interrupt unmasked by sti arrives late (at the next exit or
 * the end of an emulation batch), so `sti; nop; cli` may see nothing.
 */
#include "rt_internal.h"

#define TICK_COUNT 62500 /* 1 ms on KVM's LAPIC timer (1 GHz bus, divide by 16) */

bool rt_wait_irq(bool (*done)(void *), void *arg, uint64_t timeout_us)
{
	uint64_t deadline = tsc_deadline_us(timeout_us);
	bool ok;

	apic_sw_enable();
	apic_timer_periodic(RT_VEC_TIMER, TICK_COUNT);
	/* sti's shadow covers hlt: an interrupt pending at sti wakes the hlt. */
	while (!(ok = done(arg)) && rdtsc() < deadline)
		asm volatile("sti; hlt; cli" ::: "memory");
	cli(); /* also when done() held at once and the caller had interrupts on */
	apic_timer_stop();
	return ok || done(arg);
}
