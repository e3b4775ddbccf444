// SPDX-License-Identifier: MIT
/*
 * Unit tests for virtio-blk over a fake guest RAM and a fake I/O engine
 * (an in-memory disk whose operations complete when the test says): the
 * configuration, each request type, the bad requests of the spec (status
 * IOERR or UNSUPP, counted), read-only, many requests in flight, and a
 * reset with requests in flight (their completions touch no ring), and
 * save and load (the disk counters continue).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#define RAM (256u << 10)
#define DESC 0x1000u
#define AVAIL 0x2000u
#define USED 0x3000u
#define HDRS 0x8000u   /* 16 bytes per request i */
#define STATUS 0x9000u /* 1 byte per request i */
#define DATA 0x10000u  /* 4 KiB per request i */
#define SECTORS 64u
#define QN 64u

#include "tests/unit/virtio_fake.h"

static uint8_t disk[SECTORS * 512];

/* The fake engine: operations wait here until run_engine(). */
static struct blk_io pending[512];
static struct iovec pending_iov[512][8];
static unsigned npending, flushes;
static bool engine_fails;

static int fake_submit(void *opaque, const struct blk_io *io)
{
	(void)opaque;
	if (engine_fails)
		return -EIO;
	cr_assert_lt(npending, 512);
	cr_assert_leq(io->niov, 8);
	pending[npending] = *io;
	memcpy(pending_iov[npending], io->iov, io->niov * sizeof(struct iovec));
	pending[npending].iov = pending_iov[npending];
	npending++;
	return 0;
}

static void make(bool ro, bool discard)
{
	struct virtio_blk_params p = {
		.sectors = SECTORS,
		.readonly = ro,
		.discard = discard,
		.write_zeroes = discard,
		.engine = { NULL, fake_submit },
	};

	memcpy(p.serial, "disk-serial-1234", 16);
	cr_assert_eq(virtio_blk_create(&v, &p, &host), 0);
}

static void setup(void)
{
	memset(ram, 0, sizeof(ram));
	for (unsigned i = 0; i < sizeof(disk); i++)
		disk[i] = (uint8_t)(i / 512 + 1);
	pulses = 0;
	npending = flushes = 0;
	engine_fails = false;
	make(false, true);
}

static void teardown(void)
{
	virtio_mmio_destroy(v);
}

TestSuite(virtio_blk, .init = setup, .fini = teardown);

/* Do every pending operation on the in-memory disk (res: bytes, or a forced short result), complete them. */
static void run_engine(int64_t force)
{
	uint64_t tags[512];
	int64_t res[512];

	for (unsigned i = 0; i < npending; i++) {
		struct blk_io *io = &pending[i];
		uint64_t off = io->off, done = 0;

		for (unsigned k = 0; k < io->niov; k++) {
			if (io->op == BLK_OP_READ)
				memcpy(io->iov[k].iov_base, disk + off, io->iov[k].iov_len);
			else if (io->op == BLK_OP_WRITE)
				memcpy(disk + off, io->iov[k].iov_base, io->iov[k].iov_len);
			off += io->iov[k].iov_len;
			done += io->iov[k].iov_len;
		}
		if (io->op == BLK_OP_DISCARD || io->op == BLK_OP_ZERO)
			memset(disk + io->off, 0, io->len);
		flushes += io->op == BLK_OP_FLUSH;
		tags[i] = io->tag;
		res[i] = force ? force : (int64_t)done;
	}
	virtio_mmio_complete(v, tags, res, npending);
	npending = 0;
}

static void up(void)
{
	negotiate(1);
	wr(0x30, 0);
	wr(0x38, QN);
	wr(0x80, DESC);
	wr(0x90, AVAIL);
	wr(0xa0, USED);
	wr(0x44, 1);
	wr(0x70, 0xf);
	cr_assert_eq(rd(0x70), 0xf);
}

static void desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = ram + DESC + 16 * i;

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void avail(uint16_t head)
{
	uint16_t *a = (uint16_t *)(ram + AVAIL);

	a[2 + (a[1] % QN)] = head;
	a[1]++;
}

/*
 * Request r (descriptors 3r..3r+2): header, data of len bytes (if any),
 * status. in: the data is device-writable.
 */
