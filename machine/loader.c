// SPDX-License-Identifier: MIT
/*
 * ELF loader: copies a static executable's PT_LOAD segments into guest RAM
 * at their physical addresses (ELF64 x86-64 for perfvisor's own contract,
 * ELF32 too for multiboot and PVH), finds a PVH entry note, and reads files.
 * Every header field that comes from the file is checked before use; a bad
 * file gets one clear message.
 */
#include "machine/machine.h"

#include "perfvisor/pvh.h"

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

/*
 * An ELF file's header and program headers, ELF32 or ELF64, the program
 * headers widened to Elf64_Phdr so one set of checks serves both classes.
 */
struct elf_view {
	unsigned class; /* ELFCLASS32 or ELFCLASS64 */
	uint16_t machine;
	uint64_t entry;
	unsigned phnum;
	Elf64_Phdr ph[LOADER_MAX_PHNUM];
};

bool loader_is_elf(const void *image, size_t size)
{
	return size >= SELFMAG && memcmp(image, ELFMAG, SELFMAG) == 0;
}

/* Header fields at the same place in both classes, from the 16-byte e_ident on. */
static int check_ident(const uint8_t *id, size_t size, unsigned flags, struct errbuf *err)
{
	if (size < EI_NIDENT || memcmp(id, ELFMAG, SELFMAG) != 0)
		return errbuf_set(err, -ENOEXEC, "not an ELF file (bad magic)");
	if (id[EI_CLASS] != ELFCLASS64 && !(flags & LOADER_ELF_ANY_CLASS))
		return errbuf_set(err, -ENOEXEC,
				  "not a 64-bit ELF (class %u); perfvisor boots ELF64 x86-64 guests, "
				  "or ELF32 ones with a multiboot header or a PVH note",
				  id[EI_CLASS]);
	if (id[EI_CLASS] != ELFCLASS64 && id[EI_CLASS] != ELFCLASS32)
		return errbuf_set(err, -ENOEXEC, "ELF class %u is neither 32- nor 64-bit", id[EI_CLASS]);
	if (id[EI_DATA] != ELFDATA2LSB)
		return errbuf_set(err, -ENOEXEC, "not a little-endian ELF");
	return 0;
}

static int check_common(uint16_t type, uint16_t machine, unsigned class, unsigned phnum, size_t phentsize,
			size_t want_phentsize, struct errbuf *err)
{
	if (class == ELFCLASS64 && machine != EM_X86_64)
		return errbuf_set(err, -ENOEXEC, "ELF machine %u is not x86-64", machine);
	if (class == ELFCLASS32 && machine != EM_386)
		return errbuf_set(err, -ENOEXEC, "ELF32 machine %u is not i386", machine);
	if (type != ET_EXEC)
		return errbuf_set(err, -ENOEXEC, "ELF type %u is not a static executable (ET_EXEC)", type);
	if (phnum == 0)
		return errbuf_set(err, -ENOEXEC, "ELF has no program headers");
	if (phnum > LOADER_MAX_PHNUM)
		return errbuf_set(err, -ENOEXEC, "ELF has %u program headers (at most %d)", phnum,
				  LOADER_MAX_PHNUM);
	if (phentsize != want_phentsize)
		return errbuf_set(err, -ENOEXEC, "ELF program header size %zu is not %zu", phentsize,
				  want_phentsize);
	return 0;
}

static int phdrs_in_file(uint64_t phoff, unsigned phnum, size_t entsize, size_t size, struct errbuf *err)
{
	if (!in_bounds(phoff, (uint64_t)phnum * entsize, size))
		return errbuf_set(err, -ENOEXEC,
				  "truncated ELF: program headers at 0x%" PRIx64
				  " run past the end of the file",
				  phoff);
	return 0;
}

static int elf_parse64(const uint8_t *image, size_t size, struct elf_view *v, struct errbuf *err)
{
	Elf64_Ehdr eh;
	int rc;

	if (size < sizeof(eh))
		return errbuf_set(err, -ENOEXEC, "truncated ELF header (%zu of %zu bytes)", size, sizeof(eh));
	memcpy(&eh, image, sizeof(eh));
	rc = check_common(eh.e_type, eh.e_machine, ELFCLASS64, eh.e_phnum, eh.e_phentsize, sizeof(Elf64_Phdr),
			  err);
	if (!rc)
		rc = phdrs_in_file(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), size, err);
	if (rc)
		return rc;
	v->machine = eh.e_machine;
	v->entry = eh.e_entry;
	v->phnum = eh.e_phnum;
	/* Copied out: e_phoff comes from the file and need not be aligned. */
	memcpy(v->ph, image + eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr));
	return 0;
}

