// SPDX-License-Identifier: MIT
/*
 * Unit tests for the bus: registration rules (overlap, empty and wrapping
 * ranges, freeze), dispatch with offsets in each address space, range
 * boundaries, and lookup of many ranges after the sort in bus_freeze().
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A fake device: records the last access it saw and returns `rc`. */
struct fake_dev {
	int calls;
	int rc;
	struct bus_access last;
	uint8_t read_value;
};

static int fake_fn(void *opaque, struct bus_access *a)
{
	struct fake_dev *d = opaque;

	d->calls++;
	d->last = *a;
	if (!a->is_write)
		memset(a->data, d->read_value, a->len);
	return d->rc;
}

static struct bus bus;
static struct errbuf err;

static void setup(void)
{
	bus_init(&bus);
	memset(&err, 0, sizeof(err));
}

static void teardown(void)
{
	bus_fini(&bus);
}

TestSuite(bus, .init = setup, .fini = teardown);

#define assert_msg_has(s) cr_assert(strstr(err.msg, (s)), "message '%s' lacks '%s'", err.msg, (s))

static int reg(enum bus_space sp, uint64_t base, uint64_t len, struct fake_dev *d, const char *name)
{
	return bus_register(&bus, sp, base, len, fake_fn, d, name, &err);
}

static int access_at(enum bus_space sp, uint64_t addr, bool write, uint8_t *data, uint32_t len)
{
	struct bus_access a = { .addr = addr, .len = len, .is_write = write, .data = data, .vcpu = 3 };

	return bus_dispatch(&bus, sp, &a);
}

Test(bus, init_is_empty)
{
	for (int s = 0; s < BUS_NR_SPACES; s++) {
		cr_assert_eq(bus.nr[s], 0);
		cr_assert_null(bus.ranges[s]);
	}
	cr_assert_not(bus.frozen);
}

Test(bus, pio_write_dispatch_with_offset)
{
	struct fake_dev uart = { 0 };
	uint8_t v = 0x41;

	cr_assert_eq(reg(BUS_PIO, 0x3f8, 8, &uart, "uart"), 0);
	bus_freeze(&bus);
	cr_assert_eq(access_at(BUS_PIO, 0x3fb, true, &v, 1), 0);
	cr_assert_eq(uart.calls, 1);
	cr_assert_eq(uart.last.addr, 0x3fb);
	cr_assert_eq(uart.last.offset, 3);
	cr_assert_eq(uart.last.len, 1);
	cr_assert(uart.last.is_write);
	cr_assert_eq(uart.last.data, &v);
	cr_assert_eq(uart.last.vcpu, 3);
}

Test(bus, mmio_read_dispatch_fills_data)
{
	struct fake_dev apic = { .read_value = 0x5a };
	uint8_t buf[4] = { 0 };
	uint8_t want[4] = { 0x5a, 0x5a, 0x5a, 0x5a };

	cr_assert_eq(reg(BUS_MMIO, 0xfee00000, 0x1000, &apic, "lapic"), 0);
	bus_freeze(&bus);
	cr_assert_eq(access_at(BUS_MMIO, 0xfee00020, false, buf, 4), 0);
	cr_assert_eq(apic.last.offset, 0x20);
	cr_assert_not(apic.last.is_write);
	cr_assert_arr_eq(buf, want, 4);
}

Test(bus, msr_space)
{
	struct fake_dev pmu = { 0 }, other = { 0 };
	uint8_t data[8] = { 0 };

	cr_assert_eq(reg(BUS_MSR, 0xc1, 8, &pmu, "pmc"), 0);
	/* Same numbers in another space do not clash. */
	cr_assert_eq(reg(BUS_PIO, 0xc1, 8, &other, "pio-at-c1"), 0);
	bus_freeze(&bus);
	cr_assert_eq(access_at(BUS_MSR, 0xc3, true, data, 8), 0);
	cr_assert_eq(pmu.calls, 1);
	cr_assert_eq(pmu.last.offset, 2);
	cr_assert_eq(other.calls, 0);
	cr_assert_eq(access_at(BUS_MSR, 0x38f, false, data, 8), -ENOENT);
	cr_assert_str_eq(bus_find(&bus, BUS_MSR, 0xc1)->name, "pmc");
	cr_assert_str_eq(bus_find(&bus, BUS_PIO, 0xc1)->name, "pio-at-c1");
}

Test(bus, spaces_are_separate)
{
	struct fake_dev d = { 0 };
	uint8_t v = 0;

	cr_assert_eq(reg(BUS_PIO, 0x80, 1, &d, "post"), 0);
	bus_freeze(&bus);
	cr_assert_eq(access_at(BUS_MMIO, 0x80, false, &v, 1), -ENOENT);
	cr_assert_eq(access_at(BUS_MSR, 0x80, false, &v, 1), -ENOENT);
	cr_assert_eq(d.calls, 0);
	cr_assert_eq(access_at(BUS_PIO, 0x80, false, &v, 1), 0);
}

