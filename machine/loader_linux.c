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
#include <stdio.h>
#include <stdlib.h>
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

/* The guest path: the protected-mode part at 1 MiB, entered at its decompressor's 64-bit entry. */
static int load_guest(const uint8_t *pm, uint64_t kernel_len, const struct setup_header *h, struct gmem *mem,
		      struct loader_linux *out, struct errbuf *err)
{
	uint64_t need = h->init_size > kernel_len ? h->init_size : kernel_len;

	if (PV_LB_LINUX_LOAD + need > mem->size)
		return errbuf_set(err, -E2BIG,
				  "the Linux kernel needs 0x%" PRIx64
				  " bytes from 0x%llx (its init_size), beyond "
				  "guest memory (%" PRIu64 " MiB); use a larger --memory",
				  need, (unsigned long long)PV_LB_LINUX_LOAD, mem->size >> 20);
	out->entry64 = PV_LB_LINUX_LOAD + ENTRY64_OFFSET;
	/* A relocatable kernel moves itself to pref_address; it needs init_size there. */
	out->kernel_end = PV_LB_LINUX_LOAD + need;
	if (h->relocatable_kernel && h->pref_address > PV_LB_LINUX_LOAD &&
	    h->pref_address + h->init_size > out->kernel_end)
		out->kernel_end = h->pref_address + h->init_size;
	if (out->kernel_end > mem->size)
		return errbuf_set(
			err, -E2BIG,
			"the Linux kernel relocates to 0x%llx and needs 0x%x bytes there (init_size), "
			"beyond guest memory (%" PRIu64 " MiB); use a larger --memory",
			(unsigned long long)h->pref_address, h->init_size, mem->size >> 20);
	gmem_write(mem, PV_LB_LINUX_LOAD, pm, kernel_len);
	out->info = (struct loader_info){ .entry = out->entry64,
					  .low = PV_LB_LINUX_LOAD,
					  .high = PV_LB_LINUX_LOAD + kernel_len,
					  .nr_segments = 1 };
	return 0;
}

/*
 * The host path: the payload decompressed into the ELF vmlinux, its
 * segments at their physical addresses, entered at its startup_64 as the
 * decompressor would (without choosing a random address: no KASLR).
 */
static int load_host(const uint8_t *payload, uint32_t len, enum loader_payload fmt, const char *name,
		     const struct setup_header *h, void *cached, size_t cached_len,
		     void (*release)(void *, size_t), struct gmem *mem, struct loader_linux *out,
		     struct errbuf *err)
{
	uint64_t cap = h->init_size && h->init_size < mem->size ? h->init_size : mem->size;
	struct loader_info info;
	struct errbuf e2;
	void *elf = cached;
	size_t n = cached_len;
	int rc = cached ? 0 : loader_decompress(fmt, payload, len, cap, &elf, &n, err);

	if (rc)
		return rc;
	rc = loader_load_elf_flags(elf, n, mem, PV_LB_HIGH_GPA, 0, &info, err ? &e2 : NULL);
	if (rc) {
		loader_vmlinux_release(elf, n, cached ? release : NULL);
		return err ? errbuf_set(err, rc, "the decompressed %s payload (%zu bytes, the vmlinux): %s",
					name, n, e2.msg)
			   : rc;
	}
	out->vmlinux = elf;
	out->vmlinux_len = n;
	out->vmlinux_release = cached ? release : NULL;
	out->host_decompressed = true;
	out->entry64 = info.entry;
	out->kernel_end = info.high;
	out->info = info;
	snprintf(out->how, sizeof(out->how),
		 "%s payload %s: vmlinux (%zu bytes), entry 0x%" PRIx64 " (startup_64), no KASLR", name,
		 cached ? "decompressed on the host in an earlier boot" : "decompressed on the host", n,
		 info.entry);
	return 0;
}

/* A bzImage's setup header, checked, and where its payload is. */
struct bzimage {
	struct setup_header h;
	size_t hdr_len;
	uint64_t setup_len, kernel_len;
	const uint8_t *payload; /* NULL: none */
	enum loader_payload fmt;
	const char *name; /* the payload's format, for messages */
};

static int parse_bzimage(const void *image, size_t size, struct bzimage *b, struct errbuf *err)
{
	const uint8_t *p = image;
	struct setup_header h;
	size_t hdr_len;

	memset(b, 0, sizeof(*b));
	b->fmt = LOADER_PAYLOAD_NONE;
	b->name = "none";
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
	b->setup_len = ((uint64_t)(h.setup_sects ? h.setup_sects : 4) + 1) * 512;
	if (b->setup_len >= size)
		return errbuf_set(err, -ENOEXEC,
				  "truncated bzImage: %" PRIu64 " bytes of setup code, the file has %zu",
				  b->setup_len, size);
	b->kernel_len = size - b->setup_len;
	/* payload_offset counts from the protected-mode part's start (boot protocol 2.08). */
	if (h.payload_length) {
		if (h.payload_offset > b->kernel_len || h.payload_length > b->kernel_len - h.payload_offset)
			return errbuf_set(err, -ENOEXEC,
					  "truncated bzImage: its payload (0x%x bytes at 0x%x) runs past the "
					  "end of the file",
					  h.payload_length, h.payload_offset);
		b->payload = p + b->setup_len + h.payload_offset;
		b->fmt = loader_payload_format(b->payload, h.payload_length, &b->name);
	}
	b->h = h;
	b->hdr_len = hdr_len;
	return 0;
}

