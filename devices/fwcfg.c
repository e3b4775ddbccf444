// SPDX-License-Identifier: MIT
/*
 * QEMU-compatible fw_cfg, the traditional I/O interface only (docs/boot.md
 * "fw_cfg"): a guest writes a 16-bit key to the selector port (0x510) and
 * reads the item's bytes one by one from the data port (0x511). Items are
 * computed from the configuration, so the state to save is the plain struct.
 */
#include "devices/devices_internal.h"

#include <string.h>

/* An item's bytes at `off`, or 0 past its end; unknown keys are all zeros. */
static uint8_t fwcfg_item_byte(const struct fwcfg *f, uint16_t key, uint32_t off)
{
	uint8_t buf[8] = { 0 };
	uint32_t len = 0;

	switch (key) {
	case FWCFG_SIGNATURE:
		memcpy(buf, "QEMU", 4);
		len = 4;
		break;
	case FWCFG_ID:
		buf[0] = FWCFG_ID_TRADITIONAL; /* no DMA interface */
		len = 4;
		break;
	case FWCFG_RAM_SIZE:
		for (unsigned i = 0; i < 8; i++)
			buf[i] = (uint8_t)(f->ram_size >> (8 * i));
		len = 8;
		break;
	case FWCFG_NB_CPUS:
	case FWCFG_MAX_CPUS:
		buf[0] = (uint8_t)f->nr_cpus;
		buf[1] = (uint8_t)(f->nr_cpus >> 8);
		len = 2;
		break;
	case FWCFG_FILE_DIR:
		/* A big-endian u32 count of the files that follow: none. */
		len = 4;
		break;
	default:
		break;
	}
	return off < len ? buf[off] : 0;
}

void fwcfg_init(struct fwcfg *f, uint16_t nr_cpus, uint64_t ram_size)
{
	memset(f, 0, sizeof(*f));
	f->nr_cpus = nr_cpus;
	f->ram_size = ram_size;
}

void fwcfg_select(struct fwcfg *f, uint16_t key)
{
	f->selector = key;
	f->offset = 0;
}

uint8_t fwcfg_read(struct fwcfg *f)
{
	uint8_t v = fwcfg_item_byte(f, f->selector, f->offset);

	/* Saturates: reading on past the end keeps returning zeros. */
	if (f->offset < UINT32_MAX)
		f->offset++;
	return v;
}
