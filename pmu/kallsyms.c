// SPDX-License-Identifier: MIT
/*
 * Guest kernel symbols from the kernel image itself: the kallsyms tables
 * Linux links into its vmlinux (CONFIG_KALLSYMS, in .rodata), for kernels
 * whose ELF carries no symbol table and whose distribution ships no
 * System.map (Debian's bzImage). The tables have no symbols of their own in
 * a stripped vmlinux, so they are found by their shape (docs/profiling.md
 * "Symbols of a Linux guest"):
 *
 *   token_table  256 NUL-terminated strings; the characters a symbol name
 *                uses stand for themselves, so "0".."9" are entries 0x30-0x39
 *   token_index  256 u16: each entry's offset in token_table (just after it)
 *   markers      u32 per 256 names: the offset of name 256*j (before
 *                token_table, or before seqs_of_names, 3 bytes per name)
 *   num_syms     u32, then the names: a length (one byte, or two when the
 *                first has bit 7) and that many token indices
 *   offsets      s32 per name, with relative_base (u64): before num_syms
 *                (Linux up to 6.3) or after token_index (6.4 on)
 *
 * Each table is checked against the others before anything is believed; a
 * file that is not a kernel, or a hostile one, gives -ENOENT or -EINVAL,
 * never a read outside it. Pure.
 */
#include "pmu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KS_MAX_TOKEN 64 /* longer than any token Linux's kallsyms makes */
#define KS_MAX_NAME 512 /* KSYM_NAME_LEN */
#define KS_MAX_SYMS (1u << 22)
#define KS_KERNEL_HALF 0xffff800000000000ULL
#define KS_UNSIZED_MAX (1ULL << 20)

struct ks {
	const uint8_t *p;
	size_t len;
	size_t table, index; /* token_table, token_index */
	const uint8_t *tok[256];
	uint8_t toklen[256];
	uint32_t n;		  /* num_syms */
	size_t names, markers, m; /* m markers */
	size_t offsets;
	uint64_t base;
	bool abs_percpu;
};

static size_t align8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* The token table starting at t (8-aligned), with its index just after it: true if both check. */
static bool tokens_from(struct ks *k, size_t t)
{
	size_t q = t;
	uint16_t idx;

	for (unsigned i = 0; i < 256; i++) {
		size_t s = q;

		while (q < k->len && k->p[q] && q - s < KS_MAX_TOKEN)
			q++;
		if (q >= k->len || k->p[q] || q == s)
			return false;
		k->tok[i] = k->p + s;
		k->toklen[i] = (uint8_t)(q - s);
		q++;
	}
	k->table = t;
	k->index = align8(q);
	if (k->index + 512 > k->len)
		return false;
	for (unsigned i = 0, off = 0; i < 256; off += k->toklen[i] + 1u, i++) {
		memcpy(&idx, k->p + k->index + 2 * i, 2);
		if (idx != off)
			return false;
	}
	return true;
}

/*
 * The token table whose entry 0x30 starts at d: back over entries 0x2f .. 1
 * (each non-empty, NUL-terminated, short), then entry 0, whose start is
 * not marked (what precedes the table may not end in a NUL): an 8-aligned
 * start the index confirms.
 */
static bool tokens_at(struct ks *k, size_t d)
{
	size_t pos = d;

	for (int i = 0x2f; i >= 1; i--) {
		size_t end = pos - 1, start = end;

		if (pos < 2 || k->p[end] != 0)
			return false;
		while (start > 0 && k->p[start - 1] != 0 && end - start < KS_MAX_TOKEN)
			start--;
		if (start == end || start == 0 || k->p[start - 1] != 0)
			return false;
		pos = start;
	}
	/* Entry 0 ends at pos - 1. */
	for (size_t t = (pos - 2) & ~(size_t)7; pos >= 2 && t + KS_MAX_TOKEN + 1 >= pos; t -= 8) {
		bool nul = false;

		for (size_t x = t; x < pos - 1 && !nul; x++)
			nul = k->p[x] == 0;
		if (!nul && tokens_from(k, t))
			return true;
		if (t < 8)
			break;
	}
	return false;
}

