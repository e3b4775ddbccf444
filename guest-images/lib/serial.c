/* SPDX-License-Identifier: MIT */
/*
 * Raw console output on the 16550A UART at 0x3f8: wait for THR empty (LSR
 * bit 5), write the byte. Two port exits per byte; printf (one ucall per
 * line) is the cheap path. The UART needs no setup for output.
 */
#include "guest.h"

#define COM1 0x3f8
#define UART_THR 0
#define UART_LSR 5
#define LSR_THRE 0x20

static struct spinlock serial_lock;

static void putc_locked(char c)
{
	/* Bounded: a missing UART reads as 0xff (THRE set) anyway. */
	for (int i = 0; i < 100000 && !(inb(COM1 + UART_LSR) & LSR_THRE); i++)
		cpu_relax();
	outb(COM1 + UART_THR, (uint8_t)c);
}

void serial_putc(char c)
{
	spin_lock(&serial_lock);
	putc_locked(c);
	spin_unlock(&serial_lock);
}

void serial_puts(const char *s)
{
	spin_lock(&serial_lock);
	while (*s)
		putc_locked(*s++);
	spin_unlock(&serial_lock);
}
