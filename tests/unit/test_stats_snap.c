// SPDX-License-Identifier: MIT
/*
 * Unit tests for the reader's fast path: whole-record copies, whole-region
 * snapshots, live values through "since" companions, and the time-bounded
 * retry: a writer preempted in the middle of an update is waited for, so a
 * million reads of a record updated 100k+ times a second are never busy.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stats/stats.h"
#include "stats_fake.h"

static struct stats_view *open_view(struct fake *f)
{
	struct errbuf err = { "" };
	struct stats_view *v;

	cr_assert_eq(stats_view_open_fd(&v, f->fd, &err), 0, "%s", err.msg);
	return v;
}

Test(stats_snap, record_copy_is_the_whole_record)
{
	struct fake f;
	struct stats_view *v;
	uint8_t buf[VCPU_SIZE];
	uint32_t state = 0;

	fake_create(&f);
	v = open_view(&f);
	cr_assert_eq(stats_view_record_size(v, PV_STATS_RECORD_VCPU), VCPU_SIZE);
	cr_assert_eq(stats_view_record_size(v, PV_STATS_RECORD_VM), 24);
	cr_assert_eq(stats_view_record_size(v, (enum pv_stats_record)5), 0);
	cr_assert_eq(stats_view_copy(v, PV_STATS_RECORD_VCPU, 1, buf, &state), 0);
	cr_assert_eq(state, PV_STATS_ONLINE);
	cr_assert_eq(memcmp(buf, vcpu_rec(&f, 1), VCPU_SIZE), 0, "one copy of the record's bytes");
	/* descriptors 2.. are the vCPU fields 0..4 */
	for (unsigned i = 0; i < NVCPU_FIELDS; i++)
		cr_assert_eq(stats_view_field(v, 2 + i, buf), 200 + i);
	cr_assert_eq(stats_view_copy(v, PV_STATS_RECORD_VCPU, 2, buf, NULL), -ENOENT, "not online");
	cr_assert_eq(stats_view_copy(v, PV_STATS_RECORD_VCPU, VCPU_SLOTS, buf, NULL), -ENOENT);
	stats_view_close(v);
	fake_destroy(&f);
}

Test(stats_snap, snapshot_holds_every_online_record)
{
	struct fake f;
	struct stats_view *v;
	struct stats_snap *s;
	uint32_t state = 0;
	uint64_t t0 = util_now_ns();

	fake_create(&f);
	v = open_view(&f);
	cr_assert_eq(stats_snap_create(&s, v), 0);
	cr_assert_eq(stats_snap_take(s), 0, "nothing busy");
	cr_assert_geq(stats_snap_time(s), t0);
	cr_assert_leq(stats_snap_time(s), util_now_ns());
	cr_assert_eq(stats_snap_generation(s), 3);
	cr_assert_eq(stats_snap_online(s), 2);
	cr_assert_eq(stats_snap_status(s, PV_STATS_RECORD_VM, 0, &state), 0);
	cr_assert_eq(state, PV_STATS_ONLINE);
	cr_assert_eq(stats_snap_value(s, 0, 0), 300, "VM record: exits_total");
	cr_assert_eq(stats_snap_value(s, 1, 7), 2, "VM record: the index does not matter");
	for (unsigned i = 0; i < 2; i++)
		for (unsigned j = 0; j < NVCPU_FIELDS; j++)
			cr_assert_eq(stats_snap_value(s, 2 + j, i), 100 * (i + 1) + j);
	cr_assert_eq(stats_snap_status(s, PV_STATS_RECORD_VCPU, 2, NULL), -ENOENT, "offline slot");
	cr_assert_eq(stats_snap_value(s, 2, 2), 0);
	cr_assert_eq(stats_snap_value(s, 99, 0), 0, "no such descriptor");

	/* A snapshot is a copy: later writes show in the next one only. */
	*field(vcpu_rec(&f, 0), 8) = 4242;
	cr_assert_eq(stats_snap_value(s, 2, 0), 100);
	stats_snap_take(s);
	cr_assert_eq(stats_snap_value(s, 2, 0), 4242);

	/* A vCPU published later is in the next snapshot. */
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 2))->state = PV_STATS_ONLINE;
	*field(vcpu_rec(&f, 2), 8) = 77;
	__atomic_store_n(&f.h->vcpu.online, 3, __ATOMIC_RELEASE);
	stats_snap_take(s);
	cr_assert_eq(stats_snap_online(s), 3);
	cr_assert_eq(stats_snap_value(s, 2, 2), 77);
	stats_snap_destroy(s);
	stats_snap_destroy(NULL);
	stats_view_close(v);
	fake_destroy(&f);
}

