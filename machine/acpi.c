// SPDX-License-Identifier: MIT
/*
 * ACPI for the multiboot, PVH and Linux protocols: RSDP (revision 0) ->
 * RSDT -> MADT (every CPU's local APIC, KVM's IOAPIC, the SCI's override)
 * and FADT -> FACS, DSDT. The FADT is a full one (not hardware-reduced, so
 * Linux keeps its PC timers): the PM1a blocks, PM timer and reset register
 * of devices/acpipm.c, no i8042, a CMOS RTC with a century register. The
 * DSDT holds \_S5 and the MMIO devices the caller lists. Pure.
 */
#include "machine/machine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "perfvisor/legacy_boot.h"

struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision, checksum;
	char oem_id[6], oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));

struct acpi_rsdp {
	char signature[8]; /* "RSD PTR " */
	uint8_t checksum;
	char oem_id[6];
	uint8_t revision; /* 0: ACPI 1.0, RSDT only */
	uint32_t rsdt;
} __attribute__((packed));

struct madt_lapic {
	uint8_t type, length, processor_id, apic_id;
	uint32_t flags; /* bit 0: enabled */
} __attribute__((packed));

struct madt_ioapic {
	uint8_t type, length, id, reserved;
	uint32_t address, gsi_base;
} __attribute__((packed));

struct madt_override {
	uint8_t type, length, bus, source;
	uint32_t gsi;
	uint16_t flags; /* bits 0-1 polarity, 2-3 trigger mode */
} __attribute__((packed));

struct acpi_gas {
	uint8_t space, bit_width, bit_offset, access_size;
	uint64_t address;
} __attribute__((packed));

/* ACPI 6.0's FADT (revision 6). */
struct acpi_fadt {
	struct acpi_header h;
	uint32_t firmware_ctrl, dsdt;
	uint8_t reserved0, preferred_pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable, acpi_disable, s4bios_req, pstate_cnt;
	uint32_t pm1a_evt_blk, pm1b_evt_blk, pm1a_cnt_blk, pm1b_cnt_blk, pm2_cnt_blk, pm_tmr_blk;
	uint32_t gpe0_blk, gpe1_blk;
	uint8_t pm1_evt_len, pm1_cnt_len, pm2_cnt_len, pm_tmr_len, gpe0_blk_len, gpe1_blk_len, gpe1_base;
	uint8_t cst_cnt;
	uint16_t p_lvl2_lat, p_lvl3_lat, flush_size, flush_stride;
	uint8_t duty_offset, duty_width, day_alrm, mon_alrm, century;
	uint16_t iapc_boot_arch;
	uint8_t reserved1;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_version;
	uint64_t x_firmware_ctrl, x_dsdt;
	struct acpi_gas x_pm1a_evt_blk, x_pm1b_evt_blk, x_pm1a_cnt_blk, x_pm1b_cnt_blk, x_pm2_cnt_blk;
	struct acpi_gas x_pm_tmr_blk, x_gpe0_blk, x_gpe1_blk, sleep_control_reg, sleep_status_reg;
	uint64_t hypervisor_vendor;
} __attribute__((packed));

struct acpi_facs {
	char signature[4];
	uint32_t length;
	uint32_t hardware_signature, firmware_waking_vector, global_lock, flags;
	uint64_t x_firmware_waking_vector;
	uint8_t version, reserved[3];
	uint32_t ospm_flags;
	uint8_t reserved2[24];
} __attribute__((packed));

