// SPDX-License-Identifier: MIT
/*
 * Unit tests for the ACPI tables (machine/acpi.c) and the AML writer
 * (machine/aml.c): the FADT's fields and the tables it points to, the
 * DSDT's \_S5 and MMIO devices byte by byte and, where acpica-tools is
 * installed (scripts/deps.sh), as iasl disassembles them; the encodings of
 * names, integers and package lengths; and the entries the tables refuse.
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfvisor/legacy_boot.h"

#define MEM (4ULL << 20)

static struct gmem mem;

static void setup(void)
{
	struct errbuf e = { 0 };

	cr_assert_eq(gmem_init(&mem, MEM, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
	gmem_fini(&mem);
}

TestSuite(acpi, .init = setup, .fini = teardown);

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* The table the RSDT's entry i points to, its checksum checked. */
static const uint8_t *rsdt_entry(unsigned i)
{
	const uint8_t *rsdp = mem.hva + PV_LB_RSDP_GPA, *rsdt = mem.hva + rd32(rsdp + 16), *t;

	cr_assert_eq(sum(rsdt, rd32(rsdt + 4)), 0, "RSDT checksum");
	cr_assert_eq(rd32(rsdt + 4), 36 + 8, "two tables: MADT, FADT");
	t = mem.hva + rd32(rsdt + 36 + 4 * i);
	cr_assert_eq(sum(t, rd32(t + 4)), 0, "%.4s checksum", (const char *)t);
	return t;
}

static const struct acpi_mmio_dev two[] = {
	{ "LNRO0005", 0, 0xd0000000, 0x200, 5 },
	{ "LNRO0005", 1, 0xd0000200, 0x200, 6 },
};

Test(acpi, fadt)
{
	const uint8_t *fadt, *facs, *dsdt;

	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 2, NULL, 0), 0);
	cr_assert_arr_eq(rsdt_entry(0), "APIC", 4);
	fadt = rsdt_entry(1);
	cr_assert_arr_eq(fadt, "FACP", 4);
	cr_assert_eq(rd32(fadt + 4), 276, "ACPI 6.0's FADT");
	cr_assert_eq(fadt[8], 6, "revision 6");
	facs = mem.hva + rd32(fadt + 36);
	cr_assert_arr_eq(facs, "FACS", 4);
	cr_assert_eq(rd32(fadt + 36) % 64, 0, "the FACS is 64-byte aligned");
	dsdt = mem.hva + rd32(fadt + 40);
	cr_assert_arr_eq(dsdt, "DSDT", 4);
	cr_assert_eq(sum(dsdt, rd32(dsdt + 4)), 0, "DSDT checksum");
	cr_assert(rd32(fadt + 40) + rd32(dsdt + 4) <= PV_LB_HIGH_GPA);
	cr_assert_eq(rd16(fadt + 46), 9, "SCI_INT");
	cr_assert_eq(rd32(fadt + 48), 0, "no SMI_CMD: always in ACPI mode");
	cr_assert_eq(rd32(fadt + 56), PV_LB_ACPI_PM1_EVT);
	cr_assert_eq(rd32(fadt + 64), PV_LB_ACPI_PM1_CNT);
	cr_assert_eq(rd32(fadt + 76), PV_LB_ACPI_PM_TMR);
	cr_assert_eq(fadt[88], 4, "PM1_EVT_LEN");
	cr_assert_eq(fadt[89], 2, "PM1_CNT_LEN");
	cr_assert_eq(fadt[91], 4, "PM_TMR_LEN");
	cr_assert_eq(fadt[108], 0x32, "the RTC's century register");
	cr_assert_eq(rd16(fadt + 109) & 0x2, 0, "no 8042");
	cr_assert_eq(rd16(fadt + 109) & 0x20, 0, "a CMOS RTC");
	cr_assert_eq(rd32(fadt + 112) & (1u << 20), 0, "not hardware-reduced");
	cr_assert_neq(rd32(fadt + 112) & (1u << 10), 0, "RESET_REG_SUP");
	cr_assert_eq(fadt[116], 1, "reset register in I/O space");
	cr_assert_eq(fadt[117], 8);
	cr_assert_eq(rd32(fadt + 120), PV_LB_ACPI_RESET);
	cr_assert_eq(fadt[128], PV_LB_ACPI_RESET_VALUE);
}

