// SPDX-License-Identifier: MIT
/*
 * virtio-blk: finds perfvisor's disk (base=ADDR, gsi=N; default the first
 * window), checks its features and capacity (sectors=N), reads the
 * pattern the test wrote (sector i starts "pv-sector-NNNN\n", then zeros),
 * eight requests in flight at once; writes sectors 8-15 ("pv-written-NNNN\n"
 * then 0xa5), flushes, reads them back; asks GET_ID; a request beyond the
 * end gets IOERR. ro: the disk is read-only (RO offered, a write gets
 * IOERR, the sectors are unchanged). hostile: a header in a writable
 * buffer, a data buffer outside RAM, a sector that overflows, and a reset
 * with requests in flight (the old used ring is not written after it).
 * pause_ms=M: print "virtio-blk: flushed", then wait M ms (the test kills
 * perfvisor there). loop=N: N rounds of 8 writes of 4 KiB and reads back
 * (a snapshot is taken meanwhile), after the hostile cases with hostile;
 * loop_ms=M: such rounds for M ms (a host that emulates ring 0, kvm_pvm,
 * does ten times fewer than the test host). Ring 0 only for the driver.
 */
#include "guest.h"

#define VECTOR 0x23
#define NREQ 8
#define T_IN 0u
#define T_OUT 1u
#define T_FLUSH 4u
#define T_GET_ID 8u

struct hdr {
	uint32_t type, ioprio;
	uint64_t sector;
};

/* One request's memory: the header, its data right after (an OUT's header and data are one buffer), a status byte. */
struct req {
	struct hdr h;
	uint8_t data[4096 + 1]; /* an IN's data, then its status byte: one writable buffer */
	uint8_t st;		/* the status byte of OUT, FLUSH and the others */
};

static struct vio_queue q;
static struct vio_dev dev;
static struct req reqs[NREQ] __attribute__((aligned(4096)));
static uint8_t *stp[NREQ]; /* where request i's status byte is */
static volatile uint32_t irqs;
static uint16_t used_seen;

#define data(i) (reqs[i].data)

static bool on_irq(struct rt_regs *regs)
{
	(void)regs;
	vio_irq_ack(&dev);
	irqs++;
	apic_eoi();
	return true;
}

/*
 * Request i as descriptors 2i, 2i+1: IN and GET_ID: the header, then the
 * data and the status byte in one writable buffer; OUT: the header and
 * the data in one readable buffer, then the status byte.
 */
static void prepare(unsigned i, uint32_t type, uint64_t sector, uint32_t len)
{
	unsigned d = 2 * i;
	bool in = type == T_IN || type == T_GET_ID;
	struct req *r = &reqs[i];

	r->h = (struct hdr){ type, 0, sector };
	stp[i] = in ? &r->data[len] : &r->st;
	*stp[i] = 0xff;
	q.desc[d] =
		(struct vio_desc){ (uintptr_t)&r->h, 16 + (in ? 0 : len), VIO_DESC_NEXT, (uint16_t)(d + 1) };
	q.desc[d + 1] = in ? (struct vio_desc){ (uintptr_t)r->data, len + 1, VIO_DESC_WRITE, 0 }
			   : (struct vio_desc){ (uintptr_t)&r->st, 1, VIO_DESC_WRITE, 0 };
}

