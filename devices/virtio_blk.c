// SPDX-License-Identifier: MIT
/*
 * virtio-blk (virtio 1.x, 5.2, device ID 2): one request queue. Each
 * request is parsed here (header, data buffers, status byte; every
 * sector and length checked) and handed to an I/O engine (struct
 * blk_engine: io_uring in vmm/vm_blk.c, a fake in the unit tests) that
 * completes it later; the device answers it on completion. A device
 * reset forgets the requests in flight: their completions touch no ring.
 */
#include "devices/virtio_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

/* Request types and status values (5.2.6) */
#define T_IN 0u
#define T_OUT 1u
#define T_FLUSH 4u
#define T_GET_ID 8u
#define T_DISCARD 11u
#define T_WRITE_ZEROES 13u
#define S_OK 0u
#define S_IOERR 1u
#define S_UNSUPP 2u

/* Feature bits (5.2.3) */
#define F_SEG_MAX (1ULL << 2)
#define F_RO (1ULL << 5)
#define F_BLK_SIZE (1ULL << 6)
#define F_FLUSH (1ULL << 9)
#define F_DISCARD (1ULL << 13)
#define F_WRITE_ZEROES (1ULL << 14)

#define BLK_QUEUE_MAX 256
#define BLK_SEG_MAX (VQ_MAX_BUFS - 2)	 /* the chain's buffers less the header's and the status's */
#define BLK_MAX_RANGE_SECTORS (1u << 22) /* discard / write zeroes: 2 GiB per request */
#define SECTOR 512u
#define HDR_LEN 16u
#define RANGE_LEN 16u /* struct virtio_blk_discard_write_zeroes */

/* The configuration space (5.2.4), little-endian; the fields after write_zeroes_may_unmap are unused. */
struct blk_config {
	uint64_t capacity;
	uint32_t size_max, seg_max;
	uint8_t geometry[4];
	uint32_t blk_size;
	uint8_t topology[8];
	uint8_t writeback, unused0;
	uint16_t num_queues;
	uint32_t max_discard_sectors, max_discard_seg, discard_sector_alignment;
	uint32_t max_write_zeroes_sectors, max_write_zeroes_seg;
	uint8_t write_zeroes_may_unmap, unused1[3];
};
#define BLK_CONFIG_LEN 60u /* the struct's size without its tail padding */
_Static_assert(offsetof(struct blk_config, blk_size) == 20 && offsetof(struct blk_config, num_queues) == 34 &&
		       offsetof(struct blk_config, unused1) + 3 == BLK_CONFIG_LEN,
	       "virtio_blk_config's layout");

/* A request at the engine. */
struct blk_req {
	bool busy;
	bool orphan; /* the device was reset since: forget it */
	uint8_t type;
	uint16_t head;
	uint8_t *status;
	uint32_t data_len; /* bytes the engine must do */
	uint64_t t0_ns;
	struct iovec iov[VQ_MAX_BUFS];
};

struct blk {
	struct virtio_blk_params p;
	struct blk_config cfg;
	struct blk_req req[BLK_QUEUE_MAX]; /* a legitimate driver has at most a queue's worth in flight */
	unsigned inflight;
	struct virtio_blk_counters c; /* each field accessed atomically */
};

#define BCOUNT(b, field, n) __atomic_add_fetch(&(b)->c.field, (n), __ATOMIC_RELAXED)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* Gather len bytes at offset off of the chain's readable buffers into out: false if they are not there. */
static bool read_bytes(const struct vq_chain *c, uint64_t off, void *out, uint32_t len)
{
	uint8_t *o = out;

	for (unsigned i = 0; i < c->nr_read && len; i++) {
		const struct vq_buf *b = &c->buf[i];

		if (off >= b->len) {
			off -= b->len;
			continue;
		}
		uint32_t n = b->len - (uint32_t)off < len ? b->len - (uint32_t)off : len;

		memcpy(o, b->p + off, n);
		o += n;
		len -= n;
		off = 0;
	}
	return len == 0;
}