static bool find_tokens(struct ks *k)
{
	static const uint8_t digits[20] = "0\0"
					  "1\0"
					  "2\0"
					  "3\0"
					  "4\0"
					  "5\0"
					  "6\0"
					  "7\0"
					  "8\0"
					  "9";
	const uint8_t *at = k->p;

	while ((at = memmem(at, k->len - (size_t)(at - k->p), digits, sizeof(digits)))) {
		if (tokens_at(k, (size_t)(at - k->p)))
			return true;
		at++;
	}
	return false;
}

/* Name i's entry at *x: its length in tokens, *x moved past the length. 0: outside the image. */
static unsigned name_len(const struct ks *k, size_t *x, size_t end)
{
	unsigned len;

	if (*x >= end)
		return 0;
	len = k->p[(*x)++];
	if (len & 0x80) {
		if (*x >= end)
			return 0;
		len = (len & 0x7f) | ((unsigned)k->p[(*x)++] << 7);
	}
	return len;
}

/* Walk n names from s: each marker right, ending 8-aligned at the markers. */
static bool names_check(const struct ks *k, size_t s, uint32_t n, size_t markers)
{
	size_t x = s;

	for (uint32_t i = 0; i < n; i++) {
		unsigned len;

		if (i % 256 == 0 && rd32(k->p + markers + 4 * (i / 256)) != x - s)
			return false;
		len = name_len(k, &x, markers);
		if (!len || len > markers - x)
			return false;
		x += len;
	}
	if (align8(x) != markers)
		return false;
	for (; x < markers; x++)
		if (k->p[x])
			return false;
	return true;
}

/* The markers of n names ending (with padding) at end: the first is 0, then they grow. */
static bool markers_at(const struct ks *k, size_t end, uint32_t n, size_t *at)
{
	size_t m = (n + 255) / 256, b = align8(4 * m);

	if (end < b)
		return false;
	*at = end - b;
	if (rd32(k->p + *at))
		return false;
	for (size_t j = 1; j < m; j++)
		if (rd32(k->p + *at + 4 * j) <= rd32(k->p + *at + 4 * (j - 1)))
			return false;
	for (size_t x = *at + 4 * m; x < end; x++)
		if (k->p[x])
			return false;
	return true;
}

/* num_syms, the names and the markers, before the token table (seqs_of_names or not between). */
static bool find_names(struct ks *k)
{
	/* A name takes 2 bytes at least (and seqs_of_names 3 more): n is bounded by what is there. */
	for (int seqs = 0; seqs < 2; seqs++)
		for (uint32_t n = 1; n < KS_MAX_SYMS && n <= k->table / (seqs ? 5 : 2); n++) {
			size_t seq_bytes = seqs ? align8(3 * (size_t)n) : 0, mk, last, lo, hi;

			if (seq_bytes + 8 > k->table)
				break;
			if (!markers_at(k, k->table - seq_bytes, n, &mk))
				continue;
			last = rd32(k->p + mk + 4 * ((n - 1) / 256));
			/* The names start 8-aligned, num_syms 8 bytes before; the last 256 fit before mk. */
			if (last + 16 > mk)
				continue;
			hi = (mk - last) & ~(size_t)7;
			lo = hi > 256 * (KS_MAX_NAME + 2) + 16 ? hi - 256 * (KS_MAX_NAME + 2) : 16;
			for (size_t s = hi; s >= lo; s -= 8) {
				if (rd32(k->p + s - 8) == n && rd32(k->p + s - 4) == 0 &&
				    names_check(k, s, n, mk)) {
					k->n = n;
					k->names = s;
					k->markers = mk;
					k->m = (n + 255) / 256;
					return true;
				}
				if (s < 8 + lo)
					break;
			}
		}
	return false;
}

static uint64_t sym_addr(const struct ks *k, uint32_t i)
{
	int32_t off;

	memcpy(&off, k->p + k->offsets + 4 * (size_t)i, 4);
	if (!k->abs_percpu)
		return k->base + (uint32_t)off;
	return off >= 0 ? (uint64_t)off : k->base - 1 - (uint64_t)(int64_t)off;
}

