// SPDX-License-Identifier: MIT
/*
 * Minimal ACPI for the multiboot, PVH and Linux protocols: an RSDP
 * (revision 0) pointing to an RSDT with one table, the MADT, which lists
 * every CPU's local APIC (APIC id = vCPU index) and KVM's IOAPIC. Enough for
 * a kernel to find its CPUs and interrupt controllers. Pure.
 */
#include "machine/machine.h"

#include <errno.h>
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

_Static_assert(sizeof(struct acpi_header) == 36, "acpi header");
_Static_assert(sizeof(struct acpi_rsdp) == 20, "rsdp");
_Static_assert(sizeof(struct madt_lapic) == 8, "madt lapic");
_Static_assert(sizeof(struct madt_ioapic) == 12, "madt ioapic");

#define MADT_PCAT_COMPAT 1u /* there are 8259 PICs too */

static uint8_t checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return (uint8_t)-sum;
}

static void header(struct acpi_header *h, const char *sig, uint32_t len)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->signature, sig, 4);
	h->length = len;
	h->revision = 1;
	memcpy(h->oem_id, "PRFVSR", 6);
	memcpy(h->oem_table_id, "PERFVISR", 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, "PRFV", 4);
	h->creator_revision = 1;
}

int acpi_build(struct gmem *mem, uint64_t rsdp_gpa, uint64_t end, unsigned nr_cpus)
{
	uint64_t rsdt_gpa = rsdp_gpa + 0x40, madt_gpa = rsdt_gpa + 0x40;
	uint32_t madt_len = (uint32_t)(sizeof(struct acpi_header) + 8 + nr_cpus * sizeof(struct madt_lapic) +
				       sizeof(struct madt_ioapic));
	uint32_t rsdt_len = sizeof(struct acpi_header) + 4;
	struct acpi_rsdp *rsdp;
	uint8_t *rsdt, *madt, *p;

	if (madt_gpa + madt_len > end || end > 0x100000000ULL ||
	    !(rsdp = gmem_hva(mem, rsdp_gpa, sizeof(*rsdp))) || !(rsdt = gmem_hva(mem, rsdt_gpa, rsdt_len)) ||
	    !(madt = gmem_hva(mem, madt_gpa, madt_len)))
		return -ENOSPC;

	header((struct acpi_header *)madt, "APIC", madt_len);
	p = madt + sizeof(struct acpi_header);
	*(uint32_t *)p = (uint32_t)PV_LB_LAPIC_GPA;
	*(uint32_t *)(p + 4) = MADT_PCAT_COMPAT;
	p += 8;
	for (unsigned i = 0; i < nr_cpus; i++, p += sizeof(struct madt_lapic))
		*(struct madt_lapic *)p =
			(struct madt_lapic){ 0, sizeof(struct madt_lapic), (uint8_t)i, (uint8_t)i, 1 };
	/* KVM's in-kernel IOAPIC: id 0, GSIs 0-23 */
	*(struct madt_ioapic *)p =
		(struct madt_ioapic){ 1, sizeof(struct madt_ioapic), 0, 0, (uint32_t)PV_LB_IOAPIC_GPA, 0 };
	((struct acpi_header *)madt)->checksum = checksum(madt, madt_len);

	header((struct acpi_header *)rsdt, "RSDT", rsdt_len);
	*(uint32_t *)(rsdt + sizeof(struct acpi_header)) = (uint32_t)madt_gpa;
	((struct acpi_header *)rsdt)->checksum = checksum(rsdt, rsdt_len);

	memset(rsdp, 0, sizeof(*rsdp));
	memcpy(rsdp->signature, "RSD PTR ", 8);
	memcpy(rsdp->oem_id, "PRFVSR", 6);
	rsdp->rsdt = (uint32_t)rsdt_gpa;
	rsdp->checksum = checksum(rsdp, sizeof(*rsdp));
	return 0;
}
