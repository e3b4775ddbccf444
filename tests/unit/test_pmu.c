// SPDX-License-Identifier: MIT
/*
 * Unit tests of the PV PMU emulation (pmu/): MSR decode and every #GP rule,
 * counting continuity, overflow and the one-PMI-in-flight protocol, the
 * rate cap, host failures and the budget, the counter page. A fake host
 * stands in for perf and KVM.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmu/pmu.h"

struct fake {
	uint64_t hv[PV_PMU_NR_EVENTS]; /* class 2/3 counts */
	uint64_t host[64];	       /* per handle: count */
	bool open[64];
	uint64_t period[64];
	int opens, closes, fail_open; /* fail_open: -errno to return */
	int injects;
	uint64_t last_pmi_cfg;
	uint64_t stats[PMU_STAT_NR];
	int logs;
	uint8_t ram[8192] __attribute__((aligned(4096))); /* aligned_alloc keeps this aligned */
};

static int f_open(void *ctx, const struct pmu_event_info *ev, uint64_t cfg, uint64_t period)
{
	struct fake *f = ctx;

	(void)ev;
	(void)cfg;
	if (f->fail_open)
		return f->fail_open;
	for (int h = 0; h < 64; h++)
		if (!f->open[h]) {
			f->open[h] = true;
			f->host[h] = 0;
			f->period[h] = period;
			f->opens++;
			return h;
		}
	return -EMFILE;
}

static int f_read(void *ctx, int h, uint64_t *count)
{
	struct fake *f = ctx;

	cr_assert(f->open[h], "read of a closed handle %d", h);
	*count = f->host[h];
	return 0;
}

static int f_set_period(void *ctx, int h, uint64_t period)
{
	struct fake *f = ctx;

	f->period[h] = period;
	return 0;
}

static void f_close(void *ctx, int h)
{
	struct fake *f = ctx;

	cr_assert(f->open[h], "double close of handle %d", h);
	f->open[h] = false;
	f->closes++;
}

static uint64_t f_hv_read(void *ctx, uint32_t event)
{
	return ((struct fake *)ctx)->hv[event];
}

static int f_inject(void *ctx, uint64_t pmi_cfg)
{
	struct fake *f = ctx;

	f->injects++;
	f->last_pmi_cfg = pmi_cfg;
	return 0;
}

static void *f_page(void *ctx, uint64_t gpa)
{
	struct fake *f = ctx;

	return gpa + 4096 <= sizeof(f->ram) ? f->ram + gpa : NULL;
}

static void f_stat(void *ctx, enum pmu_stat s, uint64_t n)
{
	struct fake *f = ctx;

	if (s == PMU_STAT_HOST_COUNTERS)
		f->stats[s] = n;
	else
		f->stats[s] += n;
}

static void f_log(void *ctx, const char *msg)
{
	(void)msg;
	((struct fake *)ctx)->logs++;
}

static const struct pmu_host_ops fake_ops = {
	.open = f_open,
	.read = f_read,
	.set_period = f_set_period,
	.close = f_close,
	.hv_read = f_hv_read,
	.inject = f_inject,
	.page = f_page,
	.stat = f_stat,
	.log = f_log,
};

static struct fake *F;
static struct pmu_vm VM;
static struct pmu_vcpu P;

static int probe_sw_only(const struct pmu_event_info *ev)
{
	return ev->cls == PV_PMU_CLASS_SW ? 0 : -ENOENT;
}

static void setup(void)
{
	struct pmu_caps c;

	F = aligned_alloc(4096, sizeof(*F));
	cr_assert(F);
	memset(F, 0, sizeof(*F));
	pmu_caps_init(&c);
	cr_assert_eq(pmu_caps_probe(&c, probe_sw_only), 6);
	pmu_caps_set_available(&c, PV_PMU_EV_KVM_EXITS);
	pmu_vm_init(&VM, &c);
	pmu_vcpu_init(&P, &VM, &fake_ops, F);
}

static void teardown(void)
{
	pmu_vcpu_fini(&P);
	cr_expect_eq(F->opens, F->closes, "every host counter opened is closed (%d vs %d)", F->opens,
		     F->closes);
	cr_expect_eq(VM.host_in_use, 0);
	free(F);
}

TestSuite(pmu, .init = setup, .fini = teardown);

