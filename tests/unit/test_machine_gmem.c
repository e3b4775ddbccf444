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

/* gmem_write and gmem_zero, through the memfd and (fd -1) through the mapping: the same bytes. */
static void write_and_zero(void)
{
	static uint8_t src[3 * 4096 + 100];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i % 251 + 1);
	memset(mem.hva + 0x10000, 0x5a, 0x10000);
	gmem_write(&mem, 0x10123, src, sizeof(src));
	cr_assert_arr_eq(mem.hva + 0x10123, src, sizeof(src), "written as given");
	cr_assert_eq(mem.hva[0x10122], 0x5a, "not before");
	cr_assert_eq(mem.hva[0x10123 + sizeof(src)], 0x5a, "not after");
	/* Zeros from inside one page, over two whole pages, into a third. */
	gmem_zero(&mem, 0x11010, 0x2100);
	for (uint64_t a = 0x11010; a < 0x13110; a++)
		cr_assert_eq(mem.hva[a], 0, "0x%llx not zeroed", (unsigned long long)a);
	cr_assert_eq(mem.hva[0x1100f], src[0x1100f - 0x10123], "the bytes before the range stay");
	cr_assert_eq(mem.hva[0x13110], src[0x13110 - 0x10123], "the bytes after the range stay");
	gmem_zero(&mem, 0x18000, 0);  /* nothing */
	gmem_zero(&mem, 0x18001, 10); /* within one page */
	cr_assert_eq(mem.hva[0x18000], 0x5a);
	cr_assert_eq(mem.hva[0x18001], 0);
	cr_assert_eq(mem.hva[0x1800a], 0);
	cr_assert_eq(mem.hva[0x1800b], 0x5a);
}

Test(gmem, write_and_zero_through_the_memfd)
{
	write_and_zero();
}

Test(gmem, write_and_zero_through_the_mapping)
{
	int fd = mem.fd;

	mem.fd = -1; /* as RAM mapped from a snapshot's file */
	write_and_zero();
	mem.fd = fd;
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
