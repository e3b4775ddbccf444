// SPDX-License-Identifier: MIT
/*
 * The split virtqueue walker (virtio 1.x, 2.7): take a chain of
 * descriptors from the avail ring, give it back on the used ring, decide
 * whether the driver wants an interrupt. The guest owns every byte it
 * reads, so each address and length is checked, each descriptor copied
 * once, and every walk bounded by the queue size: a hostile ring gives an
 * error, never a loop or an access outside guest RAM.
 */
#include "devices/virtio_internal.h"

#include <errno.h>
#include <string.h>

#include "devices/devices_internal.h"

struct vq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

_Static_assert(sizeof(struct vq_desc) == 16, "virtq_desc is 16 bytes");

const char *vq_err_name(enum vq_err e)
{
	static const char *const names[VQ_NR_ERR] = {
		[VQ_OK] = "no error",
		[VQ_E_SIZE] = "queue size not a power of two, zero or too large",
		[VQ_E_ALIGN] = "ring misaligned",
		[VQ_E_RING] = "ring outside guest RAM",
		[VQ_E_AVAIL_IDX] = "avail idx more than the queue size ahead",
		[VQ_E_HEAD] = "avail entry beyond the queue",
		[VQ_E_NEXT] = "descriptor next beyond its table",
		[VQ_E_LOOP] = "descriptor loop",
		[VQ_E_TOO_LONG] = "chain too long",
		[VQ_E_RANGE] = "buffer outside guest RAM",
		[VQ_E_OVERFLOW] = "chain length overflows",
		[VQ_E_INDIRECT] = "bad indirect table",
		[VQ_E_ORDER] = "readable buffer after a writable one",
	};

	return (unsigned)e < VQ_NR_ERR ? names[e] : "?";
}

static uint64_t avail_bytes(uint16_t num)
{
	return 6 + 2ULL * num; /* flags, idx, ring[num], used_event */
}

static uint64_t used_bytes(uint16_t num)
{
	return 6 + 8ULL * num; /* flags, idx, ring[num] of {id, len}, avail_event */
}

enum vq_err vq_validate(const struct virtq *q, const struct dev_host *h, unsigned max)
{
	if (!q->num || q->num > max || q->num > VQ_MAX_SIZE || (q->num & (q->num - 1)))
		return VQ_E_SIZE;
	if ((q->desc & 15) || (q->avail & 1) || (q->used & 3))
		return VQ_E_ALIGN;
	if (!dev_gpa_to_hva(h, q->desc, 16ULL * q->num) ||
	    !dev_gpa_to_hva(h, q->avail, avail_bytes(q->num)) ||
	    !dev_gpa_to_hva(h, q->used, used_bytes(q->num)))
		return VQ_E_RING;
	return VQ_OK;
}

/* The avail ring's fields; NULL if RAM changed under a validated queue (it cannot: checked anyway). */
static uint16_t *avail_ptr(const struct virtq *q, const struct dev_host *h)
{
	return dev_gpa_to_hva(h, q->avail, avail_bytes(q->num));
}

static uint8_t *used_ptr(const struct virtq *q, const struct dev_host *h)
{
	return dev_gpa_to_hva(h, q->used, used_bytes(q->num));
}

/* Copy descriptor i of a table at gpa with n entries (already checked in RAM). */
static void read_desc(const uint8_t *table, uint32_t i, struct vq_desc *d)
{
	memcpy(d, table + 16ULL * i, sizeof(*d));
}

/* Add one buffer to the chain: in RAM, in order, within the bounds. */
static enum vq_err add_buf(struct vq_chain *c, const struct dev_host *h, const struct vq_desc *d)
{
	bool write = d->flags & VRING_DESC_F_WRITE;
	uint8_t *p;

	if (c->n == VQ_MAX_BUFS)
		return VQ_E_TOO_LONG;
	if (!write && c->n > c->nr_read)
		return VQ_E_ORDER;
	p = d->len ? dev_gpa_to_hva(h, d->addr, d->len) : NULL;
	if (d->len && !p)
		return VQ_E_RANGE;
	if (write)
		c->write_len += d->len;
	else
		c->read_len += d->len;
	if (c->read_len + c->write_len > UINT32_MAX)
		return VQ_E_OVERFLOW;
	c->buf[c->n++] = (struct vq_buf){ p, d->len, write };
	if (!write)
		c->nr_read++;
	return VQ_OK;
}

/* Walk an indirect table: no nesting, every next inside it, at most its size steps. */
static enum vq_err walk_indirect(struct vq_chain *c, const struct dev_host *h, const struct vq_desc *ind)
{
	uint32_t n = ind->len / 16, i = 0, steps = 0;
	const uint8_t *table;
	struct vq_desc d;
	enum vq_err e;

