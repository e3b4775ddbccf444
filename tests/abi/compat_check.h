/* SPDX-License-Identifier: MIT */
/*
 * Shared by both halves of the stats ABI compatibility test, whatever ABI
 * header they are built with: running stats-check on this process's own
 * region (tests/unit/stats_check_run.h) and finding a field by name.
 */
#ifndef PERFVISOR_TEST_ABI_COMPAT_CHECK_H
#define PERFVISOR_TEST_ABI_COMPAT_CHECK_H

#include <criterion/criterion.h>
#include <string.h>

#include "../unit/stats_check_run.h"
#include "compat.h"
#include "stats/stats.h"

/* The descriptor index of field `name`; fails the test if there is none. */
static inline unsigned compat_find(struct stats_view *v, const char *name)
{
	for (unsigned d = 0; d < stats_view_ndesc(v); d++)
		if (!strcmp(stats_view_desc(v, d)->name, name))
			return d;
	cr_assert_fail("no field %s", name);
	return 0;
}

/* A snapshot of v, after checking what both producers write alike: every vCPU's exits and time.kvm_run_ns. */
static inline struct stats_snap *compat_snap_common(struct stats_view *v)
{
	unsigned exits = compat_find(v, "exits"), run = compat_find(v, "time.kvm_run_ns");
	struct stats_snap *s;

	cr_assert_eq(stats_snap_create(&s, v), 0);
	cr_assert_eq(stats_snap_take(s), 0, "no record busy");
	cr_assert_eq(stats_snap_online(s), COMPAT_V1_VCPUS);
	for (unsigned i = 0; i < COMPAT_V1_VCPUS; i++) {
		cr_assert_eq(stats_snap_value(s, exits, i), COMPAT_EXITS(i));
		cr_assert_eq(stats_snap_value(s, run, i), COMPAT_RUN_NS(i));
	}
	return s;
}

#endif
