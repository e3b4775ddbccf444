// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the split virtqueue walker (devices/virtqueue.c) and
 * the virtio-mmio transport (devices/virtio_mmio.c, with virtio-rng,
 * virtio-blk or virtio-net behind it: devices/virtio_blk.c's request
 * parser, with a fake engine that checks every iovec and completes when
 * the program says; virtio-net's TX gather and RX fill (one chain, or
 * several with mergeable buffers), over a fake tap
 * whose frames have lengths from the input), driven as a hostile guest
 * drives them. The input fills a 64 KiB
 * guest RAM and either sets up one queue anywhere in it (walker mode) or
 * is a program of register accesses and queue services, with interrupts
 * coalesced or not and the coalesced ones fired when it says (transport mode).
 * Every buffer handed out must lie inside RAM, and every walk must end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "devices/virtio_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM (64u << 10)

static uint8_t ram[RAM] __attribute__((aligned(4096)));

static void *hva(void *opaque, uint64_t gpa, uint64_t len)
{
	(void)opaque;
	return gpa > RAM || len > RAM - gpa ? NULL : ram + gpa;
}

static void defer_irq(void *opaque, unsigned q)
{
	(void)opaque;
	(void)q;
}

/* The transport's own: with a coalescing timer the fuzzer fires (the walker needs only RAM). */
static const struct dev_host host = { .gpa_to_hva = hva, .defer_irq = defer_irq };

static long next_frame; /* the fake tap's next frame length; -EAGAIN: none */

/* Every iovec the device hands the tap lies in guest RAM. */
static size_t check_iov(const struct iovec *iov, int n)
{
	size_t total = 0;

	if (n < 0 || n > (int)VQ_MAX_BUFS)
		abort();
	for (int i = 0; i < n; i++) {
		const uint8_t *p = iov[i].iov_base;

		if (!iov[i].iov_len || p < ram || iov[i].iov_len > RAM || p + iov[i].iov_len > ram + RAM)
			abort();
		total += iov[i].iov_len;
	}
	return total;
}

/* As a tap does: copies what fits of a frame, returns its whole length. */
static long fake_rx(void *opaque, const struct iovec *iov, int n)
{
	size_t room = check_iov(iov, n);
	long len = next_frame;

	(void)opaque;
	if (len < 0)
		return len;
	for (int i = 0; i < n && room; i++)
		memset(iov[i].iov_base, 0x5a, iov[i].iov_len);
	next_frame = -EAGAIN;
	return len;
}

static long fake_tx(void *opaque, const struct iovec *iov, int n)
{
	size_t len = check_iov(iov, n);

	(void)opaque;
	if (len < VIRTIO_NET_HDR_LEN || len > VIRTIO_NET_HDR_LEN + VIRTIO_NET_MAX_FRAME)
		abort(); /* the device checks the length before the tap sees it */
	return (long)len;
}

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

/* The fake block engine: operations wait here until the program completes them. */
static uint64_t tags[512];
static int64_t results[512];
static unsigned npending;

static int fake_submit(void *opaque, const struct blk_io *io)
{
	uint64_t total = 0;

	(void)opaque;
	if (npending == 512)
		return -EBUSY;
	for (unsigned i = 0; i < io->niov; i++) {
		const uint8_t *p = io->iov[i].iov_base;

		if (p < ram || p + io->iov[i].iov_len > ram + RAM)
			abort(); /* the engine would read or write outside guest RAM */
		total += io->iov[i].iov_len;
	}
	if ((io->op == BLK_OP_READ || io->op == BLK_OP_WRITE) &&
	    (total != io->len || io->off + io->len > 128 * 512))
		abort(); /* beyond the disk, or not what the request said */
	tags[npending] = io->tag;
	results[npending++] = (int64_t)io->len;
	return 0;
}

static void complete_all(struct virtio_mmio *v, uint8_t how)
{
	for (unsigned i = 0; i < npending; i++)
		results[i] = how & 1 ? -5 : how & 2 ? results[i] / 2 : results[i];
	virtio_mmio_complete(v, tags, results, npending);
	npending = 0;
}

/* blk: virtio-blk behind the transport, net: virtio-net, neither: virtio-rng. */
static void transport(const uint8_t *d, size_t size, bool blk, bool net)
{
	static const long frames[] = { -EAGAIN, 60, 1514, 9000, 70000, 5, -EIO, 12 };
	struct virtio_net_params np = { .mac = { 0x52, 0x54, 0, 1, 2, 3 },
					.offloads = VIRTIO_NET_OFFLOADS,
					.ifname = "tap0", /* a state without a tap name is refused at load */
					.io = { NULL, fake_rx, fake_tx, NULL } };
	size_t img = size < 4096 ? size : 4096;
	struct virtio_mmio *v;
	struct virtio_mmio_state st;
	struct virtio_blk_params p = {
		.sectors = 128, .discard = true, .write_zeroes = true, .engine = { NULL, fake_submit }
	};
	struct virtio_net_state ns;

	memcpy(ram, d, img);
	npending = 0;
	next_frame = -EAGAIN;
	p.readonly = img && (d[0] & 1);
	if (blk	  ? virtio_blk_create(&v, &p, &host)
	    : net ? virtio_net_create(&v, &host, &np)
		  : virtio_rng_create(&v, &host))
		abort();
	if (img && (d[0] & 2))
		virtio_mmio_defer_irqs(v, 3); /* interrupts coalesced: the input fires them (bit 5) */
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
			next_frame = frames[(s[0] >> 2) & 7];
			if (blk && (s[0] & 0x40))
				complete_all(v, s[2]);
			else if (net && (s[0] & 0x40))
				virtio_mmio_poll(v, 0); /* a frame came to the tap */
			else
				virtio_mmio_serve(v, s[0] >> 7);
			if (s[0] & 0x20) {
				virtio_mmio_fire_deferred(v, 0);
				virtio_mmio_fire_deferred(v, 1);
			}
			break;
		default:
			if (net) {
				virtio_net_save(v, &ns);
				if (virtio_net_load(v, &ns))
					abort();
				break;
			}
			virtio_mmio_save(v, &st);
			if (virtio_mmio_load(v, &st))
				abort(); /* a state the device saved must load */
			break;
		}
	}
	if (blk)
		complete_all(v, 0); /* what is in flight completes before the device goes */
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
		transport(data + 1, size - 1, (data[0] & 6) == 2, data[0] & 4); /* 2: blk, 4: net */
	return 0;
}
