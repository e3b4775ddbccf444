// SPDX-License-Identifier: MIT
/*
 * 16550A UART, as much as Linux's 8250 driver and simple guests need: the
 * transmitter is always ready (THR bytes go straight to the console), input
 * comes from the host through a FIFO, and the interrupt line follows the
 * 16550 priority scheme, gated by MCR OUT2 as on PCs.
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Register offsets. */
#define UART_RBR 0 /* read; THR on write; DLL with DLAB */
#define UART_IER 1 /* DLM with DLAB */
#define UART_IIR 2 /* read; FCR on write */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI 0x01  /* receive data available */
#define UART_IER_THRI 0x02 /* transmitter holding register empty */
#define UART_IER_RLSI 0x04 /* receiver line status */
#define UART_IER_MSI 0x08  /* modem status */

#define UART_IIR_NO_INT 0x01
#define UART_IIR_MSI 0x00
#define UART_IIR_THRI 0x02
#define UART_IIR_RDI 0x04
#define UART_IIR_RLSI 0x06
#define UART_IIR_FIFO 0xc0

#define UART_FCR_ENABLE 0x01
#define UART_FCR_CLEAR_RX 0x02
#define UART_FCR_CLEAR_TX 0x04

#define UART_LCR_DLAB 0x80

#define UART_MCR_DTR 0x01
#define UART_MCR_RTS 0x02
#define UART_MCR_OUT1 0x04
#define UART_MCR_OUT2 0x08
#define UART_MCR_LOOP 0x10

#define UART_LSR_DR 0x01
#define UART_LSR_OE 0x02
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_LSR_ERRORS 0x1e /* OE, PE, FE, BI */

#define UART_MSR_DCTS 0x01
#define UART_MSR_DDSR 0x02
#define UART_MSR_TERI 0x04
#define UART_MSR_DDCD 0x08
#define UART_MSR_CTS 0x10
#define UART_MSR_DSR 0x20
#define UART_MSR_RI 0x40
#define UART_MSR_DCD 0x80
#define UART_MSR_DELTAS 0x0f

/* Input FIFO: larger than the 16550's 16 bytes so pasted input is not lost. */
#define SERIAL_RX_SIZE SERIAL_RX_MAX

/*
 * Host callbacks run with `lock` held, so irq levels and console bytes reach
 * the host in register-access order; they must not call back into the UART.
 */
struct serial {
	pthread_mutex_t lock;
	struct dev_host host;
	uint8_t ier, lcr, mcr, fcr, scr, dll, dlm;
	uint8_t lsr_errors; /* sticky LSR error bits, cleared by reading LSR */
	uint8_t msr;
	bool thri_pending; /* THR empty interrupt pending (16550 semantics) */
	int irq_level;
	uint8_t rx[SERIAL_RX_SIZE];
	unsigned rx_head, rx_count;
};

/* Highest-priority pending interrupt as an IIR value (without FIFO bits). */
static uint8_t serial_pending(const struct serial *s)
{
	if ((s->ier & UART_IER_RLSI) && s->lsr_errors)
		return UART_IIR_RLSI;
	if ((s->ier & UART_IER_RDI) && s->rx_count)
		return UART_IIR_RDI;
	if ((s->ier & UART_IER_THRI) && s->thri_pending)
		return UART_IIR_THRI;
	if ((s->ier & UART_IER_MSI) && (s->msr & UART_MSR_DELTAS))
		return UART_IIR_MSI;
	return UART_IIR_NO_INT;
}

/* Recompute the line; on PCs OUT2 gates the UART's interrupt onto the bus. */
static void serial_update_irq(struct serial *s)
{
	int level = serial_pending(s) != UART_IIR_NO_INT && (s->mcr & UART_MCR_OUT2);

	if (level != s->irq_level) {
		s->irq_level = level;
		dev_set_irq(&s->host, level);
	}
}

static bool serial_rx_put(struct serial *s, uint8_t byte)
{
	if (s->rx_count == SERIAL_RX_SIZE)
		return false;
	s->rx[(s->rx_head + s->rx_count) % SERIAL_RX_SIZE] = byte;
	s->rx_count++;
	return true;
}

static uint8_t serial_rx_get(struct serial *s)
{
	uint8_t byte;

	if (!s->rx_count)
		return 0;
	byte = s->rx[s->rx_head];
	s->rx_head = (s->rx_head + 1) % SERIAL_RX_SIZE;
	s->rx_count--;
	return byte;
}

