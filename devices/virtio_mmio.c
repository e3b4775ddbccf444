// SPDX-License-Identifier: MIT
/*
 * The virtio-mmio transport (virtio 1.x, 4.2.2, register layout version
 * 2): the register file, feature negotiation, the status state machine
 * with reset, the queues' set-up, and serving a queue through its
 * backend. One mutex per device serializes the vCPU threads' register
 * accesses and the I/O thread's serving (docs/devices.md, "Locking").
 */
#include "devices/virtio_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/devices_internal.h"

/* Registers (4.2.2) */
#define R_MAGIC 0x000
#define R_VERSION 0x004
#define R_DEVICE_ID 0x008
#define R_VENDOR_ID 0x00c
#define R_DEV_FEATURES 0x010
#define R_DEV_FEATURES_SEL 0x014
#define R_DRV_FEATURES 0x020
#define R_DRV_FEATURES_SEL 0x024
#define R_QUEUE_SEL 0x030
#define R_QUEUE_NUM_MAX 0x034
#define R_QUEUE_NUM 0x038
#define R_QUEUE_READY 0x044
#define R_QUEUE_NOTIFY VIRTIO_MMIO_QUEUE_NOTIFY
#define R_INT_STATUS 0x060
#define R_INT_ACK 0x064
#define R_STATUS 0x070
#define R_QUEUE_DESC_LO 0x080
#define R_QUEUE_DESC_HI 0x084
#define R_QUEUE_DRIVER_LO 0x090
#define R_QUEUE_DRIVER_HI 0x094
#define R_QUEUE_DEVICE_LO 0x0a0
#define R_QUEUE_DEVICE_HI 0x0a4
#define R_CONFIG_GEN 0x0fc
#define R_CONFIG 0x100

#define VIRTIO_MAGIC 0x74726976u  /* "virt" */
#define VIRTIO_VENDOR 0x52565650u /* "PVVR": perfvisor */

#define S_ACKNOWLEDGE 0x01u
#define S_DRIVER 0x02u
#define S_DRIVER_OK 0x04u
#define S_FEATURES_OK 0x08u
#define S_NEEDS_RESET VIRTIO_STATUS_NEEDS_RESET
#define S_FAILED 0x80u
#define S_ALL (S_ACKNOWLEDGE | S_DRIVER | S_DRIVER_OK | S_FEATURES_OK | S_NEEDS_RESET | S_FAILED)

#define INT_USED 0x1u
#define INT_CONFIG 0x2u

#define F_INDIRECT_DESC (1ULL << 28)
#define F_EVENT_IDX (1ULL << 29)
#define F_VERSION_1 (1ULL << 32)
#define TRANSPORT_FEATURES (F_INDIRECT_DESC | F_EVENT_IDX | F_VERSION_1)

/* One rate limiter per kind of line, so a flood of one cannot hide another. */
enum {
	LOG_DROPPED,
	LOG_RESET,
	LOG_ACCESS,
	NR_LOGS
};

struct vlog_kind {
	struct ratelimit rl;
	uint64_t reported; /* rl.suppressed already announced */
};

struct virtio_mmio {
	pthread_mutex_t lock;
	struct dev_host host;
	const struct virtio_backend_ops *ops;
	void *be;
	uint64_t features; /* offered: the backend's and the transport's */
	struct virtio_mmio_state st;
	struct virtq q[VIRTIO_MAX_QUEUES];
	struct virtio_counters c;			    /* each field accessed atomically */
	struct virtio_queue_counters qc[VIRTIO_MAX_QUEUES]; /* likewise */
	struct vlog_kind log[NR_LOGS];
	struct vq_chain *span; /* VQ_SPAN_MAX chains for one request of a backend with span(), else NULL */
	/* The statistics names of the device's own counters: the backend's, then the named queues'. */
	unsigned nr_own;
	const char *own_names[VIRTIO_MAX_OWN_STATS];
	char queue_stat[VIRTIO_MAX_QUEUES * 2][32];
	/* Interrupt coalescing: the queues whose used-buffer interrupts wait for host.defer_irq's timer. */
	uint32_t defer_mask;
	bool deferred[VIRTIO_MAX_QUEUES];      /* one waits */
	uint16_t defer_old[VIRTIO_MAX_QUEUES]; /* ... for the buffers used since this used idx */
};

