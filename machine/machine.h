/* SPDX-License-Identifier: MIT */
/*
 * perfvisor machine model: what a VM is made of before any vCPU runs, as
 * pure code that knows nothing of threads or KVM_RUN: guest memory, the
 * bus that dispatches PIO/MMIO/MSR ranges, each boot format's loader and
 * boot information, ACPI tables, CPUID and the host kind.
 */
#ifndef PERFVISOR_MACHINE_H
#define PERFVISOR_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perfvisor/bootinfo.h"
#include "util/util.h"

/* ---- bus ---------------------------------------------------------------- */
/*
 * Dispatches guest accesses in three address spaces to the device that
 * registered the range. Ranges are registered during setup and must not
 * overlap; bus_freeze() sorts them and forbids further registration, so
 * dispatch from many vCPU threads needs no lock.
 */
enum bus_space {
	BUS_PIO,
	BUS_MMIO,
	BUS_MSR,
	BUS_NR_SPACES
};

struct bus_access {
	uint64_t addr;	 /* port, guest-physical address or MSR index */
	uint64_t offset; /* addr - range base */
	uint32_t len;	 /* bytes in data (1, 2, 4 or 8) */
	bool is_write;
	uint8_t *data; /* in for writes, out for reads */
	unsigned vcpu; /* index of the accessing vCPU */
	int range;     /* out: id of the range that handled it, -1 if none */
};

/* Returns 0 if handled, -errno otherwise (for MSRs a negative return means #GP). */
typedef int (*bus_fn)(void *opaque, struct bus_access *a);

struct bus_range {
	uint64_t base, len;
	bus_fn fn;
	void *opaque;
	const char *name;
	unsigned id; /* registration order within its space: 0, 1, ... (stable across freeze) */
};

struct bus {
	struct bus_range *ranges[BUS_NR_SPACES];
	size_t nr[BUS_NR_SPACES], cap[BUS_NR_SPACES];
	bool frozen;
};

void bus_init(struct bus *b);
void bus_fini(struct bus *b);
/*
 * Register [base, base+len) in `space`. Returns 0, -EINVAL (len 0 or the
 * range wraps), -EEXIST (overlaps a registered range; err names both),
 * -EBUSY (bus frozen), -ENOMEM. Setup thread only.
 */
int bus_register(struct bus *b, enum bus_space space, uint64_t base, uint64_t len, bus_fn fn, void *opaque,
		 const char *name, struct errbuf *err);
/* Sort and freeze. Setup thread, before the first KVM_RUN. */
void bus_freeze(struct bus *b);
/* The range containing addr, or NULL. Any thread once frozen. */
const struct bus_range *bus_find(const struct bus *b, enum bus_space space, uint64_t addr);
/* Find and call the handler (a->offset and a->range are filled in). -ENOENT if no device. */
int bus_dispatch(const struct bus *b, enum bus_space space, struct bus_access *a);
/* Name of a space for messages ("I/O port", "MMIO", "MSR"). */
const char *bus_space_name(enum bus_space space);

/* ---- guest memory ------------------------------------------------------- */
#define GMEM_MIN_SIZE (4ULL << 20) /* 4 MiB */
#define GMEM_MAX_SIZE (3ULL << 30) /* 3 GiB: RAM stays below the 32-bit MMIO hole */
#define GMEM_ALIGN 4096ULL

/* Guest RAM at gpa 0, backed by a memfd (or a restored snapshot's file, privately). */
struct gmem {
	int fd;	    /* the memfd, -1 for a private file mapping */
	int src_fd; /* the file of a private mapping (its holes are zero RAM), else -1 */
	uint8_t *hva;
	uint64_t size;
};

/* Check a requested RAM size: 0 or -EINVAL/-ERANGE with a message. */
int gmem_check_size(uint64_t size, struct errbuf *err);
/* Create zeroed RAM of `size` bytes. Returns 0 or -errno with a message. */
int gmem_init(struct gmem *m, uint64_t size, struct errbuf *err);
/*
 * RAM of `size` bytes mapped privately (copy-on-write) from a file, e.g. a
 * snapshot's memory file: restore without reading it all first. The file
 * is kept open (m->src_fd: its hole map tells a later snapshot which pages
 * are still zero); m->fd stays -1. Returns 0 or -errno with a message.
 */