/* Modem status inputs: in loopback they mirror MCR, else a connected line. */
static void serial_update_msr(struct serial *s)
{
	uint8_t in = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	uint8_t changed;

	if (s->mcr & UART_MCR_LOOP) {
		in = 0;
		in |= (s->mcr & UART_MCR_RTS) ? UART_MSR_CTS : 0;
		in |= (s->mcr & UART_MCR_DTR) ? UART_MSR_DSR : 0;
		in |= (s->mcr & UART_MCR_OUT1) ? UART_MSR_RI : 0;
		in |= (s->mcr & UART_MCR_OUT2) ? UART_MSR_DCD : 0;
	}
	changed = (s->msr ^ in) & 0xf0;
	s->msr = (s->msr & UART_MSR_DELTAS) | in;
	s->msr |= (changed & UART_MSR_CTS) ? UART_MSR_DCTS : 0;
	s->msr |= (changed & UART_MSR_DSR) ? UART_MSR_DDSR : 0;
	s->msr |= (changed & UART_MSR_DCD) ? UART_MSR_DDCD : 0;
	/* TERI flags the trailing edge of RI only. */
	s->msr |= ((changed & UART_MSR_RI) && !(in & UART_MSR_RI)) ? UART_MSR_TERI : 0;
}

int serial_create(struct serial **out, const struct dev_host *host)
{
	struct serial *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (pthread_mutex_init(&s->lock, NULL)) {
		free(s);
		return -ENOMEM;
	}
	if (host)
		s->host = *host;
	s->dll = 0x0c; /* 9600 baud, as after a PC BIOS */
	s->msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	*out = s;
	return 0;
}

void serial_destroy(struct serial *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static uint8_t serial_read_iir(struct serial *s)
{
	uint8_t iir = serial_pending(s);

	/* Reading IIR acknowledges a THRE interrupt when it is the one reported. */
	if (iir == UART_IIR_THRI)
		s->thri_pending = false;
	if (s->fcr & UART_FCR_ENABLE)
		iir |= UART_IIR_FIFO;
	return iir;
}

uint8_t serial_read(struct serial *s, unsigned offset)
{
	bool dlab;
	uint8_t v = 0xff;

	pthread_mutex_lock(&s->lock);
	dlab = s->lcr & UART_LCR_DLAB;
	switch (offset) {
	case UART_RBR:
		v = dlab ? s->dll : serial_rx_get(s);
		break;
	case UART_IER:
		v = dlab ? s->dlm : s->ier;
		break;
	case UART_IIR:
		v = serial_read_iir(s);
		break;
	case UART_LCR:
		v = s->lcr;
		break;
	case UART_MCR:
		v = s->mcr;
		break;
	case UART_LSR:
		v = UART_LSR_THRE | UART_LSR_TEMT | s->lsr_errors;
		v |= s->rx_count ? UART_LSR_DR : 0;
		s->lsr_errors = 0;
		break;
	case UART_MSR:
		v = s->msr;
		s->msr &= ~UART_MSR_DELTAS;
		break;
	case UART_SCR:
		v = s->scr;
		break;
	}
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return v;
}

static void serial_write_thr(struct serial *s, uint8_t value)
{
	/* Writing THR acknowledges THRE; the line drops before the byte leaves. */
	s->thri_pending = false;
	serial_update_irq(s);
	if (s->mcr & UART_MCR_LOOP) {
		if (!serial_rx_put(s, value))
			s->lsr_errors |= UART_LSR_OE;
	} else {
		dev_console(&s->host, &value, 1);
	}
	/* The transmitter is infinitely fast: THR is empty again at once. */
	s->thri_pending = true;
}

static void serial_write_ier(struct serial *s, uint8_t value)
{
	uint8_t old = s->ier;

	s->ier = value & 0x0f;
	/* Enabling THRI while THR is empty (always) raises the interrupt. */
	if ((s->ier & UART_IER_THRI) && !(old & UART_IER_THRI))
		s->thri_pending = true;
	else if (!(s->ier & UART_IER_THRI))
		s->thri_pending = false;
}

static void serial_write_fcr(struct serial *s, uint8_t value)
{
	/* Toggling FIFO enable resets both FIFOs, as on the 16550. */
	if ((value ^ s->fcr) & UART_FCR_ENABLE)
		value |= UART_FCR_CLEAR_RX | UART_FCR_CLEAR_TX;
	if (value & UART_FCR_CLEAR_RX) {
		s->rx_head = 0;
		s->rx_count = 0;
	}
	/* The transmit FIFO is always empty: nothing to clear. */
	s->fcr = value & ~(UART_FCR_CLEAR_RX | UART_FCR_CLEAR_TX);
}

void serial_write(struct serial *s, unsigned offset, uint8_t value)
{
	bool dlab;

	pthread_mutex_lock(&s->lock);
	dlab = s->lcr & UART_LCR_DLAB;
	switch (offset) {
	case UART_RBR:
		if (dlab)
			s->dll = value;
		else
			serial_write_thr(s, value);
		break;
	case UART_IER:
		if (dlab)
			s->dlm = value;
		else
			serial_write_ier(s, value);
		break;
	case UART_IIR:
		serial_write_fcr(s, value);
		break;
	case UART_LCR:
		s->lcr = value;
		break;
	case UART_MCR:
		s->mcr = value & 0x1f;
		serial_update_msr(s);
		break;
	case UART_SCR:
		s->scr = value;
		break;
	default: /* LSR and MSR are read-only */
		break;
	}
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

size_t serial_push_input(struct serial *s, const uint8_t *buf, size_t len)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	for (n = 0; n < len; n++) {
		if (!serial_rx_put(s, buf[n]))
			break;
	}
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

void serial_save(struct serial *s, struct serial_state *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->lock);
	st->ier = s->ier;
	st->lcr = s->lcr;
	st->mcr = s->mcr;
	st->fcr = s->fcr;
	st->scr = s->scr;
	st->dll = s->dll;
	st->dlm = s->dlm;
	st->lsr_errors = s->lsr_errors;
	st->msr = s->msr;
	st->thri_pending = s->thri_pending;
	st->rx_count = (uint16_t)s->rx_count;
	for (unsigned i = 0; i < s->rx_count; i++)
		st->rx[i] = s->rx[(s->rx_head + i) % SERIAL_RX_SIZE];
	pthread_mutex_unlock(&s->lock);
}

bool serial_state_valid(const struct serial_state *st)
{
	return !(st->ier & ~0x0f) && !(st->mcr & ~0x1f) && !(st->lsr_errors & ~UART_LSR_ERRORS) &&
	       !(st->fcr & (UART_FCR_CLEAR_RX | UART_FCR_CLEAR_TX)) && st->rx_count <= SERIAL_RX_MAX;
}

int serial_restore(struct serial *s, const struct serial_state *st)
{
	if (!serial_state_valid(st))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	s->ier = st->ier;
	s->lcr = st->lcr;
	s->mcr = st->mcr;
	s->fcr = st->fcr;
	s->scr = st->scr;
	s->dll = st->dll;
	s->dlm = st->dlm;
	s->lsr_errors = st->lsr_errors;
	s->msr = st->msr;
	s->thri_pending = st->thri_pending;
	s->rx_head = 0;
	s->rx_count = st->rx_count;
	memcpy(s->rx, st->rx, st->rx_count);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* ---- the declaration ---------------------------------------------------------------- */

static int serial_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)cfg;
	return serial_create((struct serial **)dev, host);
}

