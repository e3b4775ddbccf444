// SPDX-License-Identifier: MIT
/*
 * Unit tests for the split virtqueue walker (devices/virtqueue.c) over a
 * fake guest RAM: good chains, indirect tables, wrapping indices, and
 * every hostile ring the walker must refuse without looping or leaving RAM.
 */
#include "devices/virtio_internal.h"

#include <criterion/criterion.h>
#include <string.h>

#define RAM (64u << 10)
#define DESC 0x1000u
#define AVAIL 0x2000u
#define USED 0x3000u
#define BUFS 0x8000u
#define IND 0x4000u

static uint8_t ram[RAM] __attribute__((aligned(4096)));
static uint64_t claimed = RAM; /* the size the fake says RAM has (overflow tests claim more) */

static void *fake_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	(void)opaque;
	if (gpa > claimed || len > claimed - gpa)
		return NULL;
	return gpa < RAM ? ram + gpa : ram; /* beyond the backing: never dereferenced by pop */
}

static const struct dev_host host = { .gpa_to_hva = fake_hva };
static struct virtq q;

static void setup(void)
{
	memset(ram, 0, sizeof(ram));
	claimed = RAM;
	q = (struct virtq){ .num = 8, .ready = true, .desc = DESC, .avail = AVAIL, .used = USED };
}

TestSuite(virtqueue, .init = setup);

static void desc(uint64_t table, unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = ram + table + 16 * i;

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static uint16_t *avail16(unsigned i)
{
	return (uint16_t *)(ram + AVAIL) + i;
}

/* Offer head at ring slot idx and make avail idx idx+1. */
static void offer(uint16_t idx, uint16_t head)
{
	*avail16(2 + (idx & (q.num - 1))) = head;
	*avail16(1) = (uint16_t)(idx + 1);
}

static enum vq_pop pop(struct vq_chain *c, enum vq_err *e, bool indirect)
{
	return vq_pop(&q, &host, indirect, c, e);
}

Test(virtqueue, validate_good_and_bad_sizes)
{
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_OK);
	q.num = 0;
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_SIZE);
	q.num = 3;
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_SIZE);
	q.num = 512;
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_SIZE);
	q.num = 8;
	q.desc = DESC + 8;
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_ALIGN);
	q.desc = DESC;
	q.used = USED + 2;
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_ALIGN);
	q.used = RAM - 16; /* 6 + 8 * 8 bytes do not fit */
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_RING);
	q.used = USED;
	q.desc = 0xfffffffffffffff0ULL; /* wraps */
	cr_assert_eq(vq_validate(&q, &host, 256), VQ_E_RING);
}

Test(virtqueue, empty)
{
	struct vq_chain c;
	enum vq_err e;

	cr_assert_eq(pop(&c, &e, false), VQ_POP_EMPTY);
}

Test(virtqueue, readable_then_writable_chain)
{
	struct vq_chain c;
	enum vq_err e;

	desc(DESC, 0, BUFS, 16, VRING_DESC_F_NEXT, 5);
	desc(DESC, 5, BUFS + 16, 100, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
	desc(DESC, 2, BUFS + 200, 28, VRING_DESC_F_WRITE, 0);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_CHAIN);
	cr_assert_eq(c.head, 0);
	cr_assert_eq(c.n, 3);
	cr_assert_eq(c.nr_read, 1);
	cr_assert_eq(c.read_len, 16);
	cr_assert_eq(c.write_len, 128);
	cr_assert_eq(c.buf[1].p, ram + BUFS + 16);
	cr_assert(c.buf[2].write);
	cr_assert_eq(q.last_avail, 1);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_EMPTY);
}

Test(virtqueue, descriptor_loop)
{
	struct vq_chain c;
	enum vq_err e;

	desc(DESC, 0, BUFS, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 0);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_LOOP);
	cr_assert_eq(c.head, 0);
	cr_assert_eq(q.last_avail, 1, "a bad chain is consumed, to be given back");
}