static void request(unsigned r, uint32_t type, uint64_t sector, uint32_t len, bool in)
{
	uint8_t *h = ram + HDRS + 16 * r;
	unsigned d0 = 3 * r;

	memset(h, 0, 16);
	memcpy(h, &type, 4);
	memcpy(h + 8, &sector, 8);
	ram[STATUS + r] = 0xff;
	desc(d0, HDRS + 16 * r, 16, VRING_DESC_F_NEXT, (uint16_t)(len ? d0 + 1 : d0 + 2));
	if (len)
		desc(d0 + 1, DATA + 4096 * r, len, VRING_DESC_F_NEXT | (in ? VRING_DESC_F_WRITE : 0),
		     (uint16_t)(d0 + 2));
	desc(d0 + 2, STATUS + r, 1, VRING_DESC_F_WRITE, 0);
	avail((uint16_t)d0);
}

static uint16_t used_idx(void)
{
	return *(uint16_t *)(ram + USED + 2);
}

static uint32_t used_len(unsigned slot)
{
	return *(uint32_t *)(ram + USED + 4 + 8 * slot + 4);
}

static struct virtio_blk_counters bc(void)
{
	struct virtio_blk_counters c;

	cr_assert(virtio_blk_get_counters(v, &c));
	return c;
}

Test(virtio_blk, config_and_features)
{
	uint32_t f0;

	cr_assert_eq(rd(0x008), 2, "device ID 2");
	wr(0x014, 0);
	f0 = rd(0x010);
	cr_assert(f0 & (1u << 9), "FLUSH");
	cr_assert(f0 & (1u << 2), "SEG_MAX");
	cr_assert(f0 & (1u << 6), "BLK_SIZE");
	cr_assert(f0 & (1u << 13) && f0 & (1u << 14), "DISCARD and WRITE_ZEROES where the image has them");
	cr_assert_eq(f0 & (1u << 5), 0, "not read-only");
	cr_assert_eq(rd(0x100), SECTORS, "capacity, low word");
	cr_assert_eq(rd(0x104), 0, "capacity, high word");
	cr_assert_eq(rd(0x10c), VQ_MAX_BUFS - 2, "seg_max");
	cr_assert_eq(rd(0x114), 512, "blk_size");
	cr_assert_eq(rd(0x128), 1, "max_discard_seg");
	wr(0x030, 0);
	cr_assert_eq(rd(0x034), 256);
	{
		struct virtio_counters c;

		virtio_mmio_get_counters(v, &c);
		cr_assert_eq(c.bad_accesses, 0);
	}
	rd(0x13c); /* beyond the 60 bytes */
}

Test(virtio_blk, readonly_features)
{
	virtio_mmio_destroy(v);
	make(true, true);
	wr(0x014, 0);
	cr_assert(rd(0x010) & (1u << 5), "RO");
	cr_assert_eq(rd(0x010) & (3u << 13), 0, "no discard on a read-only disk");
}

Test(virtio_blk, read_write_flush)
{
	up();
	request(0, 0, 3, 1024, true); /* read sectors 3, 4 */
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 0, "not answered before the engine completes");
	cr_assert_eq(npending, 1);
	cr_assert_eq(pending[0].op, BLK_OP_READ);
	cr_assert_eq(pending[0].off, 3 * 512);
	cr_assert_eq(pending[0].iov[0].iov_base, ram + DATA, "straight into guest RAM");
	cr_assert_eq(virtio_mmio_inflight(v), 1);
	run_engine(0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(ram[STATUS], 0, "S_OK");
	cr_assert_eq(used_len(0), 1025);
	cr_assert_eq(ram[DATA], 4);
	cr_assert_eq(ram[DATA + 1023], 5);
	cr_assert_eq(pulses, 1);

	request(1, 1, 10, 512, false);
	memset(ram + DATA + 4096, 0xab, 512);
	request(2, 4, 0, 0, false);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 2);
	cr_assert_eq(pending[1].op, BLK_OP_FLUSH);
	run_engine(0);
	cr_assert_eq(used_idx(), 3);
	cr_assert_eq(disk[10 * 512], 0xab);
	cr_assert_eq(ram[STATUS + 1], 0);
	cr_assert_eq(ram[STATUS + 2], 0);
	cr_assert_eq(used_len(1), 1);
	cr_assert_eq(flushes, 1);
	cr_assert_eq(bc().reads, 1);
	cr_assert_eq(bc().writes, 1);
	cr_assert_eq(bc().flushes, 1);
	cr_assert_eq(bc().bytes_read, 1024);
	cr_assert_eq(bc().bytes_written, 512);
	cr_assert_eq(bc().inflight, 0);
	cr_assert_eq(bc().inflight_peak, 2);
	cr_assert_eq(bc().lat[0] + bc().lat[1] + bc().lat[2] + bc().lat[3], 3);
}