int gmem_init_private(struct gmem *m, int fd, uint64_t size, struct errbuf *err);
void gmem_fini(struct gmem *m);
/* Host pointer for [gpa, gpa+len) if it lies entirely in RAM, else NULL. Any thread. */
void *gmem_hva(const struct gmem *m, uint64_t gpa, uint64_t len);
/*
 * Fill [gpa, gpa+len), which must lie in RAM (gmem_hva's check), with
 * src's bytes, or with zeros. Through the memfd where there is one
 * (pwrite, and a punched hole for the zeros' whole pages): the kernel
 * fills the pages without a page fault of ours each, and fresh RAM needs
 * no zeroing; else through the mapping. For loading a guest, before its
 * vCPUs run: the setup thread.
 */
void gmem_write(struct gmem *m, uint64_t gpa, const void *src, uint64_t len);
void gmem_zero(struct gmem *m, uint64_t gpa, uint64_t len);
/* Bytes of guest RAM resident in host memory (mincore), 0 if unknown. Any thread. */
uint64_t gmem_resident_bytes(const struct gmem *m);

/* ---- loaders (loader.c, loader_mb.c, loader_linux.c) ------------------- */
struct loader_info {
	uint64_t entry;
	uint64_t low, high; /* lowest and highest+1 guest-physical address loaded */
	unsigned nr_segments;
};

/* loader_load_elf_flags() flags */
#define LOADER_ELF_ANY_CLASS (1u << 0) /* ELF32 i386 too; the entry may be found by p_vaddr */
#define LOADER_ELF_NO_ENTRY (1u << 1)  /* the entry comes from elsewhere (a PVH note) */

/*
 * Load a static ELF64 x86-64 executable image (in memory) into guest RAM at
 * its segments' physical addresses. Segments must lie inside RAM at or above
 * `reserved_end`, and the entry point inside a loaded executable segment.
 * Returns 0 or -ENOEXEC/-EINVAL/-E2BIG with a message naming the problem.
 * Pure (guest memory only); any thread.
 */
int loader_load_elf(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
		    struct loader_info *info, struct errbuf *err);
/* The same with LOADER_ELF_* flags. */
int loader_load_elf_flags(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
			  unsigned flags, struct loader_info *info, struct errbuf *err);
/* Read `path` and load it with loader_load_elf(). -ENOENT/-EACCES/... with a message. */
int loader_load_elf_file(const char *path, struct gmem *mem, uint64_t reserved_end, struct loader_info *info,
			 struct errbuf *err);
/* The file starts with the ELF magic. */
bool loader_is_elf(const void *image, size_t size);
/*
 * The entry of an ELF's PVH note (XEN_ELFNOTE_PHYS32_ENTRY, in a PT_NOTE
 * segment): 1 and *entry, 0 if there is none (or the file is no readable
 * ELF), -ENOEXEC with a message if a note segment is malformed.
 */
int loader_elf_pvh_entry(const void *image, size_t size, uint64_t *entry, struct errbuf *err);
/*
 * Read a whole regular file of at most `max` bytes into a malloc'd buffer.
 * `what` names it in messages ("kernel", "initrd"). 0 or -errno with a message.
 */
/*
 * Open `what` at path for reading (O_NONBLOCK, plus `flags`, e.g.
 * O_NOFOLLOW) and check it is a regular file of at most max bytes: *fd and
 * *size, or -errno with one line naming it (the fd then closed). The checks
 * loader_read_file makes before it reads.
 */
int loader_open_file(const char *path, const char *what, uint64_t max, int flags, int *fd, size_t *size,
		     struct errbuf *err);
int loader_read_file(const char *path, const char *what, uint64_t max, void **buf, size_t *len,
		     struct errbuf *err);
/* Prefix err's message with "WHAT 'PATH': ". */
void loader_prefix_error(struct errbuf *err, const char *what, const char *path);

struct mb_header;
/* The first valid multiboot v1 header (magic, checksum) in the first 8 KiB: 1 and its offset, or 0. */
int loader_find_multiboot(const void *image, size_t size, struct mb_header *hdr, uint32_t *offset);
/*
 * Load a multiboot v1 kernel: by the header's addresses (a.out kludge) or by
 * the ELF's PT_LOADs, at or above 1 MiB. 0 or -ENOEXEC/-EINVAL/-E2BIG.
 */