static uint64_t rd(uint32_t msr)
{
	uint64_t v = 0xdead;

	cr_assert_eq(pmu_msr_read(&P, msr, &v), 0, "rdmsr 0x%x", msr);
	return v;
}

static void wr(uint32_t msr, uint64_t v)
{
	cr_assert_eq(pmu_msr_write(&P, msr, v), 0, "wrmsr 0x%x = 0x%lx", msr, (unsigned long)v);
}

static void wr_gp(uint32_t msr, uint64_t v)
{
	cr_assert_eq(pmu_msr_write(&P, msr, v), -EINVAL, "wrmsr 0x%x = 0x%lx should #GP", msr,
		     (unsigned long)v);
}

#define BOTH (PV_PMU_CFG_USR | PV_PMU_CFG_OS)

Test(pmu, cpuid_leaves)
{
	uint32_t r[4];

	cr_assert(pmu_cpuid(&VM.caps, PV_PMU_CPUID_SIGNATURE, r));
	cr_assert_eq(r[0], PV_PMU_CPUID_MAX);
	cr_assert_eq(memcmp(&r[1], "Perf", 4), 0);
	cr_assert_eq(memcmp(&r[2], "viso", 4), 0);
	cr_assert_eq(memcmp(&r[3], "rPMU", 4), 0);
	cr_assert(pmu_cpuid(&VM.caps, PV_PMU_CPUID_INFO, r));
	cr_assert_eq(PV_PMU_INFO_EAX_VERSION(r[0]), 1);
	cr_assert_eq(PV_PMU_INFO_EAX_NR_COUNTERS(r[0]), PMU_NR_COUNTERS);
	cr_assert_eq(PV_PMU_INFO_EAX_WIDTH(r[0]), 48);
	cr_assert_eq(r[1], PV_PMU_MSR_BASE);
	cr_assert_eq(PV_PMU_INFO_ECX_NR_EVENTS(r[2]), PV_PMU_NR_EVENTS);
	cr_assert_eq(r[3] & PV_PMU_FEAT_HOST_HW, 0, "no hardware events were probed");
	cr_assert(pmu_cpuid(&VM.caps, PV_PMU_CPUID_LIMITS, r));
	cr_assert_eq(r[0], PMU_MIN_PERIOD);
	cr_assert_eq(r[3], PMU_HOST_BUDGET);
	cr_assert_not(pmu_cpuid(&VM.caps, PV_PMU_CPUID_MAX + 1, r));
}

Test(pmu, bitmaps)
{
	uint64_t avail1 = rd(PV_PMU_MSR_AVAIL(1)), avail2 = rd(PV_PMU_MSR_AVAIL(2));

	cr_assert_eq(rd(PV_PMU_MSR_AVAIL(0)), 0, "no hardware events");
	cr_assert_eq(avail1, 0x3f, "six software events");
	cr_assert(avail2 & 1, "exits");
	cr_assert_eq(rd(PV_PMU_MSR_SAMPLE(3)), 0, "class 3 cannot sample");
	cr_assert(rd(PV_PMU_MSR_AVAIL(3)) & 1, "kvm.exits");
	cr_assert_eq(rd(PV_PMU_MSR_FILTER(1)), 0, "software events ignore the filter");
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_AVAIL(4), &avail1), -EINVAL);
	wr_gp(PV_PMU_MSR_AVAIL(0), 0);
}

