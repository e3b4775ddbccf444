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
#include <stdio.h>

#include "perfvisor/bootinfo.h"
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

/* Guest RAM at gpa 0, backed by a memfd (so snapshot and stats can share it). */
struct gmem {
	int fd;
	uint8_t *hva;
	uint64_t size;
};

/* Check a requested RAM size: 0 or -EINVAL/-ERANGE with a message. */
int gmem_check_size(uint64_t size, struct errbuf *err);
/* Create zeroed RAM of `size` bytes. Returns 0 or -errno with a message. */
int gmem_init(struct gmem *m, uint64_t size, struct errbuf *err);
void gmem_fini(struct gmem *m);
/* Host pointer for [gpa, gpa+len) if it lies entirely in RAM, else NULL. Any thread. */
void *gmem_hva(const struct gmem *m, uint64_t gpa, uint64_t len);

/* ---- loader ------------------------------------------------------------- */
struct loader_info {
	uint64_t entry;
	uint64_t low, high; /* lowest and highest+1 guest-physical address loaded */
	unsigned nr_segments;
};

/*
 * Load a static ELF64 x86-64 executable image (in memory) into guest RAM at
 * its segments' physical addresses. Segments must lie inside RAM at or above
 * `reserved_end`, and the entry point inside a loaded executable segment.
 * Returns 0 or -ENOEXEC/-EINVAL/-E2BIG with a message naming the problem.
 */
int loader_load_elf(const void *image, size_t size, struct gmem *mem, uint64_t reserved_end,
		    struct loader_info *info, struct errbuf *err);
/* Read `path` and load it as above. -ENOENT/-EACCES/... with a message. */
int loader_load_elf_file(const char *path, struct gmem *mem, uint64_t reserved_end, struct loader_info *info,
			 struct errbuf *err);

/* ---- configuration and command line ------------------------------------ */
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
	const char *console_path; /* CONSOLE_FILE */
	bool stdin_input;	  /* feed stdin to the UART */
	uint64_t timeout_ms;	  /* 0 = none */
	const char *api_socket;	  /* control socket path, NULL = none */
	const char *name;	  /* the VM's name (stats header, Prometheus label), NULL = none */
	bool pmu;		  /* the paravirtual PMU (default on) */
	bool verbose;
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
/* The vendor in leaf 0 is AMD (or Hygon, its licensee). */
bool cpuid_is_amd(const struct kvm_cpuid2 *c);
/* The entry for (function, index) as the CPU would answer it, or NULL. */
const struct kvm_cpuid_entry2 *cpuid_find(const struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

/* ---- the VM --------------------------------------------------------------- */
struct vm;

/*
 * Create and fully configure a VM from cfg (open KVM, memory, load the
 * kernel, devices, vCPUs), ready to run. Returns 0 or -errno with a message.
 */
int vm_create(struct vm **out, const struct vm_config *cfg, struct errbuf *err);
/*
 * Run until the guest finishes, a signal (SIGINT/SIGTERM) or the timeout.
 * Returns the exit status (>= 0, see PV_EXIT_*) and a reason in err.
 * Main thread only; SIGINT/SIGTERM must be blocked in all threads.
 */
int vm_run(struct vm *vm, struct errbuf *why);
/* Join, close and free everything. NULL is a no-op. */
void vm_destroy(struct vm *vm);

#endif
