/* SPDX-License-Identifier: MIT */
/*
 * Private to the ELF reader (elf.c: the file, program and section headers;
 * elf_sym.c: symbol and string tables, notes): the one bounds check every
 * offset and size from the file goes through, and the copy of a table entry.
 */
#ifndef PERFVISOR_ELF_INTERNAL_H
#define PERFVISOR_ELF_INTERNAL_H

#include <stdbool.h>
#include <string.h>

#include "elf/elf.h"

/* [off, off+len) lies inside the file, without overflow. */
static inline bool elf_in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

/*
 * Entry i of a checked table at `off`, copied out (a file's offsets need not
 * be aligned): into out64 if the file is ELF64 (true), else into out32 (false)
 * for the caller to widen.
 */
static inline bool elf_read_entry(const struct elf_file *f, uint64_t off, uint64_t i, void *out64,
				  size_t size64, void *out32, size_t size32)
{
	if (f->class == ELFCLASS64) {
		memcpy(out64, f->image + off + i * size64, size64);
		return true;
	}
	memcpy(out32, f->image + off + i * size32, size32);
	return false;
}

#endif
