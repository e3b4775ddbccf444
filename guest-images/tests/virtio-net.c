// SPDX-License-Identifier: MIT
/*
 * virtio-net: finds perfvisor's virtio-net device at 0xd0000000 (--net;
 * base=ADDR elsewhere), negotiates VERSION_1, MAC and STATUS, reads the
 * MAC (mac=aa:bb:cc:dd:ee:ff: the one expected) and the link, sets up the
 * receive (0) and transmit (1) queues, then talks to the host's end of
 * the tap (ip=the guest's address, host=the host's; default 10.0.2.15
 * and 10.0.2.1): an ARP request, whose reply must come back to this MAC
 * from the host's, then an ICMP echo request, whose reply must carry the
 * same payload. The transmitted header is split across two buffers.
 * hostile: first the misuses a driver must not make (notifications of
 * queues not set up, a receive buffer smaller than a header, a transmit
 * chain longer than 64 KiB, a reset with frames pending), then the same
 * exchange must still work. pause_ms=M: after the exchange, print
 * "virtio-net: waiting", sleep M ms (a snapshot is taken meanwhile), then
 * exchange again. flood=N: then N UDP frames of 1442 bytes, 8 per
 * notification, and their rate. mergeable: negotiate MRG_RXBUF, post 16
 * receive buffers of 256 bytes, and ping with 1000 bytes of payload: each
 * reply spans 5 buffers, num_buffers says so, and the frame put together
 * carries the payload sent.
 */
#include "guest.h"

#define VECTOR 0x22
#define NRX 8
#define RXBUF 2048
#define HDR 12
#define MRG_NRX 16
#define MRG_BUF 256
#define F_MRG_RXBUF (1u << 15)

static struct vio_queue rxq, txq;
static struct vio_dev rx, tx;
static uint8_t rxbuf[NRX][RXBUF] __attribute__((aligned(64)));
static uint8_t rxsmall[MRG_NRX][MRG_BUF] __attribute__((aligned(64))), joined[HDR + 1514];
static bool mrg;	      /* mergeable receive buffers negotiated */
static uint32_t payload = 32; /* of each ICMP echo request */
static uint8_t hdr[HDR], frame[1514], big[70000];
static uint8_t txbuf[8][HDR + 1442] __attribute__((aligned(64)));
static uint8_t mac[6], host_mac[6];
static uint8_t my_ip[4] = { 10, 0, 2, 15 }, host_ip[4] = { 10, 0, 2, 1 };
static uint16_t rx_seen; /* used entries of the RX queue looked at */
static volatile uint32_t irqs;

static bool on_irq(struct rt_regs *regs)
{
	(void)regs;
	vio_irq_ack(&rx);
	irqs++;
	apic_eoi();
	return true;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint16_t csum(const uint8_t *p, uint32_t len)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2)
		s += get16(p + i);
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static bool parse_ip(const char *s, uint8_t *ip)
{
	for (int i = 0; i < 4; i++) {
		uint32_t v = 0;
		int n = 0;

		for (; *s >= '0' && *s <= '9' && n < 3; s++, n++)
			v = v * 10 + (uint32_t)(*s - '0');
		if (!n || v > 255 || (i < 3 && *s++ != '.'))
			return false;
		ip[i] = (uint8_t)v;
	}
	return *s == '\0' || *s == ' ';
}

/* Post receive buffer i (with mergeable buffers, small buffer i). */
static void post_rx(unsigned i, uint32_t len)
{
	rxq.desc[i] = (struct vio_desc){ mrg ? (uintptr_t)rxsmall[i] : (uintptr_t)rxbuf[i],
					 mrg ? MRG_BUF : len, VIO_DESC_WRITE, 0 };
	vio_offer(&rx, (uint16_t)i);
}

/*
 * With mergeable buffers: the frame whose first buffer is the next used
 * one, put together in joined[] from its num_buffers buffers (all used
 * already: the device publishes them at once); its length, or 0. Every
 * buffer is posted again.
 */
