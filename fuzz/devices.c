// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the PC devices a guest programs by port writes (the
 * CMOS RTC, the ACPI PM block, port 0x92), driven as a hostile guest
 * drives them. The input is a program: its first 8 bytes the host's wall
 * clock, then 4-byte steps (a device and a port, a width, a value, how far
 * the clock moves), and a restore of the RTC from the next bytes as a saved
 * state. Nothing may read or write outside a device's state, and every
 * register read stays a byte (ASan and UBSan watch).
 */
#include <stdlib.h>
#include <string.h>

#include "devices/devices.h"
#include "perfvisor/legacy_boot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t now_ns;

static int64_t fake_clock(void *opaque)
{
	(void)opaque;
	return now_ns;
}

static void fake_stop(void *opaque, int status, const char *why)
{
	(void)opaque, (void)status, (void)why;
}

static const struct dev_host host = { .request_stop = fake_stop };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtc *r;
	struct acpipm *pm;
	struct port92 *p92;
	uint64_t t = 0;

	if (size < 8)
		return 0;
	memcpy(&t, data, 8);
	/* A host clock from 1970 to about 2116, as CLOCK_REALTIME can be. */
	now_ns = (int64_t)(t % (1ULL << 62));
	data += 8;
	size -= 8;
	if (rtc_create(&r, &host) || acpipm_create(&pm, &host) || port92_create(&p92, &host))
		abort();
	rtc_set_clock(r, fake_clock, NULL);
	while (size >= 4) {
		uint8_t op = data[0], arg = data[1], value = data[2], dt = data[3];
		uint8_t buf[4] = { value, (uint8_t)~value, arg, value };

		data += 4;
		size -= 4;
		now_ns += (int64_t)dt * 250000; /* up to 64 ms a step, across the UIP window too */
		switch (op & 7) {
		case 0:
			rtc_write(r, RTC_INDEX_PORT, arg);
			break;
		case 1:
			rtc_write(r, RTC_DATA_PORT, value);
			break;
		case 2:
			(void)rtc_read(r, (op & 8) ? RTC_DATA_PORT : RTC_INDEX_PORT);
			break;
		case 3:
			acpipm_access(pm, arg % (PV_LB_ACPI_PM_LEN + 4), buf, 1 + (op >> 3) % 4, op & 0x80);
			break;
		case 4:
			port92_write(p92,
				     value & ~1); /* bit 0 resets: the fake host ignores it, but keep going */
			(void)port92_read(p92);
			break;
		case 5: {
			struct rtc_state st;

			if (size < sizeof(st))
				break;
			memcpy(&st, data, sizeof(st));
			data += sizeof(st);
			size -= sizeof(st);
			(void)rtc_restore(r, &st);
			break;
		}
		case 6: {
			struct rtc_state st;

			rtc_save(r, &st);
			if (!rtc_state_valid(&st) || rtc_restore(r, &st))
				abort(); /* what an RTC saved, an RTC must take back */
			break;
		}
		default:
			(void)acpipm_timer(pm);
			break;
		}
	}
	port92_destroy(p92);
	acpipm_destroy(pm);
	rtc_destroy(r);
	return 0;
}