/*
 * The iovecs of [off, off + len) of the chain's readable (write = false)
 * or writable buffers; 0 or -EINVAL if they are not all there.
 */
static int map_data(const struct vq_chain *c, bool write, uint64_t off, uint64_t len, struct iovec *iov,
		    unsigned *niov)
{
	unsigned from = write ? c->nr_read : 0, to = write ? c->n : c->nr_read;

	*niov = 0;
	for (unsigned i = from; i < to && len; i++) {
		const struct vq_buf *b = &c->buf[i];

		if (off >= b->len) {
			off -= b->len;
			continue;
		}
		uint64_t n = b->len - off < len ? b->len - off : len;

		iov[(*niov)++] = (struct iovec){ b->p + off, (size_t)n };
		len -= n;
		off = 0;
	}
	return len ? -EINVAL : 0;
}

/* Is [sector, sector + n) inside the disk (no overflow)? */
static bool in_disk(const struct blk *b, uint64_t sector, uint64_t n)
{
	return sector <= b->p.sectors && n <= b->p.sectors - sector;
}

static struct blk_req *free_slot(struct blk *b)
{
	for (unsigned i = 0; i < BLK_QUEUE_MAX; i++)
		if (!b->req[i].busy)
			return &b->req[i];
	return NULL;
}

/* Hand r to the engine: VIRTIO_ASYNC, or the status for an engine that refuses. */
static int submit(struct blk *b, struct blk_req *r, enum blk_op op, unsigned niov, uint64_t off, uint64_t len)
{
	struct blk_io io = { op, r->iov, niov, off, len, (uint64_t)(r - b->req) };
	uint64_t n;

	r->t0_ns = now_ns();
	if (b->p.engine.submit(b->p.engine.opaque, &io) < 0)
		return -(int)S_IOERR;
	r->busy = true;
	r->orphan = false;
	b->inflight++;
	n = BCOUNT(b, inflight, 1);
	if (n > __atomic_load_n(&b->c.inflight_peak, __ATOMIC_RELAXED))
		__atomic_store_n(&b->c.inflight_peak, n, __ATOMIC_RELAXED);
	return VIRTIO_ASYNC;
}

/*
 * One request, header parsed: VIRTIO_ASYNC (at the engine), or minus the
 * status to answer at once (0 for S_OK) with *done data bytes written.
 */
static int do_request(struct blk *b, const struct vq_chain *c, uint32_t type, uint64_t sector,
		      struct blk_req *r, uint32_t *done)
{
	uint64_t data_out = c->read_len - HDR_LEN, data_in = c->write_len - 1;
	unsigned niov;
	uint8_t range[RANGE_LEN];
	uint64_t rs;
	uint32_t rn, flags;

