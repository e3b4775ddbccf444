// SPDX-License-Identifier: MIT
/*
 * virtio-rng (virtio 1.x, 5.4, device ID 4): one queue; every request is
 * a chain of device-writable buffers, filled from the host's getrandom().
 * No config space, no feature bits of its own. Its snapshot part is the
 * transport's state.
 */
#include "devices/virtio_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#define RNG_QUEUE_MAX 256
#define RNG_MAX_REQUEST \
	(64u << 10) /* bytes filled per request at most: one request cannot hold the lock long */

struct rng {
	int unused; /* no state of its own */
};

static int rng_handle(void *be, unsigned q, const struct vq_chain *c, uint32_t *written)
{
	uint32_t total = 0;

	(void)be;
	(void)q;
	for (unsigned i = c->nr_read; i < c->n && total < RNG_MAX_REQUEST; i++) {
		const struct vq_buf *b = &c->buf[i];
		uint32_t want = b->len < RNG_MAX_REQUEST - total ? b->len : RNG_MAX_REQUEST - total, got = 0;

		while (got < want) {
			ssize_t n = getrandom(b->p + got, want - got, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -EIO;
			got += (uint32_t)n;
		}
		total += got;
	}
	*written = total;
	return 0;
}

static const struct virtio_backend_ops rng_ops = {
	.name = "virtio-rng",
	.device_id = 4,
	.nr_queues = 1,
	.queue_max = RNG_QUEUE_MAX,
	.handle = rng_handle,
};

int virtio_rng_create(struct virtio_mmio **out, const struct dev_host *host)
{
	struct rng *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	return virtio_mmio_create_backend(out, &rng_ops, r, host);
}

/* ---- its snapshot part ----------------------------------------------------------------- */

static const char *rng_check(const struct snap *s, const void *state, const char **prop)
{
	(void)s;
	(void)prop;
	return virtio_mmio_state_valid(state) ? NULL : "not a state a virtio-mmio device can be in";
}

static void rng_describe(const void *state, char *buf, size_t len)
{
	const struct virtio_mmio_state *st = state;

	snprintf(buf, len, "virtio-rng (status 0x%x, queue %s, %u requests served)", st->status,
		 st->q[0].ready ? "ready" : "not ready", st->q[0].used_idx);
}

static const struct snap_field rng_fields[] = { VIRTIO_MMIO_SNAP_FIELDS(struct virtio_mmio_state, ) };

const struct snap_part virtio_rng_part = {
	.name = "virtio-rng",
	.size = sizeof(struct virtio_mmio_state),
	.fields = rng_fields,
	.nr_fields = sizeof(rng_fields) / sizeof(rng_fields[0]),
	.flags = SNAP_PART_OPTIONAL,
	.check = rng_check,
	.describe = rng_describe,
};
