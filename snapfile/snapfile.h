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

#include "perfvisor/bootinfo.h"
#include "util/util.h"

/* ---- a component's saved state: its node, described by a table -------------- */
/*
 * Every component that has state of its own (a device, the PV PMU, the
 * statistics) describes it once, as a struct snap_part: the node's name in
 * the state file and a table of fields, each a property at an offset of
 * the component's state struct. The writer and the parser walk the table;
 * nothing in snapfile/ knows any component. Pure data: no KVM, no files.
 */
enum snap_ftype {
	SNAP_F_U8,    /* uint8_t, written as a 32-bit cell */
	SNAP_F_U16,   /* uint16_t, as a 32-bit cell */
	SNAP_F_U32,   /* uint32_t */
	SNAP_F_BOOL,  /* bool, as a 32-bit cell: 0 or 1 */
	SNAP_F_U64,   /* uint64_t, as a 64-bit value */
	SNAP_F_U64S,  /* uint64_t[count], as count 64-bit cells */
	SNAP_F_BYTES, /* uint8_t[count], of which the uint16_t at len_off says how many are used */
	SNAP_F_NAMED, /* the whole node: every property a statistics field name and a u64 (struct snap_stats) */
};

struct snap_field {
	const char *name; /* the property (unused for SNAP_F_NAMED) */
	uint8_t type;	  /* enum snap_ftype */
	uint16_t off;	  /* of the value in the state struct */
	uint16_t count;	  /* SNAP_F_U64S: elements; SNAP_F_BYTES: capacity */
	uint16_t len_off; /* SNAP_F_BYTES: offset of its uint16_t length */
	uint64_t max;	  /* SNAP_F_U8/U16/U32: the largest value the parser accepts */
	bool optional;	  /* added to its part later: absent (an older writer's file) reads as 0 */
};

/* One field of `st`, a struct of type T: SNAP_FIELD(T, "name", SNAP_F_U32, member, max). */
#define SNAP_FIELD(T, prop, type, member, max)                   \
	{                                                        \
		(prop), (type), offsetof(T, member), 0, 0, (max) \
	}
/* A field added to a part after the part's first version: 0 when an older snapshot lacks it. */
#define SNAP_FIELD_OPT(T, prop, type, member, max)                     \
	{                                                              \
		(prop), (type), offsetof(T, member), 0, 0, (max), true \
	}
#define SNAP_FIELD_U64S(T, prop, member)                                                                    \
	{                                                                                                   \
		(prop), SNAP_F_U64S, offsetof(T, member), sizeof(((T *)0)->member) / sizeof(uint64_t), 0, 0 \
	}
/* SNAP_FIELD_U64S added to a part after its first version: all 0 when an older snapshot lacks it. */
#define SNAP_FIELD_U64S_OPT(T, prop, member)                                                                 \
	{                                                                                                    \
		(prop), SNAP_F_U64S, offsetof(T, member), sizeof(((T *)0)->member) / sizeof(uint64_t), 0, 0, \
			true                                                                                 \
	}
#define SNAP_FIELD_BYTES(T, prop, member, len_member)                                \
	{                                                                            \
		(prop), SNAP_F_BYTES, offsetof(T, member), sizeof(((T *)0)->member), \
			offsetof(T, len_member), 0                                   \
	}

/*
 * SNAP_PART_OPTIONAL: came within format 1, so older files lack it; a part
 * that is absent has no state (NULL), is not loaded at a restore (the
 * component keeps its state from creation: its reset state), and is not
 * written back. A new device's part is optional.
 */
#define SNAP_PART_OPTIONAL (1u << 0)
#define SNAP_PART_PMU (1u << 1) /* present exactly when the machine has the PV PMU */

struct snap;

struct snap_part {
	const char *name; /* the node: under /devices for a device, else at the root or in each vcpu@N */
	size_t size;	  /* of the state struct */
	const struct snap_field *fields;
	unsigned nr_fields;
	unsigned flags; /* SNAP_PART_* */
	/*
	 * Could the component be in this state? NULL if so, else why not (and
	 * *prop the property to name, or NULL for the node). s is the file as
	 * parsed so far: the VM-wide parts come before each vCPU's. May be NULL.
	 */
	const char *(*check)(const struct snap *s, const void *state, const char **prop);
	/* snapshot-info's words for it ("serial 16550A (3 input bytes pending)"), or NULL to say nothing. */
	void (*describe)(const void *state, char *buf, size_t len);
};

