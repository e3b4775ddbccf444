// SPDX-License-Identifier: MIT
/*
 * Unit tests for the CMOS RTC (devices/rtc.c) on a fake wall clock: the
 * time in BCD and binary, 24 and 12 hours, SET freezing and the guest
 * setting the time, UIP, the registers a guest cannot change, the RAM, odd
 * values, and the snapshot state (the time continues from the host clock).
 */
#include "devices/devices.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#define NS 1000000000LL
/* Saturday 2026-12-05 05:31:30 UTC */
#define T0 1796448690LL

static int64_t now_ns;

static int64_t fake_clock(void *opaque)
{
	(void)opaque;
	return now_ns;
}

static struct rtc *r;

static void setup(void)
{
	now_ns = T0 * NS + NS / 2;
	cr_assert_eq(rtc_create(&r, NULL), 0);
	rtc_set_clock(r, fake_clock, NULL);
}

static void teardown(void)
{
	rtc_destroy(r);
	r = NULL;
}

TestSuite(rtc, .init = setup, .fini = teardown);

static uint8_t get(uint8_t reg)
{
	rtc_write(r, RTC_INDEX_PORT, reg);
	return rtc_read(r, RTC_DATA_PORT);
}

static void set(uint8_t reg, uint8_t v)
{
	rtc_write(r, RTC_INDEX_PORT, reg);
	rtc_write(r, RTC_DATA_PORT, v);
}

Test(rtc, host_time_in_bcd_24h)
{
	cr_assert_eq(get(0x0b), 0x02, "24 hours, BCD, no interrupts");
	cr_assert_eq(get(0x00), 0x30);
	cr_assert_eq(get(0x02), 0x31);
	cr_assert_eq(get(0x04), 0x05);
	cr_assert_eq(get(0x06), 7, "Saturday");
	cr_assert_eq(get(0x07), 0x05);
	cr_assert_eq(get(0x08), 0x12);
	cr_assert_eq(get(0x09), 0x26);
	cr_assert_eq(get(0x32), 0x20, "century");
	now_ns += 95 * NS;
	cr_assert_eq(get(0x00), 0x05);
	cr_assert_eq(get(0x02), 0x33, "the clock runs with the host's");
}

Test(rtc, binary_and_12_hours)
{
	set(0x0b, 0x04); /* binary, 12 hours */
	cr_assert_eq(get(0x00), 30);
	cr_assert_eq(get(0x04), 5, "5 AM");
	cr_assert_eq(get(0x09), 26);
	now_ns += 12 * 3600 * NS;
	cr_assert_eq(get(0x04), 0x80 | 5, "5 PM");
	set(0x0b, 0x00);	 /* BCD, 12 hours */
	now_ns += 7 * 3600 * NS; /* 00:31 on Sunday */
	cr_assert_eq(get(0x04), 0x12, "12 AM");
	cr_assert_eq(get(0x06), 1, "Sunday");
	cr_assert_eq(get(0x07), 0x06);
}

Test(rtc, set_freezes_and_the_guest_sets_the_time)
{
	set(0x0b, 0x82);
	now_ns += 10 * NS;
	cr_assert_eq(get(0x00), 0x30, "stopped");
	set(0x09, 0x30); /* 2030 */
	set(0x08, 0x01);
	set(0x07, 0x02);
	set(0x04, 0x23);
	set(0x02, 0x59);
	set(0x00, 0x58);
	now_ns += 10 * NS;
	cr_assert_eq(get(0x09), 0x30, "what the guest wrote, while SET");
	set(0x0b, 0x02);
	cr_assert_eq(get(0x00), 0x58);
	now_ns += 3 * NS; /* 2030-01-03 00:00:01 */
	cr_assert_eq(get(0x00), 0x01);
	cr_assert_eq(get(0x02), 0x00);
	cr_assert_eq(get(0x04), 0x00);
	cr_assert_eq(get(0x07), 0x03);
	cr_assert_eq(get(0x08), 0x01);
	cr_assert_eq(get(0x09), 0x30);
	cr_assert_eq(get(0x32), 0x20);
}

