// SPDX-License-Identifier: MIT
/*
 * Unit tests for the virtio-mmio transport and virtio-rng over a fake
 * guest RAM, driven as a driver (and a hostile one) drives them: the
 * register file, feature negotiation, a queue's set-up, requests served
 * with interrupts, NEEDS_RESET, reset in the middle, save and load.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#define RAM (64u << 10)
#define DESC 0x1000u
#define AVAIL 0x2000u
#define USED 0x3000u
#define BUFS 0x8000u

#include "tests/unit/virtio_fake.h"

static int kicks;

static void setup(void)
{
	memset(ram, 0, sizeof(ram));
	pulses = logs = kicks = 0;
	cr_assert_eq(virtio_rng_create(&v, &host), 0);
}

static void teardown(void)
{
	virtio_mmio_destroy(v);
}

TestSuite(virtio, .init = setup, .fini = teardown);

static struct virtio_counters counters(void)
{
	struct virtio_counters c;

	virtio_mmio_get_counters(v, &c);
	return c;
}

static void queue(uint32_t num)
{
	wr(0x30, 0);
	wr(0x38, num);
	wr(0x80, DESC);
	wr(0x84, 0);
	wr(0x90, AVAIL);
	wr(0x94, 0);
	wr(0xa0, USED);
	wr(0xa4, 0);
	wr(0x44, 1);
}

static void up(void)
{
	negotiate(1);
	queue(16);
	wr(0x70, 0xf);
	cr_assert_eq(rd(0x70), 0xf);
}

/* Offer one writable buffer of len bytes at BUFS + 256 * i as descriptor i. */
static void offer(unsigned i, uint32_t len)
{
	uint8_t *d = ram + DESC + 16 * i;
	uint64_t addr = BUFS + 256 * i;
	uint16_t flags = VRING_DESC_F_WRITE, *avail = (uint16_t *)(ram + AVAIL);

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	avail[2 + (avail[1] & 15)] = (uint16_t)i;
	avail[1]++;
}

static uint16_t used_idx(void)
{
	return *(uint16_t *)(ram + USED + 2);
}

static uint32_t used_len(unsigned slot)
{
	return *(uint32_t *)(ram + USED + 4 + 8 * slot + 4);
}

Test(virtio, identity_registers)
{
	cr_assert_eq(rd(0x000), 0x74726976);
	cr_assert_eq(rd(0x004), 2);
	cr_assert_eq(rd(0x008), 4);
	wr(0x014, 1);
	cr_assert_eq(rd(0x010) & 1, 1, "VERSION_1 offered");
	wr(0x014, 0);
	cr_assert_eq(rd(0x010) & (3u << 28), 3u << 28, "INDIRECT_DESC and EVENT_IDX offered");
	wr(0x014, 7);
	cr_assert_eq(rd(0x010), 0);
	wr(0x030, 0);
	cr_assert_eq(rd(0x034), 256);
	wr(0x030, 1);
	cr_assert_eq(rd(0x034), 0, "no second queue");
	cr_assert_eq(virtio_mmio_nr_queues(v), 1);
	cr_assert_str_eq(virtio_mmio_name(v), "virtio-rng");
}

Test(virtio, features_ok_needs_version_1)
{
	negotiate(0);
	cr_assert_eq(rd(0x70) & 8, 0, "a legacy driver is refused");
	negotiate(1);
	cr_assert_eq(rd(0x70), 0xb);
	negotiate(1 | 4); /* bit 34: not offered */
	cr_assert_eq(rd(0x70) & 8, 0);
}

Test(virtio, driver_ok_before_features_ok_is_ignored)
{
	wr(0x70, 1);
	wr(0x70, 3);
	wr(0x70, 7);
	cr_assert_eq(rd(0x70), 3);
	cr_assert_geq(counters().bad_accesses, 1);
}

