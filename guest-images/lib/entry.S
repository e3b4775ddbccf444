/* SPDX-License-Identifier: MIT */
/*
 * Guest entry points: the boot CPU's _start, the AP path (real-mode
 * trampoline -> 32-bit -> 64-bit), setjmp/longjmp used to resume after an
 * expected exception, and the ring-3 entry/exit glue.
 */
#include "rt_internal.h"

#define CR0_PE 0x1

	.section .text.entry, "ax"
	.code64
/*
 * Boot CPU, from the VMM: long mode, RDI = struct pv_bootinfo *.
 * Switch to CPU 0's kernel stack and go to C; BSS is already zero.
 */
	.globl _start
_start:
	leaq	rt_stacks + RT_KSTACK_SIZE(%rip), %rsp
	xorl	%ebp, %ebp
	call	rt_start
	/* fall through: rt_start does not return */

	.globl rt_park
rt_park:
	cli
	hlt
	jmp	rt_park

/*
 * Real-mode AP trampoline. smp.c copies [rt_tramp_start, rt_tramp_end) to
 * RT_TRAMPOLINE_GPA and sends SIPI with vector RT_TRAMPOLINE_GPA >> 12, so
 * the AP starts here with CS = RT_TRAMPOLINE_GPA >> 4, IP = 0. It loads the
 * runtime's GDT (32-bit base: the image lies below 4 GiB), enters protected
 * mode and jumps to rt_ap_entry32 in the image.
 */
	.code16
	.globl rt_tramp_start, rt_tramp_end
rt_tramp_start:
	cli
	cld
	movw	%cs, %ax
	movw	%ax, %ds
	lgdtl	%ds:(rt_tramp_gdtr - rt_tramp_start)
	movl	%cr0, %eax
	orl	$CR0_PE, %eax
	movl	%eax, %cr0
	ljmpl	$RT_KERNEL_CS32, $rt_ap_entry32
	.balign 8
rt_tramp_gdtr:
	.word	RT_GDT_ENTRIES * 8 - 1
	.long	rt_gdt
rt_tramp_end:

/*
 * Protected mode, flat 32-bit segments, paging off. Enable PAE, load the
 * BSP's CR3, set EFER.LME, enable paging (-> compatibility mode), then a far
 * jump to the 64-bit code segment. The control register values were stored
 * by the BSP (smp.c) before the SIPI.
 */
	.code32
rt_ap_entry32:
	movw	$RT_KERNEL_DS, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %ss
	movl	rt_ap_cr4, %eax
	movl	%eax, %cr4
	movl	rt_ap_cr3, %eax
	movl	%eax, %cr3
	movl	$0xc0000080, %ecx
	movl	rt_ap_efer, %eax
	xorl	%edx, %edx
	wrmsr
	movl	rt_ap_cr0, %eax
	movl	%eax, %cr0
	ljmpl	$RT_KERNEL_CS, $rt_ap_entry64

/*
 * Long mode. Find our cpu index from the local APIC id, take that CPU's
 * kernel stack and call rt_ap_start(cpu). An APIC id the boot information
 * does not list parks the CPU.
 */
	.code64
rt_ap_entry64:
	movl	$RT_KERNEL_DS, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	movl	%eax, %fs
	movl	%eax, %gs
	movl	$APIC_BASE + APIC_ID, %edx	/* zero-extended: not a disp32 */
	movl	(%rdx), %eax
	shrl	$24, %eax
	movzbl	rt_apic_to_cpu(%rax), %edi
	testl	%edi, %edi
	jz	rt_park
	decl	%edi
	movl	%edi, %eax
	incl	%eax
	shlq	$RT_STACKS_SHIFT, %rax
	leaq	rt_stacks - RT_USTACK_SIZE(%rax), %rsp	/* top of cpu's kernel stack */
	xorl	%ebp, %ebp
	call	rt_ap_start
	jmp	rt_park

	.text
/* int rt_setjmp(struct rt_jmp *jb): 0 now, `val` when rt_longjmp'd. */
	.globl rt_setjmp
rt_setjmp:
	movq	%rbx, 0(%rdi)
	movq	%rbp, 8(%rdi)
	movq	%r12, 16(%rdi)
	movq	%r13, 24(%rdi)
	movq	%r14, 32(%rdi)
	movq	%r15, 40(%rdi)
	leaq	8(%rsp), %rdx
	movq	%rdx, 48(%rdi)
	movq	(%rsp), %rdx
	movq	%rdx, 56(%rdi)
	xorl	%eax, %eax
	ret

/*
 * void rt_longjmp(struct rt_jmp *jb, int val): used from trap handlers, so
 * it also reloads SS/DS/ES, which a trap from ring 3 leaves null.
 */
	.globl rt_longjmp
rt_longjmp:
	movl	$RT_KERNEL_DS, %eax
	movl	%eax, %ss
	movl	%eax, %ds
	movl	%eax, %es
	movq	0(%rdi), %rbx
	movq	8(%rdi), %rbp
	movq	16(%rdi), %r12
	movq	24(%rdi), %r13
	movq	32(%rdi), %r14
	movq	40(%rdi), %r15
	movq	48(%rdi), %rsp
	movl	%esi, %eax
	jmpq	*56(%rdi)

/*
 * void rt_user_enter(fn, arg, user_rsp, uint64_t *tss_rsp0): iretq to ring
 * 3 at rt_user_start with interrupts off. Traps from ring 3 land on the
 * kernel stack just below this frame (TSS.RSP0 = current RSP). We never
 * return here: the trap handler rt_longjmp's to rt_run_user.
 */
	.globl rt_user_enter
rt_user_enter:
	movq	%rsp, (%rcx)
	pushq	$(RT_USER_DS | 3)	/* SS */
	pushq	%rdx			/* RSP */
	pushq	$0x2			/* RFLAGS: IF=0, IOPL=0 */
	pushq	$(RT_USER_CS | 3)	/* CS */
	leaq	rt_user_start(%rip), %rax
	pushq	%rax			/* RIP */
	movq	%rdi, %rax
	movq	%rsi, %rdi
	xorl	%ebp, %ebp
	iretq

/*
 * Ring 3: call fn(arg), then hand its return value (RAX) back to ring 0
 * with a #UD at a known address. An exception is the one way from ring 3
 * to ring 0 that works on every KVM host: on kvm_pvm a software `int $N`
 * raises #UD and `syscall` stays in ring 3 (docs/testing.md).
 */
rt_user_start:
	call	*%rax
	.globl	rt_user_return
rt_user_return:
	ud2
	jmp	rt_user_return

	.section .note.GNU-stack, "", @progbits
