/* SPDX-License-Identifier: MIT */
/*
 * min64: the bench's minimal perfvisor guest. Entered in 64-bit long mode at
 * its ELF entry (docs/boot.md); prints one line on the 16550 at 0x3f8 and
 * leaves through the debug-exit port. bench/minbios.S does the same work
 * from QEMU's reset vector, so both VMMs run the same guest.
 */
#include "bench/minguest.h"

	.section .text, "ax"
	.code64
	.globl _start
_start:
	lea	msg(%rip), %rsi
	mov	$MIN_SERIAL_PORT, %dx
1:	lodsb
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

	.section .rodata, "a"
msg:	.asciz MIN_MESSAGE
