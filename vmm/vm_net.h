/* SPDX-License-Identifier: MIT */
/*
 * The host side of a virtio-net device: an existing tap interface,
 * attached by name (perfvisor never creates or configures one), with
 * IFF_VNET_HDR so the virtio_net_hdr passes through; the I/O thread
 * reads and writes its frames (docs/devices.md, "virtio-net").
 */
#ifndef PERFVISOR_VMM_VM_NET_H
#define PERFVISOR_VMM_VM_NET_H

#include <stdint.h>

#include "devices/devices.h"
#include "control.h"
#include "vmm.h"

struct vm_tap {
	int fd; /* non-blocking; -1: closed */
	char name[VIRTIO_NET_IFNAMSIZ];
	uint64_t offloads;	/* VIRTIO_NET_OFFLOADS bits the tap takes (TUNSETOFFLOAD works) */
	uint64_t want, applied; /* the guest's offloads, asked (any thread) and set (I/O thread); atomic */
};

/*
 * Attach to tap `name` (it must exist): open /dev/net/tun, TUNSETIFF
 * (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR), a 12-byte header, probe the
 * offloads. 0 or -errno with one line naming the tap and what to do. Setup thread.
 */
int vm_tap_open(struct vm_tap *t, const char *name, struct errbuf *err);
/* fd -1 is a no-op. */
void vm_tap_close(struct vm_tap *t);
/* The device's I/O callbacks for this tap (opaque: t). */
struct virtio_net_io vm_tap_io(struct vm_tap *t);
/* Apply the offloads the guest asked for, if they changed (TUNSETOFFLOAD). I/O thread. */
void vm_tap_apply(struct vm_tap *t);
/*
 * The MAC a --net without mac= gets: locally administered, unicast,
 * 52:56:H1:H2:H3:INDEX with H1-H3 a hash of the VM's --name (of the
 * process id without one). Pure.
 */
void vm_net_default_mac(const char *vm_name, unsigned long pid, unsigned index, uint8_t mac[6]);

#endif
