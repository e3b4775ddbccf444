// SPDX-License-Identifier: MIT
/*
 * Unit tests for cpuid_build: the topology perfvisor presents, from the
 * supported leaves of an Intel host (like kvm_pvm's: leaf 4 caches, 0xB and
 * 0x1F with only a blank subleaf 0) and of an AMD host (0x80000008,
 * 0x8000001E), for 1, 2, 8 and 64 vCPUs. Every vendor-specific leaf is
 * checked on its own vendor and left alone on the other.
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define SIG KVM_CPUID_FLAG_SIGNIFCANT_INDEX
#define MAXENT 64

struct leaf {
	uint32_t function, index, flags, eax, ebx, ecx, edx;
};

/* As KVM_GET_SUPPORTED_CPUID reported on a kvm_pvm host (Intel Xeon). */
static const struct leaf intel_leaves[] = {
	{ 0x0, 0, 0, 0x24, 0x756e6547, 0x6c65746e, 0x49656e69 }, /* GenuineIntel */
	{ 0x1, 0, 0, 0x000a0671, 0x01020800, 0x81202000, 0x0f8bfbff },
	{ 0x4, 0, SIG, 0x04000121, 0x02c0003f, 0x3f, 0 },
	{ 0x4, 1, SIG, 0x04000122, 0x03c0003f, 0x3f, 0 },
	{ 0x4, 2, SIG, 0x04000143, 0x03c0003f, 0x7ff, 0 },
	{ 0x4, 3, SIG, 0x04004163, 0x03c0003f, 0x77fff, 0 },
	{ 0x4, 4, SIG, 0, 0, 0, 0 }, /* cache type 0: the end */
	{ 0xb, 0, SIG, 0, 0, 0, 1 },
	{ 0x1f, 0, SIG, 0, 0, 0, 1 },
	{ 0x80000000, 0, 0, 0x80000008, 0, 0, 0 },
	{ 0x80000008, 0, 0, 0x3930, 0, 0x1234, 0 }, /* ECX reserved on Intel: kept */
};

/* An AMD EPYC host's topology leaves (kvm_amd). */
static const struct leaf amd_leaves[] = {
	{ 0x0, 0, 0, 0x10, 0x68747541, 0x444d4163, 0x69746e65 }, /* AuthenticAMD */
	{ 0x1, 0, 0, 0x00a00f11, 0x00800800, 0xfed83203, 0x178bfbff },
	{ 0xb, 0, SIG, 1, 2, 0x100, 0 },
	{ 0xb, 1, SIG, 7, 64, 0x201, 0 },
	{ 0xb, 2, SIG, 0, 0, 2, 0 },
	{ 0x80000000, 0, 0, 0x80000021, 0x68747541, 0x444d4163, 0x69746e65 },
	{ 0x80000008, 0, 0, 0x3030, 0x7, 0x703f, 0 },
	{ 0x8000001e, 0, 0, 9, 0x104, 0x3, 0 },
};

static struct kvm_cpuid2 *make(const struct leaf *l, size_t n)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + MAXENT * sizeof(c->entries[0]));

	cr_assert(c);
	for (size_t i = 0; i < n; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		e->function = l[i].function;
		e->index = l[i].index;
		e->flags = l[i].flags;
		e->eax = l[i].eax;
		e->ebx = l[i].ebx;
		e->ecx = l[i].ecx;
		e->edx = l[i].edx;
	}
	c->nent = (uint32_t)n;
	return c;
}

static struct kvm_cpuid2 *build(const struct kvm_cpuid2 *sup, unsigned index, unsigned n)
{
	struct kvm_cpuid2 *out = calloc(1, sizeof(*out) + MAXENT * sizeof(out->entries[0]));

	cr_assert(out);
	cr_assert_eq(cpuid_build(sup, index, n, out, MAXENT), 0);
	return out;
}

