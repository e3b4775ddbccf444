/* SPDX-License-Identifier: MIT */
/*
 * Entries of the boot-protocol test guests (docs/testing.md "Boot protocol
 * guests"): the multiboot v1 header, the PVH note, the Linux 64-bit entry,
 * and the 32-bit path into the runtime's long mode through static
 * identity-map page tables (no ring-0 loop builds them: ring 0 is slow on
 * kvm_pvm). Each entry records what it was handed for the checks in C.
 */
#include "rt_internal.h"
#include <perfvisor/multiboot.h>
#include <perfvisor/pvh.h>

#define CR0_PE 0x1
#define CR0_PG 0x80000000
#define CR4_PAE 0x20
#define EFER_LME 0x100

	.section .boot.header, "ax"
#ifdef BOOT_MULTIBOOT
/* The multiboot v1 header: first in the image, so within the file's first 8 KiB. */
	.balign 4
	.globl boot_mb_header
boot_mb_header:
#ifdef BOOT_MB_AOUT
#define MB_FLAGS (MB_HF_PAGE_ALIGN | MB_HF_MEMINFO | MB_HF_AOUT_KLUDGE)
#else
#define MB_FLAGS (MB_HF_PAGE_ALIGN | MB_HF_MEMINFO)
#endif
	.long	MB_HEADER_MAGIC, MB_FLAGS, -(MB_HEADER_MAGIC + MB_FLAGS)
	/* a.out kludge fields: where the image goes; ignored without bit 16 */
	.long	boot_mb_header, _start_image, _edata, _end, boot_entry32
#endif

#ifdef BOOT_LINUX
/*
 * The bzImage payload starts here (code32_start); the 64-bit entry is 0x200
 * further. There is no 32-bit entry: a loader using it gets a #UD.
 */
	.code32
	.globl boot_linux_entry32
boot_linux_entry32:
	ud2
	.org	0x200
	.code64
	.globl boot_linux_entry64
boot_linux_entry64:
	movl	%cs, %eax
	movl	%eax, boot_entry_cs(%rip)
	movl	%ds, %eax
	movl	%eax, boot_entry_ds(%rip)
	pushfq
	popq	%rax
	movl	%eax, boot_entry_flags(%rip)
	movq	%cr0, %rax
	movl	%eax, boot_entry_cr0(%rip)
	movl	%esi, boot_entry_info(%rip)	/* RSI = struct boot_params * */
	leaq	rt_stacks + RT_KSTACK_SIZE(%rip), %rsp
	xorl	%ebp, %ebp
	movl	%esi, %esi
	xorl	%edi, %edi
	call	boot_start64
	jmp	rt_park
#endif

#ifdef BOOT_PVH
/* XEN_ELFNOTE_PHYS32_ENTRY: the 32-bit entry, EBX = struct pvh_start_info *. */
	.pushsection .note.Xen, "a", @note
	.balign 4
	.long	4, 4, PVH_NOTE_PHYS32_ENTRY
	.asciz	"Xen"
	.long	boot_entry32
	.popsection
#endif

#if defined(BOOT_MULTIBOOT) || defined(BOOT_PVH)
/*
 * 32-bit protected mode, paging off (multiboot: EAX = magic, EBX = info;
 * PVH: EBX = start info). Record the entry state, then PAE paging with the
 * static tables below, EFER.LME, paging on, and a far jump to 64-bit code.
 */
	.code32
	.globl boot_entry32
boot_entry32:
	/* No stack yet (ESP is undefined in both protocols): CPU 0's kernel stack. */
	movl	$(rt_stacks + RT_KSTACK_SIZE), %esp
	movl	%eax, boot_entry_magic
	movl	%ebx, boot_entry_info
	movl	%cs, %eax
	movl	%eax, boot_entry_cs
	movl	%ds, %eax
	movl	%eax, boot_entry_ds
	pushfl
	popl	%eax
	movl	%eax, boot_entry_flags
	movl	%cr0, %eax
	movl	%eax, boot_entry_cr0
	movl	$boot_pml4, %eax
	movl	%eax, %cr3
	movl	%cr4, %eax
	orl	$CR4_PAE, %eax
	movl	%eax, %cr4
	movl	$0xc0000080, %ecx
	rdmsr
	orl	$EFER_LME, %eax
	wrmsr
	lgdtl	boot_gdtr
	movl	%cr0, %eax
	orl	$(CR0_PG | CR0_PE), %eax
	movl	%eax, %cr0
	ljmpl	$RT_KERNEL_CS, $boot_entry64_from32

	.code64
boot_entry64_from32:
	movl	$RT_KERNEL_DS, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	leaq	rt_stacks + RT_KSTACK_SIZE(%rip), %rsp
	xorl	%ebp, %ebp
	movl	boot_entry_magic(%rip), %edi
	movl	boot_entry_info(%rip), %esi
	call	boot_start64
	jmp	rt_park

	.section .rodata
	.balign 8
boot_gdtr:
	.word	RT_GDT_ENTRIES * 8 - 1
	.long	rt_gdt

/* Identity map of the first 4 GiB with 2 MiB pages: PML4, PDPT, 4 PDs. */
	.section .data
	.balign 4096
boot_pml4:
	.quad	boot_pdpt + 3
	.fill	511, 8, 0
boot_pdpt:
	.quad	boot_pd + 3, boot_pd + 0x1003, boot_pd + 0x2003, boot_pd + 0x3003
	.fill	508, 8, 0
boot_pd:
	.set	i, 0
	.rept	2048
	.quad	(i << 21) | 0x83
	.set	i, i + 1
	.endr
#endif

	.section .bss
	.balign 4
	.globl boot_entry_magic, boot_entry_info, boot_entry_cs, boot_entry_ds, boot_entry_flags, boot_entry_cr0
boot_entry_magic: .long 0
boot_entry_info: .long 0
boot_entry_cs: .long 0
boot_entry_ds: .long 0
boot_entry_flags: .long 0
boot_entry_cr0: .long 0

	.section .note.GNU-stack, "", @progbits
