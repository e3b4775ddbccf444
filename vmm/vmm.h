/* SPDX-License-Identifier: MIT */
/*
 * perfvisor VMM core: the bus, guest memory, the ELF loader, the command
 * line, and the VM itself (KVM setup, vCPU threads, run loop, stop).
 * main.c only parses arguments and composes these.
 */
#ifndef PERFVISOR_VMM_H
#define PERFVISOR_VMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "devices/devices.h"
#include "perfvisor/bootinfo.h"
#include "pmu/pmu.h"
#include "util/util.h"

/* ---- exit statuses of `perfvisor run` (docs/boot.md) ------------------- */
#define PV_EXIT_USAGE 2		/* bad command line */
#define PV_EXIT_GUEST_CRASH 123 /* triple fault, KVM internal error, unhandled exit */
#define PV_EXIT_TIMEOUT 124	/* --timeout expired */
#define PV_EXIT_VMM_ERROR 125	/* perfvisor or KVM failed (bad kernel file, no /dev/kvm, ...) */
#define PV_EXIT_SIGNAL_BASE 128 /* + signal number for SIGINT/SIGTERM */

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
struct loader_linux {
	uint8_t hdr[128]; /* the setup header as in the file (hdr_len bytes), for boot_params */
	uint32_t hdr_len;
	uint16_t version;	  /* boot protocol, e.g. 0x020f */
	uint64_t entry64;	  /* the 64-bit entry */
	uint64_t kernel_end;	  /* the kernel may use RAM up to here (init_size) */
	uint32_t initrd_addr_max; /* highest address the initrd may end at (inclusive) */
	uint32_t cmdline_size;	  /* longest command line, without the NUL */
	struct loader_info info;
};

/* "HdrS" at 0x202: a Linux kernel with a setup header. */
bool loader_is_bzimage(const void *image, size_t size);
/*
 * Check a bzImage's setup header (boot protocol >= 2.12, loaded high, a
 * 64-bit entry) and copy its protected-mode part to 1 MiB. 0 or
 * -ENOEXEC/-E2BIG with a message.
 */
int loader_load_linux(const void *image, size_t size, struct gmem *mem, struct loader_linux *out,
		      struct errbuf *err);

/* ---- boot protocols (boot.c, boot_info.c, acpi.c) ------------------------- */
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
};

struct boot_result {
	enum boot_proto proto;
	char why[256]; /* for --verbose: which protocol and why */
	struct loader_info kernel;
	struct boot_cpu cpu;
	unsigned nr_modules;
	uint64_t mod_gpa[BOOT_MAX_MODULES], mod_len[BOOT_MAX_MODULES];
};

/*
 * Read the kernel, find its format (bzImage, multiboot v1, PVH note, ELF64:
 * in that order, as QEMU's -kernel), load it and its modules, and for all
 * but ELF64 write the protocol's boot information, the memory map and the
 * ACPI tables (docs/boot.md). ELF64's boot area is x86_setup_boot_area()'s.
 * Returns 0 or -errno with one line naming the file and the problem.
 * Pure (guest memory only); setup thread.
 */
int boot_load(struct gmem *mem, const struct boot_config *cfg, struct boot_result *out, struct errbuf *err);

/* The identity map of the first 4 GiB with 2 MiB pages at pml4 (4 pages of PDs follow the PDPT). */
void boot_identity_map(struct gmem *mem, uint64_t pml4);

/*
 * ACPI tables for nr_cpus CPUs (APIC id = index) and the IOAPIC: RSDP
 * (revision 0) at `rsdp`, then RSDT and MADT, all inside [rsdp, end).
 * Returns 0 or -ENOSPC. Pure.
 */
int acpi_build(struct gmem *mem, uint64_t rsdp, uint64_t end, unsigned nr_cpus);

/* ---- configuration and command line ------------------------------------ */
/* --seccomp: the per-thread system call filters (docs/security.md). */
enum seccomp_mode {
	SECCOMP_ON = 0, /* the default: a denied call stops the VM with a message */
	SECCOMP_LOG,	/* allow, but the kernel logs what a filter would deny (audit, dmesg) */
	SECCOMP_OFF,
};

