// SPDX-License-Identifier: MIT
/*
 * ELF loader: copies a static executable's PT_LOAD segments into guest RAM
 * at their physical addresses (ELF64 x86-64 for perfvisor's own contract,
 * ELF32 too for multiboot and PVH), finds a PVH entry note, and reads files.
 * The ELF reader (elf/elf.h) checks the file; this checks what loading needs
 * (segments in guest RAM, the entry in one). A bad file gets one clear message.
 */
#include "machine/machine.h"

#include "elf/elf.h"
#include "perfvisor/pvh.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Guests and the kernels perfvisor boots have a handful of program headers;
 * more is a damaged file, refused before it costs anything.
 */
#define LOADER_MAX_PHNUM 64

/* [off, off+len) lies inside a buffer of `size` bytes, without overflow. */
static bool in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

bool loader_is_elf(const void *image, size_t size)
{
	return size >= SELFMAG && memcmp(image, ELFMAG, SELFMAG) == 0;
}

/*
 * Open an ELF for loading: the reader checks the file, this what loading
 * needs of it (ELF64 unless LOADER_ELF_ANY_CLASS, a static executable, at
 * most LOADER_MAX_PHNUM program headers). The class comes before the
 * reader's header checks: an ELF32 is most likely a kernel for multiboot or
 * PVH, and the message says so.
 */
