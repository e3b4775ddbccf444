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
	MIN_GUEST_BODY cs lodsb			/* DS is 0 at reset; the string is in CS */

msg:	.asciz MIN_MESSAGE

	.org	0xfff0			/* the reset vector */
	jmp	start
	.org	0x10000			/* the image is exactly 64 KiB */