enum console_kind {
	CONSOLE_STDIO,
	CONSOLE_FILE,
	CONSOLE_NONE
};

struct vm_config {
	const char *kernel;
	unsigned nr_cpus;
	uint64_t mem_size;
	const char *cmdline;
	enum console_kind console;
	const char *console_path;  /* CONSOLE_FILE */
	bool stdin_input;	   /* feed stdin to the UART */
	uint64_t timeout_ms;	   /* 0 = none */
	const char *api_socket;	   /* control socket path, NULL = none */
	const char *name;	   /* the VM's name (stats header, Prometheus label), NULL = none */
	bool pmu;		   /* the paravirtual PMU (default on) */
	enum seccomp_mode seccomp; /* --seccomp on|log|off (default on) */
	const char *initrd[BOOT_MAX_MODULES]; /* --initrd values, in order */
	unsigned nr_initrd;
	unsigned cpuid_hide; /* CPUID_HIDE_* bits (--cpuid-hide) */
	bool verbose;
	const char *restore;	    /* --restore DIR: continue a snapshot instead of booting a kernel */
	bool restore_read;	    /* --restore-memory read: read the memory file in (default: map it) */
	bool restore_no_check;	    /* --no-memory-check: skip the memory file's checksum */
	struct prof_spec prof;	    /* --profile (prof.n == 0: off; a restore takes the snapshot's) */
	const char *profile_output; /* --profile-output DIR, NULL = perfvisor-profile.PID */
	const char *symbols;	    /* --symbols FILE, NULL = the kernel's own symbol table */
};

#define VM_DEFAULT_CPUS 1U
#define VM_DEFAULT_MEM (64ULL << 20)

/*
 * Parse `perfvisor run` arguments (argv[0] is "run"). Returns 0, 1 if help
 * was printed to `out`, or -EINVAL with one clear line in err.
 */