/* Make requests 0..n-1 available at once, one notification; wait for all. */
static bool submit(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		q.avail_ring[(dev.next_avail + i) % dev.num] = (uint16_t)(2 * i);
	dev.next_avail = (uint16_t)(dev.next_avail + n);
	__atomic_store_n(&q.avail_idx, dev.next_avail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vio_write(&dev, 0x050, 0);
	used_seen = (uint16_t)(used_seen + n);
	return vio_wait_used(&dev, used_seen, 20000000);
}

static uint8_t status(unsigned i)
{
	return __atomic_load_n(stp[i], __ATOMIC_ACQUIRE);
}

static void fmt_tag(char *out, const char *what, unsigned n)
{
	/* "pv-sector-0007\n" / "pv-written-0012\n" */
	unsigned k = 0;

	for (const char *p = what; *p; p++)
		out[k++] = *p;
	for (unsigned div = 1000; div; div /= 10)
		out[k++] = (char)('0' + n / div % 10);
	out[k++] = '\n';
	out[k] = 0;
}

static bool up(uint64_t *sectors, uint32_t *feat)
{
	uint32_t st, want;

	vio_write(&dev, 0x014, 0);
	*feat = vio_read(&dev, 0x010);
	/* SEG_MAX, RO, BLK_SIZE, FLUSH: the ones this driver knows, if offered */
	want = *feat & ((1u << 2) | (1u << 5) | (1u << 6) | (1u << 9));
	st = vio_negotiate(&dev, 1, want);
	if (st != (VIO_ST_ACK | VIO_ST_DRIVER | VIO_ST_FEATURES_OK))
		return false;
	*sectors = (uint64_t)vio_read(&dev, 0x100) | (uint64_t)vio_read(&dev, 0x104) << 32;
	if (!vio_queue_setup(&dev, &q, 16))
		return false;
	used_seen = 0;
	vio_write(&dev, 0x070, st | VIO_ST_DRIVER_OK);
	return true;
}

static void read_pattern(void)
{
	bool ok = true;
	char tag[24];

	for (unsigned i = 0; i < NREQ; i++)
		prepare(i, T_IN, i, 512);
	report(submit(NREQ), "8 reads in flight at once answered");
	for (unsigned i = 0; i < NREQ; i++) {
		fmt_tag(tag, "pv-sector-", i);
		ok &= status(i) == 0 && !memcmp(data(i), tag, 15);
		for (unsigned k = 15; k < 512; k++)
			ok &= data(i)[k] == 0;
	}
	report(ok, "sectors 0-7 hold the pattern the test wrote");
}

static void write_flush_read(bool ro)
{
	bool ok = true;
	char tag[24];

	for (unsigned i = 0; i < NREQ; i++) {
		prepare(i, T_OUT, 8 + i, 512);
		memset(data(i), 0xa5, 512);
		fmt_tag(tag, "pv-written-", 8 + i);
		memcpy(data(i), tag, 16);
	}
	report(submit(NREQ), "8 writes in flight at once answered");
	for (unsigned i = 0; i < NREQ; i++)
		ok &= status(i) == (ro ? 1 : 0);
	report(ok, ro ? "every write to the read-only disk: IOERR" : "every write: OK");
	prepare(0, T_FLUSH, 0, 0);
	report(submit(1) && status(0) == 0, "flush: OK (status %u)", status(0));
	for (unsigned i = 0; i < NREQ; i++) {
		prepare(i, T_IN, 8 + i, 512);
		memset(data(i), 0, 512);
	}
	report(submit(NREQ), "read back");
	ok = true;
	for (unsigned i = 0; i < NREQ; i++) {
		fmt_tag(tag, ro ? "pv-sector-" : "pv-written-", 8 + i);
		ok &= status(i) == 0 && !memcmp(data(i), tag, ro ? 15 : 16) &&
		      data(i)[511] == (ro ? 0 : 0xa5);
	}
	report(ok, ro ? "sectors 8-15 unchanged" : "sectors 8-15 hold what was written");
}

static void get_id_and_bad(uint64_t sectors)
{
	prepare(0, T_GET_ID, 0, 20);
	memset(data(0), 0, 20);
	report(submit(1) && status(0) == 0, "GET_ID: OK");
	data(0)[20] = 0;
	printf("virtio-blk: id '%s'\n", (const char *)data(0));
	prepare(0, T_IN, sectors - 1, 1024);
	prepare(1, T_IN, sectors, 512);
	prepare(2, 77, 0, 0);
	report(submit(3) && status(0) == 1 && status(1) == 1 && status(2) == 2,
	       "beyond the end: IOERR, IOERR; unknown type: UNSUPP (%u %u %u)", status(0), status(1),
	       status(2));
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static void hostile(void)
{
	uint16_t before;

	/* a header in a writable buffer */
	prepare(0, T_IN, 0, 512);
	q.desc[0].flags |= VIO_DESC_WRITE;
	/* a data buffer outside RAM */
	prepare(1, T_IN, 0, 512);
	q.desc[3].addr = 0x7f0000000000ULL;
	/* sector * 512 overflows */
	prepare(2, T_IN, 0x0080000000000001ULL, 512);
	report(submit(3), "hostile requests answered");
	report(status(0) == 1, "a header in a writable buffer: IOERR (%u)", status(0));
	report(q.used_ring[(used_seen - 2) % 16].len == 0, "a buffer outside RAM: given back empty");
	report(status(2) == 1, "a sector that overflows: IOERR (%u)", status(2));
	/* a reset with requests in flight: 8 reads of 8 sectors, then reset at once */
	for (unsigned i = 0; i < NREQ; i++)
		prepare(i, T_IN, 64 * i, 4096);
	for (unsigned i = 0; i < NREQ; i++)
		q.avail_ring[(dev.next_avail + i) % dev.num] = (uint16_t)(2 * i);
	dev.next_avail = (uint16_t)(dev.next_avail + NREQ);
	__atomic_store_n(&q.avail_idx, dev.next_avail, __ATOMIC_RELEASE);
	vio_write(&dev, 0x050, 0);
	vio_write(&dev, 0x070, 0);
	before = __atomic_load_n(&q.used_idx, __ATOMIC_ACQUIRE);
	q.used_idx = 0x1234; /* whatever an old completion would write over */
	rt_wait_irq(never, NULL, 200000);
	report(q.used_idx == 0x1234, "after the reset the old used ring stays untouched (%u before)", before);
}

static void loop(uint32_t rounds, uint32_t ms)
{
	bool ok = true;
	uint64_t t0 = rdtsc(), us;

	printf("virtio-blk: looping\n");
	for (uint32_t r = 0; r < rounds && ok; r++) {
		if (ms && tsc_to_us(rdtsc() - t0) >= (uint64_t)ms * 1000) {
			rounds = r;
			break;
		}
		for (unsigned i = 0; i < NREQ; i++) {
			prepare(i, T_OUT, 1024 + 64 * i, 4096);
			memset(data(i), (int)(r * 8 + i), 4096);
		}
		ok &= submit(NREQ);
		for (unsigned i = 0; i < NREQ; i++) {
			ok &= status(i) == 0;
			prepare(i, T_IN, 1024 + 64 * i, 4096);
			memset(data(i), 0, 4096);
		}
		ok &= submit(NREQ);
		for (unsigned i = 0; i < NREQ; i++)
			for (unsigned k = 0; k < 4096; k += 512)
				ok &= status(i) == 0 && data(i)[k] == (uint8_t)(r * 8 + i);
		if (!ok)
			printf("virtio-blk: round %u went wrong\n", r);
	}
	us = tsc_to_us(rdtsc() - t0);
	report(ok, "%u rounds of 8 writes and 8 reads, every byte right", rounds);
	/* A snapshot in between makes this the time across it. */
	printf("virtio-blk: %u requests of 4 KiB, 8 in flight, in %lu us: %lu requests/s\n", rounds * 16,
	       (unsigned long)us, (unsigned long)(us ? rounds * 16ULL * 1000000 / us : 0));
}

int main(const struct pv_bootinfo *bi)
{
	uint64_t sectors = 0, want = cmdline_get_u64("sectors", 0);
	uint32_t feat = 0, pause_ms = (uint32_t)cmdline_get_u64("pause_ms", 0);
	bool ro = cmdline_has("ro");

	(void)bi;
	dev.base = cmdline_get_u64("base", VIO_BASE);
	if (!vio_probe(&dev, 2)) {
		report(false, "virtio-blk at 0x%lx (device %u)", (unsigned long)dev.base, vio_read(&dev, 8));
		return report_summary();
	}
	report(up(&sectors, &feat), "virtio-blk at 0x%lx set up (features 0x%x)", (unsigned long)dev.base,
	       feat);
	report(feat & (1u << 9), "FLUSH offered");
	report(!!(feat & (1u << 5)) == ro, "RO %s", ro ? "offered" : "not offered");
	report(!want || sectors == want, "capacity %lu sectors", (unsigned long)sectors);
	rt_set_handler(VECTOR, on_irq);
	vio_ioapic_route((uint32_t)cmdline_get_u64("gsi", VIO_GSI), VECTOR, smp_apic_id(0));
	if (cmdline_has("loop") || cmdline_has("loop_ms")) {
		uint32_t ms = (uint32_t)cmdline_get_u64("loop_ms", 0);

		if (cmdline_has("hostile")) {
			hostile();
			report(up(&sectors, &feat), "set up again after the reset");
		}
		loop(ms ? UINT32_MAX : (uint32_t)cmdline_get_u64("loop", 10), ms);
		return report_summary();
	}
	read_pattern();
	write_flush_read(ro);
	if (pause_ms) {
		printf("virtio-blk: flushed\n");
		rt_wait_irq(never, NULL, (uint64_t)pause_ms * 1000);
	}
	get_id_and_bad(sectors);
	if (cmdline_has("hostile")) {
		hostile();
		report(up(&sectors, &feat), "set up again after the reset");
		read_pattern();
	}
	report(vio_read(&dev, 0x070) == 0xf, "status 0x%x: no NEEDS_RESET", vio_read(&dev, 0x070));
	printf("virtio-blk: done, %u interrupts\n", irqs);
	return report_summary();
}
