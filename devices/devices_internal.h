/* SPDX-License-Identifier: MIT */
/*
 * Helpers private to the devices component: calls into struct dev_host
 * that tolerate a NULL host or NULL callback, so every device can treat
 * its host's services as optional.
 */
#ifndef PERFVISOR_DEVICES_INTERNAL_H
#define PERFVISOR_DEVICES_INTERNAL_H

#include "devices/devices.h"

static inline void dev_console(const struct dev_host *h, const void *buf, size_t len)
{
	if (h && h->console_write && len)
		h->console_write(h->opaque, buf, len);
}

static inline void dev_stop(const struct dev_host *h, int status, const char *why)
{
	if (h && h->request_stop)
		h->request_stop(h->opaque, status, why);
}

static inline void dev_set_irq(const struct dev_host *h, int level)
{
	if (h && h->set_irq)
		h->set_irq(h->opaque, level);
}

static inline void dev_log(const struct dev_host *h, const char *msg)
{
	if (h && h->log)
		h->log(h->opaque, msg);
}

static inline void *dev_gpa_to_hva(const struct dev_host *h, uint64_t gpa, uint64_t len)
{
	if (!h || !h->gpa_to_hva)
		return NULL;
	return h->gpa_to_hva(h->opaque, gpa, len);
}

/* The first bytes of an access, little-endian, as a 32-bit value (a port's width at most). */
static inline uint32_t dev_io_value(const struct dev_io *io)
{
	uint32_t v = 0;

	for (uint32_t k = 0; k < io->len && k < 4; k++)
		v |= (uint32_t)io->data[k] << (8 * k);
	return v;
}

/* A read of a register the device does not have: all ones, as an unclaimed bus. */
static inline void dev_io_ones(struct dev_io *io)
{
	for (uint32_t k = 0; k < io->len; k++)
		io->data[k] = 0xff;
}

#endif
