/* SPDX-License-Identifier: MIT */
/*
 * Descriptor tables and paging for ring 3: the shared GDT (kernel, user and
 * one TSS per CPU), the shared IDT, per-CPU TSS setup, and the U bit on the
 * VMM's identity map so ring 3 can reach guest RAM.
 */
#include "rt_internal.h"

/* Accessed bits preset so the CPU never writes these descriptors. */
uint64_t rt_gdt[RT_GDT_ENTRIES] __attribute__((aligned(16))) = {
	[RT_KERNEL_CS / 8] = 0x00af9b000000ffffULL,   /* 64-bit code, DPL 0 */
	[RT_KERNEL_DS / 8] = 0x00cf93000000ffffULL,   /* data, DPL 0 */
	[RT_KERNEL_CS32 / 8] = 0x00cf9b000000ffffULL, /* 32-bit code, DPL 0 */
	[RT_USER_DS / 8] = 0x00cff3000000ffffULL,     /* data, DPL 3 */
	[RT_USER_CS / 8] = 0x00affb000000ffffULL,     /* 64-bit code, DPL 3 */
};

struct idt_gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t ist;
	uint8_t type; /* P | DPL | 0xe (64-bit interrupt gate) */
	uint16_t offset_mid;
	uint32_t offset_hi;
	uint32_t reserved;
};
_Static_assert(sizeof(struct idt_gate) == 16, "idt gate");

struct isr_desc {
	uint64_t stub;
	uint32_t vector;
	uint32_t dpl;
};

extern const struct isr_desc rt_isr_table[];
extern const uint32_t rt_isr_count;

static struct idt_gate rt_idt[256] __attribute__((aligned(16)));

struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

void rt_gdt_load(void)
{
	struct desc_ptr p = { sizeof(rt_gdt) - 1, (uintptr_t)rt_gdt };

	asm volatile("lgdt %0" : : "m"(p));
	/* Reload CS with a far return, then the data segments. */
	asm volatile("pushq %[cs]\n\t"
		     "leaq 1f(%%rip), %%rax\n\t"
		     "pushq %%rax\n\t"
		     "lretq\n"
		     "1:\n\t"
		     "movl %[ds], %%eax\n\t"
		     "movl %%eax, %%ds\n\t"
		     "movl %%eax, %%es\n\t"
		     "movl %%eax, %%ss\n\t"
		     "movl %%eax, %%fs\n\t"
		     "movl %%eax, %%gs"
		     :
		     : [cs] "i"(RT_KERNEL_CS), [ds] "i"(RT_KERNEL_DS)
		     : "rax", "memory");
}

/* Only the vectors with a stub get a gate; others stay not-present (#NP). */
void rt_idt_init(void)
{
	for (uint32_t i = 0; i < rt_isr_count; i++) {
		const struct isr_desc *d = &rt_isr_table[i];
		struct idt_gate *g = &rt_idt[d->vector];

		g->offset_lo = (uint16_t)d->stub;
		g->selector = RT_KERNEL_CS;
		g->type = (uint8_t)(0x8e | (d->dpl << 5));
		g->offset_mid = (uint16_t)(d->stub >> 16);
		g->offset_hi = (uint32_t)(d->stub >> 32);
	}
}

/* Per CPU: load the shared IDT, fill and load this CPU's TSS. */
void rt_cpu_init(struct rt_cpu *c)
{
	struct desc_ptr idtr = { sizeof(rt_idt) - 1, (uintptr_t)rt_idt };
	uint64_t base = (uintptr_t)&c->tss;
	uint32_t limit = sizeof(c->tss) - 1;
	uint32_t slot = RT_TSS_SEL0 / 8 + 2 * c->index;
	uint16_t sel = (uint16_t)(RT_TSS_SEL0 + 16 * c->index);

	asm volatile("lidt %0" : : "m"(idtr));
	c->tss.iomap_base = sizeof(c->tss);
	c->tss.rsp0 = (uintptr_t)rt_stacks[c->index].kernel + RT_KSTACK_SIZE;
	/* Available 64-bit TSS (type 9), present, DPL 0. */
	rt_gdt[slot] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ULL << 40) |
		       ((uint64_t)(limit >> 16) << 48) | ((base >> 24 & 0xff) << 56);
	rt_gdt[slot + 1] = base >> 32;
	asm volatile("ltr %0" : : "r"(sel) : "memory");
}

#define PTE_PRESENT (1ULL << 0)
#define PTE_USER (1ULL << 2)
#define PTE_LARGE (1ULL << 7)
#define PTE_ADDR 0x000ffffffffff000ULL
#define SZ_2M 0x200000ULL
#define SZ_1G 0x40000000ULL

/*
 * Set the U bit along the identity map for [0, mem_size) (2 MiB pages, so
 * ~32 writes for 64 MiB; ring 0 is slow, touch nothing else). Addresses
 * beyond RAM, the APIC page included, stay supervisor-only.
 */
void rt_user_pages_init(uint64_t mem_size)
{
	uint64_t *pml4 = (uint64_t *)(uintptr_t)(read_cr3() & PTE_ADDR);
	uint64_t end = mem_size < PV_IDENTITY_MAP_END ? mem_size : PV_IDENTITY_MAP_END;
	uint64_t *pdpt, *pd = NULL;

	if (!(pml4[0] & PTE_PRESENT))
		return;
	pml4[0] |= PTE_USER;
	pdpt = (uint64_t *)(uintptr_t)(pml4[0] & PTE_ADDR);
	for (uint64_t a = 0; a < end; a += SZ_2M) {
		uint64_t *e = &pdpt[a / SZ_1G];

		if (a % SZ_1G == 0) {
			if (*e & PTE_PRESENT)
				*e |= PTE_USER;
			if (!(*e & PTE_PRESENT) || (*e & PTE_LARGE)) {
				a += SZ_1G - SZ_2M; /* nothing below: skip the GiB */
				continue;
			}
			pd = (uint64_t *)(uintptr_t)(*e & PTE_ADDR);
		}
		if (pd[(a / SZ_2M) % 512] & PTE_PRESENT)
			pd[(a / SZ_2M) % 512] |= PTE_USER;
	}
	write_cr3(read_cr3());
}
