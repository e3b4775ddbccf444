// SPDX-License-Identifier: MIT
/*
 * Unit tests for a bzImage decompressed on the host (machine/payload.c and
 * loader_linux.c's host path): a small vmlinux-like ELF compressed here with
 * xz, gzip and zstd into a bzImage, loaded at its physical addresses; and
 * every bad payload (truncated, corrupt, too large, not an ELF, segments
 * outside RAM or in the boot area) refused with its message, guest memory
 * untouched.
 */
#include "machine/machine.h"

#include <asm/bootparam.h>
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <lzma.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "perfvisor/legacy_boot.h"
#include "tests/unit/bzimage_fake.h"
#include "tests/unit/elf_fake.h"
#include "tests/unit/gmem_fake.h"

#define MEM (16ULL << 20)
#define POISON 0x5a
#define SETUP_SECTS 2
#define SETUP_LEN ((SETUP_SECTS + 1) * 512)
#define VM_PADDR 0x200000ULL /* where the fake vmlinux links */
#define VM_CODE 0x3000	     /* its segment's file bytes */
#define VM_MEMSZ 0x5000	     /* and memory (bss after) */
#define IMG_MAX 0x20000

static uint8_t elf[0x1000 + VM_CODE];
static uint8_t img[IMG_MAX];
static struct gmem mem;
static struct errbuf err;
static struct loader_linux lx;

static void setup(void)
{
	gmem_poisoned(&mem, MEM, POISON);
	memset(img, 0, sizeof(img));
	memset(&err, 0, sizeof(err));
}

static void teardown(void)
{
	loader_linux_fini(&lx);
	gmem_fini(&mem);
}

TestSuite(payload, .init = setup, .fini = teardown);

#define assert_msg_has(s) cr_assert(strstr(err.msg, (s)), "message '%s' lacks '%s'", err.msg, (s))

static void assert_untouched(uint64_t from, uint64_t to)
{
	gmem_assert_untouched(&mem, from, to, POISON);
}

/* A static ELF64 x86-64 with one executable PT_LOAD at `paddr` (vaddr in the kernel's map). */
static size_t build_elf(uint64_t paddr)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(elf + sizeof(*eh));

	memset(elf, 0, sizeof(elf));
	elf_fake_header(eh);
	eh->e_entry = paddr; /* as Linux's vmlinux: the physical startup_64 */
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
			    .p_flags = PF_R | PF_X,
			    .p_offset = 0x1000,
			    .p_vaddr = 0xffffffff80000000ULL + paddr,
			    .p_paddr = paddr,
			    .p_filesz = VM_CODE,
			    .p_memsz = VM_MEMSZ,
			    .p_align = 0x1000 };
	for (size_t i = 0; i < VM_CODE; i++)
		elf[0x1000 + i] = (uint8_t)(i * 13 / 7);
	return sizeof(elf);
}

/* `in` compressed with `fmt` into `out`, then the kernel's 4-byte size trailer; its length. */
static size_t pack(enum loader_payload fmt, const void *in, size_t len, uint8_t *out, size_t room)
{
	size_t n = 0;
	uint32_t sz = (uint32_t)len;

	if (fmt == LOADER_PAYLOAD_XZ) {
		cr_assert_eq(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in, len, out, &n, room),
			     LZMA_OK);
	} else if (fmt == LOADER_PAYLOAD_GZIP) {
		z_stream z = { 0 };

		cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
		z.next_in = (Bytef *)in;
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = (uInt)room;
		cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
		n = z.total_out;
		deflateEnd(&z);
	} else {
		ZSTD_CCtx *c = ZSTD_createCCtx();

		ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
		n = ZSTD_compress2(c, out, room, in, len);
		cr_assert(!ZSTD_isError(n));
		ZSTD_freeCCtx(c);
	}
	cr_assert_leq(n + 4, room);
	memcpy(out + n, &sz, 4);
	return n + 4;
}

static struct setup_header *hdr(void)
{
	return bz_hdr(img);
}

/* A bzImage: setup sectors, 0x200 bytes of "decompressor", the payload, 0x100 bytes after. */
static size_t build_bz(const void *payload, size_t plen, uint32_t init_size)
{
	struct setup_header *h = bz_fill_hdr(img, SETUP_SECTS, init_size);

	h->payload_offset = 0x200;
	h->payload_length = (uint32_t)plen;
	cr_assert_leq(SETUP_LEN + 0x300 + plen, sizeof(img));
	memset(img + SETUP_LEN, 0xcc, 0x200);
	memcpy(img + SETUP_LEN + 0x200, payload, plen);
	return SETUP_LEN + 0x300 + plen;
}

static size_t build_compressed(enum loader_payload fmt, uint64_t paddr)
{
	static uint8_t z[IMG_MAX / 2];
	size_t n = build_elf(paddr);

	return build_bz(z, pack(fmt, elf, n, z, sizeof(z)), 0x100000);
}

