// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the statistics reader on a hostile region (stats/
 * reader.c). The input is the whole region, in a memfd as a VMM's would
 * be; whatever it claims (sizes, offsets, strides, slots, descriptors),
 * opening it, snapshotting it and reading every record either works
 * within the mapping or is refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stats_view *v = NULL;
	struct stats_snap *snap = NULL;
	struct errbuf err;
	uint64_t *values;
	uint32_t state;
	int fd = memfd_create("fuzz-stats", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	if (stats_view_open_fd(&v, fd, &err) == 0) {
		unsigned online = stats_view_online(v);

		values = calloc(stats_view_ndesc(v) + 1, sizeof(*values));
		if (!values)
			abort();
		if (stats_snap_create(&snap, v) == 0) {
			stats_snap_take(snap);
			stats_snap_destroy(snap);
		}
		stats_view_read(v, PV_STATS_RECORD_VM, 0, values, &state);
		for (unsigned i = 0; i < online && i < 64; i++)
			stats_view_read(v, PV_STATS_RECORD_VCPU, i, values, &state);
		free(values);
		stats_view_close(v);
	}
	close(fd);
	return 0;
}