static int elf_parse32(const uint8_t *image, size_t size, struct elf_view *v, struct errbuf *err)
{
	Elf32_Ehdr eh;
	int rc;

	if (size < sizeof(eh))
		return errbuf_set(err, -ENOEXEC, "truncated ELF header (%zu of %zu bytes)", size, sizeof(eh));
	memcpy(&eh, image, sizeof(eh));
	rc = check_common(eh.e_type, eh.e_machine, ELFCLASS32, eh.e_phnum, eh.e_phentsize, sizeof(Elf32_Phdr),
			  err);
	if (!rc)
		rc = phdrs_in_file(eh.e_phoff, eh.e_phnum, sizeof(Elf32_Phdr), size, err);
	if (rc)
		return rc;
	v->machine = eh.e_machine;
	v->entry = eh.e_entry;
	v->phnum = eh.e_phnum;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf32_Phdr p;

		memcpy(&p, image + eh.e_phoff + i * sizeof(p), sizeof(p));
		v->ph[i] = (Elf64_Phdr){ .p_type = p.p_type,
					 .p_flags = p.p_flags,
					 .p_offset = p.p_offset,
					 .p_vaddr = p.p_vaddr,
					 .p_paddr = p.p_paddr,
					 .p_filesz = p.p_filesz,
					 .p_memsz = p.p_memsz,
					 .p_align = p.p_align };
	}
	return 0;
}

static int elf_parse(const void *image, size_t size, unsigned flags, struct elf_view *v, struct errbuf *err)
{
	const uint8_t *id = image;
	int rc = check_ident(id, size, flags, err);

	if (rc)
		return rc;
	v->class = id[EI_CLASS];
	return v->class == ELFCLASS64 ? elf_parse64(image, size, v, err) : elf_parse32(image, size, v, err);
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
				  "ELF segment %u at 0x%" PRIx64 " (0x%" PRIx64
				  " bytes) lies outside guest memory (%" PRIu64
				  " MiB); use a larger --memory",
				  i, (uint64_t)ph->p_paddr, (uint64_t)ph->p_memsz, mem->size >> 20);
	if (ph->p_paddr < reserved_end)
		return errbuf_set(err, -EINVAL,
				  "ELF segment %u at 0x%" PRIx64 " overlaps the VMM boot area [0, 0x%" PRIx64
				  "); link the guest at or above 0x%" PRIx64,
				  i, (uint64_t)ph->p_paddr, reserved_end, reserved_end);
	return 0;
}

/* The physical address of `entry`: by p_paddr, or through a segment's p_vaddr. */
static bool entry_paddr(const struct elf_view *v, bool by_vaddr, uint64_t *out)
{
	for (unsigned i = 0; i < v->phnum; i++) {
		const Elf64_Phdr *p = &v->ph[i];

		if (p->p_type != PT_LOAD || p->p_memsz == 0 || !(p->p_flags & PF_X))
			continue;
		if (v->entry >= p->p_paddr && v->entry - p->p_paddr < p->p_memsz) {
			*out = v->entry;
			return true;
		}
		if (by_vaddr && v->entry >= p->p_vaddr && v->entry - p->p_vaddr < p->p_memsz) {
			*out = p->p_paddr + (v->entry - p->p_vaddr);
			return true;
		}
	}
	return false;
}

int loader_load_elf_flags(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
			  unsigned flags, struct loader_info *info, struct errbuf *err)
{
	struct elf_view v;
	int rc;

	memset(info, 0, sizeof(*info));
	if (size > mem->size)
		return errbuf_set(err, -E2BIG,
				  "kernel file (%zu bytes) is larger than guest memory (%" PRIu64 " MiB)",
				  size, mem->size >> 20);
	rc = elf_parse(image, size, flags, &v, err);
	if (rc)
		return rc;

	/* Validate everything before touching guest memory. */
	for (unsigned i = 0; i < v.phnum; i++) {
		if (v.ph[i].p_type == PT_INTERP)
			return errbuf_set(err, -ENOEXEC,
					  "ELF is dynamically linked (PT_INTERP); guests must be static");
		if (v.ph[i].p_type != PT_LOAD || v.ph[i].p_memsz == 0)
			continue;
		rc = check_phdr(&v.ph[i], i, size, mem, reserved_end, err);
		if (rc)
			return rc;
		info->nr_segments++;
	}
	if (info->nr_segments == 0)
		return errbuf_set(err, -ENOEXEC, "ELF has no loadable segment");
	if (!(flags & LOADER_ELF_NO_ENTRY) && !entry_paddr(&v, flags & LOADER_ELF_ANY_CLASS, &info->entry))
		return errbuf_set(err, -ENOEXEC,
				  "ELF entry point 0x%" PRIx64 " is not inside a loaded executable segment",
				  v.entry);

	info->low = UINT64_MAX;
	for (unsigned i = 0; i < v.phnum; i++) {
		const Elf64_Phdr *p = &v.ph[i];
		uint8_t *dst;

		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		dst = gmem_hva(mem, p->p_paddr, p->p_memsz);
		memcpy(dst, (const uint8_t *)image + p->p_offset, p->p_filesz);
		memset(dst + p->p_filesz, 0, p->p_memsz - p->p_filesz);
		if (p->p_paddr < info->low)
			info->low = p->p_paddr;
		if (p->p_paddr + p->p_memsz > info->high)
			info->high = p->p_paddr + p->p_memsz;
	}
	return 0;
}

