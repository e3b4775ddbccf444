// SPDX-License-Identifier: MIT
/*
 * CMOS RTC (MC146818-compatible) at ports 0x70 (index) and 0x71 (data):
 * the time of day from the host's wall clock (UTC) plus an offset the
 * guest moves by writing the time registers, status registers A-D, the
 * century register (0x32) and the rest of the 128 bytes as plain RAM. No
 * interrupts: the enable bits of register B read as 0 (docs/devices.md).
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REG_SEC 0x00
#define REG_MIN 0x02
#define REG_HOUR 0x04
#define REG_WDAY 0x06
#define REG_MDAY 0x07
#define REG_MON 0x08
#define REG_YEAR 0x09
#define REG_A 0x0a
#define REG_B 0x0b
#define REG_C 0x0c
#define REG_D 0x0d
#define REG_CENTURY 0x32

#define A_UIP 0x80	   /* update in progress: the last 244 us of each second */
#define A_DEFAULT 0x26	   /* 32.768 kHz time base, 1024 Hz rate */
#define B_SET 0x80	   /* updates stopped: the time registers are the guest's to write */
#define B_IRQ_ENABLES 0x70 /* PIE, AIE, UIE: never set (no IRQ 8) */
#define B_BINARY 0x04	   /* binary, not BCD */
#define B_24H 0x02
#define B_DEFAULT B_24H
#define D_VRT 0x80 /* valid RAM and time: the battery is good */
#define HOUR_PM 0x80

#define NS 1000000000LL
#define UIP_NS 244000LL

struct rtc {
	pthread_mutex_t lock;
	rtc_clock_fn clock;
	void *clock_opaque;
	int64_t offset; /* guest seconds - host seconds */
	uint8_t index;
	uint8_t cmos[RTC_CMOS_SIZE];
};

static int64_t host_clock(void *opaque)
{
	struct timespec ts;

	(void)opaque;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The inverse: the date of a day since 1970-01-01. */
static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*m <= 2);
}

static uint8_t enc(uint8_t b, int64_t v)
{
	return b & B_BINARY ? (uint8_t)v : (uint8_t)((v / 10) << 4 | v % 10);
}

/* A register's value as a number; a BCD digit above 9 counts as its value, as the chip would. */
static int64_t dec(uint8_t b, uint8_t v)
{
	return b & B_BINARY ? v : (v >> 4) * 10 + (v & 0xf);
}

/* Write the time `t` (seconds since the epoch) into regs[] in the encoding `b` says. */
static void time_to_regs(int64_t t, uint8_t b, uint8_t *regs)
{
	int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400), s = t - days * 86400;
	int64_t y, m, d, h = s / 3600;

	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) /* outside what the registers can say: clamp */
		y = y < 0 ? 0 : 9999;
	regs[REG_SEC] = enc(b, s % 60);
	regs[REG_MIN] = enc(b, s / 60 % 60);
	if (b & B_24H)
		regs[REG_HOUR] = enc(b, h);
	else
		regs[REG_HOUR] = (uint8_t)(enc(b, h % 12 ? h % 12 : 12) | (h >= 12 ? HOUR_PM : 0));
	regs[REG_WDAY] = enc(b, (days % 7 + 11) % 7 + 1); /* 1 = Sunday; 1970-01-01 was a Thursday */
	regs[REG_MDAY] = enc(b, d);
	regs[REG_MON] = enc(b, m);
	regs[REG_YEAR] = enc(b, y % 100);
	regs[REG_CENTURY] = enc(b, y / 100);
}

/* The time the registers say, in seconds since the epoch; odd values are clamped, never trusted. */
static int64_t regs_to_time(const uint8_t *regs, uint8_t b)
{
	int64_t sec = dec(b, regs[REG_SEC]), min = dec(b, regs[REG_MIN]);
	int64_t mday = dec(b, regs[REG_MDAY]), mon = dec(b, regs[REG_MON]);
	int64_t year = dec(b, regs[REG_CENTURY]) * 100 + dec(b, regs[REG_YEAR]), hour;

	if (b & B_24H)
		hour = dec(b, regs[REG_HOUR]);
	else
		hour = dec(b, regs[REG_HOUR] & ~HOUR_PM) % 12 + (regs[REG_HOUR] & HOUR_PM ? 12 : 0);
	mon = mon < 1 ? 1 : mon > 12 ? 12 : mon;
	mday = mday < 1 ? 1 : mday > 31 ? 31 : mday;
	year = year > 9999 ? 9999
			   : year; /* binary 255:255 would be 25755: keep offsets a snapshot takes back */
	return days_from_civil(year, mon, mday) * 86400 + hour * 3600 + min * 60 + sec;
}

