// SPDX-License-Identifier: MIT
/*
 * Boot protocol dispatch: reads the kernel, finds its format as QEMU's
 * -kernel does (bzImage, then multiboot v1, then an ELF's PVH note, then
 * perfvisor's own ELF64), loads it and its modules, and hands the
 * protocol's boot information to boot_info.c. Pure: guest memory only.
 */
#include "machine/machine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfvisor/legacy_boot.h"
#include "perfvisor/multiboot.h"
#include "machine/boot_internal.h"

#define PAGE 4096ULL

const char *boot_proto_name(enum boot_proto p)
{
	static const char *const names[] = { "elf64", "multiboot", "pvh", "linux" };

	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

/* "PATH ARGS": the path is everything up to the first space. */
static void module_path(const char *spec, char *path, size_t len)
{
	size_t n = strcspn(spec, " ");

	snprintf(path, len, "%.*s", (int)(n < len ? n : len - 1), spec);
}

/* A problem of the kernel file: the message names it ("kernel 'x': ..."). */
static int kernel_error(int rc, const struct boot_config *cfg, struct errbuf *err)
{
	if (rc)
		loader_prefix_error(err, "kernel", cfg->kernel);
	return rc;
}

/* Modules page-aligned one after another from `start` (multiboot and PVH, as QEMU). */
static int place_modules(struct gmem *mem, const struct boot_config *cfg, uint64_t start,
			 struct boot_result *out, struct errbuf *err)
{
	uint64_t at = (start + PAGE - 1) & ~(PAGE - 1);

	for (unsigned i = 0; i < cfg->nr_modules; i++) {
		char path[1024];
		void *buf;
		size_t len;
		int rc;

		module_path(cfg->modules[i], path, sizeof(path));
		rc = loader_read_file(path, "initrd", mem->size, &buf, &len, err);
		if (rc)
			return rc;
		if (at > mem->size || len > mem->size - at) {
			free(buf);
			return errbuf_set(
				err, -E2BIG,
				"initrd '%s' (%zu bytes) does not fit in guest memory: it would go at "
				"0x%" PRIx64 " after the kernel and modules before it, beyond the "
				"end of RAM (%" PRIu64 " MiB); use a larger --memory",
				path, len, at, mem->size >> 20);
		}
		memcpy(gmem_hva(mem, at, len ? len : 1), buf, len);
		free(buf);
		out->mod_gpa[i] = at;
		out->mod_len[i] = len;
		at = (at + len + PAGE - 1) & ~(PAGE - 1);
	}
	out->nr_modules = cfg->nr_modules;
	return 0;
}

/* Linux: one initrd, as high as the kernel allows, above the kernel's room. */
static int place_initrd(struct gmem *mem, const struct boot_config *cfg, const struct loader_linux *lx,
			struct boot_result *out, struct errbuf *err)
{
	uint64_t top = mem->size, at;
	void *buf;
	size_t len;
	int rc;

	if (cfg->nr_modules == 0)
		return 0;
	if (cfg->nr_modules > 1 || strchr(cfg->modules[0], ' '))
		return errbuf_set(
			err, -EINVAL,
			"a Linux kernel takes one --initrd FILE, without arguments (got %u: '%s'%s)",
			cfg->nr_modules, cfg->modules[0], cfg->nr_modules > 1 ? ", ..." : "");
	rc = loader_read_file(cfg->modules[0], "initrd", mem->size, &buf, &len, err);
	if (rc)
		return rc;
	if ((uint64_t)lx->initrd_addr_max + 1 < top)
		top = (uint64_t)lx->initrd_addr_max + 1;
	at = len <= top ? (top - len) & ~(PAGE - 1) : 0;
	if (len > top || at < lx->kernel_end) {
		free(buf);
		return errbuf_set(err, -E2BIG,
				  "initrd '%s' (%zu bytes) does not fit between the kernel's end (0x%" PRIx64
				  ") and the end of usable memory (0x%" PRIx64 "); use a larger --memory",
				  cfg->modules[0], len, lx->kernel_end, top);
	}
	gmem_write(mem, at, buf, len);
	free(buf);
	out->mod_gpa[0] = at;
	out->mod_len[0] = len;
	out->nr_modules = 1;
	return 0;
}

static int load_native(const void *img, size_t size, struct gmem *mem, const struct boot_config *cfg,
		       struct boot_result *out, struct errbuf *err)
{
	int rc;

	if (cfg->nr_modules)
		return errbuf_set(
			err, -EINVAL,
			"--initrd needs a multiboot, PVH or Linux kernel; an ELF64 guest of perfvisor's "
			"own contract (docs/boot.md) takes no modules");
	rc = kernel_error(loader_load_elf(img, size, mem, PV_RESERVED_END, &out->kernel, err), cfg, err);
	if (rc)
		return rc;
	out->cpu = (struct boot_cpu){ .long_mode = true,
				      .rip = out->kernel.entry,
				      .rsp = PV_BOOT_STACK_TOP,
				      .rdi = PV_BOOTINFO_GPA,
				      .cs = PV_BOOT_CS,
				      .ds = PV_BOOT_DS,
				      .tr = 0x18,
				      .gdt_gpa = PV_GDT_GPA,
				      .gdt_limit = 39,
				      .cr3 = PV_PML4_GPA };
	return 0;
}

static int load_multiboot(const void *img, size_t size, struct gmem *mem, const struct boot_config *cfg,
			  struct boot_result *out, struct errbuf *err)
{
	int rc = kernel_error(loader_load_multiboot(img, size, mem, &out->kernel, err), cfg, err);

	if (!rc)
		rc = place_modules(mem, cfg, out->kernel.high, out, err);
	if (!rc)
		rc = boot_write_multiboot(mem, cfg, out, err);
	return rc;
}

static int load_pvh(const void *img, size_t size, uint64_t entry, struct gmem *mem,
		    const struct boot_config *cfg, struct boot_result *out, struct errbuf *err)
{
	int rc = loader_load_elf_flags(img, size, mem, PV_LB_HIGH_GPA,
				       LOADER_ELF_ANY_CLASS | LOADER_ELF_NO_ENTRY, &out->kernel, err);

	if (!rc && (entry < out->kernel.low || entry >= out->kernel.high))
		rc = errbuf_set(err, -ENOEXEC,
				"PVH entry 0x%" PRIx64 " is outside the loaded segments 0x%" PRIx64
				"-0x%" PRIx64,
				entry, out->kernel.low, out->kernel.high);
	if (kernel_error(rc, cfg, err))
		return rc;
	out->kernel.entry = entry;
	rc = place_modules(mem, cfg, out->kernel.high, out, err);
	if (!rc)
		rc = boot_write_pvh(mem, cfg, out, err);
	return rc;
}

static int load_linux(const void *img, size_t size, struct gmem *mem, const struct boot_config *cfg,
		      struct boot_result *out, struct errbuf *err)
{
	struct loader_linux lx;
	const void *payload = NULL;
	size_t plen = 0, clen = 0, n;
	void *cached = NULL;
	char name[64];
	bool cache =
		cfg->kernel_cache && loader_linux_host_payload(img, size, cfg->decompress, &payload, &plen);
	int rc;

	/* The kernel cache: this payload's vmlinux from an earlier boot, checked (machine/kcache.c). */
	if (cache)
		kcache_name(payload, plen, name, sizeof(name));
	if (cache && kcache_get(cfg->kernel_cache, name, mem->size, &cached, &clen, out->cache,
				sizeof(out->cache)) == 0)
		cache = false;
	rc = kernel_error(loader_load_linux_with(img, size, mem, cfg->decompress, cached, clen,
						 cached ? kcache_release : NULL, &lx, err),
			  cfg, err);
	/* Decoded now: kept for the next boot. */
	if (!rc && cache && lx.host_decompressed) {
		char why[sizeof(out->cache)];

		kcache_put(cfg->kernel_cache, name, lx.vmlinux, lx.vmlinux_len, why, sizeof(why));
		n = strlen(out->cache);
		snprintf(out->cache + n, sizeof(out->cache) - n, "; %s", why);
	}
	n = strlen(out->why);
	if (!rc)
		snprintf(out->why + n, sizeof(out->why) - n, "; %s", lx.how);
	if (!rc)
		rc = place_initrd(mem, cfg, &lx, out, err);
	if (!rc) {
		out->kernel = lx.info;
		rc = boot_write_linux(mem, cfg, &lx, out, err);
	}
	/* The vmlinux goes to the caller (a profile reads its symbols: not decompressed twice). */
	if (!rc) {
		out->vmlinux = lx.vmlinux;
		out->vmlinux_len = lx.vmlinux_len;
		out->vmlinux_release = lx.vmlinux_release;
	} else {
		loader_linux_fini(&lx);
	}
	return rc;
}

void boot_result_fini(struct boot_result *out)
{
	loader_vmlinux_release(out->vmlinux, out->vmlinux_len, out->vmlinux_release);
	out->vmlinux = NULL;
	out->vmlinux_len = 0;
	out->vmlinux_release = NULL;
}

/* Find the format; fill out->proto and out->why. 0, or -ENOEXEC naming what was looked for. */
static int probe(const void *img, size_t size, uint64_t *pvh_entry, struct boot_result *out,
		 struct errbuf *err)
{
	struct mb_header mh;
	uint32_t off;
	int rc;

	if (loader_is_bzimage(img, size)) {
		out->proto = BOOT_PROTO_LINUX;
		snprintf(out->why, sizeof(out->why), "a Linux setup header (\"HdrS\" at offset 0x202)");
		return 0;
	}
	if (loader_find_multiboot(img, size, &mh, &off)) {
		out->proto = BOOT_PROTO_MULTIBOOT;
		snprintf(out->why, sizeof(out->why),
			 "a multiboot v1 header at offset 0x%" PRIx32 " (flags 0x%" PRIx32 "%s)", off,
			 mh.flags,
			 (mh.flags & MB_HF_AOUT_KLUDGE) ? ", a.out kludge: load addresses from the header"
							: ", load addresses from the ELF program headers");
		return 0;
	}
	rc = loader_elf_pvh_entry(img, size, pvh_entry, err);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		out->proto = BOOT_PROTO_PVH;
		snprintf(out->why, sizeof(out->why),
			 "an ELF note XEN_ELFNOTE_PHYS32_ENTRY (PVH entry 0x%" PRIx64 ")", *pvh_entry);
		return 0;
	}
	if (loader_is_elf(img, size)) {
		out->proto = BOOT_PROTO_ELF64;
		snprintf(out->why, sizeof(out->why),
			 "an ELF without a multiboot header or PVH note: perfvisor's ELF64 contract");
		return 0;
	}
	return errbuf_set(
		err, -ENOEXEC,
		"no format perfvisor boots: not a Linux bzImage (no \"HdrS\" at offset 0x202), no "
		"multiboot v1 header in the first 8 KiB, not an ELF file (bad magic) for PVH or ELF64");
}

int boot_load(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out, struct errbuf *err)
{
	uint64_t pvh_entry = 0;
	void *img;
	size_t size;
	int rc;

	memset(out, 0, sizeof(*out));
	if (cfg->nr_modules > BOOT_MAX_MODULES)
		return errbuf_set(err, -EINVAL, "at most %u --initrd files", BOOT_MAX_MODULES);
	rc = loader_read_file(cfg->kernel, "kernel", mem->size, &img, &size, err);
	if (rc)
		return rc;
	rc = kernel_error(probe(img, size, &pvh_entry, out, err), cfg, err);
	if (!rc) {
		switch (out->proto) {
		case BOOT_PROTO_LINUX:
			rc = load_linux(img, size, mem, cfg, out, err);
			break;
		case BOOT_PROTO_MULTIBOOT:
			rc = load_multiboot(img, size, mem, cfg, out, err);
			break;
		case BOOT_PROTO_PVH:
			rc = load_pvh(img, size, pvh_entry, mem, cfg, out, err);
			break;
		case BOOT_PROTO_ELF64:
			rc = load_native(img, size, mem, cfg, out, err);
			break;
		}
	}
	free(img);
	return rc;
}
