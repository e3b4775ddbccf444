// SPDX-License-Identifier: MIT
/*
 * Unit tests for the boot protocols with kernels built in memory or in
 * temporary files: format detection in QEMU's order, the multiboot loader
 * (a.out kludge and ELF32), PVH notes, the bzImage setup header, modules and
 * the initrd, the boot information each protocol gets, the ACPI tables, and
 * every bad input with its message and guest memory untouched.
 */
#include "machine/machine.h"

#include <asm/bootparam.h>
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfvisor/legacy_boot.h"
#include "perfvisor/multiboot.h"
#include "perfvisor/pvh.h"
#include "tests/unit/bzimage_fake.h"
#include "tests/unit/gmem_fake.h"

#define MEM (16ULL << 20)
#define POISON 0x5a
#define IMG_MAX 0x10000

static _Alignas(64) uint8_t img[IMG_MAX];
static struct gmem mem;
static struct errbuf err;
static struct loader_info info;
static char dir[64];

static void setup(void)
{
	gmem_poisoned(&mem, MEM, POISON);
	memset(img, 0, sizeof(img));
	memset(&err, 0, sizeof(err));
	strcpy(dir, "/tmp/pv-boot-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	gmem_fini(&mem);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(boot, .init = setup, .fini = teardown);

#define assert_msg_has(s) cr_assert(strstr(err.msg, (s)), "message '%s' lacks '%s'", err.msg, (s))

static void assert_untouched(uint64_t from, uint64_t to)
{
	gmem_assert_untouched(&mem, from, to, POISON);
}

static const char *file(const char *name, const void *data, size_t len)
{
	static char path[8][128];
	static unsigned n;
	char *p = path[n++ % 8];
	int fd;

	snprintf(p, 128, "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	return p;
}

/* ---- multiboot ------------------------------------------------------------ */

#define MB_OFF 0x40
#define MB_LOAD 0x200000U

/* A flat a.out-kludge image: `len` bytes from load_addr, header at MB_OFF, bss to bss_end. */
static size_t build_mb_kludge(uint32_t flags, uint32_t load, uint32_t len, uint32_t bss_end, uint32_t entry)
{
	struct mb_header h = { MB_HEADER_MAGIC, flags, 0, load + MB_OFF, load, load + len, bss_end, entry };

	h.checksum = -(h.magic + h.flags);
	for (uint32_t i = 0; i < len; i++)
		img[i] = (uint8_t)(i * 7 + 1);
	memcpy(img + MB_OFF, &h, sizeof(h));
	return len;
}

Test(boot, multiboot_kludge_loads_and_zeroes_bss)
{
	size_t n = build_mb_kludge(MB_HF_AOUT_KLUDGE | 3, MB_LOAD, 0x1000, MB_LOAD + 0x3000, MB_LOAD + 0x100);

	cr_assert_eq(loader_load_multiboot(img, n, &mem, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.entry, MB_LOAD + 0x100);
	cr_assert_eq(info.low, MB_LOAD);
	cr_assert_eq(info.high, MB_LOAD + 0x3000);
	cr_assert_arr_eq(mem.hva + MB_LOAD, img, 0x1000);
	for (uint32_t a = MB_LOAD + 0x1000; a < MB_LOAD + 0x3000; a++)
		cr_assert_eq(mem.hva[a], 0, "bss byte 0x%x", a);
	assert_untouched(MB_LOAD + 0x3000, MB_LOAD + 0x3010);
	assert_untouched(MB_LOAD - 0x10, MB_LOAD);
}

Test(boot, multiboot_kludge_load_end_zero_means_whole_file)
{
	size_t n = build_mb_kludge(MB_HF_AOUT_KLUDGE, MB_LOAD, 0x800, 0, MB_LOAD);
	struct mb_header h;

	memcpy(&h, img + MB_OFF, sizeof(h));
	h.load_end_addr = 0;
	memcpy(img + MB_OFF, &h, sizeof(h));
	cr_assert_eq(loader_load_multiboot(img, n, &mem, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.high, MB_LOAD + 0x800);
}

static void mb_reject(size_t n, int rc, const char *want)
{
	int got = loader_load_multiboot(img, n, &mem, &info, &err);

	cr_assert_eq(got, rc, "rc %d want %d (%s)", got, rc, err.msg);
	assert_msg_has(want);
	assert_untouched(0, 0x400000);
}

Test(boot, multiboot_bad_headers)
{
	size_t n = build_mb_kludge(MB_HF_AOUT_KLUDGE, MB_LOAD, 0x1000, 0, MB_LOAD);
	struct mb_header *h = (struct mb_header *)(img + MB_OFF);

	mb_reject(MB_OFF + 16, -ENOEXEC, "truncated multiboot header at offset 0x40");
	h->load_addr = h->header_addr + 4;
	mb_reject(n, -ENOEXEC, "do not fit the header's offset 0x40");
	h->load_addr = MB_LOAD;
	h->load_end_addr = MB_LOAD - 1;
	mb_reject(n, -ENOEXEC, "load_end_addr 0x1fffff is below load_addr");
	h->load_end_addr = MB_LOAD + 0x2000;
	mb_reject(n, -ENOEXEC,
		  "truncated multiboot kernel: 8192 bytes to load from offset 0x0, the file has 4096");
	h->load_end_addr = MB_LOAD + 0x1000;
	h->bss_end_addr = MB_LOAD + 0x800;
	mb_reject(n, -ENOEXEC, "bss_end_addr 0x200800 is below load_end_addr");
	h->bss_end_addr = (uint32_t)MEM + 0x1000;
	mb_reject(n, -E2BIG, "lies outside guest memory (16 MiB); use a larger --memory");
	h->bss_end_addr = 0;
	h->entry_addr = MB_LOAD + 0x1000;
	mb_reject(n, -ENOEXEC, "entry_addr 0x201000 is outside the loaded image");
}

Test(boot, multiboot_below_1mib_and_features)
{
	size_t n = build_mb_kludge(MB_HF_AOUT_KLUDGE, 0x10000, 0x1000, 0, 0x10000);

	mb_reject(n, -EINVAL, "load_addr 0x10000 is below 1 MiB");
	n = build_mb_kludge(MB_HF_AOUT_KLUDGE | MB_HF_VIDEO, MB_LOAD, 0x1000, 0, MB_LOAD);
	mb_reject(n, -ENOEXEC, "flags 0x4, bit 2: a video mode");
	n = build_mb_kludge(MB_HF_AOUT_KLUDGE | 0x100, MB_LOAD, 0x1000, 0, MB_LOAD);
	mb_reject(n, -ENOEXEC, "requires features perfvisor does not offer (flags 0x100)");
	n = build_mb_kludge(3, MB_LOAD, 0x1000, 0, MB_LOAD);
	mb_reject(n, -ENOEXEC, "without the a.out kludge (flags bit 16) must be an ELF file");
}

Test(boot, multiboot_header_search)
{
	struct mb_header h;
	uint32_t off;
	uint32_t bad[3] = { MB_HEADER_MAGIC, 0, 0 }; /* checksum wrong */

	memcpy(img + 0x10, bad, sizeof(bad));
	build_mb_kludge(MB_HF_AOUT_KLUDGE, MB_LOAD, 0x1000, 0, MB_LOAD);
	cr_assert_eq(loader_find_multiboot(img, 0x1000, &h, &off), 1);
	cr_assert_eq(off, MB_OFF, "the bad checksum at 0x10 is skipped");
	memset(img, 0, sizeof(img));
	memcpy(img + 8192, &h, sizeof(h));
	cr_assert_eq(loader_find_multiboot(img, sizeof(img), &h, &off), 0, "beyond the first 8 KiB");
	memcpy(img + 8180, &h, 12);
	cr_assert_eq(loader_find_multiboot(img, 8192, &h, &off), 1, "the last 12 bytes of the window");
}

/* ---- ELF32 (multiboot, PVH) and PVH notes --------------------------------- */

/* An ELF32 i386 executable: one PT_LOAD of 0x100 bytes at paddr, then a PT_NOTE. */
static size_t build_elf32(uint32_t paddr, uint32_t entry, const void *note, uint32_t note_len)
{
	Elf32_Ehdr *eh = (Elf32_Ehdr *)img;
	Elf32_Phdr *ph = (Elf32_Phdr *)(img + sizeof(*eh));

	*eh = (Elf32_Ehdr){ .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS32, ELFDATA2LSB,
					 EV_CURRENT },
			    .e_type = ET_EXEC,
			    .e_machine = EM_386,
			    .e_version = EV_CURRENT,
			    .e_entry = entry,
			    .e_phoff = sizeof(*eh),
			    .e_ehsize = sizeof(*eh),
			    .e_phentsize = sizeof(*ph),
			    .e_phnum = note ? 2 : 1 };
	ph[0] = (Elf32_Phdr){ PT_LOAD, 0x1000, paddr, paddr, 0x100, 0x200, PF_R | PF_X, 16 };
	for (int i = 0; i < 0x100; i++)
		img[0x1000 + i] = (uint8_t)(i + 3);
	if (note) {
		ph[1] = (Elf32_Phdr){ PT_NOTE, 0x2000, 0, 0, note_len, note_len, PF_R, 4 };
		memcpy(img + 0x2000, note, note_len);
	}
	return 0x2000 + note_len;
}

struct pvh_note {
	uint32_t namesz, descsz, type;
	char name[4];
	uint32_t desc[2];
};

Test(boot, elf32_loads_for_multiboot_not_for_elf64)
{
	size_t n = build_elf32(MB_LOAD, MB_LOAD + 0x10, NULL, 0);

	cr_assert_eq(loader_load_elf_flags(img, n, &mem, PV_LB_HIGH_GPA, LOADER_ELF_ANY_CLASS, &info, &err),
		     0, "%s", err.msg);
	cr_assert_eq(info.entry, MB_LOAD + 0x10);
	cr_assert_eq(mem.hva[MB_LOAD + 5], 8);
	cr_assert_eq(mem.hva[MB_LOAD + 0x1ff], 0, "bss zeroed");
	cr_assert_eq(loader_load_elf(img, n, &mem, PV_RESERVED_END, &info, &err), -ENOEXEC);
	assert_msg_has("not a 64-bit ELF (class 1)");
	((Elf32_Ehdr *)img)->e_machine = EM_X86_64;
	cr_assert_eq(loader_load_elf_flags(img, n, &mem, PV_LB_HIGH_GPA, LOADER_ELF_ANY_CLASS, &info, &err),
		     -ENOEXEC);
	assert_msg_has("ELF32 machine 62 is not i386");
}

Test(boot, elf32_entry_by_virtual_address)
{
	size_t n = build_elf32(MB_LOAD, 0xc0000020, NULL, 0);

	((Elf32_Phdr *)(img + sizeof(Elf32_Ehdr)))->p_vaddr = 0xc0000000;
	cr_assert_eq(loader_load_elf_flags(img, n, &mem, PV_LB_HIGH_GPA, LOADER_ELF_ANY_CLASS, &info, &err),
		     0, "%s", err.msg);
	cr_assert_eq(info.entry, MB_LOAD + 0x20, "a higher-half entry is translated to its physical address");
}

Test(boot, pvh_note_found_4_and_8_bytes)
{
	struct pvh_note nt = { 4, 4, PVH_NOTE_PHYS32_ENTRY, "Xen", { MB_LOAD + 0x40, 0 } };
	uint64_t entry = 0;
	size_t n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt) - 4);

	cr_assert_eq(loader_elf_pvh_entry(img, n, &entry, &err), 1);
	cr_assert_eq(entry, MB_LOAD + 0x40);
	nt.descsz = 8;
	n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt));
	cr_assert_eq(loader_elf_pvh_entry(img, n, &entry, &err), 1);
	nt.type = 17; /* another Xen note: no PVH entry */
	n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt));
	cr_assert_eq(loader_elf_pvh_entry(img, n, &entry, &err), 0);
	n = build_elf32(MB_LOAD, MB_LOAD, NULL, 0);
	cr_assert_eq(loader_elf_pvh_entry(img, n, &entry, &err), 0, "no note segment");
	cr_assert_eq(loader_elf_pvh_entry("nope", 4, &entry, &err), 0, "not an ELF");
}