int loader_load_multiboot(const void *image, size_t size, struct gmem *mem, struct loader_info *info,
			  struct errbuf *err);

/* What the Linux loader learnt from the setup header. */
/* A bzImage's payload format (machine/payload.c). */
enum loader_payload {
	LOADER_PAYLOAD_NONE,  /* no payload_length: not compressed, or an older header */
	LOADER_PAYLOAD_XZ,    /* liblzma */
	LOADER_PAYLOAD_GZIP,  /* zlib */
	LOADER_PAYLOAD_ZSTD,  /* libzstd */
	LOADER_PAYLOAD_OTHER, /* bzip2, lzma, lzo, lz4 or unknown: only the kernel's decompressor */
};

/*
 * The format of a payload from its first bytes; *name for messages ("xz",
 * "bzip2", "unknown", "none"). Pure.
 */
enum loader_payload loader_payload_format(const void *p, size_t len, const char **name);
/*
 * Decompress a payload of format XZ, GZIP or ZSTD into a new malloc()ed
 * buffer (*out, *out_len; the caller frees it) of at most `cap` bytes.
 * Returns 0, -E2BIG (more than `cap`), -ENOEXEC (truncated or corrupt
 * stream), -ENOMEM, with one line in err. The stream is read up to its end;
 * bytes after it (the kernel's size trailer) are ignored. Pure; any thread.
 */
int loader_decompress(enum loader_payload fmt, const void *in, size_t len, uint64_t cap, void **out,
		      size_t *out_len, struct errbuf *err);

/* Where a bzImage's payload is decompressed (--kernel-decompress). */
enum loader_decompress {
	LOADER_DECOMPRESS_AUTO,	 /* on the host when perfvisor decodes the format, else in the guest */
	LOADER_DECOMPRESS_HOST,	 /* on the host; an error when it cannot */
	LOADER_DECOMPRESS_GUEST, /* by the kernel's own decompressor (the bzImage's 64-bit entry) */
};

struct loader_linux {
	uint8_t hdr[128]; /* the setup header as in the file (hdr_len bytes), for boot_params */
	uint32_t hdr_len;
	uint16_t version;	  /* boot protocol, e.g. 0x020f */
	uint64_t entry64;	  /* the 64-bit entry */
	uint64_t kernel_end;	  /* the kernel may use RAM up to here (init_size) */
	uint32_t initrd_addr_max; /* highest address the initrd may end at (inclusive) */
	uint32_t cmdline_size;	  /* longest command line, without the NUL */
	bool host_decompressed;	  /* the payload's vmlinux loaded, entry64 = its startup_64 */
	char how[160];		  /* for --verbose: the payload and where it was decompressed */
	struct loader_info info;
	/* host_decompressed: that vmlinux (a profile reads its symbols), the caller's: loader_linux_fini() */
	void *vmlinux;
	size_t vmlinux_len;
	void (*vmlinux_release)(void *vmlinux, size_t len); /* how it goes: NULL = free() */
};

/*
 * The kernel cache (machine/kcache.c, docs/boot.md): the vmlinux of a
 * bzImage's payload kept in the directory `dir` under the payload's XXH3
 * (kcache_name: the file's name, computed once for both calls). kcache_get: 0 with the vmlinux (the
 * file mapped read-only, not read into a buffer: release it with
 * kcache_release; checked against its stored checksum, at most cap bytes),
 * or -ENOENT (not there; or damaged, and then removed). kcache_put: keep it (written whole, then renamed; the least
 * recently used of more than 4 removed); 0 or -errno. Both say what they
 * did in `why`; a failure only costs time. Main thread, before the guest runs.
 */
void kcache_name(const void *payload, size_t payload_len, char *name, size_t size);
int kcache_get(const char *dir, const char *name, uint64_t cap, void **vmlinux, size_t *len, char *why,
	       size_t whylen);
void kcache_release(void *vmlinux, size_t len);
int kcache_put(const char *dir, const char *name, const void *vmlinux, size_t len, char *why, size_t whylen);

