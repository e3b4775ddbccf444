// SPDX-License-Identifier: MIT
/*
 * Unit tests for virtio-net over a fake guest RAM and a fake tap: the
 * features and config space, TX chains gathered (header split across
 * buffers, too short, too long), RX chains filled (num_buffers set, a
 * frame too large, a chain smaller than a header, no frame waiting keeps
 * the chain), offloads handed to the tap, counters, save and load.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#define RAM (256u << 10)
#define RXQ_BASE 0x1000u /* desc, avail at +0x400, used at +0x800 */
#define TXQ_BASE 0x2000u
#define BUFS 0x10000u

#include "tests/unit/virtio_fake.h"

static uint8_t tx_frame[70000], rx_frame[70000];
static long tx_len, rx_len, tx_ret;	/* rx_len -EAGAIN: no frame waiting */
static int tx_calls, rx_calls, rx_left; /* rx_left: frames the tap still has (-1: the same one forever) */
static uint64_t offloads_set = ~0ULL;

/* As a tap does: copies what fits, returns the whole frame's length. */
static long fake_rx(void *opaque, const struct iovec *iov, int n)
{
	long off = 0;

	(void)opaque;
	rx_calls++;
	if (rx_len < 0 || !rx_left)
		return rx_len < 0 ? rx_len : -EAGAIN;
	if (rx_left > 0)
		rx_left--;
	for (int i = 0; i < n && off < rx_len; i++) {
		size_t k = iov[i].iov_len < (size_t)(rx_len - off) ? iov[i].iov_len : (size_t)(rx_len - off);

		memcpy(iov[i].iov_base, rx_frame + off, k);
		off += (long)k;
	}
	return rx_len;
}

static long fake_tx(void *opaque, const struct iovec *iov, int n)
{
	(void)opaque;
	tx_calls++;
	tx_len = 0;
	for (int i = 0; i < n; i++) {
		memcpy(tx_frame + tx_len, iov[i].iov_base, iov[i].iov_len);
		tx_len += (long)iov[i].iov_len;
	}
	return tx_ret ? tx_ret : tx_len;
}

static void fake_offloads(void *opaque, uint64_t f)
{
	(void)opaque;
	offloads_set = f;
}

static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static bool offer_mrg = true; /* --net mrg=on */

static void make(uint64_t offloads)
{
	struct virtio_net_params p = { .offloads = offloads,
				       .ifname = "tap7",
				       .mrg_rxbuf = offer_mrg,
				       .io = { NULL, fake_rx, fake_tx, fake_offloads } };

	memcpy(p.mac, mac, 6);
	cr_assert_eq(virtio_net_create(&v, &host, &p), 0);
}

static void setup(void)
{
	memset(ram, 0, sizeof(ram));
	pulses = tx_calls = rx_calls = 0;
	tx_len = tx_ret = 0;
	rx_len = -EAGAIN;
	rx_left = -1;
	offloads_set = ~0ULL;
	make(VIRTIO_NET_OFFLOADS);
}

static void teardown(void)
{
	virtio_mmio_destroy(v);
	v = NULL;
}

TestSuite(virtio_net, .init = setup, .fini = teardown);

static void rdn(uint64_t off, uint8_t *d, uint32_t len)
{
	struct dev_io io = { .offset = off, .len = len, .data = d };

	virtio_mmio_io(v, &io);
}

static void queue(unsigned qi, uint32_t base)
{
	wr(0x30, qi);
	wr(0x38, 16);
	wr(0x80, base);
	wr(0x84, 0);
	wr(0x90, base + 0x400);
	wr(0x94, 0);
	wr(0xa0, base + 0x800);
	wr(0xa4, 0);
	wr(0x44, 1);
}

static void up(uint32_t lo_features)
{
	negotiate2(1, lo_features);
	queue(0, RXQ_BASE);
	queue(1, TXQ_BASE);
	wr(0x70, 0xf);
	cr_assert_eq(rd(0x70), 0xf);
}

