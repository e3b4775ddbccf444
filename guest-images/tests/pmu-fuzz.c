/* SPDX-License-Identifier: MIT */
/*
 * pmu-fuzz: random and structured writes and reads over the whole PV PMU
 * MSR block (base + 0..0xff), catching #GP, with a PMI handler installed.
 * Then everything is disabled and the PMU must still count exactly.
 * cmdline: iters=N (default 20000), seed=N, wait_input (wait for a byte on
 * the UART before and after fuzzing, so a test can look at the VMM's fds),
 * wait_ms=N (bound of each wait, default 60000), trace (print every access).
 */
#include "guest.h"

#define GP 13
#define COM1 0x3f8
#define UART_LSR 5
#define UART_LSR_DR 0x01
#define BOTH (PV_PMU_CFG_USR | PV_PMU_CFG_OS)
#define SYNC_EVERY 1000

static struct pvpmu_info info;
static uint64_t rng;
static bool trace; /* cmdline trace: print every access before doing it */

static struct {
	uint64_t writes_ok, writes_gp, reads_ok, reads_gp, other_faults;
	uint64_t page_redirects;
} n;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint32_t pick_event(void)
{
	static const uint32_t known[] = {
		PV_PMU_EV_CYCLES,
		PV_PMU_EV_INSTRUCTIONS,
		PV_PMU_EV_TASK_CLOCK,
		PV_PMU_EV_PAGE_FAULTS,
		PV_PMU_EV_CONTEXT_SWITCHES,
		PV_PMU_EV_EXITS,
		PV_PMU_EV_EXITS_IO,
		PV_PMU_EV_EXITS_MSR,
		PV_PMU_EV_EXITS_HLT,
		PV_PMU_EV_KVM_RUN_NS,
		PV_PMU_EV_PMIS,
		PV_PMU_EV_EXITS_MSR_WRITE,
		PV_PMU_EV_KVM_EXITS,
		PV_PMU_EV_KVM_IO_EXITS,
		PV_PMU_EV_KVM_HOST_STATE_RELOAD,
	};

	switch (rnd() % 4) {
	case 0:
	case 1:
		return known[rnd() % ARRAY_SIZE(known)];
	case 2:
		return (uint32_t)(rnd() % info.nr_events);
	default:
		return (uint32_t)(rnd() & 0xffff);
	}
}

static uint32_t pick_msr(void)
{
	uint32_t nc = info.nr_counters + 1; /* one past the end, too */

	switch (rnd() % 16) {
	case 0 ... 4:
		return PV_PMU_MSR_BASE + (uint32_t)(rnd() % PV_PMU_MSR_BLOCK_SIZE);
	case 5 ... 7:
		return PV_PMU_MSR_CFG((uint32_t)(rnd() % nc));
	case 8 ... 9:
		return PV_PMU_MSR_CTR((uint32_t)(rnd() % nc));
	case 10:
		return PV_PMU_MSR_GLOBAL_CTRL;
	case 11:
		return PV_PMU_MSR_STATUS_CLEAR;
	case 12:
		return PV_PMU_MSR_PMI_CFG;
	case 13:
		return PV_PMU_MSR_PAGE;
	case 14:
		return PV_PMU_MSR_AVAIL(0) + 0x10 * (uint32_t)(rnd() % 3) + (uint32_t)(rnd() % 16);
	default:
		return PV_PMU_MSR_BASE + (uint32_t)(rnd() % 7);
	}
}

static uint64_t structured(uint32_t off)
{
	uint64_t counters = (1ULL << info.nr_counters) - 1;

	if (off >= 0x20 && off < 0x60 && !(off & 1)) { /* CFG */
		uint64_t v = pick_event() | (rnd() & (BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN));

		if (rnd() % 4)
			v |= BOTH;
		if (rnd() % 8 == 0)
			v |= 1ULL << (rnd() % 64);
		return v;
	}
	if (off >= 0x20 && off < 0x60) { /* CTR */
		switch (rnd() % 4) {
		case 0:
			return pvpmu_period_value(rnd() % 64 + 1);
		case 1:
			return 0 - (rnd() % 100000);
		case 2:
			return rnd() & PV_PMU_COUNTER_MASK;
		default:
			return rnd() % 1000;
		}
	}
	switch (off) {
	case 0x00:
		return rnd() & (rnd() % 8 ? counters : (counters << 1) | 1);
	case 0x02:
		return rnd() & (counters | PV_PMU_STATUS_THROTTLED | (rnd() % 8 ? 0 : 1ULL << (rnd() % 64)));
	case 0x03:
		return (rnd() & 0xff) | (rnd() & (PV_PMU_PMI_MODE_VECTOR | PV_PMU_PMI_MASK));
	case 0x05:
		switch (rnd() % 4) {
		case 0:
			return 0;
		case 1:
			return rt_mem_size() | PV_PMU_PAGE_ENABLE;
		case 2:
			return (uintptr_t)pvpmu_page() | (rnd() & 0xfff);
		default:
			return (uintptr_t)pvpmu_page() | PV_PMU_PAGE_ENABLE;
		}
	default:
		return rnd() % 4 ? rnd() & 0xff : rnd();
	}
}

