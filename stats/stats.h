/* SPDX-License-Identifier: MIT */
/*
 * perfvisor statistics: the producer side (the sealed memfd region and the
 * scoreboard API through which VMM code owns and updates its fields) and
 * the reader side (mapping a region read-only and copying records under
 * the seqlock), used by `perfvisor stat` and `perfvisor stats-check`.
 * The binary layout is include/perfvisor/stats_abi.h (docs/stats-abi.md).
 */
#ifndef PERFVISOR_STATS_H
#define PERFVISOR_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "perfvisor/stats_abi.h"
#include "util/util.h"

/* ======================= producer: region and scoreboard ================ */

struct stats_region;

/* A typed handle for one u64 field of every record of one kind. */
struct sb_field {
	uint32_t record; /* enum pv_stats_record */
	uint32_t offset; /* byte offset within the record */
};

/* One record (the VM record or a vCPU entry) as its single writer sees it. */
struct sb_entry {
	uint8_t *base;
};

#define STATS_MAX_FIELDS 512U

/*
 * Create an empty region for up to max_vcpus vCPU entries. Fields are then
 * declared with sb_declare() and the layout fixed with stats_region_freeze().
 * Returns 0 or -errno with a message. Setup thread.
 */
int stats_region_create(struct stats_region **out, unsigned max_vcpus, struct errbuf *err);
/* CLOCK_MONOTONIC in ns when the region was created: the header's start_time_ns. */
uint64_t stats_region_start_ns(const struct stats_region *r);
/* Unmap and close. NULL is a no-op. */
void stats_region_destroy(struct stats_region *r);

/*
 * Declare a u64 field of every record of kind `record`. Names are unique per
 * record kind, at most PV_STATS_NAME_MAX-1 bytes of [a-z0-9_.]. Returns 0 and
 * the field's handle, -EEXIST, -EINVAL, -ENOSPC or -EBUSY (after freeze).
 */
int sb_declare(struct stats_region *r, enum pv_stats_record record, const char *name, enum pv_stats_kind kind,
	       enum pv_stats_unit unit, int scale, struct sb_field *out, struct errbuf *err);

/*
 * The VM's name for the header (run --name; labels in Prometheus): at most
 * PV_STATS_VM_NAME_MAX - 1 bytes of [A-Za-z0-9_.:-], or "". Before freeze.
 * Returns 0, -EINVAL or -EBUSY (after freeze).
 */
int stats_region_set_name(struct stats_region *r, const char *name, struct errbuf *err);
/* Is `name` a valid VM name (what stats_region_set_name and run --name take)? */
bool stats_vm_name_ok(const char *name);

/*
 * Fix the layout: size the memfd once for all slots, write the header and
 * descriptors, map it for the producer and seal it (shrink, grow, future
 * write, seal). Entries never move afterwards. Returns 0 or -errno.
 */
int stats_region_freeze(struct stats_region *r, struct errbuf *err);

/* The producer's entry for vCPU idx / the VM record. After freeze. */
struct sb_entry stats_vcpu_entry(struct stats_region *r, unsigned idx);
struct sb_entry stats_vm_entry(struct stats_region *r);

/*
 * Publish vCPU idx as online: its state becomes ONLINE, then `online` and
 * `generation` in the header grow with release semantics. Vcpus must come
 * online in index order. Setup or main thread.
 */
void stats_vcpu_online(struct stats_region *r, unsigned idx);
/* vCPU entries published so far. Any thread. */
unsigned stats_region_online(struct stats_region *r);
/* Mark a record's state (e.g. STOPPED). Its writer thread only. */
void sb_set_state(struct sb_entry e, enum pv_stats_state state);

/* An O_RDONLY file descriptor of the region (a reopen, never the producer's fd). */
int stats_region_open_ro(struct stats_region *r);
/* The producer's memfd (for tests and /proc lookup); do not hand it out. */
int stats_region_fd(const struct stats_region *r);

/*
 * Writer side of the seqlock: wrap each batch of updates of one record in
 * sb_begin()/sb_end(). Only the record's writer thread calls these; no
 * atomic read-modify-write is used.
 */
