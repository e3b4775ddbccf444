/* SPDX-License-Identifier: MIT */
/*
 * Guest driver for perfvisor's paravirtual PMU (include/perfvisor/pvpmu.h):
 * CPUID discovery, the event bitmaps, counter programming through the MSR
 * block, the shared counter page (seqlock reads, fine in ring 3) and a PMI
 * handler for NMIs or a fixed vector. Never uses RDPMC.
 */
#include "rt_internal.h"

#define PAGE_READ_TRIES 1000

static struct {
	bool present;
	bool have_bitmaps;
	struct pvpmu_info info;
	uint64_t bitmap[3][PV_PMU_MAX_BITMAP_WORDS]; /* AVAIL, SAMPLE, FILTER */
} pmu;

/* One counter page per CPU: the PMU is per vCPU, and so is its page. */
struct page_slot {
	struct pv_pmu_page page;
} __attribute__((aligned(4096)));
static struct page_slot pages[PV_MAX_CPUS];
_Static_assert(sizeof(struct page_slot) == 4096, "one 4 KiB page per CPU");

static struct {
	pvpmu_pmi_fn fn;
	void *arg;
	uint32_t vector; /* VEC_NMI or a fixed vector; 0: not installed */
	uint64_t count;
	uint64_t status_seen;
} pmi;

/* ---- safe MSR access ------------------------------------------------------- */

struct msr_op {
	uint32_t msr;
	uint64_t value;
};

static void do_rdmsr(void *arg)
{
	struct msr_op *op = arg;

	op->value = rdmsr(op->msr);
}

static void do_wrmsr(void *arg)
{
	struct msr_op *op = arg;

	wrmsr(op->msr, op->value);
}

int rdmsr_safe(uint32_t msr, uint64_t *v)
{
	struct msr_op op = { msr, 0 };
	int vec = rt_catch(do_rdmsr, &op, NULL);

	*v = vec == RT_NO_FAULT ? op.value : 0;
	return vec;
}

int wrmsr_safe(uint32_t msr, uint64_t v)
{
	struct msr_op op = { msr, v };

	return rt_catch(do_wrmsr, &op, NULL);
}

/* ---- discovery ------------------------------------------------------------- */

bool pvpmu_probe(struct pvpmu_info *info)
{
	struct pvpmu_info i = { 0 };
	uint32_t a, b, c, d;

	cpuid_count(PV_PMU_CPUID_SIGNATURE, 0, &a, &b, &c, &d);
	if (b != PV_PMU_SIG_EBX || c != PV_PMU_SIG_ECX || d != PV_PMU_SIG_EDX || a < PV_PMU_CPUID_INFO) {
		if (info)
			*info = i;
		return false;
	}
	i.max_leaf = a;
	cpuid_count(PV_PMU_CPUID_INFO, 0, &a, &b, &c, &d);
	i.version = PV_PMU_INFO_EAX_VERSION(a);
	i.nr_counters = PV_PMU_INFO_EAX_NR_COUNTERS(a);
	i.width = PV_PMU_INFO_EAX_WIDTH(a);
	i.msr_base = b;
	i.nr_events = PV_PMU_INFO_ECX_NR_EVENTS(c);
	i.features = d;
	if (i.max_leaf >= PV_PMU_CPUID_LIMITS) {
		cpuid_count(PV_PMU_CPUID_LIMITS, 0, &a, &b, &c, &d);
		i.min_period = a;
		i.min_period_ns = b;
		i.max_pmi_rate = c;
		i.host_counters = d;
	}
	pmu.info = i;
	pmu.present = true;
	if (info)
		*info = i;
	return true;
}