/* The fake's run_ns (descriptor 5) as a time in ns, and max_batch (6) as its since companion. */
static void make_companion(struct fake *f)
{
	struct pv_stats_desc *d = (struct pv_stats_desc *)(f->p + DESC_OFF);

	snprintf(d[5].name, sizeof(d[5].name), "time.run_ns");
	d[5].unit = PV_STATS_UNIT_SECONDS;
	d[5].scale = -9;
	snprintf(d[6].name, sizeof(d[6].name), "time.run_since_ns");
	d[6].kind = PV_STATS_INSTANT;
	d[6].unit = PV_STATS_UNIT_SECONDS;
	d[6].scale = -9;
}

Test(stats_snap, live_values_through_the_since_companion)
{
	struct fake f;
	struct stats_view *v;
	struct stats_snap *s;
	uint64_t since, live1, live2;

	fake_create(&f);
	make_companion(&f);
	v = open_view(&f);
	cr_assert_eq(stats_view_since(v, 5), 6);
	cr_assert_eq(stats_view_since(v, 2), -1, "exits has none");
	cr_assert_eq(stats_view_since(v, 6), -1, "the companion itself has none");
	cr_assert_eq(stats_snap_create(&s, v), 0);

	/* vCPU 0 inside an interval that began 5 ms ago; vCPU 1 outside (since = 0). */
	*field(vcpu_rec(&f, 0), 32) = 1000000;
	since = util_now_ns() - 5000000;
	*field(vcpu_rec(&f, 0), 40) = since;
	*field(vcpu_rec(&f, 1), 40) = 0;
	stats_snap_take(s);
	cr_assert_eq(stats_snap_value(s, 5, 0), 1000000, "the raw value");
	live1 = stats_snap_live(s, 5, 0);
	cr_assert_eq(live1, 1000000 + (stats_snap_time(s) - since));
	cr_assert_geq(live1, 6000000);
	cr_assert_eq(stats_snap_live(s, 5, 1), stats_snap_value(s, 5, 1), "no open interval");
	cr_assert_eq(stats_snap_live(s, 2, 0), stats_snap_value(s, 2, 0), "a field without companion");

	/* The interval closes (the writer adds it and clears since): the value goes on from there. */
	*field(vcpu_rec(&f, 0), 32) = 1000000 + (util_now_ns() - since);
	*field(vcpu_rec(&f, 0), 40) = 0;
	stats_snap_take(s);
	live2 = stats_snap_live(s, 5, 0);
	cr_assert_geq(live2, live1, "live values never decrease: %llu -> %llu", (unsigned long long)live1,
		      (unsigned long long)live2);
	/* A since in the future (a writer that entered after the snapshot's time) adds nothing. */
	*field(vcpu_rec(&f, 0), 40) = util_now_ns() + 1000000000ULL;
	stats_snap_take(s);
	cr_assert_eq(stats_snap_live(s, 5, 0), stats_snap_value(s, 5, 0));
	stats_snap_destroy(s);
	stats_view_close(v);
	fake_destroy(&f);
}

Test(stats_snap, a_stuck_record_is_busy_within_the_bound)
{
	struct fake f;
	struct stats_view *v;
	struct stats_snap *s;
	uint64_t t0;

	fake_create(&f);
	v = open_view(&f);
	cr_assert_eq(stats_snap_create(&s, v), 0);
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 0))->seq = 7; /* a writer that stopped mid-update */
	t0 = util_now_ns();
	cr_assert_eq(stats_snap_take(s), 1, "one record busy");
	cr_assert_geq(util_now_ns() - t0, STATS_READ_TIMEOUT_NS, "waited the whole bound");
	cr_assert_lt(util_now_ns() - t0, 5 * STATS_READ_TIMEOUT_NS, "and not much longer");
	cr_assert_eq(stats_snap_status(s, PV_STATS_RECORD_VCPU, 0, NULL), -EBUSY);
	cr_assert_eq(stats_snap_value(s, 2, 0), 0, "a busy record has no values");
	cr_assert_eq(stats_snap_status(s, PV_STATS_RECORD_VCPU, 1, NULL), 0, "the others are read");
	cr_assert_eq(stats_snap_value(s, 2, 1), 200);
	stats_snap_destroy(s);
	stats_view_close(v);
	fake_destroy(&f);
}