int loader_load_elf(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
		    struct loader_info *info, struct errbuf *err)
{
	return loader_load_elf_flags(image, size, mem, reserved_end, 0, info, err);
}

/* Notes of one PT_NOTE segment: 4-aligned name and descriptor, as Linux and Xen emit them. */
static int find_pvh_note(const uint8_t *n, uint64_t len, uint64_t *entry)
{
	uint64_t off = 0;

	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		uint64_t name_pad, desc_pad;

		memcpy(&namesz, n + off, 4);
		memcpy(&descsz, n + off + 4, 4);
		memcpy(&type, n + off + 8, 4);
		name_pad = ((uint64_t)namesz + 3) & ~3ULL;
		desc_pad = ((uint64_t)descsz + 3) & ~3ULL;
		if (name_pad + desc_pad > len - off - 12)
			return -ENOEXEC;
		if (type == PVH_NOTE_PHYS32_ENTRY && namesz == sizeof(PVH_NOTE_NAME) &&
		    memcmp(n + off + 12, PVH_NOTE_NAME, sizeof(PVH_NOTE_NAME)) == 0) {
			uint64_t v = 0;

			if (descsz != 4 && descsz != 8)
				return -ENOEXEC;
			memcpy(&v, n + off + 12 + name_pad, descsz);
			*entry = v;
			return 1;
		}
		off += 12 + name_pad + desc_pad;
	}
	return 0;
}

int loader_elf_pvh_entry(const void *image, size_t size, uint64_t *entry, struct errbuf *err)
{
	struct elf_view v;
	int rc = elf_parse(image, size, LOADER_ELF_ANY_CLASS, &v, NULL);

	if (rc)
		return 0; /* not an ELF we can read: no note (the real load names the problem) */
	for (unsigned i = 0; i < v.phnum; i++) {
		if (v.ph[i].p_type != PT_NOTE || !in_bounds(v.ph[i].p_offset, v.ph[i].p_filesz, size))
			continue;
		rc = find_pvh_note((const uint8_t *)image + v.ph[i].p_offset, v.ph[i].p_filesz, entry);
		if (rc < 0)
			return errbuf_set(err, -ENOEXEC,
					  "ELF note segment %u is malformed (a note runs past its end, or a "
					  "PVH entry note is not 4 or 8 bytes)",
					  i);
		if (rc > 0)
			return 1;
	}
	return 0;
}

int loader_read_file(const char *path, const char *what, uint64_t max, void **out, size_t *len,
		     struct errbuf *err)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t done = 0;
	int fd, rc = 0;

	*out = NULL;
	*len = 0;
	/* Non-blocking: a FIFO (or a device) must be refused below, not wait forever in open(). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errbuf_set(err, -errno, "cannot open %s '%s': %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = errbuf_set(err, -errno, "cannot stat %s '%s': %s", what, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = errbuf_set(err, -EINVAL, "%s '%s' is not a regular file", what, path);
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		rc = errbuf_set(err, -E2BIG,
				"%s '%s' (%lld bytes) is larger than guest memory (%" PRIu64 " MiB)", what,
				path, (long long)st.st_size, max >> 20);
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
			rc = errbuf_set(err, n < 0 ? -errno : -EIO, "cannot read %s '%s': %s", what, path,
					n < 0 ? strerror(errno) : "file shrank while reading");
			goto out;
		}
		done += (size_t)n;
	}
	*out = buf;
	*len = done;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

void loader_prefix_error(struct errbuf *err, const char *what, const char *path)
{
	struct errbuf e2;

	if (!err)
		return;
	errbuf_set(&e2, 0, "%s '%s': %s", what, path, err->msg);
	*err = e2;
}

int loader_load_elf_file(const char *path, struct gmem *mem, uint64_t reserved_end, struct loader_info *info,
			 struct errbuf *err)
{
	void *buf;
	size_t len;
	int rc = loader_read_file(path, "kernel", mem->size, &buf, &len, err);

	if (rc)
		return rc;
	rc = loader_load_elf(buf, len, mem, reserved_end, info, err);
	if (rc)
		loader_prefix_error(err, "kernel", path); /* "kernel 'x': not an ELF file" */
	free(buf);
	return rc;
}
