/* SPDX-License-Identifier: MIT */
/*
 * What the loader unit tests share about guest RAM: a real gmem whose every
 * byte starts as a poison value, so a test sees what a loader wrote and
 * what it left alone.
 */
#ifndef PERFVISOR_TESTS_GMEM_FAKE_H
#define PERFVISOR_TESTS_GMEM_FAKE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "machine/machine.h"

/* gmem_init of size bytes, each set to poison (a failure fails the test). */
static inline void gmem_poisoned(struct gmem *mem, uint64_t size, uint8_t poison)
{
	struct errbuf e;

	cr_assert_eq(gmem_init(mem, size, &e), 0, "%s", e.msg);
	memset(mem->hva, poison, mem->size);
}

/* Every byte of guest RAM in [from, to) still poison. */
static inline void gmem_assert_untouched(const struct gmem *mem, uint64_t from, uint64_t to, uint8_t poison)
{
	for (uint64_t a = from; a < to; a++)
		cr_assert_eq(mem->hva[a], poison, "guest memory changed at 0x%llx", (unsigned long long)a);
}

#endif
