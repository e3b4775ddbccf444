/* SPDX-License-Identifier: MIT */
/*
 * Private to snapfile/: what the state file's writer (write.c) and parser
 * (parse.c) share with state.c below them.
 */
#ifndef PERFVISOR_SNAPFILE_INTERNAL_H
#define PERFVISOR_SNAPFILE_INTERNAL_H

#include "snapfile/snapfile.h"

#define SNAP_COMPATIBLE "perfvisor,snapshot"
#define KVM_MSR_ENTRY_SIZE 16u

/* The checksum: XXH3-64 of the blob with the root's checksum property zeroed (it is, after). 0 or an FDT error. */
int snap_blob_checksum(void *blob, uint64_t *sum);

#endif