/* "HdrS" at 0x202: a Linux kernel with a setup header. */
bool loader_is_bzimage(const void *image, size_t size);
/*
 * Check a bzImage's setup header (boot protocol >= 2.12, loaded high, a
 * 64-bit entry) and load it as `how` says: in the guest, its protected-mode
 * part copied to 1 MiB and entry64 the decompressor's 64-bit entry; on the
 * host, its payload decompressed (at most init_size and guest RAM) into the
 * ELF vmlinux, whose PT_LOAD segments go to their p_paddr (inside RAM, at or
 * above 1 MiB) and entry64 = its e_entry (startup_64). 0 or
 * -ENOEXEC/-E2BIG/-EINVAL/-ENOTSUP/-ENOMEM with a message. Pure.
 */
int loader_load_linux(const void *image, size_t size, struct gmem *mem, enum loader_decompress how,
		      struct loader_linux *out, struct errbuf *err);
/*
 * The same with the payload's vmlinux already decompressed (the kernel
 * cache's: `vmlinux`, len bytes, given back with release(vmlinux, len),
 * or free() when release is NULL), used instead of decoding the payload
 * when it goes to the host; ownership passes in either case (it ends in
 * out->vmlinux, or is released). Pure.
 */
int loader_load_linux_with(const void *image, size_t size, struct gmem *mem, enum loader_decompress how,
			   void *vmlinux, size_t len, void (*release)(void *, size_t),
			   struct loader_linux *out, struct errbuf *err);
/*
 * A bzImage's compressed payload, when perfvisor would decompress it on the
 * host as `how` says: true, with *payload and *len; else false. Pure.
 */
bool loader_linux_host_payload(const void *image, size_t size, enum loader_decompress how,
			       const void **payload, size_t *len);
/* Free what loader_load_linux() left the caller (the decompressed vmlinux). */
void loader_linux_fini(struct loader_linux *lx);
/* Give a vmlinux back: release(vmlinux, len), or free() when release is NULL. NULL is harmless. */
void loader_vmlinux_release(void *vmlinux, size_t len, void (*release)(void *, size_t));
/*
 * A bzImage's vmlinux: its payload (xz, gzip or zstd) decompressed into a new
 * malloc()ed buffer of at most cap bytes (and the kernel's init_size). 0,
 * -ENOEXEC (not a bzImage), -ENOTSUP (a payload only the kernel's own
 * decompressor reads), or the decoder's error, with one line. Pure.
 */
int loader_linux_vmlinux(const void *image, size_t size, uint64_t cap, void **elf, size_t *len,
			 struct errbuf *err);

/* ---- host kind (host.c) ---------------------------------------------------- */
/* What kind of KVM host this is; the guest gets it in its boot information. */
struct host_info {
	uint32_t kind;	/* enum pv_host_kind */
	uint64_t flags; /* PV_HOST_* bits */
};

/*
 * Detect the host kind from `root`/sys/module and `root`/proc/cpuinfo (root
 * "" for this machine). Never fails: what cannot be read is PV_HOST_UNKNOWN.
 */
void host_detect(const char *root, struct host_info *h);
/* "kvm_intel", "kvm_amd", "kvm_pvm" or "unknown". */
const char *host_kind_name(uint32_t kind);
/* One line for people, e.g. "kvm_pvm (nested: the host is itself a VM)"; snprintf's return. */
int host_describe(const struct host_info *h, char *buf, size_t len);

/* ---- boot protocols (boot.c, boot_info.c, boot_elf64.c, memmap.c, acpi.c) --- */
enum boot_proto {
	BOOT_PROTO_ELF64,     /* perfvisor's own contract (docs/boot.md) */
	BOOT_PROTO_MULTIBOOT, /* multiboot v1 */
	BOOT_PROTO_PVH,	      /* ELF with a Xen PVH entry note */
	BOOT_PROTO_LINUX,     /* Linux bzImage, 64-bit boot protocol */
};

/* "elf64", "multiboot", "pvh", "linux". */
const char *boot_proto_name(enum boot_proto p);

#define BOOT_MAX_MODULES 16

/* The boot vCPU's state at entry, as the protocol defines it (applied by x86.c). */
struct boot_cpu {
	bool long_mode; /* else 32-bit protected mode, paging off */
	uint64_t rip, rsp, rax, rbx, rsi, rdi;
	uint16_t cs, ds, tr; /* selectors in the entry GDT */
	uint64_t gdt_gpa, cr3;
	uint16_t gdt_limit;
};