/* Descriptor i of the queue at base: a buffer, chained to i + 1 if next. */
static void desc(uint32_t base, unsigned i, uint64_t addr, uint32_t len, bool write, bool next)
{
	uint8_t *d = ram + base + 16 * i;
	uint16_t flags = (uint16_t)((write ? VRING_DESC_F_WRITE : 0) | (next ? VRING_DESC_F_NEXT : 0)),
		 nx = (uint16_t)(i + 1);

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &nx, 2);
}

static void avail(uint32_t base, uint16_t head)
{
	uint16_t *a = (uint16_t *)(ram + base + 0x400);

	a[2 + (a[1] & 15)] = head;
	a[1]++;
}

static uint16_t used_idx(uint32_t base)
{
	return *(uint16_t *)(ram + base + 0x800 + 2);
}

static uint32_t used_len(uint32_t base, unsigned slot)
{
	return *(uint32_t *)(ram + base + 0x800 + 4 + 8 * slot + 4);
}

/* The device's own counters: the backend's six, then rx and tx notifications and interrupts. */
static void own(uint64_t out[10])
{
	uint64_t all[VIRTIO_MAX_OWN_STATS];

	cr_assert_eq(virtio_mmio_backend_counters(v, NULL, all), 10);
	memcpy(out, all, 10 * sizeof(uint64_t));
}

static struct virtio_net_counters ncounters(void)
{
	struct virtio_net_counters c;
	uint64_t all[10];

	own(all);
	memcpy(&c, all, sizeof(c));
	return c;
}

Test(virtio_net, device_id_features_and_config)
{
	uint8_t cfg[8];

	cr_assert_eq(rd(0x008), 1);
	wr(0x14, 0);
	cr_assert_eq(rd(0x10) & ((1u << 5) | (1u << 16)), (1u << 5) | (1u << 16), "MAC and STATUS offered");
	cr_assert_eq(rd(0x10) & 0x1983, 0x1983, "checksum and TSO offloads offered");
	wr(0x14, 1);
	cr_assert_eq(rd(0x10) & 1, 1, "VERSION_1");
	rdn(0x100, cfg, 4);
	rdn(0x104, cfg + 4, 4);
	cr_assert_arr_eq(cfg, mac, 6);
	cr_assert_eq(cfg[6], 1, "link up");
	cr_assert_eq(rd(0x100 + 8), 0, "nothing past the config space");
}

Test(virtio_net, no_offloads_when_the_tap_refuses_them)
{
	virtio_mmio_destroy(v);
	make(0);
	wr(0x14, 0);
	cr_assert_eq(rd(0x10) & 0x1983, 0);
}

Test(virtio_net, bad_macs_are_refused)
{
	struct virtio_net_params p = { .io = { NULL, fake_rx, fake_tx, NULL } };
	struct virtio_mmio *w;

	cr_assert_eq(virtio_net_create(&w, &host, &p), -EINVAL, "all zeros");
	p.mac[0] = 1;
	cr_assert_eq(virtio_net_create(&w, &host, &p), -EINVAL, "multicast");
}

Test(virtio_net, offloads_follow_the_driver)
{
	up((1u << 1) | (1u << 7) | (1u << 5));
	cr_assert_eq(offloads_set, VIRTIO_NET_F_GUEST_CSUM | VIRTIO_NET_F_GUEST_TSO4);
	wr(0x70, 0);
	cr_assert_eq(offloads_set, 0, "a reset takes them back");
}