_Static_assert(sizeof(struct acpi_header) == 36, "acpi header");
_Static_assert(sizeof(struct acpi_rsdp) == 20, "rsdp");
_Static_assert(sizeof(struct madt_lapic) == 8, "madt lapic");
_Static_assert(sizeof(struct madt_ioapic) == 12, "madt ioapic");
_Static_assert(sizeof(struct madt_override) == 10, "madt interrupt source override");
_Static_assert(sizeof(struct acpi_gas) == 12, "generic address");
_Static_assert(offsetof(struct acpi_fadt, sci_int) == 46, "fadt sci_int");
_Static_assert(offsetof(struct acpi_fadt, pm1a_evt_blk) == 56, "fadt pm1a_evt_blk");
_Static_assert(offsetof(struct acpi_fadt, century) == 108, "fadt century");
_Static_assert(offsetof(struct acpi_fadt, flags) == 112, "fadt flags");
_Static_assert(offsetof(struct acpi_fadt, reset_reg) == 116, "fadt reset_reg");
_Static_assert(offsetof(struct acpi_fadt, x_dsdt) == 140, "fadt x_dsdt");
_Static_assert(offsetof(struct acpi_fadt, sleep_status_reg) == 256, "fadt sleep_status_reg");
_Static_assert(sizeof(struct acpi_fadt) == 276, "fadt revision 6");
_Static_assert(sizeof(struct acpi_facs) == 64, "facs");

#define MADT_PCAT_COMPAT 1u	   /* there are 8259 PICs too */
#define MADT_LEVEL_ACTIVE_HIGH 0xd /* polarity 01 (high), trigger 11 (level) */

#define FADT_WBINVD (1u << 0)
#define FADT_PROC_C1 (1u << 2)
#define FADT_PWR_BUTTON (1u << 4) /* no fixed power button */
#define FADT_SLP_BUTTON (1u << 5) /* no fixed sleep button */
#define FADT_RESET_REG_SUP (1u << 10)
#define BOOT_ARCH_NO_VGA (1u << 2) /* and no 8042 (bit 1), and a CMOS RTC (bit 5 clear) */
#define GAS_SYSTEM_IO 1
#define GAS_ACCESS_BYTE 1
#define RTC_CENTURY_REG 0x32

#define AML_RES_MEMORY32_FIXED 0x86
#define AML_RES_EXT_IRQ 0x89
#define AML_RES_END 0x79
#define EXT_IRQ_CONSUMER_EDGE_HIGH 0x03 /* consumer, edge-triggered, active high, exclusive */

static uint8_t checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return (uint8_t)-sum;
}

static void header(struct acpi_header *h, const char *sig, uint32_t len, uint8_t revision)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->signature, sig, 4);
	h->length = len;
	h->revision = revision;
	memcpy(h->oem_id, "PRFVSR", 6);
	memcpy(h->oem_table_id, "PERFVISR", 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, "PRFV", 4);
	h->creator_revision = 1;
}

static void seal(void *table)
{
	struct acpi_header *h = table;

	h->checksum = 0;
	h->checksum = checksum(h, h->length);
}

static void madt_fill(uint8_t *madt, uint32_t len, unsigned nr_cpus)
{
	uint8_t *p = madt + sizeof(struct acpi_header);

	header((struct acpi_header *)madt, "APIC", len, 1);
	*(uint32_t *)p = (uint32_t)PV_LB_LAPIC_GPA;
	*(uint32_t *)(p + 4) = MADT_PCAT_COMPAT;
	p += 8;
	for (unsigned i = 0; i < nr_cpus; i++, p += sizeof(struct madt_lapic))
		*(struct madt_lapic *)p =
			(struct madt_lapic){ 0, sizeof(struct madt_lapic), (uint8_t)i, (uint8_t)i, 1 };
	/* KVM's in-kernel IOAPIC: id 0, GSIs 0-23 */
	*(struct madt_ioapic *)p =
		(struct madt_ioapic){ 1, sizeof(struct madt_ioapic), 0, 0, (uint32_t)PV_LB_IOAPIC_GPA, 0 };
	p += sizeof(struct madt_ioapic);
	/* The SCI as a PC chipset wires it: level-triggered, and active high as KVM's line is driven. */
	*(struct madt_override *)p = (struct madt_override){ 2,
							     sizeof(struct madt_override),
							     0,
							     PV_LB_ACPI_SCI_IRQ,
							     PV_LB_ACPI_SCI_IRQ,
							     MADT_LEVEL_ACTIVE_HIGH };
	seal(madt);
}

