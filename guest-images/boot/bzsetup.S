/* SPDX-License-Identifier: MIT */
/*
 * The setup part of the linux test guest's bzImage: a boot sector with the
 * setup header (Documentation/arch/x86/boot.rst, protocol 2.15) and one
 * setup sector, no real-mode code: perfvisor enters at the 64-bit entry.
 * INIT_SIZE (the kernel's memory from 1 MiB, bss included) comes from the
 * linked kernel. Assembled into 1024 bytes followed by the kernel.
 */
	.text
	.org	0x1f1
	.byte	1		/* setup_sects: the boot sector + 1 */
	.word	0		/* root_flags */
	.long	0		/* syssize: unused, the loaders use the file size */
	.word	0		/* ram_size */
	.word	0xffff		/* vid_mode: normal */
	.word	0		/* root_dev */
	.word	0xaa55		/* boot_flag */
	.byte	0xeb, hdr_end - 9f	/* jump: its target ends the header */
9:
	.ascii	"HdrS"		/* header */
	.word	0x020f		/* version 2.15 */
	.long	0		/* realmode_swtch */
	.word	0x1000		/* start_sys_seg */
	.word	0		/* kernel_version */
	.byte	0		/* type_of_loader: the loader's */
	.byte	0x01		/* loadflags: LOADED_HIGH */
	.word	0		/* setup_move_size */
	.long	0x100000	/* code32_start */
	.long	0, 0		/* ramdisk_image, ramdisk_size: the loader's */
	.long	0		/* bootsect_kludge */
	.word	0		/* heap_end_ptr */
	.byte	0, 0		/* ext_loader_ver, ext_loader_type */
	.long	0		/* cmd_line_ptr: the loader's */
	.long	0x7fffffff	/* initrd_addr_max */
	.long	0x200000	/* kernel_alignment */
	.byte	0		/* relocatable_kernel: no */
	.byte	0		/* min_alignment */
	.word	0x1		/* xloadflags: XLF_KERNEL_64 */
	.long	2047		/* cmdline_size */
	.long	0		/* hardware_subarch: PC */
	.quad	0		/* hardware_subarch_data */
	.long	0, 0		/* payload_offset, payload_length: not compressed */
	.quad	0		/* setup_data */
	.quad	0x100000	/* pref_address */
	.long	INIT_SIZE	/* init_size */
	.long	0		/* handover_offset: no EFI */
	.long	0		/* kernel_info_offset */
hdr_end:
	.org	1024