static bool decodable(enum loader_payload fmt)
{
	return fmt != LOADER_PAYLOAD_NONE && fmt != LOADER_PAYLOAD_OTHER;
}

int loader_linux_vmlinux(const void *image, size_t size, uint64_t cap, void **elf, size_t *len,
			 struct errbuf *err)
{
	struct bzimage b;
	int rc = parse_bzimage(image, size, &b, err);

	*elf = NULL;
	*len = 0;
	if (rc)
		return rc;
	if (!decodable(b.fmt))
		return errbuf_set(err, -ENOTSUP,
				  "the bzImage's payload is %s; perfvisor decodes xz, gzip and zstd",
				  b.fmt == LOADER_PAYLOAD_NONE ? "absent (not compressed)" : b.name);
	if (b.h.init_size && b.h.init_size < cap)
		cap = b.h.init_size;
	return loader_decompress(b.fmt, b.payload, b.h.payload_length, cap, elf, len, err);
}

void loader_vmlinux_release(void *vmlinux, size_t len, void (*release)(void *, size_t))
{
	if (vmlinux && release)
		release(vmlinux, len);
	else
		free(vmlinux);
}

void loader_linux_fini(struct loader_linux *lx)
{
	loader_vmlinux_release(lx->vmlinux, lx->vmlinux_len, lx->vmlinux_release);
	lx->vmlinux = NULL;
	lx->vmlinux_len = 0;
	lx->vmlinux_release = NULL;
}

bool loader_linux_host_payload(const void *image, size_t size, enum loader_decompress how,
			       const void **payload, size_t *len)
{
	struct bzimage b;

	if (how == LOADER_DECOMPRESS_GUEST || parse_bzimage(image, size, &b, NULL) || !decodable(b.fmt))
		return false;
	*payload = b.payload;
	*len = b.h.payload_length;
	return true;
}

int loader_load_linux(const void *image, size_t size, struct gmem *mem, enum loader_decompress how,
		      struct loader_linux *out, struct errbuf *err)
{
	return loader_load_linux_with(image, size, mem, how, NULL, 0, NULL, out, err);
}

int loader_load_linux_with(const void *image, size_t size, struct gmem *mem, enum loader_decompress how,
			   void *vmlinux, size_t len, void (*release)(void *, size_t),
			   struct loader_linux *out, struct errbuf *err)
{
	const uint8_t *p = image;
	struct bzimage b;
	struct setup_header h;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_bzimage(image, size, &b, err);
	if (rc || how == LOADER_DECOMPRESS_GUEST || !decodable(b.fmt)) {
		loader_vmlinux_release(vmlinux, len, release); /* not used */
		vmlinux = NULL;
	}
	if (rc)
		return rc;
	h = b.h;
	out->hdr_len = (uint32_t)b.hdr_len;
	memcpy(out->hdr, &h, b.hdr_len);
	out->version = h.version;
	out->initrd_addr_max = h.initrd_addr_max ? h.initrd_addr_max : 0x37ffffff;
	out->cmdline_size = h.version >= 0x0206 && h.cmdline_size ? h.cmdline_size : 255;
	if (how == LOADER_DECOMPRESS_HOST && !decodable(b.fmt))
		return errbuf_set(err, -ENOTSUP,
				  "--kernel-decompress host: the bzImage's payload is %s; perfvisor decodes "
				  "xz, gzip and zstd (use --kernel-decompress guest)",
				  b.fmt == LOADER_PAYLOAD_NONE ? "absent (not compressed)" : b.name);
	if (how != LOADER_DECOMPRESS_GUEST && decodable(b.fmt))
		return load_host(b.payload, h.payload_length, b.fmt, b.name, &h, vmlinux, len, release, mem,
				 out, err);
	rc = load_guest(p + b.setup_len, b.kernel_len, &h, mem, out, err);
	if (!rc && b.fmt == LOADER_PAYLOAD_NONE)
		snprintf(out->how, sizeof(out->how), "no compressed payload: entry 0x%" PRIx64, out->entry64);
	else if (!rc)
		snprintf(out->how, sizeof(out->how),
			 "%s payload decompressed in the guest: entry 0x%" PRIx64 " (the decompressor)",
			 b.name, out->entry64);
	return rc;
}