static const struct kvm_cpuid_entry2 *get(const struct kvm_cpuid2 *c, uint32_t f, uint32_t i)
{
	const struct kvm_cpuid_entry2 *e = cpuid_find(c, f, i);

	cr_assert(e, "leaf 0x%x.%u missing", f, i);
	return e;
}

/* Leaf 1 and the x2APIC leaves agree with (index, n) on either vendor. */
static void check_common(const struct kvm_cpuid2 *c, unsigned index, unsigned n, uint32_t topo_leaf)
{
	const struct kvm_cpuid_entry2 *e = get(c, 1, 0);

	cr_assert_eq(e->ebx >> 24, index, "leaf 1 APIC id");
	cr_assert_eq((e->ebx >> 16) & 0xff, n > 255 ? 255 : n, "leaf 1 logical count");
	cr_assert(e->edx & (1u << 28), "HTT");
	cr_assert(e->ecx & (1u << 31), "hypervisor bit");
	e = get(c, topo_leaf, 0);
	cr_assert_eq(e->ebx, 1, "SMT level: 1 thread");
	cr_assert_eq((e->ecx >> 8) & 0xff, 1, "level type SMT");
	cr_assert_eq(e->edx, index, "x2APIC id");
	e = get(c, topo_leaf, 1);
	cr_assert_eq(e->ebx, n, "core level counts every vCPU");
	cr_assert_eq((e->ecx >> 8) & 0xff, 2, "level type core");
	cr_assert_eq(1u << e->eax >= n && (e->eax == 0 || 1u << (e->eax - 1) < n), 1, "core shift %u for %u",
		     e->eax, n);
	e = get(c, topo_leaf, 2);
	cr_assert_eq(e->ebx, 0, "level 2 ends the list");
	cr_assert_eq((e->ecx >> 8) & 0xff, 0, "level type invalid");
}

Test(cpuid, vendor)
{
	struct kvm_cpuid2 *i = make(intel_leaves, sizeof(intel_leaves) / sizeof(intel_leaves[0]));
	struct kvm_cpuid2 *a = make(amd_leaves, sizeof(amd_leaves) / sizeof(amd_leaves[0]));

	cr_assert(!cpuid_is_amd(i));
	cr_assert(cpuid_is_amd(a));
	free(i);
	free(a);
}

/* Build the CPUID of a few vCPUs of 1, 2, 8 and 64 from `l` and hand each to check(). */
static void each_vcpu(const struct leaf *l, size_t nl,
		      void (*check)(const struct kvm_cpuid2 *c, unsigned index, unsigned n))
{
	static const unsigned counts[] = { 1, 2, 8, 64 };
	struct kvm_cpuid2 *sup = make(l, nl);

	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		unsigned n = counts[k];

		for (unsigned index = 0; index<n; index += n> 2 ? n / 2 - 1 : 1) {
			struct kvm_cpuid2 *c = build(sup, index, n);

			check(c, index, n);
			free(c);
		}
	}
	free(sup);
}

static void check_intel(const struct kvm_cpuid2 *c, unsigned index, unsigned n)
{
	check_common(c, index, n, 0xb);
	check_common(c, index, n, 0x1f);
	/* Leaf 4: cores per package on every cache subleaf, the rest kept. */
	for (uint32_t sub = 0; sub < 4; sub++) {
		const struct kvm_cpuid_entry2 *e = get(c, 4, sub);

		cr_assert_eq((e->eax >> 26) + 1, n, "leaf 4.%u cores for n=%u", sub, n);
		cr_assert_eq(e->eax & 0x03ffffffu, intel_leaves[2 + sub].eax & 0x03ffffffu);
	}
	cr_assert_eq(get(c, 4, 4)->eax, 0, "the terminating subleaf stays type 0");
	cr_assert_eq(get(c, 0x80000008, 0)->ecx, 0x1234, "AMD's core count is not written on Intel");
	cr_assert_null(cpuid_find(c, 0x8000001e, 0));
}

