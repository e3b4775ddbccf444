/* SPDX-License-Identifier: MIT */
/*
 * Shared part of the boot-protocol test guests: fw_cfg, ACPI, the memory
 * map check, and the way into the runtime. Everything here runs once in
 * ring 0, so it is kept short (ring 0 is emulated on kvm_pvm).
 */
#include "boot.h"
#include "rt_internal.h"

#include <perfvisor/legacy_boot.h>

#define FWCFG_SEL 0x510
#define FWCFG_DATA 0x511
#define IOAPIC_BASE 0xfec00000u
#define UART 0x3f8
#define VEC_UART 0x22

static struct pv_bootinfo boot_bi;

void fwcfg_read(uint16_t key, void *buf, uint32_t len)
{
	uint8_t *p = buf;

	outw(FWCFG_SEL, key);
	for (uint32_t i = 0; i < len; i++)
		p[i] = inb(FWCFG_DATA);
}

static uint32_t fwcfg_u32(uint16_t key, uint32_t len)
{
	uint32_t v = 0;

	fwcfg_read(key, &v, len);
	return v;
}

static bool acpi_sum_ok(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	for (uint32_t i = 0; i < len; i++)
		s += b[i];
	return s == 0;
}

struct madt_info {
	bool ok;
	uint32_t nr_cpus, ioapic_addr, nr_ioapics;
	uint32_t apic_ids[PV_MAX_CPUS];
};

/* RSDP (revision 0) -> RSDT -> "APIC": the CPUs and the IOAPIC. */
static void parse_madt(uint64_t rsdp, struct madt_info *m)
{
	const uint8_t *r = (const uint8_t *)(uintptr_t)rsdp;
	const uint8_t *rsdt, *madt = NULL;
	uint32_t rsdt_len, madt_len;

	memset(m, 0, sizeof(*m));
	if (!rsdp || memcmp(r, "RSD PTR ", 8) || !acpi_sum_ok(r, 20))
		return;
	rsdt = (const uint8_t *)(uintptr_t) * (const uint32_t *)(r + 16);
	rsdt_len = *(const uint32_t *)(rsdt + 4);
	if (memcmp(rsdt, "RSDT", 4) || !acpi_sum_ok(rsdt, rsdt_len))
		return;
	for (uint32_t off = 36; off + 4 <= rsdt_len; off += 4) {
		const uint8_t *t = (const uint8_t *)(uintptr_t) * (const uint32_t *)(rsdt + off);

		if (!memcmp(t, "APIC", 4))
			madt = t;
	}
	if (!madt)
		return;
	madt_len = *(const uint32_t *)(madt + 4);
	if (!acpi_sum_ok(madt, madt_len) || *(const uint32_t *)(madt + 36) != PV_LB_LAPIC_GPA)
		return;
	for (uint32_t off = 44; off + 2 <= madt_len && madt[off + 1] >= 2; off += madt[off + 1]) {
		if (madt[off] == 0 && (madt[off + 4] & 1) && m->nr_cpus < PV_MAX_CPUS)
			m->apic_ids[m->nr_cpus++] = madt[off + 3];
		if (madt[off] == 1) {
			m->ioapic_addr = *(const uint32_t *)(madt + off + 4);
			m->nr_ioapics++;
		}
	}
	m->ok = true;
}

static uint64_t find_rsdp(void)
{
	/* As a kernel without a loader's hint would: scan the BIOS area on 16-byte steps. */
	for (uint64_t a = 0xe0000; a < 0x100000; a += 16)
		if (!memcmp((const void *)(uintptr_t)a, "RSD PTR ", 8))
			return a;
	return 0;
}

void boot_enter(const char *cmdline, const struct boot_range *map, unsigned n)
{
	struct pv_bootinfo *bi = &boot_bi;
	struct madt_info m;

	parse_madt(find_rsdp(), &m);
	bi->magic = PV_BOOTINFO_MAGIC;
	bi->version = PV_BOOTINFO_VERSION;
	bi->size = sizeof(*bi);
	bi->nr_cpus = m.nr_cpus ? m.nr_cpus : 1;
	for (uint32_t i = 0; i < m.nr_cpus; i++)
		bi->apic_ids[i] = m.apic_ids[i];
	bi->cmdline_gpa = (uintptr_t)cmdline;
	bi->cmdline_len = (uint32_t)strlen(cmdline);
	for (unsigned i = 0; i < n && i < PV_MEMMAP_MAX; i++) {
		bi->memmap[i] = (struct pv_memmap_entry){ map[i].base, map[i].len, map[i].type, 0 };
		if (map[i].type == 1 && map[i].base + map[i].len > bi->mem_size)
			bi->mem_size = map[i].base + map[i].len;
	}
	bi->nr_memmap = n < PV_MEMMAP_MAX ? n : PV_MEMMAP_MAX;
	rt_start(bi);
}

static const struct boot_range want_map[] = {
	{ 0, PV_LB_EBDA_GPA, 1 },
	{ PV_LB_EBDA_GPA, PV_LB_LOW_END - PV_LB_EBDA_GPA, 2 },
	{ PV_LB_BIOS_GPA, PV_LB_HIGH_GPA - PV_LB_BIOS_GPA, 2 },
	{ PV_LB_HIGH_GPA, 0, 1 }, /* up to the RAM size */
};

static void check_map(const struct boot_range *map, unsigned n, uint64_t ram)
{
	bool ok = n == 4;

	for (unsigned i = 0; ok && i < 4; i++) {
		uint64_t len = i == 3 ? ram - PV_LB_HIGH_GPA : want_map[i].len;

		ok = map[i].base == want_map[i].base && map[i].len == len && map[i].type == want_map[i].type;
	}
	for (unsigned i = 0; i < n; i++)
		printf("%s: memory map %u: 0x%lx-0x%lx type %u\n", boot_protocol, i, map[i].base,
		       map[i].base + map[i].len, map[i].type);
	report(ok, "%s: memory map: %u entries, the documented layout, RAM up to fw_cfg's 0x%lx",
	       boot_protocol, n, ram);
}

