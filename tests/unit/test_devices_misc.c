// SPDX-License-Identifier: MIT
/*
 * Unit tests for the small devices: the QEMU-compatible debug exit and the
 * i8042 reset line / command byte, with a fake host recording stop requests.
 */
#include "devices/devices.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

struct fake {
	int stops, status;
	const char *why;
};

static struct fake f;

static void fake_stop(void *opaque, int status, const char *why)
{
	struct fake *fk = opaque;

	fk->stops++;
	fk->status = status;
	fk->why = why;
}

static const struct dev_host fake_host = { .opaque = &f, .request_stop = fake_stop };

static void reset_fake(void)
{
	memset(&f, 0, sizeof(f));
}

static int debugexit_status(uint32_t value)
{
	reset_fake();
	debugexit_write(&fake_host, value);
	cr_assert_eq(f.stops, 1);
	cr_assert_str_eq(f.why, "guest debug-exit");
	return f.status;
}

Test(debugexit, status_is_value_shifted_or_one)
{
	cr_assert_eq(debugexit_status(0), 1);
	cr_assert_eq(debugexit_status(1), 3);
	cr_assert_eq(debugexit_status(0x7f), 0xff);
	cr_assert_eq(debugexit_status(0x80), 1);
	cr_assert_eq(debugexit_status(0x31), 0x63);
	cr_assert_eq(debugexit_status(0xffffffffu), 0xff);
}

Test(debugexit, missing_host_or_callback)
{
	struct dev_host empty = { 0 };

	debugexit_write(NULL, 1);
	debugexit_write(&empty, 1);
}

static struct i8042 *k;

static void i8042_setup(void)
{
	reset_fake();
	cr_assert_eq(i8042_create(&k, &fake_host), 0);
}

static void i8042_teardown(void)
{
	i8042_destroy(k);
	k = NULL;
}

TestSuite(i8042, .init = i8042_setup, .fini = i8042_teardown);

Test(i8042, idle_reads)
{
	cr_assert_eq(i8042_read(k, 0x64), 0, "no data, input buffer empty");
	cr_assert_eq(i8042_read(k, 0x60), 0);
	cr_assert_eq(i8042_read(k, 0x61), 0, "unknown port reads 0");
}

Test(i8042, reset_command_stops_with_zero)
{
	i8042_write(k, 0x64, 0xfe);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.status, 0);
	cr_assert_str_eq(f.why, "guest reset (i8042)");
}

Test(i8042, other_writes_do_not_reset)
{
	static const uint8_t cmds[] = { 0xaa, 0xab, 0xad, 0xae, 0xa7, 0xa8, 0xd1, 0xd4, 0xff, 0x00 };

	for (size_t i = 0; i < sizeof(cmds); i++)
		i8042_write(k, 0x64, cmds[i]);
	i8042_write(k, 0x60, 0xfe); /* data, not the reset command */
	i8042_write(k, 0x61, 0xfe);
	cr_assert_eq(f.stops, 0);
	cr_assert_eq(i8042_read(k, 0x64), 0);
}

Test(i8042, command_byte_read_and_write)
{
	i8042_write(k, 0x64, 0x20);
	cr_assert_eq(i8042_read(k, 0x64), 0x01, "output buffer full");
	cr_assert_eq(i8042_read(k, 0x60), 0x05, "default: SYS | KBDINT");
	cr_assert_eq(i8042_read(k, 0x64), 0x00, "read emptied the buffer");
	cr_assert_eq(i8042_read(k, 0x60), 0);

	i8042_write(k, 0x64, 0x60);
	i8042_write(k, 0x60, 0x45);
	i8042_write(k, 0x60, 0x99); /* no command pending: ignored */
	i8042_write(k, 0x64, 0x20);
	cr_assert_eq(i8042_read(k, 0x60), 0x45);

	/* A new command cancels a pending write of the command byte. */
	i8042_write(k, 0x64, 0x60);
	i8042_write(k, 0x64, 0xad);
	i8042_write(k, 0x60, 0x00);
	i8042_write(k, 0x64, 0x20);
	cr_assert_eq(i8042_read(k, 0x60), 0x45);
	cr_assert_eq(f.stops, 0);
}

Test(i8042, null_host_reset_is_harmless)
{
	struct i8042 *k2;

	cr_assert_eq(i8042_create(&k2, NULL), 0);
	i8042_write(k2, 0x64, 0xfe);
	cr_assert_eq(i8042_read(k2, 0x64), 0);
	i8042_destroy(k2);
	i8042_destroy(NULL);
}

Test(i8042, save_restore_a_pending_command)
{
	struct i8042_state st, bad;
	struct i8042 *k2;

	i8042_write(k, 0x64, 0x60); /* waiting for the command byte's data */
	i8042_save(k, &st);
	cr_assert_eq(st.pending, 0x60);
	cr_assert(i8042_state_valid(&st));
	cr_assert_eq(i8042_create(&k2, NULL), 0);
	cr_assert_eq(i8042_restore(k2, &st), 0);
	i8042_write(k2, 0x60, 0x47); /* the restored controller completes the command */
	i8042_write(k2, 0x64, 0x20);
	cr_assert_eq(i8042_read(k2, 0x60), 0x47);
	bad = st;
	bad.pending = 0xd1;
	cr_assert_not(i8042_state_valid(&bad));
	cr_assert_eq(i8042_restore(k2, &bad), -EINVAL);
	i8042_destroy(k2);
}
