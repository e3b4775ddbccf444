// SPDX-License-Identifier: MIT
/*
 * The boot information of each protocol other than perfvisor's ELF64: the
 * multiboot v1 info block, PVH's hvm_start_info, Linux's boot_params, each
 * with the command line, modules, memory map and ACPI tables, laid out in
 * low memory as include/perfvisor/legacy_boot.h says, and the CPU state at
 * entry. Pure: guest memory only.
 */
#include "machine/boot_internal.h"

#include <asm/bootparam.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "perfvisor/legacy_boot.h"
#include "perfvisor/multiboot.h"
#include "perfvisor/pvh.h"

/* Entry GDTs (5 entries, limit 39): 32-bit protocols and Linux differ in where code lives. */
static const uint64_t gdt32[] = {
	0,
	0x00cf9b000000ffffULL, /* 0x08: 32-bit code, flat */
	0x00cf93000000ffffULL, /* 0x10: data, flat */
	0,
	0x00008b0000000067ULL, /* 0x20: TSS (busy), base 0, limit 0x67: VMX wants a usable TR */
};
static const uint64_t gdt_linux[] = {
	0,
	0,
	0x00af9b000000ffffULL, /* 0x10: __BOOT_CS, 64-bit code */
	0x00cf93000000ffffULL, /* 0x18: __BOOT_DS */
	0x00008b0000000067ULL, /* 0x20: TSS */
};
#define GDT_TR 0x20

/* A bump allocator over the low "extra" area for lists and strings. */
struct extra {
	struct gmem *mem;
	uint64_t next;
};

static void *extra_alloc(struct extra *x, uint64_t len, uint64_t *gpa)
{
	uint64_t at = (x->next + 7) & ~7ULL;

	if (at + len > PV_LB_EXTRA_END)
		return NULL;
	x->next = at + len;
	*gpa = at;
	return gmem_hva(x->mem, at, len ? len : 1);
}

static uint64_t extra_string(struct extra *x, const char *s)
{
	uint64_t gpa = 0;
	char *p = extra_alloc(x, strlen(s) + 1, &gpa);

	if (p)
		memcpy(p, s, strlen(s) + 1);
	return p ? gpa : 0;
}

static int too_much(struct errbuf *err)
{
	return errbuf_set(
		err, -E2BIG,
		"the module command lines and lists do not fit the %llu bytes perfvisor keeps for them "
		"(0x%llx-0x%llx); use shorter --initrd arguments",
		(unsigned long long)(PV_LB_EXTRA_END - PV_LB_EXTRA_GPA), (unsigned long long)PV_LB_EXTRA_GPA,
		(unsigned long long)PV_LB_EXTRA_END);
}

/* The command line at PV_LB_CMDLINE_GPA: "a" or "a b" if b is not empty. */
static int write_cmdline(struct gmem *mem, const char *a, const char *b, size_t max, struct errbuf *err)
{
	char *dst = gmem_hva(mem, PV_LB_CMDLINE_GPA, PV_LB_CMDLINE_MAX);
	size_t la = strlen(a), lb = strlen(b);
	size_t len = la + (la && lb ? 1 : 0) + lb;

	if (len > max)
		return errbuf_set(err, -EINVAL,
				  "the command line is %zu bytes; this kernel takes at most %zu", len, max);
	memset(dst, 0, PV_LB_CMDLINE_MAX);
	memcpy(dst, a, la);
	if (la && lb)
		dst[la] = ' ';
	memcpy(dst + len - lb, b, lb);
	return 0;
}

static void cpu32(struct boot_result *out, uint64_t rax, uint64_t rbx)
{
	out->cpu = (struct boot_cpu){ .long_mode = false,
				      .rip = out->kernel.entry,
				      .rax = rax,
				      .rbx = rbx,
				      .cs = PV_LB_CS32,
				      .ds = PV_LB_DS,
				      .tr = GDT_TR,
				      .gdt_gpa = PV_LB_GDT_GPA,
				      .gdt_limit = sizeof(gdt32) - 1 };
}

static int common(struct gmem *mem, const struct boot_config *cfg, const uint64_t *gdt, size_t gdt_len,
		  struct errbuf *err)
{
	int rc;

