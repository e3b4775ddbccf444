/* SPDX-License-Identifier: MIT */
/*
 * minmb: min64's twin as a multiboot v1 kernel (ELF32, loaded by its program
 * headers), so perfvisor and QEMU's -kernel boot the very same file: 32-bit
 * protected mode at the ELF entry, EAX = 0x2BADB002; prints the bench line
 * on the 16550 and leaves through the debug-exit port, as min64 does.
 */
#include "bench/minguest.h"

#define MB_MAGIC 0x1badb002
#define MB_FLAGS 0x3 /* page-aligned modules, memory information */

	.section .text, "ax"
	.code32
	.balign 4
	.long	MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)
	.globl _start
_start:
	mov	$msg, %esi
	MIN_GUEST_BODY lodsb

	.section .rodata, "a"
msg:	.asciz MIN_MESSAGE
