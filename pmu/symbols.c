// SPDX-License-Identifier: MIT
/*
 * Guest symbols for the profiler: the function symbols of an ELF's .symtab
 * (ELF32 or ELF64, every offset and size checked against the file), or of
 * nm / System.map text. Sorted by address for a binary search.
 */
#include "pmu.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int add(struct prof_symtab *t, size_t *cap, uint64_t addr, uint64_t size, const char *name, size_t len)
{
	if (t->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct prof_sym *n = realloc(t->sym, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->sym = n;
		*cap = ncap;
	}
	t->sym[t->n].name = strndup(name, len);
	if (!t->sym[t->n].name)
		return -ENOMEM;
	t->sym[t->n].addr = addr;
	t->sym[t->n].size = size;
	t->n++;
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct prof_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Of two names at one address, the sized one (a function over a label) first. */
	return x->size > y->size ? -1 : x->size < y->size;
}

/* Sort and drop duplicates at one address (the first, preferred, stays). */
static void finish(struct prof_symtab *t)
{
	size_t out = 0;

	if (t->n)
		qsort(t->sym, t->n, sizeof(t->sym[0]), by_addr);
	for (size_t i = 0; i < t->n; i++) {
		if (out && t->sym[out - 1].addr == t->sym[i].addr) {
			free(t->sym[i].name);
			continue;
		}
		t->sym[out++] = t->sym[i];
	}
	t->n = out;
}

void prof_symtab_fini(struct prof_symtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->sym[i].name);
	free(t->sym);
	t->sym = NULL;
	t->n = 0;
}

/* One symbol table entry, either class, as 64-bit values. */
struct sym_ent {
	uint32_t name;
	uint8_t type;
	uint16_t shndx;
	uint64_t value, size;
};

struct shdr_ent {
	uint32_t type;
	uint64_t offset, size, entsize, link;
};

/* What the ELF header says of the section headers, either class. */
struct ehdr_ent {
	uint64_t shoff;
	unsigned shnum, shentsize;
};

/* The header of an ELF of `len` bytes, copied out; false if the file is shorter than it. */
static bool ehdr_at(const unsigned char *p, size_t len, bool is64, struct ehdr_ent *o)
{
	if (is64 && len >= sizeof(Elf64_Ehdr)) {
		Elf64_Ehdr h;

		memcpy(&h, p, sizeof(h));
		*o = (struct ehdr_ent){ h.e_shoff, h.e_shnum, h.e_shentsize };
		return true;
	}
	if (!is64 && len >= sizeof(Elf32_Ehdr)) {
		Elf32_Ehdr h;

		memcpy(&h, p, sizeof(h));
		*o = (struct ehdr_ent){ h.e_shoff, h.e_shnum, h.e_shentsize };
		return true;
	}
	return false;
}

/* Copied out (memcpy): a file's offsets need not be aligned for the structures. */
static void shdr_at(const unsigned char *at, bool is64, struct shdr_ent *o)
{
	if (is64) {
		Elf64_Shdr s;

		memcpy(&s, at, sizeof(s));
		*o = (struct shdr_ent){ s.sh_type, s.sh_offset, s.sh_size, s.sh_entsize, s.sh_link };
	} else {
		Elf32_Shdr s;

		memcpy(&s, at, sizeof(s));
		*o = (struct shdr_ent){ s.sh_type, s.sh_offset, s.sh_size, s.sh_entsize, s.sh_link };
	}
}

static void sym_at(const unsigned char *at, bool is64, struct sym_ent *o)
{
	if (is64) {
		Elf64_Sym s;

		memcpy(&s, at, sizeof(s));
		*o = (struct sym_ent){ s.st_name, ELF64_ST_TYPE(s.st_info), s.st_shndx, s.st_value,
				       s.st_size };
	} else {
		Elf32_Sym s;

		memcpy(&s, at, sizeof(s));
		*o = (struct sym_ent){ s.st_name, ELF32_ST_TYPE(s.st_info), s.st_shndx, s.st_value,
				       s.st_size };
	}
}

static bool in_file(size_t len, uint64_t off, uint64_t size)
{
	return off <= len && size <= len - off;
}