Test(virtio_net, tx_gathers_a_chain_with_the_header_split)
{
	uint8_t *b = ram + BUFS;

	up(1u << 5);
	for (unsigned i = 0; i < 100; i++)
		b[i] = (uint8_t)i;
	/* 5 bytes of header, then 7 + 30 (rest of header, frame start), then 58 */
	desc(TXQ_BASE, 0, BUFS, 5, false, true);
	desc(TXQ_BASE, 1, BUFS + 5, 37, false, true);
	desc(TXQ_BASE, 2, BUFS + 42, 58, false, false);
	avail(TXQ_BASE, 0);
	virtio_mmio_serve(v, 1);
	cr_assert_eq(tx_calls, 1);
	cr_assert_eq(tx_len, 100);
	cr_assert_arr_eq(tx_frame, b, 100);
	cr_assert_eq(used_idx(TXQ_BASE), 1);
	cr_assert_eq(used_len(TXQ_BASE, 0), 0);
	cr_assert_eq(ncounters().tx_packets, 1);
	cr_assert_eq(ncounters().tx_bytes, 88);
	cr_assert_gt(pulses, 0);
}

Test(virtio_net, tx_too_short_too_long_or_refused_is_an_error)
{
	up(1u << 5);
	desc(TXQ_BASE, 0, BUFS, 20, false, false); /* less than a header and an Ethernet header */
	avail(TXQ_BASE, 0);
	/* 66 KiB in two buffers: more than a frame can be */
	desc(TXQ_BASE, 1, BUFS, 0x10000, false, true);
	desc(TXQ_BASE, 2, BUFS, 0x1000, false, false);
	avail(TXQ_BASE, 1);
	virtio_mmio_serve(v, 1);
	cr_assert_eq(tx_calls, 0, "neither reaches the tap");
	tx_ret = -EINVAL;
	desc(TXQ_BASE, 3, BUFS, 60, false, false);
	avail(TXQ_BASE, 3);
	virtio_mmio_serve(v, 1);
	cr_assert_eq(tx_calls, 1);
	cr_assert_eq(used_idx(TXQ_BASE), 3, "every chain comes back");
	cr_assert_eq(ncounters().tx_errors, 3);
	cr_assert_eq(ncounters().tx_packets, 0);
}

Test(virtio_net, rx_fills_a_chain_and_sets_num_buffers)
{
	uint8_t *b = ram + BUFS;

	up(1u << 5);
	for (unsigned i = 0; i < 80; i++)
		rx_frame[i] = (uint8_t)(i + 1);
	rx_frame[10] = rx_frame[11] = 0x77; /* the tap leaves num_buffers alone */
	rx_len = 80;
	/* the header split: 11 bytes, then the rest */
	desc(RXQ_BASE, 0, BUFS, 11, true, true);
	desc(RXQ_BASE, 1, BUFS + 11, 1500, true, false);
	avail(RXQ_BASE, 0);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 1);
	cr_assert_eq(used_len(RXQ_BASE, 0), 80);
	cr_assert_eq(b[10], 1, "num_buffers 1");
	cr_assert_eq(b[11], 0);
	cr_assert_arr_eq(b + 12, rx_frame + 12, 68);
	cr_assert_eq(ncounters().rx_packets, 1);
	cr_assert_eq(ncounters().rx_bytes, 68);
}

Test(virtio_net, rx_without_a_frame_keeps_the_chain)
{
	up(1u << 5);
	desc(RXQ_BASE, 0, BUFS, 1526, true, false);
	avail(RXQ_BASE, 0);
	virtio_mmio_serve(v, 0); /* the driver posted: nothing waits in the tap */
	cr_assert_eq(rx_calls, 1);
	cr_assert_eq(used_idx(RXQ_BASE), 0, "the chain stays available");
	rx_len = 60;
	virtio_mmio_poll(v, 0); /* a frame came */
	cr_assert_eq(used_idx(RXQ_BASE), 1);
	cr_assert_eq(used_len(RXQ_BASE, 0), 60);
	rx_len = 60;
	virtio_mmio_poll(v, 0); /* another, with no buffer posted: not read */
	cr_assert_eq(rx_calls, 2);
}

