/* SPDX-License-Identifier: MIT */
/*
 * Boot CPU bring-up in C: take the boot information, install our GDT, IDT
 * and TSS, open guest RAM to ring 3, run the test's main() and end the VM
 * with its return value. Kept short: every ring-0 instruction is costly.
 */
#include "rt_internal.h"

struct rt_cpu rt_cpus[PV_MAX_CPUS];
struct rt_stacks rt_stacks[PV_MAX_CPUS] __attribute__((aligned(4096)));

extern char _end[]; /* guest.ld */

static struct {
	const struct pv_bootinfo *bi; /* NULL if the magic was wrong */
	uint32_t nr_cpus;
	uint64_t mem_size;
	uint32_t host_kind;
} boot;

const struct pv_bootinfo *rt_bootinfo(void)
{
	return boot.bi;
}

uint32_t rt_nr_cpus(void)
{
	return boot.nr_cpus;
}

uint64_t rt_mem_size(void)
{
	return boot.mem_size;
}

uint32_t rt_host_kind(void)
{
	return boot.host_kind;
}

const char *rt_host_name(void)
{
	static const char *const names[PV_HOST_KIND_NR] = { "an unknown KVM host", "kvm_intel", "kvm_amd",
							    "kvm_pvm" };

	return boot.host_kind < PV_HOST_KIND_NR ? names[boot.host_kind] : names[0];
}

static void take_bootinfo(const struct pv_bootinfo *bi)
{
	boot.nr_cpus = 1;
	boot.mem_size = (uintptr_t)_end;
	if (!bi || bi->magic != PV_BOOTINFO_MAGIC)
		return;
	boot.bi = bi;
	boot.mem_size = bi->mem_size;
	if (bi->version >= 2 && bi->host_kind < PV_HOST_KIND_NR)
		boot.host_kind = bi->host_kind;
	if (bi->nr_cpus >= 1)
		boot.nr_cpus = bi->nr_cpus < PV_MAX_CPUS ? bi->nr_cpus : PV_MAX_CPUS;
	for (uint32_t i = 0; i < boot.nr_cpus; i++) {
		uint32_t id = bi->apic_ids[i];

		rt_cpus[i].index = i;
		rt_cpus[i].apic_id = id;
		/* xAPIC ids are 8 bits; a CPU with another id parks at boot. */
		if (id < ARRAY_SIZE(rt_apic_to_cpu))
			rt_apic_to_cpu[id] = (uint8_t)(i + 1);
	}
}

void rt_start(const struct pv_bootinfo *bi)
{
	take_bootinfo(bi);
	rt_gdt_load();
	rt_idt_init();
	rt_cpu_init(&rt_cpus[0]);
	rt_user_pages_init(boot.mem_size);
	if (!boot.bi)
		printf("rt: no valid boot information at %p: assuming 1 CPU\n", (const void *)bi);
	ucall_done((uint32_t)main(bi));
}