Test(virtio_blk, get_id)
{
	up();
	request(0, 8, 0, 20, true);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 1, "answered at once");
	cr_assert_eq(ram[STATUS], 0);
	cr_assert_eq(memcmp(ram + DATA, "disk-serial-1234\0\0\0\0", 20), 0);
	cr_assert_eq(used_len(0), 21);
}

Test(virtio_blk, bad_requests)
{
	up();
	request(0, 0, SECTORS - 1, 1024, true); /* beyond the end */
	request(1, 0, UINT64_MAX, 512, true);	/* sector * 512 overflows */
	request(2, 0, 0, 100, true);		/* not a sector multiple */
	request(3, 99, 0, 0, false);		/* unknown type */
	request(4, 1, SECTORS, 512, false);	/* write beyond the end */
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 0, "nothing reaches the engine");
	cr_assert_eq(used_idx(), 5);
	cr_assert_eq(ram[STATUS + 0], 1, "IOERR");
	cr_assert_eq(ram[STATUS + 1], 1);
	cr_assert_eq(ram[STATUS + 2], 1);
	cr_assert_eq(ram[STATUS + 3], 2, "UNSUPP");
	cr_assert_eq(ram[STATUS + 4], 1);
	cr_assert_eq(bc().errors, 5);
}

Test(virtio_blk, header_too_short_or_writable_no_status)
{
	struct virtio_counters c;

	up();
	/* a header of 8 bytes */
	desc(0, HDRS, 8, VRING_DESC_F_NEXT, 1);
	desc(1, STATUS, 1, VRING_DESC_F_WRITE, 0);
	avail(0);
	/* a header in a writable buffer */
	desc(3, HDRS + 16, 16, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 4);
	desc(4, STATUS + 1, 1, VRING_DESC_F_WRITE, 0);
	avail(3);
	/* no status byte at all */
	desc(6, HDRS + 32, 16, 0, 0);
	avail(6);
	ram[STATUS] = ram[STATUS + 1] = 0xff;
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 3);
	cr_assert_eq(ram[STATUS], 1);
	cr_assert_eq(ram[STATUS + 1], 1);
	cr_assert_eq(used_len(2), 0, "no status: given back empty");
	virtio_mmio_get_counters(v, &c);
	cr_assert_eq(c.dropped, 1);
	cr_assert_eq(bc().errors, 2);
}

Test(virtio_blk, readonly_refuses_writes)
{
	virtio_mmio_destroy(v);
	make(true, false);
	up();
	request(0, 1, 0, 512, false);
	request(1, 0, 0, 512, true);
	request(2, 11, 0, 16, false);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 1, "only the read");
	run_engine(0);
	cr_assert_eq(ram[STATUS], 1, "a write to a read-only disk: IOERR");
	cr_assert_eq(ram[STATUS + 1], 0);
	cr_assert_eq(ram[STATUS + 2], 2, "discard not offered: UNSUPP");
	cr_assert_eq(disk[0], 1, "unchanged");
}

Test(virtio_blk, discard_and_write_zeroes)
{
	uint8_t *seg = ram + DATA;
	uint64_t s = 2;
	uint32_t n = 3, flags = 0;

	up();
	memcpy(seg, &s, 8);
	memcpy(seg + 8, &n, 4);
	memcpy(seg + 12, &flags, 4);
	request(0, 13, 0, 16, false);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 1);
	cr_assert_eq(pending[0].op, BLK_OP_ZERO);
	cr_assert_eq(pending[0].off, 1024);
	cr_assert_eq(pending[0].len, 1536);
	run_engine(0);
	cr_assert_eq(ram[STATUS], 0);
	cr_assert_eq(disk[2 * 512], 0);
	cr_assert_eq(disk[5 * 512], 6);
	/* a discard with the unmap flag: UNSUPP; a range beyond the end: IOERR */
	flags = 1;
	memcpy(seg + 12, &flags, 4);
	request(1, 11, 0, 16, false);
	memcpy(ram + DATA + 4096, seg, 12);
	memset(ram + DATA + 4096 + 12, 0, 4);
	request(1, 11, 0, 16, false);
	virtio_mmio_serve(v, 0);
	run_engine(0);
	cr_assert_eq(used_idx(), 3);
	s = SECTORS - 1;
	n = 2;
	flags = 0;
	memcpy(ram + DATA + 8192, &s, 8);
	memcpy(ram + DATA + 8192 + 8, &n, 4);
	memcpy(ram + DATA + 8192 + 12, &flags, 4);
	request(2, 11, 0, 16, false);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 0);
	cr_assert_eq(ram[STATUS + 2], 1);
}

