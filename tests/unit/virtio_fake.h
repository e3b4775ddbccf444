/* SPDX-License-Identifier: MIT */
/*
 * What the virtio unit tests share: a fake guest RAM of RAM bytes (define
 * RAM before including this), the dev_host over it (interrupt pulses and
 * log lines counted), the device under test `v`, and 32-bit register
 * access to its virtio-mmio window as a driver makes it.
 */
#ifndef PERFVISOR_TESTS_VIRTIO_FAKE_H
#define PERFVISOR_TESTS_VIRTIO_FAKE_H

#include "devices/virtio_internal.h"

#include <stdint.h>

#ifndef RAM
#error "define RAM, the fake guest RAM's size, before including virtio_fake.h"
#endif

static uint8_t ram[RAM] __attribute__((aligned(4096)));
static int pulses, logs;
static struct virtio_mmio *v;

static inline void *fake_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	(void)opaque;
	return gpa > RAM || len > RAM - gpa ? NULL : ram + gpa;
}

static inline void fake_pulse(void *opaque)
{
	(void)opaque;
	pulses++;
}

static inline void fake_log(void *opaque, const char *msg)
{
	(void)opaque;
	(void)msg;
	logs++;
}

static const struct dev_host host = { .gpa_to_hva = fake_hva, .pulse_irq = fake_pulse, .log = fake_log };

static inline uint32_t rd(uint64_t off)
{
	uint8_t d[4] = { 0 };
	struct dev_io io = { .offset = off, .len = 4, .data = d };

	virtio_mmio_io(v, &io);
	return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
}

static inline void wr(uint64_t off, uint32_t val)
{
	uint8_t d[4] = { (uint8_t)val, (uint8_t)(val >> 8), (uint8_t)(val >> 16), (uint8_t)(val >> 24) };
	struct dev_io io = { .offset = off, .len = 4, .is_write = true, .data = d };

	virtio_mmio_io(v, &io);
}

/* A Linux-like driver: reset, ACK, DRIVER, driver features (high word hi, low word lo), FEATURES_OK. */
static inline void negotiate2(uint32_t hi, uint32_t lo)
{
	wr(0x70, 0);
	wr(0x70, 1);
	wr(0x70, 3);
	wr(0x24, 1);
	wr(0x20, hi);
	wr(0x24, 0);
	wr(0x20, lo);
	wr(0x70, 0xb);
}

/* The same with nothing in the low word (VERSION_1 is bit 32: hi's bit 0). */
static inline void negotiate(uint32_t hi_features)
{
	negotiate2(hi_features, 0);
}

#endif
