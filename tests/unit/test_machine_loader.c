// SPDX-License-Identifier: MIT
/*
 * Unit tests for the ELF64 loader with images built in memory: a good image
 * lands at the right guest addresses, and every malformed header is refused
 * with its own message before guest memory is touched.
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfvisor/bootinfo.h"
#include "tests/unit/gmem_fake.h"

#define MEM_SIZE GMEM_MIN_SIZE
#define POISON 0x5a
#define IMG_MAX 0x4000
#define PAYLOAD_OFF 0x400 /* segment data starts here; the gap lets tests move headers */

/* ---- building images ----------------------------------------------------- */

struct seg {
	uint32_t type, flags;
	uint64_t paddr, filesz, memsz;
};

static _Alignas(64) uint8_t img[IMG_MAX];

static Elf64_Ehdr *eh(void)
{
	return (Elf64_Ehdr *)img;
}

static Elf64_Phdr *ph(unsigned i)
{
	return (Elf64_Phdr *)(img + sizeof(Elf64_Ehdr)) + i;
}

/* The byte at offset j of segment i's file data. */
static uint8_t pattern(unsigned i, uint64_t j)
{
	return (uint8_t)(0x11 * (i + 1) + j);
}

/*
 * An ELF64 x86-64 ET_EXEC: the header, n program headers right after it,
 * then each segment's file bytes (16-aligned) from PAYLOAD_OFF. Returns the
 * image size.
 */
static size_t build_elf(const struct seg *s, unsigned n, uint64_t entry)
{
	uint64_t off = PAYLOAD_OFF;

	memset(img, 0, sizeof(img));
	cr_assert_leq(sizeof(Elf64_Ehdr) + n * sizeof(Elf64_Phdr), PAYLOAD_OFF);
	*eh() = (Elf64_Ehdr){
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_EXEC,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_entry = entry,
		.e_phoff = sizeof(Elf64_Ehdr),
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr),
		.e_phnum = (uint16_t)n,
	};
	for (unsigned i = 0; i < n; i++) {
		*ph(i) = (Elf64_Phdr){
			.p_type = s[i].type,
			.p_flags = s[i].flags,
			.p_offset = off,
			.p_vaddr = s[i].paddr,
			.p_paddr = s[i].paddr,
			.p_filesz = s[i].filesz,
			.p_memsz = s[i].memsz,
			.p_align = 16,
		};
		cr_assert_leq(off + s[i].filesz, IMG_MAX);
		for (uint64_t j = 0; j < s[i].filesz; j++)
			img[off + j] = pattern(i, j);
		off = (off + s[i].filesz + 15) & ~15ULL;
	}
	return off;
}

#define TEXT_GPA 0x100000ULL
#define TEXT_SIZE 0x200ULL
#define DATA_GPA 0x180000ULL
#define DATA_FILESZ 0x100ULL
#define DATA_MEMSZ 0x2000ULL
#define ENTRY (TEXT_GPA + 0x40)

/* text (R+X), data with bss (R+W), a note and a GNU_STACK, both ignored. */
static size_t build_good(void)
{
	const struct seg s[] = {
		{ PT_LOAD, PF_R | PF_X, TEXT_GPA, TEXT_SIZE, TEXT_SIZE },
		{ PT_LOAD, PF_R | PF_W, DATA_GPA, DATA_FILESZ, DATA_MEMSZ },
		{ PT_NOTE, PF_R, 0, 0x20, 0x20 },
		{ PT_GNU_STACK, PF_R | PF_W, 0, 0, 0 },
	};

	return build_elf(s, 4, ENTRY);
}

/* ---- fixture ------------------------------------------------------------- */

static struct gmem mem;
static struct loader_info info;
static struct errbuf err;
static char tmpdir[64];

static void setup(void)
{
	gmem_poisoned(&mem, MEM_SIZE, POISON);
	memset(&err, 0, sizeof(err));
	memset(&info, 0xee, sizeof(info));
	tmpdir[0] = '\0';
}