static int open_exec(struct elf_file *f, const void *image, size_t size, unsigned flags, struct errbuf *err)
{
	int class = elf_ident_class(image, size);
	int rc;

	if (class >= 0 && class != ELFCLASS64 && !(flags & LOADER_ELF_ANY_CLASS))
		return errbuf_set(err, -ENOEXEC,
				  "not a 64-bit ELF (class %u); perfvisor boots ELF64 x86-64 guests, "
				  "or ELF32 ones with a multiboot header or a PVH note",
				  (unsigned)class);
	rc = elf_open(f, image, size, err);
	if (rc)
		return rc;
	if (f->ehdr.e_type != ET_EXEC)
		return errbuf_set(err, -ENOEXEC, "ELF type %u is not a static executable (ET_EXEC)",
				  f->ehdr.e_type);
	if (f->ehdr.e_phnum > LOADER_MAX_PHNUM)
		return errbuf_set(err, -ENOEXEC, "ELF has %u program headers (at most %d)", f->ehdr.e_phnum,
				  LOADER_MAX_PHNUM);
	return elf_check_phdrs(f, err);
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

/* The physical address of the entry: by p_paddr, or through a segment's p_vaddr. */
static bool entry_paddr(const struct elf_file *f, bool by_vaddr, uint64_t *out)
{
	uint64_t entry = f->ehdr.e_entry;

	for (unsigned i = 0; i < f->phnum; i++) {
		Elf64_Phdr p;

		elf_phdr(f, i, &p);
		if (p.p_type != PT_LOAD || p.p_memsz == 0 || !(p.p_flags & PF_X))
			continue;
		if (entry >= p.p_paddr && entry - p.p_paddr < p.p_memsz) {
			*out = entry;
			return true;
		}
		if (by_vaddr && entry >= p.p_vaddr && entry - p.p_vaddr < p.p_memsz) {
			*out = p.p_paddr + (entry - p.p_vaddr);
			return true;
		}
	}
	return false;
}

int loader_load_elf_flags(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
			  unsigned flags, struct loader_info *info, struct errbuf *err)
{
	struct elf_file f;
	Elf64_Phdr p;
	int rc;

	memset(info, 0, sizeof(*info));
	if (size > mem->size)
		return errbuf_set(err, -E2BIG,
				  "kernel file (%zu bytes) is larger than guest memory (%" PRIu64 " MiB)",
				  size, mem->size >> 20);
	rc = open_exec(&f, image, size, flags, err);
	if (rc)
		return rc;

	/* Validate everything before touching guest memory. */
	for (unsigned i = 0; i < f.phnum; i++) {
		elf_phdr(&f, i, &p);
		if (p.p_type == PT_INTERP)
			return errbuf_set(err, -ENOEXEC,
					  "ELF is dynamically linked (PT_INTERP); guests must be static");
		if (p.p_type != PT_LOAD || p.p_memsz == 0)
			continue;
		rc = check_phdr(&p, i, size, mem, reserved_end, err);
		if (rc)
			return rc;
		info->nr_segments++;
	}
	if (info->nr_segments == 0)
		return errbuf_set(err, -ENOEXEC, "ELF has no loadable segment");
	if (!(flags & LOADER_ELF_NO_ENTRY) && !entry_paddr(&f, flags & LOADER_ELF_ANY_CLASS, &info->entry))
		return errbuf_set(err, -ENOEXEC,
				  "ELF entry point 0x%" PRIx64 " is not inside a loaded executable segment",
				  (uint64_t)f.ehdr.e_entry);

	info->low = UINT64_MAX;
	for (unsigned i = 0; i < f.phnum; i++) {
		elf_phdr(&f, i, &p);
		if (p.p_type != PT_LOAD || p.p_memsz == 0)
			continue;
		/* check_phdr() found the segment inside RAM */
		gmem_write(mem, p.p_paddr, (const uint8_t *)image + p.p_offset, p.p_filesz);
		gmem_zero(mem, p.p_paddr + p.p_filesz, p.p_memsz - p.p_filesz);
		if (p.p_paddr < info->low)
			info->low = p.p_paddr;
		if (p.p_paddr + p.p_memsz > info->high)
			info->high = p.p_paddr + p.p_memsz;
	}
	return 0;
}

int loader_load_elf(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
		    struct loader_info *info, struct errbuf *err)
{
	return loader_load_elf_flags(image, size, mem, reserved_end, 0, info, err);
}

/* The PVH entry among the notes of one PT_NOTE segment: 1, 0 if none, -ENOEXEC if malformed. */
static int find_pvh_note(const struct elf_file *f, const Elf64_Phdr *ph, uint64_t *entry)
{
	struct elf_notes it;
	struct elf_note n;
	int rc;

	if (elf_notes_init(f, ph->p_offset, ph->p_filesz, &it, NULL))
		return 0; /* outside the file: the real load names the problem */
	while ((rc = elf_note_next(&it, &n, NULL)) > 0) {
		uint64_t v = 0;

		if (n.type != PVH_NOTE_PHYS32_ENTRY || n.namesz != sizeof(PVH_NOTE_NAME) ||
		    memcmp(n.name, PVH_NOTE_NAME, sizeof(PVH_NOTE_NAME)) != 0)
			continue;
		if (n.descsz != 4 && n.descsz != 8)
			return -ENOEXEC;
		memcpy(&v, n.desc, n.descsz);
		*entry = v;
		return 1;
	}
	return rc;
}

int loader_elf_pvh_entry(const void *image, size_t size, uint64_t *entry, struct errbuf *err)
{
	struct elf_file f;
	Elf64_Phdr p;
	int rc = open_exec(&f, image, size, LOADER_ELF_ANY_CLASS, NULL);

	if (rc)
		return 0; /* not an ELF we can read: no note (the real load names the problem) */
	for (unsigned i = 0; i < f.phnum; i++) {
		elf_phdr(&f, i, &p);
		if (p.p_type != PT_NOTE)
			continue;
		rc = find_pvh_note(&f, &p, entry);
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

int loader_open_file(const char *path, const char *what, uint64_t max, int flags, int *fd_out, size_t *size,
		     struct errbuf *err)
{
	struct stat st;
	int fd, rc = 0;

	*fd_out = -1;
	*size = 0;
	/* Non-blocking: a FIFO (or a device) must be refused below, not wait forever in open(). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
	if (fd < 0)
		return errbuf_set(err, -errno, "cannot open %s '%s': %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0)
		rc = errbuf_set(err, -errno, "cannot stat %s '%s': %s", what, path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = errbuf_set(err, -EINVAL, "%s '%s' is not a regular file", what, path);
	else if ((uint64_t)st.st_size > max)
		rc = errbuf_set(err, -E2BIG,
				"%s '%s' (%lld bytes) is larger than guest memory (%" PRIu64 " MiB)", what,
				path, (long long)st.st_size, max >> 20);
	if (rc) {
		close(fd);
		return rc;
	}
	*fd_out = fd;
	*size = (size_t)st.st_size;
	return 0;
}

int loader_read_file(const char *path, const char *what, uint64_t max, void **out, size_t *len,
		     struct errbuf *err)
{
	uint8_t *buf = NULL;
	size_t done = 0, size;
	int fd, rc;

	*out = NULL;
	*len = 0;
	rc = loader_open_file(path, what, max, 0, &fd, &size, err);
	if (rc)
		return rc;
	buf = malloc(size ? size : 1);
	if (!buf) {
		rc = errbuf_set(err, -ENOMEM, "out of memory reading '%s'", path);
		goto out;
	}
	while (done < size) {
		ssize_t n = read(fd, buf + done, size - done);

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
