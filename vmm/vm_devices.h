/* SPDX-License-Identifier: MIT */
/*
 * The machine's devices in the VM: every entry of devices/table.c made,
 * given its host services and registered on the bus, and its state a
 * snapshot part. Calls control and the console.
 */
#ifndef PERFVISOR_VMM_VM_DEVICES_H
#define PERFVISOR_VMM_VM_DEVICES_H

#include "console.h"
#include "control.h"
#include "devices/devices.h"
#include "machine/machine.h"
#include "parts.h"

struct vm_devices;

struct vm_devices_config {
	unsigned nr_vcpus;
	int vm_fd; /* KVM_IRQ_LINE */
	struct gmem *mem;
	struct console *console;
	struct vmctl *ctl;
	struct bus *bus; /* not frozen yet */
};

/* Make every device and register its ranges. 0 or -errno with a message; destroy cleans up. Setup thread. */
int vm_devices_create(struct vm_devices **out, const struct vm_devices_config *cfg, struct errbuf *err);
/* NULL is a no-op. After every vCPU thread ended. */
void vm_devices_destroy(struct vm_devices *d);
/* The device made from desc, or NULL. */
void *vm_devices_find(const struct vm_devices *d, const struct dev_desc *desc);
/* Each device's state as a snapshot part. Setup thread. */
int vm_devices_add_parts(struct vm_devices *d, struct vm_parts *l, struct errbuf *err);

#endif