static bool is_time_reg(unsigned reg)
{
	return reg <= REG_YEAR ? reg != 1 && reg != 3 && reg != 5 : reg == REG_CENTURY;
}

int rtc_create(struct rtc **out, const struct dev_host *host)
{
	struct rtc *r = calloc(1, sizeof(*r));

	(void)host;
	if (!r)
		return -ENOMEM;
	if (pthread_mutex_init(&r->lock, NULL)) {
		free(r);
		return -ENOMEM;
	}
	r->clock = host_clock;
	r->cmos[REG_A] = A_DEFAULT;
	r->cmos[REG_B] = B_DEFAULT;
	r->cmos[REG_D] = D_VRT;
	*out = r;
	return 0;
}

void rtc_destroy(struct rtc *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void rtc_set_clock(struct rtc *r, rtc_clock_fn fn, void *opaque)
{
	pthread_mutex_lock(&r->lock);
	r->clock = fn ? fn : host_clock;
	r->clock_opaque = opaque;
	pthread_mutex_unlock(&r->lock);
}

static int64_t host_seconds(struct rtc *r, int64_t *ns_in_second)
{
	int64_t now = r->clock(r->clock_opaque);
	int64_t s = now >= 0 ? now / NS : -((-now + NS - 1) / NS);

	if (ns_in_second)
		*ns_in_second = now - s * NS;
	return s;
}

static uint8_t data_read(struct rtc *r, unsigned reg)
{
	uint8_t regs[RTC_CMOS_SIZE], b = r->cmos[REG_B];
	int64_t ns, s;

	if (reg == REG_A) {
		/* UIP is honest: set in the last 244 us before the guest's second changes. */
		host_seconds(r, &ns);
		return (uint8_t)(r->cmos[REG_A] | (!(b & B_SET) && ns >= NS - UIP_NS ? A_UIP : 0));
	}
	if (reg == REG_C)
		return 0; /* no interrupt flags: nothing is ever raised */
	if (!is_time_reg(reg) || (b & B_SET))
		return r->cmos[reg];
	s = host_seconds(r, NULL);
	time_to_regs(s + r->offset, b, regs);
	return regs[reg];
}

static void data_write(struct rtc *r, unsigned reg, uint8_t v)
{
	uint8_t b = r->cmos[REG_B];
	int64_t now;

	switch (reg) {
	case REG_A:
		r->cmos[REG_A] = v & (uint8_t)~A_UIP;
		return;
	case REG_B:
		v &= (uint8_t)~B_IRQ_ENABLES;
		now = host_seconds(r, NULL);
		if (!(b & B_SET) && (v & B_SET)) /* stop: the registers hold the time from now on */
			time_to_regs(now + r->offset, v, r->cmos);
		else if ((b & B_SET) && !(v & B_SET)) /* run again from the time the guest wrote */
			r->offset = regs_to_time(r->cmos, v) - now;
		r->cmos[REG_B] = v;
		return;
	case REG_C:
	case REG_D:
		return; /* read-only */
	default:
		break;
	}
	if (!is_time_reg(reg) || (b & B_SET)) {
		r->cmos[reg] = v;
		return;
	}
	/* A time register written while the clock runs: the clock jumps to the new value. */
	uint8_t regs[RTC_CMOS_SIZE];

	now = host_seconds(r, NULL);
	time_to_regs(now + r->offset, b, regs);
	regs[reg] = v;
	r->offset = regs_to_time(regs, b) - now;
}

uint8_t rtc_read(struct rtc *r, uint16_t port)
{
	uint8_t v;

	pthread_mutex_lock(&r->lock);
	v = port == RTC_INDEX_PORT ? r->index : data_read(r, r->index & (RTC_CMOS_SIZE - 1));
	pthread_mutex_unlock(&r->lock);
	return v;
}

void rtc_write(struct rtc *r, uint16_t port, uint8_t value)
{
	pthread_mutex_lock(&r->lock);
	if (port == RTC_INDEX_PORT)
		r->index = value; /* bit 7 masks NMIs on a PC: kept, not acted on */
	else
		data_write(r, r->index & (RTC_CMOS_SIZE - 1), value);
	pthread_mutex_unlock(&r->lock);
}

void rtc_save(struct rtc *r, struct rtc_state *st)
{
	pthread_mutex_lock(&r->lock);
	memset(st, 0, sizeof(*st));
	st->offset = (uint64_t)r->offset;
	st->index = r->index;
	st->cmos_len = RTC_CMOS_SIZE;
	memcpy(st->cmos, r->cmos, RTC_CMOS_SIZE);
	pthread_mutex_unlock(&r->lock);
}

bool rtc_state_valid(const struct rtc_state *st)
{
	/* An offset beyond +-10000 years is no clock's; every register byte is one the chip could hold. */
	int64_t off = (int64_t)st->offset, bound = 10000LL * 366 * 86400;

	return st->cmos_len == RTC_CMOS_SIZE && off <= bound && off >= -bound;
}

int rtc_restore(struct rtc *r, const struct rtc_state *st)
{
	if (!rtc_state_valid(st))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	r->offset = (int64_t)st->offset;
	r->index = st->index;
	memcpy(r->cmos, st->cmos, RTC_CMOS_SIZE);
	/* What a guest write could never leave there: UIP, interrupt enables, flags. */
	r->cmos[REG_A] &= (uint8_t)~A_UIP;
	r->cmos[REG_B] &= (uint8_t)~B_IRQ_ENABLES;
	r->cmos[REG_C] = 0;
	r->cmos[REG_D] = D_VRT;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* ---- the declaration ---------------------------------------------------------------- */

static int rtc_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)cfg;
	return rtc_create((struct rtc **)dev, host);
}