static uint32_t take_merged(void)
{
	uint32_t slot = rx_seen % rx.num, id = rxq.used_ring[slot].id, len = rxq.used_ring[slot].len,
		 total = 0;
	uint16_t nb = id < MRG_NRX ? (uint16_t)(rxsmall[id][10] | rxsmall[id][11] << 8) : 0;
	uint16_t ready = (uint16_t)(__atomic_load_n(&rxq.used_idx, __ATOMIC_ACQUIRE) - rx_seen);
	bool whole = nb >= 1 && nb <= ready;

	for (uint16_t k = 0; k < (whole ? nb : 1); k++) {
		slot = rx_seen++ % rx.num;
		id = rxq.used_ring[slot].id;
		len = rxq.used_ring[slot].len;
		if (id >= MRG_NRX || len > MRG_BUF || total + len > sizeof(joined)) {
			whole = false;
			continue;
		}
		memcpy(joined + total, rxsmall[id], len);
		total += len;
		post_rx(id, MRG_BUF);
	}
	if (!whole)
		printf("virtio-net: a frame's num_buffers %u, with %u used buffers ready\n", nb, ready);
	if (whole && total > HDR + 14 + 1000)
		report(nb == (total + MRG_BUF - 1) / MRG_BUF,
		       "num_buffers %u for a frame of %u bytes in %u-byte buffers", nb, total, MRG_BUF);
	return whole ? total : 0;
}

/* Send hdr (in two pieces: 5 and 7 bytes) and frame[0..len). Waits for the chain to come back. */
static bool send(uint32_t len)
{
	uint16_t want = (uint16_t)(tx.next_avail + 1);

	txq.desc[0] = (struct vio_desc){ (uintptr_t)hdr, 5, VIO_DESC_NEXT, 1 };
	txq.desc[1] = (struct vio_desc){ (uintptr_t)hdr + 5, HDR - 5, VIO_DESC_NEXT, 2 };
	txq.desc[2] = (struct vio_desc){ (uintptr_t)frame, len, 0, 0 };
	vio_offer(&tx, 0);
	return vio_wait_used(&tx, want, 5000000);
}

static bool rx_moved(void *arg)
{
	(void)arg;
	return __atomic_load_n(&rxq.used_idx, __ATOMIC_ACQUIRE) != rx_seen;
}

/*
 * Wait for a received frame that `match` accepts (others are looked at
 * and their buffers posted again): true if one came within the time.
 */