Test(boot, pvh_note_malformed)
{
	struct pvh_note nt = { 4, 3, PVH_NOTE_PHYS32_ENTRY, "Xen", { 0, 0 } };
	uint64_t entry;
	size_t n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt));

	cr_assert_eq(loader_elf_pvh_entry(img, n, &entry, &err), -ENOEXEC);
	assert_msg_has("ELF note segment 1 is malformed");
	nt.descsz = 0x1000; /* runs past the segment */
	n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt));
	cr_assert_eq(loader_elf_pvh_entry(img, n, &entry, &err), -ENOEXEC);
}

/* ---- Linux bzImage --------------------------------------------------------- */

#define BZ_SETUP_SECTS 2
#define BZ_PAYLOAD 0x3000

static struct setup_header *bzhdr(void)
{
	return bz_hdr(img);
}

static size_t build_bz(uint32_t init_size)
{
	size_t setup = (BZ_SETUP_SECTS + 1) * 512;

	bz_fill_hdr(img, BZ_SETUP_SECTS, init_size);
	for (size_t i = 0; i < BZ_PAYLOAD; i++)
		img[setup + i] = (uint8_t)(i ^ 0x33);
	return setup + BZ_PAYLOAD;
}

static void bz_reject(size_t n, int rc, const char *want)
{
	struct loader_linux lx;
	int got = loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err);

	cr_assert_eq(got, rc, "rc %d want %d (%s)", got, rc, err.msg);
	assert_msg_has(want);
	assert_untouched(PV_LB_LINUX_LOAD, PV_LB_LINUX_LOAD + BZ_PAYLOAD);
}