Test(virtio_net, rx_small_buffers_and_big_frames_are_dropped_and_counted)
{
	up(1u << 5);
	rx_len = 100;
	desc(RXQ_BASE, 0, BUFS, 8, true, false); /* smaller than a header: never read into */
	avail(RXQ_BASE, 0);
	desc(RXQ_BASE, 1, BUFS, 64, true, false); /* the frame does not fit: lost, counted */
	avail(RXQ_BASE, 1);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(rx_calls, 1);
	cr_assert_eq(used_idx(RXQ_BASE), 2);
	cr_assert_eq(used_len(RXQ_BASE, 0), 0);
	cr_assert_eq(used_len(RXQ_BASE, 1), 0);
	cr_assert_eq(ncounters().rx_dropped, 1);
	cr_assert_eq(ncounters().rx_packets, 0);
}

Test(virtio_net, rx_read_errors_keep_the_chain)
{
	up(1u << 5);
	rx_len = -EIO;
	desc(RXQ_BASE, 0, BUFS, 1526, true, false);
	avail(RXQ_BASE, 0);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 0, "the chain stays available");
	cr_assert_eq(ncounters().rx_dropped, 1);
	rx_len = 60;
	virtio_mmio_poll(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 1);
	cr_assert_eq(used_len(RXQ_BASE, 0), 60);
}

Test(virtio_net, notifications_before_the_queues_are_ready_do_nothing)
{
	rx_len = 60;
	virtio_mmio_serve(v, 0);
	virtio_mmio_serve(v, 1);
	virtio_mmio_poll(v, 0);
	wr(0x50, 1);
	cr_assert_eq(rx_calls + tx_calls, 0);
}

/* Each queue's notifications and interrupts, named after it, beside the device's totals. */
Test(virtio_net, counters_per_queue)
{
	const char *const *names;
	static const char *const want[10] = { "rx_packets",	  "rx_bytes",	   "rx_dropped",
					      "tx_packets",	  "tx_bytes",	   "tx_errors",
					      "rx_notifications", "rx_interrupts", "tx_notifications",
					      "tx_interrupts" };
	struct virtio_counters c;
	uint64_t o[10];

	cr_assert_eq(virtio_mmio_backend_counters(v, &names, NULL), 10);
	for (unsigned i = 0; i < 10; i++)
		cr_assert_str_eq(names[i], want[i]);
	up(1u << 5);
	/* two transmits, each its notification (the second by the register, the first by the eventfd path) */
	desc(TXQ_BASE, 0, BUFS, 60, false, false);
	avail(TXQ_BASE, 0);
	virtio_mmio_serve(v, 1);
	desc(TXQ_BASE, 1, BUFS, 60, false, false);
	avail(TXQ_BASE, 1);
	wr(0x50, 1);
	/* a receive buffer posted (notified), then a frame the tap gives (no notification) */
	rx_len = 60;
	desc(RXQ_BASE, 0, BUFS, 1526, true, false);
	avail(RXQ_BASE, 0);
	virtio_mmio_serve(v, 0);
	own(o);
	cr_assert_eq(o[3], 2, "two frames sent");
	cr_assert_eq(o[6], 1, "rx notifications");
	cr_assert_eq(o[7], 1, "rx interrupts: the frame");
	cr_assert_eq(o[8], 2, "tx notifications");
	cr_assert_eq(o[9], 2, "tx interrupts: one per used buffer here (no EVENT_IDX)");
	virtio_mmio_get_counters(v, &c);
	cr_assert_eq(c.notifies, o[6] + o[8], "the device's total is the queues' sum");
	cr_assert_eq(c.interrupts, o[7] + o[9]);
}

