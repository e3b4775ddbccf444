// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the split virtqueue walker (devices/virtqueue.c) and
 * the virtio-mmio transport (devices/virtio_mmio.c, with virtio-rng behind
 * it), driven as a hostile guest drives them. The input fills a 64 KiB
 * guest RAM and either sets up one queue anywhere in it (walker mode) or
 * is a program of register accesses and queue services (transport mode).
 * Every buffer handed out must lie inside RAM, and every walk must end.
 */
#include <stdlib.h>
#include <string.h>

#include "devices/virtio_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM (64u << 10)

static uint8_t ram[RAM] __attribute__((aligned(4096)));

static void *hva(void *opaque, uint64_t gpa, uint64_t len)
{
	(void)opaque;
	return gpa > RAM || len > RAM - gpa ? NULL : ram + gpa;
}

static const struct dev_host host = { .gpa_to_hva = hva };

static uint16_t u16at(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void check_chain(const struct vq_chain *c)
{
	if (c->n > VQ_MAX_BUFS || c->nr_read > c->n || c->read_len + c->write_len > UINT32_MAX)
		abort();
	for (unsigned i = 0; i < c->n; i++) {
		const struct vq_buf *b = &c->buf[i];

		if (b->len && (b->p < ram || b->p + b->len > ram + RAM))
			abort(); /* a buffer outside guest RAM */
		if ((i < c->nr_read) == b->write)
			abort(); /* readable ones first */
	}
}

static void walker(const uint8_t *d, size_t size)
{
	struct virtq q = {
		.num = u16at(d),
		.ready = true,
		.desc = u16at(d + 2),
		.avail = u16at(d + 4),
		.used = u16at(d + 6),
		.last_avail = u16at(d + 9),
		.used_idx = u16at(d + 11),
	};
	bool indirect = d[8] & 1, event_idx = d[8] & 2;
	struct vq_chain c;
	enum vq_err e;

	memcpy(ram, d + 13, size - 13 < RAM ? size - 13 : RAM);
	if (vq_validate(&q, &host, VQ_MAX_SIZE) != VQ_OK)
		return;
	/* Never more pops than a queue's worth plus one: each one consumes an entry or stops. */
	for (unsigned k = 0; k <= q.num; k++) {
		uint16_t old = q.used_idx;
		enum vq_pop r = vq_pop(&q, &host, indirect, &c, &e);

		if (r == VQ_POP_EMPTY || r == VQ_POP_BROKEN)
			break;
		if (r == VQ_POP_CHAIN)
			check_chain(&c);
		if (c.head >= q.num || vq_push(&q, &host, c.head, (uint32_t)c.write_len))
			abort();
		(void)vq_need_notify(&q, &host, event_idx, old);
		(void)vq_arm_event(&q, &host);
	}
}

static void transport(const uint8_t *d, size_t size)
{
	size_t img = size < 4096 ? size : 4096;
	struct virtio_mmio *v;
	struct virtio_mmio_state st;

	memcpy(ram, d, img);
	if (virtio_rng_create(&v, &host))
		abort();
	for (size_t at = img; at + 6 <= size; at += 6) {
		const uint8_t *s = d + at;
		uint8_t buf[8];
		struct dev_io io = { .offset = (uint64_t)s[1] * 4, .len = 4, .data = buf };

		memcpy(buf, s + 2, 4);
		switch (s[0] & 3) {
		case 0:
			io.is_write = true;
			/* fallthrough */
		case 1:
			virtio_mmio_io(v, &io);
			break;
		case 2:
			virtio_mmio_serve(v, s[0] >> 7);
			break;
		default:
			virtio_mmio_save(v, &st);
			if (virtio_mmio_load(v, &st))
				abort(); /* a state the device saved must load */
			break;
		}
	}
	virtio_mmio_destroy(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	memset(ram, 0, sizeof(ram));
	if (size < 14)
		return 0;
	if (data[0] & 1)
		walker(data + 1, size - 1);
	else
		transport(data + 1, size - 1);
	return 0;
}
