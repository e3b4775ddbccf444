// SPDX-License-Identifier: MIT
/*
 * Unit tests for the fw_cfg device: every item a guest can read (signature,
 * id, RAM size, CPU count, the empty file directory), unknown keys and reads
 * past an item's end as zeros, and a new selection rewinding the item.
 */
#include "devices/devices.h"

#include <criterion/criterion.h>
#include <string.h>

static struct fwcfg f;

static void read_item(uint16_t key, uint8_t *buf, size_t len)
{
	fwcfg_select(&f, key);
	for (size_t i = 0; i < len; i++)
		buf[i] = fwcfg_read(&f);
}

static uint64_t read_le(uint16_t key, size_t len)
{
	uint8_t b[8];
	uint64_t v = 0;

	read_item(key, b, len);
	for (size_t i = 0; i < len; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static void setup(void)
{
	fwcfg_init(&f, 8, 0x40000000ULL);
}

TestSuite(fwcfg, .init = setup);

Test(fwcfg, signature_and_id)
{
	uint8_t b[5];

	read_item(FWCFG_SIGNATURE, b, 5);
	cr_assert_eq(memcmp(b, "QEMU", 4), 0);
	cr_assert_eq(b[4], 0, "past the end reads zero");
	cr_assert_eq(read_le(FWCFG_ID, 4), FWCFG_ID_TRADITIONAL, "no DMA interface");
}

Test(fwcfg, ram_size_and_cpus)
{
	cr_assert_eq(read_le(FWCFG_RAM_SIZE, 8), 0x40000000ULL);
	cr_assert_eq(read_le(FWCFG_NB_CPUS, 2), 8);
	cr_assert_eq(read_le(FWCFG_MAX_CPUS, 2), 8);
	fwcfg_init(&f, 300, 0x123456789abULL);
	cr_assert_eq(read_le(FWCFG_NB_CPUS, 2), 300, "both bytes of the count");
	cr_assert_eq(read_le(FWCFG_RAM_SIZE, 8), 0x123456789abULL);
}

Test(fwcfg, empty_file_directory)
{
	cr_assert_eq(read_le(FWCFG_FILE_DIR, 4), 0);
	cr_assert_eq(read_le(FWCFG_FILE_DIR, 8), 0, "no entries after the count");
}

Test(fwcfg, unknown_keys_read_zeros)
{
	uint16_t keys[] = { 0x0002, 0x0004, 0x0018, 0x0020, 0x4000, 0x8000, 0xffff };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert_eq(read_le(keys[i], 8), 0, "key 0x%x", keys[i]);
}

Test(fwcfg, reselect_rewinds)
{
	fwcfg_select(&f, FWCFG_SIGNATURE);
	cr_assert_eq(fwcfg_read(&f), 'Q');
	cr_assert_eq(fwcfg_read(&f), 'E');
	fwcfg_select(&f, FWCFG_SIGNATURE);
	cr_assert_eq(fwcfg_read(&f), 'Q');
	cr_assert_eq(f.offset, 1);
}

Test(fwcfg, long_reads_saturate)
{
	fwcfg_select(&f, FWCFG_SIGNATURE);
	f.offset = UINT32_MAX - 1;
	cr_assert_eq(fwcfg_read(&f), 0);
	cr_assert_eq(fwcfg_read(&f), 0);
	cr_assert_eq(f.offset, UINT32_MAX, "the offset does not wrap back into the item");
	cr_assert_eq(fwcfg_read(&f), 0);
}