static void fadt_fill(struct acpi_fadt *f, uint32_t facs, uint32_t dsdt)
{
	memset(f, 0, sizeof(*f));
	header(&f->h, "FACP", sizeof(*f), 6);
	f->firmware_ctrl = facs;
	f->dsdt = dsdt;
	f->sci_int = PV_LB_ACPI_SCI_IRQ;
	/* smi_cmd 0: no SMM, ACPI mode is the only mode (SCI_EN reads 1) */
	f->pm1a_evt_blk = PV_LB_ACPI_PM1_EVT;
	f->pm1a_cnt_blk = PV_LB_ACPI_PM1_CNT;
	f->pm_tmr_blk = PV_LB_ACPI_PM_TMR;
	f->pm1_evt_len = 4;
	f->pm1_cnt_len = 2;
	f->pm_tmr_len = 4;
	f->p_lvl2_lat = 101;  /* > 100: no C2 */
	f->p_lvl3_lat = 1001; /* > 1000: no C3 */
	f->century = RTC_CENTURY_REG;
	f->iapc_boot_arch = BOOT_ARCH_NO_VGA;
	f->flags = FADT_WBINVD | FADT_PROC_C1 | FADT_PWR_BUTTON | FADT_SLP_BUTTON | FADT_RESET_REG_SUP;
	f->reset_reg = (struct acpi_gas){ GAS_SYSTEM_IO, 8, 0, GAS_ACCESS_BYTE, PV_LB_ACPI_RESET };
	f->reset_value = PV_LB_ACPI_RESET_VALUE;
	/* The X_ blocks stay zero: the 32-bit fields say it all, and ACPICA derives the rest. */
	seal(f);
}

static void facs_fill(struct acpi_facs *f)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->signature, "FACS", 4);
	f->length = sizeof(*f);
	f->version = 2;
}

static bool hid_ok(const char *hid)
{
	size_t n = hid ? strlen(hid) : 0;

	if (n < 1 || n > 8)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((hid[i] >= 'A' && hid[i] <= 'Z') || (hid[i] >= '0' && hid[i] <= '9')))
			return false;
	return true;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Device(Dnnn) { _HID, _UID, _CRS: Memory32Fixed(ReadWrite, base, len), Interrupt(edge, high) } */
static int dsdt_device(struct aml *a, unsigned i, const struct acpi_mmio_dev *d)
{
	uint8_t crs[12 + 9 + 2];
	char name[8];
	size_t dev;

	if (!hid_ok(d->hid) || !d->len || d->base > 0xffffffffULL || d->base + d->len > 0x100000000ULL)
		return -EINVAL;
	snprintf(name, sizeof(name), "D%03X", i & 0xfff);
	dev = aml_device(a, name);
	aml_name_decl(a, "_HID");
	aml_string(a, d->hid);
	aml_name_decl(a, "_UID");
	aml_integer(a, d->uid);
	crs[0] = AML_RES_MEMORY32_FIXED;
	crs[1] = 9;
	crs[2] = 0;
	crs[3] = 1; /* read-write */
	put32(crs + 4, (uint32_t)d->base);
	put32(crs + 8, d->len);
	crs[12] = AML_RES_EXT_IRQ;
	crs[13] = 6;
	crs[14] = 0;
	crs[15] = EXT_IRQ_CONSUMER_EDGE_HIGH;
	crs[16] = 1; /* one interrupt */
	put32(crs + 17, d->gsi);
	crs[21] = AML_RES_END;
	crs[22] = 0; /* checksum 0: "treat as correct" */
	aml_name_decl(a, "_CRS");
	aml_buffer(a, crs, sizeof(crs));
	aml_close(a, dev);
	return 0;
}

