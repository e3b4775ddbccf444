// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: every kernel loader on the same input (machine/loader*.c):
 * the ELF64 contract, multiboot v1 (header search and load), the PVH note
 * and the Linux bzImage (its payload decompressed on the host and its vmlinux
 * loaded, and the guest path). A hostile file must be refused or loaded inside
 * guest RAM (4 MiB, checked through gmem_hva), never crash. The profiler's
 * symbol readers (pmu/symbols.c: the kernel's .symtab, --symbols text;
 * pmu/kallsyms.c: a Linux kernel's own tables, found by their shape) too;
 * every ELF is read through elf/.
 */
#include <stdint.h>
#include <stdlib.h>

#include "perfvisor/bootinfo.h"
#include "perfvisor/multiboot.h"
#include "machine/machine.h"
#include "pmu/pmu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
		loader_load_linux(data, size, &mem, LOADER_DECOMPRESS_GUEST, &lx, &err);
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
	if (prof_symtab_load_text(&syms, (const char *)data, size, &err) == 0) {
		prof_symtab_find(&syms, size);
		prof_symtab_fini(&syms);
	}
	return 0;
}