	switch (type) {
	case T_IN:
	case T_OUT: {
		bool in = type == T_IN;
		uint64_t len = in ? data_in : data_out;

		if (!in && b->p.readonly)
			return -(int)S_IOERR;
		if (len % SECTOR || !in_disk(b, sector, len / SECTOR))
			return -(int)S_IOERR;
		if (map_data(c, in, in ? 0 : HDR_LEN, len, r->iov, &niov))
			return -(int)S_IOERR;
		r->data_len = (uint32_t)len;
		if (!len)
			return 0;
		BCOUNT(b, reads, in);
		BCOUNT(b, writes, !in);
		return submit(b, r, in ? BLK_OP_READ : BLK_OP_WRITE, niov, sector * SECTOR, len);
	}
	case T_FLUSH:
		BCOUNT(b, flushes, 1);
		if (b->p.readonly)
			return 0; /* nothing was written */
		r->data_len = 0;
		return submit(b, r, BLK_OP_FLUSH, 0, 0, 0);
	case T_GET_ID: {
		uint32_t n = data_in < VIRTIO_BLK_SERIAL_LEN ? (uint32_t)data_in : VIRTIO_BLK_SERIAL_LEN;
		struct iovec iov[VQ_MAX_BUFS];
		const char *src = b->p.serial;

		BCOUNT(b, other, 1);
		if (map_data(c, true, 0, n, iov, &niov))
			return -(int)S_IOERR;
		for (unsigned i = 0; i < niov; src += iov[i].iov_len, i++)
			memcpy(iov[i].iov_base, src, iov[i].iov_len);
		*done = n;
		return 0;
	}
	case T_DISCARD:
	case T_WRITE_ZEROES: {
		bool zero = type == T_WRITE_ZEROES;

		BCOUNT(b, other, 1);
		if (zero ? !b->p.write_zeroes : !b->p.discard)
			return -(int)S_UNSUPP;
		if (b->p.readonly)
			return -(int)S_IOERR;
		/* We advertise one segment per request: more is an error, none too. */
		if (data_out != RANGE_LEN || !read_bytes(c, HDR_LEN, range, RANGE_LEN))
			return -(int)S_IOERR;
		memcpy(&rs, range, 8);
		memcpy(&rn, range + 8, 4);
		memcpy(&flags, range + 12, 4);
		/* bit 0 is unmap: a discard must not have it (5.2.6.2), zeroing may ignore it */
		if (flags & ~1u || (!zero && flags))
			return -(int)S_UNSUPP;
		if (rn > BLK_MAX_RANGE_SECTORS || !in_disk(b, rs, rn))
			return -(int)S_IOERR;
		if (!rn)
			return 0;
		return submit(b, r, zero ? BLK_OP_ZERO : BLK_OP_DISCARD, 0, rs * SECTOR,
			      (uint64_t)rn * SECTOR);
	}
	default:
		return -(int)S_UNSUPP;
	}
}

static uint8_t *status_byte(const struct vq_chain *c)
{
	const struct vq_buf *last = &c->buf[c->n - 1];

	return c->n > c->nr_read && last->len ? last->p + last->len - 1 : NULL;
}

static int blk_handle(void *be, unsigned q, const struct vq_chain *c, uint32_t *written)
{
	struct blk *b = be;
	uint8_t hdr[HDR_LEN], *status = status_byte(c);
	uint32_t type, done = 0;
	uint64_t sector;
	struct blk_req *r;
	int rc;

	(void)q;
	if (!status)
		return -EINVAL; /* no status byte to answer in: dropped, counted by the transport */
	if (c->read_len < HDR_LEN || !read_bytes(c, 0, hdr, HDR_LEN)) {
		rc = -(int)S_IOERR; /* a header too short, or in a writable buffer */
	} else if (!(r = free_slot(b))) {
		rc = -(int)S_IOERR; /* more in flight than the queue holds: not a driver that follows the spec */
	} else {
		memcpy(&type, hdr, 4);
		memcpy(&sector, hdr + 8, 8);
		r->head = c->head;
		r->status = status;
		r->type = (uint8_t)type;
		rc = do_request(b, c, type, sector, r, &done);
	}
	if (rc == VIRTIO_ASYNC)
		return VIRTIO_ASYNC;
	*status = (uint8_t)-rc;
	if (rc)
		BCOUNT(b, errors, 1);
	*written = done + 1;
	return 0;
}

static void account_latency(struct blk *b, uint64_t ns)
{
	static const uint64_t bound[VIRTIO_BLK_LAT_BUCKETS - 1] = { 100000, 1000000, 10000000 };
	unsigned k = 0;

	while (k < VIRTIO_BLK_LAT_BUCKETS - 1 && ns >= bound[k])
		k++;
	BCOUNT(b, lat[k], 1);
}