static void loads_on_host(enum loader_payload fmt, const char *name)
{
	size_t n = build_compressed(fmt, VM_PADDR);
	const char *got;

	cr_assert_eq(loader_payload_format(img + SETUP_LEN + 0x200, 8, &got), fmt);
	cr_assert_str_eq(got, name);
	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err), 0, "%s", err.msg);
	cr_assert(lx.host_decompressed);
	cr_assert_eq(lx.entry64, VM_PADDR, "the vmlinux's startup_64, not the decompressor");
	cr_assert_eq(lx.kernel_end, VM_PADDR + VM_MEMSZ);
	cr_assert_eq(lx.info.nr_segments, 1);
	cr_assert_arr_eq(mem.hva + VM_PADDR, elf + 0x1000, VM_CODE);
	for (uint64_t a = VM_PADDR + VM_CODE; a < VM_PADDR + VM_MEMSZ; a++)
		cr_assert_eq(mem.hva[a], 0, "bss at 0x%llx", (unsigned long long)a);
	assert_untouched(PV_LB_LINUX_LOAD, VM_PADDR);
	cr_assert_arr_eq(lx.hdr, hdr(), lx.hdr_len, "boot_params get the bzImage's setup header");
	cr_assert(strstr(lx.how, "decompressed on the host"), "%s", lx.how);
	cr_assert(strstr(lx.how, name), "%s", lx.how);
	/* The vmlinux stays with the caller, for a profile's symbols (freed in teardown). */
	cr_assert_eq(lx.vmlinux_len, sizeof(elf));
	cr_assert_arr_eq(lx.vmlinux, elf, sizeof(elf));
}

Test(payload, xz_loads_on_host)
{
	loads_on_host(LOADER_PAYLOAD_XZ, "xz");
}

Test(payload, gzip_loads_on_host)
{
	loads_on_host(LOADER_PAYLOAD_GZIP, "gzip");
}

Test(payload, zstd_loads_on_host)
{
	loads_on_host(LOADER_PAYLOAD_ZSTD, "zstd");
}

Test(payload, guest_path_keeps_the_decompressor)
{
	size_t n = build_compressed(LOADER_PAYLOAD_XZ, VM_PADDR);

	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_GUEST, &lx, &err), 0, "%s", err.msg);
	cr_assert(!lx.host_decompressed);
	cr_assert_eq(lx.entry64, PV_LB_LINUX_LOAD + 0x200);
	cr_assert_arr_eq(mem.hva + PV_LB_LINUX_LOAD, img + SETUP_LEN, n - SETUP_LEN);
	cr_assert(strstr(lx.how, "xz payload decompressed in the guest"), "%s", lx.how);
}

Test(payload, other_formats_fall_back_to_the_guest)
{
	static const uint8_t bz2[] = "BZh91AY&SY and so on";
	size_t n = build_bz(bz2, sizeof(bz2), 0x100000);

	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err), 0, "%s", err.msg);
	cr_assert(!lx.host_decompressed);
	cr_assert_eq(lx.entry64, PV_LB_LINUX_LOAD + 0x200);
	cr_assert(strstr(lx.how, "bzip2 payload decompressed in the guest"), "%s", lx.how);
	memset(mem.hva, POISON, mem.size);
	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_HOST, &lx, &err), -ENOTSUP);
	assert_msg_has("--kernel-decompress host: the bzImage's payload is bzip2");
	assert_untouched(PV_LB_LINUX_LOAD, PV_LB_LINUX_LOAD + 0x1000);
	/* No payload at all (perfvisor's own test bzImage): the guest path, host refused. */
	hdr()->payload_length = 0;
	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err), 0, "%s", err.msg);
	cr_assert(strstr(lx.how, "no compressed payload"), "%s", lx.how);
	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_HOST, &lx, &err), -ENOTSUP);
	assert_msg_has("absent (not compressed)");
}

static void reject(size_t n, int rc, const char *want)
{
	int got = loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err);

	cr_assert_eq(got, rc, "rc %d want %d (%s)", got, rc, err.msg);
	assert_msg_has(want);
	assert_untouched(0, 0x400000);
}

Test(payload, truncated)
{
	enum loader_payload fmts[] = { LOADER_PAYLOAD_XZ, LOADER_PAYLOAD_GZIP, LOADER_PAYLOAD_ZSTD };

	for (unsigned i = 0; i < 3; i++) {
		size_t n = build_compressed(fmts[i], VM_PADDR);

		hdr()->payload_length /= 2;
		reject(n, -ENOEXEC, "payload ends before its stream does");
		/* A payload past the end of the file. */
		hdr()->payload_length = (uint32_t)(n - SETUP_LEN);
		reject(n, -ENOEXEC, "runs past the end of the file");
		hdr()->payload_offset = 0xffffff00;
		hdr()->payload_length = 0x200;
		reject(n, -ENOEXEC, "runs past the end of the file");
	}
}

