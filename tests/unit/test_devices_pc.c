// SPDX-License-Identifier: MIT
/*
 * Unit tests for the small PC devices a stock Linux uses: System Control
 * Port A (0x92), the ACPI PM block (PM1 status/enable/control, PM timer,
 * reset register) and the legacy hardware the machine answers for as
 * absent, with a fake host recording stop requests and log lines.
 */
#include "devices/devices.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "perfvisor/legacy_boot.h"

struct fake {
	int stops, status, logs;
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

static void fake_log(void *opaque, const char *msg)
{
	(void)msg;
	((struct fake *)opaque)->logs++;
}

static const struct dev_host fake_host = { .opaque = &f, .request_stop = fake_stop, .log = fake_log };

/* ---- port 0x92 ---------------------------------------------------------------- */

Test(port92, a20_reads_back_and_bit0_resets)
{
	struct port92 *p;

	memset(&f, 0, sizeof(f));
	cr_assert_eq(port92_create(&p, &fake_host), 0);
	cr_assert_eq(port92_read(p), 0x02, "A20 on after boot");
	port92_write(p, 0x00);
	cr_assert_eq(port92_read(p), 0x00);
	port92_write(p, 0xfe);
	cr_assert_eq(port92_read(p), 0x02, "only A20 is kept");
	cr_assert_eq(f.stops, 0);
	port92_write(p, 0x03);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.status, 0);
	cr_assert_str_eq(f.why, "guest reset (port 0x92)");
	port92_destroy(p);
}

Test(port92, the_declaration_and_its_state)
{
	uint8_t data[2] = { 0 };
	struct dev_io io = { .addr = 0x92, .len = 2, .data = data };
	struct port92_state st;
	void *dev;

	cr_assert_eq(dev_port92.create(&dev, NULL, &(struct dev_config){ 1, 1 << 20 }), 0);
	cr_assert_eq(dev_port92.io(dev, &io), 0);
	cr_assert_eq(data[0], 0x02);
	cr_assert_eq(data[1], 0xff, "no register past 0x92");
	dev_port92.save(dev, &st);
	cr_assert_eq(st.value, 0x02);
	st.value = 0x01;
	cr_assert_eq(dev_port92.load(dev, &st), -EINVAL, "bit 0 is never kept");
	st.value = 0;
	cr_assert_eq(dev_port92.load(dev, &st), 0);
	data[0] = 1;
	io.is_write = true;
	io.len = 1;
	cr_assert_eq(dev_port92.io(dev, &io), 0, "reset with a NULL host: harmless");
	dev_port92.destroy(dev);
}

/* ---- the ACPI PM block -------------------------------------------------------- */

static struct acpipm *pm;

static void pm_setup(void)
{
	memset(&f, 0, sizeof(f));
	cr_assert_eq(acpipm_create(&pm, &fake_host), 0);
}

static void pm_teardown(void)
{
	acpipm_destroy(pm);
}

TestSuite(acpipm, .init = pm_setup, .fini = pm_teardown);

static uint32_t pm_in(unsigned port, unsigned len)
{
	uint8_t d[4] = { 0 };
	uint32_t v = 0;

	acpipm_access(pm, port - PV_LB_ACPI_PM_BASE, d, len, false);
	for (unsigned k = 0; k < len; k++)
		v |= (uint32_t)d[k] << 8 * k;
	return v;
}

static void pm_out(unsigned port, unsigned len, uint32_t v)
{
	uint8_t d[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	acpipm_access(pm, port - PV_LB_ACPI_PM_BASE, d, len, true);
}

Test(acpipm, sci_en_is_always_set)
{
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_CNT, 2), 0x0001);
	pm_out(PV_LB_ACPI_PM1_CNT, 2, 0x0000);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_CNT, 2), 0x0001, "ACPI mode cannot be left");
	pm_out(PV_LB_ACPI_PM1_CNT, 2, 0xc3c6);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_CNT, 2), 0x0003, "SLP_TYP 0, BM_RLD; nothing else kept");
}

Test(acpipm, status_and_enable)
{
	pm_out(PV_LB_ACPI_PM1_EVT + 2, 2, 0x0521);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_EVT + 2, 2), 0x0521);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_EVT, 4), 0x05210000, "status 0, then enable");
	pm_out(PV_LB_ACPI_PM1_EVT, 2, 0xffff); /* write 1 to clear: nothing set, nothing changes */
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_EVT, 2), 0);
	pm_out(PV_LB_ACPI_PM1_EVT + 3, 1, 0x80);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_EVT + 2, 2), 0x8021, "byte writes");
}