static bool blk_complete(void *be, uint64_t tag, int64_t res, unsigned *q, uint16_t *head, uint32_t *written)
{
	struct blk *b = be;
	struct blk_req *r = tag < BLK_QUEUE_MAX ? &b->req[tag] : NULL;
	bool ok;

	if (!r || !r->busy)
		return false;
	r->busy = false;
	b->inflight--;
	__atomic_sub_fetch(&b->c.inflight, 1, __ATOMIC_RELAXED);
	if (r->orphan)
		return false; /* the driver reset the device: its status byte and rings are not ours any more */
	account_latency(b, now_ns() - r->t0_ns);
	/* A short read or write is an error too: the driver asked for every byte. */
	ok = res >= 0 && (uint64_t)res == r->data_len;
	if (ok && r->type == T_IN)
		BCOUNT(b, bytes_read, r->data_len);
	if (ok && r->type == T_OUT)
		BCOUNT(b, bytes_written, r->data_len);
	if (!ok)
		BCOUNT(b, errors, 1);
	*r->status = ok ? S_OK : S_IOERR;
	*q = 0;
	*head = r->head;
	*written = (r->type == T_IN && ok ? r->data_len : 0) + 1;
	return true;
}

static unsigned blk_inflight(void *be)
{
	return ((struct blk *)be)->inflight;
}

static void blk_reset(void *be)
{
	struct blk *b = be;

	for (unsigned i = 0; i < BLK_QUEUE_MAX; i++)
		if (b->req[i].busy)
			b->req[i].orphan = true;
}

static void blk_read_config(void *be, uint32_t off, uint8_t *buf, uint32_t len)
{
	memcpy(buf, (const uint8_t *)&((struct blk *)be)->cfg + off, len);
}

/* One ops table per feature set (read-only, discard, write zeroes): the transport offers its features. */
#define BLK_OPS(i)                                                                              \
	{                                                                                       \
		.name = "virtio-blk", .device_id = 2,                                           \
		.features = F_SEG_MAX | F_BLK_SIZE | F_FLUSH | ((i)&1 ? F_RO : 0) |             \
			    ((i)&2 ? F_DISCARD : 0) | ((i)&4 ? F_WRITE_ZEROES : 0),             \
		.nr_queues = 1, .queue_max = BLK_QUEUE_MAX, .config_len = BLK_CONFIG_LEN,       \
		.read_config = blk_read_config, .handle = blk_handle, .complete = blk_complete, \
		.inflight = blk_inflight, .reset = blk_reset,                                   \
	}
static const struct virtio_backend_ops blk_ops[8] = { BLK_OPS(0), BLK_OPS(1), BLK_OPS(2), BLK_OPS(3),
						      BLK_OPS(4), BLK_OPS(5), BLK_OPS(6), BLK_OPS(7) };

static struct blk *as_blk(struct virtio_mmio *v)
{
	struct blk *b = NULL;

	for (unsigned i = 0; i < 8 && !b; i++)
		b = virtio_mmio_backend(v, &blk_ops[i]);
	return b;
}

int virtio_blk_create(struct virtio_mmio **out, const struct virtio_blk_params *p,
		      const struct dev_host *host)
{
	struct blk *b;
	unsigned k;

	*out = NULL;
	if (!p->engine.submit)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->p = *p;
	/* A read-only disk offers no way to change it. */
	if (p->readonly)
		b->p.discard = b->p.write_zeroes = false;
	b->cfg = (struct blk_config){
		.capacity = p->sectors,
		.seg_max = BLK_SEG_MAX,
		.blk_size = SECTOR,
		.num_queues = 1,
		.max_discard_sectors = BLK_MAX_RANGE_SECTORS,
		.max_discard_seg = 1,
		.discard_sector_alignment =
			8, /* 4 KiB: a hole smaller than a file-system block frees nothing */
		.max_write_zeroes_sectors = BLK_MAX_RANGE_SECTORS,
		.max_write_zeroes_seg = 1,
	};
	k = (b->p.readonly ? 1 : 0) | (b->p.discard ? 2 : 0) | (b->p.write_zeroes ? 4 : 0);
	return virtio_mmio_create_backend(out, &blk_ops[k], b, host);
}

bool virtio_blk_get_counters(struct virtio_mmio *v, struct virtio_blk_counters *out)
{
	struct blk *b = as_blk(v);
	const uint64_t *in;
	uint64_t *o = (uint64_t *)out;

	if (!b)
		return false;
	in = (const uint64_t *)&b->c;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
	return true;
}

