/* SPDX-License-Identifier: MIT */
/*
 * The paravirtual PMU (docs/pvpmu.md, include/perfvisor/pvpmu.h): the
 * event table, start-up probing of what the host can back, the CPUID
 * leaves, and the per-vCPU MSR emulation with its counters, overflow,
 * PMI and counter page logic. The emulation is pure logic: it reaches the
 * host only through struct pmu_host_ops, so it is unit-tested without KVM;
 * pmu_perf_* are the perf_event_open backend the VMM plugs in.
 */
#ifndef PERFVISOR_PMU_H
#define PERFVISOR_PMU_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "perfvisor/pvpmu.h"
#include "snapfile/snapfile.h"
#include "util/util.h"

/* ---- events ----------------------------------------------------------------- */
struct pmu_event_info {
	uint16_t id;
	const char *name;     /* perf-style name, e.g. "task-clock", "exits.io" */
	uint8_t cls;	      /* enum pv_pmu_event_class */
	bool ns;	      /* counts nanoseconds (min period in ns) */
	uint64_t perf_config; /* classes 0, 1: PERF_COUNT_HW_* / PERF_COUNT_SW_* */
	const char *kvm_name; /* class 3: the KVM binary stat it mirrors */
};

/* The event with this id, or NULL if the id names no event. */
const struct pmu_event_info *pmu_event_info(uint32_t id);
/* Event by name (as in pmu_event_info.name), or NULL. */
const struct pmu_event_info *pmu_event_by_name(const char *name);

/* ---- capabilities ------------------------------------------------------------ */
#define PMU_NR_COUNTERS 8u
#define PMU_BITMAP_WORDS (PV_PMU_NR_EVENTS / 64)
#define PMU_MIN_PERIOD 16u
#define PMU_MIN_PERIOD_NS 1000000u
#define PMU_MAX_PMIS_PER_S 1000u
#define PMU_HOST_BUDGET 64u
#define PMU_REFRESH_US 10000u /* counter page refresh while host counters run */

struct pmu_caps {
	uint32_t nr_counters;
	uint32_t features; /* PV_PMU_FEAT_* */
	uint32_t min_period, min_period_ns, max_pmis_per_s, host_budget;
	uint64_t avail[PMU_BITMAP_WORDS], sample[PMU_BITMAP_WORDS], filter[PMU_BITMAP_WORDS];
};

/* Defaults: the limits above, class-2 events available; no host events yet. */
void pmu_caps_init(struct pmu_caps *c);
/* Mark an event available (with its class's sample/filter properties). */
void pmu_caps_set_available(struct pmu_caps *c, uint32_t id);
bool pmu_caps_available(const struct pmu_caps *c, uint32_t id);
/*
 * Probe classes 0 and 1 by opening (and closing) each event on the calling
 * thread with `open_fn` (pmu_perf_probe in the VMM). Returns how many host
 * events are available. Setup thread.
 */
int pmu_caps_probe(struct pmu_caps *c, int (*open_fn)(const struct pmu_event_info *ev));
/* The PV PMU CPUID leaf `leaf` (0x40000100..0x40000102) into r[0..3] = eax..edx; false if not ours. */
bool pmu_cpuid(const struct pmu_caps *c, uint32_t leaf, uint32_t r[4]);

/* ---- the per-vCPU emulation --------------------------------------------------- */
enum pmu_stat {
	PMU_STAT_MSR_READ,
	PMU_STAT_MSR_WRITE,
	PMU_STAT_GP,		/* #GPs given to the guest */
	PMU_STAT_ERROR,		/* host counter failures (ERROR register bits set) */
	PMU_STAT_PMI,		/* PMIs injected */
	PMU_STAT_THROTTLED,	/* PMIs delayed by the rate cap */
	PMU_STAT_OVERFLOW,	/* counter overflows */
	PMU_STAT_HOST_COUNTERS, /* instant: host counters open on this vCPU (value, not increment) */
	PMU_STAT_NR
};