Test(virtqueue, chain_longer_than_queue)
{
	struct vq_chain c;
	enum vq_err e;

	for (unsigned i = 0; i < 8; i++)
		desc(DESC, i, BUFS, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, (uint16_t)((i + 1) % 8));
	offer(0, 3);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_LOOP);
	cr_assert_eq(c.n, 8, "walked exactly the queue size");
}

Test(virtqueue, next_beyond_queue)
{
	struct vq_chain c;
	enum vq_err e;

	desc(DESC, 0, BUFS, 8, VRING_DESC_F_NEXT, 8);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_NEXT);
}

Test(virtqueue, address_outside_ram)
{
	struct vq_chain c;
	enum vq_err e;

	desc(DESC, 0, RAM - 4, 8, VRING_DESC_F_WRITE, 0);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_RANGE);
	desc(DESC, 1, 0xffffffffffffff00ULL, 0x200, VRING_DESC_F_WRITE, 0);
	offer(1, 1);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_RANGE, "gpa + len wraps");
}

Test(virtqueue, length_overflows_32_bits)
{
	struct vq_chain c;
	enum vq_err e;

	claimed = 1ULL << 40; /* pretend RAM is huge: the lengths, not the range, must fail */
	desc(DESC, 0, 0x10000000ULL, 0xffffffffu, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	desc(DESC, 1, 0x200000000ULL, 0x2, VRING_DESC_F_WRITE, 0);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_OVERFLOW);
}

Test(virtqueue, readable_after_writable)
{
	struct vq_chain c;
	enum vq_err e;

	desc(DESC, 0, BUFS, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	desc(DESC, 1, BUFS, 8, 0, 0);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_ORDER);
}

Test(virtqueue, avail_idx_jumps_ahead)
{
	struct vq_chain c;
	enum vq_err e;

	*avail16(1) = 9; /* 9 > queue size 8 ahead of last_avail 0 */
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BROKEN);
	cr_assert_eq(e, VQ_E_AVAIL_IDX);
	*avail16(1) = 8;
	desc(DESC, 0, BUFS, 8, VRING_DESC_F_WRITE, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_CHAIN, "exactly a queue's worth is fine");
}

Test(virtqueue, head_beyond_queue)
{
	struct vq_chain c;
	enum vq_err e;

	offer(0, 8);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BROKEN);
	cr_assert_eq(e, VQ_E_HEAD);
}

Test(virtqueue, wrapping_indices)
{
	struct vq_chain c;
	enum vq_err e;

	q.last_avail = q.used_idx = 0xfffe;
	*(uint16_t *)(ram + USED + 2) = 0xfffe;
	desc(DESC, 1, BUFS, 4, VRING_DESC_F_WRITE, 0);
	for (uint16_t i = 0xfffe; i != 2; i++)
		*avail16(2 + (i & 7)) = 1;
	*avail16(1) = 2;
	for (int k = 0; k < 4; k++) {
		cr_assert_eq(pop(&c, &e, false), VQ_POP_CHAIN);
		cr_assert_eq(vq_push(&q, &host, c.head, 4), 0);
	}
	cr_assert_eq(pop(&c, &e, false), VQ_POP_EMPTY);
	cr_assert_eq(q.last_avail, 2);
	cr_assert_eq(*(uint16_t *)(ram + USED + 2), 2);
	/* used ring slots 6, 7, 0, 1 */
	cr_assert_eq(*(uint32_t *)(ram + USED + 4 + 8 * 7), 1);
	cr_assert_eq(*(uint32_t *)(ram + USED + 4 + 8 * 7 + 4), 4);
	cr_assert_eq(*(uint32_t *)(ram + USED + 4 + 8 * 1 + 4), 4);
}

Test(virtqueue, indirect_table)
{
	struct vq_chain c;
	enum vq_err e;

	desc(IND, 0, BUFS, 10, VRING_DESC_F_NEXT, 1);
	desc(IND, 1, BUFS + 64, 20, VRING_DESC_F_WRITE, 0);
	desc(DESC, 4, IND, 32, VRING_DESC_F_INDIRECT, 0);
	offer(0, 4);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_CHAIN);
	cr_assert_eq(c.head, 4);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.read_len, 10);
	cr_assert_eq(c.write_len, 20);
	offer(1, 4);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_BAD, "not negotiated");
	cr_assert_eq(e, VQ_E_INDIRECT);
}

