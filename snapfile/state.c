// SPDX-License-Identifier: MIT
/*
 * What the state file's writer and parser share (docs/snapshot.md): the
 * checksum, the parts a parsed file holds and their release, and the
 * statistics' part, which snapfile/ defines because its encoding (a map
 * of names to values) is its own.
 */
#include "snapfile/snapfile_internal.h"

#include <libfdt.h>
#include <stdlib.h>
#include <xxhash.h>

uint64_t snap_hash(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

int snap_blob_checksum(void *blob, uint64_t *sum)
{
	int rc = fdt_setprop_inplace_u64(blob, 0, "checksum", 0);

	if (rc)
		return rc;
	*sum = snap_hash(blob, fdt_totalsize(blob));
	return 0;
}

void snap_fini(struct snap *s)
{
	if (!s->owns_parts)
		return;
	for (unsigned k = 0; k < SNAP_MAX_PARTS; k++) {
		free(s->dev[k]);
		free(s->vm[k]);
		s->dev[k] = s->vm[k] = NULL;
	}
	for (unsigned i = 0; i < PV_MAX_CPUS; i++)
		for (unsigned k = 0; k < SNAP_MAX_VCPU_PARTS; k++) {
			free(s->vcpu[i].part[k]);
			s->vcpu[i].part[k] = NULL;
		}
	s->owns_parts = false;
}

const void *snap_part_state(const struct snap *s, const struct snap_part *part, int vcpu)
{
	const struct snap_schema *sc = s->schema;

	if (!sc)
		return NULL;
	if (vcpu >= 0) {
		for (unsigned k = 0; k < sc->nr_vcpu && (unsigned)vcpu < PV_MAX_CPUS; k++)
			if (sc->vcpu[k] == part)
				return s->vcpu[vcpu].part[k];
		return NULL;
	}
	for (unsigned k = 0; k < sc->nr_devices; k++)
		if (sc->devices[k] == part)
			return s->dev[k];
	for (unsigned k = 0; k < sc->nr_vm; k++)
		if (sc->vm[k] == part)
			return s->vm[k];
	return NULL;
}

/* ---- the statistics' part ------------------------------------------------------------- */

static const struct snap_field stats_fields[] = {
	{ NULL, SNAP_F_NAMED, 0, 0, 0, 0 },
};

const struct snap_part snap_stats_part = {
	.name = "stats",
	.size = sizeof(struct snap_stats),
	.fields = stats_fields,
	.nr_fields = 1,
};