struct boot_config {
	const char *kernel;
	const char *cmdline;
	const char *const *modules; /* --initrd values: "PATH [ARGS...]" */
	unsigned nr_modules;
	unsigned nr_cpus;
	const struct acpi_mmio_dev *acpi_devs; /* the MMIO devices the DSDT lists (none: NULL, 0) */
	unsigned nr_acpi_devs;
	enum loader_decompress decompress; /* a bzImage's payload: where it is decompressed */
	const char *kernel_cache;	   /* the kernel cache's directory; NULL: none (--kernel-cache) */
};

struct boot_result {
	enum boot_proto proto;
	char why[256];	 /* for --verbose: which protocol and why */
	char cache[600]; /* for --verbose: what the kernel cache did ("": not used) */
	struct loader_info kernel;
	struct boot_cpu cpu;
	unsigned nr_modules;
	uint64_t mod_gpa[BOOT_MAX_MODULES], mod_len[BOOT_MAX_MODULES];
	/* A bzImage decompressed on the host: its vmlinux (a profile's symbols), until boot_result_fini() */
	void *vmlinux;
	size_t vmlinux_len;
	void (*vmlinux_release)(void *vmlinux, size_t len); /* NULL: free() */
};

/*
 * Read the kernel, find its format (bzImage, multiboot v1, PVH note, ELF64:
 * in that order, as QEMU's -kernel), load it and its modules, and for all
 * but ELF64 write the protocol's boot information, the memory map and the
 * ACPI tables (docs/boot.md). ELF64's boot area is boot_write_elf64()'s.
 * Returns 0 or -errno with one line naming the file and the problem.
 * Pure (guest memory only); setup thread.
 */
int boot_load(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out, struct errbuf *err);
/* Free what boot_load() kept in out (the vmlinux); again is harmless. */
void boot_result_fini(struct boot_result *out);

/* What perfvisor's own ELF64 contract hands the guest besides guest memory (docs/boot.md). */
struct boot_elf64 {
	unsigned nr_cpus;
	const char *cmdline;
	uint32_t tsc_khz; /* 0 if KVM does not know it */
	const struct host_info *host;
};

/*
 * The ELF64 contract's boot area: the flat GDT, the identity map, struct
 * pv_bootinfo and the command line in the reserved low area. Returns 0,
 * or -EINVAL with a message (the command line is too long). Pure.
 */
int boot_write_elf64(struct gmem *mem, const struct boot_elf64 *b, struct errbuf *err);

/* An MMIO device the DSDT describes, e.g. a virtio-mmio transport ("LNRO0005"). */
struct acpi_mmio_dev {
	const char *hid; /* _HID: an ACPI or PNP id, 1-8 letters and digits */
	uint32_t uid;	 /* _UID */
	uint64_t base;	 /* Memory32Fixed: base + len must be within 4 GiB */
	uint32_t len;
	uint32_t gsi; /* its interrupt: edge-triggered, active high */
};

#define ACPI_MAX_MMIO_DEVS 4096 /* Device names D000-DFFF */

/*
 * ACPI tables for nr_cpus CPUs (APIC id = index), the IOAPIC, the PC's
 * fixed hardware and `nr_devs` MMIO devices: RSDP (revision 0) at `rsdp`,
 * then RSDT, MADT, FACS, FADT (full, not hardware-reduced: PM1a blocks,
 * PM timer and reset register at PV_LB_ACPI_*, SCI on IRQ 9, no 8042, a
 * CMOS RTC with century) and DSDT (\_S5 and one Device each in \_SB),
 * all inside [rsdp, end). Returns 0, -ENOSPC, or -EINVAL for a device
 * entry the tables cannot hold (docs/boot.md "ACPI tables"). Pure.
 */
int acpi_build(struct gmem *mem, uint64_t rsdp, uint64_t end, unsigned nr_cpus,
	       const struct acpi_mmio_dev *devs, unsigned nr_devs);

/* ---- AML byte-code writer (aml.c) ------------------------------------------ */
/* Output into buf[0, cap); `failed` is set, and stays, on overflow or a bad name. */
struct aml {
	uint8_t *buf;
	size_t len, cap;
	bool failed;
};

