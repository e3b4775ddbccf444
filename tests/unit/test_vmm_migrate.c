// SPDX-License-Identifier: MIT
/*
 * Unit tests for a live migration's memory on the wire (vmm/migconn.c's
 * mig_send_memory, received by snapfile/migstream.c's state machine, as
 * vmm/incoming.c does), over a socketpair, without KVM: round 0 sends every
 * page that holds data and skips a memfd's holes and zero pages; a bitmap
 * round sends exactly its pages, a page that became zero as ZERO; a run is
 * at most MIG_MAX_RUN pages; bits past the end of RAM are ignored. After
 * each, the destination's RAM equals the source's.
 */
#include "vmm/migrate.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vmm/vmm.h"

#define PAGES 1025U /* not a multiple of 64: the bitmap's last word has bits past RAM */

static struct gmem src;
static uint8_t *dst;
static struct mig_conn tx, rx_conn;
static struct mig_rx rx;

struct job {
	const uint64_t *bitmap;
	struct mig_round r;
	int rc;
	struct errbuf err;
};

static void setup(void)
{
	struct errbuf err;
	int sv[2];

	cr_assert_eq(gmem_init(&src, (uint64_t)PAGES * MIG_PAGE, &err), 0, "%s", err.msg);
	dst = calloc(PAGES, MIG_PAGE);
	cr_assert_not_null(dst);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	tx = (struct mig_conn){ .fd = sv[0], .deadline_ns = util_now_ns() + 20000000000ULL, .peer = "dst" };
	rx_conn = (struct mig_conn){ .fd = sv[1], .deadline_ns = tx.deadline_ns, .peer = "src" };
	memset(&rx, 0, sizeof(rx));
}

static void teardown(void)
{
	mig_close(&tx);
	mig_close(&rx_conn);
	gmem_fini(&src);
	free(dst);
}

TestSuite(migmem, .init = setup, .fini = teardown);

/* The sender: HELLO, the memory, then a STATE that ends the stream. */
static void *send_thread(void *arg)
{
	struct job *j = arg;
	uint8_t *buf = malloc(MIG_MAX_RUN * MIG_PAGE);

	j->rc = mig_send(&tx, MIG_HELLO, "{}", 2, NULL, 0, &j->err);
	if (!j->rc)
		j->rc = mig_send_memory(&tx, &src, j->bitmap, buf, &j->r, &j->err);
	if (!j->rc)
		j->rc = mig_send(&tx, MIG_STATE, "end", 3, NULL, 0, &j->err);
	free(buf);
	return NULL;
}

/* One migration's memory, sent by a thread and received here into dst; returns the records. */
static uint64_t transfer(struct job *j)
{
	pthread_t t;
	struct errbuf err;

	memset(&rx, 0, sizeof(rx));
	rx_conn.rx_seq = 0;
	tx.tx_seq = 0;
	cr_assert_eq(pthread_create(&t, NULL, send_thread, j), 0);
	while (rx.phase != MIG_RX_DONE) {
		struct mig_hdr h;
		void *p;

		cr_assert_eq(mig_recv(&rx_conn, &h, &p, 1 << 20, &err), 0, "%s", err.msg);
		cr_assert_eq(mig_rx_feed(&rx, &h, p, &err), 0, "%s", err.msg);
		if (rx.phase == MIG_RX_MEMORY && !rx.mem)
			mig_rx_set_memory(&rx, dst, (uint64_t)PAGES * MIG_PAGE);
		free(p);
	}
	pthread_join(t, NULL);
	cr_assert_eq(j->rc, 0, "%s", j->err.msg);
	return rx.records;
}

static void fill_page(unsigned pfn, uint8_t v)
{
	memset(src.hva + (uint64_t)pfn * MIG_PAGE, v, MIG_PAGE);
	src.hva[(uint64_t)pfn * MIG_PAGE + 7] = (uint8_t)pfn;
}

Test(migmem, round0_sends_data_and_skips_holes_and_zeros)
{
	struct job j = { 0 };

	for (unsigned p = 10; p < 20; p++)
		fill_page(p, 0x11);
	fill_page(1024, 0x22);				   /* the last page */
	memset(src.hva + 500 * MIG_PAGE, 0, 3 * MIG_PAGE); /* written, but zero: data in the memfd */
	transfer(&j);
	cr_assert_eq(j.r.pages, 11, "only the pages with data (got %lu)", (unsigned long)j.r.pages);
	cr_assert_eq(j.r.zero_pages, 0);
	cr_assert_eq(memcmp(dst, src.hva, (size_t)PAGES * MIG_PAGE), 0, "the destination's RAM differs");
}

