// SPDX-License-Identifier: MIT
/*
 * ELF64 loader: copies a static x86-64 executable's PT_LOAD segments into
 * guest RAM at their physical addresses. Every header field that comes from
 * the file is checked before use; a bad file gets one clear message.
 */
#include "vmm.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOADER_MAX_PHNUM 64

/* [off, off+len) lies inside a buffer of `size` bytes, without overflow. */
static bool in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static int check_ehdr(const Elf64_Ehdr *eh, size_t size, struct errbuf *err)
{
	if (size < EI_NIDENT || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return errbuf_set(err, -ENOEXEC, "not an ELF file (bad magic)");
	if (size < sizeof(*eh))
		return errbuf_set(err, -ENOEXEC, "truncated ELF header (%zu of %zu bytes)", size,
				  sizeof(*eh));
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
		return errbuf_set(err, -ENOEXEC,
				  "not a 64-bit ELF (class %u); perfvisor boots ELF64 x86-64 guests",
				  eh->e_ident[EI_CLASS]);
	if (eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return errbuf_set(err, -ENOEXEC, "not a little-endian ELF");
	if (eh->e_machine != EM_X86_64)
		return errbuf_set(err, -ENOEXEC, "ELF machine %u is not x86-64", eh->e_machine);
	if (eh->e_type != ET_EXEC)
		return errbuf_set(err, -ENOEXEC, "ELF type %u is not a static executable (ET_EXEC)",
				  eh->e_type);
	if (eh->e_phnum == 0)
		return errbuf_set(err, -ENOEXEC, "ELF has no program headers");
	if (eh->e_phnum > LOADER_MAX_PHNUM)
		return errbuf_set(err, -ENOEXEC, "ELF has %u program headers (at most %d)", eh->e_phnum,
				  LOADER_MAX_PHNUM);
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return errbuf_set(err, -ENOEXEC, "ELF program header size %u is not %zu", eh->e_phentsize,
				  sizeof(Elf64_Phdr));
	if (!in_bounds(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), size))
		return errbuf_set(err, -ENOEXEC,
				  "truncated ELF: program headers at 0x%" PRIx64
				  " run past the end of the file",
				  (uint64_t)eh->e_phoff);
	return 0;
}

static int check_phdr(const Elf64_Phdr *ph, unsigned i, size_t size, const struct gmem *mem,
		      uint64_t reserved_end, struct errbuf *err)
{
	if (ph->p_filesz > ph->p_memsz)
		return errbuf_set(err, -ENOEXEC, "ELF segment %u: file size exceeds memory size", i);
	if (!in_bounds(ph->p_offset, ph->p_filesz, size))
		return errbuf_set(err, -ENOEXEC,
				  "truncated ELF: segment %u (0x%" PRIx64 " bytes at offset 0x%" PRIx64
				  ") runs past the end of the file",
				  i, (uint64_t)ph->p_filesz, (uint64_t)ph->p_offset);
	if (!in_bounds(ph->p_paddr, ph->p_memsz, mem->size))
		return errbuf_set(err, -E2BIG,
				  "ELF segment %u at 0x%" PRIx64 "-0x%" PRIx64
				  " lies outside guest memory (%" PRIu64 " MiB); use a larger --memory",
				  i, (uint64_t)ph->p_paddr, (uint64_t)(ph->p_paddr + ph->p_memsz),
				  mem->size >> 20);
	if (ph->p_paddr < reserved_end)
		return errbuf_set(err, -EINVAL,
				  "ELF segment %u at 0x%" PRIx64 " overlaps the VMM boot area [0, 0x%" PRIx64
				  "); link the guest at or above 0x%" PRIx64,
				  i, (uint64_t)ph->p_paddr, reserved_end, reserved_end);
	return 0;
}

int loader_load_elf(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
		    struct loader_info *info, struct errbuf *err)
{
	const Elf64_Ehdr *eh = image;
	Elf64_Phdr ph[LOADER_MAX_PHNUM];
	bool entry_ok = false;
	int rc;

	memset(info, 0, sizeof(*info));
	if (size > mem->size)
		return errbuf_set(err, -E2BIG,
				  "kernel file (%zu bytes) is larger than guest memory (%" PRIu64 " MiB)",
				  size, mem->size >> 20);
	rc = check_ehdr(eh, size, err);
	if (rc)
		return rc;
	/* Copied out: e_phoff comes from the file and need not be aligned. */
	memcpy(ph, (const uint8_t *)image + eh->e_phoff, eh->e_phnum * sizeof(Elf64_Phdr));

	/* Validate everything before touching guest memory. */
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_INTERP)
			return errbuf_set(err, -ENOEXEC,
					  "ELF is dynamically linked (PT_INTERP); guests must be static");
		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz == 0)
			continue;
		rc = check_phdr(&ph[i], i, size, mem, reserved_end, err);
		if (rc)
			return rc;
		if ((ph[i].p_flags & PF_X) && eh->e_entry >= ph[i].p_paddr &&
		    eh->e_entry - ph[i].p_paddr < ph[i].p_memsz)
			entry_ok = true;
		info->nr_segments++;
	}
	if (info->nr_segments == 0)
		return errbuf_set(err, -ENOEXEC, "ELF has no loadable segment");
	if (!entry_ok)
		return errbuf_set(err, -ENOEXEC,
				  "ELF entry point 0x%" PRIx64 " is not inside a loaded executable segment",
				  (uint64_t)eh->e_entry);

	info->low = UINT64_MAX;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		uint8_t *dst;

		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz == 0)
			continue;
		dst = gmem_hva(mem, ph[i].p_paddr, ph[i].p_memsz);
		memcpy(dst, (const uint8_t *)image + ph[i].p_offset, ph[i].p_filesz);
		memset(dst + ph[i].p_filesz, 0, ph[i].p_memsz - ph[i].p_filesz);
		if (ph[i].p_paddr < info->low)
			info->low = ph[i].p_paddr;
		if (ph[i].p_paddr + ph[i].p_memsz > info->high)
			info->high = ph[i].p_paddr + ph[i].p_memsz;
	}
	info->entry = eh->e_entry;
	return 0;
}

int loader_load_elf_file(const char *path, struct gmem *mem, uint64_t reserved_end, struct loader_info *info,
			 struct errbuf *err)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t done = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errbuf_set(err, -errno, "cannot open kernel '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = errbuf_set(err, -errno, "cannot stat kernel '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = errbuf_set(err, -EINVAL, "kernel '%s' is not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > mem->size) {
		rc = errbuf_set(err, -E2BIG,
				"kernel '%s' (%lld bytes) is larger than guest memory (%" PRIu64 " MiB)",
				path, (long long)st.st_size, mem->size >> 20);
		goto out;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		rc = errbuf_set(err, -ENOMEM, "out of memory reading '%s'", path);
		goto out;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = errbuf_set(err, n < 0 ? -errno : -EIO, "cannot read kernel '%s': %s", path,
					n < 0 ? strerror(errno) : "file shrank while reading");
			goto out;
		}
		done += (size_t)n;
	}
	rc = loader_load_elf(buf, done, mem, reserved_end, info, err);
	if (rc) {
		/* Prefix the file name: "kernel 'x': not an ELF file". */
		struct errbuf e2;

		errbuf_set(&e2, rc, "kernel '%s': %s", path, err ? err->msg : "");
		if (err)
			*err = e2;
	}
out:
	free(buf);
	close(fd);
	return rc;
}