void aml_init(struct aml *a, void *buf, size_t cap);
void aml_byte(struct aml *a, uint8_t b);
void aml_bytes(struct aml *a, const void *p, size_t n);
/* A NameString: "\\_SB_.D000", "_HID"; segments of 1-4 of A-Z, 0-9, _ (padded with _). 0 or -EINVAL. */
int aml_name(struct aml *a, const char *path);
/* The shortest integer encoding: Zero, One, Byte, Word, DWord or QWord. */
void aml_integer(struct aml *a, uint64_t v);
void aml_string(struct aml *a, const char *s);
/* Name(NAME, ...): the caller writes the value next. 0 or -EINVAL. */
int aml_name_decl(struct aml *a, const char *name);
/*
 * Terms with a PkgLength: open one (its start is returned), write its
 * contents, then aml_close(start) inserts the length. They nest.
 */
size_t aml_open(struct aml *a, uint8_t op);
void aml_close(struct aml *a, size_t start);
size_t aml_scope(struct aml *a, const char *name);
size_t aml_device(struct aml *a, const char *name);
size_t aml_package(struct aml *a, uint8_t nr_elements);
/* Buffer() { the n bytes at p } */
void aml_buffer(struct aml *a, const void *p, size_t n);

/* ---- CPUID (cpuid.c) ------------------------------------------------------ */
struct kvm_cpuid2;
struct kvm_cpuid_entry2;

/* Entries cpuid_build may add to the supported list (three subleaves of 0xB and 0x1F). */
#define CPUID_EXTRA_ENTRIES 6

/*
 * The CPUID of vCPU `index` of `n`: KVM's supported list `sup` with
 * perfvisor's topology (one package of n cores, one thread per core, APIC
 * id = index): leaf 1 (APIC id, count, HTT, hypervisor bit), leaves 0xB and
 * 0x1F (if listed: replaced by SMT, core and end subleaves), leaf 4 on Intel
 * (cores per package), 0x80000008 ECX on AMD (core count, APIC id size),
 * 0x8000001E (extended APIC id). `out` has room for `cap` entries. Returns 0
 * or -ENOSPC. Pure; any thread.
 */
int cpuid_build(const struct kvm_cpuid2 *sup, unsigned index, unsigned n, struct kvm_cpuid2 *out,
		unsigned cap);
/*
 * --cpuid-hide: features a host cannot run in guest ring 0 (kvm_pvm's
 * emulator lacks them), hidden so a kernel does not use them.
 */
#define CPUID_HIDE_XSAVE (1u << 0)	  /* XSAVE, OSXSAVE, leaf 0xD, and what needs them (AVX...) */
#define CPUID_HIDE_CX16 (1u << 1)	  /* CMPXCHG16B */
#define CPUID_HIDE_TSC_DEADLINE (1u << 2) /* the LAPIC timer's TSC-deadline mode (not added) */
#define CPUID_HIDE_PMU_ACK (1u << 3)	  /* the PV PMU's PV_PMU_FEAT_ACK (PMI_ACK, RELOAD): as before it */
/* Parse "xsave,cmpxchg16b,tsc-deadline" into CPUID_HIDE_* bits: 0, or -EINVAL with the bad name in err. */
int cpuid_parse_hide(const char *list, unsigned *mask, struct errbuf *err);
/* Clear the features of `mask` in c (after cpuid_build). Pure. */
void cpuid_hide(struct kvm_cpuid2 *c, unsigned mask);
/*
 * Features KVM offers but leaves out of KVM_GET_SUPPORTED_CPUID, which the VMM
 * adds when KVM has the capability (api.rst): a new VM gets every one the host
 * has, a restored one those its snapshot recorded (none for an older
 * snapshot), so a guest never sees its CPUID change under it.
 */
#define CPUID_ADD_TSC_DEADLINE (1u << 0) /* leaf 1 ECX[24] (KVM_CAP_TSC_DEADLINE_TIMER) */
/* The CPUID_ADD_* features a --cpuid-hide mask (CPUID_HIDE_*) takes away. Pure. */
unsigned cpuid_add_hidden(unsigned hide);
/* Set the features of `mask` (CPUID_ADD_*) in c (after cpuid_build). Pure. */
void cpuid_add(struct kvm_cpuid2 *c, unsigned mask);
/* The vendor in leaf 0 is AMD (or Hygon, its licensee). */
bool cpuid_is_amd(const struct kvm_cpuid2 *c);
/* The entry for (function, index) as the CPU would answer it, or NULL. */
const struct kvm_cpuid_entry2 *cpuid_find(const struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

#endif