bool pvpmu_init(struct pvpmu_info *info)
{
	uint32_t words;

	if (!pvpmu_probe(info))
		return false;
	if (pmu.have_bitmaps)
		return true;
	words = (pmu.info.nr_events + 63) / 64;
	if (words > PV_PMU_MAX_BITMAP_WORDS)
		words = PV_PMU_MAX_BITMAP_WORDS;
	for (uint32_t w = 0; w < words; w++) {
		pmu.bitmap[0][w] = rdmsr(PV_PMU_MSR_AVAIL(w));
		pmu.bitmap[1][w] = rdmsr(PV_PMU_MSR_SAMPLE(w));
		pmu.bitmap[2][w] = rdmsr(PV_PMU_MSR_FILTER(w));
	}
	pmu.have_bitmaps = true;
	return true;
}

static bool bit(uint32_t kind, uint32_t id)
{
	if (!pmu.have_bitmaps || id >= pmu.info.nr_events || id >= 64 * PV_PMU_MAX_BITMAP_WORDS)
		return false;
	return (pmu.bitmap[kind][id / 64] >> (id % 64)) & 1;
}

bool pvpmu_event_available(uint32_t id)
{
	return bit(0, id);
}

bool pvpmu_event_can_sample(uint32_t id)
{
	return bit(1, id);
}

bool pvpmu_event_filters(uint32_t id)
{
	return bit(2, id);
}

uint64_t pvpmu_bitmap(uint32_t kind, uint32_t word)
{
	return kind < 3 && word < PV_PMU_MAX_BITMAP_WORDS ? pmu.bitmap[kind][word] : 0;
}

/* ---- counters -------------------------------------------------------------- */

int pvpmu_program(uint32_t i, uint32_t event, uint64_t flags, uint64_t period)
{
	int vec = wrmsr_safe(PV_PMU_MSR_CTR(i), period ? pvpmu_period_value(period) : 0);

	if (vec != RT_NO_FAULT)
		return vec;
	return wrmsr_safe(PV_PMU_MSR_CFG(i), (event & PV_PMU_CFG_EVENT_MASK) | flags);
}

void pvpmu_start(uint64_t mask)
{
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, rdmsr(PV_PMU_MSR_GLOBAL_CTRL) | mask);
}

void pvpmu_stop(uint64_t mask)
{
	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, rdmsr(PV_PMU_MSR_GLOBAL_CTRL) & ~mask);
}

uint64_t pvpmu_read(uint32_t i)
{
	return rdmsr(PV_PMU_MSR_CTR(i));
}

void pvpmu_write(uint32_t i, uint64_t value)
{
	wrmsr(PV_PMU_MSR_CTR(i), value);
}

void pvpmu_reset(void)
{
	uint64_t counter_bits = pmu.info.nr_counters >= 64 ? ~0ULL : (1ULL << pmu.info.nr_counters) - 1;

	wrmsr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	for (uint32_t i = 0; i < pmu.info.nr_counters; i++) {
		wrmsr(PV_PMU_MSR_CFG(i), 0);
		wrmsr(PV_PMU_MSR_CTR(i), 0);
	}
	wrmsr(PV_PMU_MSR_STATUS_CLEAR, counter_bits | PV_PMU_STATUS_THROTTLED);
}

/* ---- the counter page ------------------------------------------------------ */

struct pv_pmu_page *pvpmu_page(void)
{
	return &pages[smp_cpu_id()].page;
}

int pvpmu_page_register(void)
{
	return wrmsr_safe(PV_PMU_MSR_PAGE, (uintptr_t)pvpmu_page() | PV_PMU_PAGE_ENABLE);
}

void pvpmu_page_unregister(void)
{
	wrmsr(PV_PMU_MSR_PAGE, 0);
}

static inline uint32_t seq_begin(const volatile struct pv_pmu_page *p)
{
	uint32_t s = p->seq;

	/* x86 keeps loads in order; the compiler must too. */
	asm volatile("" ::: "memory");
	return s;
}

static inline bool seq_retry(const volatile struct pv_pmu_page *p, uint32_t s)
{
	asm volatile("" ::: "memory");
	return (s & 1) || p->seq != s;
}

