// SPDX-License-Identifier: MIT
/*
 * The ELF reader's tables: a symbol table section and its string table, and
 * the notes of a note segment. Every entry is copied out of the file and
 * widened; every offset, size and string is checked against its table.
 */
#include "elf/elf_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* Section shndx's header, widened: 0, or -ERANGE past the section headers. */
static int section(const struct elf_file *f, unsigned shndx, Elf64_Shdr *sh, struct errbuf *err)
{
	if (elf_shdr(f, shndx, sh))
		return errbuf_set(err, -ERANGE, "ELF section %u does not exist (the file has %u)", shndx,
				  f->shnum);
	return 0;
}

/* Section shndx's bytes lie inside the file. */
static int section_in_file(const struct elf_file *f, unsigned shndx, const Elf64_Shdr *sh, struct errbuf *err)
{
	if (!elf_in_file(f, sh->sh_offset, sh->sh_size))
		return errbuf_set(err, -ENOEXEC,
				  "truncated ELF: section %u (0x%" PRIx64 " bytes at offset 0x%" PRIx64
				  ") runs past the end of the file",
				  shndx, (uint64_t)sh->sh_size, (uint64_t)sh->sh_offset);
	return 0;
}

int elf_symtab_open(const struct elf_file *f, unsigned shndx, struct elf_symtab *st, struct errbuf *err)
{
	size_t want = f->class == ELFCLASS64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	Elf64_Shdr sh;
	int rc;

	memset(st, 0, sizeof(*st));
	rc = section(f, shndx, &sh, err);
	if (rc)
		return rc;
	if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
		return errbuf_set(err, -ENOEXEC, "ELF section %u (type %" PRIu32 ") is not a symbol table",
				  shndx, (uint32_t)sh.sh_type);
	if (sh.sh_entsize != want)
		return errbuf_set(err, -ENOEXEC,
				  "ELF symbol table (section %u): entry size %" PRIu64 " is not %zu", shndx,
				  (uint64_t)sh.sh_entsize, want);
	if (sh.sh_link >= f->shnum)
		return errbuf_set(err, -ENOEXEC,
				  "ELF symbol table (section %u): its string table, section %" PRIu32
				  ", does not exist (the file has %u)",
				  shndx, (uint32_t)sh.sh_link, f->shnum);
	rc = section_in_file(f, shndx, &sh, err);
	if (rc)
		return rc;
	*st = (struct elf_symtab){
		.f = f, .offset = sh.sh_offset, .nsyms = sh.sh_size / want, .link = sh.sh_link
	};
	return 0;
}

int elf_sym(const struct elf_symtab *st, uint64_t i, Elf64_Sym *out)
{
	Elf32_Sym s;

	if (i >= st->nsyms)
		return -ERANGE;
	if (!elf_read_entry(st->f, st->offset, i, out, sizeof(*out), &s, sizeof(s)))
		*out = (Elf64_Sym){ .st_name = s.st_name,
				    .st_info = s.st_info,
				    .st_other = s.st_other,
				    .st_shndx = s.st_shndx,
				    .st_value = s.st_value,
				    .st_size = s.st_size };
	return 0;
}

int elf_strtab_open(const struct elf_file *f, unsigned shndx, struct elf_strtab *t, struct errbuf *err)
{
	Elf64_Shdr sh;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = section(f, shndx, &sh, err);
	if (!rc)
		rc = section_in_file(f, shndx, &sh, err);
	if (rc)
		return rc;
	t->data = (const char *)f->image + sh.sh_offset;
	t->size = sh.sh_size;
	return 0;
}

int elf_str(const struct elf_strtab *t, uint64_t off, const char **s, size_t *len, struct errbuf *err)
{
	if (off >= t->size)
		return errbuf_set(err, -ENOEXEC,
				  "ELF string at offset 0x%" PRIx64 " lies past its table (0x%" PRIx64
				  " bytes)",
				  off, t->size);
	*s = t->data + off;
	*len = strnlen(*s, t->size - off);
	return 0;
}

int elf_notes_init(const struct elf_file *f, uint64_t offset, uint64_t size, struct elf_notes *it,
		   struct errbuf *err)
{
	memset(it, 0, sizeof(*it));
	if (!elf_in_file(f, offset, size))
		return errbuf_set(err, -ENOEXEC,
				  "truncated ELF: notes (0x%" PRIx64 " bytes at offset 0x%" PRIx64
				  ") run past the end of the file",
				  size, offset);
	it->p = f->image + offset;
	it->size = size;
	return 0;
}

int elf_note_next(struct elf_notes *it, struct elf_note *n, struct errbuf *err)
{
	uint64_t name_pad, desc_pad, left = it->size - it->off;
	const uint8_t *at = it->p + it->off;

	if (left < 12)
		return 0;
	memcpy(&n->namesz, at, 4);
	memcpy(&n->descsz, at + 4, 4);
	memcpy(&n->type, at + 8, 4);
	name_pad = ((uint64_t)n->namesz + 3) & ~3ULL;
	desc_pad = ((uint64_t)n->descsz + 3) & ~3ULL;
	if (name_pad + desc_pad > left - 12)
		return errbuf_set(err, -ENOEXEC,
				  "ELF note at 0x%" PRIx64 " of its segment (name %" PRIu32
				  ", descriptor %" PRIu32 " bytes) runs past the segment's end (0x%" PRIx64
				  " bytes)",
				  it->off, n->namesz, n->descsz, it->size);
	n->name = (const char *)at + 12;
	n->desc = at + 12 + name_pad;
	it->off += 12 + name_pad + desc_pad;
	return 1;
}

int elf_section_named(const struct elf_file *f, const char *name, struct elf_section *out, struct errbuf *err)
{
	struct elf_strtab names;
	size_t want = strlen(name);

	memset(out, 0, sizeof(*out));
	if (!f->shnum || elf_strtab_open(f, f->ehdr.e_shstrndx, &names, err))
		return -ENOENT;
	for (unsigned i = 0; i < f->shnum; i++) {
		Elf64_Shdr sh;
		const char *s = NULL;
		size_t len = 0;

		if (elf_shdr(f, i, &sh) || elf_str(&names, sh.sh_name, &s, &len, NULL) || len != want ||
		    memcmp(s, name, len))
			continue;
		if (sh.sh_type == SHT_NOBITS)
			return errbuf_set(err, -ENOENT, "ELF section %s has no bytes in the file", name);
		if (section_in_file(f, i, &sh, err))
			return -ENOEXEC;
		out->data = f->image + sh.sh_offset;
		out->size = sh.sh_size;
		out->addr = sh.sh_addr;
		return 0;
	}
	return errbuf_set(err, -ENOENT, "no ELF section %s", name);
}
