// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the PV PMU's MSR emulation (pmu/pmu.c), driven as a
 * hostile guest drives it. The input is a program: each 10 bytes are one
 * step (an RDMSR or WRMSR of one of the block's 256 MSRs, or of its
 * neighbours, with a 64-bit value; an exit; a host tick; a snapshot and
 * restore). A fake host stands in for perf and KVM. After the program
 * every counter is disabled: every host counter opened was closed and the
 * VM's budget is whole again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmu/pmu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fake {
	uint64_t hv[PV_PMU_NR_EVENTS], host[64];
	bool open[64];
	int opens, closes;
	uint8_t ram[8192] __attribute__((aligned(4096)));
};

static int f_open(void *ctx, const struct pmu_event_info *ev, uint64_t cfg, uint64_t period)
{
	struct fake *f = ctx;

	(void)ev, (void)cfg, (void)period;
	for (int h = 0; h < 64; h++)
		if (!f->open[h]) {
			f->open[h] = true;
			f->host[h] = 0;
			f->opens++;
			return h;
		}
	return -EMFILE;
}

static int f_read(void *ctx, int h, uint64_t *count)
{
	struct fake *f = ctx;

	if (h < 0 || h >= 64 || !f->open[h])
		abort(); /* the emulation read a handle it does not own */
	*count = f->host[h];
	return 0;
}

static int f_set_period(void *ctx, int h, uint64_t period)
{
	(void)ctx, (void)h, (void)period;
	return 0;
}

static void f_close(void *ctx, int h)
{
	struct fake *f = ctx;

	if (h < 0 || h >= 64 || !f->open[h])
		abort(); /* a double close */
	f->open[h] = false;
	f->closes++;
}

static uint64_t f_hv_read(void *ctx, uint32_t event)
{
	return ((struct fake *)ctx)->hv[event % PV_PMU_NR_EVENTS];
}

static int f_inject(void *ctx, uint64_t pmi_cfg)
{
	(void)ctx, (void)pmi_cfg;
	return 0;
}

static void *f_page(void *ctx, uint64_t gpa)
{
	struct fake *f = ctx;

	return gpa + 4096 <= sizeof(f->ram) ? f->ram + gpa : NULL;
}

static const struct pmu_host_ops ops = {
	.open = f_open,
	.read = f_read,
	.set_period = f_set_period,
	.close = f_close,
	.hv_read = f_hv_read,
	.inject = f_inject,
	.page = f_page,
};

static int probe_sw(const struct pmu_event_info *ev)
{
	return ev->cls == PV_PMU_CLASS_SW ? 0 : -ENOENT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fake *f;
	static struct pmu_caps caps;
	struct pmu_vm vm;
	struct pmu_vcpu p;

	if (!f) {
		f = aligned_alloc(4096, sizeof(*f));
		if (!f)
			abort();
		pmu_caps_init(&caps);
		pmu_caps_probe(&caps, probe_sw);
	}
	memset(f, 0, sizeof(*f));
	pmu_vm_init(&vm, &caps);
	pmu_vcpu_init(&p, &vm, &ops, f);
	for (size_t at = 0; at + 10 <= size; at += 10) {
		const uint8_t *s = data + at;
		uint32_t msr = PV_PMU_MSR_BASE - 8 + s[1] + (s[0] & 0x8 ? 8 : 0);
		uint64_t val, got;
		struct pmu_vcpu_state st;
		const char *why;

		memcpy(&val, s + 2, 8);
		switch (s[0] & 7) {
		case 0:
		case 1:
			pmu_msr_write(&p, msr, val);
			break;
		case 2:
			pmu_msr_read(&p, msr, &got);
			break;
		case 3: /* an exit of each kind the VMM counts */
			for (unsigned e = PV_PMU_EV_EXITS; e <= PV_PMU_EV_EXITS_MSR_WRITE; e++)
				f->hv[e] += val & 0xffff;
			pmu_after_exit(&p);
			break;
		case 4: /* the host counters count on, then the refresh tick */
			for (int h = 0; h < 64; h++)
				f->host[h] += val & 0xfffff;
			pmu_poll(&p);
			break;
		case 5: /* snapshot, then restore into a fresh PMU */
			pmu_vcpu_save(&p, &st);
			pmu_vcpu_fini(&p);
			pmu_vcpu_init(&p, &vm, &ops, f);
			if (pmu_vcpu_restore(&p, &st, &why))
				abort(); /* a state the PMU saved must restore */
			break;
		default:
			pmu_wants_refresh(&p);
			break;
		}
	}
	pmu_vcpu_fini(&p);
	if (f->opens != f->closes || vm.host_in_use != 0)
		abort(); /* a host counter leaked */
	return 0;
}