Test(boot, bzimage_loads)
{
	struct loader_linux lx;
	size_t n = build_bz(0x10000);

	cr_assert(loader_is_bzimage(img, n));
	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err), 0, "%s", err.msg);
	cr_assert_eq(lx.entry64, 0x100200);
	cr_assert_eq(lx.kernel_end, 0x100000 + 0x10000, "init_size, not the file, bounds the kernel");
	cr_assert_eq(lx.cmdline_size, 100);
	cr_assert_eq(lx.hdr_len, 0x268 - 0x1f1);
	cr_assert_eq(mem.hva[PV_LB_LINUX_LOAD + 5], 5 ^ 0x33);
	cr_assert_arr_eq(lx.hdr, bzhdr(), lx.hdr_len);
}

Test(boot, bzimage_bad)
{
	size_t n = build_bz(0x10000);

	bzhdr()->boot_flag = 0x1234;
	bz_reject(n, -ENOEXEC, "boot_flag is 0x1234, not 0xaa55");
	bzhdr()->boot_flag = 0xaa55;
	bzhdr()->version = 0x020b;
	bz_reject(n, -ENOEXEC, "boot protocol 2.11 is older than 2.12");
	bzhdr()->version = 0x020f;
	bzhdr()->loadflags = 0;
	bz_reject(n, -ENOEXEC, "zImage (not loaded high) is not supported");
	bzhdr()->loadflags = LOADED_HIGH;
	bzhdr()->xloadflags = 0;
	bz_reject(n, -ENOEXEC, "no 64-bit entry point");
	bzhdr()->xloadflags = XLF_KERNEL_64;
	bz_reject(0x500, -ENOEXEC, "truncated bzImage: 1536 bytes of setup code, the file has 1280");
	bz_reject(0x210, -ENOEXEC, "truncated bzImage: the setup header runs past the end of the file");
	bzhdr()->init_size = (uint32_t)MEM;
	bz_reject(n, -E2BIG, "needs 0x1000000 bytes from 0x100000 (its init_size)");
	bzhdr()->init_size = 0x10000;
	bzhdr()->relocatable_kernel = 1;
	bzhdr()->pref_address = MEM - 0x8000;
	bz_reject(n, -E2BIG, "relocates to 0xff8000 and needs 0x10000 bytes there");
	bzhdr()->header = 0;
	bz_reject(n, -ENOEXEC, "not a Linux bzImage");
}

