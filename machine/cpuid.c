// SPDX-License-Identifier: MIT
/*
 * Each vCPU's CPUID: KVM's supported list with the topology perfvisor
 * presents (one package of n cores, one thread each, APIC id = vCPU
 * index), written for Intel and AMD hosts alike. Pure: unit-tested with
 * both vendors' leaves (tests/unit/test_vmm_cpuid.c).
 */
#include "machine/machine.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>

#define CPUID_AUTHENTICAMD_EBX 0x68747541u /* "Auth" */
#define CPUID_HYGONGENUINE_EBX 0x6f677948u /* "Hygo" */

static unsigned order_base_2(unsigned n)
{
	unsigned s = 0;

	while ((1U << s) < n)
		s++;
	return s;
}

bool cpuid_is_amd(const struct kvm_cpuid2 *c)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == 0)
			return c->entries[i].ebx == CPUID_AUTHENTICAMD_EBX ||
			       c->entries[i].ebx == CPUID_HYGONGENUINE_EBX;
	return false;
}

/*
 * Leaves 0xB/0x1F, subleaf `sub`: SMT level (1 thread), core level (all n
 * vCPUs), then the invalid level that ends the list. EDX = x2APIC id.
 */
static void topology_subleaf(struct kvm_cpuid_entry2 *e, uint32_t leaf, uint32_t sub, unsigned index,
			     unsigned n)
{
	memset(e, 0, sizeof(*e));
	e->function = leaf;
	e->index = sub;
	e->flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
	if (sub == 0) {
		e->ebx = 1;
		e->ecx = 1u << 8;
	} else if (sub == 1) {
		e->eax = order_base_2(n);
		e->ebx = n;
		e->ecx = (2u << 8) | 1;
	} else {
		e->ecx = sub;
	}
	e->edx = index;
}

static void fix_entry(struct kvm_cpuid_entry2 *e, unsigned index, unsigned n, bool amd)
{
	unsigned shift = order_base_2(n);

	switch (e->function) {
	case 1:
		e->ebx = (e->ebx & 0x0000ffffu) | (index << 24) | ((n > 255 ? 255 : n) << 16);
		e->edx |= 1u << 28; /* HTT: the count field above is valid */
		e->ecx |= 1u << 31; /* hypervisor present */
		break;
	case 4:
		/* Deterministic cache parameters (Intel): cores per package - 1 in EAX[31:26]. */
		if (!amd && (e->eax & 0x1f))
			e->eax = (e->eax & 0x03ffffffu) | (((n > 64 ? 64 : n) - 1) << 26);
		break;
	case 0x80000008:
		/* AMD: ECX[15:12] APIC id size, ECX[7:0] cores - 1 (reserved on Intel). */
		if (amd)
			e->ecx = (e->ecx & ~0xf0ffu) | (shift << 12) | (n - 1);
		break;
	case 0x8000001e:
		e->eax = index;	       /* extended APIC id */
		e->ebx = index & 0xff; /* core id, 1 thread per core */
		e->ecx = 0;	       /* node 0, 1 node */
		break;
	default:
		break;
	}
}

int cpuid_build(const struct kvm_cpuid2 *sup, unsigned index, unsigned n, struct kvm_cpuid2 *out,
		unsigned cap)
{
	bool amd = cpuid_is_amd(sup);
	bool topo_done[2] = { false, false }; /* 0xB, 0x1F */

	out->nent = 0;
	out->padding = 0;
	for (unsigned i = 0; i < sup->nent; i++) {
		const struct kvm_cpuid_entry2 *s = &sup->entries[i];
		uint32_t f = s->function;

		/*
		 * A host may list only subleaf 0 of a topology leaf, or blank ones:
		 * replace whatever it lists with the three subleaves of our topology.
		 */
		if (f == 0xb || f == 0x1f) {
			bool *done = &topo_done[f == 0x1f];

			if (*done)
				continue;
			if (out->nent + 3 > cap)
				return -ENOSPC;
			for (uint32_t sub = 0; sub < 3; sub++)
				topology_subleaf(&out->entries[out->nent++], f, sub, index, n);
			*done = true;
			continue;
		}
		if (out->nent >= cap)
			return -ENOSPC;
		out->entries[out->nent] = *s;
		fix_entry(&out->entries[out->nent++], index, n, amd);
	}
	return 0;
}

