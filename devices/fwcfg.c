// SPDX-License-Identifier: MIT
/*
 * QEMU-compatible fw_cfg, the traditional I/O interface only (docs/boot.md
 * "fw_cfg"): a guest writes a 16-bit key to the selector port (0x510) and
 * reads the item's bytes one by one from the data port (0x511). Items are
 * computed from the configuration, so the state to save is the plain struct.
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
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

/* ---- the declaration: the plain struct behind a lock ------------------------------------ */

struct fwcfg_dev {
	pthread_mutex_t lock;
	struct fwcfg f;
};

static int fwcfg_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	struct fwcfg_dev *d = calloc(1, sizeof(*d));

	(void)host;
	if (!d)
		return -ENOMEM;
	if (pthread_mutex_init(&d->lock, NULL)) {
		free(d);
		return -ENOMEM;
	}
	fwcfg_init(&d->f, (uint16_t)cfg->nr_cpus, cfg->mem_size);
	*dev = d;
	return 0;
}

static void fwcfg_dev_destroy(void *dev)
{
	struct fwcfg_dev *d = dev;

	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Selector at offset 0 (written), data at 1 (read); data writes are ignored, as by QEMU since 2.4. */
static int fwcfg_io(void *dev, struct dev_io *io)
{
	struct fwcfg_dev *d = dev;

	pthread_mutex_lock(&d->lock);
	if (io->is_write && io->offset == 0) {
		fwcfg_select(&d->f, (uint16_t)dev_io_value(io));
	} else if (!io->is_write && io->offset == 1) {
		/* A wider read takes that many bytes of the item, in order. */
		for (uint32_t i = 0; i < io->len; i++)
			io->data[i] = fwcfg_read(&d->f);
	} else if (!io->is_write) {
		dev_io_ones(io);
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void fwcfg_save(void *dev, void *state)
{
	struct fwcfg_dev *d = dev;

	pthread_mutex_lock(&d->lock);
	memcpy(state, &d->f, sizeof(d->f));
	pthread_mutex_unlock(&d->lock);
}

/* The items follow this machine (CPUs, RAM); the guest's place in them comes back. */
static int fwcfg_load(void *dev, const void *state)
{
	struct fwcfg_dev *d = dev;
	const struct fwcfg *st = state;

	pthread_mutex_lock(&d->lock);
	fwcfg_select(&d->f, st->selector);
	d->f.offset = st->offset;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static const struct snap_field fwcfg_fields[] = {
	SNAP_FIELD(struct fwcfg, "selector", SNAP_F_U16, selector, 0xffff),
	SNAP_FIELD(struct fwcfg, "offset", SNAP_F_U32, offset, UINT32_MAX),
};

/* fw_cfg came within format 1: a snapshot without it had its reset state. */
static const struct snap_part fwcfg_part = {
	.name = "fw_cfg@510",
	.size = sizeof(struct fwcfg),
	.fields = fwcfg_fields,
	.nr_fields = sizeof(fwcfg_fields) / sizeof(fwcfg_fields[0]),
	.flags = SNAP_PART_OPTIONAL,
};

const struct dev_desc dev_fwcfg = {
	.name = "fw_cfg",
	.pio = { { FWCFG_SELECTOR_PORT, 2, "fw_cfg" } },
	.nr_pio = 1,
	.irq = -1,
	.create = fwcfg_dev_create,
	.destroy = fwcfg_dev_destroy,
	.io = fwcfg_io,
	.state = &fwcfg_part,
	.save = fwcfg_save,
	.load = fwcfg_load,
};