Test(virtio, random_bytes_and_interrupt)
{
	up();
	offer(0, 64);
	offer(1, 200);
	wr(0x50, 0); /* no notify_queue callback: served at once */
	cr_assert_eq(used_idx(), 2);
	cr_assert_eq(used_len(0), 64);
	cr_assert_eq(used_len(1), 200);
	cr_assert_eq(pulses, 1);
	cr_assert_eq(rd(0x60), 1);
	wr(0x64, 1);
	cr_assert_eq(rd(0x60), 0);
	{
		unsigned zeros = 0;

		for (unsigned k = 0; k < 64; k++)
			zeros += ram[BUFS + k] == 0;
		cr_assert_lt(zeros, 16, "64 random bytes are not mostly zero");
	}
	cr_assert_eq(counters().requests, 2);
	cr_assert_eq(counters().bytes, 264);
}

Test(virtio, no_interrupt_when_suppressed)
{
	up();
	*(uint16_t *)(ram + AVAIL) = VRING_AVAIL_F_NO_INTERRUPT;
	offer(0, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(pulses, 0);
}

Test(virtio, queue_size_not_power_of_two_needs_reset)
{
	negotiate(1);
	queue(12);
	cr_assert_eq(rd(0x44), 0);
	cr_assert_eq(rd(0x70) & VIRTIO_STATUS_NEEDS_RESET, VIRTIO_STATUS_NEEDS_RESET);
	cr_assert_eq(counters().needs_reset, 1);
	wr(0x70, 0);
	cr_assert_eq(rd(0x70), 0, "a reset clears it");
}

Test(virtio, bad_chain_is_dropped_and_returned)
{
	uint8_t *d;
	uint64_t addr = RAM - 4;
	uint32_t len = 64;

	up();
	offer(0, 8);
	d = ram + DESC;
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	offer(1, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 2);
	cr_assert_eq(used_len(0), 0, "the bad one comes back empty");
	cr_assert_eq(used_len(1), 8);
	cr_assert_eq(counters().dropped, 1);
	cr_assert_eq(counters().requests, 1);
	cr_assert_eq(rd(0x70) & VIRTIO_STATUS_NEEDS_RESET, 0);
	cr_assert_eq(logs, 1);
}

Test(virtio, avail_idx_jump_needs_reset_and_interrupts)
{
	up();
	*(uint16_t *)(ram + AVAIL + 2) = 100;
	virtio_mmio_serve(v, 0);
	cr_assert_eq(rd(0x70) & VIRTIO_STATUS_NEEDS_RESET, VIRTIO_STATUS_NEEDS_RESET);
	cr_assert_eq(rd(0x60) & 2, 2, "a configuration change interrupt");
	cr_assert_eq(pulses, 1);
	offer(0, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 0, "nothing served until reset");
}

Test(virtio, notify_of_queue_never_set_up)
{
	negotiate(1);
	wr(0x70, 0xf);
	wr(0x50, 0);
	wr(0x50, 7);
	cr_assert_eq(counters().bad_accesses, 2);
	cr_assert_eq(counters().requests, 0);
}

Test(virtio, queue_registers_locked_while_ready)
{
	up();
	wr(0x38, 8);
	cr_assert_eq(rd(0x38), 16);
	wr(0x44, 0);
	cr_assert_eq(rd(0x44), 0);
	wr(0x38, 8);
	cr_assert_eq(rd(0x38), 8);
}

Test(virtio, reset_in_the_middle)
{
	up();
	offer(0, 8);
	wr(0x70, 0);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 0, "a reset device serves nothing");
	cr_assert_eq(rd(0x44), 0);
	up();
	memset(ram + USED, 0, 64);
	*(uint16_t *)(ram + AVAIL + 2) = 0;
	offer(0, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 1, "works again after the reset");
}

Test(virtio, status_bits_only_come_on)
{
	up();
	wr(0x70, 0x3);
	cr_assert_eq(rd(0x70), 0xf);
	wr(0x70, 0x4f);
	cr_assert_eq(rd(0x70), 0xf, "the driver cannot set NEEDS_RESET");
}