static void rtc_dev_destroy(void *dev)
{
	rtc_destroy(dev);
}

/* One two-port range: the index at 0x70, the data at 0x71; wider accesses take the first byte. */
static int rtc_io(void *dev, struct dev_io *io)
{
	uint16_t port = (uint16_t)(RTC_INDEX_PORT + io->offset);

	if (io->is_write) {
		rtc_write(dev, port, io->data[0]);
		return 0;
	}
	memset(io->data, 0, io->len);
	io->data[0] = rtc_read(dev, port);
	return 0;
}

static const char *rtc_check(const struct snap *s, const void *state, const char **prop)
{
	const struct rtc_state *st = state;

	(void)s;
	*prop = st->cmos_len != RTC_CMOS_SIZE ? "cmos" : "offset";
	return rtc_state_valid(st) ? NULL : "not a state the CMOS RTC can be in";
}

static void rtc_describe(const void *state, char *buf, size_t len)
{
	const struct rtc_state *st = state;

	snprintf(buf, len, "CMOS RTC (guest time = host time %+lld s%s)", (long long)(int64_t)st->offset,
		 st->cmos[REG_B] & B_SET ? ", stopped by the guest" : "");
}

static void rtc_dev_save(void *dev, void *state)
{
	rtc_save(dev, state);
}

static int rtc_dev_load(void *dev, const void *state)
{
	return rtc_restore(dev, state);
}

static const struct snap_field rtc_fields[] = {
	SNAP_FIELD(struct rtc_state, "offset", SNAP_F_U64, offset, 0),
	SNAP_FIELD(struct rtc_state, "index", SNAP_F_U8, index, 0xff),
	SNAP_FIELD_BYTES(struct rtc_state, "cmos", cmos, cmos_len),
};

/* The RTC came within format 1: a snapshot without it restores the reset state (host time). */
static const struct snap_part rtc_part = {
	.name = "rtc@70",
	.size = sizeof(struct rtc_state),
	.fields = rtc_fields,
	.nr_fields = sizeof(rtc_fields) / sizeof(rtc_fields[0]),
	.flags = SNAP_PART_OPTIONAL,
	.check = rtc_check,
	.describe = rtc_describe,
};

const struct dev_desc dev_rtc = {
	.name = "rtc",
	.pio = { { RTC_INDEX_PORT, 2, "rtc" } },
	.nr_pio = 1,
	.irq = -1,
	.create = rtc_dev_create,
	.destroy = rtc_dev_destroy,
	.io = rtc_io,
	.state = &rtc_part,
	.save = rtc_dev_save,
	.load = rtc_dev_load,
};
