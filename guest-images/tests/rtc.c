/* SPDX-License-Identifier: MIT */
/*
 * rtc: the CMOS RTC at 0x70/0x71 (docs/devices.md) as a guest sees it:
 * the host's time in BCD, 24 hours, no interrupt enables; SET freezes it
 * while the guest writes the year 2030; the clock runs; CMOS RAM keeps a
 * byte. Then phases=N phases of 250 ms (a snapshot and restore may fall
 * among them) and the check that the year the guest set, the RAM and a
 * running clock survived them.
 */
#include "guest.h"

#define RTC_INDEX 0x70
#define RTC_DATA 0x71

struct rtc_time {
	unsigned sec, min, hour, mday, mon, year;
};

static uint8_t cmos(uint8_t reg)
{
	outb(RTC_INDEX, reg);
	return inb(RTC_DATA);
}

static void cmos_set(uint8_t reg, uint8_t v)
{
	outb(RTC_INDEX, reg);
	outb(RTC_DATA, v);
}

static unsigned bcd(uint8_t v)
{
	return (v >> 4) * 10 + (v & 0xf);
}

/* Read the time once UIP is clear (it is set for at most 244 us a second). */
static void read_time(struct rtc_time *t)
{
	for (int i = 0; i < 1000 && (cmos(0x0a) & 0x80); i++)
		udelay(10);
	t->sec = bcd(cmos(0x00));
	t->min = bcd(cmos(0x02));
	t->hour = bcd(cmos(0x04));
	t->mday = bcd(cmos(0x07));
	t->mon = bcd(cmos(0x08));
	t->year = bcd(cmos(0x32)) * 100 + bcd(cmos(0x09));
}

/* Seconds since 1970 (days from a proleptic Gregorian date). */
static uint64_t epoch(const struct rtc_time *t)
{
	uint64_t y = t->year - (t->mon <= 2), era = y / 400, yoe = y - era * 400;
	uint64_t doy = (153 * (t->mon + (t->mon > 2 ? -3 : 9)) + 2) / 5 + t->mday - 1;
	uint64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;

	return days * 86400 + t->hour * 3600 + t->min * 60 + t->sec;
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t phases = (uint32_t)cmdline_get_u64("phases", 0);
	struct rtc_time t0, t1, t2, t3;
	uint8_t b = cmos(0x0b);

	(void)bi;
	report(cmos(0x0d) == 0x80, "register D: VRT (0x%x)", cmos(0x0d));
	report(b == 0x02, "register B: 24 hours, BCD, no interrupt enabled (0x%x)", b);
	read_time(&t0);
	report(t0.year >= 2026 && t0.year < 2100 && t0.mon >= 1 && t0.mon <= 12 && t0.mday >= 1 &&
		       t0.mday <= 31 && t0.hour < 24 && t0.min < 60 && t0.sec < 60,
	       "the host's time: %u-%02u-%02u %02u:%02u:%02u UTC", t0.year, t0.mon, t0.mday, t0.hour, t0.min,
	       t0.sec);

	cmos_set(0x0b, 0x82); /* SET: stop the clock to write it */
	cmos_set(0x09, 0x30);
	cmos_set(0x0b, 0x02);
	read_time(&t1);
	report(t1.year == 2030 && t1.mon == t0.mon, "the year the guest wrote: %u", t1.year);
	udelay(1500000);
	read_time(&t2);
	report(epoch(&t2) >= epoch(&t1) + 1 && epoch(&t2) <= epoch(&t1) + 3, "the clock runs: %u s in 1.5 s",
	       (unsigned)(epoch(&t2) - epoch(&t1)));
	cmos_set(0x40, 0x5a);
	report(cmos(0x40) == 0x5a, "CMOS RAM keeps a byte");
	cmos_set(0x0b, 0x72);
	report(cmos(0x0b) == 0x02, "the interrupt enables stay clear (0x%x)", cmos(0x0b));
	cmos_set(0x0b, 0x02);

	for (uint32_t i = 1; i <= phases; i++) {
		udelay(250000);
		printf("rtc: phase %u/%u\n", i, phases);
	}
	if (phases) {
		read_time(&t3);
		report(t3.year == 2030 && cmos(0x40) == 0x5a, "after the phases: still %u, RAM 0x%x", t3.year,
		       cmos(0x40));
		report(epoch(&t3) >= epoch(&t2) + phases / 4, "the clock went on: %u s more",
		       (unsigned)(epoch(&t3) - epoch(&t2)));
	}
	return report_summary();
}
