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
#define VM_VIRTIO_MAX 13	     /* devices at most: one GSI each from VM_VIRTIO_GSIS */
/* IOAPIC pins: the ISA ones the machine leaves free (4 is the UART's, 8 and 9 the RTC's and SCI's), then 16-23. */
#define VM_VIRTIO_GSIS                                          \
	{                                                       \
		5, 6, 7, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23 \
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

/* The virtio devices a configuration asks for. */
struct vm_virtio_plan_in {
	bool rng;	 /* --rng */
	unsigned disks;	 /* --disk options (at most VM_MAX_DISKS) */
	unsigned nr_net; /* --net options (at most VIRTIO_NET_MAX) */
};

/*
 * The windows the devices of a configuration get, in order (virtio-rng,
 * then the disks virtio-blk0, virtio-blk1, ... in command-line order, then
 * the nets virtio-net0, virtio-net1, ...), before any is made (a firmware
 * table built first can list them): copies at most max into out, returns
 * how many. Pure.
 */
unsigned vm_virtio_plan(const struct vm_virtio_plan_in *in, struct vm_virtio_window *out, unsigned max);

/* The same as the DSDT's entries (machine/acpi.c): copies at most max, returns how many. Pure. */
unsigned vm_virtio_acpi_devs(const struct vm_virtio_plan_in *in, struct acpi_mmio_dev *out, unsigned max);

struct vm_virtio;

struct vm_virtio_config {
	bool rng;
	const struct vm_disk *disks; /* --disk, in order */
	unsigned nr_disks;
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
#define VM_VIRTIO_NR_STATS 7	  /* the transport's, every device */
#define VM_VIRTIO_NR_BLK_STATS 11 /* a disk's own, after those */
#define VM_VIRTIO_MAX_STATS 19	  /* the transport's and the device's own (virtio-net: 6 more, 4 per queue) */
/*
 * The VM record's fields for the devices' counters: names (whether each
 * counts bytes, whether it is a peak) for vm_stats_extra:
 * VM_VIRTIO_NR_STATS per device and its backend's own counters; n: how
 * many (0 for NULL). Setup thread.
 */
void vm_virtio_stats_fields(struct vm_virtio *vv, const char *const **names, const uint8_t **bytes,
			    const uint8_t **peak, unsigned *n);
/* Their current values, in that order (ctx: the struct vm_virtio). Any thread. */
void vm_virtio_stats_read(void *ctx, uint64_t *values);
/* --verbose: each device's counters. Main thread, after the vCPUs stopped. */
void vm_virtio_log(const struct vm_virtio *vv);
/* Stop the thread, free everything. NULL is a no-op. After every vCPU thread ended. */
void vm_virtio_destroy(struct vm_virtio *vv);

/*
 * A live migration (docs/migration.md): the devices' threads write guest
 * RAM behind KVM's dirty log, so while bitmap is set (one bit per 4 KiB
 * page; NULL: off) every page a device reaches is marked in it. Any thread.
 */
void vm_virtio_track(struct vm_virtio *vv, uint64_t *bitmap);
/*
 * A migration's external resources handed over (release) or taken back: every disk's image
 * (vm_blk_handover) and every tap (detached, then attached again by name). Main thread, VM paused.
 */
int vm_virtio_devices_handover(struct vm_virtio *vv, bool release, struct errbuf *err);

/* Each tap's name, in order. */
unsigned vm_virtio_taps(const struct vm_virtio *vv, const char **names, unsigned max);
/* Each disk, in order (struct vm_disk_info, vmm.h). */
unsigned vm_virtio_disks_info(const struct vm_virtio *vv, struct vm_disk_info *out, unsigned max);

#endif
