// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the snapshot state file parser (snapfile/parse.c), with
 * the VM's schema (its devices', PV PMU's and statistics' parts). Each
 * input is parsed as it is, and, where it is a sound device tree, once more
 * with its checksum fixed up, so mutations also reach the checks behind
 * the checksum. snap_parse must refuse or accept; it must never crash,
 * hang or leak (ASan and UBSan are on).
 */
#include <libfdt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapfile/snapfile.h"
#include "vmm/vmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct snap s;
	struct errbuf err;
	uint8_t *copy;

	snap_parse(data, size, vm_snap_schema(), &s, &err);
	snap_fini(&s);
	/* libfdt 1.6.1's fdt_check_full crashes on versions before 16 (snap_parse refuses them). */
	if (size < sizeof(struct fdt_header) || size > SNAP_MAX_STATE_SIZE || fdt_version(data) < 16 ||
	    fdt_check_full(data, size))
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (fdt_setprop_inplace_u64(copy, 0, "checksum", 0) == 0 &&
	    fdt_setprop_inplace_u64(copy, 0, "checksum", snap_hash(copy, size)) == 0)
		snap_parse(copy, size, vm_snap_schema(), &s, &err);
	snap_fini(&s);
	free(copy);
	return 0;
}
