/* SPDX-License-Identifier: MIT */
/*
 * A virtio-blk disk's host side: the image (checked, locked with flock,
 * its size and hole-punching probed) and its io_uring, the I/O engine the
 * device (devices/virtio_blk.c) hands its requests to. The ring's
 * completions signal an eventfd that the virtio I/O thread waits on.
 * Calls nothing else in vmm/ but the log.
 */
#ifndef PERFVISOR_VMM_VM_BLK_H
#define PERFVISOR_VMM_VM_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/devices.h"
#include "util/util.h"

struct vm_blk;

/*
 * Open the image at path (read-only if readonly), lock it (exclusive for
 * read-write, shared for read-only: two VMs never write one image), probe
 * what its file system can do and make its ring. 0, or -errno with one
 * line naming the image and what is wrong. Setup thread.
 */
int vm_blk_open(struct vm_blk **out, const char *path, bool readonly, bool verbose, struct errbuf *err);
/* The device's parameters: capacity, flags, serial, and this engine. */
void vm_blk_params(struct vm_blk *b, struct virtio_blk_params *p);
/* The absolute path of the image (its snapshot part keeps it). */
const char *vm_blk_path(const struct vm_blk *b);
/* Read-only or not, and the capacity in 512-byte sectors. */
void vm_blk_describe(const struct vm_blk *b, bool *readonly, uint64_t *sectors);
/* The eventfd the ring signals on each completion (for epoll). */
int vm_blk_eventfd(const struct vm_blk *b);
/* Hand the operations queued since the last call to the kernel. The thread that submits. */
void vm_blk_kick(struct vm_blk *b);
/*
 * Take up to max completions without waiting: their tags and results
 * (bytes, or -errno). Returns how many. wait_ms > 0: wait that long for
 * the first one if none is there. Operations still at the kernel: *left.
 */
unsigned vm_blk_reap(struct vm_blk *b, uint64_t *tags, int64_t *res, unsigned max, int wait_ms,
		     unsigned *left);
/*
 * A live migration hands the image to another perfvisor: release (nothing
 * at the kernel: the VM is paused and drained) syncs the image's data and
 * drops the lock; !release takes it again (the migration failed). 0 or
 * -errno with one line.
 */
int vm_blk_handover(struct vm_blk *b, bool release, struct errbuf *err);
/* Wait for every operation at the kernel (they may still write guest RAM), then close. NULL is a no-op. */
void vm_blk_destroy(struct vm_blk *b);

#endif