	memcpy(gmem_hva(mem, PV_LB_GDT_GPA, gdt_len), gdt, gdt_len);
	rc = acpi_build(mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, cfg->nr_cpus, cfg->acpi_devs, cfg->nr_acpi_devs);
	if (rc)
		return errbuf_set(err, rc, "internal: the ACPI tables %s",
				  rc == -ENOSPC ? "do not fit" : "cannot describe a device");
	return 0;
}

/*
 * What multiboot and PVH both put in the extra area: a module list and a
 * memory map of the given entry sizes, and each module's string (its whole
 * --initrd value: its path, then its arguments). 0 or -E2BIG.
 */
struct lists {
	void *mods, *mm;
	uint64_t mods_gpa, mm_gpa;
	uint64_t str[BOOT_MAX_MODULES];
};

static int alloc_lists(struct extra *x, const struct boot_config *cfg, const struct boot_result *out,
		       size_t mod_size, size_t mm_size, unsigned nr_mm, struct lists *l, struct errbuf *err)
{
	l->mods = extra_alloc(x, out->nr_modules * mod_size, &l->mods_gpa);
	l->mm = extra_alloc(x, nr_mm * mm_size, &l->mm_gpa);
	if (!l->mods || !l->mm)
		return too_much(err);
	for (unsigned i = 0; i < out->nr_modules; i++)
		if (!(l->str[i] = extra_string(x, cfg->modules[i])))
			return too_much(err);
	return 0;
}

/* The 32-bit protocols' common part: memory map, command line ("a b"), GDT, ACPI, lists. */
static int setup32(struct gmem *mem, const struct boot_config *cfg, const struct boot_result *out,
		   const char *a, size_t mod_size, size_t mm_size, struct boot_mem_range *r, struct extra *x,
		   struct lists *l, struct errbuf *err)
{
	unsigned nr = boot_memmap(mem->size, r);
	int rc = write_cmdline(mem, a, cfg->cmdline, PV_LB_CMDLINE_MAX - 1, err);

	if (!rc)
		rc = common(mem, cfg, gdt32, sizeof(gdt32), err);
	if (!rc)
		rc = alloc_lists(x, cfg, out, mod_size, mm_size, nr, l, err);
	return rc;
}

int boot_write_multiboot(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out,
			 struct errbuf *err)
{
	struct mb_info *mbi = gmem_hva(mem, PV_LB_INFO_GPA, sizeof(*mbi));
	struct extra x = { mem, PV_LB_EXTRA_GPA };
	struct boot_mem_range r[BOOT_NR_MEM_RANGES];
	struct lists l;
	struct mb_module *mods;
	struct mb_mmap_entry *mm;
	uint64_t name_gpa;
	const unsigned nr = BOOT_NR_MEM_RANGES;
	/* As QEMU: the kernel's path first, then the arguments. */
	int rc = setup32(mem, cfg, out, cfg->kernel, sizeof(*mods), sizeof(*mm), r, &x, &l, err);

	if (rc)
		return rc;
	if (!(name_gpa = extra_string(&x, "perfvisor")))
		return too_much(err);
	mods = l.mods;
	mm = l.mm;
	for (unsigned i = 0; i < out->nr_modules; i++)
		mods[i] = (struct mb_module){ (uint32_t)out->mod_gpa[i],
					      (uint32_t)(out->mod_gpa[i] + out->mod_len[i]),
					      (uint32_t)l.str[i], 0 };
	for (unsigned i = 0; i < nr; i++)
		mm[i] = (struct mb_mmap_entry){ sizeof(mm[i]) - 4, r[i].base, r[i].len, r[i].type };
	memset(mbi, 0, sizeof(*mbi));
	mbi->flags = MB_INFO_MEMORY | MB_INFO_CMDLINE | MB_INFO_MODS | MB_INFO_MMAP | MB_INFO_LOADER;
	mbi->mem_lower = (uint32_t)(PV_LB_EBDA_GPA >> 10);
	mbi->mem_upper = (uint32_t)((mem->size - PV_LB_HIGH_GPA) >> 10);
	mbi->cmdline = (uint32_t)PV_LB_CMDLINE_GPA;
	mbi->mods_count = out->nr_modules;
	mbi->mods_addr = (uint32_t)l.mods_gpa;
	mbi->mmap_length = (uint32_t)(nr * sizeof(*mm));
	mbi->mmap_addr = (uint32_t)l.mm_gpa;
	mbi->boot_loader_name = (uint32_t)name_gpa;
	cpu32(out, MB_BOOT_MAGIC, PV_LB_INFO_GPA);
	return 0;
}