/*
 * How the emulation reaches the host. Called on the vCPU's thread only.
 * open: a host counter for ev counting the calling thread (cfg gives the
 *   USR/OS filter); period 0 = count only, else interrupt every `period`.
 *   Returns a handle >= 0 (the count starts at 0) or -errno.
 * read: the handle's count since open. set_period: re-arm a sampling handle.
 * hv_read: the cumulative count of a class 2/3 event on this vCPU.
 * inject: deliver a PMI as PMI_CFG says (NMI or vector); 0 or -errno.
 * page: host address of the 4 KiB guest page at gpa, NULL if not RAM.
 * stat: add n to a statistic (PMU_STAT_HOST_COUNTERS: set it to n).
 * log: one line about a guest misdeed or host failure (already rate-limited).
 */
struct pmu_host_ops {
	int (*open)(void *ctx, const struct pmu_event_info *ev, uint64_t cfg, uint64_t period);
	int (*read)(void *ctx, int h, uint64_t *count);
	int (*set_period)(void *ctx, int h, uint64_t period);
	void (*close)(void *ctx, int h);
	uint64_t (*hv_read)(void *ctx, uint32_t event);
	int (*inject)(void *ctx, uint64_t pmi_cfg);
	void *(*page)(void *ctx, uint64_t gpa);
	void (*stat)(void *ctx, enum pmu_stat s, uint64_t n);
	void (*log)(void *ctx, const char *msg);
};

/* Shared by all vCPUs of a VM. */
struct pmu_vm {
	struct pmu_caps caps;
	uint32_t host_in_use; /* host counters open, all vCPUs (atomic) */
	struct ratelimit log_rl;
};

void pmu_vm_init(struct pmu_vm *vm, const struct pmu_caps *caps);

struct pmu_counter {
	uint64_t cfg;
	uint64_t value;	 /* the count at the last sync, modulo 2^48 */
	uint64_t base;	 /* host reading at the last sync */
	uint64_t reload; /* RELOAD(i): what PMI_ACK loads into the count (0: nothing) */
	int h;		 /* host handle, -1 if none */
	bool active;	 /* CFG.EN and GLOBAL_CTRL bit */
	bool counting;	 /* active and backed */
};

struct pmu_vcpu {
	struct pmu_vm *vm;
	const struct pmu_host_ops *ops;
	void *ctx;
	uint64_t global_ctrl, status, pmi_cfg, error, page_msr;
	bool pmi_pending; /* a PMI is due but masked or throttled */
	bool throttled;	  /* the pending PMI was counted as throttled */
	struct pv_pmu_page *page;
	uint32_t page_seq;
	uint64_t page_updates;
	unsigned nr_counting, nr_host, nr_hv_int;
	uint64_t pmi_credit_ns, pmi_credit_at; /* the PMI rate cap's token bucket (pmu.c) */
	struct pmu_counter ctr[PV_PMU_MAX_COUNTERS];
};

void pmu_vcpu_init(struct pmu_vcpu *p, struct pmu_vm *vm, const struct pmu_host_ops *ops, void *ctx);
/* Close every host counter (returns them to the VM budget). */
void pmu_vcpu_fini(struct pmu_vcpu *p);

static inline bool pmu_msr_in_block(uint32_t index)
{
	return index - PV_PMU_MSR_BASE < PV_PMU_MSR_BLOCK_SIZE;
}
/* A guest RDMSR/WRMSR in the block. Returns 0, or -EINVAL: give the guest #GP. */
int pmu_msr_read(struct pmu_vcpu *p, uint32_t index, uint64_t *val);
int pmu_msr_write(struct pmu_vcpu *p, uint32_t index, uint64_t val);
/*
 * After each return from KVM_RUN (the VMM's counts for it already added):
 * VMM-kept counters with INT are checked for overflow, a due PMI is
 * delivered, the counter page is updated. Cheap when nothing is enabled.
 */
void pmu_after_exit(struct pmu_vcpu *p);
/* After a host counter's overflow signal or the refresh timer: sync every counter, PMI, page. */
void pmu_poll(struct pmu_vcpu *p);
/* Whether the vCPU needs a periodic exit (page with host counters, or a throttled PMI). */
bool pmu_wants_refresh(const struct pmu_vcpu *p);

/* ---- snapshot and restore (docs/pvpmu.md section 13) ------------------------------ */
/*
 * A vCPU's PV PMU state as the guest sees it: the MSR values (CTR as of a
 * sync at save time), the pending-PMI flag, and the counter page's
 * sequence and update counts (so a guest reading the page never sees them
 * go back). ERROR is not part of it: a restore recomputes it.
 */