Test(bus, handler_error_is_returned)
{
	struct fake_dev d = { .rc = -EPERM };
	uint8_t v = 0;

	cr_assert_eq(reg(BUS_MSR, 0x10, 1, &d, "tsc"), 0);
	bus_freeze(&bus);
	cr_assert_eq(access_at(BUS_MSR, 0x10, true, &v, 1), -EPERM);
	cr_assert_eq(d.calls, 1);
}

Test(bus, range_boundaries)
{
	struct fake_dev d = { 0 };

	cr_assert_eq(reg(BUS_PIO, 0x60, 5, &d, "i8042"), 0);
	bus_freeze(&bus);
	cr_assert_null(bus_find(&bus, BUS_PIO, 0x5f), "one before the first byte");
	cr_assert_not_null(bus_find(&bus, BUS_PIO, 0x60), "first byte");
	cr_assert_not_null(bus_find(&bus, BUS_PIO, 0x64), "last byte");
	cr_assert_null(bus_find(&bus, BUS_PIO, 0x65), "one past the end");
	cr_assert_null(bus_find(&bus, BUS_PIO, UINT64_MAX));
	cr_assert_null(bus_find(&bus, BUS_PIO, 0));
}

Test(bus, adjacent_ranges_do_not_overlap)
{
	struct fake_dev a = { 0 }, b = { 0 };
	uint8_t v = 0;

	cr_assert_eq(reg(BUS_PIO, 0x100, 0x10, &a, "a"), 0);
	cr_assert_eq(reg(BUS_PIO, 0x110, 0x10, &b, "b"), 0);
	cr_assert_eq(reg(BUS_PIO, 0xf0, 0x10, &b, "c"), 0);
	bus_freeze(&bus);
	cr_assert_eq(access_at(BUS_PIO, 0x10f, false, &v, 1), 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.last.offset, 0xf);
	cr_assert_eq(access_at(BUS_PIO, 0x110, false, &v, 1), 0);
	cr_assert_eq(b.calls, 1);
	cr_assert_eq(b.last.offset, 0);
}

Test(bus, range_ending_at_top_of_space)
{
	struct fake_dev d = { 0 };

	/* [UINT64_MAX - 0xf, UINT64_MAX - 1]: base + len == UINT64_MAX, no wrap. */
	cr_assert_eq(reg(BUS_MMIO, UINT64_MAX - 0xf, 0xf, &d, "top"), 0);
	bus_freeze(&bus);
	cr_assert_not_null(bus_find(&bus, BUS_MMIO, UINT64_MAX - 1));
	cr_assert_null(bus_find(&bus, BUS_MMIO, UINT64_MAX));
	cr_assert_null(bus_find(&bus, BUS_MMIO, UINT64_MAX - 0x10));
}

Test(bus, overlap_rejected_naming_both)
{
	struct fake_dev a = { 0 }, b = { 0 };

	cr_assert_eq(reg(BUS_PIO, 0x3f8, 8, &a, "serial0"), 0);
	cr_assert_eq(reg(BUS_PIO, 0x3ff, 2, &b, "rogue"), -EEXIST);
	assert_msg_has("serial0");
	assert_msg_has("rogue");
	assert_msg_has("I/O port");
	assert_msg_has("0x3ff-0x400");
	assert_msg_has("0x3f8-0x3ff");

	cr_assert_eq(reg(BUS_PIO, 0x3f0, 9, &b, "below"), -EEXIST, "overlaps the first byte");
	cr_assert_eq(reg(BUS_PIO, 0x3fa, 1, &b, "inside"), -EEXIST, "contained");
	cr_assert_eq(reg(BUS_PIO, 0x300, 0x200, &b, "around"), -EEXIST, "contains");
	cr_assert_eq(reg(BUS_PIO, 0x3f8, 8, &b, "same"), -EEXIST, "identical");
	cr_assert_eq(bus.nr[BUS_PIO], 1, "rejected ranges are not added");
}

Test(bus, empty_and_wrapping_ranges_rejected)
{
	struct fake_dev d = { 0 };

	cr_assert_eq(reg(BUS_MMIO, 0x1000, 0, &d, "zero"), -EINVAL);
	assert_msg_has("zero range 0x1000+0x0 is empty or wraps");
	cr_assert_eq(reg(BUS_MMIO, UINT64_MAX - 1, 4, &d, "wrap"), -EINVAL);
	assert_msg_has("wrap range 0xfffffffffffffffe+0x4");
	cr_assert_eq(reg(BUS_MMIO, 1, UINT64_MAX, &d, "wrap2"), -EINVAL);
	cr_assert_eq(reg(BUS_MMIO, UINT64_MAX, 1, &d, "lastbyte"), -EINVAL);
	cr_assert_eq(bus.nr[BUS_MMIO], 0);
}

