// SPDX-License-Identifier: MIT
/*
 * linux: a bzImage (a setup header, then this kernel at 1 MiB with its
 * 64-bit entry 0x200 in) that checks what the 64-bit boot protocol hands
 * over: CS/DS, the boot_params setup header fields the loader sets and
 * keeps, the command line, the initrd, e820 and the RSDP; then fw_cfg,
 * ACPI, IRQ 4, ring 3 and every AP. Command line: initrd_size=N.
 */
#include "boot.h"

#include <asm/bootparam.h>
#include <perfvisor/legacy_boot.h>

const char boot_protocol[] = "linux";

extern char _end[];
static struct boot_range map[8];
static unsigned nr_map;
static const struct boot_params *bp;

void boot_start64(uint32_t magic, uint32_t info)
{
	(void)magic;
	bp = (const struct boot_params *)(uintptr_t)info;
	for (unsigned i = 0; i < bp->e820_entries && nr_map < 8; i++)
		map[nr_map++] = (struct boot_range){ bp->e820_table[i].addr, bp->e820_table[i].size,
						     bp->e820_table[i].type };
	boot_enter((const char *)(uintptr_t)bp->hdr.cmd_line_ptr, map, nr_map);
}

int main(const struct pv_bootinfo *bi)
{
	const struct setup_header *h = &bp->hdr;
	uint64_t want_initrd = cmdline_get_u64("initrd_size", 0);
	const char *initrd = (const char *)(uintptr_t)h->ramdisk_image;

	(void)bi;
	printf("linux: boot_params at 0x%x, CS 0x%x, DS 0x%x, RFLAGS 0x%x, CR0 0x%x\n", boot_entry_info,
	       boot_entry_cs, boot_entry_ds, boot_entry_flags, boot_entry_cr0);
	report(boot_entry_cs == PV_LB_LINUX_CS && boot_entry_ds == PV_LB_LINUX_DS &&
		       !(boot_entry_flags & 0x200) && (boot_entry_cr0 & 0x80000001u) == 0x80000001u,
	       "linux: 64-bit entry with __BOOT_CS 0x10, __BOOT_DS 0x18, paging on, interrupts off");
	report(h->boot_flag == 0xaa55 && h->header == 0x53726448 && h->version == 0x020f &&
		       h->setup_sects == 1 && (h->loadflags & LOADED_HIGH) &&
		       (h->xloadflags & XLF_KERNEL_64) && h->cmdline_size == 2047 &&
		       h->init_size == (uintptr_t)_end - 0x100000,
	       "linux: the setup header as in the file (version 0x%x, init_size 0x%x)", h->version,
	       h->init_size);
	report(h->type_of_loader == 0xff && h->code32_start == 0x100000 &&
		       h->cmd_line_ptr == PV_LB_CMDLINE_GPA,
	       "linux: type_of_loader 0x%x, code32_start 0x%x, cmd_line_ptr 0x%x", h->type_of_loader,
	       h->code32_start, h->cmd_line_ptr);
	printf("linux: command line '%s'\n", (const char *)(uintptr_t)h->cmd_line_ptr);
	printf("linux: initrd at 0x%x, %u bytes\n", h->ramdisk_image, h->ramdisk_size);
	report(want_initrd ? h->ramdisk_size == want_initrd && (h->ramdisk_image & 0xfff) == 0 &&
				     h->ramdisk_image >= (uintptr_t)_end &&
				     !strncmp(initrd, "perfvisor initrd", 16)
			   : h->ramdisk_image == 0 && h->ramdisk_size == 0,
	       "linux: the initrd (%u bytes, want %lu), page-aligned above the kernel, with its data",
	       h->ramdisk_size, want_initrd);
	report(bp->e820_entries == 4 && bp->acpi_rsdp_addr == PV_LB_RSDP_GPA && bp->ext_cmd_line_ptr == 0 &&
		       bp->ext_ramdisk_image == 0 && bp->sentinel == 0,
	       "linux: %u e820 entries, acpi_rsdp_addr 0x%lx, no ext_* fields", bp->e820_entries,
	       (uint64_t)bp->acpi_rsdp_addr);
	boot_check_common(map, nr_map, bp->acpi_rsdp_addr);
	return report_summary();
}