struct pmu_vcpu_state {
	uint64_t global_ctrl, status, pmi_cfg, page;
	uint64_t cfg[PMU_NR_COUNTERS], value[PMU_NR_COUNTERS];
	uint64_t page_seq, page_updates;
	uint64_t reload[PMU_NR_COUNTERS]; /* RELOAD(i), PV_PMU_FEAT_ACK; absent in older snapshots: 0 */
	bool pmi_pending, throttled;
};

/* Sync every counter, then copy the state out. The vCPU's thread. */
void pmu_vcpu_save(struct pmu_vcpu *p, struct pmu_vcpu_state *s);
/*
 * Is `s` a state these capabilities could have produced? Every value passes
 * the checks a guest write would (reserved bits, counters that exist,
 * available events, the filter rule), CTR values fit the width, and the
 * page is page-aligned. 0, or -EINVAL with *why set. Pure; any thread.
 */
int pmu_vcpu_state_check(const struct pmu_caps *c, const struct pmu_vcpu_state *s, const char **why);
/*
 * Restore `s` into a freshly initialised vCPU PMU through the emulation's
 * own write path, host-initiated (it may set GLOBAL_STATUS and the pending
 * flag, which a guest cannot). Host counters are opened again on the
 * calling thread and continue from the saved CTR values; one the host
 * cannot back sets its ERROR bit, as at any start. Returns 0, or -EINVAL
 * (with *why) if pmu_vcpu_state_check refuses s. The vCPU's thread.
 */
int pmu_vcpu_restore(struct pmu_vcpu *p, const struct pmu_vcpu_state *s, const char **why);
/* Do two hosts offer the guest the same PMU (counters, features, limits, bitmaps)? Pure. */
bool pmu_caps_equal(const struct pmu_caps *a, const struct pmu_caps *b, const char **why);
/*
 * The PV PMU's parts of a snapshot (docs/snapshot.md), present when the
 * machine has the PV PMU: the capabilities the guest was offered (node
 * "pmu" at the root, a struct pmu_caps) and each vCPU's state (node "pmu"
 * in vcpu@N, a struct pmu_vcpu_state, checked against those capabilities
 * as the guest's own MSR writes would be).
 */
extern const struct snap_part pmu_caps_part, pmu_vcpu_part;

/* ---- the perf_event_open backend (perf.c) -------------------------------------- */
/* Open ev on the calling thread; if period, sample and signal `signo` to this thread on overflow. */
int pmu_perf_open(const struct pmu_event_info *ev, uint64_t cfg, uint64_t period, int signo);
/*
 * Open ev on the calling thread sampling its IP every period into a perf
 * ring buffer of `pages` data pages (a power of two), mapped at *map
 * (*map_len bytes, the control page first). No signal: the kernel writes
 * the samples, a reader takes them (prof_perf_record). The fd, or -errno.
 */
int pmu_perf_open_ring(const struct pmu_event_info *ev, uint64_t cfg, uint64_t period, unsigned pages,
		       void **map, size_t *map_len);
int pmu_perf_read(int fd, uint64_t *count);
int pmu_perf_set_period(int fd, uint64_t period);
/* Probe: can ev be opened here? 0 or -errno. */
int pmu_perf_probe(const struct pmu_event_info *ev);

/* ---- host-side guest profiling (profile.c, symbols.c; docs/profiling.md) ------------ */
/*
 * `perfvisor run --profile EVENT:PERIOD[,...]`: each vCPU thread samples
 * the guest on the overflow of host counters on itself. What lives here is
 * pure: the option's parsing, the per-vCPU sample ring (one producer, one
 * consumer, lock-free), the aggregation of samples into stacks, guest
 * symbols, and the output formats. The VMM (vmm/vm_profile.c) opens the
 * counters and reads the guest's registers and stack.
 */
#define PROF_MAX_EVENTS 4
#define PROF_MAX_DEPTH 32		  /* frames per sample, the leaf included */
#define PROF_MIN_PERIOD_NS 100000ULL	  /* 100 us: time events */
#define PROF_MAX_PERIOD_NS 10000000000ULL /* 10 s */
#define PROF_MIN_PERIOD_EVENTS 10000ULL	  /* hardware events */
#define PROF_MAX_PERIOD_EVENTS 100000000000ULL
#define PROF_MAX_RATE 20000u /* samples a second per vCPU, whatever the periods */
#define PROF_RING_SIZE 2048u /* samples buffered per vCPU (a power of two) */