#define COUNT(v, field) __atomic_add_fetch(&(v)->c.field, 1, __ATOMIC_RELAXED)

/* A notification of queue qi: the device's count, and the queue's (one that exists). */
static void count_notify(struct virtio_mmio *v, unsigned qi)
{
	COUNT(v, notifies);
	if (qi < VIRTIO_MAX_QUEUES)
		__atomic_add_fetch(&v->qc[qi].notifies, 1, __ATOMIC_RELAXED);
}

/* A guest-triggered line, rate-limited by its kind; the device's lock is held. */
__attribute__((format(printf, 3, 4))) static void vlog(struct virtio_mmio *v, int kind, const char *fmt, ...)
{
	struct vlog_kind *k = &v->log[kind];
	char msg[320];
	uint64_t sup;
	va_list ap;
	int n;

	if (!ratelimit_allow(&k->rl))
		return;
	n = snprintf(msg, sizeof(msg), "%s: ", v->ops->name);
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	sup = __atomic_load_n(&k->rl.suppressed, __ATOMIC_RELAXED);
	if (sup > k->reported && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, " (%" PRIu64 " similar lines suppressed)",
			 sup - k->reported);
	k->reported = sup;
	dev_log(&v->host, msg);
}

int virtio_mmio_create_backend(struct virtio_mmio **out, const struct virtio_backend_ops *ops, void *be,
			       const struct dev_host *host)
{
	struct virtio_mmio *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (v && ops->span && !(v->span = calloc(VQ_SPAN_MAX, sizeof(*v->span)))) {
		free(v);
		v = NULL;
	}
	if (!v || ops->nr_queues > VIRTIO_MAX_QUEUES || (ops->span && !ops->handle_span) ||
	    ops->nr_stats + (ops->queue_names ? 2 * ops->nr_queues : 0) > VIRTIO_MAX_OWN_STATS) {
		int rc = v ? -EINVAL : -ENOMEM;

		if (v)
			free(v->span);
		free(v);
		free(be);
		return rc;
	}
	pthread_mutex_init(&v->lock, NULL);
	if (host)
		v->host = *host;
	v->ops = ops;
	v->be = be;
	v->features = ops->features | TRANSPORT_FEATURES;
	for (unsigned k = 0; k < ops->nr_stats; k++)
		v->own_names[v->nr_own++] = ops->stat_names[k];
	for (unsigned q = 0; ops->queue_names && q < ops->nr_queues; q++)
		for (unsigned k = 0; k < 2; k++) {
			snprintf(v->queue_stat[2 * q + k], sizeof(v->queue_stat[0]), "%s_%s",
				 ops->queue_names[q], k ? "interrupts" : "notifications");
			v->own_names[v->nr_own++] = v->queue_stat[2 * q + k];
		}
	for (int k = 0; k < NR_LOGS; k++)
		v->log[k].rl = (struct ratelimit)RATELIMIT_INIT(1000000000ULL, 10);
	*out = v;
	return 0;
}

void virtio_mmio_destroy(struct virtio_mmio *v)
{
	if (!v)
		return;
	pthread_mutex_destroy(&v->lock);
	free(v->be);
	free(v->span);
	free(v);
}

unsigned virtio_mmio_backend_counters(struct virtio_mmio *v, const char *const **names, uint64_t *values)
{
	unsigned nb = v->ops->nr_stats;

	if (names)
		*names = v->own_names;
	if (!values)
		return v->nr_own;
	if (nb)
		v->ops->read_stats(v->be, values);
	for (unsigned k = nb; k < v->nr_own; k++) {
		const struct virtio_queue_counters *qc = &v->qc[(k - nb) / 2];

		values[k] = __atomic_load_n((k - nb) % 2 ? &qc->interrupts : &qc->notifies, __ATOMIC_RELAXED);
	}
	return v->nr_own;
}