static bool receive(bool (*match)(const uint8_t *f, uint32_t len), const char *what)
{
	uint64_t end = tsc_deadline_us(5000000);
	unsigned others = 0;

	while (rdtsc() < end) {
		if (!rt_wait_irq(rx_moved, NULL, 1000000))
			continue;
		while (mrg && rx_moved(NULL)) {
			uint32_t len = take_merged();

			if (len >= HDR + 14 && match(joined + HDR, len - HDR))
				return true;
			others++;
		}
		while (!mrg && rx_moved(NULL)) {
			uint32_t slot = rx_seen % rx.num, id = rxq.used_ring[slot].id,
				 len = rxq.used_ring[slot].len;
			bool ok = id < NRX && len >= HDR + 14 && match(rxbuf[id] + HDR, len - HDR);

			if (ok)
				report(rxbuf[id][10] == 1 && rxbuf[id][11] == 0,
				       "%s: num_buffers 1 in the header", what);
			rx_seen++;
			if (id < NRX)
				post_rx(id, RXBUF);
			if (ok)
				return true;
			others++;
		}
	}
	printf("virtio-net: %u other frames while waiting for %s\n", others, what);
	return false;
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static bool irq_seen(void *arg)
{
	(void)arg;
	return irqs > 0;
}

static bool is_arp_reply(const uint8_t *f, uint32_t len)
{
	if (len < 42 || get16(f + 12) != 0x0806 || get16(f + 20) != 2 || memcmp(f, mac, 6) ||
	    memcmp(f + 28, host_ip, 4) || memcmp(f + 32, mac, 6) || memcmp(f + 38, my_ip, 4))
		return false;
	memcpy(host_mac, f + 22, 6);
	return true;
}

static bool is_echo_reply(const uint8_t *f, uint32_t len)
{
	const uint8_t *ip = f + 14, *icmp = f + 34;

	return len >= 14 + 20 + 8 + payload && get16(f + 12) == 0x0800 && !memcmp(f, mac, 6) &&
	       !memcmp(f + 6, host_mac, 6) && ip[9] == 1 && !memcmp(ip + 12, host_ip, 4) &&
	       !memcmp(ip + 16, my_ip, 4) && icmp[0] == 0 && get16(icmp + 4) == 0x7076 &&
	       !memcmp(icmp + 8, frame + 42, payload) && csum(icmp, 8 + payload) == 0;
}

static uint32_t arp_request(void)
{
	memset(frame, 0xff, 6);
	memcpy(frame + 6, mac, 6);
	put16(frame + 12, 0x0806);
	put16(frame + 14, 1);	   /* Ethernet */
	put16(frame + 16, 0x0800); /* IPv4 */
	frame[18] = 6;
	frame[19] = 4;
	put16(frame + 20, 1); /* request */
	memcpy(frame + 22, mac, 6);
	memcpy(frame + 28, my_ip, 4);
	memset(frame + 32, 0, 6);
	memcpy(frame + 38, host_ip, 4);
	return 42;
}

static uint32_t echo_request(uint16_t seq)
{
	uint8_t *ip = frame + 14, *icmp = frame + 34;

	memcpy(frame, host_mac, 6);
	memcpy(frame + 6, mac, 6);
	put16(frame + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + 8 + payload));
	put16(ip + 4, seq);
	ip[8] = 64;
	ip[9] = 1; /* ICMP */
	memcpy(ip + 12, my_ip, 4);
	memcpy(ip + 16, host_ip, 4);
	put16(ip + 10, csum(ip, 20));
	memset(icmp, 0, 8);
	icmp[0] = 8; /* echo request */
	put16(icmp + 4, 0x7076);
	put16(icmp + 6, seq);
	for (uint32_t i = 0; i < payload; i++)
		icmp[8 + i] = (uint8_t)(seq * 7 + i);
	put16(icmp + 2, csum(icmp, 8 + payload));
	return 14 + 20 + 8 + payload;
}

/*
 * Send n UDP frames of 1442 bytes (1400 of payload, to the host's discard
 * port), 8 chains per notification, each batch waited for; print the rate.
 */
