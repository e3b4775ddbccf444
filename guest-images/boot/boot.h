/* SPDX-License-Identifier: MIT */
/*
 * The boot-protocol test guests' shared part (boot.c): what the entries
 * recorded, fw_cfg, the ACPI MADT, the documented memory map, and the
 * handover to the runtime with a struct pv_bootinfo built from what the
 * protocol handed over. Each guest checks the fields of its own protocol.
 */
#ifndef GUEST_BOOT_H
#define GUEST_BOOT_H

#include "guest.h"

/* Recorded by entry.S at entry, before anything changed them. */
extern uint32_t boot_entry_magic, boot_entry_info, boot_entry_cs, boot_entry_ds, boot_entry_flags,
	boot_entry_cr0;

/* A memory map entry as the protocol gave it. */
struct boot_range {
	uint64_t base, len;
	uint32_t type;
};

/* Called by entry.S on CPU 0's kernel stack: the protocol's conversion; must call boot_enter(). */
__noreturn void boot_start64(uint32_t magic, uint32_t info);
/* Build the runtime's boot information (CPUs from the MADT) and start it: main() runs next. */
__noreturn void boot_enter(const char *cmdline, const struct boot_range *map, unsigned n);

/* fw_cfg: read `len` bytes of item `key` (ports 0x510/0x511). */
void fwcfg_read(uint16_t key, void *buf, uint32_t len);

/* The protocol's name for the messages ("multiboot", ...). */
extern const char boot_protocol[];

/*
 * Checks every protocol shares, as report() lines: the memory map is the
 * documented one and ends at fw_cfg's RAM size; fw_cfg's signature, id,
 * CPU count; the ACPI tables at rsdp (checksums, one LAPIC per CPU, the
 * IOAPIC); PIC and PIT as firmware leaves them; the UART's IRQ 4 through
 * the IOAPIC; ring 3; every AP.
 */
void boot_check_common(const struct boot_range *map, unsigned n, uint64_t rsdp);

#endif