/* ---- boot_load: detection, modules, boot information ------------------------ */

static struct boot_result res;

static int load(const char *kernel, const char *cmdline, const char *const *mods, unsigned n, unsigned cpus)
{
	struct boot_config c = { kernel, cmdline, mods, n, cpus };

	return boot_load(&mem, &c, &res, &err);
}

static const char *mb_kernel(void)
{
	size_t n = build_mb_kludge(MB_HF_AOUT_KLUDGE | 3, MB_LOAD, 0x1000, MB_LOAD + 0x1800, MB_LOAD + 0x100);

	return file("mb.bin", img, n);
}

Test(boot, multiboot_info_block)
{
	const char *k = mb_kernel();
	const char *m0 = file("m0", "perfvisor module 0", 18), *m1 = file("m1", "x", 1);
	char spec0[160];
	const char *mods[2] = { spec0, m1 };
	const struct mb_info *mbi = (const void *)(mem.hva + PV_LB_INFO_GPA);
	const struct mb_module *mm;
	const struct mb_mmap_entry *e;
	char want[200];

	snprintf(spec0, sizeof(spec0), "%s arg=1 two", m0);
	cr_assert_eq(load(k, "a=b", mods, 2, 3), 0, "%s", err.msg);
	cr_assert_eq(res.proto, BOOT_PROTO_MULTIBOOT);
	cr_assert(strstr(res.why, "a.out kludge"), "%s", res.why);
	cr_assert_eq(res.cpu.long_mode, false);
	cr_assert_eq(res.cpu.rax, MB_BOOT_MAGIC);
	cr_assert_eq(res.cpu.rbx, PV_LB_INFO_GPA);
	cr_assert_eq(res.cpu.rip, MB_LOAD + 0x100);
	cr_assert_eq(mbi->flags,
		     MB_INFO_MEMORY | MB_INFO_CMDLINE | MB_INFO_MODS | MB_INFO_MMAP | MB_INFO_LOADER);
	cr_assert_eq(mbi->mem_lower, 639);
	cr_assert_eq(mbi->mem_upper, (MEM - 0x100000) / 1024);
	snprintf(want, sizeof(want), "%s a=b", k);
	cr_assert_str_eq((const char *)mem.hva + mbi->cmdline, want, "the kernel's path first");
	cr_assert_eq(mbi->mods_count, 2);
	mm = (const void *)(mem.hva + mbi->mods_addr);
	cr_assert_eq(mm[0].mod_start, MB_LOAD + 0x2000, "page-aligned after the kernel's bss");
	cr_assert_eq(mm[0].mod_end, mm[0].mod_start + 18);
	cr_assert_eq(mm[1].mod_start, MB_LOAD + 0x3000);
	cr_assert_arr_eq(mem.hva + mm[0].mod_start, "perfvisor module 0", 18);
	cr_assert_str_eq((const char *)mem.hva + mm[0].string, spec0);
	cr_assert_str_eq((const char *)mem.hva + mm[1].string, m1);
	cr_assert_eq(mbi->mmap_length, 4 * sizeof(*e));
	e = (const void *)(mem.hva + mbi->mmap_addr);
	cr_assert_eq(e[0].size, 20);
	cr_assert_eq(e[0].addr, 0);
	cr_assert_eq(e[0].len, 0x9fc00);
	cr_assert_eq(e[0].type, 1);
	cr_assert_eq(e[2].addr, 0xe0000);
	cr_assert_eq(e[2].type, 2);
	cr_assert_eq(e[3].addr + e[3].len, MEM);
	cr_assert_str_eq((const char *)mem.hva + mbi->boot_loader_name, "perfvisor");
	cr_assert_arr_eq(mem.hva + PV_LB_RSDP_GPA, "RSD PTR ", 8);
}

