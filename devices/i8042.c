// SPDX-License-Identifier: MIT
/*
 * i8042 keyboard controller, only as far as guests need it: the reset line
 * (command 0xfe on port 0x64 stops the VM with status 0) and the command
 * byte (0x20 reads it, 0x60 writes it). There is no keyboard; other
 * commands are accepted and ignored.
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define I8042_DATA 0x60
#define I8042_CMD 0x64 /* status on read */

#define I8042_STR_OBF 0x01 /* output buffer full: a byte waits on port 0x60 */

#define I8042_CMD_READ_CTR 0x20
#define I8042_CMD_WRITE_CTR 0x60
#define I8042_CMD_RESET 0xfe

#define I8042_CTR_KBDINT 0x01
#define I8042_CTR_SYS 0x04 /* "POST passed" flag */

struct i8042 {
	pthread_mutex_t lock;
	struct dev_host host;
	uint8_t ctr;	 /* controller command byte */
	uint8_t pending; /* command waiting for its data byte on 0x60, or 0 */
	bool obf;
	uint8_t out;
};

int i8042_create(struct i8042 **out, const struct dev_host *host)
{
	struct i8042 *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	if (pthread_mutex_init(&k->lock, NULL)) {
		free(k);
		return -ENOMEM;
	}
	if (host)
		k->host = *host;
	k->ctr = I8042_CTR_SYS | I8042_CTR_KBDINT;
	*out = k;
	return 0;
}

void i8042_destroy(struct i8042 *k)
{
	if (!k)
		return;
	pthread_mutex_destroy(&k->lock);
	free(k);
}

uint8_t i8042_read(struct i8042 *k, uint16_t port)
{
	uint8_t v = 0;

	pthread_mutex_lock(&k->lock);
	if (port == I8042_CMD) {
		v = k->obf ? I8042_STR_OBF : 0;
	} else if (port == I8042_DATA && k->obf) {
		v = k->out;
		k->obf = false;
	}
	pthread_mutex_unlock(&k->lock);
	return v;
}

static void i8042_command(struct i8042 *k, uint8_t cmd)
{
	k->pending = 0;
	switch (cmd) {
	case I8042_CMD_READ_CTR:
		k->out = k->ctr;
		k->obf = true;
		break;
	case I8042_CMD_WRITE_CTR:
		k->pending = cmd;
		break;
	case I8042_CMD_RESET:
		dev_stop(&k->host, 0, "guest reset (i8042)");
		break;
	default: /* no keyboard, no aux port: nothing to do */
		break;
	}
}

void i8042_write(struct i8042 *k, uint16_t port, uint8_t value)
{
	pthread_mutex_lock(&k->lock);
	if (port == I8042_CMD) {
		i8042_command(k, value);
	} else if (port == I8042_DATA) {
		/* A data byte that answers no command would go to the keyboard: dropped. */
		if (k->pending == I8042_CMD_WRITE_CTR)
			k->ctr = value;
		k->pending = 0;
	}
	pthread_mutex_unlock(&k->lock);
}

void i8042_save(struct i8042 *k, struct i8042_state *st)
{
	pthread_mutex_lock(&k->lock);
	*st = (struct i8042_state){ .ctr = k->ctr, .pending = k->pending, .obf = k->obf, .out = k->out };
	pthread_mutex_unlock(&k->lock);
}

bool i8042_state_valid(const struct i8042_state *st)
{
	return st->pending == 0 || st->pending == I8042_CMD_WRITE_CTR;
}

int i8042_restore(struct i8042 *k, const struct i8042_state *st)
{
	if (!i8042_state_valid(st))
		return -EINVAL;
	pthread_mutex_lock(&k->lock);
	k->ctr = st->ctr;
	k->pending = st->pending;
	k->obf = st->obf;
	k->out = st->out;
	pthread_mutex_unlock(&k->lock);
	return 0;
}

/* ---- the declaration ---------------------------------------------------------------- */

static int i8042_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)cfg;
	return i8042_create((struct i8042 **)dev, host);
}

static void i8042_dev_destroy(void *dev)
{
	i8042_destroy(dev);
}

/* Two one-byte ranges, data (0x60) and command/status (0x64): the port says which. */
static int i8042_io(void *dev, struct dev_io *io)
{
	if (io->is_write)
		i8042_write(dev, (uint16_t)io->addr, io->data[0]);
	else
		io->data[0] = i8042_read(dev, (uint16_t)io->addr);
	return 0;
}

static const char *i8042_check(const struct snap *s, const void *state, const char **prop)
{
	(void)s;
	*prop = "pending";
	return i8042_state_valid(state) ? NULL : "not a command the i8042 waits on";
}

static void i8042_describe(const void *state, char *buf, size_t len)
{
	(void)state;
	snprintf(buf, len, "i8042");
}

static void i8042_dev_save(void *dev, void *state)
{
	i8042_save(dev, state);
}

static int i8042_dev_load(void *dev, const void *state)
{
	return i8042_restore(dev, state);
}

static const struct snap_field i8042_fields[] = {
	SNAP_FIELD(struct i8042_state, "command-byte", SNAP_F_U8, ctr, 0xff),
	SNAP_FIELD(struct i8042_state, "pending", SNAP_F_U8, pending, 0xff),
	SNAP_FIELD(struct i8042_state, "obf", SNAP_F_BOOL, obf, 1),
	SNAP_FIELD(struct i8042_state, "out", SNAP_F_U8, out, 0xff),
};

static const struct snap_part i8042_part = {
	.name = "i8042",
	.size = sizeof(struct i8042_state),
	.fields = i8042_fields,
	.nr_fields = sizeof(i8042_fields) / sizeof(i8042_fields[0]),
	.check = i8042_check,
	.describe = i8042_describe,
};

const struct dev_desc dev_i8042 = {
	.name = "i8042",
	.pio = { { I8042_DATA, 1, "i8042_data" }, { I8042_CMD, 1, "i8042_cmd" } },
	.nr_pio = 2,
	.irq = -1,
	.create = i8042_dev_create,
	.destroy = i8042_dev_destroy,
	.io = i8042_io,
	.state = &i8042_part,
	.save = i8042_dev_save,
	.load = i8042_dev_load,
};