Test(virtio_net, save_and_load_keep_state_and_counters)
{
	struct virtio_net_state st, st2;

	up(1u << 5);
	rx_len = 60;
	desc(RXQ_BASE, 0, BUFS, 1526, true, false);
	avail(RXQ_BASE, 0);
	virtio_mmio_poll(v, 0);
	virtio_net_save(v, &st);
	cr_assert_eq(st.ifname_len, 4);
	cr_assert_arr_eq(st.ifname, "tap7", 4);
	cr_assert_eq(st.nc.rx_packets, 1);
	virtio_mmio_destroy(v);
	make(VIRTIO_NET_OFFLOADS);
	offloads_set = ~0ULL;
	cr_assert_eq(virtio_net_load(v, &st), 0);
	cr_assert_eq(offloads_set, 0, "DRIVER_OK: the offloads (none taken) applied again");
	cr_assert_eq(rd(0x70), 0xf);
	cr_assert_eq(ncounters().rx_packets, 1);
	cr_assert_eq(st.t.qc[0].interrupts, 1, "the queue's counters are saved");
	{
		uint64_t o[10];

		own(o);
		cr_assert_eq(o[7], 1, "and continue after the load");
	}
	virtio_net_save(v, &st2);
	cr_assert_eq(memcmp(&st, &st2, sizeof(st)), 0);
	st.mac[5] ^= 1;
	cr_assert_eq(virtio_net_load(v, &st), -EINVAL, "another MAC");
	st.mac[5] ^= 1;
	st.ifname_len = 0;
	cr_assert_eq(virtio_net_load(v, &st), -EINVAL, "no tap name");
}

/* ---- mergeable receive buffers (VIRTIO_NET_F_MRG_RXBUF, bit 15) ---- */

#define F_MRG (1u << 15)

/* Post `count` one-buffer receive chains of len bytes each, from descriptor (and buffer slot) first on. */
static void post_rx(unsigned first, unsigned count, uint32_t len)
{
	for (unsigned i = first; i < first + count; i++) {
		desc(RXQ_BASE, i, BUFS + 4096ULL * i, len, true, false);
		avail(RXQ_BASE, (uint16_t)i);
	}
}

/* The tap has one frame of len bytes. */
static void frame(long len)
{
	rx_len = len;
	rx_left = 1;
}

static uint32_t used_id(uint32_t base, unsigned slot)
{
	return *(uint32_t *)(ram + base + 0x800 + 4 + 8 * slot);
}

static uint16_t num_buffers(unsigned desc_i)
{
	const uint8_t *h = ram + BUFS + 4096ULL * desc_i;

	return (uint16_t)(h[10] | h[11] << 8);
}

Test(virtio_net, mergeable_buffers_are_offered_when_asked)
{
	wr(0x14, 0);
	cr_assert_eq(rd(0x10) & F_MRG, F_MRG);
	virtio_mmio_destroy(v);
	offer_mrg = false;
	make(VIRTIO_NET_OFFLOADS);
	offer_mrg = true;
	wr(0x14, 0);
	cr_assert_eq(rd(0x10) & F_MRG, 0, "not by default (--net without mrg=on)");
}

Test(virtio_net, rx_mergeable_frame_fills_several_chains_and_keeps_the_rest)
{
	up((1u << 5) | F_MRG);
	for (unsigned i = 0; i < 1000; i++)
		rx_frame[i] = (uint8_t)(i * 7);
	frame(1000);
	post_rx(0, 4, 600); /* 2400 bytes: room for the largest frame without GSO (12 + 1518) */
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rx_calls, 1);
	cr_assert_eq(used_idx(RXQ_BASE), 2, "published together");
	cr_assert_eq(used_id(RXQ_BASE, 0), 0);
	cr_assert_eq(used_len(RXQ_BASE, 0), 600);
	cr_assert_eq(used_id(RXQ_BASE, 1), 1);
	cr_assert_eq(used_len(RXQ_BASE, 1), 400);
	cr_assert_eq(num_buffers(0), 2);
	cr_assert_arr_eq(ram + BUFS + 12, rx_frame + 12, 588);
	cr_assert_arr_eq(ram + BUFS + 4096, rx_frame + 600, 400);
	cr_assert_eq(ncounters().rx_packets, 1);
	cr_assert_eq(ncounters().rx_bytes, 988);

	/* Two chains left (1200 bytes): not room for every frame, and the driver can post more: wait. */
	frame(60);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(rx_calls, 1, "not read with too little room");
	cr_assert_eq(used_idx(RXQ_BASE), 2);
	post_rx(4, 1, 600);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rx_calls, 2);
	cr_assert_eq(used_idx(RXQ_BASE), 3);
	cr_assert_eq(used_id(RXQ_BASE, 2), 2, "the chains kept come first, in order");
	cr_assert_eq(used_len(RXQ_BASE, 2), 60);
	cr_assert_eq(num_buffers(2), 1);
}