Test(boot, multiboot_without_cmdline_is_the_path)
{
	const char *k = mb_kernel();
	const struct mb_info *mbi = (const void *)(mem.hva + PV_LB_INFO_GPA);

	cr_assert_eq(load(k, "", NULL, 0, 1), 0, "%s", err.msg);
	cr_assert_str_eq((const char *)mem.hva + mbi->cmdline, k);
	cr_assert_eq(mbi->mods_count, 0);
}

Test(boot, module_errors)
{
	const char *k = mb_kernel();
	static uint8_t big[14 << 20];
	const char *b = file("big", big, sizeof(big));
	const char *mods[1];

	mods[0] = b;
	cr_assert_eq(load(k, "", mods, 1, 1), -E2BIG);
	assert_msg_has("(14680064 bytes) does not fit in guest memory: it would go at 0x202000");
	mods[0] = dir;
	cr_assert_eq(load(k, "", mods, 1, 1), -EINVAL);
	assert_msg_has("' is not a regular file");
	assert_msg_has("initrd '");
	mods[0] = "/nonexistent/mod x";
	cr_assert_eq(load(k, "", mods, 1, 1), -ENOENT);
	assert_msg_has("cannot open initrd '/nonexistent/mod': No such file");
}

Test(boot, detection_order_and_unknown_format)
{
	const char *k;
	size_t n = build_bz(0x10000);

	/* A bzImage that also holds a multiboot header is Linux, as for QEMU. */
	build_mb_kludge(MB_HF_AOUT_KLUDGE, MB_LOAD, 0x100, 0, MB_LOAD);
	build_bz(0x10000);
	k = file("bz", img, n);
	cr_assert_eq(load(k, "", NULL, 0, 1), 0, "%s", err.msg);
	cr_assert_eq(res.proto, BOOT_PROTO_LINUX);
	k = file("junk", "#!/bin/sh\necho hi\n", 18);
	cr_assert_eq(load(k, "", NULL, 0, 1), -ENOEXEC);
	assert_msg_has("/junk': no format perfvisor boots: not a Linux bzImage");
	assert_msg_has("no multiboot v1 header in the first 8 KiB, not an ELF file");
	cr_assert_eq(load(dir, "", NULL, 0, 1), -EINVAL);
	assert_msg_has("is not a regular file");
}

