/* SPDX-License-Identifier: MIT */
/*
 * What the loader unit tests share: the setup header of a bzImage built in
 * memory, as a 64-bit kernel of boot protocol 2.15 has it
 * (Documentation/arch/x86/boot.rst).
 */
#ifndef PERFVISOR_TESTS_BZIMAGE_FAKE_H
#define PERFVISOR_TESTS_BZIMAGE_FAKE_H

#include <asm/bootparam.h>
#include <stdint.h>

/* The header at 0x1f1 of image img. */
static inline struct setup_header *bz_hdr(uint8_t *img)
{
	return (struct setup_header *)(img + 0x1f1);
}

/* A valid header: setup_sects sectors of setup code, loaded high, a 64-bit entry, init_size. */
static inline struct setup_header *bz_fill_hdr(uint8_t *img, uint8_t setup_sects, uint32_t init_size)
{
	struct setup_header *h = bz_hdr(img);

	h->setup_sects = setup_sects;
	h->boot_flag = 0xaa55;
	h->jump = (uint16_t)(0xeb | ((0x268 - 0x202) << 8));
	h->header = 0x53726448;
	h->version = 0x020f;
	h->loadflags = LOADED_HIGH;
	h->xloadflags = XLF_KERNEL_64;
	h->cmdline_size = 100;
	h->initrd_addr_max = 0x7fffffff;
	h->init_size = init_size;
	return h;
}

#endif
