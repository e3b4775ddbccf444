// SPDX-License-Identifier: MIT
/*
 * Unit tests for the 16550A UART: drive it through its registers with a
 * fake host that records console bytes and interrupt line changes.
 */
#include "devices/devices.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

enum {
	THR = 0,
	RBR = 0,
	DLL = 0,
	IER = 1,
	DLM = 1,
	IIR = 2,
	FCR = 2,
	LCR = 3,
	MCR = 4,
	LSR = 5,
	MSR = 6,
	SCR = 7
};

struct fake {
	uint8_t out[4096];
	size_t out_len;
	int irq[256]; /* every set_irq level, in order */
	int irq_calls;
};

static struct fake f;
static struct serial *s;

static void fake_console(void *opaque, const void *buf, size_t len)
{
	struct fake *fk = opaque;

	cr_assert_leq(fk->out_len + len, sizeof(fk->out));
	memcpy(fk->out + fk->out_len, buf, len);
	fk->out_len += len;
}

static void fake_irq(void *opaque, int level)
{
	struct fake *fk = opaque;

	if (fk->irq_calls < (int)(sizeof(fk->irq) / sizeof(fk->irq[0])))
		fk->irq[fk->irq_calls] = level;
	fk->irq_calls++;
}

static int last_irq(void)
{
	return f.irq_calls ? f.irq[f.irq_calls - 1] : 0;
}

static void setup(void)
{
	struct dev_host host = {
		.opaque = &f,
		.console_write = fake_console,
		.set_irq = fake_irq,
	};

	memset(&f, 0, sizeof(f));
	cr_assert_eq(serial_create(&s, &host), 0);
}

static void teardown(void)
{
	serial_destroy(s);
	s = NULL;
}

TestSuite(serial, .init = setup, .fini = teardown);

Test(serial, thr_bytes_reach_console)
{
	const char *msg = "hello, 8250\n";

	for (const char *p = msg; *p; p++)
		serial_write(s, THR, (uint8_t)*p);
	cr_assert_eq(f.out_len, strlen(msg));
	cr_assert_arr_eq(f.out, msg, strlen(msg));
	cr_assert_eq(f.irq_calls, 0, "no interrupt enabled, no irq change");
}

Test(serial, reset_state)
{
	cr_assert_eq(serial_read(s, IER), 0);
	cr_assert_eq(serial_read(s, IIR), 0x01);
	cr_assert_eq(serial_read(s, LCR), 0);
	cr_assert_eq(serial_read(s, MCR), 0);
	cr_assert_eq(serial_read(s, LSR), 0x60, "THRE|TEMT, no data");
	cr_assert_eq(serial_read(s, MSR), 0xb0, "DCD|DSR|CTS");
}

Test(serial, dlab_switches_to_divisor_latch)
{
	serial_write(s, LCR, 0x83);
	serial_write(s, DLL, 0x01);
	serial_write(s, DLM, 0x02);
	cr_assert_eq(serial_read(s, DLL), 0x01);
	cr_assert_eq(serial_read(s, DLM), 0x02);
	cr_assert_eq(serial_read(s, LCR), 0x83);
	cr_assert_eq(f.out_len, 0, "a DLL write is not a THR write");

	serial_write(s, LCR, 0x03);
	cr_assert_eq(serial_read(s, IER), 0, "DLM write must not touch IER");
	serial_write(s, IER, 0x05);
	serial_write(s, THR, 'x');
	cr_assert_eq(f.out_len, 1);

	serial_write(s, LCR, 0x83);
	cr_assert_eq(serial_read(s, DLL), 0x01, "divisor kept across DLAB toggles");
	cr_assert_eq(serial_read(s, DLM), 0x02);
	serial_write(s, LCR, 0x03);
	cr_assert_eq(serial_read(s, IER), 0x05);
}

Test(serial, ier_keeps_low_nibble_only)
{
	/* Linux's autoconfig writes 0x0f and expects 0x0f, and probes bit 6 (UUE). */
	serial_write(s, IER, 0xff);
	cr_assert_eq(serial_read(s, IER), 0x0f);
}

Test(serial, scratch_register)
{
	serial_write(s, SCR, 0xa5);
	cr_assert_eq(serial_read(s, SCR), 0xa5);
	serial_write(s, SCR, 0x5a);
	cr_assert_eq(serial_read(s, SCR), 0x5a);
}