static inline void sb_begin(struct sb_entry e)
{
	uint32_t *seq = (uint32_t *)e.base;

	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void sb_end(struct sb_entry e)
{
	uint32_t *seq = (uint32_t *)e.base;

	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

static inline uint64_t *sb_slot(struct sb_entry e, struct sb_field f)
{
	return (uint64_t *)(e.base + f.offset);
}

/* Add to / set a field (between sb_begin and sb_end). Writer thread only. */
static inline void sb_add(struct sb_entry e, struct sb_field f, uint64_t v)
{
	uint64_t *p = sb_slot(e, f);

	__atomic_store_n(p, *p + v, __ATOMIC_RELAXED);
}

static inline void sb_set(struct sb_entry e, struct sb_field f, uint64_t v)
{
	__atomic_store_n(sb_slot(e, f), v, __ATOMIC_RELAXED);
}

/*
 * The declared fields, in declaration order: field i's descriptor (name,
 * kind, record) and its handle in *f, or NULL past the end. For code that
 * handles every field by name, e.g. a snapshot. Any thread.
 */
unsigned sb_nr_fields(const struct stats_region *r);
const struct pv_stats_desc *sb_field_at(const struct stats_region *r, unsigned i, struct sb_field *f);

/* The current value of field f of vCPU idx (no seqlock: one u64 is atomic). Any thread. */
uint64_t sb_get(struct stats_region *r, unsigned idx, struct sb_field f);
/* The sum of field f over all online vCPUs. Any thread. */
uint64_t sb_sum(struct stats_region *r, struct sb_field f);
/*
 * A consistent read of n fields of one record (all of f[]'s record kind;
 * idx is the vCPU, ignored for the VM record) under its seqlock, for a
 * thread that is not the record's writer and needs values that belong
 * together. Tries a bounded number of times (microseconds, never sleeps);
 * returns 0, or -EBUSY if the writer stayed inside an update. Any thread.
 */
int sb_read(struct stats_region *r, unsigned idx, const struct sb_field *f, unsigned n, uint64_t *out);

/* ======================= reader ======================================== */

struct stats_view;

/*
 * Map a region read-only from an fd (the fd is not kept) and validate its
 * header and descriptors against the mapping's real size. A corrupt or
 * hostile region gives -EINVAL/-EPROTO with a message, never a crash.
 */
int stats_view_open_fd(struct stats_view **out, int fd, struct errbuf *err);
/* Find a running VMM's region through /proc/PID/fd (memfd "perfvisor-stats"). */
int stats_view_open_pid(struct stats_view **out, pid_t pid, struct errbuf *err);
void stats_view_close(struct stats_view *v);

/* The validated header (a copy taken at open, `online` and `generation` refreshed). */
const struct pv_stats_header *stats_view_header(struct stats_view *v);
/* Descriptors the reader understands (validated), in table order. */
unsigned stats_view_ndesc(const struct stats_view *v);
const struct pv_stats_desc *stats_view_desc(const struct stats_view *v, unsigned i);
/* Current number of online vCPUs (acquire load of header.vcpu.online, clamped to slots). */
unsigned stats_view_online(struct stats_view *v);

/*
 * The read protocol's bound: a reader retries a record whose writer is
 * inside an update STATS_READ_SPINS times (with a pause), then yields and
 * sleeps with a growing backoff, and gives up with -EBUSY once
 * STATS_READ_TIMEOUT_NS have passed. A writer preempted in the middle of an
 * update is waited for (on the shared 2-core machines here a thread's 2 ms
 * sleep has been seen to last 51 ms, hence a bound of a second, not of
 * milliseconds); one that stopped there (a paused or crashed VMM) costs a
 * reader this long per record, never a hang.
 */
#define STATS_READ_SPINS 200U
/* The fuzz build shortens it: a hostile region is busy forever. */
#ifndef STATS_READ_TIMEOUT_NS
#define STATS_READ_TIMEOUT_NS 1000000000ULL /* 1 s */
#endif

/* Bytes of one record of `record` kind (the producer's array size), 0 for an unknown kind. */
size_t stats_view_record_size(const struct stats_view *v, enum pv_stats_record record);

/*
 * Copy record `idx` of `record` kind consistently: one memcpy of the
 * record's size under the seqlock into buf (stats_view_record_size bytes),
 * and its state into *state (if not NULL). Read fields out of the copy
 * with stats_view_field(). Returns 0, -ENOENT (no such record, or a vCPU
 * not online), or -EBUSY after the bound above; never hangs. Any thread.
 */
int stats_view_copy(struct stats_view *v, enum pv_stats_record record, unsigned idx, void *buf,
		    uint32_t *state);

/* The value of descriptor d in `rec`, a copy of a record of d's kind. */
uint64_t stats_view_field(const struct stats_view *v, unsigned d, const void *rec);

/*
 * The same as one array: values[i] receives the field of descriptor i (0
 * for descriptors of the other record kind), *state the record's state.
 * Returns as stats_view_copy. Convenient, not the fast path.
 */
int stats_view_read(struct stats_view *v, enum pv_stats_record record, unsigned idx, uint64_t *values,
		    uint32_t *state);

/*
 * Descriptor d's "since" companion: for a cumulative time field NAME_ns,
 * the instant field NAME_since_ns of the same record, if the producer has
 * one; it holds the CLOCK_MONOTONIC time (ns) at which the interval that
 * NAME_ns does not count yet began, 0 when none is open
 * (docs/stats-abi.md "Live values"). Returns its descriptor index, or -1.
 */
int stats_view_since(const struct stats_view *v, unsigned d);

/* ---- whole-region snapshots (what the tools use) ---- */

struct stats_snap;

/* A snapshot buffer for every record of v (VM record and all vCPU slots). Returns 0 or -ENOMEM. */
int stats_snap_create(struct stats_snap **out, struct stats_view *v);
void stats_snap_destroy(struct stats_snap *s);
/*
 * Take a snapshot: the time (CLOCK_MONOTONIC, read before any copy), the
 * generation and online count, then the VM record and each online vCPU
 * record, each copied under its seqlock as stats_view_copy does. A record
 * that stays busy is marked so (stats_snap_status) and the rest is still
 * taken. Returns how many records were busy (0 normally). The thread that
 * owns s.
 */
int stats_snap_take(struct stats_snap *s);

uint64_t stats_snap_time(const struct stats_snap *s);
uint64_t stats_snap_generation(const struct stats_snap *s);
/* vCPU records in the snapshot: 0 .. online-1. */
unsigned stats_snap_online(const struct stats_snap *s);
/*
 * Record `idx` of `record` kind (idx is ignored for the VM record): 0 and
 * its state, -EBUSY if it stayed busy, -ENOENT if not in the snapshot.
 */
int stats_snap_status(const struct stats_snap *s, enum pv_stats_record record, unsigned idx, uint32_t *state);
/* Descriptor d's value in record idx of d's kind (0 for a record that is busy or absent). */
uint64_t stats_snap_value(const struct stats_snap *s, unsigned d, unsigned idx);
/*
 * As stats_snap_value, but a field with a "since" companion is brought up
 * to the snapshot's time: value + (time - since) while an interval is open.
 * Such a value never decreases from one snapshot to the next.
 */
uint64_t stats_snap_live(const struct stats_snap *s, unsigned d, unsigned idx);

/* The raw mapping, for the invariant checker. */
const uint8_t *stats_view_base(const struct stats_view *v, size_t *size);

/* ======================= tools (subcommands of perfvisor) ================ */

/* One VM of a Prometheus exposition (stats_prom_write). */
struct stats_prom_vm {
	struct stats_view *v;
	const struct stats_snap *s; /* a snapshot of v */
	const bool *sel;	    /* per descriptor: write it; NULL: all */
	pid_t pid;		    /* the vm label */
	const char *name;	    /* the name label; NULL or "": none */
};

/*
 * Write these VMs' snapshots in the Prometheus text exposition format
 * (docs/stats-abi.md "Prometheus"): every field as a metric in base units,
 * counters ending in _total, one HELP and TYPE per metric followed by the
 * samples of every VM, live values (stats_snap_live). Busy records are left
 * out with a comment. Returns 0, -ENOMEM or -EIO (a write error on out).
 */
int stats_prom_write(FILE *out, const struct stats_prom_vm *vms, unsigned n);

/* `perfvisor stat TARGET [options]`: argv[0] is "stat". Returns the exit status. */
int stats_cmd_stat(int argc, char **argv);
/* `perfvisor exporter --listen ADDR:PORT [--socket-dir DIR]`: argv[0] is "exporter". Returns the exit status. */
int stats_cmd_exporter(int argc, char **argv);
/* `perfvisor stats-check TARGET`: argv[0] is "stats-check". Returns the exit status. */
int stats_cmd_check(int argc, char **argv);

#endif
