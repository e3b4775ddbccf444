// SPDX-License-Identifier: MIT
/*
 * Guest symbols for the profiler: the function symbols of an ELF's .symtab
 * (ELF32 or ELF64, read by the ELF reader, elf/elf.h), or of nm /
 * System.map text. Sorted by address for a binary search.
 */
#include "pmu.h"

#include "elf/elf.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int prof_symtab_add(struct prof_symtab *t, size_t *cap, uint64_t addr, uint64_t size, const char *name,
		    size_t len)
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

void prof_symtab_sort(struct prof_symtab *t)
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
	t->anchor = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->sym[i].name, PROF_SLIDE_ANCHOR))
			t->anchor = t->sym[i].addr;
}

int prof_symtab_set_slide(struct prof_symtab *t, uint64_t lstar)
{
	uint64_t slide = lstar - t->anchor;

	if (!t->anchor || !lstar)
		return -ENOENT;
	/* The kernel moves by whole 2 MiB pages (CONFIG_PHYSICAL_ALIGN), within the 1 GiB window. */
	if (slide % PROF_SLIDE_ALIGN || (slide + (1ULL << 30)) > (2ULL << 30))
		return -EINVAL;
	__atomic_store_n(&t->slide, slide, __ATOMIC_RELAXED);
	__atomic_store_n(&t->slide_known, true, __ATOMIC_RELEASE);
	return 0;
}

void prof_symtab_fini(struct prof_symtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->sym[i].name);
	free(t->sym);
	t->sym = NULL;
	t->n = 0;
}

/* A symbol a profile names a frame by: a function or a label, defined, with a name. */
static bool is_code_symbol(const Elf64_Sym *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_NOTYPE) && s->st_shndx != SHN_UNDEF &&
	       s->st_shndx < SHN_LORESERVE;
}

int prof_symtab_load_elf(struct prof_symtab *t, const void *image, size_t len, struct errbuf *err)
{
	struct elf_file f;
	struct elf_symtab st;
	struct elf_strtab str;
	size_t cap = 0;
	int shndx;

	memset(t, 0, sizeof(*t));
	snprintf(t->source, sizeof(t->source), "none");
	/* The reader's message names what is wrong with the file; a malformed ELF is -EINVAL here. */
	if (elf_open(&f, image, len, err) || elf_check_shdrs(&f, err))
		return -EINVAL;
	shndx = elf_find_section(&f, SHT_SYMTAB);
	if (shndx < 0)
		return 0;
	if (elf_symtab_open(&f, (unsigned)shndx, &st, NULL))
		return errbuf_set(err, -EINVAL, "ELF: malformed .symtab");
	if (elf_strtab_open(&f, st.link, &str, NULL))
		return errbuf_set(err, -EINVAL, "ELF: string table outside the file");
	for (uint64_t i = 1; i < st.nsyms; i++) {
		Elf64_Sym s;
		const char *name;
		size_t nlen;
		int rc;

		elf_sym(&st, i, &s);
		/* A name outside its table is skipped, as an unnamed symbol is. */
		if (!is_code_symbol(&s) || elf_str(&str, s.st_name, &name, &nlen, NULL) || !nlen)
			continue;
		rc = prof_symtab_add(t, &cap, s.st_value, s.st_size, name, nlen);
		if (rc) {
			prof_symtab_fini(t);
			return errbuf_set(err, rc, "out of memory");
		}
	}
	prof_symtab_sort(t);
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
					rc = prof_symtab_add(t, &cap, addr, 0, name, nlen);
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
	prof_symtab_sort(t);
	snprintf(t->source, sizeof(t->source), "System.map");
	return 0;
}

const struct prof_sym *prof_symtab_find(const struct prof_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	/* A guest address back to the address the symbols were linked at (KASLR). */
	addr -= __atomic_load_n(&t->slide, __ATOMIC_RELAXED);
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