Test(serial, lsr_and_input_fifo_order)
{
	const uint8_t in[] = "abc";

	cr_assert_eq(serial_push_input(s, in, 3), 3);
	cr_assert_eq(serial_read(s, LSR), 0x61, "DR set");
	cr_assert_eq(serial_read(s, RBR), 'a');
	cr_assert_eq(serial_read(s, RBR), 'b');
	cr_assert_eq(serial_read(s, LSR) & 0x01, 0x01);
	cr_assert_eq(serial_read(s, RBR), 'c');
	cr_assert_eq(serial_read(s, LSR), 0x60, "DR clear once drained");
}

Test(serial, input_fifo_overflow_accepts_fewer)
{
	uint8_t in[1000];
	size_t n, i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7);
	n = serial_push_input(s, in, sizeof(in));
	cr_assert_geq(n, 64, "FIFO holds at least 64 bytes");
	cr_assert_lt(n, sizeof(in), "a full FIFO accepts fewer bytes");
	cr_assert_eq(serial_push_input(s, in, 1), 0, "full FIFO accepts nothing");
	for (i = 0; i < n; i++)
		cr_assert_eq(serial_read(s, RBR), in[i], "byte %zu out of order", i);
	cr_assert_eq(serial_read(s, LSR) & 0x01, 0);
	cr_assert_eq(serial_push_input(s, in, 5), 5, "space again after draining");
}

Test(serial, fcr_fifo_bits_and_clear)
{
	const uint8_t in[] = "xyz";

	cr_assert_eq(serial_read(s, IIR) & 0xc0, 0);
	serial_write(s, FCR, 0x01);
	cr_assert_eq(serial_read(s, IIR), 0xc1, "16550A: FIFO bits, no interrupt");
	serial_push_input(s, in, 3);
	serial_write(s, FCR, 0x03); /* clear receive FIFO */
	cr_assert_eq(serial_read(s, LSR) & 0x01, 0);
	cr_assert_eq(serial_read(s, IIR), 0xc1, "FIFO still enabled after a clear");
	serial_push_input(s, in, 3);
	serial_write(s, FCR, 0x00); /* disabling the FIFO resets it */
	cr_assert_eq(serial_read(s, LSR) & 0x01, 0);
	cr_assert_eq(serial_read(s, IIR), 0x01);
}

Test(serial, iir_priorities_and_irq_level)
{
	const uint8_t in[] = "k";

	serial_write(s, MCR, 0x08); /* OUT2 */
	serial_write(s, IER, 0x03); /* RDI | THRI */
	cr_assert_eq(last_irq(), 1, "enabling THRI with THR empty raises the line");
	cr_assert_eq(serial_read(s, IIR), 0x02, "THRE interrupt");
	cr_assert_eq(last_irq(), 0, "reading IIR acknowledged THRE");
	cr_assert_eq(serial_read(s, IIR), 0x01);

	serial_push_input(s, in, 1);
	cr_assert_eq(last_irq(), 1);
	serial_write(s, THR, '!');
	cr_assert_eq(serial_read(s, IIR), 0x04, "received data beats THRE");
	cr_assert_eq(serial_read(s, IIR), 0x04, "reading IIR does not ack RDI");
	cr_assert_eq(serial_read(s, RBR), 'k');
	cr_assert_eq(last_irq(), 1, "THRE still pending");
	cr_assert_eq(serial_read(s, IIR), 0x02);
	cr_assert_eq(last_irq(), 0);
	cr_assert_eq(serial_read(s, IIR), 0x01);
}

Test(serial, irq_callback_only_on_level_change)
{
	const uint8_t in[] = "abcd";

	serial_write(s, MCR, 0x08);
	serial_write(s, IER, 0x01);
	cr_assert_eq(f.irq_calls, 0);
	serial_push_input(s, in, 2);
	serial_push_input(s, in + 2, 2);
	cr_assert_eq(f.irq_calls, 1);
	cr_assert_eq(f.irq[0], 1);
	serial_read(s, RBR);
	serial_read(s, LSR);
	serial_read(s, RBR);
	serial_read(s, RBR);
	cr_assert_eq(f.irq_calls, 1, "still data: no call");
	serial_read(s, RBR);
	cr_assert_eq(f.irq_calls, 2);
	cr_assert_eq(f.irq[1], 0);
}