static volatile uint32_t uart_irqs;
static volatile uint8_t uart_iir;

static bool uart_irq(struct rt_regs *regs)
{
	(void)regs;
	uart_iir = inb(UART + 2); /* reading IIR acknowledges THRE: the line drops */
	uart_irqs++;
	apic_eoi();
	return true;
}

static bool uart_irq_seen(void *arg)
{
	(void)arg;
	return uart_irqs > 0;
}

static void ioapic_write(uint32_t reg, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)IOAPIC_BASE = reg;
	*(volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x10) = v;
}

/* The 16550's THRE interrupt, through IRQ 4 of the in-kernel IOAPIC, to this CPU. */
static void check_uart_irq(void)
{
	rt_set_handler(VEC_UART, uart_irq);
	apic_sw_enable(); /* a software-disabled LAPIC drops what the IOAPIC sends */
	ioapic_write(0x10 + 2 * 4 + 1, apic_read_id() << 24);
	ioapic_write(0x10 + 2 * 4, VEC_UART); /* fixed, edge, active high, unmasked */
	outb(UART + 4, 0x08);		      /* MCR: OUT2 gates the interrupt onto the bus */
	outb(UART + 1, 0x02);		      /* IER: THRE */
	rt_wait_irq(uart_irq_seen, NULL, 2000000);
	outb(UART + 1, 0);
	ioapic_write(0x10 + 2 * 4, 1u << 16); /* masked again */
	report(uart_irqs >= 1 && (uart_iir & 0x0f) == 0x02,
	       "%s: the UART's THRE interrupt arrives through IOAPIC pin 4 (%u interrupts, IIR 0x%x)",
	       boot_protocol, uart_irqs, uart_iir);
}

/* PIC: initialized and masked (but the cascade); PIT channel 0: counting. */
static void check_firmware_state(void)
{
	uint8_t imr1 = inb(0x21), imr2 = inb(0xa1);
	uint16_t c0, c1;

	report(imr1 == 0xfb && imr2 == 0xff, "%s: PIC masks 0x%x/0x%x, as firmware leaves them (0xfb/0xff)",
	       boot_protocol, imr1, imr2);
	outb(0x43, 0x00); /* latch counter 0 */
	c0 = inb(0x40);
	c0 |= (uint16_t)(inb(0x40) << 8);
	udelay(2000);
	outb(0x43, 0x00);
	c1 = inb(0x40);
	c1 |= (uint16_t)(inb(0x40) << 8);
	report(c0 != c1, "%s: PIT channel 0 counts (0x%x, then 0x%x)", boot_protocol, c0, c1);
}

static volatile uint32_t ap_seen[PV_MAX_CPUS];

static void ap_fn(uint32_t cpu, void *arg)
{
	(void)arg;
	ap_seen[cpu] = apic_read_id() + 1;
}

static long ring3_add(void *arg)
{
	return (long)(uintptr_t)arg + 1;
}

void boot_check_common(const struct boot_range *map, unsigned n, uint64_t rsdp)
{
	char sig[5] = { 0 };
	uint64_t ram = 0;
	uint32_t cpus, started, ok_ids = 0;
	struct madt_info m;
	long r3 = 0;

	fwcfg_read(0x0000, sig, 4);
	fwcfg_read(0x0003, &ram, 8);
	cpus = fwcfg_u32(0x0005, 2);
	report(!memcmp(sig, "QEMU", 4) && fwcfg_u32(0x0001, 4) == 1 && fwcfg_u32(0x0019, 4) == 0,
	       "%s: fw_cfg signature '%s', id %u, %u files", boot_protocol, sig, fwcfg_u32(0x0001, 4),
	       fwcfg_u32(0x0019, 4));
	printf("%s: fw_cfg: %u CPUs, %lu MiB of RAM\n", boot_protocol, cpus, ram >> 20);
	check_map(map, n, ram);

	parse_madt(rsdp, &m);
	report(rsdp == PV_LB_RSDP_GPA && rsdp == find_rsdp() && m.ok,
	       "%s: ACPI RSDP at 0x%lx (BIOS-area scan agrees), RSDT and MADT checksums", boot_protocol,
	       rsdp);
	for (uint32_t i = 0; i < m.nr_cpus; i++)
		ok_ids += m.apic_ids[i] == i;
	report(m.nr_cpus == cpus && ok_ids == cpus && m.nr_ioapics == 1 && m.ioapic_addr == IOAPIC_BASE,
	       "%s: MADT: %u LAPICs (fw_cfg says %u), APIC ids 0..%u, IOAPIC at 0x%x", boot_protocol,
	       m.nr_cpus, cpus, m.nr_cpus - 1, m.ioapic_addr);
	check_firmware_state();
	check_uart_irq();
	report(rt_run_user(ring3_add, (void *)41, &r3, NULL) == RT_NO_FAULT && r3 == 42, "%s: ring 3 runs",
	       boot_protocol);
	started = smp_start_aps(ap_fn, NULL);
	smp_wait_aps(10000);
	ok_ids = 0;
	for (uint32_t i = 1; i < rt_nr_cpus(); i++)
		ok_ids += ap_seen[i] == smp_apic_id(i) + 1;
	report(started == cpus - 1 && ok_ids == cpus - 1,
	       "%s: %u of %u APs started (INIT/SIPI), each with its APIC id", boot_protocol, started,
	       cpus - 1);
	printf("%s: %u CPUs online\n", boot_protocol, started + 1);
}