unsigned virtio_mmio_nr_queues(const struct virtio_mmio *v)
{
	return v->ops->nr_queues;
}

const char *virtio_mmio_name(const struct virtio_mmio *v)
{
	return v->ops->name;
}

/* Copy counters (structs of uint64_t only, len bytes), each read and written atomically. */
static void copy_counters(void *to, const void *from, size_t len)
{
	const uint64_t *in = from;
	uint64_t *o = to;

	for (size_t i = 0; i < len / sizeof(uint64_t); i++)
		__atomic_store_n(&o[i], __atomic_load_n(&in[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

void virtio_mmio_get_counters(struct virtio_mmio *v, struct virtio_counters *out)
{
	copy_counters(out, &v->c, sizeof(v->c));
}

/* ---- status and reset ------------------------------------------------------------ */

static void reset(struct virtio_mmio *v)
{
	memset(&v->st, 0, sizeof(v->st));
	memset(v->q, 0, sizeof(v->q));
	memset(v->deferred, 0, sizeof(v->deferred));
	if (v->ops->reset)
		v->ops->reset(v->be);
}

static void raise_int(struct virtio_mmio *v, uint32_t bits)
{
	v->st.int_status |= bits;
	COUNT(v, interrupts);
	if (v->host.pulse_irq)
		v->host.pulse_irq(v->host.opaque);
}

/* Queue qi has new used buffers the driver wants to hear of. */
static void raise_used(struct virtio_mmio *v, unsigned qi)
{
	__atomic_add_fetch(&v->qc[qi].interrupts, 1, __ATOMIC_RELAXED);
	raise_int(v, INT_USED);
}

/* The driver broke a rule the device cannot work around: it stops until reset (2.1.2). */
static void needs_reset(struct virtio_mmio *v, unsigned q, enum vq_err e)
{
	COUNT(v, needs_reset);
	vlog(v, LOG_RESET, "queue %u: %s; the device needs a reset", q, vq_err_name(e));
	if (v->st.status & S_NEEDS_RESET)
		return;
	v->st.status |= S_NEEDS_RESET;
	if (v->st.status & S_DRIVER_OK)
		raise_int(v, INT_CONFIG);
}

static void write_status(struct virtio_mmio *v, uint32_t val)
{
	uint32_t old = v->st.status, add = val & ~old;

	if (val == 0) {
		reset(v);
		return;
	}
	/* Bits only come on, one step at a time (3.1.1); NEEDS_RESET is the device's. */
	if ((old & ~val & ~S_NEEDS_RESET) || (val & ~S_ALL) || (add & S_NEEDS_RESET)) {
		COUNT(v, bad_accesses);
		vlog(v, LOG_ACCESS, "status 0x%x after 0x%x ignored", val, old);
		return;
	}
	if (add & S_FEATURES_OK) {
		uint64_t f = v->st.drv_features;

		/* Features the device did not offer, or a legacy driver: FEATURES_OK stays clear. */
		if ((f & ~v->features) || !(f & F_VERSION_1)) {
			vlog(v, LOG_ACCESS, "driver features 0x%" PRIx64 " refused (offered 0x%" PRIx64 ")",
			     f, v->features);
			add &= ~S_FEATURES_OK;
		}
	}
	if ((add & S_DRIVER_OK) && !((old | add) & S_FEATURES_OK)) {
		COUNT(v, bad_accesses);
		vlog(v, LOG_ACCESS, "DRIVER_OK before FEATURES_OK ignored");
		add &= ~S_DRIVER_OK;
	}
	v->st.status = old | add;
	if ((add & S_DRIVER_OK) && v->ops->activate)
		v->ops->activate(v->be, v->st.drv_features);
}

/* ---- queues ------------------------------------------------------------------------ */

static struct virtq *sel_queue(struct virtio_mmio *v)
{
	return v->st.queue_sel < v->ops->nr_queues ? &v->q[v->st.queue_sel] : NULL;
}

static void set_half(uint64_t *r, bool hi, uint32_t val)
{
	*r = hi ? (*r & 0xffffffffULL) | ((uint64_t)val << 32) : (*r & ~0xffffffffULL) | val;
}

static void write_queue(struct virtio_mmio *v, uint64_t off, uint32_t val)
{
	struct virtq *q = sel_queue(v);
	enum vq_err e;

	/* A queue that does not exist, or one in use, is not set up again (4.2.2.3). */
	if (!q || q->ready) {
		if (off == R_QUEUE_READY && q && !val) {
			q->ready = false;
			return;
		}
		COUNT(v, bad_accesses);
		vlog(v, LOG_ACCESS, "queue %u register 0x%" PRIx64 " written while %s", v->st.queue_sel, off,
		     q ? "ready" : "absent");
		return;
	}
	switch (off) {
	case R_QUEUE_NUM:
		q->num = (uint16_t)(val > 0xffff ? 0 : val);
		if (val > 0xffff)
			needs_reset(v, v->st.queue_sel, VQ_E_SIZE);
		break;
	case R_QUEUE_READY:
		if (!val)
			break;
		e = vq_validate(q, &v->host, v->ops->queue_max);
		if (e != VQ_OK)
			needs_reset(v, v->st.queue_sel, e);
		else
			q->ready = true;
		break;
	case R_QUEUE_DESC_LO:
	case R_QUEUE_DESC_HI:
		set_half(&q->desc, off == R_QUEUE_DESC_HI, val);
		break;
	case R_QUEUE_DRIVER_LO:
	case R_QUEUE_DRIVER_HI:
		set_half(&q->avail, off == R_QUEUE_DRIVER_HI, val);
		break;
	default:
		set_half(&q->used, off == R_QUEUE_DEVICE_HI, val);
		break;
	}
}

static bool can_serve(struct virtio_mmio *v, unsigned qi)
{
	return (v->st.status & (S_DRIVER_OK | S_NEEDS_RESET)) == S_DRIVER_OK && qi < v->ops->nr_queues &&
	       v->q[qi].ready;
}

/*
 * Buffers of queue qi were used since old_used: the interrupt the driver
 * wants, now, or (coalesced) when the host's timer fires, for every buffer
 * used until then.
 */
static void used_since(struct virtio_mmio *v, unsigned qi, uint16_t old_used)
{
	if (old_used == v->q[qi].used_idx)
		return;
	if ((v->defer_mask >> qi) & 1) {
		if (!v->deferred[qi]) {
			v->deferred[qi] = true;
			v->defer_old[qi] = old_used;
			v->host.defer_irq(v->host.opaque, qi);
		}
		return;
	}
	if (vq_need_notify(&v->q[qi], &v->host, v->st.drv_features & F_EVENT_IDX, old_used))
		raise_used(v, qi);
}

void virtio_mmio_defer_irqs(struct virtio_mmio *v, uint32_t mask)
{
	pthread_mutex_lock(&v->lock);
	v->defer_mask = v->host.defer_irq ? mask & ((1u << v->ops->nr_queues) - 1) : 0;
	pthread_mutex_unlock(&v->lock);
}

void virtio_mmio_fire_deferred(struct virtio_mmio *v, unsigned qi)
{
	pthread_mutex_lock(&v->lock);
	if (qi < VIRTIO_MAX_QUEUES && v->deferred[qi]) {
		v->deferred[qi] = false;
		if (v->q[qi].ready &&
		    vq_need_notify(&v->q[qi], &v->host, v->st.drv_features & F_EVENT_IDX, v->defer_old[qi]))
			raise_used(v, qi);
	}
	pthread_mutex_unlock(&v->lock);
}

/* After serving: the interrupt the driver wants; a queue left with work is served again after the others. */
static void served(struct virtio_mmio *v, unsigned qi, uint16_t old_used, unsigned budget)
{
	used_since(v, qi, old_used);
	if (!budget && v->host.notify_queue)
		v->host.notify_queue(v->host.opaque, qi); /* more may wait: after the others */
}

/* A malformed chain: given back empty, counted, logged (rate-limited). */
static int drop_bad(struct virtio_mmio *v, unsigned qi, uint16_t head, enum vq_err e)
{
	COUNT(v, dropped);
	vlog(v, LOG_DROPPED, "queue %u: request %u dropped: %s", qi, head, vq_err_name(e));
	return vq_push(&v->q[qi], &v->host, head, 0);
}

/*
 * Take the chains for one request of a span() queue: until they hold need
 * bytes, the driver has no more, VQ_SPAN_MAX, or a malformed chain (given
 * back at once when it comes first, counted in *budget, else left for the
 * next round so that the chains taken stay the last ones taken). How
 * many; -1: the queue is broken (nothing kept).
 */
static int gather(struct virtio_mmio *v, unsigned qi, uint32_t need, unsigned *budget, uint64_t *room,
		  bool *empty)
{
	struct virtq *q = &v->q[qi];
	bool indirect = v->st.drv_features & F_INDIRECT_DESC;
	unsigned n = 0;
	enum vq_err e;

	*room = 0;
	*empty = false;
	while (n < VQ_SPAN_MAX && *room < need && *budget) {
		enum vq_pop r = vq_pop(q, &v->host, indirect, &v->span[n], &e);

		if (r == VQ_POP_BROKEN) {
			q->last_avail -= n;
			needs_reset(v, qi, e);
			return -1;
		}
		if (r == VQ_POP_EMPTY) {
			*empty = true;
			break;
		}
		if (r == VQ_POP_BAD && n) {
			q->last_avail--;
			break;
		}
		if (r == VQ_POP_BAD) {
			if (drop_bad(v, qi, v->span[0].head, e)) {
				needs_reset(v, qi, VQ_E_RING);
				return -1;
			}
			--*budget;
			continue;
		}
		*room += v->span[n++].write_len;
	}
	return (int)n;
}

/*
 * Serve a queue whose requests may fill several chains (virtio-net's
 * receive queue with mergeable buffers): gather enough chains for the
 * largest request, let the backend fill some, give those back together
 * and keep the rest available. Under the lock.
 */
static void serve_span(struct virtio_mmio *v, unsigned qi, uint32_t need)
{
	struct virtq *q = &v->q[qi];
	bool event_idx = v->st.drv_features & F_EVENT_IDX;
	uint16_t old_used = q->used_idx, head[VQ_SPAN_MAX];
	uint32_t written[VQ_SPAN_MAX];
	unsigned budget = q->num;

	while (budget) {
		uint64_t room, bytes = 0;
		bool empty;
		int n = gather(v, qi, need, &budget, &room, &empty), used;

		if (n < 0)
			return;
		if (!n && !empty)
			break; /* the budget went on malformed chains */
		if (!n) {
			if (!event_idx || !vq_arm_event(q, &v->host))
				break;
			budget--;
			continue;
		}
		budget--;
		if (room < need && empty && (unsigned)n < q->num) {
			/*
			 * Too little room for the largest request, and the driver
			 * can post more: wait for it. With EVENT_IDX, ask for a
			 * notification at its next buffer, not at the ones taken.
			 */
			bool more = event_idx && vq_arm_event(q, &v->host);

			q->last_avail -= (uint16_t)n;
			if (more)
				continue;
			break;
		}
		used = v->ops->handle_span(v->be, qi, v->span, (unsigned)n, written);
		if (used == -EAGAIN) {
			q->last_avail -= (uint16_t)n; /* not now: every chain stays available */
			budget = 1;
			break;
		}
		if (used < 1 || used > n) {
			COUNT(v, dropped);
			used = 1;
			written[0] = 0;
		} else {
			/* Never claim more than a chain holds (a backend's bug). */
			for (int i = 0; i < used; i++) {
				if (written[i] > v->span[i].write_len)
					written[i] = 0;
				bytes += written[i];
			}
			COUNT(v, requests);
			__atomic_add_fetch(&v->c.bytes, bytes, __ATOMIC_RELAXED);
		}
		q->last_avail -= (uint16_t)(n - used); /* the chains not filled stay available */
		for (int i = 0; i < used; i++)
			head[i] = v->span[i].head;
		if (vq_push_many(q, &v->host, head, written, (unsigned)used)) {
			needs_reset(v, qi, VQ_E_RING);
			return;
		}
	}
	served(v, qi, old_used, budget);
}

/* Serve under the lock: at most one queue's worth of requests, then come back (another device's turn). */
static void serve(struct virtio_mmio *v, unsigned qi)
{
	struct virtq *q = &v->q[qi];
	bool indirect = v->st.drv_features & F_INDIRECT_DESC, event_idx = v->st.drv_features & F_EVENT_IDX;
	uint16_t old_used = q->used_idx;
	struct vq_chain c;
	unsigned budget = q->num;
	enum vq_err e;
	uint32_t need = v->ops->span ? v->ops->span(v->be, qi) : 0;
	int rc;

	if (need) {
		serve_span(v, qi, need);
		return;
	}
	while (budget) {
		enum vq_pop r = vq_pop(q, &v->host, indirect, &c, &e);
		uint32_t written = 0;

		if (r == VQ_POP_EMPTY) {
			if (!event_idx || !vq_arm_event(q, &v->host))
				break;
			/* More came meanwhile. Re-checks count too: a driver toggling avail idx cannot hold us. */
			budget--;
			continue;
		}
		if (r == VQ_POP_BROKEN) {
			needs_reset(v, qi, e);
			return;
		}
		budget--;
		if (r == VQ_POP_BAD) {
			if (drop_bad(v, qi, c.head, e)) {
				needs_reset(v, qi, VQ_E_RING);
				return;
			}
			continue;
		} else if ((rc = v->ops->handle(v->be, qi, &c, &written)) == VIRTIO_ASYNC) {
			continue; /* pushed by virtio_mmio_complete() */
		} else if (rc == -EAGAIN) {
			q->last_avail--; /* not now: the chain stays available, the backend calls again */
			budget = 1;
			break;
		} else if (rc < 0 || written > c.write_len) {
			COUNT(v, dropped);
			written = 0;
		} else {
			COUNT(v, requests);
			__atomic_add_fetch(&v->c.bytes, written, __ATOMIC_RELAXED);
		}
		if (vq_push(q, &v->host, c.head, written)) {
			needs_reset(v, qi, VQ_E_RING);
			return;
		}
	}
	served(v, qi, old_used, budget);
}

void virtio_mmio_complete(struct virtio_mmio *v, const uint64_t *tags, const int64_t *res, unsigned n)
{
	uint16_t old_used[VIRTIO_MAX_QUEUES];
	bool pushed[VIRTIO_MAX_QUEUES] = { false };

	pthread_mutex_lock(&v->lock);
	for (unsigned i = 0; i < VIRTIO_MAX_QUEUES; i++)
		old_used[i] = v->q[i].used_idx;
	for (unsigned i = 0; i < n; i++) {
		unsigned qi;
		uint16_t head;
		uint32_t written;

		if (!v->ops->complete(v->be, tags[i], res[i], &qi, &head, &written))
			continue; /* a request of before a reset: its rings are gone */
		if (qi >= v->ops->nr_queues || !v->q[qi].ready)
			continue;
		COUNT(v, requests);
		__atomic_add_fetch(&v->c.bytes, written, __ATOMIC_RELAXED);
		if (vq_push(&v->q[qi], &v->host, head, written)) {
			needs_reset(v, qi, VQ_E_RING);
			continue;
		}
		pushed[qi] = true;
	}
	for (unsigned i = 0; i < VIRTIO_MAX_QUEUES; i++)
		if (pushed[i])
			used_since(v, i, old_used[i]);
	pthread_mutex_unlock(&v->lock);
}

unsigned virtio_mmio_inflight(struct virtio_mmio *v)
{
	unsigned n;

	if (!v->ops->inflight)
		return 0;
	pthread_mutex_lock(&v->lock);
	n = v->ops->inflight(v->be);
	pthread_mutex_unlock(&v->lock);
	return n;
}

void *virtio_mmio_backend(struct virtio_mmio *v, const struct virtio_backend_ops *ops)
{
	return !ops || v->ops == ops ? v->be : NULL;
}

void virtio_mmio_serve(struct virtio_mmio *v, unsigned qi)
{
	pthread_mutex_lock(&v->lock);
	count_notify(v, qi);
	if (can_serve(v, qi))
		serve(v, qi);
	pthread_mutex_unlock(&v->lock);
}

void virtio_mmio_poll(struct virtio_mmio *v, unsigned qi)
{
	pthread_mutex_lock(&v->lock);
	if (can_serve(v, qi))
		serve(v, qi);
	pthread_mutex_unlock(&v->lock);
}

/* A QueueNotify that reached the device (no ioeventfd, or an index no ioeventfd matches). */
static void notify(struct virtio_mmio *v, uint32_t qi)
{
	if (qi >= v->ops->nr_queues || !v->q[qi].ready) {
		COUNT(v, bad_accesses);
		vlog(v, LOG_ACCESS, "notify of queue %u, which is %s", qi,
		     qi >= v->ops->nr_queues ? "absent" : "not set up");
		return;
	}
	if (v->host.notify_queue) {
		v->host.notify_queue(v->host.opaque, qi);
		return;
	}
	count_notify(v, qi);
	if (can_serve(v, qi))
		serve(v, qi);
}

/* ---- the register file ------------------------------------------------------------- */

static uint32_t read_reg(struct virtio_mmio *v, uint64_t off)
{
	struct virtq *q = sel_queue(v);

	switch (off) {
	case R_MAGIC:
		return VIRTIO_MAGIC;
	case R_VERSION:
		return 2;
	case R_DEVICE_ID:
		return v->ops->device_id;
	case R_VENDOR_ID:
		return VIRTIO_VENDOR;
	case R_DEV_FEATURES:
		return v->st.dev_features_sel < 2 ? (uint32_t)(v->features >> (32 * v->st.dev_features_sel))
						  : 0;
	case R_QUEUE_NUM_MAX:
		return q ? v->ops->queue_max : 0;
	case R_QUEUE_NUM:
		return q ? q->num : 0;
	case R_QUEUE_READY:
		return q ? q->ready : 0;
	case R_INT_STATUS:
		return v->st.int_status;
	case R_STATUS:
		return v->st.status;
	case R_CONFIG_GEN:
		return v->st.config_gen;
	default:
		return 0; /* write-only and reserved registers */
	}
}

static void write_reg(struct virtio_mmio *v, uint64_t off, uint32_t val)
{
	switch (off) {
	case R_DEV_FEATURES_SEL:
		v->st.dev_features_sel = val;
		break;
	case R_DRV_FEATURES_SEL:
		v->st.drv_features_sel = val;
		break;
	case R_DRV_FEATURES:
		if ((v->st.status & S_FEATURES_OK) || v->st.drv_features_sel > 1) {
			COUNT(v, bad_accesses);
			break;
		}
		set_half(&v->st.drv_features, v->st.drv_features_sel == 1, val);
		break;
	case R_QUEUE_SEL:
		v->st.queue_sel = val;
		break;
	case R_QUEUE_NUM:
	case R_QUEUE_READY:
	case R_QUEUE_DESC_LO:
	case R_QUEUE_DESC_HI:
	case R_QUEUE_DRIVER_LO:
	case R_QUEUE_DRIVER_HI:
	case R_QUEUE_DEVICE_LO:
	case R_QUEUE_DEVICE_HI:
		write_queue(v, off, val);
		break;
	case R_QUEUE_NOTIFY:
		notify(v, val);
		break;
	case R_INT_ACK:
		v->st.int_status &= ~val;
		break;
	case R_STATUS:
		write_status(v, val);
		break;
	default:
		COUNT(v, bad_accesses); /* read-only or reserved */
		break;
	}
}

static void config_io(struct virtio_mmio *v, struct dev_io *io)
{
	uint64_t off = io->offset - R_CONFIG;

	if (off >= v->ops->config_len || io->len > v->ops->config_len - off) {
		if (!io->is_write)
			memset(io->data, 0, io->len);
		COUNT(v, bad_accesses);
		return;
	}
	if (io->is_write)
		COUNT(v, bad_accesses); /* no device here has writable config */
	else
		v->ops->read_config(v->be, (uint32_t)off, io->data, io->len);
}

void virtio_mmio_io(struct virtio_mmio *v, struct dev_io *io)
{
	uint32_t val;

	pthread_mutex_lock(&v->lock);
	if (io->offset >= R_CONFIG) {
		config_io(v, io);
	} else if (io->len != 4 || (io->offset & 3)) {
		/* Registers are 32 bits wide, accessed whole (4.2.2.2). */
		COUNT(v, bad_accesses);
		vlog(v, LOG_ACCESS, "%u-byte access at 0x%" PRIx64 " ignored", io->len, io->offset);
		if (!io->is_write)
			memset(io->data, 0, io->len);
	} else if (io->is_write) {
		write_reg(v, io->offset, dev_io_value(io));
	} else {
		val = read_reg(v, io->offset);
		for (int k = 0; k < 4; k++)
			io->data[k] = (uint8_t)(val >> (8 * k));
	}
	pthread_mutex_unlock(&v->lock);
}

/* ---- saved state --------------------------------------------------------------------- */

void virtio_mmio_save(struct virtio_mmio *v, struct virtio_mmio_state *st)
{
	pthread_mutex_lock(&v->lock);
	*st = v->st;
	copy_counters(&st->c, &v->c, sizeof(v->c));
	copy_counters(st->qc, v->qc, sizeof(v->qc));
	for (unsigned i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		const struct virtq *q = &v->q[i];

		st->q[i] = (struct virtio_queue_state){ q->num,	 q->ready,	q->desc,    q->avail,
							q->used, q->last_avail, q->used_idx };
		/* A coalesced interrupt still waiting: the state has it as raised (virtio_mmio_repulse). */
		if (v->deferred[i] && q->ready &&
		    vq_need_notify(q, &v->host, v->st.drv_features & F_EVENT_IDX, v->defer_old[i]))
			st->int_status |= INT_USED;
	}
	pthread_mutex_unlock(&v->lock);
}

void virtio_mmio_repulse(struct virtio_mmio *v)
{
	pthread_mutex_lock(&v->lock);
	if (v->st.int_status && v->host.pulse_irq)
		v->host.pulse_irq(v->host.opaque);
	pthread_mutex_unlock(&v->lock);
}

bool virtio_mmio_state_valid(const struct virtio_mmio_state *st)
{
	if ((st->status & ~S_ALL) || (st->int_status & ~(INT_USED | INT_CONFIG)))
		return false;
	for (unsigned i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		const struct virtio_queue_state *q = &st->q[i];

		if (q->num > 0xffff ||
		    (q->ready && (!q->num || q->num > VQ_MAX_SIZE || (q->num & (q->num - 1)))))
			return false;
		if (q->ready && (uint16_t)(q->last_avail - q->used_idx) > q->num)
			return false;
	}
	return true;
}

int virtio_mmio_load(struct virtio_mmio *v, const struct virtio_mmio_state *st)
{
	struct virtq q[VIRTIO_MAX_QUEUES];

	if (!virtio_mmio_state_valid(st))
		return -EINVAL;
	for (unsigned i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		const struct virtio_queue_state *s = &st->q[i];

		q[i] = (struct virtq){ (uint16_t)s->num, s->ready,	s->desc,    s->avail,
				       s->used,		 s->last_avail, s->used_idx };
		if (s->ready && (i >= v->ops->nr_queues || vq_validate(&q[i], &v->host, v->ops->queue_max)))
			return -EINVAL;
	}
	pthread_mutex_lock(&v->lock);
	v->st = *st;
	memset(&v->st.c, 0, sizeof(v->st.c)); /* the live counters are v->c and v->qc */
	memset(v->st.qc, 0, sizeof(v->st.qc));
	copy_counters(&v->c, &st->c, sizeof(v->c));
	copy_counters(v->qc, st->qc, sizeof(v->qc));
	memcpy(v->q, q, sizeof(q));
	if ((v->st.status & S_DRIVER_OK) && v->ops->activate)
		v->ops->activate(v->be, v->st.drv_features);
	pthread_mutex_unlock(&v->lock);
	return 0;
}