Test(acpi, madt_sci_override)
{
	const uint8_t *madt, *iso;

	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, NULL, 0), 0);
	madt = rsdt_entry(0);
	iso = madt + 44 + 8 + 12;
	cr_assert_eq(iso[0], 2, "an interrupt source override");
	cr_assert_eq(iso[3], 9);
	cr_assert_eq(rd32(iso + 4), 9);
	cr_assert_eq(rd16(iso + 8), 0xd, "level, active high");
}

/* \_S5 = Package(4) { 5, 5, 0, 0 }: the DSDT's first term. */
static const uint8_t s5[] = {
	0x08, '\\', '_', 'S', '5', '_', 0x12, 0x08, 0x04, 0x0a, 5, 0x0a, 5, 0x00, 0x00
};

Test(acpi, dsdt_without_devices)
{
	const uint8_t *dsdt;

	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, NULL, 0), 0);
	dsdt = mem.hva + rd32(rsdt_entry(1) + 40);
	cr_assert_eq(rd32(dsdt + 4), 36 + sizeof(s5));
	cr_assert_eq(dsdt[8], 2, "revision 2: 64-bit integers");
	cr_assert_arr_eq(dsdt + 36, s5, sizeof(s5));
}

Test(acpi, dsdt_devices)
{
	static const uint8_t dev0[] = {
		0x5b, 0x82, 0x3a, /* Device, PkgLength 58 */
		'D',  '0',  '0',  '0',	0x08, '_',  'H',  'I',	'D',  0x0d, 'L',  'N',	'R',
		'O',  '0',  '0',  '0',	'5',  0,    0x08, '_',	'U',  'I',  'D',  0x00, /* Name(_UID, Zero) */
		0x08, '_',  'C',  'R',	'S',  0x11, 0x1a, 0x0a, 23,			/* Buffer(23) */
		0x86, 0x09, 0x00, 0x01, 0x00, 0x00, 0x00, 0xd0, 0x00, 0x02, 0x00, 0x00, /* Memory32Fixed */
		0x89, 0x06, 0x00, 0x03, 0x01, 0x05, 0x00, 0x00, 0x00, /* Interrupt(edge, high) 5 */
		0x79, 0x00,
	};
	const uint8_t *dsdt, *sb;

	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, two, 2), 0);
	dsdt = mem.hva + rd32(rsdt_entry(1) + 40);
	cr_assert_arr_eq(dsdt + 36, s5, sizeof(s5));
	sb = dsdt + 36 + sizeof(s5);
	cr_assert_eq(sb[0], 0x10, "Scope");
	cr_assert_eq(sb[1] >> 6, 1, "a two-byte PkgLength");
	cr_assert_eq(((sb[1] & 0xf) | sb[2] << 4), 2 + 5 + 2 * sizeof(dev0),
		     "Scope's length: itself, \\_SB_ and two devices");
	cr_assert_arr_eq(sb + 3, "\\_SB_", 5);
	cr_assert_arr_eq(sb + 8, dev0, sizeof(dev0));
	cr_assert_eq(sb[8 + sizeof(dev0) + 6], '1', "the second is D001");
	cr_assert_eq(rd32(dsdt + 4), 36 + sizeof(s5) + 8 + 2 * sizeof(dev0) + 0, "nothing else");
}

