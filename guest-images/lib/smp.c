/* SPDX-License-Identifier: MIT */
/*
 * Starting and waiting for the application processors. The BSP copies the
 * real-mode trampoline below 1 MiB, sends INIT and SIPI to every AP, then
 * sleeps in hlt (woken by the APs' IPIs and a LAPIC timer tick that bounds
 * the wait) instead of spinning: ring 0 is emulated and the host may have
 * fewer cores than the guest has vCPUs.
 */
#include "rt_internal.h"

/* Read by the trampoline (entry.S) in 32-bit mode: the BSP's values. */
uint64_t rt_ap_cr0, rt_ap_cr3, rt_ap_cr4, rt_ap_efer;
uint8_t rt_apic_to_cpu[256];

static struct {
	smp_fn_t fn;
	void *arg;
	uint32_t bsp_apic_id;
	uint32_t started;  /* APs that checked in this round (atomic) */
	uint32_t finished; /* APs whose function returned (atomic) */
} smp;

#define RESEND_SIPI_US 500000ULL
#define START_TIMEOUT_US 10000000ULL

uint32_t smp_cpu_id(void)
{
	return rt_this_cpu()->index;
}

uint32_t smp_apic_id(uint32_t cpu)
{
	return cpu < PV_MAX_CPUS ? rt_cpus[cpu].apic_id : ~0u;
}

struct count_target {
	uint32_t *count, target;
};

static bool count_reached(void *arg)
{
	const struct count_target *c = arg;

	return __atomic_load_n(c->count, __ATOMIC_ACQUIRE) >= c->target;
}

/* Sleep until *count >= target or `us` microseconds passed. */
static bool wait_count(uint32_t *count, uint32_t target, uint64_t us)
{
	struct count_target c = { count, target };

	return rt_wait_irq(count_reached, &c, us);
}

static void send_to_aps(uint32_t icr_lo, bool only_offline)
{
	for (uint32_t i = 1; i < rt_nr_cpus(); i++) {
		if (only_offline && __atomic_load_n(&rt_cpus[i].state, __ATOMIC_ACQUIRE) != RT_CPU_OFFLINE)
			continue;
		apic_send_ipi(rt_cpus[i].apic_id, icr_lo);
	}
}

static void print_cpus_in_state(uint32_t state, const char *what)
{
	for (uint32_t i = 1; i < rt_nr_cpus(); i++)
		if (__atomic_load_n(&rt_cpus[i].state, __ATOMIC_ACQUIRE) == state)
			printf("smp: cpu %u (APIC id %u) %s\n", i, rt_cpus[i].apic_id, what);
}

uint32_t smp_start_aps(smp_fn_t fn, void *arg)
{
	uint32_t aps = rt_nr_cpus() - 1;
	uint32_t started;

	if (aps == 0)
		return 0;
	if (__atomic_load_n(&smp.started, __ATOMIC_ACQUIRE) !=
	    __atomic_load_n(&smp.finished, __ATOMIC_ACQUIRE)) {
		printf("smp: smp_start_aps: the previous round is still running\n");
		return 0;
	}
	memcpy((void *)RT_TRAMPOLINE_GPA, rt_tramp_start, (size_t)(rt_tramp_end - rt_tramp_start));
	rt_ap_cr0 = read_cr0();
	rt_ap_cr3 = read_cr3();
	rt_ap_cr4 = read_cr4();
	rt_ap_efer = rdmsr(MSR_EFER) & ~(uint64_t)EFER_LMA;
	for (uint32_t i = 1; i <= aps; i++)
		__atomic_store_n(&rt_cpus[i].state, RT_CPU_OFFLINE, __ATOMIC_RELAXED);
	smp.fn = fn;
	smp.arg = arg;
	smp.bsp_apic_id = rt_cpus[0].apic_id;
	__atomic_store_n(&smp.finished, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&smp.started, 0, __ATOMIC_RELEASE);
	apic_sw_enable();

	/* INIT then SIPI; KVM needs no delay between them. */
	send_to_aps(APIC_ICR_INIT, false);
	send_to_aps(APIC_ICR_SIPI | (RT_TRAMPOLINE_GPA >> 12), false);
	if (!wait_count(&smp.started, aps, RESEND_SIPI_US)) {
		/* The classic second SIPI; a CPU already running ignores it. */
		send_to_aps(APIC_ICR_SIPI | (RT_TRAMPOLINE_GPA >> 12), true);
		wait_count(&smp.started, aps, START_TIMEOUT_US);
	}
	started = __atomic_load_n(&smp.started, __ATOMIC_ACQUIRE);
	if (started < aps)
		print_cpus_in_state(RT_CPU_OFFLINE, "did not start");
	return started;
}

int smp_wait_aps(uint64_t timeout_ms)
{
	uint32_t target = __atomic_load_n(&smp.started, __ATOMIC_ACQUIRE);

	if (wait_count(&smp.finished, target, timeout_ms * 1000))
		return 0;
	printf("smp: timeout after %lu ms waiting for the APs\n", timeout_ms);
	print_cpus_in_state(RT_CPU_RUNNING, "is still running");
	return -1;
}

static void wake_bsp(void)
{
	apic_send_ipi(smp.bsp_apic_id, APIC_ICR_FIXED | RT_VEC_WAKE);
}

/* From entry.S, on the AP's own kernel stack. */
void rt_ap_start(uint32_t cpu)
{
	struct rt_cpu *c = &rt_cpus[cpu];

	rt_cpu_init(c);
	__atomic_store_n(&c->state, RT_CPU_RUNNING, __ATOMIC_RELEASE);
	__atomic_add_fetch(&smp.started, 1, __ATOMIC_ACQ_REL);
	wake_bsp();

	smp.fn(cpu, smp.arg);
	printf_flush();

	__atomic_store_n(&c->state, RT_CPU_DONE, __ATOMIC_RELEASE);
	__atomic_add_fetch(&smp.finished, 1, __ATOMIC_ACQ_REL);
	wake_bsp();
	rt_park();
}