Test(boot, pvh_start_info)
{
	struct pvh_note nt = { 4, 4, PVH_NOTE_PHYS32_ENTRY, "Xen", { MB_LOAD + 0x40, 0 } };
	size_t n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt) - 4);
	const char *k = file("pvh.elf", img, n);
	const char *m0 = file("m0", "data", 4);
	const char *mods[1] = { m0 };
	const struct pvh_start_info *si = (const void *)(mem.hva + PV_LB_INFO_GPA);
	const struct pvh_module *pm;

	cr_assert_eq(load(k, "console=ttyS0", mods, 1, 2), 0, "%s", err.msg);
	cr_assert_eq(res.proto, BOOT_PROTO_PVH);
	cr_assert_eq(res.cpu.rip, MB_LOAD + 0x40);
	cr_assert_eq(res.cpu.rbx, PV_LB_INFO_GPA);
	cr_assert_eq(si->magic, PVH_START_MAGIC);
	cr_assert_eq(si->version, 1);
	cr_assert_str_eq((const char *)mem.hva + si->cmdline_paddr, "console=ttyS0",
			 "no kernel path for PVH");
	cr_assert_eq(si->rsdp_paddr, PV_LB_RSDP_GPA);
	cr_assert_eq(si->memmap_entries, 4);
	cr_assert_eq(si->nr_modules, 1);
	pm = (const void *)(mem.hva + si->modlist_paddr);
	cr_assert_eq(pm->paddr, MB_LOAD + 0x1000);
	cr_assert_eq(pm->size, 4);
	cr_assert_str_eq((const char *)mem.hva + pm->cmdline_paddr, m0);
	/* An entry outside the loaded segments. */
	nt.desc[0] = MB_LOAD + 0x1000;
	n = build_elf32(MB_LOAD, MB_LOAD, &nt, sizeof(nt) - 4);
	k = file("pvh2.elf", img, n);
	cr_assert_eq(load(k, "", NULL, 0, 1), -ENOEXEC);
	assert_msg_has("PVH entry 0x201000 is outside the loaded segments 0x200000-0x200200");
}