static void teardown(void)
{
	gmem_fini(&mem);
	if (tmpdir[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		cr_assert_eq(system(cmd), 0);
	}
}

TestSuite(loader, .init = setup, .fini = teardown);

static void assert_mem_untouched(void)
{
	static uint8_t poison_page[4096];

	memset(poison_page, POISON, sizeof(poison_page));
	for (uint64_t off = 0; off < mem.size; off += sizeof(poison_page))
		cr_assert_arr_eq(mem.hva + off, poison_page, sizeof(poison_page),
				 "guest memory changed near 0x%llx by a rejected image",
				 (unsigned long long)off);
}

#define assert_msg_has(s) cr_assert(strstr(err.msg, (s)), "message '%s' lacks '%s'", err.msg, (s))

/* Load img[0, size) and expect rc with a message containing `want`, RAM untouched. */
static void expect_reject(size_t size, int rc, const char *want)
{
	int got = loader_load_elf(img, size, &mem, PV_RESERVED_END, &info, &err);

	cr_assert_eq(got, rc, "rc %d, want %d (%s)", got, rc, err.msg);
	assert_msg_has(want);
	assert_mem_untouched();
}

static void assert_segment_loaded(unsigned i, uint64_t gpa, uint64_t filesz, uint64_t memsz)
{
	for (uint64_t j = 0; j < filesz; j++)
		cr_assert_eq(mem.hva[gpa + j], pattern(i, j), "segment %u byte 0x%llx", i,
			     (unsigned long long)j);
	for (uint64_t j = filesz; j < memsz; j++)
		cr_assert_eq(mem.hva[gpa + j], 0, "segment %u bss byte 0x%llx not zeroed", i,
			     (unsigned long long)j);
	cr_assert_eq(mem.hva[gpa - 1], POISON, "byte before segment %u written", i);
	cr_assert_eq(mem.hva[gpa + memsz], POISON, "byte after segment %u written", i);
}

/* ---- good images ------------------------------------------------------- */

Test(loader, good_image_loads)
{
	size_t size = build_good();

	cr_assert_eq(loader_load_elf(img, size, &mem, PV_RESERVED_END, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.entry, ENTRY);
	cr_assert_eq(info.low, TEXT_GPA);
	cr_assert_eq(info.high, DATA_GPA + DATA_MEMSZ);
	cr_assert_eq(info.nr_segments, 2, "only PT_LOAD segments count");
	assert_segment_loaded(0, TEXT_GPA, TEXT_SIZE, TEXT_SIZE);
	assert_segment_loaded(1, DATA_GPA, DATA_FILESZ, DATA_MEMSZ);
	cr_assert_eq(mem.hva[0], POISON, "the note (paddr 0) is not loaded");
}

Test(loader, segments_in_any_order_and_at_the_edges)
{
	/* Data first, text at exactly PV_RESERVED_END, bss up to the last byte of RAM. */
	const struct seg s[] = {
		{ PT_LOAD, PF_R | PF_W, MEM_SIZE - 0x1000, 0x10, 0x1000 },
		{ PT_LOAD, PF_R | PF_X, PV_RESERVED_END, 0x30, 0x30 },
		{ PT_LOAD, PF_R, 0x20000, 0, 0 }, /* empty: skipped */
	};
	size_t size = build_elf(s, 3, PV_RESERVED_END + 0x2f);

	cr_assert_eq(loader_load_elf(img, size, &mem, PV_RESERVED_END, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.low, PV_RESERVED_END);
	cr_assert_eq(info.high, MEM_SIZE);
	cr_assert_eq(info.nr_segments, 2);
	cr_assert_eq(info.entry, PV_RESERVED_END + 0x2f, "the last byte of text is a valid entry");
	for (uint64_t j = 0; j < 0x30; j++)
		cr_assert_eq(mem.hva[PV_RESERVED_END + j], pattern(1, j));
	cr_assert_eq(mem.hva[PV_RESERVED_END - 1], POISON);
	cr_assert_eq(mem.hva[MEM_SIZE - 0x1000], pattern(0, 0));
	cr_assert_eq(mem.hva[MEM_SIZE - 1], 0, "bss to the end of RAM");
}

Test(loader, entry_in_bss_of_executable_segment)
{
	const struct seg s[] = { { PT_LOAD, PF_R | PF_X, TEXT_GPA, 0x10, 0x100 } };
	size_t size = build_elf(s, 1, TEXT_GPA + 0xff);

	cr_assert_eq(loader_load_elf(img, size, &mem, PV_RESERVED_END, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.entry, TEXT_GPA + 0xff);
}

Test(loader, misaligned_program_headers)
{
	size_t size = build_good();

	/* Legal ELF, odd layout: the table at an offset that is not 8-aligned. */
	memmove(img + 0x101, ph(0), 4 * sizeof(Elf64_Phdr));
	eh()->e_phoff = 0x101;
	cr_assert_eq(loader_load_elf(img, size, &mem, PV_RESERVED_END, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.nr_segments, 2);
	assert_segment_loaded(0, TEXT_GPA, TEXT_SIZE, TEXT_SIZE);
}

Test(loader, null_errbuf)
{
	size_t size = build_good();

	img[0] = 0;
	cr_assert_eq(loader_load_elf(img, size, &mem, PV_RESERVED_END, &info, NULL), -ENOEXEC);
	assert_mem_untouched();
}

/* ---- the ELF header ---------------------------------------------------- */

Test(loader, bad_magic)
{
	size_t size = build_good();

	img[1] = 'X';
	expect_reject(size, -ENOEXEC, "not an ELF file (bad magic)");
}

Test(loader, empty_file)
{
	expect_reject(0, -ENOEXEC, "not an ELF file");
}

Test(loader, shorter_than_ident)
{
	build_good();
	expect_reject(4, -ENOEXEC, "not an ELF file");
}

Test(loader, truncated_header)
{
	build_good();
	expect_reject(40, -ENOEXEC, "truncated ELF header (40 of 64 bytes)");
}

Test(loader, elfclass32)
{
	size_t size = build_good();

	eh()->e_ident[EI_CLASS] = ELFCLASS32;
	expect_reject(size, -ENOEXEC, "not a 64-bit ELF (class 1)");
}

Test(loader, big_endian)
{
	size_t size = build_good();

	eh()->e_ident[EI_DATA] = ELFDATA2MSB;
	expect_reject(size, -ENOEXEC, "not a little-endian ELF");
}

Test(loader, wrong_machine)
{
	size_t size = build_good();

	eh()->e_machine = EM_AARCH64;
	expect_reject(size, -ENOEXEC, "ELF machine 183 is not x86-64");
}

Test(loader, shared_object)
{
	size_t size = build_good();

	eh()->e_type = ET_DYN;
	expect_reject(size, -ENOEXEC, "ELF type 3 is not a static executable");
}

Test(loader, no_program_headers)
{
	size_t size = build_good();

	eh()->e_phnum = 0;
	expect_reject(size, -ENOEXEC, "ELF has no program headers");
}

Test(loader, too_many_program_headers)
{
	size_t size = build_good();

	eh()->e_phnum = 65;
	expect_reject(size, -ENOEXEC, "65 program headers (at most 64)");
}

Test(loader, bad_phentsize)
{
	size_t size = build_good();

	eh()->e_phentsize = sizeof(Elf32_Phdr);
	expect_reject(size, -ENOEXEC, "program header size 32 is not 56");
}

Test(loader, program_headers_past_eof)
{
	size_t size = build_good();

	eh()->e_phoff = size - 8;
	expect_reject(size, -ENOEXEC, "program headers at 0x");
	assert_msg_has("run past the end of the file");
}

Test(loader, program_header_table_longer_than_file)
{
	size_t size = build_good();

	eh()->e_phnum = 64; /* 64 * 56 bytes at offset 64 > the image */
	expect_reject(size, -ENOEXEC, "program headers at 0x40 run past the end");
}

Test(loader, program_header_offset_overflows)
{
	size_t size = build_good();

	eh()->e_phoff = UINT64_MAX - 0x10; /* phoff + 4 * 56 wraps */
	expect_reject(size, -ENOEXEC, "program headers at 0xffffffffffffffef run past the end");
}

/* ---- program headers ---------------------------------------------------- */

Test(loader, segment_data_past_eof)
{
	size_t size = build_good();

	ph(1)->p_offset = size - 0x10;
	expect_reject(size, -ENOEXEC, "truncated ELF: segment 1 (0x100 bytes at offset");
	assert_msg_has("runs past the end of the file");
}

Test(loader, segment_offset_overflows)
{
	size_t size = build_good();

	ph(1)->p_offset = UINT64_MAX - 8;
	expect_reject(size, -ENOEXEC, "segment 1 (0x100 bytes at offset 0xfffffffffffffff7)");
}

Test(loader, segment_filesz_huge)
{
	size_t size = build_good();

	ph(1)->p_filesz = UINT64_MAX;
	ph(1)->p_memsz = UINT64_MAX;
	expect_reject(size, -ENOEXEC, "truncated ELF: segment 1");
}

Test(loader, filesz_exceeds_memsz)
{
	size_t size = build_good();

	ph(1)->p_filesz = DATA_MEMSZ + 1;
	expect_reject(size, -ENOEXEC, "ELF segment 1: file size exceeds memory size");
}

Test(loader, segment_outside_guest_memory)
{
	size_t size = build_good();

	ph(1)->p_paddr = MEM_SIZE - 0x1000; /* memsz 0x2000 runs 0x1000 past the end */
	expect_reject(size, -E2BIG,
		      "ELF segment 1 at 0x3ff000 (0x2000 bytes) lies outside guest memory (4 MiB)");
	assert_msg_has("use a larger --memory");
}

Test(loader, segment_starts_at_end_of_memory)
{
	size_t size = build_good();

	ph(1)->p_paddr = MEM_SIZE;
	expect_reject(size, -E2BIG, "lies outside guest memory");
}

Test(loader, segment_end_overflows)
{
	size_t size = build_good();

	ph(1)->p_memsz = UINT64_MAX - 0x100000; /* paddr + memsz wraps to below paddr */
	/* The end is not printed as a wrapped address (it was 0x180000-0x7ffff). */
	expect_reject(size, -E2BIG, "ELF segment 1 at 0x180000 (0xffffffffffefffff bytes)");
	assert_msg_has("lies outside guest memory");
}

Test(loader, segment_paddr_near_top)
{
	size_t size = build_good();

	ph(1)->p_paddr = UINT64_MAX - 0xff;
	expect_reject(size, -E2BIG, "ELF segment 1 at 0xffffffffffffff00");
}

Test(loader, segment_overlaps_boot_area)
{
	size_t size = build_good();

	ph(1)->p_paddr = PV_RESERVED_END - 0x1000;
	expect_reject(size, -EINVAL, "ELF segment 1 at 0xf000 overlaps the VMM boot area [0, 0x10000)");
	assert_msg_has("link the guest at or above 0x10000");
}

Test(loader, segment_at_zero)
{
	size_t size = build_good();

	ph(1)->p_paddr = 0;
	expect_reject(size, -EINVAL, "segment 1 at 0x0 overlaps the VMM boot area");
}

Test(loader, reserved_end_is_the_callers)
{
	size_t size = build_good();
	int rc = loader_load_elf(img, size, &mem, 0x200000, &info, &err);

	cr_assert_eq(rc, -EINVAL);
	assert_msg_has("ELF segment 0 at 0x100000 overlaps the VMM boot area [0, 0x200000)");
	assert_mem_untouched();
}

Test(loader, entry_in_data_segment)
{
	size_t size = build_good();

	eh()->e_entry = DATA_GPA;
	expect_reject(size, -ENOEXEC, "ELF entry point 0x180000 is not inside a loaded executable segment");
}

Test(loader, entry_just_past_text)
{
	size_t size = build_good();

	eh()->e_entry = TEXT_GPA + TEXT_SIZE;
	expect_reject(size, -ENOEXEC, "entry point 0x100200 is not inside");
}

Test(loader, entry_just_before_text)
{
	size_t size = build_good();

	eh()->e_entry = TEXT_GPA - 1;
	expect_reject(size, -ENOEXEC, "entry point 0xfffff is not inside");
}

Test(loader, entry_in_ignored_executable_segment)
{
	size_t size = build_good();

	/* The note claims to be executable and cover the entry; it is not loaded. */
	ph(2)->p_flags = PF_R | PF_X;
	ph(2)->p_paddr = 0x300000;
	eh()->e_entry = 0x300000;
	expect_reject(size, -ENOEXEC, "entry point 0x300000 is not inside");
}

Test(loader, dynamically_linked)
{
	size_t size = build_good();

	ph(2)->p_type = PT_INTERP;
	expect_reject(size, -ENOEXEC, "ELF is dynamically linked (PT_INTERP)");
}

Test(loader, no_load_segment)
{
	size_t size = build_good();

	ph(0)->p_type = PT_NOTE;
	ph(1)->p_type = PT_NOTE;
	expect_reject(size, -ENOEXEC, "ELF has no loadable segment");
}

Test(loader, only_empty_load_segments)
{
	size_t size = build_good();

	ph(0)->p_memsz = ph(0)->p_filesz = 0;
	ph(1)->p_memsz = ph(1)->p_filesz = 0;
	expect_reject(size, -ENOEXEC, "ELF has no loadable segment");
}

Test(loader, image_bigger_than_guest_memory)
{
	size_t size = MEM_SIZE + 1;
	uint8_t *big = aligned_alloc(64, MEM_SIZE + 64);
	int rc;

	cr_assert_not_null(big);
	memset(big, 0, size);
	memcpy(big, img, build_good());
	rc = loader_load_elf(big, size, &mem, PV_RESERVED_END, &info, &err);
	free(big);
	cr_assert_eq(rc, -E2BIG);
	assert_msg_has("kernel file (4194305 bytes) is larger than guest memory (4 MiB)");
	assert_mem_untouched();
}

/* ---- loader_load_elf_file ----------------------------------------------- */

static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/pv-loader-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(close(fd), 0);
}

Test(loader, file_loads)
{
	char path[128];
	size_t size = build_good();

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/guest.elf", tmpdir);
	write_file(path, img, size);
	cr_assert_eq(loader_load_elf_file(path, &mem, PV_RESERVED_END, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.entry, ENTRY);
	cr_assert_eq(info.nr_segments, 2);
	assert_segment_loaded(0, TEXT_GPA, TEXT_SIZE, TEXT_SIZE);
	assert_segment_loaded(1, DATA_GPA, DATA_FILESZ, DATA_MEMSZ);
}

Test(loader, file_missing)
{
	char path[128];

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/nope.elf", tmpdir);
	cr_assert_eq(loader_load_elf_file(path, &mem, PV_RESERVED_END, &info, &err), -ENOENT);
	assert_msg_has("cannot open kernel '");
	assert_msg_has("/nope.elf': No such file or directory");
	assert_mem_untouched();
}

Test(loader, file_is_directory)
{
	make_tmpdir();
	cr_assert_eq(loader_load_elf_file(tmpdir, &mem, PV_RESERVED_END, &info, &err), -EINVAL);
	assert_msg_has(tmpdir);
	assert_msg_has("is not a regular file");
	assert_mem_untouched();
}

Test(loader, file_bad_contents_prefixed_with_path)
{
	char path[128], want[200];
	size_t size = build_good();

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/bad.elf", tmpdir);
	eh()->e_machine = EM_AARCH64;
	write_file(path, img, size);
	cr_assert_eq(loader_load_elf_file(path, &mem, PV_RESERVED_END, &info, &err), -ENOEXEC);
	snprintf(want, sizeof(want), "kernel '%s': ELF machine 183 is not x86-64", path);
	cr_assert_str_eq(err.msg, want);
	assert_mem_untouched();
}

Test(loader, file_empty)
{
	char path[128];

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/empty.elf", tmpdir);
	write_file(path, "", 0);
	cr_assert_eq(loader_load_elf_file(path, &mem, PV_RESERVED_END, &info, &err), -ENOEXEC);
	assert_msg_has("empty.elf': not an ELF file");
}

Test(loader, file_bigger_than_guest_memory)
{
	char path[128];
	int fd;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/huge.elf", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, MEM_SIZE + 4096), 0); /* sparse */
	close(fd);
	cr_assert_eq(loader_load_elf_file(path, &mem, PV_RESERVED_END, &info, &err), -E2BIG);
	assert_msg_has("huge.elf' (4198400 bytes) is larger than guest memory (4 MiB)");
	assert_mem_untouched();
}
