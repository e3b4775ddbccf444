// SPDX-License-Identifier: MIT
/*
 * QEMU-compatible isa-debug-exit: a guest write of `value` stops the VM with
 * status (value << 1) | 1, so no guest value can mean plain success (0).
 * Stateless; the host's request_stop decides which stop request wins.
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "perfvisor/testdev.h"

void debugexit_write(const struct dev_host *host, uint32_t value)
{
	dev_stop(host, (int)(((value << 1) | 1) & 0xff), "guest debug-exit");
}

/* The device is its host: a copy, for the stop request. */
static int debugexit_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	struct dev_host *h = calloc(1, sizeof(*h));

	(void)cfg;
	if (!h)
		return -ENOMEM;
	if (host)
		*h = *host;
	*dev = h;
	return 0;
}

static void debugexit_destroy(void *dev)
{
	free(dev);
}

static int debugexit_io(void *dev, struct dev_io *io)
{
	if (io->is_write)
		debugexit_write(dev, dev_io_value(io));
	else
		dev_io_ones(io);
	return 0;
}

const struct dev_desc dev_debugexit = {
	.name = "debug_exit",
	.pio = { { PV_DEBUG_EXIT_PORT, 4, "debug_exit" } },
	.nr_pio = 1,
	.irq = -1,
	.create = debugexit_create,
	.destroy = debugexit_destroy,
	.io = debugexit_io,
};
