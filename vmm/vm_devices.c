// SPDX-License-Identifier: MIT
/*
 * The machine's devices: every entry of devices/table.c made, given its
 * host services (guest memory, the console, stopping the VM, its ISA
 * interrupt line, logging) and registered on the bus; one callback serves
 * every device's ranges.
 */
#include "vm_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

static void *host_gpa_to_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	struct vm_dev *d = opaque;

	return gmem_hva(&d->vm->mem, gpa, len);
}

static void host_request_stop(void *opaque, int status, const char *why)
{
	struct vm_dev *d = opaque;

	vm_request_stop(d->vm, status, "%s", why);
}

static void host_console_write(void *opaque, const void *buf, size_t len)
{
	struct vm_dev *d = opaque;

	console_write(&d->vm->console, buf, len);
}

static void host_log(void *opaque, const char *msg)
{
	struct vm_dev *d = opaque;

	vm_log(d->vm, "%s", msg);
}

static void host_set_irq(void *opaque, int level)
{
	struct vm_dev *d = opaque;
	struct kvm_irq_level irq = { .irq = (uint32_t)d->desc->irq, .level = (uint32_t)level };

	ioctl(d->vm->fd, KVM_IRQ_LINE, &irq);
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

int vm_devices_create(struct vm *vm, struct errbuf *err)
{
	const struct dev_config cfg = { vm->nr_vcpus, vm->mem.size };

	for (unsigned i = 0; i < dev_table_len; i++) {
		const struct dev_desc *desc = dev_table[i];
		struct vm_dev *d;
		int rc;

		if (vm->nr_devs == VM_MAX_DEVICES)
			return errbuf_set(err, -ENOSPC, "more than %d devices", VM_MAX_DEVICES);
		d = &vm->devs[vm->nr_devs];
		*d = (struct vm_dev){ .desc = desc, .vm = vm };
		d->host = (struct dev_host){
			.opaque = d,
			.gpa_to_hva = host_gpa_to_hva,
			.request_stop = host_request_stop,
			.console_write = host_console_write,
			.set_irq = desc->irq >= 0 ? host_set_irq : NULL,
			.log = host_log,
		};
		rc = desc->create(&d->dev, &d->host, &cfg);
		if (rc)
			return errbuf_set(err, rc, "device %s: %s", desc->name, strerror(-rc));
		vm->nr_devs++;
		for (unsigned r = 0; r < desc->nr_pio; r++) {
			rc = bus_register(&vm->bus, BUS_PIO, desc->pio[r].base, desc->pio[r].len, dev_access,
					  d, desc->pio[r].name, err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

void *vm_device(const struct vm *vm, const struct dev_desc *desc)
{
	for (unsigned i = 0; i < vm->nr_devs; i++)
		if (vm->devs[i].desc == desc)
			return vm->devs[i].dev;
	return NULL;
}

void vm_devices_destroy(struct vm *vm)
{
	while (vm->nr_devs) {
		struct vm_dev *d = &vm->devs[--vm->nr_devs];

		d->desc->destroy(d->dev);
		d->dev = NULL;
	}
}
