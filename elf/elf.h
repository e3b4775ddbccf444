/* SPDX-License-Identifier: MIT */
/*
 * perfvisor's one ELF reader, for the boot loaders and the profiler's symbols:
 * an ELF32 i386 or ELF64 x86-64 little-endian image in memory, every offset
 * and size from the file checked against its length, every structure copied
 * out (a file's offsets need not be aligned) and widened to its ELF64 form.
 */
#ifndef PERFVISOR_ELF_H
#define PERFVISOR_ELF_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/*
 * One ELF image, read in place: the caller keeps `image` alive and unchanged
 * while it uses this. All functions are pure and may be called from any
 * thread; they fail with -ENOEXEC and one line naming the defect in `err`
 * (which may be NULL), or with -ERANGE for an index past a table.
 */
struct elf_file {
	const uint8_t *image;
	size_t size;
	unsigned class;	 /* ELFCLASS32 or ELFCLASS64 */
	Elf64_Ehdr ehdr; /* the file header, widened */
	unsigned phnum;	 /* program headers elf_phdr() reads: 0 until elf_check_phdrs() */
	unsigned shnum;	 /* section headers elf_shdr() reads: 0 until elf_check_shdrs() */
};

/*
 * The EI_CLASS byte of an ELF image (ELFCLASS32, ELFCLASS64, or whatever else
 * the file says), or -ENOEXEC if it is shorter than e_ident or lacks the magic.
 */
int elf_ident_class(const void *image, size_t size);

/*
 * Read the file header of `image` (`size` bytes) into *f: the magic, a class
 * of 32 or 64 bits, little-endian data, a header that fits in the file, and
 * the machine (EM_X86_64 for ELF64, EM_386 for ELF32). The program and section
 * header tables are not looked at yet. 0 or -ENOEXEC with a message.
 */
int elf_open(struct elf_file *f, const void *image, size_t size, struct errbuf *err);

/*
 * Check the program header table: at least one entry, the class's entry size,
 * all inside the file. Then f->phnum is e_phnum. 0 or -ENOEXEC with a message.
 */
int elf_check_phdrs(struct elf_file *f, struct errbuf *err);
/* Program header i (< f->phnum), widened: 0, or -ERANGE. */
int elf_phdr(const struct elf_file *f, unsigned i, Elf64_Phdr *out);

/*
 * Check the section header table: none at all (f->shnum stays 0), or the
 * class's entry size and all inside the file; then f->shnum is e_shnum.
 * 0 or -ENOEXEC with a message.
 */
int elf_check_shdrs(struct elf_file *f, struct errbuf *err);
/* Section header i (< f->shnum), widened: 0, or -ERANGE. */
int elf_shdr(const struct elf_file *f, unsigned i, Elf64_Shdr *out);
/* The index of the first section of `type` (SHT_*), or -ENOENT. */
int elf_find_section(const struct elf_file *f, uint32_t type);

/* A section's bytes in the file and its address. */
struct elf_section {
	const uint8_t *data;
	uint64_t size, addr;
};
/*
 * The section called `name` (by the section-name table, e_shstrndx), its
 * bytes inside the file (elf_check_shdrs() first): 0, -ENOENT (no such
 * section, or SHT_NOBITS) or -ENOEXEC (outside the file), with a message.
 */
int elf_section_named(const struct elf_file *f, const char *name, struct elf_section *out,
		      struct errbuf *err);

/* A symbol table section (SHT_SYMTAB or SHT_DYNSYM), its entries in the file. */
struct elf_symtab {
	const struct elf_file *f;
	uint64_t offset; /* of entry 0 in the file */
	uint64_t nsyms;	 /* entries, the null symbol 0 included */
	unsigned link;	 /* the section index of its string table */
};

/*
 * Open symbol table section `shndx`: a symbol table, the class's entry size,
 * a string table link that names a section, its entries inside the file.
 * The string table itself is elf_strtab_open()'s. 0, -ERANGE or -ENOEXEC.
 */
int elf_symtab_open(const struct elf_file *f, unsigned shndx, struct elf_symtab *st, struct errbuf *err);
/* Symbol i (< st->nsyms), widened: 0, or -ERANGE. */
int elf_sym(const struct elf_symtab *st, uint64_t i, Elf64_Sym *out);

/* A string table: its bytes in the file. */
struct elf_strtab {
	const char *data;
	uint64_t size;
};

/* Open string table section `shndx` (its bytes inside the file): 0, -ERANGE or -ENOEXEC. */
int elf_strtab_open(const struct elf_file *f, unsigned shndx, struct elf_strtab *t, struct errbuf *err);
/*
 * The string at `off` in t: *s and its length up to the NUL or the table's
 * end (a string need not be terminated inside the table). 0, or -ENOEXEC if
 * `off` lies past the table.
 */
int elf_str(const struct elf_strtab *t, uint64_t off, const char **s, size_t *len, struct errbuf *err);

/*
 * The notes of a PT_NOTE segment or SHT_NOTE section, [offset, offset+size)
 * in the file: each a 12-byte header, then its name and descriptor, each
 * padded to 4 bytes (as Linux and Xen emit them).
 */
struct elf_notes {
	const uint8_t *p;
	uint64_t size, off;
};

struct elf_note {
	uint32_t type;
	uint32_t namesz, descsz;
	const char *name;    /* namesz bytes, the NUL included if the file has one */
	const uint8_t *desc; /* descsz bytes */
};

/* Start reading notes at [offset, offset+size) of the file: 0, or -ENOEXEC if it lies outside. */
int elf_notes_init(const struct elf_file *f, uint64_t offset, uint64_t size, struct elf_notes *it,
		   struct errbuf *err);
/*
 * The next note: 1 and *n; 0 at the end (fewer than 12 bytes left);
 * -ENOEXEC if the note's name or descriptor runs past the end.
 */
int elf_note_next(struct elf_notes *it, struct elf_note *n, struct errbuf *err);

#endif