/* ---- a busy writer, preempted in the middle of updates ---------------------- */

struct writer {
	uint8_t *rec;
	volatile bool stop;
	uint64_t updates, held, maxhold; /* updates done; of which held open; the longest hold (ns) */
};

/*
 * A vCPU-like writer: one seqlock update per "exit" (every field set to the
 * update's number), 0.5 us between updates (a fast exit), and every 2000th
 * update held open for 2 ms, as when the host preempts the vCPU thread in it.
 */
static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	struct sb_entry e = { w->rec };
	struct timespec hold = { 0, 2000000 };

	while (!w->stop) {
		uint64_t k = ++w->updates;

		sb_begin(e);
		for (unsigned j = 0; j < NVCPU_FIELDS; j++)
			sb_set(e, (struct sb_field){ PV_STATS_RECORD_VCPU, 8 + 8 * j }, k);
		if (k % 2000 == 0) {
			uint64_t h0 = util_now_ns();

			nanosleep(&hold, NULL);
			if (util_now_ns() - h0 > w->maxhold)
				w->maxhold = util_now_ns() - h0;
			w->held++;
		}
		sb_end(e);
		/* the rest of the exit and the guest's next run: 0.5 us (a fast exit) */
		for (uint64_t until = util_now_ns() + 500; util_now_ns() < until;)
			;
	}
	return NULL;
}

Test(stats_snap, a_million_reads_of_a_busy_preempted_writer_are_never_busy)
{
	struct fake f;
	struct stats_view *v;
	struct writer w = { 0 };
	uint8_t buf[VCPU_SIZE];
	uint64_t t0, t1, last = 0, u0, u1, slow = 0;
	unsigned busy = 0, reads = 0;
	pthread_t th;

	fake_create(&f);
	v = open_view(&f);
	w.rec = vcpu_rec(&f, 1);
	cr_assert_eq(pthread_create(&th, NULL, writer_thread, &w), 0);
	while (__atomic_load_n(&w.updates, __ATOMIC_RELAXED) < 1000)
		sched_yield();
	u0 = __atomic_load_n(&w.updates, __ATOMIC_RELAXED);
	t0 = util_now_ns();
	for (reads = 0; reads < 1000000; reads++) {
		uint64_t r0 = util_now_ns();
		int rc = stats_view_copy(v, PV_STATS_RECORD_VCPU, 1, buf, NULL);

		if (rc == -EBUSY) {
			busy++;
			continue;
		}
		cr_assert_eq(rc, 0);
		slow += util_now_ns() - r0 > 1000000; /* waited out a held update */
		for (unsigned j = 1; j < NVCPU_FIELDS; j++)
			cr_assert_eq(stats_view_field(v, 2 + j, buf), stats_view_field(v, 2, buf),
				     "torn read: field %u = %llu, field 0 = %llu", j,
				     (unsigned long long)stats_view_field(v, 2 + j, buf),
				     (unsigned long long)stats_view_field(v, 2, buf));
		cr_assert_geq(stats_view_field(v, 2, buf), last, "values went backwards");
		last = stats_view_field(v, 2, buf);
	}
	t1 = util_now_ns();
	u1 = __atomic_load_n(&w.updates, __ATOMIC_RELAXED);
	w.stop = true;
	pthread_join(th, NULL);
	fprintf(stderr,
		"%u reads in %.2f s, writer %.0f updates/s, %llu updates held open (the longest %.1f ms), "
		"%llu reads waited one out\n",
		reads, (double)(t1 - t0) / 1e9, (double)(u1 - u0) * 1e9 / (double)(t1 - t0),
		(unsigned long long)w.held, (double)w.maxhold / 1e6, (unsigned long long)slow);
	cr_assert_eq(busy, 0, "%u of %u reads busy", busy, reads);
	cr_assert_geq((double)(u1 - u0) * 1e9 / (double)(t1 - t0), 100000.0,
		      "the writer did %.0f updates/s, fewer than the 100k/s this test is about",
		      (double)(u1 - u0) * 1e9 / (double)(t1 - t0));
	cr_assert_geq(slow, 1, "no read met an update held open: the test did not test preemption");
	stats_view_close(v);
	fake_destroy(&f);
}
