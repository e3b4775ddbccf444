/* SPDX-License-Identifier: MIT */
/*
 * virtio inside the devices component: the split virtqueue walker (pure:
 * guest memory only through dev_host's gpa_to_hva, every address and
 * length checked) and what a device backend gives the virtio-mmio
 * transport. docs/devices.md describes both and their limits.
 */
#ifndef PERFVISOR_DEVICES_VIRTIO_INTERNAL_H
#define PERFVISOR_DEVICES_VIRTIO_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/devices.h"
#include "snapfile/snapfile.h"

/*
 * The transport's fields in a virtio device's snapshot part: its struct
 * virtio_mmio_state is at member path P (`t.`, or empty when the part's
 * state is the transport's own) of the part's state struct T. One table
 * for every device, so their nodes name the transport alike.
 */
#define VIRTIO_SNAP_F(T, P, prop, type, member, max) SNAP_FIELD(T, prop, type, P member, max)
#define VIRTIO_SNAP_QF(T, P, n, prop, type, member, max) \
	VIRTIO_SNAP_F(T, P, "q" #n "-" prop, type, q[n].member, max)
#define VIRTIO_SNAP_QUEUE(T, P, n)                                                           \
	VIRTIO_SNAP_QF(T, P, n, "num", SNAP_F_U32, num, 0xffff),                             \
		VIRTIO_SNAP_QF(T, P, n, "ready", SNAP_F_BOOL, ready, 1),                     \
		VIRTIO_SNAP_QF(T, P, n, "desc", SNAP_F_U64, desc, 0),                        \
		VIRTIO_SNAP_QF(T, P, n, "avail", SNAP_F_U64, avail, 0),                      \
		VIRTIO_SNAP_QF(T, P, n, "used", SNAP_F_U64, used, 0),                        \
		VIRTIO_SNAP_QF(T, P, n, "last-avail", SNAP_F_U16, last_avail, 0xffff),       \
		VIRTIO_SNAP_QF(T, P, n, "used-idx", SNAP_F_U16, used_idx, 0xffff),           \
		SNAP_FIELD_OPT(T, "q" #n "-notifications", SNAP_F_U64, P qc[n].notifies, 0), \
		SNAP_FIELD_OPT(T, "q" #n "-interrupts", SNAP_F_U64, P qc[n].interrupts, 0)
#define VIRTIO_MMIO_SNAP_FIELDS(T, P)                                                              \
	VIRTIO_SNAP_F(T, P, "status", SNAP_F_U32, status, 0xff),                                   \
		VIRTIO_SNAP_F(T, P, "dev-features-sel", SNAP_F_U32, dev_features_sel, 0xffffffff), \
		VIRTIO_SNAP_F(T, P, "drv-features-sel", SNAP_F_U32, drv_features_sel, 0xffffffff), \
		VIRTIO_SNAP_F(T, P, "queue-sel", SNAP_F_U32, queue_sel, 0xffffffff),               \
		VIRTIO_SNAP_F(T, P, "int-status", SNAP_F_U32, int_status, 3),                      \
		VIRTIO_SNAP_F(T, P, "config-gen", SNAP_F_U32, config_gen, 0xffffffff),             \
		VIRTIO_SNAP_F(T, P, "drv-features", SNAP_F_U64, drv_features, 0),                  \
		VIRTIO_SNAP_QUEUE(T, P, 0), VIRTIO_SNAP_QUEUE(T, P, 1),                            \
		VIRTIO_SNAP_F(T, P, "requests", SNAP_F_U64, c.requests, 0),                        \
		VIRTIO_SNAP_F(T, P, "bytes", SNAP_F_U64, c.bytes, 0),                              \
		VIRTIO_SNAP_F(T, P, "notifications", SNAP_F_U64, c.notifies, 0),                   \
		VIRTIO_SNAP_F(T, P, "interrupts", SNAP_F_U64, c.interrupts, 0),                    \
		VIRTIO_SNAP_F(T, P, "dropped", SNAP_F_U64, c.dropped, 0),                          \
		VIRTIO_SNAP_F(T, P, "needs-reset", SNAP_F_U64, c.needs_reset, 0),                  \
		VIRTIO_SNAP_F(T, P, "bad-accesses", SNAP_F_U64, c.bad_accesses, 0)

/* ---- the split virtqueue (virtio 1.x, 2.7) ------------------------------------------ */
#define VRING_DESC_F_NEXT 1u
#define VRING_DESC_F_WRITE 2u
#define VRING_DESC_F_INDIRECT 4u
#define VRING_AVAIL_F_NO_INTERRUPT 1u

#define VQ_MAX_SIZE 32768u /* the largest queue size the spec allows */
#define VQ_MAX_BUFS 128u   /* buffers in one chain (indirect ones included); more: dropped */
#define VQ_SPAN_MAX 64u	   /* chains one request may fill (ops->span): 64 KiB in 1 KiB buffers */

/* One queue as the driver set it up and the device walks it. */
struct virtq {
	uint16_t num; /* size, a power of two once validated */
	bool ready;
	uint64_t desc, avail, used; /* guest-physical addresses of the three areas */
	uint16_t last_avail;	    /* the next avail ring entry the device takes */
	uint16_t used_idx;	    /* the next used ring entry the device fills (its idx) */
};

/* One buffer of a chain, checked to lie entirely in guest RAM. */
struct vq_buf {
	uint8_t *p;
	uint32_t len;
	bool write; /* device-writable */
};

/* What went wrong: a chain's (the request is dropped) or the queue's (the device needs a reset). */
enum vq_err {
	VQ_OK,
	VQ_E_SIZE,	/* queue size 0, not a power of two, or above the maximum */
	VQ_E_ALIGN,	/* a ring area misaligned */
	VQ_E_RING,	/* a ring area outside guest RAM */
	VQ_E_AVAIL_IDX, /* avail idx more than the queue size ahead of the device */
	VQ_E_HEAD,	/* an avail ring entry names a descriptor beyond the queue */
	VQ_E_NEXT,	/* a descriptor's next beyond its table */
	VQ_E_LOOP,	/* a chain longer than its table: it loops */
	VQ_E_TOO_LONG,	/* more than VQ_MAX_BUFS buffers */
	VQ_E_RANGE,	/* a buffer (or indirect table) outside guest RAM */
	VQ_E_OVERFLOW,	/* the chain's bytes do not fit in 32 bits */
	VQ_E_INDIRECT,	/* an indirect table that is empty, ragged, nested or chained, or not offered */
	VQ_E_ORDER,	/* a readable buffer after a writable one */
	VQ_NR_ERR
};

/* A short name for messages ("descriptor loop"). */
const char *vq_err_name(enum vq_err e);

/* A chain taken from the avail ring: its head, its readable then writable buffers. */
struct vq_chain {
	uint16_t head;
	unsigned n, nr_read; /* buffers; the first nr_read are readable */
	uint64_t read_len, write_len;
	struct vq_buf buf[VQ_MAX_BUFS];
};

/*
 * Check a queue the driver made ready: size a power of two in 1..max,
 * the areas aligned (16, 2, 4) and inside guest RAM. VQ_OK or the error.
 */
enum vq_err vq_validate(const struct virtq *q, const struct dev_host *h, unsigned max);

enum vq_pop {
	VQ_POP_EMPTY = 0,   /* nothing available */
	VQ_POP_CHAIN = 1,   /* *c is a request */
	VQ_POP_BAD = 2,	    /* a malformed chain (c->head valid, *err why): give it back used with length 0 */
	VQ_POP_BROKEN = -1, /* the queue itself is unusable (*err why): the device needs a reset */
};

/*
 * Take the next available chain. indirect: VIRTIO_F_INDIRECT_DESC was
 * negotiated. Never reads or writes outside guest RAM, never loops more
 * than the queue size (plus an indirect table's entries). q must have
 * passed vq_validate. The caller serializes calls on one queue.
 */
enum vq_pop vq_pop(struct virtq *q, const struct dev_host *h, bool indirect, struct vq_chain *c,
		   enum vq_err *err);
/* Give a chain back: used element (head, len), then the used idx (release). 0 or -EFAULT. */
int vq_push(struct virtq *q, const struct dev_host *h, uint16_t head, uint32_t len);
/*
 * Give n chains back at once: their used elements in order, then one used
 * idx store, so the driver sees all of them or none (the buffers of one
 * mergeable frame). 0 or -EFAULT.
 */
int vq_push_many(struct virtq *q, const struct dev_host *h, const uint16_t *head, const uint32_t *len,
		 unsigned n);
/*
 * After pushes that moved used idx from old_used to q->used_idx: does the
 * driver want an interrupt? event_idx: VIRTIO_F_EVENT_IDX negotiated
 * (used_event), else the avail ring's NO_INTERRUPT flag. Full barrier first.
 */
bool vq_need_notify(const struct virtq *q, const struct dev_host *h, bool event_idx, uint16_t old_used);
/*
 * With VIRTIO_F_EVENT_IDX: publish avail_event = last_avail (notify me for
 * the next one), then say whether more arrived meanwhile (true: pop again).
 */
bool vq_arm_event(struct virtq *q, const struct dev_host *h);

/* ---- a device behind the virtio-mmio transport ---------------------------------------- */

/* What a device backend gives the transport: a static table. Every callback runs under the transport's lock. */
struct virtio_backend_ops {
	const char *name;   /* "virtio-rng" */
	uint32_t device_id; /* virtio device ID: 4 for entropy */
	uint64_t features;  /* device-specific feature bits (the transport adds VERSION_1 etc.) */
	unsigned nr_queues; /* <= VIRTIO_MAX_QUEUES */
	uint16_t queue_max; /* QueueNumMax, a power of two */
	uint32_t config_len;
	/* The device config space (NULL when config_len is 0): off + len <= config_len. */
	void (*read_config)(void *be, uint32_t off, uint8_t *buf, uint32_t len);
	/*
	 * A request from queue q: do it, say how many bytes it wrote into the
	 * chain's writable buffers. 0, or -errno to drop it (returned with
	 * length 0 and counted); -EAGAIN: not now (virtio-net's receive queue
	 * with no frame waiting): the chain stays available, serving stops.
	 * I/O thread.
	 */
	int (*handle)(void *be, unsigned q, const struct vq_chain *c, uint32_t *written);
	/*
	 * A queue whose requests may fill several chains (virtio-net's receive
	 * queue with VIRTIO_NET_F_MRG_RXBUF): the writable bytes the next
	 * request may need at most, or 0 (one chain per request, handle()).
	 * NULL: always 0.
	 */
	uint32_t (*span)(void *be, unsigned q);
	/*
	 * One request into chains c[0..n-1], which hold span() bytes together
	 * (fewer only when the driver has no more to give): returns how many
	 * it filled, from the first (1..n), with each one's bytes in
	 * written[]; -EAGAIN as handle() (every chain stays available);
	 * another -errno drops the request (the first chain given back empty,
	 * the others kept). I/O thread.
	 */
	int (*handle_span)(void *be, unsigned q, const struct vq_chain *c, unsigned n, uint32_t *written);
	/*
	 * A request handle() left in flight (it returned VIRTIO_ASYNC) has its
	 * engine result: fill in its queue, head and bytes written and return
	 * true to push it, or false to forget it (the device was reset since).
	 * NULL for a device that answers every request at once.
	 */
	bool (*complete)(void *be, uint64_t tag, int64_t res, unsigned *q, uint16_t *head, uint32_t *written);
	/* Requests in flight (NULL: none ever). */
	unsigned (*inflight)(void *be);
	/* The driver reset the device (Status = 0). NULL: nothing to do. */
	void (*reset)(void *be);
	/* DRIVER_OK with these driver features (also at a restore). NULL: nothing to do. */
	void (*activate)(void *be, uint64_t features);
	/* The backend's own counters (statistics virtio.<dev>.<name>): nr_stats names, read in that order. */
	unsigned nr_stats;
	const char *const *stat_names;
	void (*read_stats)(void *be, uint64_t *values);
	/* Names of the queues, for their counters in the statistics (NULL: a device of one queue, none). */
	const char *const *queue_names;
};

/* handle()'s answer for a request that completes later, through virtio_mmio_complete(). */
#define VIRTIO_ASYNC 1

/* The backend of v if its ops are ops (NULL: whichever they are), else NULL. */
void *virtio_mmio_backend(struct virtio_mmio *v, const struct virtio_backend_ops *ops);

/*
 * A transport for backend `be` (malloc'd; the transport frees it on
 * destroy, also when create fails). 0, -ENOMEM or -EINVAL. Setup thread.
 */
int virtio_mmio_create_backend(struct virtio_mmio **out, const struct virtio_backend_ops *ops, void *be,
			       const struct dev_host *host);

#endif
