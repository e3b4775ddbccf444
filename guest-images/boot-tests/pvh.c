// SPDX-License-Identifier: MIT
/*
 * pvh: an ELF64 kernel with a PVH entry note. Checks the entry state and
 * every field of the hvm_start_info (magic, version, flags, command line,
 * modules, RSDP, memory map), then fw_cfg, ACPI, IRQ 4, ring 3 and every AP.
 * Command line: mods=N.
 */
#include "boot.h"

#include <perfvisor/legacy_boot.h>
#include <perfvisor/pvh.h>

const char boot_protocol[] = "pvh";

extern char _end[];
static struct boot_range map[8];
static unsigned nr_map;
static const struct pvh_start_info *si;

void boot_start64(uint32_t magic, uint32_t info)
{
	const struct pvh_memmap_entry *e;

	(void)magic;
	si = (const struct pvh_start_info *)(uintptr_t)info;
	e = (const void *)(uintptr_t)si->memmap_paddr;
	for (uint32_t i = 0; i < si->memmap_entries && nr_map < 8; i++)
		map[nr_map++] = (struct boot_range){ e[i].addr, e[i].size, e[i].type };
	boot_enter(si->cmdline_paddr ? (const char *)(uintptr_t)si->cmdline_paddr : "", map, nr_map);
}

static void check_modules(uint32_t want)
{
	const struct pvh_module *m = (const void *)(uintptr_t)si->modlist_paddr;
	uint64_t prev_end = (uintptr_t)_end;
	bool ok = si->nr_modules == want && (want == 0 || si->modlist_paddr);

	for (uint32_t i = 0; ok && i < si->nr_modules; i++) {
		const char *s = (const char *)(uintptr_t)m[i].cmdline_paddr;
		const char *data = (const char *)(uintptr_t)m[i].paddr;

		printf("pvh: module %u: 0x%lx, %lu bytes, command line '%s'\n", i, m[i].paddr, m[i].size, s);
		ok = (m[i].paddr & 0xfff) == 0 && m[i].paddr >= prev_end && m[i].reserved == 0 &&
		     s[0] == '/' && m[i].size >= 16 && !strncmp(data, "perfvisor module", 16);
		prev_end = m[i].paddr + m[i].size;
	}
	report(ok,
	       "pvh: %u modules (want %u), page-aligned after the kernel, each with its command line and data",
	       si->nr_modules, want);
}

int main(const struct pv_bootinfo *bi)
{
	(void)bi;
	printf("pvh: start info at 0x%x, CS 0x%x, DS 0x%x, EFLAGS 0x%x, CR0 0x%x\n", boot_entry_info,
	       boot_entry_cs, boot_entry_ds, boot_entry_flags, boot_entry_cr0);
	report((boot_entry_cr0 & 1) && !(boot_entry_cr0 & 0x80000000u) && !(boot_entry_flags & 0x20200) &&
		       boot_entry_cs == PV_LB_CS32 && boot_entry_ds == PV_LB_DS,
	       "pvh: 32-bit protected mode, paging off, interrupts off, flat CS/DS");
	report(si->magic == PVH_START_MAGIC && si->version == 1 && si->flags == 0 && si->reserved == 0,
	       "pvh: magic 0x%x, version %u, flags 0x%x", si->magic, si->version, si->flags);
	printf("pvh: command line '%s'\n", (const char *)(uintptr_t)si->cmdline_paddr);
	report(si->cmdline_paddr == PV_LB_CMDLINE_GPA && cmdline_has("mods"),
	       "pvh: the command line at 0x%lx", si->cmdline_paddr);
	report(si->memmap_entries == 4 && nr_map == 4, "pvh: %u memory map entries", si->memmap_entries);
	check_modules((uint32_t)cmdline_get_u64("mods", 0));
	boot_check_common(map, nr_map, si->rsdp_paddr);
	return report_summary();
}
