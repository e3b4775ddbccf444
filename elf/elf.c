// SPDX-License-Identifier: MIT
/*
 * The ELF reader's file level: the ident and file header, and the program
 * and section header tables, ELF32 widened to ELF64 so that every user has
 * one set of structures. Each header is checked before it is read.
 */
#include "elf/elf_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

int elf_ident_class(const void *image, size_t size)
{
	const uint8_t *id = image;

	if (size < EI_NIDENT || memcmp(id, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	return id[EI_CLASS];
}

static void widen_ehdr32(const uint8_t *image, Elf64_Ehdr *o)
{
	Elf32_Ehdr h;

	memcpy(&h, image, sizeof(h));
	*o = (Elf64_Ehdr){ .e_type = h.e_type,
			   .e_machine = h.e_machine,
			   .e_version = h.e_version,
			   .e_entry = h.e_entry,
			   .e_phoff = h.e_phoff,
			   .e_shoff = h.e_shoff,
			   .e_flags = h.e_flags,
			   .e_ehsize = h.e_ehsize,
			   .e_phentsize = h.e_phentsize,
			   .e_phnum = h.e_phnum,
			   .e_shentsize = h.e_shentsize,
			   .e_shnum = h.e_shnum,
			   .e_shstrndx = h.e_shstrndx };
	memcpy(o->e_ident, h.e_ident, EI_NIDENT);
}

int elf_open(struct elf_file *f, const void *image, size_t size, struct errbuf *err)
{
	int class = elf_ident_class(image, size);
	size_t hsize;

	memset(f, 0, sizeof(*f));
	if (class < 0)
		return errbuf_set(err, -ENOEXEC, "not an ELF file (bad magic)");
	if (class != ELFCLASS64 && class != ELFCLASS32)
		return errbuf_set(err, -ENOEXEC, "ELF class %u is neither 32- nor 64-bit", (unsigned)class);
	if (((const uint8_t *)image)[EI_DATA] != ELFDATA2LSB)
		return errbuf_set(err, -ENOEXEC, "not a little-endian ELF");
	hsize = class == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (size < hsize)
		return errbuf_set(err, -ENOEXEC, "truncated ELF header (%zu of %zu bytes)", size, hsize);
	/* Copied out: the image need not be aligned for the structure. */
	if (class == ELFCLASS64)
		memcpy(&f->ehdr, image, sizeof(f->ehdr));
	else
		widen_ehdr32(image, &f->ehdr);
	if (class == ELFCLASS64 && f->ehdr.e_machine != EM_X86_64)
		return errbuf_set(err, -ENOEXEC, "ELF machine %u is not x86-64", f->ehdr.e_machine);
	if (class == ELFCLASS32 && f->ehdr.e_machine != EM_386)
		return errbuf_set(err, -ENOEXEC, "ELF32 machine %u is not i386", f->ehdr.e_machine);
	f->image = image;
	f->size = size;
	f->class = (unsigned)class;
	return 0;
}

/* A header table of n entries of `want` bytes at off, `what` in messages ("program", "section"). */
static int check_table(const struct elf_file *f, const char *what, uint64_t off, unsigned n, unsigned entsize,
		       size_t want, struct errbuf *err)
{
	if (entsize != want)
		return errbuf_set(err, -ENOEXEC, "ELF %s header size %zu is not %zu", what, (size_t)entsize,
				  want);
	if (!elf_in_file(f, off, (uint64_t)n * want))
		return errbuf_set(err, -ENOEXEC,
				  "truncated ELF: %s headers at 0x%" PRIx64 " run past the end of the file",
				  what, off);
	return 0;
}

int elf_check_phdrs(struct elf_file *f, struct errbuf *err)
{
	const Elf64_Ehdr *h = &f->ehdr;
	int rc;

	f->phnum = 0;
	if (h->e_phnum == 0)
		return errbuf_set(err, -ENOEXEC, "ELF has no program headers");
	rc = check_table(f, "program", h->e_phoff, h->e_phnum, h->e_phentsize,
			 f->class == ELFCLASS64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr), err);
	if (!rc)
		f->phnum = h->e_phnum;
	return rc;
}

int elf_phdr(const struct elf_file *f, unsigned i, Elf64_Phdr *out)
{
	Elf32_Phdr p;

	if (i >= f->phnum)
		return -ERANGE;
	if (!elf_read_entry(f, f->ehdr.e_phoff, i, out, sizeof(*out), &p, sizeof(p)))
		*out = (Elf64_Phdr){ .p_type = p.p_type,
				     .p_flags = p.p_flags,
				     .p_offset = p.p_offset,
				     .p_vaddr = p.p_vaddr,
				     .p_paddr = p.p_paddr,
				     .p_filesz = p.p_filesz,
				     .p_memsz = p.p_memsz,
				     .p_align = p.p_align };
	return 0;
}

int elf_check_shdrs(struct elf_file *f, struct errbuf *err)
{
	const Elf64_Ehdr *h = &f->ehdr;
	int rc;

	/* No section headers is a valid file (a stripped one may have none): nothing to read. */
	f->shnum = 0;
	if (h->e_shnum == 0)
		return 0;
	rc = check_table(f, "section", h->e_shoff, h->e_shnum, h->e_shentsize,
			 f->class == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr), err);
	if (!rc)
		f->shnum = h->e_shnum;
	return rc;
}

int elf_shdr(const struct elf_file *f, unsigned i, Elf64_Shdr *out)
{
	Elf32_Shdr s;

	if (i >= f->shnum)
		return -ERANGE;
	if (!elf_read_entry(f, f->ehdr.e_shoff, i, out, sizeof(*out), &s, sizeof(s)))
		*out = (Elf64_Shdr){ .sh_name = s.sh_name,
				     .sh_type = s.sh_type,
				     .sh_flags = s.sh_flags,
				     .sh_addr = s.sh_addr,
				     .sh_offset = s.sh_offset,
				     .sh_size = s.sh_size,
				     .sh_link = s.sh_link,
				     .sh_info = s.sh_info,
				     .sh_addralign = s.sh_addralign,
				     .sh_entsize = s.sh_entsize };
	return 0;
}

int elf_find_section(const struct elf_file *f, uint32_t type)
{
	for (unsigned i = 0; i < f->shnum; i++) {
		Elf64_Shdr s;

		if (elf_shdr(f, i, &s) == 0 && s.sh_type == type)
			return (int)i;
	}
	return -ENOENT;
}
