// SPDX-License-Identifier: MIT
/*
 * Unit tests of the kallsyms reader (pmu/kallsyms.c) and the KASLR slide
 * (pmu/symbols.c): images this test lays out as Linux's scripts/kallsyms
 * does, in both orders (up to 6.3, with seqs_of_names between the markers
 * and the tokens, and per-CPU symbols absolute; from 6.4, offsets after the
 * token index, all relative to the base); then damaged copies, which must be refused
 * without a read outside the image (the ASan build checks that).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmu/pmu.h"

#define BASE 0xffffffff81000000ULL
#define NSYMS 600 /* three markers */

struct img {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct img *m, const void *d, size_t n)
{
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2;
		m->p = realloc(m->p, m->cap);
		cr_assert_not_null(m->p);
	}
	memcpy(m->p + m->len, d, n);
	m->len += n;
}

static void pad8(struct img *m)
{
	static const uint8_t z[8];

	put(m, z, (8 - m->len % 8) % 8);
}

static void put32(struct img *m, uint32_t v)
{
	put(m, &v, 4);
}

/*
 * Symbol i: its name (type letter first) and address. abs: per-CPU data at
 * small absolute addresses (--absolute-percpu), else at the base.
 */
static void sym(bool abs, unsigned i, char *name, size_t n, uint64_t *addr)
{
	if (i < 4) {
		snprintf(name, n, "Dpcpu_var%u", i);
		*addr = abs ? 0x1000 * i : BASE;
	} else if (i == 300) {
		snprintf(name, n, "Tentry_SYSCALL_64");
		*addr = BASE + 0x10 * i;
	} else if (i == 500) {
		snprintf(name, n, "dsome_data");
		*addr = BASE + 0x10 * i;
	} else {
		snprintf(name, n, "%cfunc_%u", i % 3 ? 'T' : 't', i);
		*addr = BASE + 0x10 * i;
	}
}

static void tokens(struct img *m)
{
	uint16_t idx[256], off = 0;

	pad8(m);
	for (unsigned i = 0; i < 256; i++) {
		char t[4];

		if (i > 0x20 && i < 0x7f)
			snprintf(t, sizeof(t), "%c", i);
		else /* a code no name uses: some pair */
			snprintf(t, sizeof(t), "%c%c", 'a' + i % 26, 'a' + i / 26);
		idx[i] = off;
		off += (uint16_t)strlen(t) + 1;
		put(m, t, strlen(t) + 1);
	}
	pad8(m);
	put(m, idx, sizeof(idx));
}

static void names(struct img *m, bool abs)
{
	uint32_t markers[(NSYMS + 255) / 256];
	size_t start;

	put32(m, NSYMS);
	pad8(m);
	start = m->len;
	for (unsigned i = 0; i < NSYMS; i++) {
		char name[64];
		uint64_t a;
		uint8_t len;

		sym(abs, i, name, sizeof(name), &a);
		if (i % 256 == 0)
			markers[i / 256] = (uint32_t)(m->len - start);
		len = (uint8_t)strlen(name);
		put(m, &len, 1);
		put(m, name, len); /* every character stands for itself */
	}
	pad8(m);
	put(m, markers, sizeof(markers));
	pad8(m);
}

static void offsets(struct img *m, bool abs_percpu)
{
	uint64_t base = BASE;

	pad8(m);
	for (unsigned i = 0; i < NSYMS; i++) {
		char name[64];
		uint64_t a;

		sym(abs_percpu, i, name, sizeof(name), &a);
		if (!abs_percpu)
			put32(m, (uint32_t)(a - BASE));
		else
			put32(m, a < BASE ? (uint32_t)a : (uint32_t)(int32_t) - (int64_t)(a - BASE + 1));
	}
	pad8(m);
	put(m, &base, 8);
}

/* Junk first (a kernel's .text), then the tables in the order of old (<= 6.3) or new kernels. */
static struct img image(bool old)
{
	struct img m = { 0 };
	uint8_t junk[8192];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	put(&m, junk, sizeof(junk));
	if (old) {
		offsets(&m, true);
		names(&m, true);
		for (unsigned i = 0; i < NSYMS; i++) /* seqs_of_names: 3 bytes each */
			put(&m, (uint8_t[3]){ 0, (uint8_t)(i >> 8), (uint8_t)i }, 3);
		tokens(&m);
	} else {
		names(&m, false);
		tokens(&m);
		offsets(&m, false);
	}
	put(&m, junk, 100);
	return m;
}

