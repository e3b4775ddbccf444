// SPDX-License-Identifier: MIT
/*
 * What a snapshot of this VM holds besides KVM's state: each device's
 * part (devices/table.c, in its order, then the virtio devices'), the PV
 * PMU's and the statistics'.
 * One schema serves the writer, the restore, snapshot-info and the fuzzer.
 */
#include "vmm.h"

#include <pthread.h>

static const struct snap_part *devices[SNAP_MAX_PARTS];
static const struct snap_part *const vm_parts[] = { &pmu_caps_part, &snap_stats_part };
static const struct snap_part *const vcpu_parts[] = { &pmu_vcpu_part, &snap_stats_part };
static struct snap_schema schema = {
	.devices = devices,
	.vm = vm_parts,
	.nr_vm = sizeof(vm_parts) / sizeof(vm_parts[0]),
	.vcpu = vcpu_parts,
	.nr_vcpu = sizeof(vcpu_parts) / sizeof(vcpu_parts[0]),
};
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
	for (unsigned i = 0; i < dev_table_len && schema.nr_devices < SNAP_MAX_PARTS; i++)
		if (dev_table[i]->state)
			devices[schema.nr_devices++] = dev_table[i]->state;
	/* The virtio devices, made only when asked for (vm_virtio.c), after the machine's own. */
	if (schema.nr_devices < SNAP_MAX_PARTS)
		devices[schema.nr_devices++] = &virtio_rng_part;
	for (unsigned i = 0; i < VIRTIO_BLK_MAX_PARTS && schema.nr_devices < SNAP_MAX_PARTS; i++)
		devices[schema.nr_devices++] = &virtio_blk_parts[i];
	for (unsigned i = 0; i < VIRTIO_NET_MAX && schema.nr_devices < SNAP_MAX_PARTS; i++)
		devices[schema.nr_devices++] = &virtio_net_parts[i];
}

const struct snap_schema *vm_snap_schema(void)
{
	pthread_once(&once, build);
	return &schema;
}
