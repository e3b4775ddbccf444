/* SPDX-License-Identifier: MIT */
/*
 * perfvisor snapshot files (docs/snapshot.md): the state file's writer
 * and parser, and the memory file's I/O. Pure of KVM and of the VM's
 * threads.
 */
#ifndef PERFVISOR_SNAPFILE_H
#define PERFVISOR_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/devices.h"
#include "machine/machine.h"
#include "perfvisor/bootinfo.h"
#include "pmu/pmu.h"
#include "util/util.h"

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

#endif
