// SPDX-License-Identifier: MIT
/*
 * Stats ABI compatibility, the other way: a reader and checker built from
 * the frozen v1 header (tests/abi/v1 first on the include path, as
 * stats-check-v1 is) on a region made by today's producer (stats/region.c,
 * built from include/perfvisor/stats_abi.h) with what v1 did not have: a
 * 224-byte header with the VM name, and fields appended after the old ones
 * (time.kvm_run_since_ns, the since companion of time.kvm_run_ns).
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "compat_check.h"
#include "stats/stats.h"

_Static_assert(sizeof(struct pv_stats_header) == 160, "built against the frozen v1 header");

static char out[16384];

struct cur_region {
	struct stats_region *r;
	struct sb_field exits, run, since, late;
};

/* Today's producer: 3 vCPUs; vCPU 1 is inside KVM_RUN since 1 ms ago. */
static void produce(struct cur_region *c)
{
	struct errbuf err = { "" };

	cr_assert_eq(stats_region_create(&c->r, COMPAT_V1_VCPUS, &err), 0, "%s", err.msg);
	cr_assert_eq(stats_region_set_name(c->r, COMPAT_NAME, &err), 0, "%s", err.msg);
	cr_assert_eq(sb_declare(c->r, PV_STATS_RECORD_VCPU, "exits", PV_STATS_CUMULATIVE, PV_STATS_UNIT_NONE,
				0, &c->exits, &err),
		     0);
	cr_assert_eq(sb_declare(c->r, PV_STATS_RECORD_VCPU, "time.kvm_run_ns", PV_STATS_CUMULATIVE,
				PV_STATS_UNIT_SECONDS, -9, &c->run, &err),
		     0);
	cr_assert_eq(sb_declare(c->r, PV_STATS_RECORD_VCPU, "time.kvm_run_since_ns", PV_STATS_INSTANT,
				PV_STATS_UNIT_SECONDS, -9, &c->since, &err),
		     0);
	cr_assert_eq(sb_declare(c->r, PV_STATS_RECORD_VCPU, "time.cpu_ns", PV_STATS_CUMULATIVE,
				PV_STATS_UNIT_SECONDS, -9, &c->late, &err),
		     0);
	cr_assert_eq(stats_region_freeze(c->r, &err), 0, "%s", err.msg);
	for (unsigned i = 0; i < COMPAT_V1_VCPUS; i++) {
		struct sb_entry e = stats_vcpu_entry(c->r, i);

		stats_vcpu_online(c->r, i);
		sb_begin(e);
		sb_set(e, c->exits, COMPAT_EXITS(i));
		sb_set(e, c->run, COMPAT_RUN_NS(i));
		sb_set(e, c->since, i == 1 ? util_now_ns() - 1000000 : 0);
		sb_set(e, c->late, 7 + i);
		sb_end(e);
	}
}

Test(compat_v1_reader, reads_todays_region)
{
	struct cur_region c;
	struct errbuf err = { "" };
	struct stats_view *v;
	struct stats_snap *s;
	unsigned run, late;
	int fd;

	produce(&c);
	fd = stats_region_open_ro(c.r);
	cr_assert_geq(fd, 0);
	cr_assert_eq(stats_view_open_fd(&v, fd, &err), 0, "%s", err.msg);
	close(fd);
	cr_assert_geq(stats_view_header(v)->header_size, 224, "today's header is longer than the v1 struct");
	run = compat_find(v, "time.kvm_run_ns");
	late = compat_find(v, "time.cpu_ns");
	s = compat_snap_common(v);
	for (unsigned i = 0; i < COMPAT_V1_VCPUS; i++)
		cr_assert_eq(stats_snap_value(s, late, i), 7 + i,
			     "an appended field reads by its descriptor");
	/* The common subset is read as is; the companion, found by name, makes vCPU 1's value live. */
	cr_assert_eq(stats_snap_live(s, run, 0), COMPAT_RUN_NS(0));
	cr_assert_geq(stats_snap_live(s, run, 1), COMPAT_RUN_NS(1) + 1000000);
	stats_snap_destroy(s);
	stats_view_close(v);
	stats_region_destroy(c.r);
}

Test(compat_v1_reader, the_v1_checker_accepts_todays_region)
{
	struct cur_region c;
	int rc;

	produce(&c);
	rc = stats_check_self(out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "invariants hold"), "%s", out);
	stats_region_destroy(c.r);
}