static uint64_t pick_value(uint32_t msr)
{
	switch (rnd() % 8) {
	case 0:
		return rnd();
	case 1:
		return rnd() & 0xff;
	case 2:
		return 1ULL << (rnd() % 64);
	default:
		return structured(msr - PV_PMU_MSR_BASE);
	}
}

/* The VMM writes the page wherever the guest says: keep it on our own page. */
static uint64_t sanitize(uint32_t msr, uint64_t v)
{
	uint64_t addr = v & PV_PMU_PAGE_ADDR_MASK;

	if (msr != PV_PMU_MSR_PAGE || !(v & PV_PMU_PAGE_ENABLE) || (v & 0xffe))
		return v;
	if (addr >= rt_mem_size() || addr == (uintptr_t)pvpmu_page())
		return v;
	n.page_redirects++;
	return (uintptr_t)pvpmu_page() | PV_PMU_PAGE_ENABLE;
}

static bool on_pmi(uint64_t status, void *arg)
{
	(void)status;
	(void)arg;
	return true;
}

static void one(void)
{
	uint32_t msr = pick_msr();
	uint64_t v;
	int vec;

	if (rnd() % 10 < 7) {
		v = sanitize(msr, pick_value(msr));
		if (trace)
			printf("pmu-fuzz: wrmsr 0x%x 0x%lx\n", msr, v);
		vec = wrmsr_safe(msr, v);
		if (vec == RT_NO_FAULT)
			n.writes_ok++;
		else if (vec == GP)
			n.writes_gp++;
		else
			n.other_faults++;
	} else {
		if (trace)
			printf("pmu-fuzz: rdmsr 0x%x\n", msr);
		vec = rdmsr_safe(msr, &v);
		if (vec == RT_NO_FAULT)
			n.reads_ok++;
		else if (vec == GP)
			n.reads_gp++;
		else
			n.other_faults++;
	}
}

/* Wait (bounded) for one byte on the UART: the test's go-ahead. */
static bool wait_input(const char *what)
{
	uint64_t deadline = tsc_deadline_us(cmdline_get_u64("wait_ms", 60000) * 1000);

	printf("pmu-fuzz: waiting for input (%s)\n", what);
	while (rdtsc() < deadline) {
		if (inb(COM1 + UART_LSR) & UART_LSR_DR) {
			(void)inb(COM1);
			return true;
		}
		rt_user_call(rt_spin_until, (void *)(uintptr_t)tsc_deadline_us(2000));
	}
	return false;
}

static void disable_all(void)
{
	pvpmu_reset();
	wrmsr(PV_PMU_MSR_PMI_CFG, 0); /* a pending PMI may arrive now: the handler takes it */
	wrmsr(PV_PMU_MSR_PAGE, 0);
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, ((1ULL << info.nr_counters) - 1) | PV_PMU_STATUS_THROTTLED);
}

int main(const struct pv_bootinfo *bi)
{
	uint64_t iters = cmdline_get_u64("iters", 20000), seed = cmdline_get_u64("seed", 0x5eed), t0, v;
	const uint32_t k = 1000;

	(void)bi;
	rng = seed ? seed : 1;
	trace = cmdline_has("trace");
	if (!pvpmu_test_init(&info))
		return report_summary();
	pvpmu_reset();
	pvpmu_pmi_install(VEC_NMI, on_pmi, NULL);
	if (cmdline_has("wait_input"))
		report(wait_input("start"), "go-ahead to start");
	printf("pmu-fuzz: %lu iterations, seed 0x%lx\n", iters, seed);
	t0 = rdtsc();
	for (uint64_t i = 0; i < iters; i++) {
		one();
		if ((i + 1) % SYNC_EVERY == 0)
			ucall_sync((uint32_t)((i + 1) / SYNC_EVERY), n.writes_ok, n.writes_gp,
				   n.reads_ok + n.reads_gp, pvpmu_pmi_count());
	}
	disable_all();
	printf("pmu-fuzz: %lu writes accepted, %lu writes #GP, %lu reads, %lu reads #GP, %lu other faults, "
	       "%lu PMIs, %lu page redirects, %lu ms\n",
	       n.writes_ok, n.writes_gp, n.reads_ok, n.reads_gp, n.other_faults, pvpmu_pmi_count(),
	       n.page_redirects, tsc_to_us(rdtsc() - t0) / 1000);
	report(n.other_faults == 0, "only #GP, never another exception");
	report(n.writes_ok > 0 && n.writes_gp > 0 && n.reads_ok > 0 && n.reads_gp > 0,
	       "both outcomes seen for reads and writes");

	/* Still works: exact counting from a clean state. */
	report(rdmsr(PV_PMU_MSR_GLOBAL_CTRL) == 0 && rdmsr(PV_PMU_MSR_ERROR) == 0,
	       "everything disabled, ERROR 0");
	report(pvpmu_program(0, PV_PMU_EV_EXITS_IO, BOTH | PV_PMU_CFG_EN, 0) == RT_NO_FAULT,
	       "program counter 0");
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	pvpmu_io_exits(k);
	v = pvpmu_read(0);
	report(v == k, "after fuzzing: %u port writes count %lu", k, v);
	pvpmu_reset();
	if (cmdline_has("wait_input"))
		report(wait_input("end"), "go-ahead to finish");
	pvpmu_pmi_remove();
	return report_summary();
}