int prof_symtab_load_elf(struct prof_symtab *t, const void *image, size_t len, struct errbuf *err)
{
	const unsigned char *p = image;
	struct ehdr_ent eh;
	bool is64;
	size_t cap = 0;

	memset(t, 0, sizeof(*t));
	snprintf(t->source, sizeof(t->source), "none");
	if (len < EI_NIDENT || memcmp(p, ELFMAG, SELFMAG))
		return errbuf_set(err, -EINVAL, "not an ELF file");
	is64 = p[EI_CLASS] == ELFCLASS64;
	/* Every structure is copied out: offsets in a file need not be aligned. */
	if ((!is64 && p[EI_CLASS] != ELFCLASS32) || !ehdr_at(p, len, is64, &eh))
		return errbuf_set(err, -EINVAL, "ELF: truncated header");
	if (eh.shnum && eh.shentsize != (is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)))
		return errbuf_set(err, -EINVAL, "ELF: bad section header size");
	if (!eh.shnum)
		return 0;
	if (!in_file(len, eh.shoff, (uint64_t)eh.shnum * eh.shentsize))
		return errbuf_set(err, -EINVAL, "ELF: section headers outside the file");
	for (unsigned i = 0; i < eh.shnum; i++) {
		struct shdr_ent sh, str;

		shdr_at(p + eh.shoff + (uint64_t)i * eh.shentsize, is64, &sh);
		if (sh.type != SHT_SYMTAB)
			continue;
		if (sh.entsize != (is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym)) || sh.link >= eh.shnum ||
		    !in_file(len, sh.offset, sh.size))
			return errbuf_set(err, -EINVAL, "ELF: malformed .symtab");
		shdr_at(p + eh.shoff + sh.link * eh.shentsize, is64, &str);
		if (!in_file(len, str.offset, str.size))
			return errbuf_set(err, -EINVAL, "ELF: string table outside the file");
		for (uint64_t j = 1; j < sh.size / sh.entsize; j++) {
			uint64_t stroff = str.offset, strsize = str.size;
			struct sym_ent e;
			const char *name;
			int rc;

			sym_at(p + sh.offset + j * sh.entsize, is64, &e);
			if ((e.type != STT_FUNC && e.type != STT_NOTYPE) || e.shndx == SHN_UNDEF ||
			    e.shndx >= SHN_LORESERVE || e.name >= strsize)
				continue;
			name = (const char *)p + stroff + e.name;
			if (!name[0])
				continue;
			rc = add(t, &cap, e.value, e.size, name, strnlen(name, strsize - e.name));
			if (rc) {
				prof_symtab_fini(t);
				return errbuf_set(err, rc, "out of memory");
			}
		}
		break;
	}
	finish(t);
	if (t->n)
		snprintf(t->source, sizeof(t->source), "ELF .symtab");
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int prof_symtab_load_text(struct prof_symtab *t, const char *text, size_t len, struct errbuf *err)
{
	size_t cap = 0, line = 0;
	const char *p = text, *end = text + len;

	memset(t, 0, sizeof(*t));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q = p, *name;
		uint64_t addr = 0;
		unsigned digits = 0;
		char type;

		line++;
		/* ADDR (hex, no 0x) TYPE NAME; other lines ("U sym", blank ones) are skipped. */
		for (; q < le && digits <= 16; q++, digits++) {
			int v = hexval(*q);

			if (v < 0)
				break;
			addr = addr << 4 | (uint64_t)v;
		}
		if (digits && digits <= 16 && le - q >= 3 && q[0] == ' ' && q[2] == ' ') {
			type = q[1];
			name = q + 3;
			if ((type == 't' || type == 'T' || type == 'w' || type == 'W') && name < le) {
				size_t nlen = (size_t)(le - name);
				int rc;

				while (nlen && (name[nlen - 1] == '\r' || name[nlen - 1] == ' '))
					nlen--;
				/* A module suffix ("\t[mod]") is part of no name. */
				for (size_t k = 0; k < nlen; k++)
					if (name[k] == '\t' || name[k] == ' ')
						nlen = k;
				if (nlen) {
					rc = add(t, &cap, addr, 0, name, nlen);
					if (rc) {
						prof_symtab_fini(t);
						return errbuf_set(err, rc, "out of memory");
					}
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!t->n)
		return errbuf_set(
			err, -EINVAL,
			"no text symbols in it (%zu lines; want nm or System.map lines 'ADDR t NAME')", line);
	finish(t);
	snprintf(t->source, sizeof(t->source), "System.map");
	return 0;
}

const struct prof_sym *prof_symtab_find(const struct prof_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	/* The last symbol at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->sym[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct prof_sym *s = &t->sym[lo - 1];

	if (s->size)
		return addr - s->addr < s->size ? s : NULL;
	/* Unsized (System.map, asm labels): up to the next symbol, at most 1 MiB. */
	if (lo < t->n && addr >= t->sym[lo].addr)
		return NULL;
	return addr - s->addr < (1u << 20) ? s : NULL;
}