void virtio_blk_save(struct virtio_mmio *v, struct virtio_blk_state *st)
{
	virtio_mmio_save(v, &st->t);
	if (!virtio_blk_get_counters(v, &st->bc))
		memset(&st->bc, 0, sizeof(st->bc));
	st->bc.inflight = 0;
}

int virtio_blk_load(struct virtio_mmio *v, const struct virtio_blk_state *st)
{
	struct blk *b = as_blk(v);
	const uint64_t *in = (const uint64_t *)&st->bc;
	uint64_t *o;
	int rc;

	if (!b)
		return -EINVAL;
	rc = virtio_mmio_load(v, &st->t);
	if (rc)
		return rc;
	o = (uint64_t *)&b->c;
	for (size_t i = 0; i < sizeof(b->c) / sizeof(uint64_t); i++)
		if (&o[i] != &b->c.inflight)
			__atomic_store_n(&o[i], in[i], __ATOMIC_RELAXED);
	return 0;
}

/* ---- its snapshot parts -------------------------------------------------------------------- */

static const char *blk_check(const struct snap *s, const void *state, const char **prop)
{
	const struct virtio_blk_state *st = state;

	(void)s;
	if (!virtio_mmio_state_valid(&st->t))
		return "not a state a virtio-mmio device can be in";
	if (!st->path_len || st->path[0] != '/' || memchr(st->path, 0, st->path_len)) {
		*prop = "path";
		return "not an absolute path";
	}
	return NULL;
}

static void blk_describe(const void *state, char *buf, size_t len)
{
	const struct virtio_blk_state *st = state;

	snprintf(buf, len, "virtio-blk on %.*s%s (status 0x%x, queue %s, %u requests served)",
		 (int)st->path_len, (const char *)st->path, st->readonly ? ", read-only" : "", st->t.status,
		 st->t.q[0].ready ? "ready" : "not ready", st->t.q[0].used_idx);
}

#define BF(prop, type, member, max) SNAP_FIELD(struct virtio_blk_state, prop, type, member, max)

static const struct snap_field blk_fields[] = {
	VIRTIO_MMIO_SNAP_FIELDS(struct virtio_blk_state, t.),
	BF("reads", SNAP_F_U64, bc.reads, 0),
	BF("writes", SNAP_F_U64, bc.writes, 0),
	BF("flushes", SNAP_F_U64, bc.flushes, 0),
	BF("other", SNAP_F_U64, bc.other, 0),
	BF("bytes-read", SNAP_F_U64, bc.bytes_read, 0),
	BF("bytes-written", SNAP_F_U64, bc.bytes_written, 0),
	BF("errors", SNAP_F_U64, bc.errors, 0),
	BF("inflight-peak", SNAP_F_U64, bc.inflight_peak, 0),
	SNAP_FIELD_U64S(struct virtio_blk_state, "latency", bc.lat),
	SNAP_FIELD_BYTES(struct virtio_blk_state, "path", path, path_len),
	SNAP_FIELD(struct virtio_blk_state, "readonly", SNAP_F_BOOL, readonly, 1),
};

#define BLK_PART(node)                                                                                \
	{                                                                                             \
		.name = (node), .size = sizeof(struct virtio_blk_state), .fields = blk_fields,        \
		.nr_fields = sizeof(blk_fields) / sizeof(blk_fields[0]), .flags = SNAP_PART_OPTIONAL, \
		.check = blk_check, .describe = blk_describe,                                         \
	}

const struct snap_part virtio_blk_parts[VIRTIO_BLK_MAX_PARTS] = {
	BLK_PART("virtio-blk0"), BLK_PART("virtio-blk1"), BLK_PART("virtio-blk2"), BLK_PART("virtio-blk3"),
	BLK_PART("virtio-blk4"), BLK_PART("virtio-blk5"), BLK_PART("virtio-blk6"), BLK_PART("virtio-blk7"),
};