struct prof_event {
	const struct pmu_event_info *ev; /* task-clock, cpu-clock or a hardware event */
	uint64_t period;		 /* ns for time events, else events */
};

struct prof_spec {
	unsigned n; /* 0: no profiling */
	struct prof_event e[PROF_MAX_EVENTS];
	/*
	 * mode=leaf: the host kernel writes each sample (the guest's RIP and
	 * whether it was in guest user or kernel mode) into a perf ring buffer
	 * the main thread reads; the vCPU never leaves KVM_RUN for a sample,
	 * and there are no stacks. Default (mode=stack): a signal per sample,
	 * taken by the vCPU thread with a frame-pointer walk.
	 */
	bool leaf;
	char text[128]; /* normalized, e.g. "task-clock:1000000ns,cycles:100000[,mode=leaf]" */
};

/*
 * Parse a --profile value: EVENT:PERIOD[,EVENT:PERIOD]...[,mode=stack|leaf],
 * time events (task-clock, cpu-clock) with a unit (ns, us, ms, s), hardware
 * events (cycles, instructions, ...) with a count. hw_pmu says whether this host
 * has a hardware PMU: without one a hardware event is an error. 0, or
 * -EINVAL with one line naming the problem. Pure.
 */
int prof_spec_parse(const char *s, bool hw_pmu, struct prof_spec *out, struct errbuf *err);
/* Can this host open every event of spec (pmu_perf_probe)? 0, or -errno with a message. Any thread. */
int prof_spec_check_host(const struct prof_spec *spec, struct errbuf *err);

#define PROF_COMM_LEN 16 /* a Linux task's comm, its NUL included */

/* One sample: where a vCPU was, and the return addresses of its stack (leaf first). */
struct prof_sample {
	uint8_t cpl;   /* 0..3 */
	uint8_t event; /* index into prof_spec.e */
	uint8_t depth; /* pc[0..depth-1] valid, >= 1 */
	uint8_t flags; /* PROF_SAMPLE_* */
	uint32_t vcpu;
	int32_t pid;		  /* a Linux guest's process (its tgid), when comm is not "" */
	char comm[PROF_COMM_LEN]; /* ... its command name; "": no process known */
	uint64_t pc[PROF_MAX_DEPTH];
};
#define PROF_SAMPLE_TRUNCATED (1u << 0) /* the walk stopped at a pointer outside guest RAM */
/*
 * mode=leaf only: a sample taken while the vCPU thread was not running the
 * guest has cpl PROF_CPL_HOST and pc[0] one of PROF_HOST_*; it is shown as
 * "[vmm]" or "[host-kernel]", in JSON with ring -1.
 */
#define PROF_CPL_HOST 4
#define PROF_HOST_VMM 0	   /* perfvisor itself (host user mode) */
#define PROF_HOST_KERNEL 1 /* the host kernel: KVM, and on kvm_pvm the emulated guest ring 0 */

/* One record of a perf ring buffer (mode=leaf), decoded. */
struct prof_perf_rec {
	uint32_t type;	/* PERF_RECORD_* */
	uint16_t misc;	/* PERF_RECORD_MISC_* */
	uint64_t value; /* SAMPLE: the IP; LOST: the number of records lost */
};

/*
 * The record at free-running offset `at` of a perf ring's data area
 * (`size` bytes, a power of two; records may wrap around its end), whose
 * kernel-written end is `head`. Returns the record's size, or 0 if what is
 * there is not a record (shorter than its header, or past head): the
 * caller then skips to head. Records are read with sample_type
 * PERF_SAMPLE_IP only. Pure.
 */
size_t prof_perf_record(const uint8_t *data, uint64_t size, uint64_t at, uint64_t head,
			struct prof_perf_rec *r);
/*
 * A SAMPLE record as a sample of vCPU `vcpu`, event `event`: in guest user
 * mode cpl 3, in guest kernel mode cpl 0, else (the host) PROF_CPL_HOST.
 */
void prof_perf_sample(const struct prof_perf_rec *r, uint32_t vcpu, uint8_t event, struct prof_sample *s);

/*
 * The per-vCPU ring: the vCPU thread pushes, the main thread pops; acquire
 * and release on the two indices, no lock. A push to a full ring fails and
 * the caller counts the sample as dropped.
 */