static void check_amd(const struct kvm_cpuid2 *c, unsigned index, unsigned n)
{
	const struct kvm_cpuid_entry2 *e;
	unsigned shift = 0;

	while ((1u << shift) < n)
		shift++;
	check_common(c, index, n, 0xb);
	cr_assert_null(cpuid_find(c, 0x1f, 0), "no 0x1F where the host lists none");
	e = get(c, 0x80000008, 0);
	cr_assert_eq((e->ecx & 0xff) + 1, n, "0x80000008 cores for n=%u", n);
	cr_assert_eq((e->ecx >> 12) & 0xf, shift, "APIC id size");
	cr_assert_eq(e->ecx & ~0xf0ffu, 0x703fu & ~0xf0ffu, "other ECX bits kept");
	cr_assert_eq(e->eax, 0x3030, "address sizes kept");
	e = get(c, 0x8000001e, 0);
	cr_assert_eq(e->eax, index, "extended APIC id");
	cr_assert_eq(e->ebx & 0xff, index & 0xff, "core id");
}

Test(cpuid, intel_host)
{
	each_vcpu(intel_leaves, sizeof(intel_leaves) / sizeof(intel_leaves[0]), check_intel);
}

Test(cpuid, amd_host)
{
	each_vcpu(amd_leaves, sizeof(amd_leaves) / sizeof(amd_leaves[0]), check_amd);
}

Test(cpuid, the_supported_list_is_not_modified)
{
	struct kvm_cpuid2 *sup = make(amd_leaves, sizeof(amd_leaves) / sizeof(amd_leaves[0]));
	struct kvm_cpuid2 *copy = make(amd_leaves, sizeof(amd_leaves) / sizeof(amd_leaves[0]));
	struct kvm_cpuid2 *c = build(sup, 3, 4);

	cr_assert_eq(memcmp(sup, copy, sizeof(*sup) + sup->nent * sizeof(sup->entries[0])), 0);
	free(c);
	free(sup);
	free(copy);
}

Test(cpuid, too_small_output)
{
	struct kvm_cpuid2 *sup = make(intel_leaves, sizeof(intel_leaves) / sizeof(intel_leaves[0]));
	struct kvm_cpuid2 *out = calloc(1, sizeof(*out) + MAXENT * sizeof(out->entries[0]));
	unsigned need = sup->nent - 2 + 6; /* 0xB and 0x1F: one listed entry each becomes three */

	cr_assert_eq(cpuid_build(sup, 0, 2, out, need - 1), -ENOSPC);
	cr_assert_eq(cpuid_build(sup, 0, 2, out, need), 0);
	cr_assert_eq(out->nent, need);
	cr_assert_leq(need, sup->nent + CPUID_EXTRA_ENTRIES);
	free(out);
	free(sup);
}

/* ---- --cpuid-hide ---------------------------------------------------------- */

static const struct leaf hide_leaves[] = {
	{ 0x1, 0, 0, 0x000906ea, 0x00800800, 0xf7fa3203, 0x178bfbff },
	{ 0x7, 0, SIG, 0, 0xffffffff, 0xffffffff, 0xffffffff },
	{ 0x7, 1, SIG, 0xffffffff, 0, 0, 0 },
	{ 0xd, 0, SIG, 0xe7, 0x240, 0xa80, 0 },
	{ 0xd, 1, SIG, 0xf, 0, 0, 0 },
};

Test(cpuid, hide_xsave_family)
{
	struct kvm_cpuid2 *c = make(hide_leaves, sizeof(hide_leaves) / sizeof(hide_leaves[0]));

	cpuid_hide(c, CPUID_HIDE_XSAVE);
	cr_assert_eq(get(c, 1, 0)->ecx & (1u << 26 | 1u << 27 | 1u << 28), 0, "XSAVE, OSXSAVE, AVX cleared");
	cr_assert_neq(get(c, 1, 0)->ecx & (1u << 13), 0, "CX16 kept");
	cr_assert_eq(get(c, 7, 0)->ebx & (1u << 5 | 1u << 16), 0, "AVX2, AVX512F cleared");
	cr_assert_neq(get(c, 7, 0)->ebx & 1u, 0, "FSGSBASE kept");
	cr_assert_eq(get(c, 7, 1)->eax & (1u << 4), 0, "AVX-VNNI cleared");
	cr_assert_eq(get(c, 0xd, 0)->eax, 0);
	cr_assert_eq(get(c, 0xd, 1)->eax, 0, "XSAVEOPT/XSAVEC/XSAVES cleared");
	free(c);
}

