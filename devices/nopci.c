// SPDX-License-Identifier: MIT
/*
 * The PCI configuration ports 0xcf8-0xcff of a machine with no PCI host
 * bridge: reads are all ones (no configuration mechanism answers, so
 * Linux's probe finds neither type 1 nor type 2 at once), writes are
 * dropped. It only keeps that probe from being logged as unhandled ports.
 */
#include "devices/devices_internal.h"

static int nopci_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)host;
	(void)cfg;
	*dev = NULL;
	return 0;
}

static void nopci_destroy(void *dev)
{
	(void)dev;
}

static int nopci_io(void *dev, struct dev_io *io)
{
	(void)dev;
	if (!io->is_write)
		dev_io_ones(io);
	return 0;
}

const struct dev_desc dev_nopci = {
	.name = "no_pci",
	.pio = { { 0xcf8, 8, "no_pci" } },
	.nr_pio = 1,
	.irq = -1,
	.create = nopci_create,
	.destroy = nopci_destroy,
	.io = nopci_io,
};
