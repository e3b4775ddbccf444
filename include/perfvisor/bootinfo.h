/* SPDX-License-Identifier: MIT */
/*
 * perfvisor guest boot contract: the guest-physical memory layout the VMM
 * reserves and the boot information block it hands to the boot vCPU.
 * Shared by the VMM and the guests; documented in docs/boot.md.
 */
#ifndef PERFVISOR_BOOTINFO_H
#define PERFVISOR_BOOTINFO_H

#include <stdint.h>

/* Guest-physical layout of the VMM-reserved low area [0, PV_RESERVED_END). */
#define PV_GDT_GPA 0x1000ULL  /* flat boot GDT (null, code64, data, 64-bit TSS) */
#define PV_PML4_GPA 0x2000ULL /* identity-map page tables ... */
#define PV_PDPT_GPA 0x3000ULL
#define PV_PD_GPA 0x4000ULL	    /* 4 page directories: 0x4000-0x7fff */
#define PV_BOOTINFO_GPA 0x8000ULL   /* struct pv_bootinfo */
#define PV_CMDLINE_GPA 0x9000ULL    /* NUL-terminated command line */
#define PV_CMDLINE_MAX 4096U	    /* bytes, including the NUL */
#define PV_BOOT_STACK_TOP 0xf000ULL /* initial RSP of the boot vCPU */
#define PV_RESERVED_END 0x10000ULL  /* guest segments must start at/above */

/* The identity map covers the first 4 GiB (2 MiB pages), APIC MMIO included. */
#define PV_IDENTITY_MAP_END 0x100000000ULL

/* Boot GDT selectors valid at entry. */
#define PV_BOOT_CS 0x08
#define PV_BOOT_DS 0x10

#define PV_MAX_CPUS 64U
#define PV_MEMMAP_MAX 8U

#define PV_BOOTINFO_MAGIC 0x31544f4256524550ULL /* "PERVBOT1" little-endian */
#define PV_BOOTINFO_VERSION 2U

/*
 * The kind of KVM host the VMM runs on (docs/boot.md), so a guest can skip,
 * with a reason, what that host cannot run. PV_HOST_UNKNOWN is also what a
 * version 1 boot information (a reserved zero) means.
 */
enum pv_host_kind {
	PV_HOST_UNKNOWN = 0,
	PV_HOST_KVM_INTEL = 1, /* kvm_intel: VMX hardware virtualization */
	PV_HOST_KVM_AMD = 2,   /* kvm_amd: SVM hardware virtualization */
	PV_HOST_KVM_PVM = 3,   /* kvm_pvm: no VMX/SVM; guest ring 0 is emulated */
	PV_HOST_KIND_NR
};

/* host_flags bits. */
#define PV_HOST_NESTED (1ULL << 0) /* the host kernel itself runs under a hypervisor */

enum pv_memmap_type {
	PV_MEM_RAM = 1,	     /* usable by the guest */
	PV_MEM_RESERVED = 2, /* VMM boot structures; guest may reuse after boot */
};

struct pv_memmap_entry {
	uint64_t base;
	uint64_t len;
	uint32_t type;	   /* enum pv_memmap_type */
	uint32_t reserved; /* zero */
};

struct pv_bootinfo {
	uint64_t magic;	      /* PV_BOOTINFO_MAGIC */
	uint32_t version;     /* 2 (1: host_kind and host_flags were reserved zeros) */
	uint32_t size;	      /* sizeof(struct pv_bootinfo) as written by the VMM */
	uint32_t nr_cpus;     /* vCPUs; APIC id of CPU i is apic_ids[i] */
	uint32_t bsp_apic_id; /* APIC id of the boot vCPU */
	uint64_t mem_size;    /* bytes of guest RAM starting at gpa 0 */
	uint64_t cmdline_gpa; /* PV_CMDLINE_GPA */
	uint32_t cmdline_len; /* strlen of the command line */
	uint32_t nr_memmap;   /* valid entries of memmap[] */
	struct pv_memmap_entry memmap[PV_MEMMAP_MAX];
	uint32_t apic_ids[PV_MAX_CPUS];
	uint32_t tsc_khz;    /* guest TSC frequency in kHz, 0 if unknown */
	uint32_t host_kind;  /* enum pv_host_kind (version >= 2) */
	uint64_t host_flags; /* PV_HOST_* bits (version >= 2); other bits zero */
};

_Static_assert(sizeof(struct pv_memmap_entry) == 24, "memmap entry");
_Static_assert(__builtin_offsetof(struct pv_bootinfo, mem_size) == 24, "bootinfo");
_Static_assert(__builtin_offsetof(struct pv_bootinfo, memmap) == 48, "bootinfo");
_Static_assert(__builtin_offsetof(struct pv_bootinfo, apic_ids) == 240, "bootinfo");
_Static_assert(__builtin_offsetof(struct pv_bootinfo, tsc_khz) == 496, "bootinfo");
_Static_assert(__builtin_offsetof(struct pv_bootinfo, host_kind) == 500, "bootinfo");
_Static_assert(__builtin_offsetof(struct pv_bootinfo, host_flags) == 504, "bootinfo");
_Static_assert(sizeof(struct pv_bootinfo) == 512, "bootinfo size");
_Static_assert(PV_BOOTINFO_GPA + sizeof(struct pv_bootinfo) <= PV_CMDLINE_GPA, "bootinfo fits its page");

#endif
