// SPDX-License-Identifier: MIT
/*
 * Multiboot v1 kernel loader, as QEMU's -kernel loads one: the header's
 * load addresses when the a.out kludge bit is set, the ELF's PT_LOADs
 * otherwise (ELF32, and ELF64 as GRUB 2 allows). Pure: unit-tested with
 * images built in memory (tests/unit/test_machine_boot.c).
 */
#include "machine/machine.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "perfvisor/legacy_boot.h"
#include "perfvisor/multiboot.h"

int loader_find_multiboot(const void *image, size_t size, struct mb_header *hdr, uint32_t *offset)
{
	const uint8_t *p = image;
	size_t end = size < MB_SEARCH_BYTES ? size : MB_SEARCH_BYTES;

	for (size_t off = 0; off + 12 <= end; off += 4) {
		uint32_t w[3];

		memcpy(w, p + off, sizeof(w));
		if (w[0] != MB_HEADER_MAGIC || (uint32_t)(w[0] + w[1] + w[2]) != 0)
			continue;
		memset(hdr, 0, sizeof(*hdr));
		memcpy(hdr, p + off, size - off < sizeof(*hdr) ? size - off : sizeof(*hdr));
		*offset = (uint32_t)off;
		return 1;
	}
	return 0;
}

/* The a.out kludge: [load_addr, load_end_addr) from the file, zeros up to bss_end_addr. */
static int load_kludge(const uint8_t *image, size_t size, const struct mb_header *h, uint32_t off,
		       struct gmem *mem, struct loader_info *info, struct errbuf *err)
{
	uint64_t file_off, load_len, end;
	uint8_t *dst;

	if (off + sizeof(*h) > size)
		return errbuf_set(err, -ENOEXEC,
				  "truncated multiboot header at offset 0x%" PRIx32
				  ": the a.out kludge needs %zu bytes",
				  off, sizeof(*h));
	if (h->header_addr < h->load_addr || h->header_addr - h->load_addr > off)
		return errbuf_set(err, -ENOEXEC,
				  "multiboot header_addr 0x%" PRIx32 " and load_addr 0x%" PRIx32
				  " do not fit the header's offset 0x%" PRIx32 " in the file",
				  h->header_addr, h->load_addr, off);
	file_off = off - (h->header_addr - h->load_addr);
	if (h->load_end_addr == 0) {
		load_len = size - file_off;
	} else {
		if (h->load_end_addr < h->load_addr)
			return errbuf_set(err, -ENOEXEC,
					  "multiboot load_end_addr 0x%" PRIx32 " is below load_addr",
					  h->load_end_addr);
		load_len = h->load_end_addr - h->load_addr;
	}
	if (file_off + load_len > size)
		return errbuf_set(err, -ENOEXEC,
				  "truncated multiboot kernel: %" PRIu64
				  " bytes to load from offset 0x%" PRIx64 ", the file has %zu",
				  load_len, file_off, size);
	end = h->load_addr + load_len;
	if (h->bss_end_addr) {
		if (h->bss_end_addr < end)
			return errbuf_set(err, -ENOEXEC,
					  "multiboot bss_end_addr 0x%" PRIx32 " is below load_end_addr",
					  h->bss_end_addr);
		end = h->bss_end_addr;
	}
	if (h->load_addr < PV_LB_HIGH_GPA)
		return errbuf_set(err, -EINVAL,
				  "multiboot load_addr 0x%" PRIx32 " is below 1 MiB, where perfvisor puts "
				  "the boot information; link the kernel at or above 0x100000",
				  h->load_addr);
	if (end > mem->size)
		return errbuf_set(err, -E2BIG,
				  "multiboot kernel at 0x%" PRIx32 "-0x%" PRIx64
				  " lies outside guest memory (%" PRIu64 " MiB); use a larger --memory",
				  h->load_addr, end, mem->size >> 20);
	if (h->entry_addr < h->load_addr || h->entry_addr >= end)
		return errbuf_set(err, -ENOEXEC,
				  "multiboot entry_addr 0x%" PRIx32 " is outside the loaded image 0x%" PRIx32
				  "-0x%" PRIx64,
				  h->entry_addr, h->load_addr, end);
	dst = gmem_hva(mem, h->load_addr, end - h->load_addr);
	memcpy(dst, image + file_off, load_len);
	memset(dst + load_len, 0, end - h->load_addr - load_len);
	*info = (struct loader_info){
		.entry = h->entry_addr, .low = h->load_addr, .high = end, .nr_segments = 1
	};
	return 0;
}

int loader_load_multiboot(const void *image, size_t size, struct gmem *mem, struct loader_info *info,
			  struct errbuf *err)
{
	struct mb_header h;
	uint32_t off;

	memset(info, 0, sizeof(*info));
	if (!loader_find_multiboot(image, size, &h, &off))
		return errbuf_set(err, -ENOEXEC, "no multiboot v1 header in the first %u bytes",
				  MB_SEARCH_BYTES);
	if (h.flags & 0xffffu & ~MB_HF_SUPPORTED)
		return errbuf_set(
			err, -ENOEXEC,
			"multiboot header requires features perfvisor does not offer (flags 0x%" PRIx32
			"%s); supported: page-aligned modules (bit 0), memory information (bit 1)",
			h.flags & 0xffffu & ~MB_HF_SUPPORTED,
			(h.flags & MB_HF_VIDEO) ? ", bit 2: a video mode" : "");
	if (h.flags & MB_HF_AOUT_KLUDGE)
		return load_kludge(image, size, &h, off, mem, info, err);
	if (!loader_is_elf(image, size))
		return errbuf_set(
			err, -ENOEXEC,
			"multiboot kernel without the a.out kludge (flags bit 16) must be an ELF file");
	/* The entry lies in a loaded segment, so in RAM, so below 4 GiB. */
	return loader_load_elf_flags(image, size, mem, PV_LB_HIGH_GPA, LOADER_ELF_ANY_CLASS, info, err);
}