Test(virtio_net, rx_mergeable_waits_with_event_idx_for_the_next_buffer)
{
	const uint16_t *avail_event = (const uint16_t *)(ram + RXQ_BASE + 0x800 + 4 + 8 * 16);

	negotiate2(1, (1u << 5) | F_MRG | (1u << 29));
	queue(0, RXQ_BASE);
	queue(1, TXQ_BASE);
	wr(0x70, 0xf);
	frame(60);
	post_rx(0, 2, 600);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rx_calls, 0);
	cr_assert_eq(*avail_event, 2, "notify me when buffer 2 comes, not 0 again");
	post_rx(2, 1, 600);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rx_calls, 1);
	cr_assert_eq(used_idx(RXQ_BASE), 1);
}

Test(virtio_net, rx_mergeable_with_gso_spans_pages)
{
	up((1u << 5) | F_MRG | (1u << 1) | (1u << 7));
	for (unsigned i = 0; i < 20000; i++)
		rx_frame[i] = (uint8_t)(i ^ (i >> 8));
	frame(20000);
	post_rx(0, 16,
		4096); /* the whole ring: 64 KiB, less than 12 + 65550, and the driver can post no more */
	virtio_mmio_poll(v, 0);
	cr_assert_eq(rx_calls, 1, "a full ring is read even short of the largest frame");
	cr_assert_eq(used_idx(RXQ_BASE), 5);
	cr_assert_eq(num_buffers(0), 5);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(used_len(RXQ_BASE, i), 4096);
	cr_assert_eq(used_len(RXQ_BASE, 4), 20000 - 4 * 4096);
	cr_assert_arr_eq(ram + BUFS + 4 * 4096, rx_frame + 4 * 4096, 20000 - 4 * 4096);
	/* Eleven chains left (45 KiB): the driver can post more, so the device waits for them. */
	frame(100);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(rx_calls, 1);
	post_rx(0, 5, 4096);
	/* A frame larger than every chain: the tap truncates it; lost and counted, the other chains kept. */
	frame(66000);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rx_calls, 2);
	cr_assert_eq(used_idx(RXQ_BASE), 6);
	cr_assert_eq(used_id(RXQ_BASE, 5), 5);
	cr_assert_eq(used_len(RXQ_BASE, 5), 0);
	cr_assert_eq(ncounters().rx_dropped, 1);
	post_rx(5, 1, 4096);
	frame(100);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 7);
	cr_assert_eq(used_id(RXQ_BASE, 6), 6);
	cr_assert_eq(used_len(RXQ_BASE, 6), 100);
}

Test(virtio_net, rx_mergeable_no_frame_or_small_first_chain)
{
	struct virtio_counters c;

	up((1u << 5) | F_MRG);
	desc(RXQ_BASE, 0, BUFS, 20, true, false); /* cannot hold a header */
	avail(RXQ_BASE, 0);
	post_rx(1, 2, 1024);
	virtio_mmio_serve(v, 0); /* nothing in the tap: every chain stays */
	cr_assert_eq(rx_calls, 1, "the tap read once, for chains 1 and 2: the first refused before reading");
	cr_assert_eq(used_idx(RXQ_BASE), 1);
	cr_assert_eq(used_id(RXQ_BASE, 0), 0);
	cr_assert_eq(used_len(RXQ_BASE, 0), 0);
	virtio_mmio_get_counters(v, &c);
	cr_assert_eq(c.dropped, 1);
	post_rx(3, 1, 1024);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rx_calls, 2);
	cr_assert_eq(used_idx(RXQ_BASE), 1, "no frame: chains 1 to 3 stay");
	frame(100);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 2);
	cr_assert_eq(used_id(RXQ_BASE, 1), 1);
	cr_assert_eq(used_len(RXQ_BASE, 1), 100);
	cr_assert_eq(num_buffers(1), 1);
	cr_assert_eq(ncounters().rx_packets, 1);
	cr_assert_eq(ncounters().rx_dropped, 0, "a refused chain is not a lost frame");
}

