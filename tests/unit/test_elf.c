// SPDX-License-Identifier: MIT
/*
 * Unit tests for the ELF reader with tiny ELF32 and ELF64 images built here:
 * both classes read the same, at unaligned offsets too, and every malformed
 * header, table, string or note is refused with its own message.
 */
#include "elf/elf.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- building images ----------------------------------------------------- */

/* Where each part lies in the file (plus a skew, to make every offset odd). */
#define PH_OFF 0x40
#define NOTE_OFF 0x100
#define STR_OFF 0x140
#define SYM_OFF 0x180
#define SH_OFF 0x200
#define IMG_SIZE 0x310
#define IMG_MAX 0x400

#define LOAD_GPA 0x100000ULL
#define MAIN_SIZE 0x20ULL
#define PVH_ENTRY 0x100040ULL
#define NOTES_LEN 44 /* a GNU build-id note (20 bytes), then a Xen PVH note (24) */

static const char strings[] = "\0main\0helper"; /* "main" at 1, "helper" at 6; 13 bytes */

/* The file, described in ELF64 terms whatever its class; emit() writes it. */
static struct {
	unsigned class;
	uint64_t skew;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	Elf64_Shdr sh[4];
	Elf64_Sym sym[3];
} m;

static _Alignas(64) uint8_t buf[IMG_MAX + 1];
static uint8_t *img = buf;
static struct elf_file f;
static struct errbuf err;

static size_t phent(void)
{
	return m.class == ELFCLASS64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
}

static size_t shent(void)
{
	return m.class == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
}

static size_t syment(void)
{
	return m.class == ELFCLASS64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
}

/* A two-segment executable with a symbol table, its strings and two notes. */
static void model(unsigned class, uint64_t skew)
{
	uint64_t k = skew;

	memset(&m, 0, sizeof(m));
	m.class = class;
	m.skew = skew;
	m.eh = (Elf64_Ehdr){
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, (uint8_t) class, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_EXEC,
		.e_machine = class == ELFCLASS64 ? EM_X86_64 : EM_386,
		.e_version = EV_CURRENT,
		.e_entry = LOAD_GPA,
		.e_phoff = PH_OFF + k,
		.e_shoff = SH_OFF + k,
		.e_ehsize = class == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr),
		.e_phentsize = (uint16_t)phent(),
		.e_phnum = 2,
		.e_shentsize = (uint16_t)shent(),
		.e_shnum = 4,
	};
	m.ph[0] = (Elf64_Phdr){ PT_LOAD, PF_R | PF_X, 0, LOAD_GPA, LOAD_GPA, IMG_SIZE, 0x1000, 0x1000 };
	m.ph[1] = (Elf64_Phdr){ PT_NOTE, PF_R, NOTE_OFF + k, 0, 0, NOTES_LEN, NOTES_LEN, 4 };
	m.sh[1] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB,
				.sh_offset = SYM_OFF + k,
				.sh_size = 3 * syment(),
				.sh_link = 2,
				.sh_info = 2,
				.sh_entsize = syment() };
	m.sh[2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = STR_OFF + k, .sh_size = sizeof(strings) };
	m.sh[3] = (Elf64_Shdr){ .sh_type = SHT_NOTE, .sh_offset = NOTE_OFF + k, .sh_size = NOTES_LEN };
	m.sym[1] = (Elf64_Sym){ 1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 3, LOAD_GPA, MAIN_SIZE };
	m.sym[2] = (Elf64_Sym){ 6, ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE), 0, 3, LOAD_GPA + MAIN_SIZE, 0 };
}

/* Write into the buffer; a table a test moved outside it is not written at all. */
static void put(uint64_t off, const void *p, size_t len)
{
	if (off <= IMG_MAX && len <= IMG_MAX - off)
		memcpy(img + off, p, len);
}

static void put_note(uint64_t off, uint32_t type, const char *name, const void *desc, uint32_t descsz)
{
	uint32_t h[3] = { 4, descsz, type };

	put(off, h, sizeof(h));
	put(off + 12, name, 4);
	put(off + 16, desc, descsz);
}