Test(acpi, bad_device_entries)
{
	struct acpi_mmio_dev d = two[0];

	d.hid = "lnro0005";
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, &d, 1), -EINVAL, "lower case");
	d.hid = "LNRO00050";
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, &d, 1), -EINVAL, "9 characters");
	d.hid = NULL;
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, &d, 1), -EINVAL);
	d = two[0];
	d.base = 0xfffff000;
	d.len = 0x2000;
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, &d, 1), -EINVAL, "past 4 GiB");
	d.len = 0;
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, &d, 1), -EINVAL, "no length");
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, NULL, 3), -EINVAL);
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, two, ACPI_MAX_MMIO_DEVS + 1),
		     -EINVAL);
}

Test(acpi, many_devices_fill_the_area_or_say_enospc)
{
	static struct acpi_mmio_dev many[ACPI_MAX_MMIO_DEVS];

	for (unsigned i = 0; i < ACPI_MAX_MMIO_DEVS; i++)
		many[i] =
			(struct acpi_mmio_dev){ "LNRO0005", i, 0xd0000000 + 0x200ULL * i, 0x200, 5 + i % 16 };
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, many, 1000), 0,
		     "1000 fit in 128 KiB");
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, many, ACPI_MAX_MMIO_DEVS), -ENOSPC);
}

/* ---- the AML writer --------------------------------------------------------------- */

Test(aml, names)
{
	uint8_t b[64];
	struct aml a;

	aml_init(&a, b, sizeof(b));
	cr_assert_eq(aml_name(&a, "_HID"), 0);
	cr_assert_eq(aml_name(&a, "\\_SB"), 0);
	cr_assert_eq(aml_name(&a, "\\_SB.D0"), 0);
	cr_assert_eq(aml_name(&a, "A.B.C"), 0);
	cr_assert_eq(aml_name(&a, "\\"), 0);
	cr_assert_eq(a.len, 4 + 5 + 10 + 14 + 2);
	cr_assert_arr_eq(b,
			 "_HID\\_SB_\\\x2e_SB_D0__\x2f\x03"
			 "A___B___C___\\\0",
			 a.len);
	cr_assert_not(a.failed);
	cr_assert_eq(aml_name(&a, "1ABC"), -EINVAL, "a digit first");
	cr_assert(a.failed);
	aml_init(&a, b, sizeof(b));
	cr_assert_eq(aml_name(&a, "ABCDE"), -EINVAL, "five characters");
	aml_init(&a, b, sizeof(b));
	cr_assert_eq(aml_name(&a, "AB..C"), -EINVAL);
	aml_init(&a, b, sizeof(b));
	cr_assert_eq(aml_name(&a, "AB."), -EINVAL);
	aml_init(&a, b, sizeof(b));
	cr_assert_eq(aml_name(&a, "ab"), -EINVAL);
}

Test(aml, integers)
{
	uint8_t b[64];
	struct aml a;
	static const uint8_t want[] = { 0x00, 0x01, 0x0a, 0x02, 0x0b, 0x00, 0x01, 0x0c, 0x00, 0x00, 0x01,
					0x00, 0x0e, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00 };

	aml_init(&a, b, sizeof(b));
	aml_integer(&a, 0);
	aml_integer(&a, 1);
	aml_integer(&a, 2);
	aml_integer(&a, 0x100);
	aml_integer(&a, 0x10000);
	aml_integer(&a, 0x100000000ULL);
	cr_assert_eq(a.len, sizeof(want));
	cr_assert_arr_eq(b, want, sizeof(want));
}