int cli_parse_run(int argc, char **argv, struct vm_config *cfg, struct errbuf *err, FILE *help_out);
/* Usage text of `perfvisor run`. */
extern const char cli_run_usage[];

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
#define CPUID_HIDE_XSAVE (1u << 0) /* XSAVE, OSXSAVE, leaf 0xD, and what needs them (AVX...) */
#define CPUID_HIDE_CX16 (1u << 1)  /* CMPXCHG16B */
/* Parse "xsave,cmpxchg16b" into CPUID_HIDE_* bits: 0, or -EINVAL with the bad name in err. */
int cpuid_parse_hide(const char *list, unsigned *mask, struct errbuf *err);
/* Clear the features of `mask` in c (after cpuid_build). Pure. */
void cpuid_hide(struct kvm_cpuid2 *c, unsigned mask);
/* The vendor in leaf 0 is AMD (or Hygon, its licensee). */
bool cpuid_is_amd(const struct kvm_cpuid2 *c);
/* The entry for (function, index) as the CPU would answer it, or NULL. */
const struct kvm_cpuid_entry2 *cpuid_find(const struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

/* ---- snapshot state file (snapfmt.c, docs/snapshot.md) --------------------- */
/*
 * A snapshot directory holds SNAP_STATE_FILE, a flattened device tree with
 * every piece of state but guest RAM, and SNAP_MEMORY_FILE, the raw RAM.
 * struct snap is the state file parsed: snap_parse() validates a whole
 * file before anything uses it, snap_build() writes one. Pure (no KVM);
 * byte-array fields point into the parsed blob or the caller's memory.
 */
#define SNAP_FORMAT 1U /* the state file format this perfvisor writes and reads up to */
#define SNAP_STATE_FILE "state.fdt"
#define SNAP_MEMORY_FILE "memory"
#define SNAP_MAX_STATE_SIZE (64U << 20) /* a state file larger than this is refused */
#define SNAP_MAX_MSRS 1024U
#define SNAP_MAX_CPUID 1024U
#define SNAP_MAX_XSAVE (64U << 10)
#define SNAP_MAX_STATS 512U /* statistics fields per record */
#define SNAP_MAX_STRING 4096U

struct snap_bytes {
	const void *p;
	uint32_t len;
};

struct snap_stat {
	const char *name; /* a statistics field name (docs/stats-abi.md) */
	uint64_t value;
};

struct snap_stats {
	unsigned n;
	struct snap_stat s[SNAP_MAX_STATS];
};

struct snap_vcpu {
	/* KVM's own structures, as the KVM_GET_* ioctls return them (x86-64, little-endian). */
	struct snap_bytes regs, sregs, xsave, xcrs, debugregs, lapic, events;
	struct snap_bytes msrs;	 /* struct kvm_msr_entry[], 16 bytes each */
	struct snap_bytes cpuid; /* struct kvm_cpuid_entry2[], 40 bytes each, as set */
	uint32_t mp_state;
	struct pmu_vcpu_state pmu; /* when the machine has the PV PMU */
	struct snap_stats stats;   /* cumulative statistics fields by name */
};

struct snap {
	uint32_t format;
	/* machine */
	uint32_t nr_vcpus;
	uint64_t mem_size;
	bool pmu;
	uint32_t cpuid_hide; /* CPUID_HIDE_* (optional: 0 when absent) */
	uint32_t host_kind, tsc_khz;
	uint64_t host_flags, created_ns; /* CLOCK_REALTIME at the snapshot */
	const char *kernel, *cmdline, *writer;
	/* host-side profiling (optional: "" when absent or off): the --profile spec, the --symbols file */
	const char *profile, *profile_symbols;
	/* memory file */
	uint64_t mem_checksum; /* XXH3-64 of the memory file */
	/* VM-wide KVM state */
	uint64_t clock;
	uint32_t clock_flags;
	struct snap_bytes pit, pic_master, pic_slave, ioapic;
	/* devices */
	struct serial_state serial;
	struct testdev_counters testdev;
	struct i8042_state i8042;
	struct fwcfg fwcfg; /* selector and offset (optional: 0 when absent); the items follow the machine */
	/* PV PMU capabilities the guest was offered */
	struct pmu_caps pmu_caps;
	/* statistics: the VM record's cumulative fields */
	struct snap_stats vm_stats;
	struct snap_vcpu vcpu[PV_MAX_CPUS];
};

/*
 * Write s as a state file into a malloc'ed buffer (*blob, *len), with its
 * checksum. Returns 0 or -errno with a message.
 */
int snap_build(const struct snap *s, void **blob, size_t *len, struct errbuf *err);
/*
 * Parse and validate a whole state file: structure (fdt_check_full), the
 * checksum, the format version, every node and property the format needs
 * with its exact size, counts and ranges, device and PMU states a real one
 * could be in. Unknown properties and nodes are ignored (a newer writer's
 * additions). s then points into blob. Returns 0 or -EINVAL/-EPROTO/
 * -ENOTSUP (newer format) with one clear line naming the problem.
 */
int snap_parse(const void *blob, size_t len, struct snap *s, struct errbuf *err);
/* XXH3-64 of a buffer (the checksum the format uses), and the streaming form. */
uint64_t snap_hash(const void *p, size_t len);

/* ---- snapshot files (snapio.c) --------------------------------------------- */
/*
 * Write or read `len` bytes of buf to/from fd (offset 0) through io_uring,
 * falling back to pwrite/pread where io_uring is unavailable; *used_uring
 * says which. Only the data ranges of seek_fd (SEEK_DATA/SEEK_HOLE: the
 * guest's memfd when writing, the sparse file when reading; -1 for all),
 * and with `resident` also the pages of buf that are in memory (mincore:
 * a restored guest's copy-on-write RAM), move; holes stay holes in the
 * file and zeros in buf, so RAM the guest never touched costs neither
 * disk nor memory. With checksum, also the XXH3-64 of all len bytes. 0,
 * -ENOSPC (a full disk), -EIO (a short file) or another -errno. Any thread.
 */
int snapio_memory(int fd, void *buf, uint64_t len, bool write, int seek_fd, bool resident, uint64_t *checksum,
		  bool *used_uring);
/* XXH3-64 of the first len bytes of fd (pread, buffered). 0 or -errno. */
int snapio_hash_file(int fd, uint64_t len, uint64_t *checksum);
/* Read a whole regular file of at most max bytes into a malloc'ed buffer. 0 or -errno with a message. */
int snapio_read_file(const char *path, size_t max, void **out, size_t *len, struct errbuf *err);

/*
 * Writing a snapshot directory atomically: snapio_begin() creates a
 * temporary directory beside `dir` (which must not exist yet);
 * snapio_write_memory() writes and fsyncs the memory file (io_uring) and
 * returns its checksum; snapio_finish() writes and fsyncs the state file,
 * renames the directory to `dir` and fsyncs the parent. snapio_abort()
 * (always safe to call) removes an unfinished one: whatever fails, a full
 * disk included, no half snapshot is left that looks valid.
 */
struct snapio_dir {
	char dir[4096], parent[4096], tmp[4160];
	int dfd;
	bool done, used_uring;
	uint64_t memory_ns; /* writing and syncing the memory file */
};

int snapio_begin(struct snapio_dir *d, const char *dir, struct errbuf *err);
int snapio_write_memory(struct snapio_dir *d, const void *mem, uint64_t len, int seek_fd, bool resident,
			uint64_t *checksum, struct errbuf *err);
int snapio_finish(struct snapio_dir *d, const void *state, size_t state_len, struct errbuf *err);
void snapio_abort(struct snapio_dir *d);

/* `perfvisor snapshot ...` and `perfvisor snapshot-info ...` (snapcmd.c): argv[0] is the command. */
int snap_cmd_snapshot(int argc, char **argv);
int snap_cmd_info(int argc, char **argv);

/* ---- control socket requests (api_parse.c, docs/api.md) -------------------- */
enum api_cmd {
	API_BAD = 0,
	API_QUERY,
	API_STATS_FD,
	API_PAUSE,
	API_RESUME,
	API_SNAPSHOT,
	API_PROFILE,
};

struct api_request {
	enum api_cmd cmd;
	char dir[4096];	 /* API_SNAPSHOT: absolute */
	bool stop_after; /* API_SNAPSHOT: "then":"stop" */
	unsigned top;	 /* API_PROFILE: rows (default 10, 1-100) */
};

typedef struct json_t json_t;
/*
 * Parse one request line. Returns NULL and fills *r, or the error reply
 * for the client (r->cmd is then API_BAD). Never fails to give one of the
 * two. Pure; any thread.
 */
json_t *api_parse_request(const char *line, struct api_request *r);
/* {"ok":false,"error":...}, always valid UTF-8 (bytes that are not are replaced by '?'). */
json_t *api_error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the VM --------------------------------------------------------------- */
struct vm;

/*
 * Create and fully configure a VM from cfg (open KVM, memory, load the
 * kernel, devices, vCPUs), ready to run. Returns 0 or -errno with a message.
 */
int vm_create(struct vm **out, const struct vm_config *cfg, struct errbuf *err);
/*
 * The signals that stop a VM cleanly, with a message and exit status 128+N:
 * SIGINT, SIGTERM, SIGHUP (a closed terminal), SIGQUIT, SIGALRM, SIGUSR2.
 * They must be blocked in every thread before vm_create (main.c does).
 * SIGUSR1 is perfvisor's own vCPU kick: from outside it changes nothing.
 */
void vm_stop_signals(sigset_t *s);
/*
 * Run until the guest finishes, a stop signal (vm_stop_signals) or the timeout.
 * Returns the exit status (>= 0, see PV_EXIT_*) and a reason in err.
 * Main thread only; the stop signals must be blocked in all threads.
 */
int vm_run(struct vm *vm, struct errbuf *why);
/* Join, close and free everything. NULL is a no-op. */
void vm_destroy(struct vm *vm);

#endif
