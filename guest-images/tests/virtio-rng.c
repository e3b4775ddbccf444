// SPDX-License-Identifier: MIT
/*
 * virtio-rng: finds perfvisor's virtio-mmio device at 0xd0000000 (--rng;
 * base=ADDR to look elsewhere), negotiates VERSION_1, sets up queue 0 of
 * 8 entries, and asks for random bytes `rounds` times (default 6; odd
 * rounds use a chain of two buffers), each time waiting in hlt for the
 * used ring to move and for its interrupt (IOAPIC pin 5, vector 0x22;
 * the guest runs with interrupts off, so one that came meanwhile waits in
 * the LAPIC and is taken in the wait):
 * checks the used element (id, length = every byte asked for) and that
 * the bytes are neither all equal nor a repeat of the last round's.
 * pause_ms=M: after half the rounds, print "virtio-rng: waiting" and sleep
 * M ms (a snapshot is taken meanwhile), then the rest. expect_absent:
 * there must be no device (perfvisor without --rng).
 */
#include "guest.h"

#define VECTOR 0x22
#define BUF 512

static struct vio_queue q;
static struct vio_dev dev;
static uint8_t buf[2][BUF] __attribute__((aligned(64)));
static uint8_t last[16];
static volatile uint32_t irqs, isr_seen;

static bool on_irq(struct rt_regs *regs)
{
	uint32_t s = vio_read(&dev, 0x060);

	(void)regs;
	vio_write(&dev, 0x064, s);
	isr_seen |= s;
	irqs++;
	apic_eoi();
	return true;
}

struct check {
	uint32_t len;
	uint32_t distinct; /* out: bytes unlike the first one */
	bool repeat;	   /* out: the first 16 bytes equal the last round's */
};

/* Ring 3: look at the bytes (the chain's two buffers are contiguous in buf). */
static long look(void *arg)
{
	struct check *c = arg;
	const uint8_t *p = &buf[0][0];

	c->distinct = 0;
	for (uint32_t i = 0; i < c->len; i++)
		c->distinct += p[i] != p[0];
	c->repeat = !memcmp(p, last, sizeof(last));
	memcpy(last, p, sizeof(last));
	return 0;
}

static bool irq_count_passed(void *arg)
{
	return irqs > (uint32_t)(uintptr_t)arg;
}

static void round_trip(uint32_t i)
{
	uint32_t a = 16 + 37 * i % 200, b = i & 1 ? 24 + 11 * i : 0, slot = i % dev.num;
	struct check c = { .len = a + b };
	uint32_t irqs_before = irqs;
	bool used;

	memset(buf, 0, sizeof(buf));
	q.desc[0] =
		(struct vio_desc){ (uintptr_t)&buf[0][0], a, VIO_DESC_WRITE | (b ? VIO_DESC_NEXT : 0), 1 };
	q.desc[1] = (struct vio_desc){ (uintptr_t)&buf[0][a], b, VIO_DESC_WRITE, 0 };
	vio_offer(&dev, 0);
	used = vio_wait_used(&dev, (uint16_t)(i + 1), 10000000);
	report(used, "round %u: request of %u bytes%s answered", i, a + b, b ? " in two buffers" : "");
	if (!used)
		return;
	report(q.used_ring[slot].id == 0 && q.used_ring[slot].len == a + b, "round %u: used id %u, length %u",
	       i, q.used_ring[slot].id, q.used_ring[slot].len);
	rt_user_call(look, &c);
	report(c.distinct >= c.len / 2 && !c.repeat, "round %u: random bytes (%u of %u unlike the first)", i,
	       c.distinct, c.len);
	report(rt_wait_irq(irq_count_passed, (void *)(uintptr_t)irqs_before, 2000000),
	       "round %u: its interrupt (%u so far)", i, irqs);
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

int main(const struct pv_bootinfo *bi)
{
	uint32_t rounds = (uint32_t)cmdline_get_u64("rounds", 6),
		 pause_ms = (uint32_t)cmdline_get_u64("pause_ms", 0);
	uint32_t st, half = rounds / 2;

	(void)bi;
	dev.base = cmdline_get_u64("base", VIO_BASE);
	if (cmdline_has("expect_absent")) {
		report(vio_read(&dev, 0x000) != 0x74726976, "no virtio device at 0x%lx without --rng",
		       (unsigned long)dev.base);
		return report_summary();
	}
	if (!vio_probe(&dev, 4)) {
		report(false, "virtio-rng at 0x%lx (magic 0x%x, version %u, device %u)",
		       (unsigned long)dev.base, vio_read(&dev, 0), vio_read(&dev, 4), vio_read(&dev, 8));
		return report_summary();
	}
	report(true, "virtio-rng at 0x%lx: magic, version 2, device id 4", (unsigned long)dev.base);
	vio_write(&dev, 0x014, 1);
	report(vio_read(&dev, 0x010) & 1, "VERSION_1 offered");
	st = vio_negotiate(&dev, 1, 0);
	report(st == (VIO_ST_ACK | VIO_ST_DRIVER | VIO_ST_FEATURES_OK), "FEATURES_OK kept (status 0x%x)", st);
	vio_write(&dev, 0x030, 0);
	report(vio_read(&dev, 0x034) >= 8, "queue 0 holds %u entries at most", vio_read(&dev, 0x034));
	report(vio_queue_setup(&dev, &q, 8), "queue 0 ready");
	vio_write(&dev, 0x070, st | VIO_ST_DRIVER_OK);
	rt_set_handler(VECTOR, on_irq);
	vio_ioapic_route(VIO_GSI, VECTOR, smp_apic_id(0));
	for (uint32_t i = 0; i < half; i++)
		round_trip(i);
	if (pause_ms) {
		printf("virtio-rng: waiting %u ms\n", pause_ms);
		rt_wait_irq(never, NULL, (uint64_t)pause_ms * 1000);
		printf("virtio-rng: going on\n");
	}
	for (uint32_t i = half; i < rounds; i++)
		round_trip(i);
	report(isr_seen == 1, "InterruptStatus showed used-buffer interrupts only (0x%x)", isr_seen);
	st = vio_read(&dev, 0x070);
	report(st == 0xf, "status 0x%x: DRIVER_OK, no NEEDS_RESET", st);
	printf("virtio-rng: done, %u interrupts\n", irqs);
	return report_summary();
}