/* The image of one layout read, and the table it gives checked. */
static void check_layout(bool old)
{
	struct img m = image(old);
	struct prof_symtab table;
	const struct prof_symtab *t = &table;
	struct errbuf err;
	const struct prof_sym *s;

	cr_assert_eq(prof_symtab_load_kallsyms(&table, m.p, m.len, &err), 0, "%s", err.msg);
	cr_assert_str_eq(t->source, "kallsyms");
	/* 600 names: 4 per-CPU, 1 data, the rest text. */
	cr_assert_eq(t->n, NSYMS - 5, "%zu symbols", t->n);
	s = prof_symtab_find(t, BASE + 0x10 * 10 + 3);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, "func_10");
	cr_assert_eq(s->size, 0x10, "sized up to the next symbol");
	cr_assert_str_eq(prof_symtab_find(t, BASE + 0x10 * 300)->name, "entry_SYSCALL_64");
	cr_assert_eq(t->anchor, BASE + 0x10 * 300);
	/* The data symbol ends the text symbol before it; it is not named itself. */
	cr_assert_eq(prof_symtab_find(t, BASE + 0x10 * 499)->size, 0x10);
	cr_assert_null(prof_symtab_find(t, BASE + 0x10 * 500));
	cr_assert_null(prof_symtab_find(t, 0x1000), "per-CPU data is not code");
	prof_symtab_fini(&table);
	free(m.p);
}

Test(kallsyms, layout_up_to_6_3)
{
	check_layout(true);
}

Test(kallsyms, layout_from_6_4)
{
	check_layout(false);
}

Test(kallsyms, slide)
{
	struct img m = image(true);
	struct prof_symtab t;
	struct errbuf err;
	uint64_t a;

	cr_assert_eq(prof_symtab_load_kallsyms(&t, m.p, m.len, &err), 0, "%s", err.msg);
	a = t.anchor;
	cr_assert_eq(prof_symtab_set_slide(&t, 0), -ENOENT, "LSTAR not set yet");
	cr_assert_eq(prof_symtab_set_slide(&t, a + 0x1234), -EINVAL, "not a 2 MiB step");
	cr_assert_eq(prof_symtab_set_slide(&t, a + (2ULL << 30)), -EINVAL, "past KASLR's window");
	cr_assert_not(t.slide_known);
	cr_assert_str_eq(prof_symtab_find(&t, BASE + 0x10 * 10)->name, "func_10");
	cr_assert_eq(prof_symtab_set_slide(&t, a + (490ULL << 20)), 0);
	cr_assert(t.slide_known);
	cr_assert_str_eq(prof_symtab_find(&t, BASE + (490ULL << 20) + 0x10 * 10)->name, "func_10");
	cr_assert_str_eq(prof_symtab_find(&t, a + (490ULL << 20))->name, "entry_SYSCALL_64");
	cr_assert_eq(prof_symtab_set_slide(&t, a - (16ULL << 20)), 0, "below the link address too");
	cr_assert_str_eq(prof_symtab_find(&t, BASE - (16ULL << 20) + 0x10 * 7)->name, "func_7");
	prof_symtab_fini(&t);
	/* A table without the anchor has no slide to learn. */
	cr_assert_eq(prof_symtab_load_text(&t, "1000 T f\n", 9, &err), 0);
	cr_assert_eq(prof_symtab_set_slide(&t, 0xffffffff81000000ULL), -ENOENT);
	prof_symtab_fini(&t);
	free(m.p);
}

Test(kallsyms, damaged)
{
	struct img m = image(true);
	struct prof_symtab t;
	struct errbuf err;
	uint8_t *c = malloc(m.len);
	size_t tok;
	const uint8_t digits[] = "0\0"
				 "1\0"
				 "2";

	cr_assert_not_null(c);
	/* Not a kernel: no token table. */
	memset(c, 0x41, m.len);
	cr_assert_eq(prof_symtab_load_kallsyms(&t, c, m.len, &err), -ENOENT);
	cr_assert_eq(t.n, 0);
	/* Every cut of the image: refused or read, never past its end (ASan). */
	for (size_t n = 0; n < m.len; n += 61) {
		memcpy(c, m.p, n);
		if (prof_symtab_load_kallsyms(&t, c, n, &err) == 0)
			prof_symtab_fini(&t);
	}
	/* A name count that does not match the markers. */
	tok = (size_t)((uint8_t *)memmem(m.p, m.len, digits, sizeof(digits)) - m.p);
	memcpy(c, m.p, m.len);
	for (size_t x = 0; x + 4 <= tok; x += 8)
		if (!memcmp(c + x, &(uint32_t){ NSYMS }, 4) && !memcmp(c + x + 4, &(uint32_t){ 0 }, 4))
			c[x] ^= 1;
	cr_assert_eq(prof_symtab_load_kallsyms(&t, c, m.len, &err), -EINVAL);
	cr_assert(strstr(err.msg, "kallsyms: a token table"), "%s", err.msg);
	/* A token index that does not match its table. */
	memcpy(c, m.p, m.len);
	c[tok + 1] = 'x';
	cr_assert_lt(prof_symtab_load_kallsyms(&t, c, m.len, &err), 0);
	/* Every byte flipped in turn: no crash, no read outside. */
	for (size_t x = 0; x < m.len; x += 13) {
		memcpy(c, m.p, m.len);
		c[x] ^= 0x80;
		if (prof_symtab_load_kallsyms(&t, c, m.len, &err) == 0)
			prof_symtab_fini(&t);
	}
	free(c);
	free(m.p);
}