struct prof_ring {
	uint64_t head;		  /* written by the producer */
	uint64_t tail;		  /* written by the consumer */
	struct prof_sample *slot; /* PROF_RING_SIZE */
};

int prof_ring_init(struct prof_ring *r);
void prof_ring_fini(struct prof_ring *r);
/* Producer only: false if full. */
bool prof_ring_push(struct prof_ring *r, const struct prof_sample *s);
/* Consumer only: false if empty. */
bool prof_ring_pop(struct prof_ring *r, struct prof_sample *s);

/* Guest symbols: sorted function ranges. */
struct prof_sym {
	uint64_t addr, size; /* size 0: up to the next symbol */
	char *name;
};

struct prof_symtab {
	struct prof_sym *sym;
	size_t n;
	char source[64]; /* "ELF .symtab", "System.map", "kallsyms", "none" */
	/*
	 * A Linux guest whose kernel chose its own address (KASLR): anchor is
	 * where the table says PROF_SLIDE_ANCHOR was linked (0: not in the
	 * table), slide what the guest's MSR_LSTAR, which holds it, says the
	 * kernel moved by. Lookups subtract the slide. Set once by a vCPU
	 * thread, read by the main thread: atomics.
	 */
	uint64_t anchor, slide;
	bool slide_known;
};
#define PROF_SLIDE_ANCHOR "entry_SYSCALL_64"
#define PROF_SLIDE_ALIGN 0x200000ULL

/*
 * Load the function symbols of an ELF image (.symtab, ELF32 i386 or ELF64
 * x86-64, read with elf/elf.h) or of nm/System.map text ("ADDR TYPE NAME"
 * lines, text symbols). An ELF without a symbol table gives an empty table
 * (0: samples show addresses). -EINVAL with a message for text with no
 * symbol in it or a malformed ELF.
 */
int prof_symtab_load_elf(struct prof_symtab *t, const void *image, size_t len, struct errbuf *err);
int prof_symtab_load_text(struct prof_symtab *t, const char *text, size_t len, struct errbuf *err);
/*
 * The text symbols of a Linux kernel's kallsyms tables, found in a vmlinux
 * image (pmu/kallsyms.c): -ENOENT when the image has none, -EINVAL when
 * what looks like them does not hold together.
 */
int prof_symtab_load_kallsyms(struct prof_symtab *t, const void *image, size_t len, struct errbuf *err);
void prof_symtab_fini(struct prof_symtab *t);
/* For the loaders: append a symbol (0 or -ENOMEM), then sort once (duplicates dropped, anchor found). */
int prof_symtab_add(struct prof_symtab *t, size_t *cap, uint64_t addr, uint64_t size, const char *name,
		    size_t len);
void prof_symtab_sort(struct prof_symtab *t);
/*
 * The guest's MSR_LSTAR (its kernel's entry_SYSCALL_64 where it runs): the
 * slide from the anchor, kept if it is one KASLR can make. 0, -ENOENT (no
 * anchor, or LSTAR not set yet), -EINVAL (not a KASLR slide: ignored).
 */
int prof_symtab_set_slide(struct prof_symtab *t, uint64_t lstar);
/* The symbol containing addr, or NULL. */
const struct prof_sym *prof_symtab_find(const struct prof_symtab *t, uint64_t addr);

/*
 * A Linux guest, beyond its symbols (pmu/linux.c): where the current task
 * is and what of it names a process (from the kernel's BTF), and the
 * kernel's ORC unwind tables. Loaded from the vmlinux; each part may be
 * missing, and then its *_why says why.
 */
struct prof_linux {
	bool tasks;
	uint64_t current_task;	     /* the per-CPU offset of the current task pointer */
	uint32_t off_tgid, off_comm; /* in task_struct */
	uint64_t *orc_ip;	     /* link addresses, sorted */
	uint8_t *orc;		     /* the entries, 6 bytes each */
	size_t n_orc;
	unsigned orc_format; /* 0: none; 1: Linux up to 6.2; 2: 6.3; 3: 6.4 on */
	unsigned version[2]; /* from the image's "Linux version X.Y" */
	char tasks_why[96], orc_why[96];
};

/* An address in the kernel's half (bit 63: with 4- and 5-level paging alike). */
static inline bool prof_linux_kernel_address(uint64_t a)
{
	return a >> 63;
}

