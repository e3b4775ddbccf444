/* SPDX-License-Identifier: MIT */
/*
 * What the bench's minimal guests (min64.S for perfvisor, minbios.S for QEMU
 * microvm) do, shared so both do exactly the same work: print MIN_MESSAGE
 * on the serial port, polling LSR before each byte, then write
 * MIN_EXIT_VALUE to the debug-exit port, so the VMM exits with status
 * (MIN_EXIT_VALUE << 1) | 1 = 33. bench/boot.sh checks both.
 */
#ifndef BENCH_MINGUEST_H
#define BENCH_MINGUEST_H

#define MIN_SERIAL_PORT 0x3f8
#define MIN_SERIAL_LSR 5   /* line status register, relative to the port */
#define MIN_LSR_THRE 0x20  /* transmit holding register empty */
#define MIN_EXIT_PORT 0xf4 /* isa-debug-exit, iosize 4 */
#define MIN_EXIT_VALUE 0x10
#define MIN_MESSAGE "perfvisor bench: min guest up\n"

#ifdef __ASSEMBLER__
/* clang-format off */
/*
 * The guest's whole body, assembled by both forms: print the NUL-terminated
 * string at (E/R)SI, then exit. `load` is the form's byte load into %al
 * (lodsb, or cs lodsb in real mode where the string lives in CS).
 */
.macro MIN_GUEST_BODY load:vararg
	mov	$MIN_SERIAL_PORT, %dx
1:	\load
	test	%al, %al
	jz	3f
	mov	%al, %bl
	add	$MIN_SERIAL_LSR, %dx
2:	in	%dx, %al		/* wait for an empty transmit register */
	test	$MIN_LSR_THRE, %al
	jz	2b
	sub	$MIN_SERIAL_LSR, %dx
	mov	%bl, %al
	out	%al, %dx
	jmp	1b
3:	mov	$MIN_EXIT_PORT, %dx
	mov	$MIN_EXIT_VALUE, %eax
	out	%eax, %dx
4:	cli
	hlt
	jmp	4b
.endm
/* clang-format on */
#endif

#endif
