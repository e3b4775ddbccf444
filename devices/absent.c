// SPDX-License-Identifier: MIT
/*
 * The legacy PC hardware this machine does not have, answering as absent
 * hardware does on a PC bus (reads all ones, writes dropped), so that a
 * stock kernel's probes of it are documented answers, not unhandled ports
 * in the log: PCI configuration, Super I/O configuration, COM2-COM4 and
 * ISA DMA's channel-0 page register. Stateless.
 */
#include "devices/devices_internal.h"

static int absent_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)host;
	(void)cfg;
	*dev = NULL;
	return 0;
}

static void absent_destroy(void *dev)
{
	(void)dev;
}

static int absent_io(void *dev, struct dev_io *io)
{
	(void)dev;
	if (!io->is_write)
		dev_io_ones(io);
	return 0;
}

const struct dev_desc dev_absent = {
	.name = "absent",
	.pio = {
		/* No PCI host bridge: the address does not read back, so Linux finds no mechanism. */
		{ 0xcf8, 8, "no_pci" },
		/* No Super I/O chip at either configuration port (Linux's 8250_fintek probes both). */
		{ 0x2e, 2, "no_superio_2e" },
		{ 0x4e, 2, "no_superio_4e" },
		/* No UART but COM1: the 8250 driver's IER probe reads all ones there. */
		{ 0x2f8, 8, "no_com2" },
		{ 0x3e8, 8, "no_com3" },
		{ 0x2e8, 8, "no_com4" },
		/* No ISA DMA controller (its channel-0 page register is read once at boot). */
		{ 0x87, 1, "no_dma_page" },
	},
	.nr_pio = 7,
	.irq = -1,
	.create = absent_create,
	.destroy = absent_destroy,
	.io = absent_io,
};