/* Reads guest-virtual memory, each address checked: false if any of it is not there. */
typedef bool (*prof_read_fn)(void *ctx, uint64_t gva, void *buf, size_t len);

/* The interrupted frame's registers the ORC rules may name. */
struct prof_linux_regs {
	uint64_t ip, sp, bp, di, dx, r10, r13;
};

/* Load what there is from a vmlinux ELF: 0 (parts may be missing), or -EINVAL (not an ELF). Pure. */
int prof_linux_load(struct prof_linux *lx, const void *vmlinux, size_t len, struct errbuf *err);
void prof_linux_fini(struct prof_linux *lx);
/*
 * The process running where the per-CPU area of a vCPU is pcpu_base (the
 * kernel's GS base): its tgid and comm. 0, -ENOENT (no task information or
 * no base), -EFAULT (a pointer the guest's memory does not back).
 */
int prof_linux_task(const struct prof_linux *lx, uint64_t pcpu_base, prof_read_fn rd, void *ctx, int32_t *pid,
		    char comm[PROF_COMM_LEN]);
/*
 * A kernel stack by ORC from the interrupted frame (addresses as the guest
 * runs them; slide: the KASLR slide, subtracted to find entries): pc[0] is
 * r->ip, then the callers, at most max. Returns the depth; *truncated when
 * the walk stopped short of the stack's end (its entry from user mode, or
 * the end the table marks).
 */
unsigned prof_linux_unwind(const struct prof_linux *lx, uint64_t slide, const struct prof_linux_regs *r,
			   prof_read_fn rd, void *ctx, uint64_t *pc, unsigned max, bool *truncated);

/* Samples aggregated by (vCPU, process, CPL, stack): an open-addressed table of bounded size. */
struct prof_stack {
	uint64_t count;
	uint32_t vcpu;
	uint8_t cpl, depth, used, truncated;
	int32_t pid;
	char comm[PROF_COMM_LEN];
	uint64_t pc[PROF_MAX_DEPTH];
};

struct prof_data {
	struct prof_stack *stacks;
	size_t cap, n;
	uint64_t samples, lost; /* lost: a full table (counted, shown as [lost]) */
	unsigned nr_vcpus;
};

int prof_data_init(struct prof_data *d, unsigned nr_vcpus, size_t cap);
void prof_data_fini(struct prof_data *d);
void prof_data_add(struct prof_data *d, const struct prof_sample *s);

/* What the writers need besides the samples. */
struct prof_meta {
	const struct prof_spec *spec;
	const struct prof_symtab *syms;
	const char *kernel;
	const uint64_t *per_vcpu_samples, *per_vcpu_dropped, *per_vcpu_throttled; /* nr_vcpus each */
	const uint64_t *per_vcpu_sample_ns;					  /* NULL: not known */
	uint64_t duration_ns;
	const struct prof_linux *linux_guest; /* a Linux guest: what of it is known (NULL: not Linux) */
};

typedef struct json_t json_t;
/*
 * The whole profile as JSON (docs/profiling.md "profile.json"): the
 * configuration, per-vCPU counts, and every stack symbolized (frames
 * outermost first). NULL when out of memory.
 */
json_t *prof_to_json(const struct prof_data *d, const struct prof_meta *m);
/* Folded stacks from that JSON: "vcpuN;ring0;outer;...;leaf COUNT" lines. 0 or -errno. */
int prof_write_folded(FILE *out, const json_t *profile);
/* The per-symbol table (self, total, percent, per vCPU), its `top` rows (0: all). 0 or -errno. */
int prof_write_table(FILE *out, const json_t *profile, unsigned top);
/* A Linux guest's processes: pid, command, samples, share, top symbol (stacks with pid and comm). 0 or -errno. */
int prof_write_processes(FILE *out, const json_t *profile);
/* Its first `top` rows as JSON: [{"pid" (-1: no process known),"comm","samples","percent","top_symbol"}]. NULL: no memory. */
json_t *prof_processes_json(const json_t *profile, unsigned top);
/* The table's first `top` rows as JSON: [{"symbol","self","total","percent","vcpus":[...]}]. NULL: no memory. */
json_t *prof_top_json(const json_t *profile, unsigned top);
/* `perfvisor profile report DIR [--folded|--top N|--json|--processes]` (argv[0] is "profile"). */
int prof_cmd_profile(int argc, char **argv);

#endif