/* A malformed chain among good ones: given back empty in its place, the frame's chains stay in order. */
Test(virtio_net, rx_mergeable_malformed_chain_between_good_ones)
{
	struct virtio_counters c;

	up((1u << 5) | F_MRG);
	post_rx(0, 1, 1024);
	desc(RXQ_BASE, 1, RAM - 16, 1024, true, false); /* beyond guest RAM */
	avail(RXQ_BASE, 1);
	post_rx(2, 1, 1024);
	frame(100);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 2);
	cr_assert_eq(used_id(RXQ_BASE, 0), 0);
	cr_assert_eq(used_len(RXQ_BASE, 0), 100);
	cr_assert_eq(num_buffers(0), 1);
	cr_assert_eq(used_id(RXQ_BASE, 1), 1);
	cr_assert_eq(used_len(RXQ_BASE, 1), 0);
	virtio_mmio_get_counters(v, &c);
	cr_assert_eq(c.dropped, 1);
	cr_assert_eq(rd(0x70) & 0x40, 0, "a bad chain does not break the device");
	post_rx(3, 1, 1024);
	frame(200);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 3);
	cr_assert_eq(used_id(RXQ_BASE, 2), 2);
	cr_assert_eq(used_len(RXQ_BASE, 2), 200);
}

static int defers;
static unsigned defer_q;

static void fake_defer(void *opaque, unsigned q)
{
	(void)opaque;
	defer_q = q;
	defers++;
}

/* The device again, its host with a coalescing timer (fake_defer), the queues in mask coalesced
 * (receive over 300 µs, transmit over 1200). */
static void make_coalescing(uint32_t mask)
{
	struct dev_host h = host;
	struct virtio_net_params p = { .offloads = VIRTIO_NET_OFFLOADS,
				       .ifname = "tap7",
				       .rx_usecs = mask & 1 ? 300 : 0,
				       .tx_usecs = mask & 2 ? 1200 : 0,
				       .io = { NULL, fake_rx, fake_tx, fake_offloads } };

	virtio_mmio_destroy(v);
	h.defer_irq = fake_defer;
	memcpy(p.mac, mac, 6);
	cr_assert_eq(virtio_net_create(&v, &h, &p), 0);
	virtio_mmio_defer_irqs(v, mask);
}

/* One small frame on the transmit queue at descriptor i (a chain of one). */
static void tx_one(unsigned i)
{
	desc(TXQ_BASE, i, BUFS + 128 * i, 60, false, false);
	avail(TXQ_BASE, (uint16_t)i);
	virtio_mmio_serve(v, 1);
}

Test(virtio_net, tx_interrupts_coalesce_until_the_timer_fires)
{
	make_coalescing(1u << 1);
	defers = 0;
	up(1u << 5);
	pulses = 0;
	for (unsigned i = 0; i < 3; i++)
		tx_one(i);
	cr_assert_eq(tx_calls, 3);
	cr_assert_eq(used_idx(TXQ_BASE), 3, "the buffers are given back at once");
	cr_assert_eq(pulses, 0, "their interrupt waits for the timer");
	cr_assert_eq(defers, 1, "one timer for the three");
	cr_assert_eq(defer_q, 1, "the transmit queue's");
	virtio_mmio_fire_deferred(v, 1);
	cr_assert_eq(pulses, 1, "one interrupt for the three");
	cr_assert_eq(rd(0x60) & 1, 1, "InterruptStatus: used buffers");
	virtio_mmio_fire_deferred(v, 1);
	cr_assert_eq(pulses, 1, "a timer with nothing waiting raises nothing");
	tx_one(3);
	cr_assert_eq(defers, 2, "the next frame arms the timer again");
	wr(0x70, 0);
	virtio_mmio_fire_deferred(v, 1);
	cr_assert_eq(pulses, 1, "a reset drops the interrupt that waited");
}

