// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: every kernel loader on the same input (machine/loader*.c):
 * the ELF64 contract, multiboot v1 (header search and load), the PVH note
 * and the Linux bzImage (its payload decompressed on the host and its vmlinux
 * loaded, and the guest path). A hostile file must be refused or loaded inside
 * guest RAM (4 MiB, checked through gmem_hva), never crash. The profiler's
 * symbol readers (pmu/symbols.c: the kernel's .symtab, --symbols text;
 * pmu/kallsyms.c: a Linux kernel's own tables, found by their shape; pmu/linux.c:
 * its BTF, read by libbpf, and ORC tables, then the task and ORC walks with the
 * input itself as the guest's memory) too;
 * every ELF is read through elf/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfvisor/bootinfo.h"
#include "perfvisor/multiboot.h"
#include "machine/machine.h"
#include "pmu/pmu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as guest memory at a kernel address: a hostile guest's task list and stacks. */
#define FUZZ_MEM_BASE 0xffff888000000000ULL
static const uint8_t *fuzz_mem;
static size_t fuzz_mem_len;

static bool fuzz_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	if (gva < FUZZ_MEM_BASE || gva - FUZZ_MEM_BASE > fuzz_mem_len ||
	    len > fuzz_mem_len - (gva - FUZZ_MEM_BASE))
		return false;
	memcpy(buf, fuzz_mem + (gva - FUZZ_MEM_BASE), len);
	return true;
}

static void linux_walks(const uint8_t *data, size_t size)
{
	struct prof_linux lx;
	struct errbuf err;
	uint64_t pc[PROF_MAX_DEPTH], w[3] = { 0 };
	char comm[PROF_COMM_LEN];
	int32_t pid;
	bool tr;

	if (prof_linux_load(&lx, data, size, &err))
		return;
	fuzz_mem = data;
	fuzz_mem_len = size;
	memcpy(w, data, size < sizeof(w) ? size : sizeof(w));
	prof_linux_task(&lx, FUZZ_MEM_BASE + (w[0] % (size + 1)), fuzz_read, NULL, &pid, comm);
	for (size_t i = 0; i < lx.n_orc && i < 64; i++) {
		struct prof_linux_regs r = { .ip = lx.orc_ip[i] + (w[1] & 0xff),
					     .sp = FUZZ_MEM_BASE + (w[2] % (size + 1)),
					     .bp = FUZZ_MEM_BASE + ((w[2] >> 32) % (size + 1)) };

		prof_linux_unwind(&lx, 0, &r, fuzz_read, NULL, pc, PROF_MAX_DEPTH, &tr);
	}
	prof_linux_fini(&lx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gmem mem;
	static bool ready;
	struct loader_info info;
	struct loader_linux lx;
	struct mb_header hdr;
	struct prof_symtab syms;
	struct errbuf err;
	uint64_t entry = 0;
	uint32_t off;

	if (!ready) {
		if (gmem_init(&mem, 4 << 20, &err))
			abort();
		ready = true;
	}
	loader_load_elf(data, size, &mem, PV_RESERVED_END, &info, &err);
	if (loader_find_multiboot(data, size, &hdr, &off))
		loader_load_multiboot(data, size, &mem, &info, &err);
	loader_elf_pvh_entry(data, size, &entry, &err);
	if (loader_is_bzimage(data, size)) {
		/* Both paths: the payload decompressed on the host (its ELF loaded), and the guest's. */
		loader_load_linux(data, size, &mem, LOADER_DECOMPRESS_HOST, &lx, &err);
		loader_linux_fini(&lx);
		loader_load_linux(data, size, &mem, LOADER_DECOMPRESS_GUEST, &lx, &err);
		loader_linux_fini(&lx);
	}
	if (prof_symtab_load_elf(&syms, data, size, &err) == 0) {
		prof_symtab_find(&syms, entry);
		prof_symtab_fini(&syms);
	}
	if (prof_symtab_load_kallsyms(&syms, data, size, &err) == 0) {
		prof_symtab_set_slide(&syms, syms.anchor + PROF_SLIDE_ALIGN);
		prof_symtab_find(&syms, entry);
		prof_symtab_fini(&syms);
	}
	linux_walks(data, size);
	if (prof_symtab_load_text(&syms, (const char *)data, size, &err) == 0) {
		prof_symtab_find(&syms, size);
		prof_symtab_fini(&syms);
	}
	return 0;
}
