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
	MIN_GUEST_BODY lodsb

	.section .rodata, "a"
msg:	.asciz MIN_MESSAGE