/* A snapshot with a coalesced interrupt still waiting: the state has it raised, and a load raises it again. */
Test(virtio_net, a_waiting_interrupt_is_saved_raised_and_comes_after_a_load)
{
	struct virtio_net_state st;

	make_coalescing(1u << 1);
	up(1u << 5);
	virtio_mmio_repulse(v);
	cr_assert_eq(pulses, 0, "nothing raised: no edge");
	tx_one(0);
	cr_assert_eq(pulses, 0);
	cr_assert_eq(rd(0x60), 0, "not raised yet");
	virtio_net_save(v, &st);
	cr_assert_eq(st.t.int_status & 1, 1, "saved as raised");
	cr_assert_eq(st.rx_usecs, 0, "the setting is saved: no receive coalescing,");
	cr_assert_eq(st.tx_usecs, 1200, "transmit over 1200 us");
	virtio_mmio_destroy(v);
	make(VIRTIO_NET_OFFLOADS);
	cr_assert_eq(virtio_net_load(v, &st), 0);
	virtio_mmio_repulse(v);
	cr_assert_eq(pulses, 1, "the interrupt comes after the load");
	cr_assert_eq(rd(0x60) & 1, 1);
	wr(0x64, 1);
	virtio_mmio_repulse(v);
	cr_assert_eq(pulses, 1, "answered: no edge again");
}

Test(virtio_net, coalescing_beyond_the_longest_is_refused)
{
	struct virtio_mmio *w = NULL;
	struct virtio_net_params p = { .io = { NULL, fake_rx, fake_tx, fake_offloads } };

	memcpy(p.mac, mac, 6);
	p.tx_usecs = VIRTIO_NET_USECS_MAX + 1;
	cr_assert_eq(virtio_net_create(&w, &host, &p), -EINVAL);
	cr_assert_null(w);
	p.tx_usecs = 0;
	p.rx_usecs = VIRTIO_NET_USECS_MAX + 1;
	cr_assert_eq(virtio_net_create(&w, &host, &p), -EINVAL);
	p.rx_usecs = VIRTIO_NET_USECS_MAX;
	cr_assert_eq(virtio_net_create(&w, &host, &p), 0);
	virtio_mmio_destroy(w);
}

Test(virtio_net, tx_interrupts_do_not_wait_without_a_timer)
{
	virtio_mmio_defer_irqs(v, 1u << 1); /* the host gave no defer_irq */
	up(1u << 5);
	pulses = 0;
	tx_one(0);
	cr_assert_eq(pulses, 1);
}

Test(virtio_net, rx_interrupts_coalesce_too)
{
	make_coalescing(1u << 0);
	defers = 0;
	up(1u << 5);
	pulses = 0;
	rx_len = 60;
	rx_left = 2;
	desc(RXQ_BASE, 0, BUFS, 1526, true, false);
	desc(RXQ_BASE, 1, BUFS + 2048, 1526, true, false);
	avail(RXQ_BASE, 0);
	avail(RXQ_BASE, 1);
	virtio_mmio_poll(v, 0);
	cr_assert_eq(used_idx(RXQ_BASE), 2, "both frames in");
	cr_assert_eq(pulses, 0);
	cr_assert_eq(defers, 1);
	cr_assert_eq(defer_q, 0);
	tx_one(0);
	cr_assert_eq(pulses, 1, "the transmit queue's interrupt comes at once");
	virtio_mmio_fire_deferred(v, 0);
	cr_assert_eq(pulses, 2, "the receive queue's when its timer fires");
}
