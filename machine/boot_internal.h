/* SPDX-License-Identifier: MIT */
/*
 * Private to the boot protocol code (boot.c, boot_info.c, boot_elf64.c,
 * memmap.c): the memory map every non-ELF64 protocol describes, the
 * identity map, and the per-protocol writers of the boot information.
 * memmap.c is the bottom: boot.c calls boot_info.c, both call memmap.c.
 */
#ifndef PERFVISOR_BOOT_INTERNAL_H
#define PERFVISOR_BOOT_INTERNAL_H

#include "machine/machine.h"

enum {
	BOOT_MEM_RAM = 1,
	BOOT_MEM_RESERVED = 2
};

struct boot_mem_range {
	uint64_t base, len;
	uint32_t type;
};

#define BOOT_NR_MEM_RANGES 4

/* RAM below the EBDA, the EBDA, the BIOS area (ACPI), RAM from 1 MiB. Returns the count. */
unsigned boot_memmap(uint64_t mem_size, struct boot_mem_range *r);
/* The identity map of the first 4 GiB with 2 MiB pages at pml4 (4 pages of PDs follow the PDPT). */
void boot_identity_map(struct gmem *mem, uint64_t pml4);

/* Each writes the entry GDT, its boot information, the ACPI tables and out->cpu. */
int boot_write_multiboot(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out,
			 struct errbuf *err);
int boot_write_pvh(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out,
		   struct errbuf *err);
int boot_write_linux(struct gmem *mem, const struct boot_config *cfg, const struct loader_linux *lx,
		     struct boot_result *out, struct errbuf *err);

#endif
