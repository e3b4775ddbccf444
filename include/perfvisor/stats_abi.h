/* SPDX-License-Identifier: MIT */
/*
 * perfvisor statistics region ABI: a memfd the VMM writes and tools map
 * read-only. A header at offset 0 gives the layout of one VM record and an
 * array of per-vCPU entries, and a descriptor table names every field.
 * Documented (invariants, read protocol, example reader) in docs/stats-abi.md.
 *
 * Compatibility: the magic is the ABI epoch; within an epoch structures only
 * grow at their end and readers check sizes, so a reader and a producer
 * built from different versions of this header agree on their common subset.
 */
#ifndef PERFVISOR_STATS_ABI_H
#define PERFVISOR_STATS_ABI_H

#include <stdint.h>

#define PV_STATS_MAGIC 0x3154415453565050ULL /* "PPVSTAT1": epoch 1 */
#define PV_STATS_ALIGN 64U		     /* entry strides are multiples of this */
#define PV_STATS_NAME_MAX 48U		     /* bytes of a field name, NUL included */
#define PV_STATS_VM_NAME_MAX 64U	     /* bytes of the header's VM name, NUL included */

/* Where one kind of record lives: `slots` records of `size` bytes, `stride` apart. */
struct pv_stats_array {
	uint64_t offset; /* from the start of the region; >= header_size, multiple of 8 */
	uint32_t size;	 /* bytes of one record written by the producer */
	uint32_t stride; /* >= size, multiple of PV_STATS_ALIGN */
	uint32_t slots;	 /* records reserved (maximum vCPUs); never changes */
	uint32_t online; /* records published so far (<= slots); only grows; read with acquire.
			    The VM record is online (1) from the moment the region exists. */
};

struct pv_stats_header {
	uint64_t magic;		  /* PV_STATS_MAGIC */
	uint32_t header_size;	  /* sizeof(struct pv_stats_header) of the producer */
	uint32_t flags;		  /* zero; reserved */
	uint64_t region_size;	  /* bytes of the region (the memfd's size) */
	uint64_t generation;	  /* bumped on every layout-visible change (vCPU online); read with acquire */
	struct pv_stats_array vm; /* one record: VM-wide fields (slots = 1) */
	struct pv_stats_array vcpu; /* per-vCPU entries, index = vCPU index */
	uint64_t desc_offset;	    /* the descriptor table */
	uint32_t desc_size;	    /* bytes of one struct pv_stats_desc of the producer */
	uint32_t desc_count;	    /* number of descriptors */
	uint64_t producer_pid;	    /* the VMM's pid */
	uint64_t start_time_ns;	    /* CLOCK_MONOTONIC when the VM was created */
	uint64_t reserved[6];	    /* zero */
	/* Appended after v1 (header_size >= 224): */
	char name[PV_STATS_VM_NAME_MAX]; /* the VM's name (run --name), NUL-terminated; "" if none */
};

/* How a field's value behaves over time. */
enum pv_stats_kind {
	PV_STATS_CUMULATIVE = 1, /* only grows (a counter); rates are meaningful */
	PV_STATS_INSTANT = 2,	 /* a current value (a gauge) */
	PV_STATS_PEAK = 3,	 /* the highest value seen; only grows */
};

/* Unit of a field's value (after applying the scale). */
enum pv_stats_unit {
	PV_STATS_UNIT_NONE = 0, /* a plain count */
	PV_STATS_UNIT_BYTES = 1,
	PV_STATS_UNIT_SECONDS = 2, /* with scale -9: nanoseconds */
	PV_STATS_UNIT_CYCLES = 3,
};

/* Which record a descriptor's field belongs to. */
enum pv_stats_record {
	PV_STATS_RECORD_VM = 0,
	PV_STATS_RECORD_VCPU = 1,
};

/* One u64 field of a record. */
struct pv_stats_desc {
	char name[PV_STATS_NAME_MAX]; /* NUL-terminated, [a-z0-9_.]; unique per record */
	uint32_t offset;	      /* of the u64 within its record; multiple of 8, >= 8 */
	uint8_t record;		      /* enum pv_stats_record */
	uint8_t kind;		      /* enum pv_stats_kind */
	uint8_t unit;		      /* enum pv_stats_unit */
	int8_t scale;		      /* value * 10^scale is in `unit` (e.g. -9 for ns) */
	uint32_t flags;		      /* zero; reserved */
	uint32_t reserved;	      /* zero */
};

/* Entry states. */
enum pv_stats_state {
	PV_STATS_OFFLINE = 0, /* not created yet */
	PV_STATS_ONLINE = 1,  /* its vCPU thread is running */
	PV_STATS_STOPPED = 2, /* its vCPU has stopped; values are final */
};

/*
 * Every record (the VM record and each vCPU entry) starts with this, then
 * u64 fields follow at the offsets the descriptors give. `seq` is a seqlock
 * count written only by the record's writer: odd while an update is in
 * progress. See docs/stats-abi.md for the read protocol.
 */
struct pv_stats_record_hdr {
	uint32_t seq;
	uint32_t state; /* enum pv_stats_state */
};

_Static_assert(sizeof(struct pv_stats_array) == 24, "stats array");
_Static_assert(__builtin_offsetof(struct pv_stats_header, header_size) == 8, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, region_size) == 16, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, generation) == 24, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, vm) == 32, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, vcpu) == 56, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, desc_offset) == 80, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, desc_size) == 88, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, desc_count) == 92, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, producer_pid) == 96, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, start_time_ns) == 104, "stats header");
_Static_assert(__builtin_offsetof(struct pv_stats_header, name) == 160, "stats header");
_Static_assert(sizeof(struct pv_stats_header) == 224, "stats header size");
_Static_assert(__builtin_offsetof(struct pv_stats_desc, offset) == 48, "stats desc");
_Static_assert(__builtin_offsetof(struct pv_stats_desc, record) == 52, "stats desc");
_Static_assert(__builtin_offsetof(struct pv_stats_desc, scale) == 55, "stats desc");
_Static_assert(__builtin_offsetof(struct pv_stats_desc, flags) == 56, "stats desc");
_Static_assert(sizeof(struct pv_stats_desc) == 64, "stats desc size");
_Static_assert(sizeof(struct pv_stats_record_hdr) == 8, "record header");

#endif
