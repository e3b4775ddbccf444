// SPDX-License-Identifier: MIT
/*
 * A minimal virtio-mmio driver for test guests: probe, feature
 * negotiation, one split queue in a page, making chains available, and
 * an IOAPIC route for the device's interrupt. Ring 0; every register
 * access is one MMIO exit (or none for QueueNotify, an ioeventfd).
 */
#include "guest.h"
#include "rt_internal.h"

_Static_assert(__builtin_offsetof(struct vio_queue, avail_flags) == 0x100, "avail at 0x100");
_Static_assert(__builtin_offsetof(struct vio_queue, used_flags) == 0x200, "used at 0x200");

#define IOAPIC_BASE 0xfec00000ULL

uint32_t vio_read(const struct vio_dev *d, uint32_t off)
{
	return *(volatile uint32_t *)(uintptr_t)(d->base + off);
}

void vio_write(const struct vio_dev *d, uint32_t off, uint32_t val)
{
	*(volatile uint32_t *)(uintptr_t)(d->base + off) = val;
}

uint32_t vio_irq_ack(const struct vio_dev *d)
{
	uint32_t causes = vio_read(d, 0x060); /* InterruptStatus */

	vio_write(d, 0x064, causes); /* InterruptACK */
	return causes;
}

bool vio_probe(const struct vio_dev *d, uint32_t device_id)
{
	return vio_read(d, 0x000) == 0x74726976 && vio_read(d, 0x004) == 2 && vio_read(d, 0x008) == device_id;
}

uint32_t vio_negotiate(struct vio_dev *d, uint32_t hi, uint32_t lo)
{
	vio_write(d, 0x070, 0);
	vio_write(d, 0x070, VIO_ST_ACK);
	vio_write(d, 0x070, VIO_ST_ACK | VIO_ST_DRIVER);
	vio_write(d, 0x024, 1);
	vio_write(d, 0x020, hi);
	vio_write(d, 0x024, 0);
	vio_write(d, 0x020, lo);
	vio_write(d, 0x070, VIO_ST_ACK | VIO_ST_DRIVER | VIO_ST_FEATURES_OK);
	return vio_read(d, 0x070);
}

bool vio_queue_setup(struct vio_dev *d, struct vio_queue *q, uint16_t num)
{
	uint64_t a = (uintptr_t)q;

	memset(q, 0, sizeof(*q));
	d->q = q;
	d->num = num;
	d->next_avail = 0;
	vio_write(d, 0x030, d->qi);
	vio_write(d, 0x038, num);
	vio_write(d, 0x080, (uint32_t)a);
	vio_write(d, 0x084, (uint32_t)(a >> 32));
	vio_write(d, 0x090, (uint32_t)(a + 0x100));
	vio_write(d, 0x094, (uint32_t)((a + 0x100) >> 32));
	vio_write(d, 0x0a0, (uint32_t)(a + 0x200));
	vio_write(d, 0x0a4, (uint32_t)((a + 0x200) >> 32));
	vio_write(d, 0x044, 1);
	return vio_read(d, 0x044) == 1;
}

void vio_offer(struct vio_dev *d, uint16_t head)
{
	d->q->avail_ring[d->next_avail % d->num] = head;
	d->next_avail++;
	/* The entry (and the descriptors) before the idx the device reads. */
	__atomic_store_n(&d->q->avail_idx, d->next_avail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vio_write(d, 0x050, d->qi);
}

static void ioapic_write(uint32_t reg, uint32_t val)
{
	*(volatile uint32_t *)(uintptr_t)IOAPIC_BASE = reg;
	*(volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x10) = val;
}

void vio_ioapic_route(uint32_t gsi, uint8_t vector, uint32_t apic_id)
{
	outb(0x21, 0xff); /* the PICs see the line too: keep them quiet */
	outb(0xa1, 0xff);
	ioapic_write(0x11 + 2 * gsi, apic_id << 24);
	ioapic_write(0x10 + 2 * gsi, vector); /* fixed, physical, active high, edge, unmasked */
	apic_sw_enable(); /* a software-disabled LAPIC drops fixed interrupts: the first one too */
}

struct used_wait {
	struct vio_dev *d;
	uint16_t idx;
};

static bool used_reached(void *arg)
{
	struct used_wait *w = arg;

	return __atomic_load_n(&w->d->q->used_idx, __ATOMIC_ACQUIRE) == w->idx;
}

bool vio_wait_used(struct vio_dev *d, uint16_t idx, uint64_t timeout_us)
{
	struct used_wait w = { d, idx };

	return rt_wait_irq(used_reached, &w, timeout_us);
}