Test(rtc, a_write_while_running_moves_the_clock)
{
	set(0x09, 0x27); /* 2027: one year (365 days) on */
	cr_assert_eq(get(0x09), 0x27);
	cr_assert_eq(get(0x00), 0x30);
	now_ns += NS;
	cr_assert_eq(get(0x00), 0x31, "and it keeps running");
	cr_assert_eq(get(0x08), 0x12);
}

Test(rtc, uip_in_the_last_244_us)
{
	cr_assert_eq(get(0x0a), 0x26, "divider and rate, no UIP");
	now_ns = T0 * NS + NS - 100000;
	cr_assert_eq(get(0x0a), 0xa6, "UIP just before the second changes");
	now_ns = T0 * NS + NS - 300000;
	cr_assert_eq(get(0x0a), 0x26);
	set(0x0a, 0xff);
	cr_assert_eq(get(0x0a), 0x7f, "UIP is read-only; the rest is the guest's");
	now_ns = T0 * NS + NS - 1000;
	set(0x0b, 0x82);
	cr_assert_eq(get(0x0a) & 0x80, 0, "no updates while SET");
}

Test(rtc, registers_the_guest_cannot_change)
{
	set(0x0b, 0x7e); /* PIE, AIE, UIE, SQWE, binary, 24h, DSE */
	cr_assert_eq(get(0x0b), 0x0e, "no interrupt enables: there is no IRQ 8");
	set(0x0c, 0xff);
	cr_assert_eq(get(0x0c), 0, "no interrupt flags");
	set(0x0d, 0x00);
	cr_assert_eq(get(0x0d), 0x80, "VRT: the battery is good");
}

Test(rtc, ram_alarms_and_index)
{
	set(0x40, 0xab);
	set(0x7f, 0x12);
	set(0x01, 0x45); /* alarm seconds: plain storage */
	cr_assert_eq(get(0x40), 0xab);
	cr_assert_eq(get(0x7f), 0x12);
	cr_assert_eq(get(0x01), 0x45);
	cr_assert_eq(get(0xc0), 0xab, "bit 7 of the index masks NMIs, it is not part of the index");
	cr_assert_eq(rtc_read(r, RTC_INDEX_PORT), 0xc0, "the index reads back");
	cr_assert_eq(get(0x0e), 0, "RAM starts zero");
}

Test(rtc, odd_values_are_clamped_never_trusted)
{
	set(0x0b, 0x82);
	for (uint8_t reg = 0; reg <= 9; reg++)
		set(reg, 0xff);
	set(0x32, 0xff);
	set(0x0b, 0x02);
	for (uint8_t reg = 0; reg <= 9; reg++)
		(void)get(reg); /* any value, no crash, no sanitizer report */
	set(0x0b, 0x86);
	set(0x32, 0);
	set(0x09, 0);
	set(0x08, 0);
	set(0x07, 0);
	set(0x0b, 0x06);
	cr_assert_eq(get(0x08), 1, "month 0 reads as January");
	cr_assert_eq(get(0x07), 1);
	cr_assert_eq(get(0x09), 0);
	cr_assert_eq(get(0x32), 0, "year 0");
}

Test(rtc, the_largest_year_is_9999_and_its_state_restores)
{
	struct rtc_state st;

	set(0x0b, 0x86); /* binary: century 255, year 255 would be 25755 */
	set(0x32, 0xff);
	set(0x09, 0xff);
	set(0x0b, 0x06);
	cr_assert_eq(get(0x32), 99);
	cr_assert_eq(get(0x09), 99);
	rtc_save(r, &st);
	cr_assert(rtc_state_valid(&st), "every offset a guest can set is one a snapshot takes back");
	cr_assert_eq(rtc_restore(r, &st), 0);
	set(0x0b, 0x86);
	set(0x32, 0);
	set(0x09, 0);
	set(0x08, 1);
	set(0x07, 1);
	set(0x0b, 0x06);
	rtc_save(r, &st);
	cr_assert(rtc_state_valid(&st), "nor the smallest (year 0)");
}