Test(cpuid, hide_cx16_only)
{
	struct kvm_cpuid2 *c = make(hide_leaves, sizeof(hide_leaves) / sizeof(hide_leaves[0]));

	cpuid_hide(c, CPUID_HIDE_CX16);
	cr_assert_eq(get(c, 1, 0)->ecx, 0xf7fa3203u & ~(1u << 13));
	cr_assert_eq(get(c, 0xd, 0)->eax, 0xe7, "leaf 0xD untouched");
	cpuid_hide(c, 0);
	cr_assert_eq(get(c, 1, 0)->ecx, 0xf7fa3203u & ~(1u << 13), "mask 0 changes nothing");
	free(c);
}

/* KVM leaves the TSC-deadline bit out of its list; cpuid_add sets it, --cpuid-hide tsc-deadline keeps it off. */
Test(cpuid, add_tsc_deadline)
{
	struct kvm_cpuid2 *c = make(hide_leaves, sizeof(hide_leaves) / sizeof(hide_leaves[0]));

	cpuid_hide(c, CPUID_HIDE_TSC_DEADLINE);
	cr_assert_eq(get(c, 1, 0)->ecx, 0xf7fa3203u & ~(1u << 24), "only ECX[24] cleared");
	cpuid_add(c, 0);
	cr_assert_eq(get(c, 1, 0)->ecx, 0xf7fa3203u & ~(1u << 24), "mask 0 changes nothing");
	cpuid_add(c, CPUID_ADD_TSC_DEADLINE);
	cr_assert_eq(get(c, 1, 0)->ecx, 0xf7fa3203u, "only ECX[24] set");
	cr_assert_eq(get(c, 7, 0)->ebx, 0xffffffffu, "other leaves untouched");
	cr_assert_eq(cpuid_add_hidden(CPUID_HIDE_TSC_DEADLINE | CPUID_HIDE_CX16), CPUID_ADD_TSC_DEADLINE);
	cr_assert_eq(cpuid_add_hidden(CPUID_HIDE_XSAVE | CPUID_HIDE_CX16), 0);
	free(c);
}

Test(cpuid, parse_hide)
{
	struct errbuf e;
	unsigned m = 99;

	cr_assert_eq(cpuid_parse_hide("xsave", &m, &e), 0);
	cr_assert_eq(m, CPUID_HIDE_XSAVE);
	cr_assert_eq(cpuid_parse_hide("cmpxchg16b,xsave", &m, &e), 0);
	cr_assert_eq(m, CPUID_HIDE_XSAVE | CPUID_HIDE_CX16);
	cr_assert_eq(cpuid_parse_hide("tsc-deadline", &m, &e), 0);
	cr_assert_eq(m, CPUID_HIDE_TSC_DEADLINE);
	cr_assert_eq(cpuid_parse_hide("xsave,avx", &m, &e), -EINVAL);
	cr_assert(strstr(e.msg, "unknown feature 'avx' (known: xsave, cmpxchg16b, tsc-deadline, pmu-ack)"),
		  "%s", e.msg);
	cr_assert_eq(cpuid_parse_hide("xsav", &m, &e), -EINVAL, "no prefix matches");
	cr_assert_eq(cpuid_parse_hide("", &m, &e), -EINVAL);
	cr_assert(strstr(e.msg, "needs a feature list"), "%s", e.msg);
	cr_assert_eq(cpuid_parse_hide(",", &m, &e), -EINVAL);
}
