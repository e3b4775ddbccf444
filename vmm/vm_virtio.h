/* SPDX-License-Identifier: MIT */
/*
 * The VM's virtio-mmio devices (docs/devices.md): only those the user
 * asked for, each in a 4 KiB window of the 32-bit MMIO hole with an
 * IOAPIC GSI; queue notifications through ioeventfds, interrupts through
 * irqfds, requests served by one I/O thread. Calls control and seccomp.
 */
#ifndef PERFVISOR_VMM_VM_VIRTIO_H
#define PERFVISOR_VMM_VM_VIRTIO_H

#include <stdbool.h>
#include <stdint.h>

#include "control.h"
#include "machine/machine.h"
#include "parts.h"
#include "vmm.h"

#define VM_VIRTIO_BASE 0xd0000000ULL /* the first device's window; the next ones follow, 4 KiB each */
#define VM_VIRTIO_MAX 5		     /* devices at most: one GSI each from VM_VIRTIO_GSIS */
#define VM_VIRTIO_GSIS          \
	{                       \
		5, 6, 7, 10, 11 \
	}

/*
 * One device as firmware tables describe it (the DSDT: a device with
 * _HID "LNRO0005", _UID uid, a 32-bit memory resource [base, base+len)
 * and an interrupt on GSI gsi, edge-triggered, active high).
 */
struct vm_virtio_window {
	const char *name; /* "virtio-rng" */
	const char *hid;  /* "LNRO0005": the ACPI id Linux's virtio_mmio matches */
	unsigned uid;	  /* 0, 1, ... in window order */
	uint64_t base, len;
	uint32_t gsi;
	bool edge; /* always: the irqfd pulses the line */
};

/*
 * The windows the devices of a configuration get (rng: --rng; nr_net:
 * --net, "virtio-net0" ...), in order, before any is made (a firmware
 * table built first can list them): copies at most max into out, returns
 * how many. Pure.
 */
unsigned vm_virtio_plan(bool rng, unsigned nr_net, struct vm_virtio_window *out, unsigned max);

/* The same as the DSDT's entries (machine/acpi.c): copies at most max, returns how many. Pure. */
unsigned vm_virtio_acpi_devs(bool rng, unsigned nr_net, struct acpi_mmio_dev *out, unsigned max);

struct vm_virtio;

struct vm_virtio_config {
	bool rng;
	int vm_fd; /* KVM_IOEVENTFD, KVM_IRQFD */
	struct gmem *mem;
	struct vmctl *ctl;
	struct bus *bus; /* not frozen yet */
	bool verbose;
	const struct vm_net_cfg *net; /* --net, nr_net of them */
	unsigned nr_net;
	const char *vm_name; /* --name, for the default MACs */
};

/* Make the devices asked for and register their windows. 0 or -errno with a message. Setup thread. */
int vm_virtio_create(struct vm_virtio **out, const struct vm_virtio_config *cfg, struct errbuf *err);
/*
 * The devices' windows and GSIs, in order: copies at most max into out
 * and returns how many there are (0 without devices, or for NULL). Any thread.
 */
unsigned vm_virtio_windows(const struct vm_virtio *vv, struct vm_virtio_window *out, unsigned max);
/* Each device's state as a snapshot part. Setup thread. */
int vm_virtio_add_parts(struct vm_virtio *vv, struct vm_parts *l, struct errbuf *err);
/*
 * Start the I/O thread (it loads its seccomp filter, then serves every
 * ready queue once: a restored VM's requests); returns once the filter is
 * in. No-op without devices. 0 or -errno with a message. Main thread.
 */
int vm_virtio_start(struct vm_virtio *vv, enum seccomp_mode mode, struct errbuf *err);
/* Statistics fields per device, in the VM record (docs/stats-abi.md): virtio.<dev>.<counter>. */
#define VM_VIRTIO_NR_STATS 7
#define VM_VIRTIO_MAX_STATS 16 /* the transport's and the backend's own (virtio-net: 6 more) */
/*
 * The VM record's fields for the devices' counters: names (and whether
 * each counts bytes) for vm_stats_extra: VM_VIRTIO_NR_STATS per device and
 * its backend's own counters
 * (0 for NULL). Setup thread.
 */
void vm_virtio_stats_fields(struct vm_virtio *vv, const char *const **names, const uint8_t **bytes,
			    unsigned *n);
/* Their current values, in that order (ctx: the struct vm_virtio). Any thread. */
void vm_virtio_stats_read(void *ctx, uint64_t *values);
/* --verbose: each device's counters. Main thread, after the vCPUs stopped. */
void vm_virtio_log(const struct vm_virtio *vv);
/* Stop the thread, free everything. NULL is a no-op. After every vCPU thread ended. */
void vm_virtio_destroy(struct vm_virtio *vv);

#endif