Test(rtc, snapshot_continues_from_the_host_clock)
{
	struct rtc_state st;
	struct rtc *r2;

	set(0x09, 0x30); /* guest time: 4 years (1461 days) ahead */
	set(0x50, 0x77);
	rtc_write(r, RTC_INDEX_PORT, 0x8d);
	rtc_save(r, &st);
	cr_assert_eq((int64_t)st.offset, 1461LL * 86400);
	cr_assert_eq(st.cmos_len, RTC_CMOS_SIZE);
	cr_assert(rtc_state_valid(&st));
	cr_assert_null(dev_rtc.state->check(NULL, &st, &(const char *){ NULL }));

	cr_assert_eq(rtc_create(&r2, NULL), 0);
	rtc_set_clock(r2, fake_clock, NULL);
	now_ns += 3600 * NS; /* restored an hour later */
	cr_assert_eq(rtc_restore(r2, &st), 0);
	cr_assert_eq(rtc_read(r2, RTC_DATA_PORT), 0x80, "index 0x0d restored");
	rtc_write(r2, RTC_INDEX_PORT, 0x09);
	cr_assert_eq(rtc_read(r2, RTC_DATA_PORT), 0x30);
	rtc_write(r2, RTC_INDEX_PORT, 0x04);
	cr_assert_eq(rtc_read(r2, RTC_DATA_PORT), 0x06, "the hour went on with the host clock");
	rtc_write(r2, RTC_INDEX_PORT, 0x50);
	cr_assert_eq(rtc_read(r2, RTC_DATA_PORT), 0x77);
	rtc_destroy(r2);
}

Test(rtc, snapshot_of_a_stopped_clock)
{
	struct rtc_state st;

	set(0x0b, 0x82);
	set(0x00, 0x12);
	rtc_save(r, &st);
	now_ns += 100 * NS;
	set(0x0b, 0x02);
	cr_assert_eq(rtc_restore(r, &st), 0);
	cr_assert_eq(get(0x00), 0x12, "still stopped at what the guest wrote");
	set(0x0b, 0x02);
	now_ns += 2 * NS;
	cr_assert_eq(get(0x00), 0x14);
}

Test(rtc, bad_states_are_refused)
{
	struct rtc_state st, good;
	const char *prop = NULL;

	rtc_save(r, &good);
	st = good;
	st.cmos_len = 12;
	cr_assert_not(rtc_state_valid(&st));
	cr_assert_eq(rtc_restore(r, &st), -EINVAL);
	cr_assert_not_null(dev_rtc.state->check(NULL, &st, &prop));
	cr_assert_str_eq(prop, "cmos");
	st = good;
	st.offset = (uint64_t)(20000LL * 366 * 86400);
	cr_assert_eq(rtc_restore(r, &st), -EINVAL);
	st.offset = (uint64_t) - (int64_t)st.offset;
	cr_assert_eq(rtc_restore(r, &st), -EINVAL);
	cr_assert_eq(get(0x09), 0x26, "nothing changed");
	/* Bits no guest write leaves are cleared on load. */
	st = good;
	st.cmos[0x0a] = 0xff;
	st.cmos[0x0b] = 0xff & ~0x80;
	st.cmos[0x0c] = 0xff;
	st.cmos[0x0d] = 0;
	cr_assert_eq(rtc_restore(r, &st), 0);
	cr_assert_eq(get(0x0a) & 0x80, 0);
	cr_assert_eq(get(0x0b), 0x0f);
	cr_assert_eq(get(0x0c), 0);
	cr_assert_eq(get(0x0d), 0x80);
}

Test(rtc, the_declaration)
{
	uint8_t data[4] = { 0x09, 0, 0, 0 };
	struct dev_io io = { .addr = 0x70, .offset = 0, .len = 1, .is_write = true, .data = data };
	void *dev;

	cr_assert_eq(dev_rtc.pio[0].base, 0x70);
	cr_assert_eq(dev_rtc.pio[0].len, 2);
	cr_assert_eq(dev_rtc.create(&dev, NULL, &(struct dev_config){ 1, 1 << 20 }), 0);
	cr_assert_eq(dev_rtc.io(dev, &io), 0);
	io = (struct dev_io){ .addr = 0x71, .offset = 1, .len = 4, .is_write = false, .data = data };
	memset(data, 0xee, sizeof(data));
	cr_assert_eq(dev_rtc.io(dev, &io), 0);
	cr_assert(data[0] >= 0x26, "a year of this century or later");
	cr_assert_eq(data[1] | data[2] | data[3], 0, "a wide read: the register, then zeros");
	dev_rtc.destroy(dev);
}