Test(migmem, long_runs_are_cut_at_max_run)
{
	struct job j = { 0 };

	for (unsigned p = 0; p < 300; p++)
		fill_page(p, 0x33);
	/* HELLO, 256 pages, 44 pages, STATE */
	cr_assert_eq(transfer(&j), 4);
	cr_assert_eq(j.r.pages, 300);
	cr_assert_eq(memcmp(dst, src.hva, (size_t)PAGES * MIG_PAGE), 0);
}

Test(migmem, bitmap_round_sends_its_pages_and_zeros)
{
	uint64_t bitmap[(PAGES + 63) / 64] = { 0 };
	struct job j = { .bitmap = bitmap };

	for (unsigned p = 0; p < PAGES; p += 3)
		fill_page(p, 0x44);
	memcpy(dst, src.hva, (size_t)PAGES * MIG_PAGE); /* as after round 0 */
	fill_page(7, 0x55);				/* written since */
	memset(src.hva + 9 * MIG_PAGE, 0, MIG_PAGE);	/* became zero */
	fill_page(1024, 0x66);
	fill_page(100, 0x77); /* written, but its bit is not set: not sent */
	bitmap[0] = 1ULL << 7 | 1ULL << 9;
	bitmap[16] = 1ULL;	 /* page 1024 */
	bitmap[16] |= 1ULL << 5; /* page 1029: past the end of RAM, ignored */
	transfer(&j);
	cr_assert_eq(j.r.pages, 2);
	cr_assert_eq(j.r.zero_pages, 1);
	cr_assert_eq(memcmp(dst + 7 * MIG_PAGE, src.hva + 7 * MIG_PAGE, MIG_PAGE), 0);
	cr_assert_eq(memcmp(dst + 9 * MIG_PAGE, src.hva + 9 * MIG_PAGE, MIG_PAGE), 0);
	cr_assert_eq(memcmp(dst + 1024 * MIG_PAGE, src.hva + 1024 * MIG_PAGE, MIG_PAGE), 0);
	cr_assert_neq(memcmp(dst + 100 * MIG_PAGE, src.hva + 100 * MIG_PAGE, MIG_PAGE), 0,
		      "a page outside the bitmap was sent");
}

Test(migmem, mixed_runs_alternate_pages_and_zero)
{
	uint64_t bitmap[(PAGES + 63) / 64];
	struct job j = { .bitmap = bitmap };

	memset(bitmap, 0, sizeof(bitmap));
	memset(dst, 0xee, (size_t)PAGES * MIG_PAGE); /* every page must be overwritten */
	for (unsigned p = 0; p < 64; p++) {
		if (p % 4 < 2)
			fill_page(p, (uint8_t)(p + 1));
		bitmap[0] |= 1ULL << p;
	}
	transfer(&j);
	cr_assert_eq(j.r.pages, 32);
	cr_assert_eq(j.r.zero_pages, 32);
	cr_assert_eq(memcmp(dst, src.hva, 64 * MIG_PAGE), 0);
}

/*
 * A peer that went away is worded alike whichever way this side was going:
 * a send gets EPIPE (or ECONNRESET), a receive gets end-of-file, and both say
 * "<peer> closed the connection" with -ECONNRESET.
 */
Test(migmem, a_peer_that_went_away_closed_the_connection)
{
	struct errbuf err;
	struct mig_hdr h;
	void *p = NULL;
	int rc;

	close(rx_conn.fd);
	rx_conn.fd = -1;
	rc = mig_send(&tx, MIG_HELLO, "{}", 2, NULL, 0, &err);
	cr_assert_eq(rc, -ECONNRESET, "send: %d %s", rc, err.msg);
	cr_assert_str_eq(err.msg, "dst closed the connection");

	rc = mig_recv(&tx, &h, &p, 0, &err);
	cr_assert_eq(rc, -ECONNRESET, "receive: %d %s", rc, err.msg);
	cr_assert_str_eq(err.msg, "dst closed the connection");
	cr_assert_null(p);
}