static void serial_dev_destroy(void *dev)
{
	serial_destroy(dev);
}

/* 16550 registers are byte-wide; wider accesses touch consecutive registers. */
static int serial_io(void *dev, struct dev_io *io)
{
	for (uint32_t i = 0; i < io->len && io->offset + i < 8; i++) {
		if (io->is_write)
			serial_write(dev, (unsigned)(io->offset + i), io->data[i]);
		else
			io->data[i] = serial_read(dev, (unsigned)(io->offset + i));
	}
	return 0;
}

static const char *serial_check(const struct snap *s, const void *state, const char **prop)
{
	(void)s;
	(void)prop;
	return serial_state_valid(state) ? NULL : "not a state a 16550 can be in";
}

static void serial_describe(const void *state, char *buf, size_t len)
{
	const struct serial_state *st = state;

	snprintf(buf, len, "serial 16550A (%u input bytes pending)", st->rx_count);
}

static void serial_dev_save(void *dev, void *state)
{
	serial_save(dev, state);
}

static int serial_dev_load(void *dev, const void *state)
{
	return serial_restore(dev, state);
}

#define SF(prop, type, member, max) SNAP_FIELD(struct serial_state, prop, type, member, max)

static const struct snap_field serial_fields[] = {
	SF("ier", SNAP_F_U8, ier, 0xff),
	SF("lcr", SNAP_F_U8, lcr, 0xff),
	SF("mcr", SNAP_F_U8, mcr, 0xff),
	SF("fcr", SNAP_F_U8, fcr, 0xff),
	SF("scr", SNAP_F_U8, scr, 0xff),
	SF("dll", SNAP_F_U8, dll, 0xff),
	SF("dlm", SNAP_F_U8, dlm, 0xff),
	SF("lsr-errors", SNAP_F_U8, lsr_errors, 0xff),
	SF("msr", SNAP_F_U8, msr, 0xff),
	SF("thri-pending", SNAP_F_BOOL, thri_pending, 1),
	SNAP_FIELD_BYTES(struct serial_state, "rx", rx, rx_count),
};

static const struct snap_part serial_part = {
	.name = "serial@3f8",
	.size = sizeof(struct serial_state),
	.fields = serial_fields,
	.nr_fields = sizeof(serial_fields) / sizeof(serial_fields[0]),
	.check = serial_check,
	.describe = serial_describe,
};

const struct dev_desc dev_serial = {
	.name = "serial",
	.pio = { { 0x3f8, 8, "serial" } },
	.nr_pio = 1,
	.irq = 4,
	.create = serial_dev_create,
	.destroy = serial_dev_destroy,
	.io = serial_io,
	.state = &serial_part,
	.save = serial_dev_save,
	.load = serial_dev_load,
};