Test(virtio, narrow_and_config_accesses)
{
	uint8_t d[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct dev_io io = { .offset = 0x70, .len = 1, .data = d };

	virtio_mmio_io(v, &io);
	cr_assert_eq(d[0], 0);
	io = (struct dev_io){ .offset = 0x100, .len = 8, .data = d };
	virtio_mmio_io(v, &io);
	cr_assert_eq(d[7], 0, "no config space: zeros");
	io = (struct dev_io){ .offset = 0xffc, .len = 4, .is_write = true, .data = d };
	virtio_mmio_io(v, &io);
	cr_assert_eq(counters().bad_accesses, 3);
}

Test(virtio, save_and_load)
{
	struct virtio_mmio_state st, st2;

	up();
	offer(0, 8);
	virtio_mmio_serve(v, 0);
	virtio_mmio_save(v, &st);
	cr_assert_eq(st.status, 0xf);
	cr_assert(st.q[0].ready);
	cr_assert_eq(st.q[0].num, 16);
	cr_assert_eq(st.q[0].last_avail, 1);
	cr_assert_eq(st.q[0].used_idx, 1);
	cr_assert(virtio_mmio_state_valid(&st));
	wr(0x70, 0);
	cr_assert_eq(virtio_mmio_load(v, &st), 0);
	virtio_mmio_save(v, &st2);
	cr_assert_eq(memcmp(&st, &st2, sizeof(st)), 0);
	offer(1, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 2, "continues after the load");
	st2 = st;
	st2.q[0].num = 12;
	cr_assert_eq(virtio_mmio_load(v, &st2), -EINVAL);
	st2 = st;
	st2.q[0].used = RAM;
	cr_assert_eq(virtio_mmio_load(v, &st2), -EINVAL, "rings outside RAM");
	st2 = st;
	st2.q[1] = st.q[0];
	cr_assert_eq(virtio_mmio_load(v, &st2), -EINVAL, "a ready queue rng does not have");
	st2 = st;
	st2.status = 0x100;
	cr_assert_not(virtio_mmio_state_valid(&st2));
}

Test(virtio, destroy_null)
{
	virtio_mmio_destroy(NULL);
}

Test(virtio, event_idx)
{
	uint16_t *avail = (uint16_t *)(ram + AVAIL);

	negotiate2(1, 1u << 29); /* EVENT_IDX */
	cr_assert_eq(rd(0x70), 0xb);
	queue(16);
	wr(0x70, 0xf);
	avail[2 + 16] = 1; /* used_event: interrupt once used idx passes 1 */
	offer(0, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(pulses, 0, "used idx 1 has not passed used_event 1");
	cr_assert_eq(*(uint16_t *)(ram + USED + 4 + 8 * 16), 1, "avail_event published");
	offer(1, 8);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 2);
	cr_assert_eq(pulses, 1);
}

Test(virtio, counters_continue_in_a_loaded_device)
{
	struct virtio_mmio_state st;
	struct virtio_mmio *w;
	struct virtio_counters c;

	up();
	offer(0, 8);
	offer(1, 8);
	virtio_mmio_serve(v, 0);
	virtio_mmio_save(v, &st);
	cr_assert_eq(st.c.requests, 2);
	cr_assert_eq(st.c.bytes, 16);
	cr_assert_eq(virtio_rng_create(&w, &host), 0);
	cr_assert_eq(virtio_mmio_load(w, &st), 0);
	virtio_mmio_get_counters(w, &c);
	cr_assert_eq(c.requests, 2);
	cr_assert_eq(c.bytes, 16);
	cr_assert_eq(c.interrupts, 1);
	wr(0x70, 0);
	virtio_mmio_get_counters(v, &c);
	cr_assert_eq(c.requests, 2, "a driver's reset does not reset the counters");
	virtio_mmio_destroy(w);
}