Test(payload, corrupt)
{
	enum loader_payload fmts[] = { LOADER_PAYLOAD_XZ, LOADER_PAYLOAD_GZIP, LOADER_PAYLOAD_ZSTD };

	for (unsigned i = 0; i < 3; i++) {
		size_t n = build_compressed(fmts[i], VM_PADDR);
		uint8_t *p = img + SETUP_LEN + 0x200;

		for (uint32_t j = 24; j < hdr()->payload_length - 24; j += 5)
			p[j] ^= 0xa5;
		reject(n, -ENOEXEC, "payload in the bzImage");
	}
	/* A magic number and nothing sensible after it. */
	memcpy(img, (uint8_t[]){ 0xfd, '7', 'z', 'X', 'Z', 0, 0xff, 0xff, 1, 2, 3, 4 }, 12);
	reject(build_bz(img, 12, 0x100000), -ENOEXEC, "corrupt xz payload");
}

Test(payload, too_large)
{
	size_t n = build_compressed(LOADER_PAYLOAD_XZ, VM_PADDR);

	/* Bounded by init_size (here one byte short of the vmlinux) ... */
	hdr()->init_size = sizeof(elf) - 1;
	reject(n, -E2BIG, "decompresses to more than 16383 bytes");
	/* ... and by guest memory, whatever init_size says (0 as well). */
	hdr()->init_size = 0;
	cr_assert_eq(loader_load_linux(img, n, &mem, LOADER_DECOMPRESS_AUTO, &lx, &err), 0, "%s", err.msg);
}

Test(payload, decompress_cap)
{
	static uint8_t z[IMG_MAX];
	static uint8_t big[1 << 20];
	size_t zn = pack(LOADER_PAYLOAD_ZSTD, big, sizeof(big), z, sizeof(z));
	void *out;
	size_t len;

	cr_assert_eq(loader_decompress(LOADER_PAYLOAD_ZSTD, z, zn, sizeof(big), &out, &len, &err), 0, "%s",
		     err.msg);
	cr_assert_eq(len, sizeof(big));
	free(out);
	/* A lying size trailer changes nothing but the first allocation. */
	memset(z + zn - 4, 0xff, 4);
	cr_assert_eq(loader_decompress(LOADER_PAYLOAD_ZSTD, z, zn, sizeof(big) - 1, &out, &len, &err),
		     -E2BIG);
	cr_assert_null(out);
	assert_msg_has("more than 1048575 bytes");
	memset(z + zn - 4, 0, 4);
	cr_assert_eq(loader_decompress(LOADER_PAYLOAD_ZSTD, z, zn, sizeof(big), &out, &len, &err), 0, "%s",
		     err.msg);
	free(out);
}

Test(payload, not_an_elf)
{
	static uint8_t z[0x4000];
	static const char text[] = "this is not an ELF file, it is a sentence compressed with xz";

	reject(build_bz(z, pack(LOADER_PAYLOAD_XZ, text, sizeof(text), z, sizeof(z)), 0x100000), -ENOEXEC,
	       "the decompressed xz payload (61 bytes, the vmlinux): not an ELF file (bad magic)");
}

Test(payload, segments_outside_ram_or_in_the_boot_area)
{
	reject(build_compressed(LOADER_PAYLOAD_XZ, MEM - 0x1000), -E2BIG, "lies outside guest memory");
	reject(build_compressed(LOADER_PAYLOAD_GZIP, 0x80000), -EINVAL, "overlaps the VMM boot area");
}

/* The profiler's way to the vmlinux (its kallsyms): the payload decompressed into a buffer. */
Test(payload, vmlinux_for_symbols)
{
	static const uint8_t bz2[] = "BZh91AY&SY and so on";
	size_t n = build_compressed(LOADER_PAYLOAD_ZSTD, VM_PADDR), len, elen = build_elf(VM_PADDR);
	void *out;

	cr_assert_eq(loader_linux_vmlinux(img, n, 1 << 20, &out, &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, elen);
	cr_assert_arr_eq(out, elf, len, "the vmlinux, byte for byte");
	free(out);
	cr_assert_eq(loader_linux_vmlinux(img, n, 100, &out, &len, &err), -E2BIG, "the cap holds");
	cr_assert_null(out);
	cr_assert_eq(loader_linux_vmlinux(img, 0x300, 1 << 20, &out, &len, &err), -ENOEXEC);
	assert_msg_has("truncated bzImage");
	n = build_bz(bz2, sizeof(bz2), 0x100000);
	cr_assert_eq(loader_linux_vmlinux(img, n, 1 << 20, &out, &len, &err), -ENOTSUP);
	assert_msg_has("the bzImage's payload is bzip2");
	cr_assert_eq(loader_linux_vmlinux(elf, elen, 1 << 20, &out, &len, &err), -ENOEXEC);
	assert_msg_has("not a Linux bzImage");
}