#define SNAP_MAX_PARTS 32     /* device parts, and VM-wide parts */
#define SNAP_MAX_VCPU_PARTS 4 /* parts in each vcpu@N */

/*
 * What a state file holds besides KVM's state: the device parts (nodes
 * under /devices), the VM-wide parts (nodes at the root, after /devices)
 * and each vCPU's parts (nodes in vcpu@N), in the order they are written.
 */
struct snap_schema {
	const struct snap_part *const *devices;
	unsigned nr_devices;
	const struct snap_part *const *vm;
	unsigned nr_vm;
	const struct snap_part *const *vcpu;
	unsigned nr_vcpu;
};

/* ---- snapshot state file (write.c, parse.c, state.c; docs/snapshot.md) ------ */
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

/* The state of a SNAP_F_NAMED part: the statistics' cumulative fields by name. */
struct snap_stats {
	unsigned n;
	struct snap_stat s[SNAP_MAX_STATS];
};

/* A record's statistics: the part "stats" (the VM record at the root, a vCPU's in vcpu@N). */
extern const struct snap_part snap_stats_part;

struct snap_vcpu {
	/* KVM's own structures, as the KVM_GET_* ioctls return them (x86-64, little-endian). */
	struct snap_bytes regs, sregs, xsave, xcrs, debugregs, lapic, events;
	struct snap_bytes msrs;	 /* struct kvm_msr_entry[], 16 bytes each */
	struct snap_bytes cpuid; /* struct kvm_cpuid_entry2[], 40 bytes each, as set */
	uint32_t mp_state;
	void *part[SNAP_MAX_VCPU_PARTS]; /* by schema->vcpu index; NULL: absent */
};

struct snap {
	uint32_t format;
	/* machine */
	uint32_t nr_vcpus;
	uint64_t mem_size;
	bool pmu;
	uint32_t cpuid_hide; /* CPUID_HIDE_* (optional: 0 when absent) */
	uint32_t cpuid_add;  /* CPUID_ADD_* (optional: 0 when absent, as in snapshots before it) */
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
	/* the components' parts, by index in the schema's lists; NULL: absent */
	const struct snap_schema *schema;
	void *dev[SNAP_MAX_PARTS];
	void *vm[SNAP_MAX_PARTS];
	struct snap_vcpu vcpu[PV_MAX_CPUS];
	bool owns_parts; /* snap_parse allocated the parts: snap_fini frees them */
};

/*
 * Write s as a state file into a malloc'ed buffer (*blob, *len), with its
 * checksum. s->schema says which parts there are; every part the file
 * needs (not optional, and the PMU's when s->pmu) must have its state.
 * Returns 0 or -errno with a message.
 */
int snap_build(const struct snap *s, void **blob, size_t *len, struct errbuf *err);
/*
 * Parse and validate a whole state file against `schema`: structure
 * (fdt_check_full), the checksum, the format version, every node and
 * property the format and each part need with its exact size, counts and
 * ranges, and each part's own check (device and PMU states a real one
 * could be in). Unknown properties and nodes are ignored (a newer writer's
 * additions). s then points into blob, and holds the parts it allocated
 * until snap_fini(). Returns 0 or -EINVAL/-EPROTO/-ENOTSUP (newer format)
 * with one clear line naming the problem.
 */
int snap_parse(const void *blob, size_t len, const struct snap_schema *schema, struct snap *s,
	       struct errbuf *err);
/* Free the parts snap_parse() allocated (not the struct). Safe on a zeroed or failed one. */
void snap_fini(struct snap *s);
/* The state of `part` (for vCPU `vcpu`, or VM-wide with -1) in s, or NULL if it has none. */
const void *snap_part_state(const struct snap *s, const struct snap_part *part, int vcpu);
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

