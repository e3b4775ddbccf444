/* SPDX-License-Identifier: MIT */
/*
 * PVH boot (Xen's x86/HVM direct boot ABI, as QEMU and Linux use it): the
 * ELF note that names the 32-bit entry point, and the start info block
 * (version 1) the loader hands over in EBX. Shared by the VMM's loader and
 * the test guests; docs/boot.md "PVH" says which fields perfvisor fills.
 */
#ifndef PERFVISOR_PVH_H
#define PERFVISOR_PVH_H

#ifndef __ASSEMBLER__
#include <stdint.h>
#endif

#define PVH_NOTE_NAME "Xen"	   /* ELF note owner */
#define PVH_NOTE_PHYS32_ENTRY 18   /* XEN_ELFNOTE_PHYS32_ENTRY: 4- or 8-byte gpa */
#define PVH_START_MAGIC 0x336ec578 /* hvm_start_info.magic */
#define PVH_START_VERSION 1	   /* version 1: memmap fields present */
#define PVH_MEMMAP_RAM 1	   /* E820-style types */
#define PVH_MEMMAP_RESERVED 2

#ifndef __ASSEMBLER__
struct pvh_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags; /* zero */
	uint32_t nr_modules;
	uint64_t modlist_paddr; /* array of struct pvh_module */
	uint64_t cmdline_paddr; /* NUL-terminated, 0 if none */
	uint64_t rsdp_paddr;	/* ACPI RSDP */
	uint64_t memmap_paddr;	/* array of struct pvh_memmap_entry (version >= 1) */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct pvh_module {
	uint64_t paddr, size;
	uint64_t cmdline_paddr; /* 0 if none */
	uint64_t reserved;
};

struct pvh_memmap_entry {
	uint64_t addr, size;
	uint32_t type;
	uint32_t reserved;
};

_Static_assert(sizeof(struct pvh_start_info) == 56, "hvm_start_info");
_Static_assert(__builtin_offsetof(struct pvh_start_info, memmap_paddr) == 40, "hvm_start_info");
_Static_assert(sizeof(struct pvh_module) == 32, "hvm_modlist_entry");
_Static_assert(sizeof(struct pvh_memmap_entry) == 24, "hvm_memmap_table_entry");

#endif /* __ASSEMBLER__ */

#endif