static void flood(uint32_t n)
{
	const uint32_t len = 14 + 20 + 8 + 1400;
	uint32_t sent = 0;
	uint64_t t0, us;

	for (unsigned k = 0; k < 8; k++) {
		uint8_t *f = txbuf[k] + HDR, *ip = f + 14, *udp = f + 34;

		memcpy(f, host_mac, 6);
		memcpy(f + 6, mac, 6);
		put16(f + 12, 0x0800);
		ip[0] = 0x45;
		put16(ip + 2, 20 + 8 + 1400);
		ip[8] = 64;
		ip[9] = 17; /* UDP */
		memcpy(ip + 12, my_ip, 4);
		memcpy(ip + 16, host_ip, 4);
		put16(ip + 10, csum(ip, 20));
		put16(udp, 4321);
		put16(udp + 2, 9);
		put16(udp + 4, 8 + 1400);
	}
	t0 = rdtsc();
	while (sent < n) {
		uint32_t batch = n - sent < 8 ? n - sent : 8;

		for (uint32_t k = 0; k < batch; k++) {
			txq.desc[k] = (struct vio_desc){ (uintptr_t)txbuf[k], HDR + len, 0, 0 };
			txq.avail_ring[tx.next_avail++ % tx.num] = (uint16_t)k;
		}
		__atomic_store_n(&txq.avail_idx, tx.next_avail, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		vio_write(&tx, 0x050, 1);
		if (!vio_wait_used(&tx, tx.next_avail, 5000000))
			break;
		sent += batch;
	}
	us = tsc_to_us(rdtsc() - t0);
	report(sent == n, "flood: %u of %u frames sent", sent, n);
	printf("virtio-net: flood: %u frames of %u bytes in %lu us: %lu frames/s, %lu KB/s\n", sent, len,
	       (unsigned long)us, (unsigned long)(us ? sent * 1000000ULL / us : 0),
	       (unsigned long)(us ? sent * (uint64_t)len * 1000ULL / us : 0));
}

/* Reset, negotiate, both queues, DRIVER_OK, receive buffers posted (hostile: none, misuses first). */
static bool bring_up(bool hostile)
{
	uint32_t st = vio_negotiate(&rx, 1, (1u << 5) | (1u << 16) | (mrg ? F_MRG_RXBUF : 0));

	if (st != (VIO_ST_ACK | VIO_ST_DRIVER | VIO_ST_FEATURES_OK))
		return false;
	if (hostile) {
		/* Notifications of queues not set up yet: ignored, counted. */
		vio_write(&rx, 0x050, 0);
		vio_write(&rx, 0x050, 1);
		vio_write(&rx, 0x050, 7);
	}
	if (!vio_queue_setup(&rx, &rxq, 16) || !vio_queue_setup(&tx, &txq, 16))
		return false;
	tx.base = rx.base;
	vio_write(&rx, 0x070, st | VIO_ST_DRIVER_OK);
	rx_seen = 0;
	for (unsigned i = 0; i < (mrg ? MRG_NRX : NRX) && !hostile; i++)
		post_rx(i, RXBUF);
	return vio_read(&rx, 0x070) == 0xf;
}

static void exchange(const char *round)
{
	bool ok;

	memset(hdr, 0, sizeof(hdr));
	ok = send(arp_request());
	report(ok, "%s: ARP request sent (TX chain back: length %u)", round,
	       txq.used_ring[(tx.next_avail - 1) % tx.num].len);
	ok = ok && receive(is_arp_reply, "the ARP reply");
	report(ok,
	       "%s: ARP reply to %02x:%02x:%02x:%02x:%02x:%02x from %u.%u.%u.%u at %02x:%02x:%02x:%02x:%02x:%02x",
	       round, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], host_ip[0], host_ip[1], host_ip[2],
	       host_ip[3], host_mac[0], host_mac[1], host_mac[2], host_mac[3], host_mac[4], host_mac[5]);
	if (!ok)
		return;
	for (uint16_t seq = 1; seq <= 3; seq++) {
		ok = send(echo_request(seq)) && receive(is_echo_reply, "the echo reply");
		report(ok, "%s: ICMP echo %u answered with the same payload", round, seq);
	}
}

static void hostile_cases(void)
{
	uint16_t want;

	/* A receive buffer smaller than a header (the only one): back at once, empty. */
	want = 1;
	rxq.desc[NRX] = (struct vio_desc){ (uintptr_t)rxbuf[0], 8, VIO_DESC_WRITE, 0 };
	vio_offer(&rx, NRX);
	report(vio_wait_used(&rx, want, 5000000) && rxq.used_ring[(want - 1) % rx.num].len == 0,
	       "an 8-byte receive buffer comes back empty");
	rx_seen = want;
	/* A transmit chain of 70000 bytes, more than a frame: back, dropped. */
	want = (uint16_t)(tx.next_avail + 1);
	txq.desc[3] = (struct vio_desc){ (uintptr_t)big, sizeof(big), 0, 0 };
	vio_offer(&tx, 3);
	report(vio_wait_used(&tx, want, 5000000), "a 70000-byte transmit chain comes back");
	/* A transmit chain of a header only. */
	want = (uint16_t)(tx.next_avail + 1);
	txq.desc[4] = (struct vio_desc){ (uintptr_t)hdr, HDR, 0, 0 };
	vio_offer(&tx, 4);
	report(vio_wait_used(&tx, want, 5000000), "a header-only transmit chain comes back");
	/* Frames pending, then a reset: the device forgets them, the queues are gone. */
	txq.desc[5] = (struct vio_desc){ (uintptr_t)frame, arp_request(), 0, 0 };
	for (int i = 0; i < 4; i++)
		vio_offer(&tx, 5);
	vio_write(&rx, 0x070, 0);
	report(vio_read(&rx, 0x070) == 0, "reset with frames pending: status 0");
	vio_write(&rx, 0x030, 0);
	report(vio_read(&rx, 0x044) == 0, "the receive queue is not ready after the reset");
}