/* ---- the live-migration stream (migstream.c; docs/migration.md) ------------- */
/*
 * A migration is a sequence of records over one connection, each a 24-byte
 * header and its payload. The header carries the record's number (from 0,
 * both directions counted apart) and an XXH3-64 of the payload seeded with
 * the header's other fields, so a lost, repeated, damaged or reordered
 * record is refused. Control records carry one JSON object (vmm/ reads
 * it); PAGES and ZERO carry guest memory; STATE the snapshot state file.
 * Pure: no sockets, no KVM.
 */
#define MIG_MAGIC 0x474d5650U /* "PVMG" little-endian */
#define MIG_PROTOCOL 1U	      /* the protocol this perfvisor speaks */
#define MIG_PAGE 4096U
#define MIG_MAX_RUN 256U       /* pages in one PAGES record: 1 MiB */
#define MIG_MAX_CONTROL 65536U /* a control record's JSON */
#define MIG_PAGES_HDR 16U      /* PAGES/ZERO payload: u64 gpa, u64 pages */

enum mig_type {
	MIG_HELLO = 1, /* source: the machine it would send (JSON) */
	MIG_ACCEPT,    /* destination: {"ok":true} or {"ok":false,"error":...} */
	MIG_PAGES,     /* source: gpa, pages, the pages' bytes */
	MIG_ZERO,      /* source: gpa, pages: these pages are zero */
	MIG_STATE,     /* source: the state file (docs/snapshot.md), last of the memory */
	MIG_READY,     /* destination: the VM is built and waits for GO (JSON ok/error) */
	MIG_GO,	       /* source: it will never run the guest again; run it */
	MIG_RUNNING,   /* destination: the guest runs here */
	MIG_ABORT,     /* either side: giving up (JSON error) */
	MIG_TYPE_END
};

struct mig_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t flags; /* 0 */
	uint32_t len;	/* payload bytes */
	uint32_t seq;	/* this direction's record number, from 0 */
	uint64_t hash;	/* mig_hash() of the payload */
};
_Static_assert(sizeof(struct mig_hdr) == 24, "the header is 24 bytes on the wire");

/* The record type's name ("PAGES"), or "unknown". */
const char *mig_type_name(unsigned type);
/* XXH3-64 of the payload, seeded with the header's type, length and number. */
uint64_t mig_hash(unsigned type, uint32_t seq, const void *payload, uint32_t len);
/* The same of a payload sent in two pieces, a then b. */
uint64_t mig_hash2(unsigned type, uint32_t seq, const void *a, uint32_t alen, const void *b, uint32_t blen);
/* A header for a record with this payload. */
void mig_hdr_make(struct mig_hdr *h, enum mig_type type, uint32_t seq, const void *payload, uint32_t len);
/*
 * Check a received header: magic, known type, flags, the length the type
 * allows (state_max: the largest state file), the expected number. 0 or
 * -EPROTO with one line.
 */
int mig_hdr_check(const struct mig_hdr *h, uint32_t seq, uint32_t state_max, struct errbuf *err);
/* Check a payload against its header's hash. 0 or -EPROTO with one line. */
int mig_payload_check(const struct mig_hdr *h, const void *payload, struct errbuf *err);

/*
 * The destination's side of the stream as a state machine: HELLO first,
 * then any PAGES and ZERO, then one STATE. mig_rx_feed() takes one checked
 * record (header and payload) and applies memory records to mem (mem_size
 * bytes, zeroed at the start); it refuses a record out of order, a range
 * outside RAM or one whose length disagrees with its page count.
 */
enum mig_rx_phase {
	MIG_RX_HELLO,
	MIG_RX_MEMORY,
	MIG_RX_DONE
};
struct mig_rx {
	enum mig_rx_phase phase;
	uint8_t *mem;
	uint64_t mem_size;	    /* 0 until HELLO said it (mig_rx_set_memory) */
	uint64_t pages, zero_pages; /* received */
	uint64_t records;
	const void *state; /* MIG_RX_DONE: points into the STATE payload */
	uint32_t state_len;
};
/* Returns 0 (the record applied), or -EPROTO/-ERANGE with one line. */
int mig_rx_feed(struct mig_rx *rx, const struct mig_hdr *h, const void *payload, struct errbuf *err);
/* After HELLO was accepted: the RAM the memory records go to. */
void mig_rx_set_memory(struct mig_rx *rx, uint8_t *mem, uint64_t size);

#endif