Test(pmu, gp_rules)
{
	uint64_t v;
	unsigned n = VM.caps.nr_counters;

	/* unknown registers of the block */
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_BASE + 0x07, &v), -EINVAL);
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_BASE + 0x1f, &v), -EINVAL);
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_BASE + 0xff, &v), -EINVAL);
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_CFG(n), &v), -EINVAL);
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_CTR(n), &v), -EINVAL);
	wr_gp(PV_PMU_MSR_BASE + 0x10, 0);
	wr_gp(PV_PMU_MSR_BASE + 0xc0, 0);
	wr_gp(PV_PMU_MSR_CFG(n), 0);
	/* read-only registers */
	wr_gp(PV_PMU_MSR_GLOBAL_STATUS, 0);
	wr_gp(PV_PMU_MSR_ERROR, 0);
	/* reserved bits */
	wr_gp(PV_PMU_MSR_GLOBAL_CTRL, 1ULL << n);
	wr_gp(PV_PMU_MSR_STATUS_CLEAR, 1ULL << 40);
	wr_gp(PV_PMU_MSR_PMI_CFG, 1ULL << 9);
	wr_gp(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MODE_VECTOR | 0x1f);
	wr_gp(PV_PMU_MSR_PAGE, 0x1000 | 2 | PV_PMU_PAGE_ENABLE);
	wr_gp(PV_PMU_MSR_PAGE, 0x100000 | PV_PMU_PAGE_ENABLE); /* not RAM */
	for (unsigned b = 0; b < 64; b++) {
		uint64_t bit = 1ULL << b;

		if (bit & PV_PMU_CFG_VALID)
			continue;
		wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_EV_EXITS | BOTH | bit);
	}
	/* events */
	wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | 0x100);		   /* out of range */
	wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | 0x3f);		   /* no such event */
	wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_CYCLES); /* unavailable */
	wr_gp(PV_PMU_MSR_CFG(0),
	      PV_PMU_CFG_EN | BOTH | PV_PMU_CFG_INT | PV_PMU_EV_KVM_EXITS);	    /* cannot sample */
	wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | PV_PMU_CFG_USR | PV_PMU_EV_EXITS); /* filter */
	wr_gp(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | PV_PMU_CFG_OS | PV_PMU_EV_TASK_CLOCK);
	wr_gp(PV_PMU_MSR_CTR(0), 1ULL << 48);
	wr_gp(PV_PMU_MSR_CTR(0), 0x8000000000000000ULL);
	/* but a disabled config with any event id is fine, and sign-extended values are */
	wr(PV_PMU_MSR_CFG(0), 0xffff | BOTH);
	wr(PV_PMU_MSR_CTR(0), 0xffff800000000000ULL);
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 0x800000000000ULL);
	cr_assert_gt(F->stats[PMU_STAT_GP], 50);
	cr_assert_leq(F->logs, 10, "guest-triggered log lines are rate-limited (%d)", F->logs);
	cr_assert_eq(F->opens, 0);
}

Test(pmu, nop_register)
{
	wr(PV_PMU_MSR_NOP, 12345);
	cr_assert_eq(rd(PV_PMU_MSR_NOP), 0);
	cr_assert_eq(rd(PV_PMU_MSR_STATUS_CLEAR), 0);
}

Test(pmu, hv_counts_exactly_and_continuously)
{
	F->hv[PV_PMU_EV_EXITS_IO] = 1000;
	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_EXITS_IO);
	F->hv[PV_PMU_EV_EXITS_IO] += 5;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 0, "not counting until GLOBAL_CTRL");
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	F->hv[PV_PMU_EV_EXITS_IO] += 7;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 7);
	wr(PV_PMU_MSR_CTR(0), 100);
	F->hv[PV_PMU_EV_EXITS_IO] += 3;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 103);
	/* reprogramming the same counter keeps the count continuous */
	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_EXITS_IO);
	F->hv[PV_PMU_EV_EXITS_IO] += 2;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 105);
	/* disabled: the value stays */
	wr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	F->hv[PV_PMU_EV_EXITS_IO] += 50;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 105);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	F->hv[PV_PMU_EV_EXITS_IO] += 1;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 106);
}

static void arm_hv_int(unsigned ctr, uint32_t ev, uint64_t period)
{
	wr(PV_PMU_MSR_CFG(ctr), PV_PMU_CFG_EN | PV_PMU_CFG_INT | BOTH | ev);
	wr(PV_PMU_MSR_CTR(ctr), (0 - period) & PV_PMU_COUNTER_MASK);
	wr(PV_PMU_MSR_GLOBAL_CTRL, rd(PV_PMU_MSR_GLOBAL_CTRL) | 1ULL << ctr);
}

