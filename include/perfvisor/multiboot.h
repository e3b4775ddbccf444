/* SPDX-License-Identifier: MIT */
/*
 * Multiboot v1 (the Multiboot Specification 0.6.96) as perfvisor speaks it:
 * the kernel's header and the information block the loader hands over in
 * EBX. Shared by the VMM's loader and the test guests; docs/boot.md
 * "Multiboot v1" says which fields perfvisor fills.
 */
#ifndef PERFVISOR_MULTIBOOT_H
#define PERFVISOR_MULTIBOOT_H

#ifndef __ASSEMBLER__
#include <stdint.h>
#endif

#define MB_HEADER_MAGIC 0x1badb002 /* in the kernel file */
#define MB_BOOT_MAGIC 0x2badb002   /* in EAX at entry */
#define MB_SEARCH_BYTES 8192	   /* the header lies 4-aligned in the first 8 KiB */

/* Header flags: bits 0-15 are requirements, 16-31 optional features. */
#define MB_HF_PAGE_ALIGN (1 << 0) /* modules page-aligned (perfvisor always does) */
#define MB_HF_MEMINFO (1 << 1)	  /* mem_* and the memory map (always given) */
#define MB_HF_VIDEO (1 << 2)	  /* a video mode: not offered, refused */
#define MB_HF_AOUT_KLUDGE (1 << 16)
#define MB_HF_SUPPORTED (MB_HF_PAGE_ALIGN | MB_HF_MEMINFO | MB_HF_AOUT_KLUDGE)

#ifndef __ASSEMBLER__
struct mb_header {
	uint32_t magic, flags, checksum; /* magic + flags + checksum == 0 */
	/* MB_HF_AOUT_KLUDGE: where the image goes, instead of the ELF headers */
	uint32_t header_addr, load_addr, load_end_addr, bss_end_addr, entry_addr;
};

/* Info flags: which fields of struct mb_info are valid. */
#define MB_INFO_MEMORY (1 << 0)	 /* mem_lower, mem_upper */
#define MB_INFO_CMDLINE (1 << 2) /* cmdline */
#define MB_INFO_MODS (1 << 3)	 /* mods_count, mods_addr */
#define MB_INFO_MMAP (1 << 6)	 /* mmap_length, mmap_addr */
#define MB_INFO_LOADER (1 << 9)	 /* boot_loader_name */

struct mb_info {
	uint32_t flags;
	uint32_t mem_lower, mem_upper; /* KiB below 640 KiB / above 1 MiB */
	uint32_t boot_device;
	uint32_t cmdline; /* gpa of a NUL-terminated string */
	uint32_t mods_count, mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length, mmap_addr;
	uint32_t drives_length, drives_addr;
	uint32_t config_table;
	uint32_t boot_loader_name;
	uint32_t apm_table;
	uint32_t vbe_control_info, vbe_mode_info;
	uint16_t vbe_mode, vbe_interface_seg, vbe_interface_off, vbe_interface_len;
	uint64_t framebuffer_addr;
	uint32_t framebuffer_pitch, framebuffer_width, framebuffer_height;
	uint8_t framebuffer_bpp, framebuffer_type, color_info[6];
} __attribute__((packed));

struct mb_module {
	uint32_t mod_start, mod_end; /* [start, end) in guest-physical memory */
	uint32_t string;	     /* gpa of the module's command line */
	uint32_t reserved;	     /* zero */
};

/* A memory map entry; `size` counts the bytes after itself (20). */
struct mb_mmap_entry {
	uint32_t size;
	uint64_t addr, len;
	uint32_t type; /* 1 RAM, 2 reserved */
} __attribute__((packed));

_Static_assert(sizeof(struct mb_header) == 32, "multiboot header");
_Static_assert(sizeof(struct mb_info) == 116, "multiboot info");
_Static_assert(__builtin_offsetof(struct mb_info, mmap_length) == 44, "multiboot info");
_Static_assert(__builtin_offsetof(struct mb_info, boot_loader_name) == 64, "multiboot info");
_Static_assert(sizeof(struct mb_module) == 16, "multiboot module");
_Static_assert(sizeof(struct mb_mmap_entry) == 24, "multiboot mmap entry");

#endif /* __ASSEMBLER__ */

#endif
