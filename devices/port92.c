// SPDX-License-Identifier: MIT
/*
 * System Control Port A (0x92): bit 0 is the fast reset (a write of 1
 * stops the VM with status 0, as the i8042's reset does), bit 1 the A20
 * gate (kept and read back; guest memory is never wrapped at 1 MiB).
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define PORT92 0x92
#define P92_RESET 0x01
#define P92_A20 0x02

struct port92 {
	pthread_mutex_t lock;
	struct dev_host host;
	struct port92_state st;
};

int port92_create(struct port92 **out, const struct dev_host *host)
{
	struct port92 *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	if (pthread_mutex_init(&p->lock, NULL)) {
		free(p);
		return -ENOMEM;
	}
	if (host)
		p->host = *host;
	p->st.value = P92_A20; /* a booted PC has A20 on */
	*out = p;
	return 0;
}

void port92_destroy(struct port92 *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p);
}

uint8_t port92_read(struct port92 *p)
{
	uint8_t v;

	pthread_mutex_lock(&p->lock);
	v = p->st.value;
	pthread_mutex_unlock(&p->lock);
	return v;
}

void port92_write(struct port92 *p, uint8_t value)
{
	pthread_mutex_lock(&p->lock);
	p->st.value = value & P92_A20;
	pthread_mutex_unlock(&p->lock);
	if (value & P92_RESET)
		dev_stop(&p->host, 0, "guest reset (port 0x92)");
}

/* ---- the declaration ---------------------------------------------------------------- */

static int port92_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)cfg;
	return port92_create((struct port92 **)dev, host);
}

static void port92_dev_destroy(void *dev)
{
	port92_destroy(dev);
}

static int port92_io(void *dev, struct dev_io *io)
{
	if (io->is_write) {
		port92_write(dev, io->data[0]);
	} else {
		dev_io_ones(io);
		io->data[0] = port92_read(dev);
	}
	return 0;
}

static void port92_save(void *dev, void *state)
{
	struct port92 *p = dev;

	pthread_mutex_lock(&p->lock);
	*(struct port92_state *)state = p->st;
	pthread_mutex_unlock(&p->lock);
}

static int port92_load(void *dev, const void *state)
{
	struct port92 *p = dev;
	const struct port92_state *st = state;

	if (st->value & ~P92_A20)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	p->st = *st;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static const struct snap_field port92_fields[] = {
	SNAP_FIELD(struct port92_state, "value", SNAP_F_U8, value, P92_A20),
};

/* Came within format 1: a snapshot without it restores A20 on. */
static const struct snap_part port92_part = {
	.name = "port92",
	.size = sizeof(struct port92_state),
	.fields = port92_fields,
	.nr_fields = 1,
	.flags = SNAP_PART_OPTIONAL,
};

const struct dev_desc dev_port92 = {
	.name = "port92",
	.pio = { { PORT92, 1, "port92" } },
	.nr_pio = 1,
	.irq = -1,
	.create = port92_dev_create,
	.destroy = port92_dev_destroy,
	.io = port92_io,
	.state = &port92_part,
	.save = port92_save,
	.load = port92_load,
};
