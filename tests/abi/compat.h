/* SPDX-License-Identifier: MIT */
/*
 * Shared by the two halves of the stats ABI compatibility test: what the
 * test producers write, so each reader knows what it must read. Includes
 * no ABI header: each half brings its own version of it.
 */
#ifndef PERFVISOR_TEST_ABI_COMPAT_H
#define PERFVISOR_TEST_ABI_COMPAT_H

#define COMPAT_V1_VCPUS 3U
#define COMPAT_V1_UPTIME 5000000000ULL
#define COMPAT_EXITS(i) (1000ULL * ((i) + 1))
#define COMPAT_RUN_NS(i) (2000000000ULL + (i))
#define COMPAT_NAME "compat-vm"

/* A sealed region made by the ABI v1 producer; returns an O_RDONLY fd, or -1. */
int compat_v1_region(void);

#endif