Test(pmu, overflow_exact_at_the_exit_and_one_pmi_in_flight)
{
	arm_hv_int(1, PV_PMU_EV_EXITS_IO, 10);
	for (int i = 0; i < 9; i++) {
		F->hv[PV_PMU_EV_EXITS_IO]++;
		pmu_after_exit(&P);
	}
	cr_assert_eq(F->injects, 0);
	F->hv[PV_PMU_EV_EXITS_IO]++;
	pmu_after_exit(&P);
	cr_assert_eq(F->injects, 1, "PMI at the exit that wraps the counter");
	cr_assert_eq(F->last_pmi_cfg & PV_PMU_PMI_MODE_VECTOR, 0, "NMI by default");
	cr_assert_eq(rd(PV_PMU_MSR_GLOBAL_STATUS), 1ULL << 1);
	cr_assert(rd(PV_PMU_MSR_PMI_CFG) & PV_PMU_PMI_MASK, "the VMM masks the PMI");
	/* re-arm without unmasking: the next overflow stays pending */
	wr(PV_PMU_MSR_STATUS_CLEAR, 1ULL << 1);
	wr(PV_PMU_MSR_CTR(1), (0 - 10ULL) & PV_PMU_COUNTER_MASK);
	F->hv[PV_PMU_EV_EXITS_IO] += 10;
	pmu_after_exit(&P);
	cr_assert_eq(F->injects, 1, "masked");
	cr_assert_eq(rd(PV_PMU_MSR_GLOBAL_STATUS), 1ULL << 1);
	wr(PV_PMU_MSR_PMI_CFG, 0);
	cr_assert_eq(F->injects, 2, "delivered when the guest clears the mask");
	cr_assert_eq(F->stats[PMU_STAT_PMI], 2);
	cr_assert_eq(F->stats[PMU_STAT_OVERFLOW], 2);
}

/* PMI_ACK (PV_PMU_FEAT_ACK): one write clears the status, reloads and unmasks. */
Test(pmu, pmi_ack_clears_reloads_and_unmasks_in_one_write)
{
	uint32_t r[4];

	cr_assert(pmu_cpuid(&VM.caps, PV_PMU_CPUID_INFO, r));
	cr_assert(r[3] & PV_PMU_FEAT_ACK, "PMI_ACK is offered");
	arm_hv_int(1, PV_PMU_EV_EXITS_IO, 10);
	wr(PV_PMU_MSR_RELOAD(1), 0 - 10ULL); /* sign-extended, as CTR takes it */
	cr_assert_eq(rd(PV_PMU_MSR_RELOAD(1)), (0 - 10ULL) & PV_PMU_COUNTER_MASK);
	F->hv[PV_PMU_EV_EXITS_IO] += 10;
	pmu_after_exit(&P);
	cr_assert_eq(F->injects, 1);
	F->hv[PV_PMU_EV_EXITS_IO] += 3; /* counted past the wrap before the handler acknowledges */
	pmu_after_exit(&P);
	wr(PV_PMU_MSR_PMI_ACK, 1ULL << 1);
	cr_assert_eq(rd(PV_PMU_MSR_GLOBAL_STATUS), 0, "status cleared");
	cr_assert_eq(rd(PV_PMU_MSR_PMI_CFG) & PV_PMU_PMI_MASK, 0, "unmasked");
	cr_assert_eq(rd(PV_PMU_MSR_CTR(1)), (0 - 10ULL) & PV_PMU_COUNTER_MASK, "reloaded");
	cr_assert_eq(rd(PV_PMU_MSR_PMI_ACK), 0, "write-only");
	F->hv[PV_PMU_EV_EXITS_IO] += 10;
	pmu_after_exit(&P);
	cr_assert_eq(F->injects, 2, "the next period's PMI comes without another write");
	/* A counter bit acknowledged without a reload value keeps its count. */
	wr(PV_PMU_MSR_RELOAD(1), 0);
	F->hv[PV_PMU_EV_EXITS_IO] += 4;
	pmu_after_exit(&P);
	wr(PV_PMU_MSR_PMI_ACK, 1ULL << 1);
	cr_assert_eq(rd(PV_PMU_MSR_CTR(1)), 4);
	/* A PMI that came due while masked is delivered by the ACK itself. */
	wr(PV_PMU_MSR_CTR(1), 0 - 1ULL);
	wr(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MASK);
	F->hv[PV_PMU_EV_EXITS_IO] += 1;
	pmu_after_exit(&P);
	cr_assert_eq(F->injects, 2, "masked");
	wr(PV_PMU_MSR_PMI_ACK, 0);
	cr_assert_eq(F->injects, 3, "delivered at the ACK that unmasked it");
	/* #GP: status bits that do not exist, reload values that are not 48-bit, counters beyond. */
	wr_gp(PV_PMU_MSR_PMI_ACK, 1ULL << 20);
	wr_gp(PV_PMU_MSR_RELOAD(0), 1ULL << 50);
	wr_gp(PV_PMU_MSR_RELOAD(PMU_NR_COUNTERS), 0);
	cr_assert_eq(pmu_msr_read(&P, PV_PMU_MSR_RELOAD(PMU_NR_COUNTERS), &(uint64_t){ 0 }), -EINVAL);
}