/* Write the model into img, narrowed to ELF32 if it is one; returns the file's size. */
static size_t emit(void)
{
	uint32_t build_id = 0xdeadbeef;
	uint64_t entry = PVH_ENTRY;

	memset(buf, 0, sizeof(buf));
	if (m.class == ELFCLASS64) {
		put(0, &m.eh, sizeof(m.eh));
		put(m.eh.e_phoff, m.ph, sizeof(m.ph));
		put(m.eh.e_shoff, m.sh, sizeof(m.sh));
		put(SYM_OFF + m.skew, m.sym, sizeof(m.sym));
	} else {
		Elf32_Ehdr h = { .e_type = m.eh.e_type,
				 .e_machine = m.eh.e_machine,
				 .e_version = m.eh.e_version,
				 .e_entry = (uint32_t)m.eh.e_entry,
				 .e_phoff = (uint32_t)m.eh.e_phoff,
				 .e_shoff = (uint32_t)m.eh.e_shoff,
				 .e_ehsize = m.eh.e_ehsize,
				 .e_phentsize = m.eh.e_phentsize,
				 .e_phnum = m.eh.e_phnum,
				 .e_shentsize = m.eh.e_shentsize,
				 .e_shnum = m.eh.e_shnum };

		memcpy(h.e_ident, m.eh.e_ident, EI_NIDENT);
		put(0, &h, sizeof(h));
		for (unsigned i = 0; i < 2; i++) {
			const Elf64_Phdr *p = &m.ph[i];
			Elf32_Phdr q = { p->p_type,
					 (uint32_t)p->p_offset,
					 (uint32_t)p->p_vaddr,
					 (uint32_t)p->p_paddr,
					 (uint32_t)p->p_filesz,
					 (uint32_t)p->p_memsz,
					 p->p_flags,
					 (uint32_t)p->p_align };

			put(m.eh.e_phoff + i * sizeof(q), &q, sizeof(q));
		}
		for (unsigned i = 0; i < 4; i++) {
			const Elf64_Shdr *s = &m.sh[i];
			Elf32_Shdr q = { s->sh_name,
					 s->sh_type,
					 (uint32_t)s->sh_flags,
					 (uint32_t)s->sh_addr,
					 (uint32_t)s->sh_offset,
					 (uint32_t)s->sh_size,
					 s->sh_link,
					 s->sh_info,
					 (uint32_t)s->sh_addralign,
					 (uint32_t)s->sh_entsize };

			put(m.eh.e_shoff + i * sizeof(q), &q, sizeof(q));
		}
		for (unsigned i = 0; i < 3; i++) {
			const Elf64_Sym *s = &m.sym[i];
			Elf32_Sym q = { s->st_name, (uint32_t)s->st_value, (uint32_t)s->st_size,
					s->st_info, s->st_other,	   s->st_shndx };

			put(SYM_OFF + m.skew + i * sizeof(q), &q, sizeof(q));
		}
	}
	put(STR_OFF + m.skew, strings, sizeof(strings));
	put_note(NOTE_OFF + m.skew, NT_GNU_BUILD_ID, "GNU", &build_id, 4);
	put_note(NOTE_OFF + m.skew + 20, 18 /* XEN_ELFNOTE_PHYS32_ENTRY */, "Xen", &entry, 8);
	return IMG_SIZE + m.skew;
}

static size_t build(unsigned class)
{
	model(class, 0);
	return emit();
}

static void setup(void)
{
	img = buf;
	memset(&err, 0, sizeof(err));
	memset(&f, 0xee, sizeof(f));
}

TestSuite(elf, .init = setup);

#define expect_msg(want) cr_assert_str_eq(err.msg, (want))

