/* SPDX-License-Identifier: MIT */
/*
 * minbios: min64's twin for QEMU microvm, passed as -bios. A raw 64 KiB image
 * that QEMU maps just below 4 GiB; the CPU starts in real mode at 0xfffffff0
 * (CS base 0xffff0000, IP 0xfff0), i.e. at offset 0xfff0 of this image, and
 * runs 16-bit code that prints the same line and exits the same way.
 * Linked at 0: offsets in CS are offsets in the image.
 */
#include "bench/minguest.h"

	.section .text, "ax"
	.code16
start:
	mov	$msg, %si
	mov	$MIN_SERIAL_PORT, %dx
1:	cs lodsb			/* DS is 0 at reset; the string is in CS */
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

msg:	.asciz MIN_MESSAGE

	.org	0xfff0			/* the reset vector */
	jmp	start
	.org	0x10000			/* the image is exactly 64 KiB */