/* Without PV_PMU_FEAT_ACK (a restored older guest's PMU) the two registers do not exist. */
Test(pmu, pmi_ack_absent_without_the_feature)
{
	struct pmu_vm vm;
	struct pmu_vcpu p;
	struct pmu_caps c = VM.caps;
	struct pmu_vcpu_state st = { .reload = { [0] = 5 } };
	const char *why = NULL;
	uint64_t v;

	c.features &= ~PV_PMU_FEAT_ACK;
	pmu_vm_init(&vm, &c);
	pmu_vcpu_init(&p, &vm, &fake_ops, F);
	cr_assert_eq(pmu_msr_write(&p, PV_PMU_MSR_PMI_ACK, 0), -EINVAL);
	cr_assert_eq(pmu_msr_read(&p, PV_PMU_MSR_PMI_ACK, &v), -EINVAL);
	cr_assert_eq(pmu_msr_write(&p, PV_PMU_MSR_RELOAD(0), 0), -EINVAL);
	cr_assert_eq(pmu_msr_read(&p, PV_PMU_MSR_RELOAD(0), &v), -EINVAL);
	cr_assert_eq(pmu_vcpu_state_check(&c, &st, &why), -EINVAL);
	cr_assert(why && strstr(why, "reload"), "%s", why);
	cr_assert_eq(pmu_vcpu_state_check(&VM.caps, &st, &why), 0, "with the feature: %s", why ? why : "");
	pmu_vcpu_fini(&p);
}

Test(pmu, pmi_vector_mode)
{
	wr(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MODE_VECTOR | 0x2e);
	arm_hv_int(0, PV_PMU_EV_EXITS, 1);
	F->hv[PV_PMU_EV_EXITS]++;
	pmu_after_exit(&P);
	cr_assert_eq(F->injects, 1);
	cr_assert_eq(F->last_pmi_cfg & 0x1ff, PV_PMU_PMI_MODE_VECTOR | 0x2e);
}

Test(pmu, overflow_without_int_sets_status_only)
{
	wr(PV_PMU_MSR_CFG(2), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_EXITS);
	wr(PV_PMU_MSR_CTR(2), PV_PMU_COUNTER_MASK);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1 << 2);
	F->hv[PV_PMU_EV_EXITS] += 3;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(2)), 2);
	cr_assert_eq(rd(PV_PMU_MSR_GLOBAL_STATUS), 1 << 2);
	cr_assert_eq(F->injects, 0);
}

Test(pmu, rate_cap_delays_pmis)
{
	unsigned burst = VM.caps.max_pmis_per_s / 10;

	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | PV_PMU_CFG_INT | BOTH | PV_PMU_EV_EXITS);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	for (unsigned i = 0; i < burst + 5; i++) {
		wr(PV_PMU_MSR_CTR(0), PV_PMU_COUNTER_MASK);
		F->hv[PV_PMU_EV_EXITS]++;
		pmu_after_exit(&P);
		wr(PV_PMU_MSR_PMI_CFG, 0);
	}
	cr_assert_eq(F->injects, (int)burst, "at most the burst within 100 ms");
	cr_assert(rd(PV_PMU_MSR_GLOBAL_STATUS) & PV_PMU_STATUS_THROTTLED);
	cr_assert_geq(F->stats[PMU_STAT_THROTTLED], 1);
	cr_assert(pmu_wants_refresh(&P), "a throttled PMI needs a later look");
}