Test(acpipm, s5_powers_off_with_zero)
{
	pm_out(PV_LB_ACPI_PM1_CNT, 2, PV_LB_ACPI_SLP_TYP_S5 << 10 | 1);
	cr_assert_eq(f.stops, 0, "SLP_TYP alone does nothing");
	pm_out(PV_LB_ACPI_PM1_CNT, 2, PV_LB_ACPI_SLP_TYP_S5 << 10 | 0x2000 | 1);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.status, 0);
	cr_assert_str_eq(f.why, "guest power-off (ACPI S5)");
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_CNT, 2) & 0x2000, 0, "SLP_EN reads 0");
}

Test(acpipm, other_sleep_types_are_ignored_and_logged_rate_limited)
{
	for (int i = 0; i < 100; i++)
		pm_out(PV_LB_ACPI_PM1_CNT + 1, 1, 0x20 | 1 << 2); /* SLP_EN, SLP_TYP 1 */
	cr_assert_eq(f.stops, 0);
	cr_assert(f.logs >= 1 && f.logs <= 10, "%d log lines for 100 requests", f.logs);
}

Test(acpipm, reset_register)
{
	pm_out(PV_LB_ACPI_RESET, 1, 0x06);
	cr_assert_eq(f.stops, 0, "another value does nothing");
	cr_assert_eq(pm_in(PV_LB_ACPI_RESET, 1), 0);
	pm_out(PV_LB_ACPI_RESET, 1, PV_LB_ACPI_RESET_VALUE);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.status, 0);
	cr_assert_str_eq(f.why, "guest reset (ACPI reset register)");
}

Test(acpipm, pm_timer_counts_at_3_58_mhz_in_24_bits)
{
	uint32_t a = pm_in(PV_LB_ACPI_PM_TMR, 4), b;
	struct timespec ts = { 0, 2000000 };

	cr_assert_eq(a & 0xff000000u, 0, "24 bits");
	nanosleep(&ts, NULL);
	b = pm_in(PV_LB_ACPI_PM_TMR, 4);
	/* 2 ms = 7159 ticks; allow a slow machine 2 s */
	cr_assert(((b - a) & 0xffffff) >= 7000 && ((b - a) & 0xffffff) < 7200000, "%u ticks",
		  (b - a) & 0xffffff);
	pm_out(PV_LB_ACPI_PM_TMR, 4, 0);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM_TMR + 12, 4), 0, "past the block: zeros, no overrun");
}

Test(acpipm, state)
{
	struct acpipm_state st;

	pm_out(PV_LB_ACPI_PM1_EVT + 2, 2, 0x0100);
	pm_out(PV_LB_ACPI_PM1_CNT, 2, 3 << 10 | 1);
	acpipm_save(pm, &st);
	cr_assert_eq(st.en, 0x0100);
	cr_assert_eq(st.cnt, 3 << 10 | 1);
	cr_assert_null(dev_acpipm.state->check(NULL, &st, &(const char *){ NULL }));
	st.cnt = 0;
	cr_assert_eq(acpipm_restore(pm, &st), -EINVAL, "SCI_EN clear");
	st.cnt = 0x2001;
	cr_assert_eq(acpipm_restore(pm, &st), -EINVAL, "SLP_EN is never kept");
	cr_assert_not_null(dev_acpipm.state->check(NULL, &st, &(const char *){ NULL }));
	st.cnt = 1;
	st.en = 0x20;
	cr_assert_eq(acpipm_restore(pm, &st), 0);
	cr_assert_eq(pm_in(PV_LB_ACPI_PM1_EVT + 2, 2), 0x20);
}

/* ---- absent legacy hardware ---------------------------------------------------- */

Test(absent, ports_read_all_ones)
{
	uint8_t d[4] = { 0 };
	struct dev_io io = { .addr = 0xcf8, .len = 4, .is_write = true, .data = d };
	void *dev;

	cr_assert_eq(dev_absent.nr_pio, 7);
	cr_assert_eq(dev_absent.pio[0].base, 0xcf8);
	cr_assert_eq(dev_absent.pio[0].len, 8);
	cr_assert_eq(dev_absent.create(&dev, NULL, &(struct dev_config){ 1, 1 << 20 }), 0);
	d[3] = 0x80;
	cr_assert_eq(dev_absent.io(dev, &io), 0);
	io.is_write = false;
	cr_assert_eq(dev_absent.io(dev, &io), 0);
	cr_assert_eq(d[0] & d[1] & d[2] & d[3], 0xff, "no type 1 mechanism: the address does not read back");
	for (unsigned r = 0; r < dev_absent.nr_pio; r++)
		for (unsigned q = 0; q < dev_absent.nr_pio; q++)
			cr_assert(q == r ||
					  dev_absent.pio[q].base >=
						  dev_absent.pio[r].base + dev_absent.pio[r].len ||
					  dev_absent.pio[r].base >=
						  dev_absent.pio[q].base + dev_absent.pio[q].len,
				  "ranges %u and %u overlap", r, q);
	dev_absent.destroy(dev);
}
