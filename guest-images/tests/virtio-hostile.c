// SPDX-License-Identifier: MIT
/*
 * virtio-hostile: a driver that breaks the rules of virtio-rng (--rng) on
 * purpose. Each malformed chain (a descriptor loop, a chain longer than
 * the queue, a buffer outside RAM or wrapping the address space, lengths
 * that overflow 32 bits) must come back on the used ring with length 0
 * while the device keeps working; a broken queue (size not a power of
 * two, rings outside RAM, avail idx jumping ahead, a head beyond the
 * queue) must set DEVICE_NEEDS_RESET (and raise a configuration
 * interrupt) until a reset; notifications of queues never set up and a
 * reset in the middle of requests change nothing for later requests.
 * After each case a good request must still be answered. flood=N: N
 * descriptor loops more (default 200), for the log's rate limit.
 */
#include "guest.h"

#define VECTOR 0x22
#define WAIT_US 10000000

static struct vio_queue q;
static struct vio_dev dev;
static uint8_t buf[256] __attribute__((aligned(64)));
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

/* Reset and bring the device up with queue 0 of num entries: true if it is DRIVER_OK and ready. */
static bool fresh(uint16_t num)
{
	uint32_t st = vio_negotiate(&dev, 1, 0);
	bool ready = vio_queue_setup(&dev, &q, num);

	vio_write(&dev, 0x070, st | VIO_ST_DRIVER_OK);
	isr_seen = 0;
	return ready && vio_read(&dev, 0x070) == 0xf;
}

static uint32_t used_len(uint16_t idx)
{
	return q.used_ring[(uint16_t)(idx - 1) % dev.num].len;
}

/* Offer chain 0 as it is in q.desc, wait for it: its used length, or ~0 if it never came back. */
static uint32_t submit(void)
{
	vio_offer(&dev, 0);
	if (!vio_wait_used(&dev, dev.next_avail, WAIT_US))
		return ~0u;
	return used_len(dev.next_avail);
}

/* One good request through descriptor 0: answered with its full length. */
static bool good(void)
{
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 64, VIO_DESC_WRITE, 0 };
	return submit() == 64;
}

static bool needs_reset(void *arg)
{
	(void)arg;
	return vio_read(&dev, 0x070) & VIO_ST_NEEDS_RESET;
}

static void bad_chain(const char *what)
{
	uint32_t len = submit();

	report(len == 0, "%s: given back with length 0 (got 0x%x)", what, len);
	report(!(vio_read(&dev, 0x070) & VIO_ST_NEEDS_RESET) && good(), "%s: the device still serves", what);
}

static bool config_irq(void *arg)
{
	(void)arg;
	return isr_seen & 2;
}

static void broken_queue(const char *what)
{
	report(rt_wait_irq(needs_reset, NULL, WAIT_US), "%s: DEVICE_NEEDS_RESET", what);
	report(rt_wait_irq(config_irq, NULL, 2000000), "%s: a configuration change interrupt (0x%x)", what,
	       isr_seen);
	report(fresh(8) && good(), "%s: served again after a reset", what);
}

static void chains(void)
{
	uint64_t mem = rt_mem_size();

	fresh(8);
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE | VIO_DESC_NEXT, 0 };
	bad_chain("descriptor loop");
	for (uint16_t i = 0; i < 8; i++)
		q.desc[i] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE | VIO_DESC_NEXT,
					       (uint16_t)((i + 1) % 8) };
	bad_chain("chain longer than the queue");
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE | VIO_DESC_NEXT, 9 };
	bad_chain("next beyond the queue");
	q.desc[0] = (struct vio_desc){ mem + 4096, 64, VIO_DESC_WRITE, 0 };
	bad_chain("buffer outside RAM");
	q.desc[0] = (struct vio_desc){ mem - 32, 64, VIO_DESC_WRITE, 0 };
	bad_chain("buffer across the end of RAM");
	q.desc[0] = (struct vio_desc){ 0xfffffffffffff000ULL, 0x2000, VIO_DESC_WRITE, 0 };
	bad_chain("buffer wrapping the address space");
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 0xffffffffu, VIO_DESC_WRITE, 0 };
	bad_chain("length 0xffffffff");
	q.desc[0] = (struct vio_desc){ 0, 0x80000000u, VIO_DESC_WRITE | VIO_DESC_NEXT, 1 };
	q.desc[1] = (struct vio_desc){ 0, 0x80000000u, VIO_DESC_WRITE, 0 };
	bad_chain("two 2 GiB buffers (lengths overflow 32 bits)");
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE | VIO_DESC_NEXT, 1 };
	q.desc[1] = (struct vio_desc){ (uintptr_t)buf, 8, 0, 0 };
	bad_chain("readable after writable");
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 16, 4 /* INDIRECT, not negotiated */, 0 };
	bad_chain("indirect descriptor not negotiated");
}