Test(pmu, host_counter_lifecycle_and_period)
{
	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_TASK_CLOCK);
	cr_assert_eq(F->opens, 0, "opened only when active");
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	cr_assert_eq(F->opens, 1);
	cr_assert_eq(F->period[0], 0, "counting only without INT");
	cr_assert_eq(F->stats[PMU_STAT_HOST_COUNTERS], 1);
	F->host[0] = 5000;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 5000);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	cr_assert_eq(F->closes, 1, "closed when inactive");
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 5000);
	/* with INT the value arms the period; the minimum period applies (ns event) */
	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | PV_PMU_CFG_INT | BOTH | PV_PMU_EV_TASK_CLOCK);
	wr(PV_PMU_MSR_CTR(0), (0 - 100ULL) & PV_PMU_COUNTER_MASK);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	cr_assert_eq(F->opens, 2);
	cr_assert(F->open[0], "the fake reuses the closed handle 0");
	cr_assert_eq(F->period[0], PMU_MIN_PERIOD_NS);
	wr(PV_PMU_MSR_CTR(0), (0 - 2000000ULL) & PV_PMU_COUNTER_MASK);
	cr_assert_eq(F->period[0], 2000000);
	F->host[0] = 2000001;
	pmu_poll(&P);
	cr_assert_eq(F->injects, 1);
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 1);
	cr_assert_eq(F->period[0], PV_PMU_COUNTER_MASK, "re-armed to the next wrap");
}

Test(pmu, host_failure_sets_error_not_gp)
{
	F->fail_open = -EMFILE;
	wr(PV_PMU_MSR_CFG(3), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_PAGE_FAULTS);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1 << 3);
	cr_assert_eq(rd(PV_PMU_MSR_ERROR), 1 << 3);
	cr_assert_eq(F->stats[PMU_STAT_ERROR], 1);
	cr_assert_eq(rd(PV_PMU_MSR_CTR(3)), 0);
	F->fail_open = 0;
	wr(PV_PMU_MSR_CFG(3), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_PAGE_FAULTS);
	cr_assert_eq(rd(PV_PMU_MSR_ERROR), 0, "a later activation that works clears it");
	cr_assert_eq(VM.host_in_use, 1);
}

Test(pmu, per_vm_budget)
{
	struct pmu_vcpu q;

	VM.caps.host_budget = 3;
	pmu_vcpu_init(&q, &VM, &fake_ops, F);
	for (unsigned i = 0; i < 2; i++)
		wr(PV_PMU_MSR_CFG(i), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_CONTEXT_SWITCHES);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 3);
	cr_assert_eq(pmu_msr_write(&q, PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_TASK_CLOCK), 0);
	cr_assert_eq(pmu_msr_write(&q, PV_PMU_MSR_CFG(1), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_TASK_CLOCK), 0);
	cr_assert_eq(pmu_msr_write(&q, PV_PMU_MSR_GLOBAL_CTRL, 3), 0);
	cr_assert_eq(VM.host_in_use, 3);
	cr_assert_eq(q.error, 2, "the fourth host counter of the VM is refused");
	pmu_vcpu_fini(&q);
	cr_assert_eq(VM.host_in_use, 2);
}

Test(pmu, counter_page)
{
	struct pv_pmu_page *pg = (struct pv_pmu_page *)(F->ram + 4096);

	F->hv[PV_PMU_EV_EXITS] = 10;
	wr(PV_PMU_MSR_PAGE, 4096 | PV_PMU_PAGE_ENABLE);
	cr_assert_eq(rd(PV_PMU_MSR_PAGE), 4096 | PV_PMU_PAGE_ENABLE);
	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_EXITS);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	F->hv[PV_PMU_EV_EXITS] += 4;
	pmu_after_exit(&P);
	cr_assert_eq(pg->seq % 2, 0);
	cr_assert_eq(pg->version, PV_PMU_VERSION);
	cr_assert_eq(pg->size, sizeof(*pg));
	cr_assert_eq(pg->nr_counters, PMU_NR_COUNTERS);
	cr_assert_eq(pg->global_ctrl, 1);
	cr_assert_eq(pg->counter[0].value, 4);
	cr_assert_eq(pg->counter[0].value, rd(PV_PMU_MSR_CTR(0)));
	cr_assert_eq(pg->counter[0].config, PV_PMU_CFG_EN | BOTH | PV_PMU_EV_EXITS);
	uint64_t updates = pg->updates;

	wr(PV_PMU_MSR_PAGE, 0);
	F->hv[PV_PMU_EV_EXITS] += 4;
	pmu_after_exit(&P);
	cr_assert_eq(pg->counter[0].value, 4, "unregistered: no more updates");
	cr_assert_geq(pg->updates, updates);
}