	if (!ind->len || ind->len % 16 || (ind->flags & VRING_DESC_F_NEXT))
		return VQ_E_INDIRECT;
	table = dev_gpa_to_hva(h, ind->addr, ind->len);
	if (!table)
		return VQ_E_RANGE;
	for (;;) {
		if (++steps > n)
			return VQ_E_LOOP;
		read_desc(table, i, &d);
		if (d.flags & VRING_DESC_F_INDIRECT)
			return VQ_E_INDIRECT;
		e = add_buf(c, h, &d);
		if (e != VQ_OK)
			return e;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return VQ_OK;
		if (d.next >= n)
			return VQ_E_NEXT;
		i = d.next;
	}
}

static enum vq_err walk(const struct virtq *q, const struct dev_host *h, bool indirect, struct vq_chain *c)
{
	const uint8_t *table = dev_gpa_to_hva(h, q->desc, 16ULL * q->num);
	uint32_t i = c->head, steps = 0;
	struct vq_desc d;
	enum vq_err e;

	if (!table)
		return VQ_E_RING;
	for (;;) {
		if (++steps > q->num)
			return VQ_E_LOOP;
		read_desc(table, i, &d);
		if (d.flags & VRING_DESC_F_INDIRECT) {
			/* An indirect descriptor is the chain's only one (2.7.5.3.1). */
			if (!indirect || c->n)
				return VQ_E_INDIRECT;
			return walk_indirect(c, h, &d);
		}
		e = add_buf(c, h, &d);
		if (e != VQ_OK)
			return e;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return VQ_OK;
		if (d.next >= q->num)
			return VQ_E_NEXT;
		i = d.next;
	}
}

enum vq_pop vq_pop(struct virtq *q, const struct dev_host *h, bool indirect, struct vq_chain *c,
		   enum vq_err *err)
{
	uint16_t *avail = avail_ptr(q, h);
	uint16_t idx, head;

	*err = VQ_OK;
	if (!q->ready || !avail) {
		*err = VQ_E_RING;
		return VQ_POP_BROKEN;
	}
	/* Acquire: the ring entry and the descriptors it names are read after idx. */
	idx = __atomic_load_n(&avail[1], __ATOMIC_ACQUIRE);
	if (idx == q->last_avail)
		return VQ_POP_EMPTY;
	if ((uint16_t)(idx - q->last_avail) > q->num) {
		*err = VQ_E_AVAIL_IDX;
		return VQ_POP_BROKEN;
	}
	head = __atomic_load_n(&avail[2 + (q->last_avail & (q->num - 1))], __ATOMIC_RELAXED);
	if (head >= q->num) {
		*err = VQ_E_HEAD;
		return VQ_POP_BROKEN;
	}
	q->last_avail++;
	c->head = head;
	c->n = c->nr_read = 0;
	c->read_len = c->write_len = 0;
	*err = walk(q, h, indirect, c);
	return *err == VQ_OK ? VQ_POP_CHAIN : VQ_POP_BAD;
}

int vq_push_many(struct virtq *q, const struct dev_host *h, const uint16_t *head, const uint32_t *len,
		 unsigned n)
{
	uint8_t *used = used_ptr(q, h);

	if (!used)
		return -EFAULT;
	for (unsigned i = 0; i < n; i++) {
		uint32_t elem[2] = { head[i], len[i] };

		memcpy(used + 4 + 8ULL * (q->used_idx & (q->num - 1)), elem, sizeof(elem));
		q->used_idx++;
	}
	/* Release: the elements are visible before the idx that publishes them. */
	__atomic_store_n((uint16_t *)(used + 2), q->used_idx, __ATOMIC_RELEASE);
	return 0;
}

int vq_push(struct virtq *q, const struct dev_host *h, uint16_t head, uint32_t len)
{
	return vq_push_many(q, h, &head, &len, 1);
}

bool vq_need_notify(const struct virtq *q, const struct dev_host *h, bool event_idx, uint16_t old_used)
{
	uint16_t *avail = avail_ptr(q, h);
	uint16_t ev;

	if (!avail || old_used == q->used_idx)
		return false;
	/* The used idx store must be seen before we read what the driver wants (it does the mirror). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!event_idx)
		return !(__atomic_load_n(&avail[0], __ATOMIC_RELAXED) & VRING_AVAIL_F_NO_INTERRUPT);
	ev = __atomic_load_n(&avail[2 + q->num], __ATOMIC_RELAXED);
	/* vring_need_event: did used idx step over used_event since old_used? */
	return (uint16_t)(q->used_idx - ev - 1) < (uint16_t)(q->used_idx - old_used);
}

bool vq_arm_event(struct virtq *q, const struct dev_host *h)
{
	uint8_t *used = used_ptr(q, h);
	uint16_t *avail = avail_ptr(q, h);

	if (!used || !avail)
		return false;
	__atomic_store_n((uint16_t *)(used + 4 + 8ULL * q->num), q->last_avail, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&avail[1], __ATOMIC_ACQUIRE) != q->last_avail;
}
