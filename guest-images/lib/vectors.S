/* SPDX-License-Identifier: MIT */
/*
 * Interrupt and exception entry stubs. Each pushes an error code (0 where
 * the CPU pushes none) and its vector, then the common path saves the
 * general registers as struct rt_regs and calls rt_trap() (trap.c).
 * rt_isr_table lists {stub, vector, gate DPL} for cpu.c to build the IDT.
 */
#include "rt_internal.h"

	.text
	.code64

.macro STUB vec
	.balign 16
rt_isr_\vec:
	/* Vectors 8, 10-14, 17, 21, 29, 30: the CPU pushed an error code. */
	.if (\vec == 8) || ((\vec >= 10) && (\vec <= 14)) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
	.else
	pushq	$0
	.endif
	pushq	$\vec
	jmp	rt_isr_common
.endm

.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	STUB \v
.endr
.irp v, 32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,255
	STUB \v
.endr

/*
 * The CPU aligned RSP to 16 before pushing its 5-word frame; with the error
 * code, vector and 15 registers (22 words) RSP is 16-aligned at the call.
 */
rt_isr_common:
	cld
	pushq	%rax
	pushq	%rbx
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%rbp
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, %rdi
	call	rt_trap
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rbp
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rbx
	popq	%rax
	addq	$16, %rsp
	iretq

	.section .rodata
	.balign 8
	.globl rt_isr_table, rt_isr_count
.macro ENTRY vec, dpl
	.quad	rt_isr_\vec
	.long	\vec, \dpl
.endm
rt_isr_table:
.irp v, 0,1,2,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	ENTRY \v, 0
.endr
	/* int3 from ring 3 raises #BP, not #GP, as on Linux. */
	ENTRY 3, 3
.irp v, 32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,255
	ENTRY \v, 0
.endr
rt_isr_count:
	.long	(rt_isr_count - rt_isr_table) / 16

	.section .note.GNU-stack, "", @progbits