Test(bus, bad_space_or_callback_rejected)
{
	cr_assert_eq(bus_register(&bus, BUS_NR_SPACES, 0, 1, fake_fn, NULL, "x", &err), -EINVAL);
	cr_assert_eq(bus_register(&bus, BUS_PIO, 0, 1, NULL, NULL, "nofn", &err), -EINVAL);
	assert_msg_has("nofn");
	cr_assert_null(bus_find(&bus, BUS_NR_SPACES, 0));
}

Test(bus, register_after_freeze_busy)
{
	struct fake_dev d = { 0 };

	cr_assert_eq(reg(BUS_PIO, 0x70, 2, &d, "rtc"), 0);
	bus_freeze(&bus);
	cr_assert_eq(reg(BUS_PIO, 0x80, 1, &d, "late"), -EBUSY);
	assert_msg_has("late");
	assert_msg_has("frozen");
	cr_assert_eq(bus.nr[BUS_PIO], 1);
	cr_assert_null(bus_find(&bus, BUS_PIO, 0x80));
}

Test(bus, unknown_address_enoent)
{
	struct fake_dev d = { 0 };
	uint8_t v = 0;
	struct bus_access a = { .addr = 0x1234, .len = 1, .data = &v, .offset = 77 };

	bus_freeze(&bus);
	cr_assert_eq(bus_dispatch(&bus, BUS_PIO, &a), -ENOENT, "empty bus");
	cr_assert_eq(a.offset, 77, "offset untouched when nothing handles it");
	bus_fini(&bus);
	bus_init(&bus);
	cr_assert_eq(reg(BUS_PIO, 0x1000, 0x10, &d, "d"), 0);
	bus_freeze(&bus);
	cr_assert_eq(bus_dispatch(&bus, BUS_PIO, &a), -ENOENT);
	cr_assert_eq(d.calls, 0);
}

Test(bus, many_ranges_out_of_order_found_after_freeze)
{
	enum {
		N = 101
	};
	static struct fake_dev devs[N];
	static char names[N][16];
	uint8_t v = 0;

	/* Register every 7th slot so the order is scrambled (7 is coprime to N). */
	for (unsigned k = 0; k < N; k++) {
		unsigned i = (k * 7) % N;

		snprintf(names[i], sizeof(names[i]), "dev%u", i);
		cr_assert_eq(reg(BUS_MMIO, 0x100000 + (uint64_t)i * 0x1000, 0x800, &devs[i], names[i]), 0,
			     "%s: %s", names[i], err.msg);
	}
	cr_assert_gt(bus.cap[BUS_MMIO], 8, "the table grew past its first allocation");
	bus_freeze(&bus);
	for (unsigned i = 1; i < N; i++)
		cr_assert_lt(bus.ranges[BUS_MMIO][i - 1].base, bus.ranges[BUS_MMIO][i].base, "sorted");

	for (unsigned i = 0; i < N; i++) {
		uint64_t base = 0x100000 + (uint64_t)i * 0x1000;
		const struct bus_range *r;

		r = bus_find(&bus, BUS_MMIO, base);
		cr_assert_not_null(r, "first byte of dev%u", i);
		cr_assert_str_eq(r->name, names[i]);
		r = bus_find(&bus, BUS_MMIO, base + 0x7ff);
		cr_assert_not_null(r, "last byte of dev%u", i);
		cr_assert_eq(r->opaque, &devs[i]);
		cr_assert_null(bus_find(&bus, BUS_MMIO, base + 0x800), "gap after dev%u", i);
		cr_assert_eq(access_at(BUS_MMIO, base + 0x10 + i, true, &v, 1), 0);
		cr_assert_eq(devs[i].calls, 1);
		cr_assert_eq(devs[i].last.offset, 0x10 + i);
	}
	cr_assert_null(bus_find(&bus, BUS_MMIO, 0xfffff));
	cr_assert_null(bus_find(&bus, BUS_MMIO, 0x100000 + N * 0x1000ULL));
}

Test(bus, space_names)
{
	cr_assert_str_eq(bus_space_name(BUS_PIO), "I/O port");
	cr_assert_str_eq(bus_space_name(BUS_MMIO), "MMIO");
	cr_assert_str_eq(bus_space_name(BUS_MSR), "MSR");
	cr_assert_str_eq(bus_space_name(BUS_NR_SPACES), "?");
}

Test(bus, fini_resets_for_reuse)
{
	struct fake_dev d = { 0 };

	cr_assert_eq(reg(BUS_PIO, 0x10, 1, &d, "x"), 0);
	bus_freeze(&bus);
	bus_fini(&bus);
	cr_assert_not(bus.frozen);
	cr_assert_eq(bus.nr[BUS_PIO], 0);
	cr_assert_null(bus.ranges[BUS_PIO]);
	cr_assert_eq(reg(BUS_PIO, 0x10, 1, &d, "x"), 0, "usable again after fini + init state");
}