Test(virtqueue, hostile_indirect_tables)
{
	struct vq_chain c;
	enum vq_err e;
	uint16_t idx = 0;

	/* ragged length */
	desc(DESC, 0, IND, 24, VRING_DESC_F_INDIRECT, 0);
	offer(idx++, 0);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_INDIRECT);
	/* nested */
	desc(IND, 0, IND, 16, VRING_DESC_F_INDIRECT, 0);
	desc(DESC, 0, IND, 16, VRING_DESC_F_INDIRECT, 0);
	offer(idx++, 0);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_INDIRECT);
	/* a loop inside the table */
	desc(IND, 0, BUFS, 4, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	desc(IND, 1, BUFS, 4, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 0);
	desc(DESC, 0, IND, 32, VRING_DESC_F_INDIRECT, 0);
	offer(idx++, 0);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_LOOP);
	/* outside RAM */
	desc(DESC, 0, RAM - 16, 32, VRING_DESC_F_INDIRECT, 0);
	offer(idx++, 0);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_RANGE);
	/* more buffers than a chain may have */
	for (unsigned i = 0; i < 200; i++)
		desc(IND, i, BUFS, 1, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, (uint16_t)(i + 1));
	desc(IND, 199, BUFS, 1, VRING_DESC_F_WRITE, 0);
	desc(DESC, 0, IND, 200 * 16, VRING_DESC_F_INDIRECT, 0);
	offer(idx++, 0);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_TOO_LONG);
	/* an indirect descriptor after a direct one */
	desc(DESC, 0, BUFS, 4, VRING_DESC_F_NEXT, 1);
	desc(DESC, 1, IND, 16, VRING_DESC_F_INDIRECT, 0);
	offer(idx++, 0);
	cr_assert_eq(pop(&c, &e, true), VQ_POP_BAD);
	cr_assert_eq(e, VQ_E_INDIRECT);
}

Test(virtqueue, notify_suppression)
{
	uint16_t old = q.used_idx;

	cr_assert_not(vq_need_notify(&q, &host, false, old), "nothing pushed");
	cr_assert_eq(vq_push(&q, &host, 0, 0), 0);
	cr_assert(vq_need_notify(&q, &host, false, old));
	*avail16(0) = VRING_AVAIL_F_NO_INTERRUPT;
	cr_assert_not(vq_need_notify(&q, &host, false, old));
	/* event idx: used_event (avail ring[num]) = 3: notify when used idx passes 3 */
	*avail16(2 + 8) = 3;
	old = q.used_idx;
	cr_assert_eq(vq_push(&q, &host, 0, 0), 0); /* idx 2 */
	cr_assert_not(vq_need_notify(&q, &host, true, old));
	old = q.used_idx;
	cr_assert_eq(vq_push(&q, &host, 0, 0), 0); /* idx 3 */
	cr_assert_eq(vq_push(&q, &host, 0, 0), 0); /* idx 4: stepped over 3 */
	cr_assert(vq_need_notify(&q, &host, true, old));
}

Test(virtqueue, arm_event_publishes_avail_event)
{
	struct vq_chain c;
	enum vq_err e;

	desc(DESC, 0, BUFS, 4, VRING_DESC_F_WRITE, 0);
	offer(0, 0);
	cr_assert_eq(pop(&c, &e, false), VQ_POP_CHAIN);
	cr_assert_not(vq_arm_event(&q, &host));
	cr_assert_eq(*(uint16_t *)(ram + USED + 4 + 8 * 8), 1);
	offer(1, 0);
	cr_assert(vq_arm_event(&q, &host), "a request came in meanwhile");
}

Test(virtqueue, error_names)
{
	for (int e = 0; e < VQ_NR_ERR; e++)
		cr_assert_not_null(vq_err_name((enum vq_err)e));
	cr_assert_str_eq(vq_err_name(VQ_NR_ERR), "?");
}
