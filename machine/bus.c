// SPDX-License-Identifier: MIT
/*
 * The bus: PIO, MMIO and MSR ranges mapped to device callbacks. Registration
 * happens during setup; after bus_freeze() the tables are sorted and
 * read-only, so vCPU threads dispatch with a binary search and no lock.
 */
#include "machine/machine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void bus_init(struct bus *b)
{
	memset(b, 0, sizeof(*b));
}

void bus_fini(struct bus *b)
{
	for (int s = 0; s < BUS_NR_SPACES; s++)
		free(b->ranges[s]);
	memset(b, 0, sizeof(*b));
}

const char *bus_space_name(enum bus_space space)
{
	switch (space) {
	case BUS_PIO:
		return "I/O port";
	case BUS_MMIO:
		return "MMIO";
	case BUS_MSR:
		return "MSR";
	default:
		return "?";
	}
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	/* Ends are exclusive; registration guarantees base + len does not wrap. */
	return a < b + blen && b < a + alen;
}

int bus_register(struct bus *b, enum bus_space space, uint64_t base, uint64_t len, bus_fn fn, void *opaque,
		 const char *name, struct errbuf *err)
{
	if ((unsigned)space >= BUS_NR_SPACES || !fn)
		return errbuf_set(err, -EINVAL, "bus: bad registration of %s", name);
	if (b->frozen)
		return errbuf_set(err, -EBUSY, "bus: %s registered after the bus was frozen", name);
	if (len == 0 || base + len < base)
		return errbuf_set(err, -EINVAL, "bus: %s range 0x%" PRIx64 "+0x%" PRIx64 " is empty or wraps",
				  name, base, len);
	for (size_t i = 0; i < b->nr[space]; i++) {
		const struct bus_range *r = &b->ranges[space][i];

		if (ranges_overlap(base, len, r->base, r->len))
			return errbuf_set(err, -EEXIST,
					  "bus: %s %s range 0x%" PRIx64 "-0x%" PRIx64
					  " overlaps %s (0x%" PRIx64 "-0x%" PRIx64 ")",
					  name, bus_space_name(space), base, base + len - 1, r->name, r->base,
					  r->base + r->len - 1);
	}
	if (b->nr[space] == b->cap[space]) {
		size_t cap = b->cap[space] ? b->cap[space] * 2 : 8;
		struct bus_range *n = realloc(b->ranges[space], cap * sizeof(*n));

		if (!n)
			return errbuf_set(err, -ENOMEM, "bus: out of memory");
		b->ranges[space] = n;
		b->cap[space] = cap;
	}
	b->ranges[space][b->nr[space]] =
		(struct bus_range){ base, len, fn, opaque, name, (unsigned)b->nr[space] };
	b->nr[space]++;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct bus_range *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

void bus_freeze(struct bus *b)
{
	for (int s = 0; s < BUS_NR_SPACES; s++)
		if (b->nr[s])
			qsort(b->ranges[s], b->nr[s], sizeof(struct bus_range), range_cmp);
	b->frozen = true;
}

const struct bus_range *bus_find(const struct bus *b, enum bus_space space, uint64_t addr)
{
	size_t lo = 0, hi;

	if ((unsigned)space >= BUS_NR_SPACES)
		return NULL;
	hi = b->nr[space];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct bus_range *r = &b->ranges[space][mid];

		if (addr < r->base)
			hi = mid;
		else if (addr - r->base >= r->len)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

int bus_dispatch(const struct bus *b, enum bus_space space, struct bus_access *a)
{
	const struct bus_range *r = bus_find(b, space, a->addr);

	a->range = r ? (int)r->id : -1;
	if (!r)
		return -ENOENT;
	a->offset = a->addr - r->base;
	return r->fn(r->opaque, a);
}