Test(serial, out2_gates_the_irq_line)
{
	const uint8_t in[] = "q";

	serial_write(s, IER, 0x01);
	serial_push_input(s, in, 1);
	cr_assert_eq(serial_read(s, IIR), 0x04, "interrupt pending in the UART");
	cr_assert_eq(f.irq_calls, 0, "but without OUT2 the line stays low");
	serial_write(s, MCR, 0x08);
	cr_assert_eq(f.irq_calls, 1);
	cr_assert_eq(f.irq[0], 1);
	serial_write(s, MCR, 0x00);
	cr_assert_eq(f.irq_calls, 2);
	cr_assert_eq(f.irq[1], 0);
	serial_write(s, MCR, 0x08);
	serial_read(s, RBR);
	cr_assert_eq(last_irq(), 0);
}

Test(serial, thr_write_pulses_thre_interrupt)
{
	serial_write(s, MCR, 0x08);
	serial_write(s, IER, 0x02);
	cr_assert_eq(f.irq_calls, 1);
	serial_write(s, THR, 'a');
	/* Writing THR acks THRE, the byte leaves at once, THRE rises again: an edge. */
	cr_assert_eq(f.irq_calls, 3);
	cr_assert_eq(f.irq[1], 0);
	cr_assert_eq(f.irq[2], 1);
	cr_assert_eq(serial_read(s, IIR), 0x02);
	cr_assert_eq(last_irq(), 0);
}

Test(serial, linux_thre_test_passes)
{
	/* serial8250_startup's UART_BUG_THRE probe: re-enabling THRI must re-assert THRE. */
	serial_write(s, FCR, 0x01);
	serial_write(s, IER, 0x02);
	cr_assert_eq(serial_read(s, IIR), 0xc2);
	serial_write(s, IER, 0x00);
	serial_write(s, IER, 0x02);
	cr_assert_eq(serial_read(s, IIR), 0xc2);
	serial_write(s, IER, 0x00);
	cr_assert_eq(serial_read(s, IIR), 0xc1);
}

Test(serial, loopback)
{
	serial_write(s, MCR, 0x10 | 0x0a); /* LOOP | OUT2 | RTS: Linux's probe */
	cr_assert_eq(serial_read(s, MSR) & 0xf0, 0x90, "CTS <- RTS, DCD <- OUT2");
	serial_write(s, MCR, 0x10 | 0x05); /* LOOP | OUT1 | DTR */
	cr_assert_eq(serial_read(s, MSR) & 0xf0, 0x60, "DSR <- DTR, RI <- OUT1");

	serial_write(s, THR, 'A');
	serial_write(s, THR, 'B');
	cr_assert_eq(f.out_len, 0, "loopback bytes do not reach the console");
	cr_assert_eq(serial_read(s, LSR), 0x61);
	cr_assert_eq(serial_read(s, RBR), 'A');
	cr_assert_eq(serial_read(s, RBR), 'B');

	serial_write(s, MCR, 0x0b);
	cr_assert_eq(serial_read(s, MSR) & 0xf0, 0xb0, "line inputs back after loopback");
	serial_write(s, THR, 'C');
	cr_assert_eq(f.out_len, 1);
	cr_assert_eq(f.out[0], 'C');
}

Test(serial, loopback_modem_status_interrupt)
{
	serial_write(s, MCR, 0x18); /* LOOP | OUT2 */
	serial_read(s, MSR);	    /* consume deltas of entering loopback */
	serial_write(s, IER, 0x08);
	cr_assert_eq(serial_read(s, IIR), 0x01);
	serial_write(s, MCR, 0x1a); /* raise RTS -> CTS */
	cr_assert_eq(serial_read(s, IIR), 0x00, "modem status interrupt");
	cr_assert_eq(last_irq(), 1);
	cr_assert_eq(serial_read(s, MSR), 0x91, "CTS|DCD and DCTS");
	cr_assert_eq(serial_read(s, IIR), 0x01, "reading MSR clears deltas");
	cr_assert_eq(last_irq(), 0);
}

Test(serial, loopback_overrun_sets_oe)
{
	uint8_t in[1024] = { 0 };
	size_t n = serial_push_input(s, in, sizeof(in));

	cr_assert_lt(n, sizeof(in));
	serial_write(s, IER, 0x04);
	serial_write(s, MCR, 0x18);
	serial_write(s, THR, 'z');
	cr_assert_eq(serial_read(s, IIR), 0x06, "receiver line status interrupt");
	cr_assert_eq(serial_read(s, LSR), 0x63, "DR|OE|THRE|TEMT");
	cr_assert_eq(serial_read(s, LSR), 0x61, "OE cleared by reading LSR");
	cr_assert_eq(serial_read(s, IIR), 0x01);
}