static void queues(void)
{
	/* A queue size that is not a power of two: QueueReady stays 0, the device needs a reset. */
	vio_negotiate(&dev, 1, 0);
	report(!vio_queue_setup(&dev, &q, 6), "queue size 6: not made ready");
	isr_seen = 0;
	report(vio_read(&dev, 0x070) & VIO_ST_NEEDS_RESET, "queue size 6: DEVICE_NEEDS_RESET");
	vio_write(&dev, 0x070, 0);
	report(vio_read(&dev, 0x070) == 0, "status 0 after a reset");
	report(fresh(8) && good(), "queue size 6: served again after a reset");

	/* Rings outside RAM. */
	vio_negotiate(&dev, 1, 0);
	vio_write(&dev, 0x030, 0);
	vio_write(&dev, 0x038, 8);
	vio_write(&dev, 0x080, (uint32_t)rt_mem_size());
	vio_write(&dev, 0x044, 1);
	report(vio_read(&dev, 0x044) == 0 && (vio_read(&dev, 0x070) & VIO_ST_NEEDS_RESET),
	       "descriptor table outside RAM: not ready, DEVICE_NEEDS_RESET");
	report(fresh(8) && good(), "rings outside RAM: served again after a reset");

	/* avail idx more than a queue's worth ahead. */
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE, 0 };
	dev.next_avail += 20;
	vio_offer(&dev, 0);
	broken_queue("avail idx 21 ahead");

	/* An avail entry naming a descriptor beyond the queue. */
	vio_offer(&dev, 200);
	broken_queue("head 200 in a queue of 8");
}

static void notifies_and_resets(void)
{
	/* Notifications of a queue not set up, and of queues that do not exist. */
	vio_negotiate(&dev, 1, 0);
	vio_write(&dev, 0x050, 0);
	vio_write(&dev, 0x050, 1);
	vio_write(&dev, 0x050, 0x12345);
	report(!(vio_read(&dev, 0x070) & VIO_ST_NEEDS_RESET), "notify of queues never set up: ignored");
	report(fresh(8) && good(), "notify of queues never set up: the device serves after");

	/* A reset while requests are outstanding: the device forgets them and serves after set-up. */
	for (uint16_t i = 0; i < 4; i++)
		q.desc[i] = (struct vio_desc){ (uintptr_t)buf + 32 * i, 32, VIO_DESC_WRITE, 0 };
	for (uint16_t i = 0; i < 4; i++)
		vio_offer(&dev, i);
	vio_write(&dev, 0x070, 0);
	report(vio_read(&dev, 0x070) == 0 && vio_read(&dev, 0x044) == 0,
	       "reset in the middle: status 0, queue not ready");
	report(fresh(8) && good(), "reset in the middle: served again after set-up");
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static void flood(uint32_t n)
{
	uint32_t dropped = 0;

	fresh(8);
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE | VIO_DESC_NEXT, 0 };
	for (uint32_t i = 0; i < n; i += 8) {
		for (uint32_t k = 0; k < 7; k++) {
			q.avail_ring[dev.next_avail % dev.num] = 0;
			dev.next_avail++;
		}
		vio_offer(&dev, 0); /* the eighth, and the notification: a queue's worth of loops */
		if (!vio_wait_used(&dev, dev.next_avail, WAIT_US))
			break;
		for (uint32_t k = 0; k < 8; k++)
			dropped += q.used_ring[k].len == 0;
	}
	report(dropped >= n, "flood: %u descriptor loops given back empty", dropped);
	report(good(), "flood: the device still serves");
	/* A second later the log takes a line again, saying how many it left out. */
	rt_wait_irq(never, NULL, 1100000);
	q.desc[0] = (struct vio_desc){ (uintptr_t)buf, 8, VIO_DESC_WRITE | VIO_DESC_NEXT, 0 };
	bad_chain("descriptor loop after the flood");
}

int main(const struct pv_bootinfo *bi)
{
	(void)bi;
	dev.base = cmdline_get_u64("base", VIO_BASE);
	if (!vio_probe(&dev, 4)) {
		report(false, "virtio-rng at 0x%lx", (unsigned long)dev.base);
		return report_summary();
	}
	rt_set_handler(VECTOR, on_irq);
	vio_ioapic_route(VIO_GSI, VECTOR, smp_apic_id(0));
	report(fresh(8) && good(), "a good request first");
	chains();
	queues();
	notifies_and_resets();
	flood((uint32_t)cmdline_get_u64("flood", 200));
	printf("virtio-hostile: done, %u interrupts\n", irqs);
	return report_summary();
}