bool pvpmu_page_read(uint32_t i, uint64_t *value, uint64_t *config)
{
	const volatile struct pv_pmu_page *p = pvpmu_page();

	if (i >= PV_PMU_MAX_COUNTERS)
		return false;
	for (int t = 0; t < PAGE_READ_TRIES; t++) {
		uint32_t s = seq_begin(p);
		uint64_t v = p->counter[i].value, c = p->counter[i].config;

		if (seq_retry(p, s)) {
			cpu_relax();
			continue;
		}
		*value = v;
		if (config)
			*config = c;
		return true;
	}
	return false;
}

bool pvpmu_page_header(struct pv_pmu_page *out)
{
	const volatile struct pv_pmu_page *p = pvpmu_page();

	for (int t = 0; t < PAGE_READ_TRIES; t++) {
		uint32_t s = seq_begin(p);

		memcpy(out, (const void *)p, offsetof(struct pv_pmu_page, counter));
		if (!seq_retry(p, s))
			return true;
		cpu_relax();
	}
	return false;
}

/* ---- PMIs ------------------------------------------------------------------ */

static uint64_t pmi_cfg_value(void)
{
	/* Not installed: NMI mode (the reset value). */
	if (pmi.vector == VEC_NMI || !pmi.vector)
		return 0;
	return PV_PMU_PMI_MODE_VECTOR | pmi.vector;
}

static bool pmi_handler(struct rt_regs *regs)
{
	uint64_t status = rdmsr(PV_PMU_MSR_GLOBAL_STATUS);
	bool rearm = true;

	(void)regs;
	__atomic_add_fetch(&pmi.count, 1, __ATOMIC_RELAXED);
	__atomic_or_fetch(&pmi.status_seen, status, __ATOMIC_RELAXED);
	if (status)
		wrmsr(PV_PMU_MSR_STATUS_CLEAR, status);
	if (pmi.fn)
		rearm = pmi.fn(status, pmi.arg);
	if (rearm)
		wrmsr(PV_PMU_MSR_PMI_CFG, pmi_cfg_value());
	if (pmi.vector != VEC_NMI)
		apic_eoi();
	return true;
}

int pvpmu_pmi_install(uint32_t vector, pvpmu_pmi_fn fn, void *arg)
{
	if (vector != VEC_NMI && (vector < RT_VEC_FIRST_FREE || vector > RT_VEC_LAST_STUB))
		return 13;
	pmi.fn = fn;
	pmi.arg = arg;
	pmi.vector = vector;
	if (vector != VEC_NMI)
		apic_sw_enable();
	rt_set_handler(vector, pmi_handler);
	return wrmsr_safe(PV_PMU_MSR_PMI_CFG, pmi_cfg_value());
}

void pvpmu_pmi_remove(void)
{
	wrmsr(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MASK);
	if (pmi.vector)
		rt_set_handler(pmi.vector, NULL);
	pmi.vector = 0;
	pmi.fn = NULL;
}

void pvpmu_pmi_unmask(void)
{
	wrmsr(PV_PMU_MSR_PMI_CFG, pmi_cfg_value());
}

uint64_t pvpmu_pmi_count(void)
{
	return __atomic_load_n(&pmi.count, __ATOMIC_RELAXED);
}

uint64_t pvpmu_pmi_status_seen(void)
{
	return __atomic_exchange_n(&pmi.status_seen, 0, __ATOMIC_RELAXED);
}

/* ---- helpers for PMU tests ------------------------------------------------- */

#define UART_SCRATCH_PORT 0x3ff

bool pvpmu_test_init(struct pvpmu_info *info)
{
	if (pvpmu_init(info))
		return true;
	report(false, "PV PMU present");
	return false;
}

void pvpmu_io_exits(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		outb(UART_SCRATCH_PORT, (uint8_t)i);
}

long rt_spin_until(void *deadline)
{
	uint64_t end = (uint64_t)(uintptr_t)deadline;
	long n = 0;

	while (rdtsc() < end)
		n++;
	return n;
}