/* The DSDT at `p` (room for `cap` bytes): its length, -ENOSPC or -EINVAL. */
static long dsdt_build(uint8_t *p, size_t cap, const struct acpi_mmio_dev *devs, unsigned nr_devs)
{
	struct aml a;
	size_t s;

	if (nr_devs > ACPI_MAX_MMIO_DEVS || (nr_devs && !devs))
		return -EINVAL;
	if (cap < sizeof(struct acpi_header))
		return -ENOSPC;
	aml_init(&a, p + sizeof(struct acpi_header), cap - sizeof(struct acpi_header));
	/* \_S5: SLP_TYPa, SLP_TYPb, reserved, reserved */
	aml_name_decl(&a, "\\_S5");
	s = aml_package(&a, 4);
	aml_integer(&a, PV_LB_ACPI_SLP_TYP_S5);
	aml_integer(&a, PV_LB_ACPI_SLP_TYP_S5);
	aml_integer(&a, 0);
	aml_integer(&a, 0);
	aml_close(&a, s);
	if (nr_devs) {
		s = aml_scope(&a, "\\_SB");
		for (unsigned i = 0; i < nr_devs; i++)
			if (dsdt_device(&a, i, &devs[i]))
				return -EINVAL;
		aml_close(&a, s);
	}
	if (a.failed || sizeof(struct acpi_header) + a.len > UINT32_MAX)
		return -ENOSPC;
	/* Revision 2: integers are 64 bits. */
	header((struct acpi_header *)p, "DSDT", (uint32_t)(sizeof(struct acpi_header) + a.len), 2);
	seal(p);
	return (long)(sizeof(struct acpi_header) + a.len);
}

static uint64_t align(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int acpi_build(struct gmem *mem, uint64_t rsdp_gpa, uint64_t end, unsigned nr_cpus,
	       const struct acpi_mmio_dev *devs, unsigned nr_devs)
{
	uint64_t rsdt_gpa = rsdp_gpa + 0x40, madt_gpa = rsdt_gpa + 0x40, facs_gpa, fadt_gpa, dsdt_gpa;
	uint32_t madt_len = (uint32_t)(sizeof(struct acpi_header) + 8 + nr_cpus * sizeof(struct madt_lapic) +
				       sizeof(struct madt_ioapic) + sizeof(struct madt_override));
	uint32_t rsdt_len = sizeof(struct acpi_header) + 2 * 4;
	struct acpi_rsdp *rsdp;
	uint8_t *rsdt, *madt, *dsdt;
	struct acpi_facs *facs;
	struct acpi_fadt *fadt;
	long dsdt_len;

	facs_gpa = align(madt_gpa + madt_len, 64);
	fadt_gpa = facs_gpa + sizeof(struct acpi_facs);
	dsdt_gpa = align(fadt_gpa + sizeof(struct acpi_fadt), 16);
	if (dsdt_gpa + sizeof(struct acpi_header) > end || end > 0x100000000ULL ||
	    !(rsdp = gmem_hva(mem, rsdp_gpa, sizeof(*rsdp))) || !(rsdt = gmem_hva(mem, rsdt_gpa, rsdt_len)) ||
	    !(madt = gmem_hva(mem, madt_gpa, madt_len)) || !(facs = gmem_hva(mem, facs_gpa, sizeof(*facs))) ||
	    !(fadt = gmem_hva(mem, fadt_gpa, sizeof(*fadt))) ||
	    !(dsdt = gmem_hva(mem, dsdt_gpa, end - dsdt_gpa)))
		return -ENOSPC;
	dsdt_len = dsdt_build(dsdt, end - dsdt_gpa, devs, nr_devs);
	if (dsdt_len < 0)
		return (int)dsdt_len;

	madt_fill(madt, madt_len, nr_cpus);
	facs_fill(facs);
	fadt_fill(fadt, (uint32_t)facs_gpa, (uint32_t)dsdt_gpa);

	header((struct acpi_header *)rsdt, "RSDT", rsdt_len, 1);
	put32(rsdt + sizeof(struct acpi_header), (uint32_t)madt_gpa);
	put32(rsdt + sizeof(struct acpi_header) + 4, (uint32_t)fadt_gpa);
	seal(rsdt);

	memset(rsdp, 0, sizeof(*rsdp));
	memcpy(rsdp->signature, "RSD PTR ", 8);
	memcpy(rsdp->oem_id, "PRFVSR", 6);
	rsdp->rsdt = (uint32_t)rsdt_gpa;
	rsdp->checksum = checksum(rsdp, sizeof(*rsdp));
	return 0;
}
