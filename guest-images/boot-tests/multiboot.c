// SPDX-License-Identifier: MIT
/*
 * multiboot: a multiboot v1 kernel (built twice: an ELF32 loaded by its
 * program headers, and a flat a.out-kludge image) that checks every field
 * perfvisor hands over (EAX, the info block, command line, modules, memory
 * map, loader name), then fw_cfg, ACPI, firmware state, IRQ 4, ring 3 and
 * every AP. Command line: path=KERNEL mods=N (what the harness passed).
 */
#include "boot.h"

#include <perfvisor/legacy_boot.h>
#include <perfvisor/multiboot.h>

const char boot_protocol[] = "multiboot";

extern char _end[];
static struct boot_range map[8];
static unsigned nr_map;
static const struct mb_info *mbi;

void boot_start64(uint32_t magic, uint32_t info)
{
	const uint8_t *p, *end;

	(void)magic;
	mbi = (const struct mb_info *)(uintptr_t)info;
	p = (const uint8_t *)(uintptr_t)mbi->mmap_addr;
	end = p + mbi->mmap_length;
	/* Each entry's size field counts the bytes after it. */
	while (p + 24 <= end && nr_map < 8) {
		const struct mb_mmap_entry *e = (const void *)p;

		map[nr_map++] = (struct boot_range){ e->addr, e->len, e->type };
		p += e->size + 4;
	}
	boot_enter((const char *)(uintptr_t)mbi->cmdline, map, nr_map);
}

static void check_modules(uint32_t want)
{
	const struct mb_module *m = (const void *)(uintptr_t)mbi->mods_addr;
	uint64_t prev_end = (uintptr_t)_end;
	bool ok = mbi->mods_count == want;

	for (uint32_t i = 0; i < mbi->mods_count; i++) {
		const char *s = (const char *)(uintptr_t)m[i].string;
		const char *data = (const char *)(uintptr_t)m[i].mod_start;
		char first[40];
		uint32_t n = m[i].mod_end - m[i].mod_start;

		snprintf(first, sizeof(first), "%.*s", (int)(n < 39 ? n : 39), data);
		if (strchr(first, '\n'))
			*strchr(first, '\n') = '\0';
		printf("multiboot: module %u: 0x%x-0x%x (%u bytes) string '%s' data '%s'\n", i,
		       m[i].mod_start, m[i].mod_end, n, s, first);
		ok = ok && (m[i].mod_start & 0xfff) == 0 && m[i].mod_start >= prev_end &&
		     m[i].mod_end >= m[i].mod_start && m[i].reserved == 0 && s[0] == '/' &&
		     !strncmp(first, "perfvisor module", 16);
		prev_end = m[i].mod_end;
	}
	report(ok,
	       "multiboot: %u modules (want %u), page-aligned after the kernel, each with its path and data",
	       mbi->mods_count, want);
}

int main(const struct pv_bootinfo *bi)
{
	const char *cmd = (const char *)(uintptr_t)mbi->cmdline;
	const char *path = cmdline_get("path");
	uint32_t want_flags = MB_INFO_MEMORY | MB_INFO_CMDLINE | MB_INFO_MODS | MB_INFO_MMAP | MB_INFO_LOADER;
	uint64_t ram = 0;

	(void)bi;
	fwcfg_read(0x0003, &ram, 8);
	printf("multiboot: EAX 0x%x, info at 0x%x, CS 0x%x, DS 0x%x, EFLAGS 0x%x, CR0 0x%x\n",
	       boot_entry_magic, boot_entry_info, boot_entry_cs, boot_entry_ds, boot_entry_flags,
	       boot_entry_cr0);
	report(boot_entry_magic == MB_BOOT_MAGIC, "multiboot: EAX is 0x2badb002");
	report((boot_entry_cr0 & 1) && !(boot_entry_cr0 & 0x80000000u) && !(boot_entry_flags & 0x20200) &&
		       boot_entry_cs == PV_LB_CS32 && boot_entry_ds == PV_LB_DS,
	       "multiboot: 32-bit protected mode, paging off, interrupts off, flat CS/DS");
	report(mbi->flags == want_flags,
	       "multiboot: info flags 0x%x (memory, cmdline, mods, mmap, loader name)", mbi->flags);
	report(mbi->mem_lower == 639 && mbi->mem_upper == (ram - 0x100000) / 1024,
	       "multiboot: mem_lower %u KiB, mem_upper %u KiB", mbi->mem_lower, mbi->mem_upper);
	printf("multiboot: command line '%s'\n", cmd);
	report(path && !strncmp(cmd, path, strlen(path)) && cmd[strlen(path)] == ' ',
	       "multiboot: the command line starts with the kernel's path, then the arguments");
	report(mbi->mmap_length == 4 * sizeof(struct mb_mmap_entry) && nr_map == 4,
	       "multiboot: mmap_length %u", mbi->mmap_length);
	report(!strcmp((const char *)(uintptr_t)mbi->boot_loader_name, "perfvisor"),
	       "multiboot: loader name '%s'", (const char *)(uintptr_t)mbi->boot_loader_name);
	check_modules((uint32_t)cmdline_get_u64("mods", 0));
	boot_check_common(map, nr_map, PV_LB_RSDP_GPA);
	return report_summary();
}