int boot_write_pvh(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out,
		   struct errbuf *err)
{
	struct pvh_start_info *si = gmem_hva(mem, PV_LB_INFO_GPA, sizeof(*si));
	struct extra x = { mem, PV_LB_EXTRA_GPA };
	struct boot_mem_range r[BOOT_NR_MEM_RANGES];
	struct lists l;
	struct pvh_module *mods;
	struct pvh_memmap_entry *mm;
	const unsigned nr = BOOT_NR_MEM_RANGES;
	int rc = setup32(mem, cfg, out, "", sizeof(*mods), sizeof(*mm), r, &x, &l, err);

	if (rc)
		return rc;
	mods = l.mods;
	mm = l.mm;
	for (unsigned i = 0; i < out->nr_modules; i++)
		mods[i] = (struct pvh_module){ out->mod_gpa[i], out->mod_len[i], l.str[i], 0 };
	for (unsigned i = 0; i < nr; i++)
		mm[i] = (struct pvh_memmap_entry){ r[i].base, r[i].len, r[i].type, 0 };
	*si = (struct pvh_start_info){ .magic = PVH_START_MAGIC,
				       .version = PVH_START_VERSION,
				       .nr_modules = out->nr_modules,
				       .modlist_paddr = out->nr_modules ? l.mods_gpa : 0,
				       .cmdline_paddr = PV_LB_CMDLINE_GPA,
				       .rsdp_paddr = PV_LB_RSDP_GPA,
				       .memmap_paddr = l.mm_gpa,
				       .memmap_entries = nr };
	cpu32(out, 0, PV_LB_INFO_GPA);
	return 0;
}

int boot_write_linux(struct gmem *mem, const struct boot_config *cfg, const struct loader_linux *lx,
		     struct boot_result *out, struct errbuf *err)
{
	struct boot_params *bp = gmem_hva(mem, PV_LB_INFO_GPA, sizeof(*bp));
	struct boot_mem_range r[BOOT_NR_MEM_RANGES];
	unsigned nr = boot_memmap(mem->size, r);
	int rc = write_cmdline(mem, "", cfg->cmdline, lx->cmdline_size, err);

	_Static_assert(sizeof(struct boot_params) <= PV_LB_CMDLINE_GPA - PV_LB_INFO_GPA, "zero page fits");
	if (!rc)
		rc = common(mem, cfg, gdt_linux, sizeof(gdt_linux), err);
	if (rc)
		return rc;
	boot_identity_map(mem, PV_LB_PML4_GPA);
	memset(bp, 0, sizeof(*bp));
	memcpy(&bp->hdr, lx->hdr, lx->hdr_len);
	bp->hdr.type_of_loader = 0xff; /* no registered loader id */
	bp->hdr.code32_start = (uint32_t)PV_LB_LINUX_LOAD;
	bp->hdr.cmd_line_ptr = (uint32_t)PV_LB_CMDLINE_GPA;
	if (out->nr_modules) {
		bp->hdr.ramdisk_image = (uint32_t)out->mod_gpa[0];
		bp->hdr.ramdisk_size = (uint32_t)out->mod_len[0];
	}
	bp->acpi_rsdp_addr = PV_LB_RSDP_GPA;
	bp->e820_entries = (uint8_t)nr;
	for (unsigned i = 0; i < nr; i++)
		bp->e820_table[i] = (struct boot_e820_entry){ r[i].base, r[i].len, r[i].type };
	out->cpu = (struct boot_cpu){ .long_mode = true,
				      .rip = lx->entry64,
				      .rsi = PV_LB_INFO_GPA,
				      .rsp = PV_LB_EXTRA_END,
				      .cs = PV_LB_LINUX_CS,
				      .ds = PV_LB_LINUX_DS,
				      .tr = GDT_TR,
				      .gdt_gpa = PV_LB_GDT_GPA,
				      .gdt_limit = sizeof(gdt_linux) - 1,
				      .cr3 = PV_LB_PML4_GPA };
	return 0;
}