Test(pmu, fuzz_never_leaks_or_breaks)
{
	uint64_t x = 88172645463325252ULL, v;

	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t msr = PV_PMU_MSR_BASE + (uint32_t)(x & 0xff);
		uint64_t val = (x >> 8) & 1 ? x : (x & (PV_PMU_CFG_VALID | 0xff));

		if ((x >> 9) & 1)
			pmu_msr_read(&P, msr, &v);
		else
			pmu_msr_write(&P, msr, val);
		F->hv[(x >> 20) % PV_PMU_NR_EVENTS] += x >> 60;
		F->host[(x >> 30) % 64] += x >> 50;
		pmu_after_exit(&P);
		if (i % 100 == 0)
			pmu_poll(&P);
		cr_assert_leq(VM.host_in_use, VM.caps.host_budget);
		cr_assert_eq((unsigned)(F->opens - F->closes), VM.host_in_use);
	}
	/* still works */
	wr(PV_PMU_MSR_GLOBAL_CTRL, 0);
	wr(PV_PMU_MSR_CFG(0), PV_PMU_CFG_EN | BOTH | PV_PMU_EV_EXITS_IO);
	wr(PV_PMU_MSR_CTR(0), 0);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 1);
	F->hv[PV_PMU_EV_EXITS_IO] += 42;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 42);
}

/* ---- snapshot and restore (docs/pvpmu.md section 13) ---------------------------- */

Test(pmu, save_restore_counters_continue)
{
	struct pmu_vcpu_state st;
	const char *why = "unset";
	int h;

	wr(PV_PMU_MSR_PMI_CFG, PV_PMU_PMI_MODE_VECTOR | 0x2e);
	wr(PV_PMU_MSR_CFG(0), PV_PMU_EV_EXITS_IO | BOTH | PV_PMU_CFG_EN);
	wr(PV_PMU_MSR_CFG(1), PV_PMU_EV_TASK_CLOCK | BOTH | PV_PMU_CFG_INT | PV_PMU_CFG_EN);
	wr(PV_PMU_MSR_CTR(1), PV_PMU_COUNTER_MASK - 5000000 + 1);
	wr(PV_PMU_MSR_RELOAD(1), 0 - 5000000ULL);
	wr(PV_PMU_MSR_GLOBAL_CTRL, 3);
	F->hv[PV_PMU_EV_EXITS_IO] += 1000000;
	h = P.ctr[1].h;
	F->host[h] += 123;
	pmu_vcpu_save(&P, &st);
	cr_assert_eq(st.value[0], 1000000, "saved after a sync: %lu", (unsigned long)st.value[0]);
	cr_assert_eq(st.value[1], PV_PMU_COUNTER_MASK - 5000000 + 1 + 123);
	cr_assert_eq(st.global_ctrl, 3);
	cr_assert_eq(pmu_vcpu_state_check(&VM.caps, &st, &why), 0, "%s", why);

	/* The old PMU goes (its process ended); a fresh one restores the state. */
	pmu_vcpu_fini(&P);
	pmu_vcpu_init(&P, &VM, &fake_ops, F);
	cr_assert_eq(pmu_vcpu_restore(&P, &st, &why), 0, "%s", why);
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 1000000, "continues from the saved value, not 0");
	F->hv[PV_PMU_EV_EXITS_IO] += 5;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(0)), 1000005, "and counts on exactly, not twice");
	h = P.ctr[1].h;
	cr_assert_geq(h, 0, "a host counter was opened again");
	cr_assert_eq(F->host[h], 0, "a fresh host counter");
	cr_assert_eq(F->period[h], 5000000 - 123, "its sampling period reaches the guest's wrap");
	F->host[h] += 7;
	cr_assert_eq(rd(PV_PMU_MSR_CTR(1)), st.value[1] + 7);
	cr_assert_eq(rd(PV_PMU_MSR_PMI_CFG), PV_PMU_PMI_MODE_VECTOR | 0x2e);
	cr_assert_eq(rd(PV_PMU_MSR_GLOBAL_CTRL), 3);
	cr_assert_eq(rd(PV_PMU_MSR_RELOAD(1)), (0 - 5000000ULL) & PV_PMU_COUNTER_MASK,
		     "the reload value too");
}