/* Open the image and check both header tables, which must succeed. */
static void open_all(size_t size)
{
	cr_assert_eq(elf_open(&f, img, size, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_check_phdrs(&f, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_check_shdrs(&f, &err), 0, "%s", err.msg);
}

/* ---- both classes, aligned or not --------------------------------------- */

static void check_headers(unsigned class, size_t size)
{
	Elf64_Phdr p;
	Elf64_Shdr s;

	cr_assert_eq(elf_ident_class(img, size), (int)class);
	cr_assert_eq(elf_open(&f, img, size, &err), 0, "%s", err.msg);
	cr_assert_eq(f.class, class);
	cr_assert_eq(f.size, size);
	cr_assert_eq(f.ehdr.e_type, ET_EXEC);
	cr_assert_eq(f.ehdr.e_entry, LOAD_GPA);
	cr_assert_eq(f.ehdr.e_phnum, 2);
	cr_assert_eq(f.ehdr.e_shoff, SH_OFF + m.skew);
	cr_assert_eq(f.phnum, 0, "no program header is readable before the table is checked");
	cr_assert_eq(elf_phdr(&f, 0, &p), -ERANGE);
	cr_assert_eq(elf_shdr(&f, 0, &s), -ERANGE);

	cr_assert_eq(elf_check_phdrs(&f, &err), 0, "%s", err.msg);
	cr_assert_eq(f.phnum, 2);
	cr_assert_eq(elf_phdr(&f, 0, &p), 0);
	cr_assert_eq(p.p_type, PT_LOAD);
	cr_assert_eq(p.p_flags, PF_R | PF_X);
	cr_assert_eq(p.p_paddr, LOAD_GPA);
	cr_assert_eq(p.p_filesz, IMG_SIZE);
	cr_assert_eq(p.p_memsz, 0x1000);
	cr_assert_eq(p.p_align, 0x1000);
	cr_assert_eq(elf_phdr(&f, 1, &p), 0);
	cr_assert_eq(p.p_type, PT_NOTE);
	cr_assert_eq(p.p_offset, NOTE_OFF + m.skew);
	cr_assert_eq(elf_phdr(&f, 2, &p), -ERANGE);

	cr_assert_eq(elf_check_shdrs(&f, &err), 0, "%s", err.msg);
	cr_assert_eq(f.shnum, 4);
	cr_assert_eq(elf_shdr(&f, 2, &s), 0);
	cr_assert_eq(s.sh_type, SHT_STRTAB);
	cr_assert_eq(s.sh_offset, STR_OFF + m.skew);
	cr_assert_eq(s.sh_size, sizeof(strings));
	cr_assert_eq(elf_shdr(&f, 4, &s), -ERANGE);
	cr_assert_eq(elf_find_section(&f, SHT_SYMTAB), 1);
	cr_assert_eq(elf_find_section(&f, SHT_NOTE), 3);
	cr_assert_eq(elf_find_section(&f, SHT_DYNSYM), -ENOENT);
}

static void check_symbols(void)
{
	struct elf_symtab st;
	struct elf_strtab str;
	Elf64_Sym s;
	const char *name;
	size_t len;

	cr_assert_eq(elf_symtab_open(&f, 1, &st, &err), 0, "%s", err.msg);
	cr_assert_eq(st.nsyms, 3);
	cr_assert_eq(st.link, 2);
	cr_assert_eq(elf_sym(&st, 1, &s), 0);
	cr_assert_eq(s.st_value, LOAD_GPA);
	cr_assert_eq(s.st_size, MAIN_SIZE);
	cr_assert_eq(s.st_shndx, 3);
	cr_assert_eq(ELF64_ST_TYPE(s.st_info), STT_FUNC);
	cr_assert_eq(ELF64_ST_BIND(s.st_info), STB_GLOBAL);
	cr_assert_eq(elf_sym(&st, 3, &s), -ERANGE);

	cr_assert_eq(elf_strtab_open(&f, st.link, &str, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_str(&str, 1, &name, &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, 4);
	cr_assert_eq(memcmp(name, "main", 4), 0);
	cr_assert_eq(elf_sym(&st, 2, &s), 0);
	cr_assert_eq(elf_str(&str, s.st_name, &name, &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, 6);
	cr_assert_eq(memcmp(name, "helper", 6), 0);
	cr_assert_eq(elf_str(&str, 0, &name, &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, 0, "offset 0 is the empty name");
}

static void check_notes(void)
{
	struct elf_notes it;
	struct elf_note n;
	Elf64_Phdr p;
	uint32_t id;
	uint64_t entry;

	cr_assert_eq(elf_phdr(&f, 1, &p), 0);
	cr_assert_eq(elf_notes_init(&f, p.p_offset, p.p_filesz, &it, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, &err), 1, "%s", err.msg);
	cr_assert_eq(n.type, NT_GNU_BUILD_ID);
	cr_assert_eq(n.namesz, 4);
	cr_assert_str_eq(n.name, "GNU");
	cr_assert_eq(n.descsz, 4);
	memcpy(&id, n.desc, 4);
	cr_assert_eq(id, 0xdeadbeef);
	cr_assert_eq(elf_note_next(&it, &n, &err), 1, "%s", err.msg);
	cr_assert_eq(n.type, 18);
	cr_assert_str_eq(n.name, "Xen");
	cr_assert_eq(n.descsz, 8);
	memcpy(&entry, n.desc, 8);
	cr_assert_eq(entry, PVH_ENTRY);
	cr_assert_eq(elf_note_next(&it, &n, &err), 0, "the end");
	cr_assert_eq(elf_note_next(&it, &n, &err), 0, "still the end");
}

static void check_reads(unsigned class, uint64_t skew)
{
	size_t size;

	model(class, skew);
	size = emit();
	check_headers(class, size);
	check_symbols();
	check_notes();
}

Test(elf, reads_elf64)
{
	check_reads(ELFCLASS64, 0);
}

Test(elf, reads_elf32)
{
	check_reads(ELFCLASS32, 0);
}

/* The image at an odd address and every offset odd: all copied out (UBSan checks alignment). */
Test(elf, reads_unaligned)
{
	img = buf + 1;
	check_reads(ELFCLASS64, 1);
	check_reads(ELFCLASS32, 1);
}

Test(elf, null_errbuf)
{
	size_t size = build(ELFCLASS64);

	img[0] = 0;
	cr_assert_eq(elf_open(&f, img, size, NULL), -ENOEXEC);
}

/* ---- the ident and the file header -------------------------------------- */

Test(elf, bad_magic)
{
	size_t size = build(ELFCLASS64);

	cr_assert_eq(elf_open(&f, img, 0, &err), -ENOEXEC);
	expect_msg("not an ELF file (bad magic)");
	cr_assert_eq(elf_open(&f, img, EI_NIDENT - 1, &err), -ENOEXEC, "shorter than e_ident");
	expect_msg("not an ELF file (bad magic)");
	cr_assert_eq(elf_ident_class(img, EI_NIDENT - 1), -ENOEXEC);
	img[1] = 'X';
	cr_assert_eq(elf_open(&f, img, size, &err), -ENOEXEC);
	expect_msg("not an ELF file (bad magic)");
	cr_assert_eq(elf_ident_class(img, size), -ENOEXEC);
	cr_assert_eq(f.phnum, 0, "a refused file reads nothing");
	cr_assert_eq(f.shnum, 0);
}

Test(elf, bad_class)
{
	size_t size = build(ELFCLASS64);

	img[EI_CLASS] = ELFCLASSNONE;
	cr_assert_eq(elf_open(&f, img, size, &err), -ENOEXEC);
	expect_msg("ELF class 0 is neither 32- nor 64-bit");
	img[EI_CLASS] = 3;
	cr_assert_eq(elf_ident_class(img, size), 3, "the class is the file's, whatever it says");
	cr_assert_eq(elf_open(&f, img, size, &err), -ENOEXEC);
	expect_msg("ELF class 3 is neither 32- nor 64-bit");
}

Test(elf, big_endian)
{
	size_t size = build(ELFCLASS32);

	img[EI_DATA] = ELFDATA2MSB;
	cr_assert_eq(elf_open(&f, img, size, &err), -ENOEXEC);
	expect_msg("not a little-endian ELF");
}

Test(elf, truncated_header)
{
	build(ELFCLASS64);
	cr_assert_eq(elf_open(&f, img, 40, &err), -ENOEXEC);
	expect_msg("truncated ELF header (40 of 64 bytes)");
	build(ELFCLASS32);
	cr_assert_eq(elf_open(&f, img, 40, &err), -ENOEXEC);
	expect_msg("truncated ELF header (40 of 52 bytes)");
	cr_assert_eq(elf_open(&f, img, sizeof(Elf32_Ehdr), &err), 0, "a header alone is a file: %s", err.msg);
}

Test(elf, wrong_machine)
{
	size_t size;

	model(ELFCLASS64, 0);
	m.eh.e_machine = EM_386;
	size = emit();
	cr_assert_eq(elf_open(&f, img, size, &err), -ENOEXEC);
	expect_msg("ELF machine 3 is not x86-64");
	model(ELFCLASS32, 0);
	m.eh.e_machine = EM_X86_64;
	size = emit();
	cr_assert_eq(elf_open(&f, img, size, &err), -ENOEXEC);
	expect_msg("ELF32 machine 62 is not i386");
}

/* ---- program headers ----------------------------------------------------- */

/* Edit the model; `check` (elf_check_phdrs or elf_check_shdrs) must refuse it with `want`. */
static void expect_table(unsigned class, void (*edit)(void), int (*check)(struct elf_file *, struct errbuf *),
			 const char *want)
{
	size_t size;

	model(class, 0);
	edit();
	size = emit();
	cr_assert_eq(elf_open(&f, img, size, &err), 0, "%s", err.msg);
	cr_assert_eq(check(&f, &err), -ENOEXEC);
	expect_msg(want);
	cr_assert_eq(f.phnum, 0, "a refused table is not read");
	cr_assert_eq(f.shnum, 0);
	cr_assert_eq(elf_find_section(&f, SHT_SYMTAB), -ENOENT);
}

static void expect_phdrs(unsigned class, void (*edit)(void), const char *want)
{
	expect_table(class, edit, elf_check_phdrs, want);
}

static void no_phdrs(void)
{
	m.eh.e_phnum = 0;
}

static void phentsize_32(void)
{
	m.eh.e_phentsize = sizeof(Elf32_Phdr);
}

static void phentsize_56(void)
{
	m.eh.e_phentsize = sizeof(Elf64_Phdr);
}

static void phdrs_at_end(void)
{
	m.eh.e_phoff = IMG_SIZE - 8;
}

static void phdrs_many(void)
{
	m.eh.e_phnum = 0xffff;
}

static void phoff_wraps(void)
{
	m.eh.e_phoff = UINT64_MAX - 0x10; /* phoff + 2 * 56 wraps */
}

static void phoff_32_top(void)
{
	m.eh.e_phoff = UINT32_MAX - 0x10;
}

Test(elf, program_headers)
{
	expect_phdrs(ELFCLASS64, no_phdrs, "ELF has no program headers");
	expect_phdrs(ELFCLASS64, phentsize_32, "ELF program header size 32 is not 56");
	expect_phdrs(ELFCLASS32, phentsize_56, "ELF program header size 56 is not 32");
	expect_phdrs(ELFCLASS64, phdrs_at_end,
		     "truncated ELF: program headers at 0x308 run past the end of the file");
	expect_phdrs(ELFCLASS64, phdrs_many,
		     "truncated ELF: program headers at 0x40 run past the end of the file");
	expect_phdrs(ELFCLASS64, phoff_wraps,
		     "truncated ELF: program headers at 0xffffffffffffffef run past the end of the file");
	expect_phdrs(ELFCLASS32, phoff_32_top,
		     "truncated ELF: program headers at 0xffffffef run past the end of the file");
}

/* ---- section headers ----------------------------------------------------- */

static void expect_shdrs(unsigned class, void (*edit)(void), const char *want)
{
	expect_table(class, edit, elf_check_shdrs, want);
}

static void shentsize_40(void)
{
	m.eh.e_shentsize = sizeof(Elf32_Shdr);
}

static void shdrs_at_end(void)
{
	m.eh.e_shoff = IMG_SIZE - 0x20;
}

static void shoff_wraps(void)
{
	m.eh.e_shoff = UINT64_MAX - 0x3f;
}

Test(elf, section_headers)
{
	expect_shdrs(ELFCLASS64, shentsize_40, "ELF section header size 40 is not 64");
	expect_shdrs(ELFCLASS64, shdrs_at_end,
		     "truncated ELF: section headers at 0x2f0 run past the end of the file");
	expect_shdrs(ELFCLASS64, shoff_wraps,
		     "truncated ELF: section headers at 0xffffffffffffffc0 run past the end of the file");
}

Test(elf, no_section_headers_is_a_file)
{
	size_t size;

	model(ELFCLASS64, 0);
	m.eh.e_shnum = 0;
	m.eh.e_shentsize = 0;
	m.eh.e_shoff = UINT64_MAX; /* not looked at */
	size = emit();
	cr_assert_eq(elf_open(&f, img, size, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_check_shdrs(&f, &err), 0, "%s", err.msg);
	cr_assert_eq(f.shnum, 0);
	cr_assert_eq(elf_find_section(&f, SHT_SYMTAB), -ENOENT);
}

/* ---- symbol and string tables -------------------------------------------- */

/* Open symbol table section shndx of the (edited) model: its result, the message in err. */
static int open_symtab(unsigned shndx)
{
	struct elf_symtab st;

	open_all(emit());
	return elf_symtab_open(&f, shndx, &st, &err);
}

Test(elf, symtab_bad_entsize)
{
	model(ELFCLASS64, 0);
	m.sh[1].sh_entsize = sizeof(Elf32_Sym);
	cr_assert_eq(open_symtab(1), -ENOEXEC);
	expect_msg("ELF symbol table (section 1): entry size 16 is not 24");
	model(ELFCLASS32, 0);
	m.sh[1].sh_entsize = 0;
	cr_assert_eq(open_symtab(1), -ENOEXEC);
	expect_msg("ELF symbol table (section 1): entry size 0 is not 16");
}

Test(elf, symtab_bad_link)
{
	model(ELFCLASS64, 0);
	m.sh[1].sh_link = 4;
	cr_assert_eq(open_symtab(1), -ENOEXEC);
	expect_msg(
		"ELF symbol table (section 1): its string table, section 4, does not exist (the file has 4)");
}

Test(elf, symtab_not_a_symbol_table)
{
	model(ELFCLASS64, 0);
	cr_assert_eq(open_symtab(2), -ENOEXEC);
	expect_msg("ELF section 2 (type 3) is not a symbol table");
	cr_assert_eq(open_symtab(9), -ERANGE);
	expect_msg("ELF section 9 does not exist (the file has 4)");
}

Test(elf, symtab_past_the_end)
{
	model(ELFCLASS64, 0);
	m.sh[1].sh_size = IMG_SIZE;
	cr_assert_eq(open_symtab(1), -ENOEXEC);
	expect_msg("truncated ELF: section 1 (0x310 bytes at offset 0x180) runs past the end of the file");
}

/* offset + size wraps around 2^64 to a small number: still refused. */
Test(elf, section_offset_plus_size_wraps)
{
	struct elf_strtab str;

	model(ELFCLASS64, 0);
	m.sh[1].sh_offset = UINT64_MAX - 7;
	m.sh[1].sh_size = 0x48;
	cr_assert_eq(open_symtab(1), -ENOEXEC);
	expect_msg("truncated ELF: section 1 (0x48 bytes at offset 0xfffffffffffffff8) runs past the end of "
		   "the file");
	model(ELFCLASS32, 0);
	m.sh[2].sh_offset = 0xfffffff0;
	m.sh[2].sh_size = 0x20;
	open_all(emit());
	cr_assert_eq(elf_strtab_open(&f, 2, &str, &err), -ENOEXEC);
	expect_msg(
		"truncated ELF: section 2 (0x20 bytes at offset 0xfffffff0) runs past the end of the file");
}

Test(elf, symtab_size_not_a_multiple)
{
	struct elf_symtab st;

	model(ELFCLASS64, 0);
	m.sh[1].sh_size = 2 * sizeof(Elf64_Sym) + 5;
	open_all(emit());
	cr_assert_eq(elf_symtab_open(&f, 1, &st, &err), 0, "%s", err.msg);
	cr_assert_eq(st.nsyms, 2, "a partial entry is not read");
}

Test(elf, strtab_outside_the_file)
{
	struct elf_strtab str;

	model(ELFCLASS64, 0);
	m.sh[2].sh_offset = IMG_SIZE - 4;
	open_all(emit());
	cr_assert_eq(elf_strtab_open(&f, 2, &str, &err), -ENOEXEC);
	expect_msg("truncated ELF: section 2 (0xd bytes at offset 0x30c) runs past the end of the file");
	cr_assert_eq(elf_strtab_open(&f, 4, &str, &err), -ERANGE);
}

Test(elf, string_offset_past_its_table)
{
	struct elf_strtab str;
	const char *s = NULL;
	size_t len = 99;

	open_all(build(ELFCLASS64));
	cr_assert_eq(elf_strtab_open(&f, 2, &str, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_str(&str, sizeof(strings), &s, &len, &err), -ENOEXEC);
	expect_msg("ELF string at offset 0xd lies past its table (0xd bytes)");
	cr_assert_eq(elf_str(&str, UINT64_MAX, &s, &len, NULL), -ENOEXEC);
	cr_assert_null(s);
	cr_assert_eq(len, 99, "nothing written on failure");
}

Test(elf, string_unterminated_at_the_tables_end)
{
	struct elf_strtab str;
	const char *s;
	size_t len;

	model(ELFCLASS32, 0);
	m.sh[2].sh_size = 9; /* "\0main\0hel" */
	open_all(emit());
	cr_assert_eq(elf_strtab_open(&f, 2, &str, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_str(&str, 6, &s, &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, 3, "bounded by the table, not by a NUL beyond it");
}

/* ---- notes ---------------------------------------------------------------- */

Test(elf, notes_malformed)
{
	struct elf_notes it;
	struct elf_note n;
	uint32_t big = 0x1000, huge = UINT32_MAX;

	open_all(build(ELFCLASS64));
	put(NOTE_OFF + 4, &big, 4); /* the first note's descriptor runs past the segment */
	cr_assert_eq(elf_notes_init(&f, NOTE_OFF, NOTES_LEN, &it, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, &err), -ENOEXEC);
	expect_msg(
		"ELF note at 0x0 of its segment (name 4, descriptor 4096 bytes) runs past the segment's end "
		"(0x2c bytes)");
	put(NOTE_OFF + 4, &huge, 4); /* padding to 4 bytes must not wrap */
	cr_assert_eq(elf_notes_init(&f, NOTE_OFF, NOTES_LEN, &it, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, NULL), -ENOEXEC);
	put(NOTE_OFF + 20, &huge, 4); /* the second note's name */
	big = 4;
	put(NOTE_OFF + 4, &big, 4);
	cr_assert_eq(elf_notes_init(&f, NOTE_OFF, NOTES_LEN, &it, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, &err), 1, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, &err), -ENOEXEC);
	expect_msg("ELF note at 0x14 of its segment (name 4294967295, descriptor 8 bytes) runs past the "
		   "segment's end (0x2c bytes)");
}

Test(elf, notes_outside_the_file)
{
	struct elf_notes it;

	open_all(build(ELFCLASS64));
	cr_assert_eq(elf_notes_init(&f, IMG_SIZE - 4, 12, &it, &err), -ENOEXEC);
	expect_msg("truncated ELF: notes (0xc bytes at offset 0x30c) run past the end of the file");
	cr_assert_eq(elf_notes_init(&f, UINT64_MAX, 2, &it, NULL), -ENOEXEC, "offset + size wraps");
}

Test(elf, notes_trailing_bytes_end_the_list)
{
	struct elf_notes it;
	struct elf_note n;

	open_all(build(ELFCLASS64));
	cr_assert_eq(elf_notes_init(&f, NOTE_OFF, NOTES_LEN + 11, &it, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, &err), 1);
	cr_assert_eq(elf_note_next(&it, &n, &err), 1);
	cr_assert_eq(elf_note_next(&it, &n, &err), 0, "11 bytes are no note header");
	cr_assert_eq(elf_notes_init(&f, NOTE_OFF, 0, &it, &err), 0, "%s", err.msg);
	cr_assert_eq(elf_note_next(&it, &n, &err), 0, "an empty note segment");
}

/* ---- every truncation ---------------------------------------------------- */

/* Read all there is, as a user would, from an exact-size copy: ASan sees a read past its end. */
static void read_everything(const uint8_t *image, size_t size)
{
	struct elf_symtab st;
	struct elf_strtab str;
	struct elf_notes it;
	struct elf_note n;
	Elf64_Phdr p;
	Elf64_Sym s;
	const char *name;
	size_t len;
	int shndx;

	if (elf_open(&f, image, size, NULL))
		return;
	if (elf_check_phdrs(&f, NULL) == 0) {
		for (unsigned i = 0; i < f.phnum; i++) {
			elf_phdr(&f, i, &p);
			if (p.p_type == PT_NOTE && elf_notes_init(&f, p.p_offset, p.p_filesz, &it, NULL) == 0)
				while (elf_note_next(&it, &n, NULL) > 0)
					;
		}
	}
	if (elf_check_shdrs(&f, NULL) || (shndx = elf_find_section(&f, SHT_SYMTAB)) < 0)
		return;
	if (elf_symtab_open(&f, (unsigned)shndx, &st, NULL) || elf_strtab_open(&f, st.link, &str, NULL))
		return;
	for (uint64_t i = 0; i < st.nsyms; i++)
		if (elf_sym(&st, i, &s) == 0 && elf_str(&str, s.st_name, &name, &len, NULL) == 0)
			cr_assert_leq(name + len, str.data + str.size);
}

Test(elf, every_truncation_is_refused_or_read_inside)
{
	for (unsigned class = ELFCLASS32; class <= ELFCLASS64; class ++) {
		size_t size = build(class);

		for (size_t cut = 0; cut <= size; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);

			cr_assert_not_null(copy);
			memcpy(copy, img, cut);
			read_everything(copy, cut);
			free(copy);
		}
	}
}
