/* SPDX-License-Identifier: MIT */
/*
 * Where perfvisor puts things for the boot protocols other than its own
 * ELF64 contract (multiboot v1, PVH, Linux): the low-memory layout, the
 * memory map every one of them gets, and the ACPI tables. docs/boot.md
 * "Memory map for multiboot, PVH and Linux" explains it; the test guests
 * check it.
 */
#ifndef PERFVISOR_LEGACY_BOOT_H
#define PERFVISOR_LEGACY_BOOT_H

#define PV_LB_GDT_GPA 0x1000ULL	    /* the entry GDT */
#define PV_LB_PML4_GPA 0x2000ULL    /* Linux only: identity map of 4 GiB, 0x2000-0x7fff */
#define PV_LB_INFO_GPA 0x8000ULL    /* multiboot info, hvm_start_info or Linux boot_params */
#define PV_LB_CMDLINE_GPA 0x9000ULL /* the command line, NUL-terminated */
#define PV_LB_CMDLINE_MAX 4096U	    /* bytes, including the NUL */
#define PV_LB_EXTRA_GPA 0xa000ULL   /* module list, module strings, memory map */
#define PV_LB_EXTRA_END 0xe000ULL
#define PV_LB_EBDA_GPA 0x9fc00ULL    /* reserved: [EBDA, 640 KiB) as on a PC */
#define PV_LB_LOW_END 0xa0000ULL     /* end of low RAM (640 KiB) */
#define PV_LB_BIOS_GPA 0xe0000ULL    /* reserved: [0xe0000, 1 MiB), the ACPI tables */
#define PV_LB_RSDP_GPA 0xe0000ULL    /* ACPI RSDP (revision 0), then RSDT and MADT */
#define PV_LB_HIGH_GPA 0x100000ULL   /* kernels load here or above */
#define PV_LB_LINUX_LOAD 0x100000ULL /* a bzImage's protected-mode part */

/* Selectors of the entry GDT. */
#define PV_LB_CS32 0x08	    /* multiboot, PVH: 32-bit flat code */
#define PV_LB_DS 0x10	    /* multiboot, PVH: flat data */
#define PV_LB_LINUX_CS 0x10 /* Linux: __BOOT_CS, 64-bit code */
#define PV_LB_LINUX_DS 0x18 /* Linux: __BOOT_DS */

#define PV_LB_IOAPIC_GPA 0xfec00000ULL
#define PV_LB_LAPIC_GPA 0xfee00000ULL

/*
 * The ACPI power-management block the FADT announces (devices/acpipm.c,
 * docs/devices.md): the PM1a event block (status, enable), the PM1a
 * control block, the 24-bit PM timer and the reset register, in I/O space.
 */
#define PV_LB_ACPI_PM_BASE 0x600
#define PV_LB_ACPI_PM_LEN 0x10
#define PV_LB_ACPI_PM1_EVT (PV_LB_ACPI_PM_BASE + 0x0) /* 4 bytes: PM1 status, PM1 enable */
#define PV_LB_ACPI_PM1_CNT (PV_LB_ACPI_PM_BASE + 0x4) /* 2 bytes: PM1 control */
#define PV_LB_ACPI_PM_TMR (PV_LB_ACPI_PM_BASE + 0x8)  /* 4 bytes: the PM timer (24 bits, 3.579545 MHz) */
#define PV_LB_ACPI_RESET (PV_LB_ACPI_PM_BASE + 0xc)   /* 1 byte: write PV_LB_ACPI_RESET_VALUE to reset */
#define PV_LB_ACPI_RESET_VALUE 0x01
#define PV_LB_ACPI_SLP_TYP_S5 5 /* \_S5's SLP_TYP: soft off */
#define PV_LB_ACPI_SCI_IRQ 9	/* the SCI's ISA line (never raised) */

#endif