const struct kvm_cpuid_entry2 *cpuid_find(const struct kvm_cpuid2 *c, uint32_t function, uint32_t index)
{
	for (unsigned i = 0; i < c->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (e->function == function &&
		    (e->index == index || !(e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX)))
			return e;
	}
	return NULL;
}

static const struct {
	const char *name;
	unsigned bit;
} hide_names[] = {
	{ "xsave", CPUID_HIDE_XSAVE },
	{ "cmpxchg16b", CPUID_HIDE_CX16 },
	{ "tsc-deadline", CPUID_HIDE_TSC_DEADLINE },
	{ "pmu-ack", CPUID_HIDE_PMU_ACK },
};

/* "xsave, cmpxchg16b, ...": the names above, for the messages. */
static const char *hide_known(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(hide_names) / sizeof(hide_names[0]) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", hide_names[i].name);
	return buf;
}

int cpuid_parse_hide(const char *list, unsigned *mask, struct errbuf *err)
{
	const char *p = list;
	char known[96];

	*mask = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		bool found = false;

		for (size_t i = 0; i < sizeof(hide_names) / sizeof(hide_names[0]); i++)
			if (strlen(hide_names[i].name) == n && !strncmp(p, hide_names[i].name, n)) {
				*mask |= hide_names[i].bit;
				found = true;
			}
		if (!found)
			return errbuf_set(err, -EINVAL, "--cpuid-hide: unknown feature '%.*s' (known: %s)",
					  (int)n, p, hide_known(known, sizeof(known)));
		p += n;
		if (*p == ',')
			p++;
	}
	if (!*mask)
		return errbuf_set(err, -EINVAL, "--cpuid-hide needs a feature list (%s)",
				  hide_known(known, sizeof(known)));
	return 0;
}

/* Leaf 1 ECX: FMA (12), CX16 (13), TSC-deadline (24), XSAVE (26), OSXSAVE (27), AVX (28), F16C (29). */
#define L1_ECX_CX16 (1u << 13)
#define L1_ECX_TSC_DEADLINE (1u << 24)
#define L1_ECX_XSAVE_FAMILY ((1u << 12) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 29))
/* Leaf 7.0: AVX2 and the AVX-512 family in EBX, ECX and EDX, AMX in EDX; leaf 7.1 EAX: AVX-VNNI, BF16. */
#define L7_EBX_XSAVE_FAMILY                                                                        \
	((1u << 5) | (1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | \
	 (1u << 30) | (1u << 31))
#define L7_ECX_XSAVE_FAMILY ((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14))
#define L7_EDX_XSAVE_FAMILY \
	((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25))
#define L71_EAX_XSAVE_FAMILY ((1u << 4) | (1u << 5))

void cpuid_hide(struct kvm_cpuid2 *c, unsigned mask)
{
	for (unsigned i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (e->function == 1) {
			if (mask & CPUID_HIDE_CX16)
				e->ecx &= ~L1_ECX_CX16;
			if (mask & CPUID_HIDE_TSC_DEADLINE)
				e->ecx &= ~L1_ECX_TSC_DEADLINE;
			if (mask & CPUID_HIDE_XSAVE)
				e->ecx &= ~L1_ECX_XSAVE_FAMILY;
		}
		if (!(mask & CPUID_HIDE_XSAVE))
			continue;
		if (e->function == 7 && e->index == 0) {
			e->ebx &= ~L7_EBX_XSAVE_FAMILY;
			e->ecx &= ~L7_ECX_XSAVE_FAMILY;
			e->edx &= ~L7_EDX_XSAVE_FAMILY;
		} else if (e->function == 7 && e->index == 1) {
			e->eax &= ~L71_EAX_XSAVE_FAMILY;
		} else if (e->function == 0xd) {
			e->eax = e->ebx = e->ecx = e->edx = 0;
		}
	}
}

unsigned cpuid_add_hidden(unsigned hide)
{
	return hide & CPUID_HIDE_TSC_DEADLINE ? CPUID_ADD_TSC_DEADLINE : 0;
}

void cpuid_add(struct kvm_cpuid2 *c, unsigned mask)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == 1 && (mask & CPUID_ADD_TSC_DEADLINE))
			c->entries[i].ecx |= L1_ECX_TSC_DEADLINE;
}
