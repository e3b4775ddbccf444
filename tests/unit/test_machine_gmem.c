// SPDX-License-Identifier: MIT
/*
 * Unit tests for guest memory: the size rules, zeroed memfd-backed RAM, and
 * gmem_hva's bounds check, including ranges whose end overflows 64 bits.
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define assert_msg_has(e, s) cr_assert(strstr((e).msg, (s)), "message '%s' lacks '%s'", (e).msg, (s))

/* ---- gmem_check_size ---------------------------------------------------- */

Test(gmem_check_size, accepts_the_range)
{
	struct errbuf err = { "untouched" };

	cr_assert_eq(gmem_check_size(GMEM_MIN_SIZE, &err), 0);
	cr_assert_eq(gmem_check_size(64ULL << 20, &err), 0);
	cr_assert_eq(gmem_check_size(GMEM_MAX_SIZE, &err), 0);
	cr_assert_eq(gmem_check_size(GMEM_MIN_SIZE + 4096, &err), 0);
	cr_assert_str_eq(err.msg, "untouched", "no message on success");
}

Test(gmem_check_size, below_minimum)
{
	struct errbuf err;

	cr_assert_eq(gmem_check_size(GMEM_MIN_SIZE - 4096, &err), -ERANGE);
	assert_msg_has(err, "below the minimum of 4 MiB");
	cr_assert_eq(gmem_check_size(0, &err), -ERANGE);
	cr_assert_eq(gmem_check_size(1, &err), -ERANGE);
}

Test(gmem_check_size, above_maximum)
{
	struct errbuf err;

	cr_assert_eq(gmem_check_size(GMEM_MAX_SIZE + 4096, &err), -ERANGE);
	assert_msg_has(err, "above the maximum of 3072 MiB");
	cr_assert_eq(gmem_check_size(4ULL << 30, &err), -ERANGE);
	cr_assert_eq(gmem_check_size(UINT64_MAX, &err), -ERANGE);
}

Test(gmem_check_size, not_page_aligned)
{
	struct errbuf err;

	cr_assert_eq(gmem_check_size(GMEM_MIN_SIZE + 1, &err), -EINVAL);
	assert_msg_has(err, "not a multiple of 4 KiB");
	cr_assert_eq(gmem_check_size((64ULL << 20) + 512, &err), -EINVAL);
	cr_assert_eq(gmem_check_size(GMEM_MAX_SIZE - 2048, &err), -EINVAL);
}

Test(gmem_check_size, null_errbuf)
{
	cr_assert_eq(gmem_check_size(1, NULL), -ERANGE);
}

/* ---- gmem_init / gmem_fini ---------------------------------------------- */

static struct gmem mem;

static void setup(void)
{
	struct errbuf err;

	cr_assert_eq(gmem_init(&mem, 8ULL << 20, &err), 0, "%s", err.msg);
}

static void teardown(void)
{
	gmem_fini(&mem);
}

TestSuite(gmem, .init = setup, .fini = teardown);

Test(gmem, init_gives_zeroed_memory)
{
	static const uint8_t zero[4096];

	cr_assert_eq(mem.size, 8ULL << 20);
	cr_assert_geq(mem.fd, 0);
	cr_assert_not_null(mem.hva);
	for (uint64_t off = 0; off < mem.size; off += sizeof(zero))
		cr_assert_arr_eq(mem.hva + off, zero, sizeof(zero), "nonzero byte in page at 0x%llx",
				 (unsigned long long)off);
}

Test(gmem, backed_by_the_memfd)
{
	uint8_t back[4] = { 0 };

	memcpy(mem.hva + 0x123000, "abcd", 4);
	cr_assert_eq(pread(mem.fd, back, 4, 0x123000), 4);
	cr_assert_arr_eq(back, "abcd", 4, "the mapping is shared with the fd");
	cr_assert_eq(lseek(mem.fd, 0, SEEK_END), (off_t)mem.size);
}

Test(gmem, fini_resets_and_is_idempotent)
{
	gmem_fini(&mem);
	cr_assert_null(mem.hva);
	cr_assert_eq(mem.fd, -1);
	cr_assert_eq(mem.size, 0);
	gmem_fini(&mem);
	cr_assert_null(gmem_hva(&mem, 0, 1), "no RAM after fini");
}

Test(gmem_init, bad_size_leaves_empty_state)
{
	struct gmem m;
	struct errbuf err;

	memset(&m, 0x55, sizeof(m));
	cr_assert_eq(gmem_init(&m, 1ULL << 20, &err), -ERANGE);
	assert_msg_has(err, "below the minimum");
	cr_assert_eq(m.fd, -1);
	cr_assert_null(m.hva);
	cr_assert_eq(m.size, 0);
	gmem_fini(&m); /* safe after a failed init */
	cr_assert_eq(gmem_init(&m, GMEM_MIN_SIZE + 1, &err), -EINVAL);
	cr_assert_eq(m.fd, -1);
}

/* ---- gmem_hva ----------------------------------------------------------- */

Test(gmem, hva_inside)
{
	cr_assert_eq(gmem_hva(&mem, 0, 1), mem.hva);
	cr_assert_eq(gmem_hva(&mem, 0x1000, 0x1000), mem.hva + 0x1000);
	cr_assert_eq(gmem_hva(&mem, 0, mem.size), mem.hva, "the whole of RAM");
	cr_assert_eq(gmem_hva(&mem, mem.size - 1, 1), mem.hva + mem.size - 1, "the last byte");
	cr_assert_eq(gmem_hva(&mem, mem.size - 8, 8), mem.hva + mem.size - 8);
	cr_assert_eq(gmem_hva(&mem, 0x5000, 0), mem.hva + 0x5000, "empty range inside");
}

Test(gmem, hva_past_the_end)
{
	cr_assert_null(gmem_hva(&mem, mem.size - 1, 2), "straddles the end");
	cr_assert_null(gmem_hva(&mem, 0, mem.size + 1));
	cr_assert_null(gmem_hva(&mem, mem.size, 1), "gpa == size, one byte");
	cr_assert_eq(gmem_hva(&mem, mem.size, 0), mem.hva + mem.size,
		     "gpa == size, empty range: end pointer, never dereferenced");
	cr_assert_null(gmem_hva(&mem, mem.size + 1, 0), "gpa past the end even when empty");
	cr_assert_null(gmem_hva(&mem, 4ULL << 30, 4));
}

Test(gmem, hva_overflow)
{
	/* gpa + len would wrap to a small number if computed naively. */
	cr_assert_null(gmem_hva(&mem, UINT64_MAX, 1));
	cr_assert_null(gmem_hva(&mem, UINT64_MAX - 3, 8));
	cr_assert_null(gmem_hva(&mem, UINT64_MAX, 0));
	cr_assert_null(gmem_hva(&mem, 0x1000, UINT64_MAX));
	cr_assert_null(gmem_hva(&mem, 0x1000, UINT64_MAX - 0xfff), "0x1000 + len == 0");
	cr_assert_null(gmem_hva(&mem, 1, UINT64_MAX));
	cr_assert_null(gmem_hva(&mem, 0, UINT64_MAX));
	cr_assert_null(gmem_hva(&mem, UINT64_MAX, UINT64_MAX));
}
