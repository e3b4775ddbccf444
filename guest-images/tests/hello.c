/* SPDX-License-Identifier: MIT */
/*
 * hello: the smallest test. Greets on the raw serial port and through
 * printf (ucall PRINT), shows and validates the boot information.
 */
#include "guest.h"

extern char _start_image[], _end[]; /* guest.ld */

static bool ram_covers(const struct pv_bootinfo *bi, uint64_t start, uint64_t end)
{
	for (uint32_t i = 0; i < bi->nr_memmap && i < PV_MEMMAP_MAX; i++) {
		const struct pv_memmap_entry *e = &bi->memmap[i];

		if (e->type == PV_MEM_RAM && e->base <= start && e->base + e->len >= end)
			return true;
	}
	return false;
}

static uint64_t ram_end(const struct pv_bootinfo *bi)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < bi->nr_memmap && i < PV_MEMMAP_MAX; i++) {
		const struct pv_memmap_entry *e = &bi->memmap[i];

		if (e->type == PV_MEM_RAM && e->base + e->len > end)
			end = e->base + e->len;
	}
	return end;
}

static void check_bootinfo(const struct pv_bootinfo *bi)
{
	const char *cmdline = (const char *)(uintptr_t)bi->cmdline_gpa;

	report(bi->version == PV_BOOTINFO_VERSION, "bootinfo version %u", bi->version);
	report(bi->size >= sizeof(*bi), "bootinfo size %u", bi->size);
	report(bi->nr_cpus >= 1 && bi->nr_cpus <= PV_MAX_CPUS, "nr_cpus %u in 1..%u", bi->nr_cpus,
	       PV_MAX_CPUS);
	report(bi->apic_ids[0] == bi->bsp_apic_id && apic_read_id() == bi->bsp_apic_id,
	       "boot CPU APIC id %u (LAPIC says %u)", bi->bsp_apic_id, apic_read_id());
	report(bi->nr_memmap >= 1 && bi->nr_memmap <= PV_MEMMAP_MAX, "nr_memmap %u", bi->nr_memmap);
	for (uint32_t i = 0; i < bi->nr_memmap && i < PV_MEMMAP_MAX; i++)
		printf("  memmap[%u]: 0x%08lx-0x%08lx type %u\n", i, bi->memmap[i].base,
		       bi->memmap[i].base + bi->memmap[i].len, bi->memmap[i].type);
	report(ram_covers(bi, (uintptr_t)_start_image, (uintptr_t)_end),
	       "a RAM entry covers the image 0x%lx-0x%lx", (uintptr_t)_start_image, (uintptr_t)_end);
	report(ram_end(bi) == bi->mem_size, "RAM ends at mem_size 0x%lx", bi->mem_size);
	report(bi->cmdline_gpa == PV_CMDLINE_GPA && strnlen(cmdline, PV_CMDLINE_MAX) == bi->cmdline_len,
	       "cmdline at 0x%lx, %u bytes", bi->cmdline_gpa, bi->cmdline_len);
	report(bi->host_kind > PV_HOST_UNKNOWN && bi->host_kind < PV_HOST_KIND_NR,
	       "host kind %u (%s) is a known kind", bi->host_kind, rt_host_name());
	report((bi->host_flags & ~PV_HOST_NESTED) == 0, "host flags 0x%lx: no unknown bits", bi->host_flags);
}

int main(const struct pv_bootinfo *bi)
{
	serial_puts("Hello from perfvisor guest (serial)\n");
	printf("Hello from perfvisor guest (printf)\n");

	if (!rt_bootinfo()) {
		report(false, "bootinfo magic 0x%lx at %p", bi ? bi->magic : 0, (const void *)bi);
		return report_summary();
	}
	printf("nr_cpus=%u mem_size=%lu (%lu MiB) tsc_khz=%u host=%s%s\n", bi->nr_cpus, bi->mem_size,
	       bi->mem_size >> 20, bi->tsc_khz, rt_host_name(),
	       bi->host_flags & PV_HOST_NESTED ? " (nested)" : "");
	printf("cmdline: \"%s\"\n", cmdline_raw());
	report(true, "bootinfo magic");
	check_bootinfo(bi);
	return report_summary();
}