Test(serial, null_host_is_fine)
{
	struct serial *s2;
	const uint8_t in[] = "x";

	cr_assert_eq(serial_create(&s2, NULL), 0);
	serial_write(s2, MCR, 0x08);
	serial_write(s2, IER, 0x0f);
	serial_write(s2, THR, 'a');
	serial_push_input(s2, in, 1);
	cr_assert_eq(serial_read(s2, RBR), 'x');
	serial_destroy(s2);
	serial_destroy(NULL);
}

Test(serial, out_of_range_offsets_ignored)
{
	serial_write(s, 8, 0x55);
	serial_write(s, LSR, 0x00);
	cr_assert_eq(serial_read(s, 8), 0xff);
	cr_assert_eq(serial_read(s, LSR), 0x60, "LSR is read-only");
}

#define PRODUCER_BYTES 20000

static void *producer(void *arg)
{
	struct serial *ser = arg;

	for (unsigned i = 0; i < PRODUCER_BYTES;) {
		uint8_t b = (uint8_t)(i * 13 + 1);

		i += (unsigned)serial_push_input(ser, &b, 1);
	}
	return NULL;
}

Test(serial, push_input_from_another_thread)
{
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, producer, s), 0);
	for (unsigned i = 0; i < PRODUCER_BYTES;) {
		if (!(serial_read(s, LSR) & 0x01))
			continue;
		cr_assert_eq(serial_read(s, RBR), (uint8_t)(i * 13 + 1), "byte %u", i);
		i++;
	}
	pthread_join(th, NULL);
	cr_assert_eq(serial_read(s, LSR) & 0x01, 0);
}

/* ---- snapshot state ------------------------------------------------------------ */

Test(serial, save_restore_keeps_registers_input_and_the_line)
{
	struct dev_host host = { .opaque = &f, .console_write = fake_console, .set_irq = fake_irq };
	struct serial_state st, st2;
	struct serial *t;

	serial_write(s, LCR, 0x80);
	serial_write(s, DLL, 0x01);
	serial_write(s, DLM, 0x02);
	serial_write(s, LCR, 0x03);
	serial_write(s, MCR, 0x0b); /* DTR RTS OUT2 */
	serial_write(s, IER, 0x01); /* receive interrupt */
	serial_write(s, SCR, 0x5a);
	cr_assert_eq(serial_push_input(s, (const uint8_t *)"xyz", 3), 3);
	(void)serial_read(s, RBR); /* the FIFO does not start at slot 0 any more */
	cr_assert_eq(last_irq(), 1);
	serial_save(s, &st);
	cr_assert_eq(st.rx_count, 2);
	cr_assert(serial_state_valid(&st));

	/* A new UART (the restored VM's) raises the line the saved one had up. */
	f.irq_calls = 0;
	cr_assert_eq(serial_create(&t, &host), 0);
	cr_assert_eq(serial_restore(t, &st), 0);
	cr_assert_eq(last_irq(), 1, "the receive interrupt is pending again");
	cr_assert_eq(serial_read(t, LCR), 0x03);
	cr_assert_eq(serial_read(t, MCR), 0x0b);
	cr_assert_eq(serial_read(t, SCR), 0x5a);
	cr_assert_eq(serial_read(t, RBR), 'y', "pending input in order");
	cr_assert_eq(serial_read(t, RBR), 'z');
	cr_assert_eq(serial_read(t, LSR) & 0x01, 0, "and then no more data");
	serial_write(t, LCR, 0x83);
	cr_assert_eq(serial_read(t, DLL), 0x01);
	cr_assert_eq(serial_read(t, DLM), 0x02);
	serial_save(t, &st2);
	cr_assert_eq(st2.rx_count, 0);
	serial_destroy(t);
}

Test(serial, restore_refuses_impossible_states)
{
	struct serial_state good, bad;

	serial_write(s, SCR, 0x11);
	serial_save(s, &good);
	bad = good;
	bad.ier = 0xf1;
	cr_assert_not(serial_state_valid(&bad));
	cr_assert_eq(serial_restore(s, &bad), -EINVAL);
	bad = good;
	bad.rx_count = SERIAL_RX_MAX + 1;
	cr_assert_eq(serial_restore(s, &bad), -EINVAL);
	bad = good;
	bad.mcr = 0x20;
	cr_assert_eq(serial_restore(s, &bad), -EINVAL);
	cr_assert_eq(serial_read(s, SCR), 0x11, "a refused state changes nothing");
}
