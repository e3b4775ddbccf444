// SPDX-License-Identifier: MIT
/*
 * statsread: consistent reads of vCPU 0's record of a running VM, at least
 * N of them and for at least S seconds, for the integration tests (the
 * reader must not report busy while the vCPU exits as fast as it can).
 * Usage: statsread PID N S
 * Prints "reads N busy B exits E in S s: R exits/s" and exits 0 if no read
 * was busy and `exits` never went backwards, 1 otherwise, 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"

int main(int argc, char **argv)
{
	struct errbuf err = { "" };
	struct stats_view *v;
	uint64_t n, secs, i, first = 0, last = 0, t0, t1, backwards = 0, busy = 0;
	uint8_t *buf;
	unsigned d, exits = ~0U;

	if (argc != 4 || util_parse_u64(argv[2], 1, 1000000000, &n) ||
	    util_parse_u64(argv[3], 0, 3600, &secs)) {
		fprintf(stderr, "usage: statsread PID N SECONDS\n");
		return 2;
	}
	if (stats_view_open_pid(&v, atoi(argv[1]), &err)) {
		fprintf(stderr, "statsread: %s\n", err.msg);
		return 1;
	}
	for (d = 0; d < stats_view_ndesc(v); d++)
		if (stats_view_desc(v, d)->record == PV_STATS_RECORD_VCPU &&
		    !strcmp(stats_view_desc(v, d)->name, "exits"))
			exits = d;
	buf = malloc(stats_view_record_size(v, PV_STATS_RECORD_VCPU));
	if (exits == ~0U || !buf) {
		fprintf(stderr, "statsread: no vCPU field 'exits'\n");
		return 1;
	}
	t0 = util_now_ns();
	for (i = 0; i < n || util_now_ns() - t0 < secs * 1000000000ULL; i++) {
		int rc = stats_view_copy(v, PV_STATS_RECORD_VCPU, 0, buf, NULL);
		uint64_t e;

		if (rc == -EBUSY) {
			busy++;
			continue;
		}
		if (rc) {
			fprintf(stderr, "statsread: read %llu: %s\n", (unsigned long long)i, strerror(-rc));
			return 1;
		}
		e = stats_view_field(v, exits, buf);
		if (i == 0)
			first = e;
		backwards += e < last;
		last = e;
	}
	t1 = util_now_ns();
	printf("reads %llu busy %llu exits %llu in %.2f s: %.0f exits/s%s\n", (unsigned long long)i,
	       (unsigned long long)busy, (unsigned long long)(last - first), (double)(t1 - t0) / 1e9,
	       (double)(last - first) * 1e9 / (double)(t1 - t0), backwards ? " (exits went backwards)" : "");
	free(buf);
	stats_view_close(v);
	return busy || backwards ? 1 : 0;
}