/* The offsets at o and the base at b: a kernel address, and addresses in order. */
static bool offsets_at(struct ks *k, size_t o, size_t b)
{
	uint32_t neg = 0;
	uint64_t prev = 0;

	if (b + 8 > k->len || o + 4 * (size_t)k->n > b)
		return false;
	k->offsets = o;
	k->base = rd64(k->p + b);
	if (k->base < KS_KERNEL_HALF)
		return false;
	for (uint32_t i = 0; i < k->n; i++)
		neg += (int32_t)rd32(k->p + o + 4 * (size_t)i) < 0;
	/* Linux's --absolute-percpu: the kernel's own symbols are negative, per-CPU ones absolute. */
	k->abs_percpu = neg > k->n / 2;
	for (uint32_t i = 0; i < k->n; i++) {
		uint64_t a = sym_addr(k, i);

		if (a < prev)
			return false;
		prev = a;
	}
	return true;
}

static bool find_offsets(struct ks *k)
{
	size_t ob = align8(4 * (size_t)k->n), o;

	/* Up to Linux 6.3: offsets, relative_base, num_syms, names. */
	if (k->names >= 16 + ob && offsets_at(k, k->names - 16 - ob, k->names - 16))
		return true;
	/* From 6.4: token_index, offsets, relative_base. */
	o = align8(k->index + 512);
	return o + ob + 8 <= k->len && offsets_at(k, o, o + ob);
}

/* Name i (at *x), expanded: its type letter first. 0 or -EINVAL. */
static int expand(const struct ks *k, size_t *x, char *out, size_t *olen)
{
	unsigned len = name_len(k, x, k->markers);
	size_t o = 0;

	for (unsigned j = 0; j < len; j++) {
		uint8_t t = k->p[(*x)++];

		if (o + k->toklen[t] >= KS_MAX_NAME)
			return -EINVAL;
		memcpy(out + o, k->tok[t], k->toklen[t]);
		o += k->toklen[t];
	}
	out[o] = 0;
	*olen = o;
	return 0;
}

static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

int prof_symtab_load_kallsyms(struct prof_symtab *t, const void *image, size_t len, struct errbuf *err)
{
	struct ks *k = calloc(1, sizeof(*k));
	size_t cap = 0, x;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	snprintf(t->source, sizeof(t->source), "none");
	if (!k)
		return errbuf_set(err, -ENOMEM, "out of memory");
	k->p = image;
	k->len = len;
	if (len < 4096 || !find_tokens(k)) {
		free(k);
		return errbuf_set(err, -ENOENT, "no kallsyms token table in the image");
	}
	if (!find_names(k) || !find_offsets(k)) {
		rc = errbuf_set(err, -EINVAL,
				"kallsyms: a token table at 0x%zx but no names, markers or offsets that "
				"agree with it",
				k->table);
		free(k);
		return rc;
	}
	x = k->names;
	for (uint32_t i = 0, next = 0; i < k->n && !rc; i++) {
		char name[KS_MAX_NAME];
		size_t nlen;
		uint64_t a = sym_addr(k, i), size = 0;

		if (expand(k, &x, name, &nlen)) {
			rc = errbuf_set(err, -EINVAL, "kallsyms: name %u expands past %d characters", i,
					KS_MAX_NAME);
			break;
		}
		if (nlen < 2 || !is_text(name[0]))
			continue;
		/* Up to the next symbol at a higher address, of any kind. */
		if (next <= i)
			next = i + 1;
		while (next < k->n && sym_addr(k, next) == a)
			next++;
		if (next < k->n && sym_addr(k, next) - a <= KS_UNSIZED_MAX)
			size = sym_addr(k, next) - a;
		rc = prof_symtab_add(t, &cap, a, size, name + 1, nlen - 1);
		if (rc)
			errbuf_set(err, rc, "out of memory");
	}
	free(k);
	if (rc) {
		prof_symtab_fini(t);
		return rc;
	}
	prof_symtab_sort(t);
	snprintf(t->source, sizeof(t->source), "kallsyms");
	return 0;
}
