// SPDX-License-Identifier: MIT
/*
 * Glue between the VM and its devices: the dev_host services the devices
 * use, and the bus callbacks that translate port accesses into device
 * register reads and writes.
 */
#include "vm_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "perfvisor/testdev.h"

#define SERIAL_BASE 0x3f8
#define SERIAL_IRQ 4
#define I8042_DATA 0x60
#define I8042_CMD 0x64

static void *host_gpa_to_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	struct vm *vm = opaque;

	return gmem_hva(&vm->mem, gpa, len);
}

static void host_request_stop(void *opaque, int status, const char *why)
{
	vm_request_stop(opaque, status, "%s", why);
}

static void host_console_write(void *opaque, const void *buf, size_t len)
{
	struct vm *vm = opaque;

	console_write(&vm->console, buf, len);
}

static void host_log(void *opaque, const char *msg)
{
	vm_log(opaque, "%s", msg);
}

static void serial_set_irq(void *opaque, int level)
{
	struct vm *vm = opaque;
	struct kvm_irq_level irq = { .irq = SERIAL_IRQ, .level = (uint32_t)level };

	ioctl(vm->fd, KVM_IRQ_LINE, &irq);
}

static int serial_io(void *opaque, struct bus_access *a)
{
	struct serial *s = opaque;

	/* 16550 registers are byte-wide; wider accesses touch consecutive registers. */
	for (uint32_t i = 0; i < a->len && a->offset + i < 8; i++) {
		if (a->is_write)
			serial_write(s, (unsigned)(a->offset + i), a->data[i]);
		else
			a->data[i] = serial_read(s, (unsigned)(a->offset + i));
	}
	return 0;
}

static uint32_t access_value(const struct bus_access *a)
{
	uint32_t v = 0;

	memcpy(&v, a->data, a->len < 4 ? a->len : 4);
	return v;
}

static int testdev_io(void *opaque, struct bus_access *a)
{
	if (a->is_write)
		testdev_write(opaque, access_value(a), a->len);
	else
		memset(a->data, 0xff, a->len);
	return 0;
}

static int debugexit_io(void *opaque, struct bus_access *a)
{
	struct vm *vm = opaque;

	if (a->is_write)
		debugexit_write(&vm->host, access_value(a));
	else
		memset(a->data, 0xff, a->len);
	return 0;
}

static int fwcfg_io(void *opaque, struct bus_access *a)
{
	struct vm *vm = opaque;

	pthread_mutex_lock(&vm->fwcfg_lock);
	if (a->is_write && a->offset == 0) {
		fwcfg_select(&vm->fwcfg, (uint16_t)access_value(a));
	} else if (!a->is_write && a->offset == 1) {
		/* A wider read takes that many bytes of the item, in order. */
		for (uint32_t i = 0; i < a->len; i++)
			a->data[i] = fwcfg_read(&vm->fwcfg);
	} else if (!a->is_write) {
		memset(a->data, 0xff, a->len);
	} /* data writes are ignored, as by QEMU since 2.4 */
	pthread_mutex_unlock(&vm->fwcfg_lock);
	return 0;
}

static int i8042_io(void *opaque, struct bus_access *a)
{
	uint16_t port = (uint16_t)a->addr;

	if (a->is_write)
		i8042_write(opaque, port, a->data[0]);
	else
		a->data[0] = i8042_read(opaque, port);
	return 0;
}

int vm_devices_create(struct vm *vm, struct errbuf *err)
{
	struct dev_host serial_host;
	int rc;

	vm->host = (struct dev_host){
		.opaque = vm,
		.gpa_to_hva = host_gpa_to_hva,
		.request_stop = host_request_stop,
		.console_write = host_console_write,
		.log = host_log,
	};
	serial_host = vm->host;
	serial_host.set_irq = serial_set_irq;

	fwcfg_init(&vm->fwcfg, (uint16_t)vm->nr_vcpus, vm->mem.size);
	if (pthread_mutex_init(&vm->fwcfg_lock, NULL))
		return errbuf_set(err, -ENOMEM, "out of memory creating devices");
	vm->fwcfg_lock_ok = true;
	if (serial_create(&vm->serial, &serial_host) || testdev_create(&vm->testdev, &vm->host) ||
	    i8042_create(&vm->i8042, &vm->host))
		return errbuf_set(err, -ENOMEM, "out of memory creating devices");

	rc = bus_register(&vm->bus, BUS_PIO, SERIAL_BASE, 8, serial_io, vm->serial, "serial", err);
	if (!rc)
		rc = bus_register(&vm->bus, BUS_PIO, PV_TESTDEV_PORT, 4, testdev_io, vm->testdev, "testdev",
				  err);
	if (!rc)
		rc = bus_register(&vm->bus, BUS_PIO, PV_DEBUG_EXIT_PORT, 4, debugexit_io, vm, "debug_exit",
				  err);
	if (!rc)
		rc = bus_register(&vm->bus, BUS_PIO, FWCFG_SELECTOR_PORT, 2, fwcfg_io, vm, "fw_cfg", err);
	if (!rc)
		rc = bus_register(&vm->bus, BUS_PIO, I8042_DATA, 1, i8042_io, vm->i8042, "i8042_data", err);
	if (!rc)
		rc = bus_register(&vm->bus, BUS_PIO, I8042_CMD, 1, i8042_io, vm->i8042, "i8042_cmd", err);
	return rc;
}

void vm_devices_destroy(struct vm *vm)
{
	serial_destroy(vm->serial);
	testdev_destroy(vm->testdev);
	i8042_destroy(vm->i8042);
	if (vm->fwcfg_lock_ok)
		pthread_mutex_destroy(&vm->fwcfg_lock);
	vm->fwcfg_lock_ok = false;
	vm->serial = NULL;
	vm->testdev = NULL;
	vm->i8042 = NULL;
}