Test(boot, linux_boot_params_and_initrd)
{
	size_t n = build_bz(0x10000);
	const char *k = file("bzImage", img, n);
	const char *rd = file("initrd", "perfvisor initrd", 16);
	const char *mods[2] = { rd, rd };
	const struct boot_params *bp = (const void *)(mem.hva + PV_LB_INFO_GPA);

	cr_assert_eq(load(k, "console=ttyS0", mods, 1, 4), 0, "%s", err.msg);
	cr_assert_eq(res.proto, BOOT_PROTO_LINUX);
	cr_assert(res.cpu.long_mode);
	cr_assert_eq(res.cpu.rsi, PV_LB_INFO_GPA);
	cr_assert_eq(res.cpu.cs, 0x10);
	cr_assert_eq(res.cpu.ds, 0x18);
	cr_assert_eq(bp->hdr.version, 0x020f);
	cr_assert_eq(bp->hdr.type_of_loader, 0xff);
	cr_assert_eq(bp->hdr.ramdisk_image, MEM - 0x1000, "the initrd at the top of RAM");
	cr_assert_eq(bp->hdr.ramdisk_size, 16);
	cr_assert_arr_eq(mem.hva + MEM - 0x1000, "perfvisor initrd", 16);
	cr_assert_str_eq((const char *)mem.hva + bp->hdr.cmd_line_ptr, "console=ttyS0");
	cr_assert_eq(bp->e820_entries, 4);
	cr_assert_eq(bp->e820_table[3].addr + bp->e820_table[3].size, MEM);
	cr_assert_eq(bp->acpi_rsdp_addr, PV_LB_RSDP_GPA);
	cr_assert_eq(*(uint64_t *)(mem.hva + PV_LB_PML4_GPA) & ~0xfffULL, PV_LB_PML4_GPA + 0x1000,
		     "identity map");

	cr_assert_eq(load(k, "console=ttyS0", mods, 2, 1), -EINVAL);
	assert_msg_has("a Linux kernel takes one --initrd FILE, without arguments (got 2");
	cr_assert_eq(load(k, "", (const char *const[]){ "/x/initrd arg" }, 1, 1), -EINVAL);
	memset(img + 0x600, 'x', 200);
	cr_assert_eq(load(k,
			  "0123456789012345678901234567890123456789012345678901234567890123456789"
			  "0123456789012345678901234567890123456789",
			  NULL, 0, 1),
		     -EINVAL);
	assert_msg_has("the command line is 110 bytes; this kernel takes at most 100");
}

Test(boot, linux_initrd_does_not_fit)
{
	static uint8_t rd[15 << 20];
	size_t n = build_bz(0x100000);
	const char *k = file("bzImage", img, n);
	const char *mods[1] = { file("rd", rd, sizeof(rd)) };

	cr_assert_eq(load(k, "", mods, 1, 1), -E2BIG);
	assert_msg_has(
		"(15728640 bytes) does not fit between the kernel's end (0x200000) and the end of usable memory "
		"(0x1000000)");
}

Test(boot, elf64_takes_no_modules)
{
	const char *mods[1] = { "/x" };
	Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB } };
	const char *k = file("e.elf", &eh, sizeof(eh));

	cr_assert_eq(load(k, "", mods, 1, 1), -EINVAL);
	assert_msg_has("takes no modules");
	cr_assert_eq(load(k, "", NULL, 0, 1), -ENOEXEC, "the ELF64 loader's own checks");
	assert_msg_has("e.elf': ELF machine 0 is not x86-64");
}

/* ---- ACPI ------------------------------------------------------------------ */

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

Test(boot, acpi_tables)
{
	const uint8_t *rsdp = mem.hva + PV_LB_RSDP_GPA, *rsdt, *madt;
	uint32_t madt_len;

	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 64, NULL, 0), 0);
	cr_assert_arr_eq(rsdp, "RSD PTR ", 8);
	cr_assert_eq(sum(rsdp, 20), 0, "RSDP checksum");
	rsdt = mem.hva + *(const uint32_t *)(rsdp + 16);
	cr_assert_arr_eq(rsdt, "RSDT", 4);
	cr_assert_eq(sum(rsdt, *(const uint32_t *)(rsdt + 4)), 0, "RSDT checksum");
	madt = mem.hva + *(const uint32_t *)(rsdt + 36);
	madt_len = *(const uint32_t *)(madt + 4);
	cr_assert_arr_eq(madt, "APIC", 4);
	cr_assert_eq(madt_len, 44 + 64 * 8 + 12 + 10, "CPUs, the IOAPIC, the SCI's override");
	cr_assert_eq(sum(madt, madt_len), 0, "MADT checksum");
	cr_assert_eq(madt[44 + 63 * 8 + 3], 63, "the last LAPIC's APIC id");
	cr_assert_eq(madt[44 + 64 * 8], 1, "then the IOAPIC");
	cr_assert_eq(*(const uint32_t *)(madt + 44 + 64 * 8 + 4), 0xfec00000u);
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_RSDP_GPA + 0x100, 64, NULL, 0), -ENOSPC);
	cr_assert_eq(acpi_build(&mem, MEM - 0x40, MEM + 0x1000, 1, NULL, 0), -ENOSPC, "outside RAM");
}
