// SPDX-License-Identifier: MIT
/*
 * Linux bzImage loader (Documentation/arch/x86/boot.rst, 64-bit boot
 * protocol): checks the setup header, copies the protected-mode part to
 * 1 MiB and reports where the 64-bit entry is and how much room the kernel
 * needs. Pure: unit-tested with headers built in memory.
 */
#include "machine/machine.h"

#include <asm/bootparam.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "perfvisor/legacy_boot.h"

#define HDR_OFFSET 0x1f1       /* struct setup_header in the file and in boot_params */
#define HDRS_MAGIC 0x53726448u /* "HdrS" at 0x202 */
#define BOOT_FLAG 0xaa55
#define MIN_VERSION 0x020c   /* 2.12: xloadflags, so the 64-bit entry can be known */
#define ENTRY64_OFFSET 0x200 /* startup_64 from the protected-mode part's start */

bool loader_is_bzimage(const void *image, size_t size)
{
	uint32_t magic;

	if (size < 0x206)
		return false;
	memcpy(&magic, (const uint8_t *)image + 0x202, 4);
	return magic == HDRS_MAGIC;
}

int loader_load_linux(const void *image, size_t size, struct gmem *mem, struct loader_linux *out,
		      struct errbuf *err)
{
	const uint8_t *p = image;
	struct setup_header h;
	uint64_t setup_len, kernel_len, need;
	size_t hdr_len;

	memset(out, 0, sizeof(*out));
	if (!loader_is_bzimage(image, size))
		return errbuf_set(err, -ENOEXEC, "not a Linux bzImage (no \"HdrS\" at offset 0x202)");
	/* The header's length is given by the jump at 0x200: 0x202 + its byte offset. */
	hdr_len = 0x202 + p[0x201] - HDR_OFFSET;
	if (hdr_len > sizeof(h))
		hdr_len = sizeof(h);
	if (HDR_OFFSET + hdr_len > size)
		return errbuf_set(err, -ENOEXEC,
				  "truncated bzImage: the setup header runs past the end of the file");
	memset(&h, 0, sizeof(h));
	memcpy(&h, p + HDR_OFFSET, hdr_len);
	if (h.boot_flag != BOOT_FLAG)
		return errbuf_set(err, -ENOEXEC, "bzImage boot_flag is 0x%04x, not 0xaa55", h.boot_flag);
	if (h.version < MIN_VERSION)
		return errbuf_set(
			err, -ENOEXEC,
			"bzImage boot protocol %u.%02u is older than 2.12; perfvisor needs the 64-bit "
			"entry (Linux 3.8 or later)",
			h.version >> 8, h.version & 0xff);
	if (!(h.loadflags & LOADED_HIGH))
		return errbuf_set(err, -ENOEXEC, "zImage (not loaded high) is not supported; use a bzImage");
	if (!(h.xloadflags & XLF_KERNEL_64))
		return errbuf_set(err, -ENOEXEC,
				  "bzImage has no 64-bit entry point (xloadflags bit 0): a 32-bit kernel");
	setup_len = ((uint64_t)(h.setup_sects ? h.setup_sects : 4) + 1) * 512;
	if (setup_len >= size)
		return errbuf_set(err, -ENOEXEC,
				  "truncated bzImage: %" PRIu64 " bytes of setup code, the file has %zu",
				  setup_len, size);
	kernel_len = size - setup_len;
	need = h.init_size > kernel_len ? h.init_size : kernel_len;
	if (PV_LB_LINUX_LOAD + need > mem->size)
		return errbuf_set(err, -E2BIG,
				  "the Linux kernel needs 0x%" PRIx64
				  " bytes from 0x%llx (its init_size), beyond "
				  "guest memory (%" PRIu64 " MiB); use a larger --memory",
				  need, (unsigned long long)PV_LB_LINUX_LOAD, mem->size >> 20);
	out->hdr_len = (uint32_t)hdr_len;
	memcpy(out->hdr, &h, hdr_len);
	out->version = h.version;
	out->entry64 = PV_LB_LINUX_LOAD + ENTRY64_OFFSET;
	/* A relocatable kernel moves itself to pref_address; it needs init_size there. */
	out->kernel_end = PV_LB_LINUX_LOAD + need;
	if (h.relocatable_kernel && h.pref_address > PV_LB_LINUX_LOAD &&
	    h.pref_address + h.init_size > out->kernel_end)
		out->kernel_end = h.pref_address + h.init_size;
	if (out->kernel_end > mem->size)
		return errbuf_set(
			err, -E2BIG,
			"the Linux kernel relocates to 0x%llx and needs 0x%x bytes there (init_size), "
			"beyond guest memory (%" PRIu64 " MiB); use a larger --memory",
			(unsigned long long)h.pref_address, h.init_size, mem->size >> 20);
	memcpy(gmem_hva(mem, PV_LB_LINUX_LOAD, kernel_len), p + setup_len, kernel_len);
	out->initrd_addr_max = h.initrd_addr_max ? h.initrd_addr_max : 0x37ffffff;
	out->cmdline_size = h.version >= 0x0206 && h.cmdline_size ? h.cmdline_size : 255;
	out->info = (struct loader_info){ .entry = out->entry64,
					  .low = PV_LB_LINUX_LOAD,
					  .high = PV_LB_LINUX_LOAD + kernel_len,
					  .nr_segments = 1 };
	return 0;
}