Test(aml, package_lengths)
{
	static uint8_t b[1 << 21];
	struct aml a;
	size_t s;

	/* 62 bytes of content: one length byte, 63. */
	aml_init(&a, b, sizeof(b));
	s = aml_open(&a, 0x12);
	for (int i = 0; i < 62; i++)
		aml_byte(&a, 0xaa);
	aml_close(&a, s);
	cr_assert_eq(b[1], 63);
	cr_assert_eq(a.len, 1 + 1 + 62);
	/* 63: two bytes, 65 = 0x41: lead 0x41, then 0x04. */
	aml_init(&a, b, sizeof(b));
	s = aml_open(&a, 0x12);
	for (int i = 0; i < 63; i++)
		aml_byte(&a, 0xaa);
	aml_close(&a, s);
	cr_assert_eq(b[1], 0x41);
	cr_assert_eq(b[2], 0x04);
	cr_assert_eq(b[3], 0xaa, "the contents moved after the length");
	/* 0x1000 bytes: three, 0x1003. */
	aml_init(&a, b, sizeof(b));
	s = aml_open(&a, 0x12);
	for (int i = 0; i < 0x1000; i++)
		aml_byte(&a, 0xaa);
	aml_close(&a, s);
	cr_assert_eq(b[1], 0x80 | 0x3);
	cr_assert_eq(b[2], 0x00);
	cr_assert_eq(b[3], 0x01);
	/* 0x100000 bytes: four, 0x100004. */
	aml_init(&a, b, sizeof(b));
	s = aml_open(&a, 0x12);
	for (int i = 0; i < 0x100000; i++)
		aml_byte(&a, 0xaa);
	aml_close(&a, s);
	cr_assert_eq(b[1], 0xc0 | 0x4);
	cr_assert_eq(b[2], 0x00);
	cr_assert_eq(b[3], 0x00);
	cr_assert_eq(b[4], 0x01);
	cr_assert_not(a.failed);
}

Test(aml, never_overflows)
{
	uint8_t b[8] = { 0 };
	struct aml a;
	size_t s;

	aml_init(&a, b, 6);
	s = aml_open(&a, 0x12);
	aml_string(&a, "ABCD");
	cr_assert(a.failed);
	aml_close(&a, s);
	cr_assert_eq(b[6] | b[7], 0);
	/* Room for the contents but not for the length byte. */
	aml_init(&a, b, 6);
	s = aml_open(&a, 0x12);
	aml_bytes(&a, "abcde", 5);
	cr_assert_not(a.failed);
	aml_close(&a, s);
	cr_assert(a.failed);
	cr_assert_eq(b[6] | b[7], 0);
}

/* ---- what ACPICA's disassembler makes of it ------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[1 << 16];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

Test(acpi, iasl_disassembles_the_dsdt)
{
	char dir[] = "/tmp/pvacpi.XXXXXX", cmd[512], path[256];
	const uint8_t *dsdt;
	const char *dsl;
	FILE *f;

	if (system("command -v iasl >/dev/null 2>&1")) {
		cr_skip_test("iasl (acpica-tools) is not installed: scripts/deps.sh installs it");
		return;
	}
	cr_assert_eq(acpi_build(&mem, PV_LB_RSDP_GPA, PV_LB_HIGH_GPA, 1, two, 2), 0);
	dsdt = mem.hva + rd32(rsdt_entry(1) + 40);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/dsdt.dat", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fwrite(dsdt, 1, rd32(dsdt + 4), f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && iasl -d dsdt.dat >iasl.out 2>&1", dir);
	cr_assert_eq(system(cmd), 0, "iasl -d failed: %s", slurp(strcat(strcpy(path, dir), "/iasl.out")));
	snprintf(path, sizeof(path), "%s/dsdt.dsl", dir);
	dsl = slurp(path);
	cr_assert_not_null(dsl);
	cr_assert_not_null(strstr(dsl, "Name (\\_S5, Package (0x04)"), "%s", dsl);
	cr_assert_not_null(strstr(dsl, "Device (D001)"), "%s", dsl);
	cr_assert_not_null(strstr(dsl, "Name (_HID, \"LNRO0005\")"), "%s", dsl);
	cr_assert_not_null(strstr(dsl, "Memory32Fixed (ReadWrite,"), "%s", dsl);
	cr_assert_not_null(strstr(dsl, "0xD0000200,         // Address Base"), "%s", dsl);
	cr_assert_not_null(strstr(dsl, "Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive, ,, )"),
			   "%s", dsl);
	cr_assert_not_null(strstr(dsl, "0x00000006,"), "%s", dsl);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