int main(const struct pv_bootinfo *bi)
{
	const char *s;
	bool hostile = cmdline_has("hostile");
	uint32_t pause_ms = (uint32_t)cmdline_get_u64("pause_ms", 0);

	(void)bi;
	mrg = cmdline_has("mergeable");
	payload = mrg ? 1000 : 32;
	rx.base = tx.base = cmdline_get_u64("base", VIO_BASE);
	tx.qi = 1;
	if ((s = cmdline_get("ip")) && !parse_ip(s, my_ip))
		report(false, "ip=%s is not an IPv4 address", s);
	if ((s = cmdline_get("host")) && !parse_ip(s, host_ip))
		report(false, "host=%s is not an IPv4 address", s);
	if (!vio_probe(&rx, 1)) {
		report(false, "virtio-net at 0x%lx (magic 0x%x, version %u, device %u)",
		       (unsigned long)rx.base, vio_read(&rx, 0), vio_read(&rx, 4), vio_read(&rx, 8));
		return report_summary();
	}
	report(true, "virtio-net at 0x%lx: magic, version 2, device id 1", (unsigned long)rx.base);
	vio_write(&rx, 0x014, 0);
	report((vio_read(&rx, 0x010) & ((1u << 5) | (1u << 16))) == ((1u << 5) | (1u << 16)),
	       "MAC and STATUS offered (features 0x%x)", vio_read(&rx, 0x010));
	if (mrg)
		report(vio_read(&rx, 0x010) & F_MRG_RXBUF, "MRG_RXBUF offered");
	for (int i = 0; i < 6; i++)
		mac[i] = *(volatile uint8_t *)(uintptr_t)(rx.base + 0x100 + i);
	report(!(mac[0] & 1), "MAC %02x:%02x:%02x:%02x:%02x:%02x is unicast", mac[0], mac[1], mac[2], mac[3],
	       mac[4], mac[5]);
	if ((s = cmdline_get("mac"))) {
		char want[18];

		snprintf(want, sizeof(want), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
			 mac[4], mac[5]);
		report(!memcmp(want, s, 17), "MAC as given (%.17s)", s);
	}
	report((*(volatile uint16_t *)(uintptr_t)(rx.base + 0x106) & 1) == 1, "link up");
	rt_set_handler(VECTOR, on_irq);
	vio_ioapic_route(VIO_GSI, VECTOR, smp_apic_id(0));
	report(bring_up(hostile), "both queues ready, DRIVER_OK");
	if (hostile) {
		hostile_cases();
		report(bring_up(false), "up again after the reset");
	}
	exchange(hostile ? "after the misuses" : "first");
	if (cmdline_get_u64("flood", 0))
		flood((uint32_t)cmdline_get_u64("flood", 0));
	if (pause_ms) {
		printf("virtio-net: waiting %u ms\n", pause_ms);
		rt_wait_irq(never, NULL, (uint64_t)pause_ms * 1000);
		printf("virtio-net: going on\n");
		exchange("second");
	}
	report(vio_read(&rx, 0x070) == 0xf, "status 0x%x: no NEEDS_RESET", vio_read(&rx, 0x070));
	/* One may wait in the LAPIC since the last wait: it comes when interrupts are on. */
	report(rt_wait_irq(irq_seen, NULL, 2000000), "the device's interrupts arrive (%u)", irqs);
	printf("virtio-net: done, %u interrupts\n", irqs);
	return report_summary();
}
