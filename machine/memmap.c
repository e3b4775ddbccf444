// SPDX-License-Identifier: MIT
/*
 * What every boot protocol shares below the protocols themselves: the
 * memory map the non-ELF64 protocols describe, and the identity map of
 * the first 4 GiB their 64-bit entries (and perfvisor's ELF64 contract)
 * start on. Pure: guest memory only.
 */
#include "machine/boot_internal.h"

#include <string.h>

#include "perfvisor/legacy_boot.h"

#define PAGE 4096ULL
#define PTE_P (1ULL << 0)
#define PTE_RW (1ULL << 1)
#define PTE_PS (1ULL << 7)

void boot_identity_map(struct gmem *mem, uint64_t pml4_gpa)
{
	uint64_t *pml4 = gmem_hva(mem, pml4_gpa, PAGE);
	uint64_t *pdpt = gmem_hva(mem, pml4_gpa + PAGE, PAGE);
	uint64_t *pd = gmem_hva(mem, pml4_gpa + 2 * PAGE, 4 * PAGE);

	/* gmem_check_size() guarantees RAM >= 4 MiB, so the low pages always exist. */
	memset(pml4, 0, PAGE);
	memset(pdpt, 0, PAGE);
	pml4[0] = (pml4_gpa + PAGE) | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < 4; i++)
		pdpt[i] = (pml4_gpa + (2 + i) * PAGE) | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < 4 * 512; i++)
		pd[i] = (i << 21) | PTE_P | PTE_RW | PTE_PS;
}

unsigned boot_memmap(uint64_t mem_size, struct boot_mem_range *r)
{
	r[0] = (struct boot_mem_range){ 0, PV_LB_EBDA_GPA, BOOT_MEM_RAM };
	r[1] = (struct boot_mem_range){ PV_LB_EBDA_GPA, PV_LB_LOW_END - PV_LB_EBDA_GPA, BOOT_MEM_RESERVED };
	r[2] = (struct boot_mem_range){ PV_LB_BIOS_GPA, PV_LB_HIGH_GPA - PV_LB_BIOS_GPA, BOOT_MEM_RESERVED };
	r[3] = (struct boot_mem_range){ PV_LB_HIGH_GPA, mem_size - PV_LB_HIGH_GPA, BOOT_MEM_RAM };
	return BOOT_NR_MEM_RANGES;
}
