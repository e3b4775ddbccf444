// SPDX-License-Identifier: MIT
/*
 * The machine's devices: every entry of devices/table.c made, given its
 * host services (guest memory, the console, stopping the VM, its ISA
 * interrupt line, logging) and registered on the bus; one callback serves
 * every device's ranges.
 */
#include "vm_devices.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#define VM_MAX_DEVICES 16

struct vm_devices;

/* A device of the machine: its declaration, the device, and the host services it was given. */
struct vm_dev {
	const struct dev_desc *desc;
	void *dev;
	struct dev_host host; /* opaque: this struct */
	struct vm_devices *owner;
};

struct vm_devices {
	struct vm_devices_config cfg;
	struct vm_dev dev[VM_MAX_DEVICES];
	unsigned n;
};

static void *host_gpa_to_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	struct vm_dev *d = opaque;

	return gmem_hva(d->owner->cfg.mem, gpa, len);
}

static void host_request_stop(void *opaque, int status, const char *why)
{
	struct vm_dev *d = opaque;

	vmctl_request_stop(d->owner->cfg.ctl, status, "%s", why);
}

static void host_console_write(void *opaque, const void *buf, size_t len)
{
	struct vm_dev *d = opaque;

	console_write(d->owner->cfg.console, buf, len);
}

static void host_log(void *opaque, const char *msg)
{
	(void)opaque;
	vm_log("%s", msg);
}

static void host_set_irq(void *opaque, int level)
{
	struct vm_dev *d = opaque;
	struct kvm_irq_level irq = { .irq = (uint32_t)d->desc->irq, .level = (uint32_t)level };

	ioctl(d->owner->cfg.vm_fd, KVM_IRQ_LINE, &irq);
}

/* The bus callback of every device range. */
static int dev_access(void *opaque, struct bus_access *a)
{
	struct vm_dev *d = opaque;
	struct dev_io io = {
		.addr = a->addr, .offset = a->offset, .len = a->len, .is_write = a->is_write, .data = a->data
	};

	return d->desc->io(d->dev, &io);
}

int vm_devices_create(struct vm_devices **out, const struct vm_devices_config *cfg, struct errbuf *err)
{
	struct vm_devices *ds = calloc(1, sizeof(*ds));
	struct dev_config dc;

	*out = ds;
	if (!ds)
		return errbuf_set(err, -ENOMEM, "out of memory");
	ds->cfg = *cfg;
	dc = (struct dev_config){ cfg->nr_vcpus, cfg->mem->size };
	for (unsigned i = 0; i < dev_table_len; i++) {
		const struct dev_desc *desc = dev_table[i];
		struct vm_dev *d;
		int rc;

		if (ds->n == VM_MAX_DEVICES)
			return errbuf_set(err, -ENOSPC, "more than %d devices", VM_MAX_DEVICES);
		d = &ds->dev[ds->n];
		*d = (struct vm_dev){ .desc = desc, .owner = ds };
		d->host = (struct dev_host){
			.opaque = d,
			.gpa_to_hva = host_gpa_to_hva,
			.request_stop = host_request_stop,
			.console_write = host_console_write,
			.set_irq = desc->irq >= 0 ? host_set_irq : NULL,
			.log = host_log,
		};
		rc = desc->create(&d->dev, &d->host, &dc);
		if (rc)
			return errbuf_set(err, rc, "device %s: %s", desc->name, strerror(-rc));
		ds->n++;
		for (unsigned r = 0; r < desc->nr_pio; r++) {
			rc = bus_register(cfg->bus, BUS_PIO, desc->pio[r].base, desc->pio[r].len, dev_access,
					  d, desc->pio[r].name, err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

void *vm_devices_find(const struct vm_devices *ds, const struct dev_desc *desc)
{
	for (unsigned i = 0; ds && i < ds->n; i++)
		if (ds->dev[i].desc == desc)
			return ds->dev[i].dev;
	return NULL;
}

static void part_save(void *obj, void *state)
{
	struct vm_dev *d = obj;

	d->desc->save(d->dev, state);
}

/* The file's parse ran the part's own check, so a refusal here means the two disagree: say so. */
static int part_load(void *obj, const void *state, struct errbuf *err)
{
	struct vm_dev *d = obj;
	int rc = d->desc->load(d->dev, state);

	return rc ? errbuf_set(err, rc, "device %s refuses its saved state", d->desc->name) : 0;
}

static const struct vm_part_ops dev_ops = { .save = part_save, .load = part_load };

int vm_devices_add_parts(struct vm_devices *ds, struct vm_parts *l, struct errbuf *err)
{
	for (unsigned i = 0; i < ds->n; i++) {
		struct vm_dev *d = &ds->dev[i];
		int rc;

		if (!d->desc->state)
			continue;
		rc = vm_parts_add(l, d->desc->state, &dev_ops, d, err);
		if (rc)
			return rc;
	}
	return 0;
}

void vm_devices_destroy(struct vm_devices *ds)
{
	if (!ds)
		return;
	while (ds->n) {
		struct vm_dev *d = &ds->dev[--ds->n];

		d->desc->destroy(d->dev);
	}
	free(ds);
}