Test(virtio_blk, many_in_flight_and_short_result)
{
	up();
	for (unsigned r = 0; r < 20; r++)
		request(r, 0, r, 512, true);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 20);
	cr_assert_eq(bc().inflight, 20);
	run_engine(100); /* every one short */
	cr_assert_eq(used_idx(), 20);
	for (unsigned r = 0; r < 20; r++)
		cr_assert_eq(ram[STATUS + r], 1, "a short read is an error");
	cr_assert_eq(bc().errors, 20);
	cr_assert_eq(bc().inflight_peak, 20);
}

Test(virtio_blk, engine_refuses)
{
	up();
	engine_fails = true;
	request(0, 0, 0, 512, true);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(ram[STATUS], 1);
}

Test(virtio_blk, reset_with_requests_in_flight)
{
	up();
	request(0, 0, 0, 512, true);
	request(1, 0, 1, 512, true);
	virtio_mmio_serve(v, 0);
	cr_assert_eq(npending, 2);
	wr(0x70, 0); /* reset */
	memset(ram + USED, 0x5a, 64);
	ram[STATUS] = ram[STATUS + 1] = 0x77;
	run_engine(0);
	cr_assert_eq(ram[USED + 2], 0x5a, "the old used ring is not written");
	cr_assert_eq(ram[STATUS], 0x77, "nor the old status byte");
	cr_assert_eq(virtio_mmio_inflight(v), 0);
	/* the device works again after a new set-up */
	memset(ram + USED, 0, 64);
	memset(ram + AVAIL, 0, 64);
	up();
	request(0, 0, 0, 512, true);
	virtio_mmio_serve(v, 0);
	run_engine(0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(ram[STATUS], 0);
}

Test(virtio_blk, flood_beyond_the_queue_is_refused)
{
	up();
	/* the same head made available again and again: more requests than slots */
	request(0, 0, 0, 512, true);
	for (unsigned k = 0; k < 300; k++) {
		uint16_t *a = (uint16_t *)(ram + AVAIL);

		virtio_mmio_serve(v, 0);
		a[2 + (a[1] % QN)] = 0;
		a[1]++;
	}
	cr_assert_leq(npending, 256, "never more at the engine than its slots");
	run_engine(0);
}

Test(virtio_blk, save_and_load_keep_the_disk_counters)
{
	struct virtio_blk_state st, st2;

	up();
	request(0, 0, 3, 1024, true);
	request(1, 1, 10, 512, false);
	virtio_mmio_serve(v, 0);
	run_engine(0);
	memset(&st, 0xee, sizeof(st));
	virtio_blk_save(v, &st);
	cr_assert_eq(st.bc.reads, 1);
	cr_assert_eq(st.bc.writes, 1);
	cr_assert_eq(st.bc.bytes_read, 1024);
	cr_assert_eq(st.bc.inflight, 0, "a saved disk has nothing in flight");
	cr_assert_eq(st.t.c.requests, 2, "the transport's counters too");

	virtio_mmio_destroy(v);
	make(false, true);
	cr_assert_eq(bc().reads, 0, "a new disk starts at 0");
	cr_assert_eq(virtio_blk_load(v, &st), 0);
	cr_assert_eq(bc().reads, 1, "the counters continue");
	cr_assert_eq(bc().writes, 1);
	cr_assert_eq(bc().bytes_written, 512);
	cr_assert_eq(bc().inflight_peak, st.bc.inflight_peak);
	cr_assert_eq(bc().lat[0] + bc().lat[1] + bc().lat[2] + bc().lat[3], 2);
	request(2, 0, 0, 512, true);
	virtio_mmio_serve(v, 0);
	run_engine(0);
	cr_assert_eq(bc().reads, 2, "and go on counting");
	cr_assert_eq(used_idx(), 3, "the queue goes on where it was");

	/* An invalid transport state changes nothing. */
	virtio_blk_save(v, &st2);
	st2.t.status = 0xffffffffu;
	st2.bc.reads = 999;
	cr_assert_eq(virtio_blk_load(v, &st2), -EINVAL);
	cr_assert_eq(bc().reads, 2);
}

Test(virtio_blk, load_refuses_a_device_that_is_not_a_disk)
{
	struct virtio_mmio *rng;
	struct virtio_blk_state st;

	virtio_blk_save(v, &st);
	cr_assert_eq(virtio_rng_create(&rng, &host), 0);
	cr_assert_eq(virtio_blk_load(rng, &st), -EINVAL);
	virtio_mmio_destroy(rng);
}
