// SPDX-License-Identifier: MIT
/*
 * Stats ABI compatibility, one way: today's reader, checker and Prometheus
 * writer (built from include/perfvisor/stats_abi.h) on a region made by a
 * producer built from the frozen v1 header (compat_v1_producer.c). The
 * other way is test_compat_v1_reader.c.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "compat_check.h"
#include "stats/stats.h"

static char out[16384];

static struct stats_view *open_v1(void)
{
	struct errbuf err = { "" };
	struct stats_view *v;
	int fd = compat_v1_region();

	cr_assert_geq(fd, 0, "the v1 producer failed");
	cr_assert_eq(stats_view_open_fd(&v, fd, &err), 0, "%s", err.msg);
	close(fd);
	return v;
}

Test(compat_new_reader, reads_a_v1_region)
{
	struct stats_view *v = open_v1();
	const struct pv_stats_header *h = stats_view_header(v);
	struct stats_snap *s;
	unsigned run = compat_find(v, "time.kvm_run_ns"), up = compat_find(v, "uptime_ns");

	cr_assert_eq(h->header_size, 160);
	cr_assert_eq(h->name[0], '\0', "a v1 header has no name: it reads as empty");
	cr_assert_eq(stats_view_ndesc(v), 4);
	cr_assert_eq(stats_view_since(v, run), -1, "v1 has no since companion");
	s = compat_snap_common(v);
	for (unsigned i = 0; i < COMPAT_V1_VCPUS; i++)
		cr_assert_eq(stats_snap_live(s, run, i), COMPAT_RUN_NS(i), "without a companion, live = raw");
	cr_assert_eq(stats_snap_value(s, up, 0), COMPAT_V1_UPTIME);
	stats_snap_destroy(s);
	stats_view_close(v);
}

Test(compat_new_reader, todays_checker_accepts_a_v1_region)
{
	int fd = compat_v1_region();
	int rc = stats_check_self(out, sizeof(out));

	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "invariants hold"), "%s", out);
	cr_assert_null(strstr(out, "the VM name"), "no name check on a header without one:\n%s", out);
	close(fd);
}

Test(compat_new_reader, prometheus_of_a_v1_region)
{
	struct stats_view *v = open_v1();
	struct stats_snap *s;
	struct stats_prom_vm pv;
	char *buf = NULL, want[128];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_eq(stats_snap_create(&s, v), 0);
	stats_snap_take(s);
	pv = (struct stats_prom_vm){ .v = v, .s = s, .pid = 42, .name = "" };
	cr_assert_eq(stats_prom_write(f, &pv, 1), 0);
	fclose(f);
	cr_assert(strstr(buf, "perfvisor_exits_total{vm=\"42\",vcpu=\"2\"} 3000\n"), "%s", buf);
	snprintf(want, sizeof(want),
		 "perfvisor_time_kvm_run_seconds_total{vm=\"42\",vcpu=\"1\"} 2.000000001\n");
	cr_assert(strstr(buf, want), "%s", buf);
	cr_assert(strstr(buf, "perfvisor_vm_uptime_seconds{vm=\"42\"} 5.000000000\n"), "%s", buf);
	cr_assert_null(strstr(buf, "name="), "no name label without a name");
	free(buf);
	stats_snap_destroy(s);
	stats_view_close(v);
}