Test(pmu, restore_sets_what_the_guest_cannot)
{
	struct pmu_vcpu_state st = { 0 };
	const char *why;

	/* A pending, masked PMI with an overflow and THROTTLED: GLOBAL_STATUS is read-only for a guest. */
	st.status = 1 | PV_PMU_STATUS_THROTTLED;
	st.pmi_cfg = PV_PMU_PMI_MASK;
	st.pmi_pending = true;
	st.page = 4096 | PV_PMU_PAGE_ENABLE;
	st.page_seq = 40;
	st.page_updates = 20;
	cr_assert_eq(pmu_vcpu_restore(&P, &st, &why), 0, "%s", why);
	cr_assert_eq(rd(PV_PMU_MSR_GLOBAL_STATUS), 1 | PV_PMU_STATUS_THROTTLED);
	cr_assert_eq(F->injects, 0, "masked: the pending PMI waits");
	wr(PV_PMU_MSR_PMI_CFG, 0);
	cr_assert_eq(F->injects, 1, "unmasking delivers the restored pending PMI");
	/* The page continues its sequence and update counts instead of restarting. */
	cr_assert_geq(((struct pv_pmu_page *)(F->ram + 4096))->updates, 21);
	cr_assert_eq(((struct pv_pmu_page *)(F->ram + 4096))->seq % 2, 0);
	cr_assert_gt(((struct pv_pmu_page *)(F->ram + 4096))->seq, 40);
}

Test(pmu, restore_recomputes_error)
{
	struct pmu_vcpu_state st = { 0 };
	const char *why;

	st.cfg[0] = PV_PMU_EV_TASK_CLOCK | BOTH | PV_PMU_CFG_EN;
	st.global_ctrl = 1;
	F->fail_open = -EMFILE; /* the new host is out of fds: a soft ERROR, as at any start */
	cr_assert_eq(pmu_vcpu_restore(&P, &st, &why), 0, "%s", why);
	cr_assert_eq(rd(PV_PMU_MSR_ERROR), 1);
	F->fail_open = 0;
}

Test(pmu, state_check_refuses_impossible_states)
{
	static const struct {
		struct pmu_vcpu_state st;
		const char *want;
	} cases[] = {
		{ { .global_ctrl = 1ULL << 8 }, "GLOBAL_CTRL" },
		{ { .status = 1ULL << 20 }, "GLOBAL_STATUS" },
		{ { .pmi_cfg = PV_PMU_PMI_MODE_VECTOR | 0x10 }, "PMI_CFG" },
		{ { .pmi_cfg = 1ULL << 40 }, "PMI_CFG" },
		{ { .page = 0x1000 | 0x10 }, "PAGE" },
		{ { .page_seq = 3 }, "odd" },
		{ { .value = { [2] = 1ULL << 48 } }, "wider" },
		{ { .cfg = { [1] = PV_PMU_CFG_EN | (1ULL << 30) } }, "reserved bits" },
		{ { .cfg = { [1] = PV_PMU_CFG_EN | BOTH | 255 } }, "not available" },
		{ { .cfg = { [1] = PV_PMU_CFG_EN | PV_PMU_CFG_USR | PV_PMU_EV_EXITS_IO } }, "filter" },
		{ { .reload = { [3] = 1ULL << 48 } }, "reload value is wider" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = NULL;

		cr_assert_eq(pmu_vcpu_state_check(&VM.caps, &cases[i].st, &why), -EINVAL, "case %zu", i);
		cr_assert(why && strstr(why, cases[i].want), "case %zu: '%s' lacks '%s'", i, why,
			  cases[i].want);
		cr_assert_eq(pmu_vcpu_restore(&P, &cases[i].st, &why), -EINVAL, "restore refuses case %zu",
			     i);
	}
	cr_assert_eq(F->opens, 0, "nothing was opened for a refused state");
}

Test(pmu, caps_equal)
{
	struct pmu_caps a = VM.caps, b = VM.caps;
	const char *why = "unset";

	cr_assert(pmu_caps_equal(&a, &b, &why));
	cr_assert_null(why);
	b.avail[0] ^= 1ULL << 5;
	cr_assert_not(pmu_caps_equal(&a, &b, &why));
	cr_assert(strstr(why, "AVAIL"));
	b = a;
	b.nr_counters--;
	cr_assert_not(pmu_caps_equal(&a, &b, &why));
	b = a;
	b.host_budget++;
	cr_assert_not(pmu_caps_equal(&a, &b, &why));
	cr_assert(strstr(why, "limits"));
}
