/* SPDX-License-Identifier: MIT */
/*
 * The perfvisor guest runtime: everything a test guest may call. A guest
 * defines main(); the runtime boots (GDT, IDT, TSS, ring-3 mappings), calls
 * it on CPU 0 in ring 0 and ends the VM with its return value (ucall DONE).
 * Ring 0 is slow on the target host (emulated): keep loops in ring 3.
 * docs/testing.md is the guide.
 */
#ifndef GUEST_H
#define GUEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfvisor/bootinfo.h>
#include <perfvisor/testdev.h>

#define __noreturn __attribute__((noreturn))
#define __printf(a, b) __attribute__((format(printf, a, b)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Defined by each test. Runs on CPU 0 in ring 0 with interrupts off; bi is
 * the VMM's boot information. Returns the VM's exit status, normally
 * report_summary().
 */
int main(const struct pv_bootinfo *bi);

/* ---- boot information ---------------------------------------------------- */
/* The boot information, or NULL if the VMM's block was not valid (bad magic). */
const struct pv_bootinfo *rt_bootinfo(void);
/* Number of CPUs (1 if the boot information is missing). */
uint32_t rt_nr_cpus(void);
/* Bytes of guest RAM (from the boot information, else the image size). */
uint64_t rt_mem_size(void);
/*
 * The kind of KVM host (enum pv_host_kind; PV_HOST_UNKNOWN from an older
 * VMM) and its name, e.g. "kvm_pvm". For SKIP reasons: a case the host
 * cannot run is skipped by knowledge, never left to fail or hang.
 */
uint32_t rt_host_kind(void);
const char *rt_host_name(void);

/* ---- strings (string.c) -------------------------------------------------- */
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
/* Copy at most size-1 bytes and NUL-terminate (if size > 0); returns strlen(src). */
size_t strlcpy(char *dst, const char *src, size_t size);
/* Parse an unsigned number: decimal, or hex with 0x (base 0), or `base`. */
unsigned long long strtoull(const char *s, char **end, int base);

/* ---- console (serial.c, printf.c) ---------------------------------------- */
/*
 * Raw output on the 16550 UART at 0x3f8: two port accesses per byte, so use
 * it sparingly. Serialized between CPUs by a spinlock.
 */
void serial_putc(char c);
void serial_puts(const char *s);

/*
 * printf: %d %i %u %x %X %p %s %c %%, flags '-' and '0', width, precision
 * for %s, length modifiers hh h l ll z. Output is buffered per CPU and sent
 * as one ucall PRINT (one VM exit) per line or per 191 bytes; printf_flush()
 * sends a partial line. Ring 0 only (port I/O).
 */
int printf(const char *fmt, ...) __printf(1, 2);
int vprintf(const char *fmt, va_list ap) __printf(1, 0);
void printf_flush(void);
/* Standard semantics: returns the length the full output would have. */
int snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) __printf(3, 0);

/* ---- ucalls (ucall.c): requests to the test device, ring 0 only ----------- */
/* Print text (split into 191-byte pieces) through the test device. */
void ucall_print(const char *s);
/* Tell the host we reached `stage`, with four values. */
void ucall_sync(uint32_t stage, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
/* End the VM with exit status `status` (0..255). Flushes printf first. */
__noreturn void ucall_done(uint32_t status);
/* Report a failed assertion; the VMM ends the VM with PV_STATUS_ASSERT. */
__noreturn void ucall_assert_fail(const char *expr, const char *file, uint32_t line, uint64_t a, uint64_t b);

#define GUEST_ASSERT(expr)                                                  \
	do {                                                                \
		if (!(expr))                                                \
			ucall_assert_fail(#expr, __FILE__, __LINE__, 0, 0); \
	} while (0)

/* Both values go to the host in args[0] and args[1]. */
#define GUEST_ASSERT_EQ(a, b)                                                        \
	do {                                                                         \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                     \
		if (a_ != b_)                                                        \
			ucall_assert_fail(#a " == " #b, __FILE__, __LINE__, a_, b_); \
	} while (0)

/* ---- test reporting (report.c), kvm-unit-tests style ---------------------- */
/* Print "PASS: msg" or "FAIL: msg" and count it. Any CPU. */
void report(bool pass, const char *fmt, ...) __printf(2, 3);
/* Print "SKIP: msg" and count a skipped test. */
void report_skip(const char *fmt, ...) __printf(1, 2);
/*
 * Print "SUMMARY: N tests, F unexpected failures, S skipped" and return the
 * exit status: 0 if nothing failed, 1 otherwise.
 */
int report_summary(void);

/* ---- command line (cmdline.c): "key=value key2 ..." ----------------------- */
/* The full command line (never NULL). */
const char *cmdline_raw(void);
/* Value of key=value, "" for a bare key, NULL if absent. Last one wins. */
const char *cmdline_get(const char *key);
bool cmdline_has(const char *key);
/* Numeric value (decimal or 0x hex, optional K/M/G suffix), or def. */
uint64_t cmdline_get_u64(const char *key, uint64_t def);

/* ---- time (tsc.c) --------------------------------------------------------- */
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* TSC frequency from the boot information; 0 if the VMM did not know it. */
uint32_t tsc_khz(void);
/* Cycles to microseconds; uses an assumed 2 GHz when tsc_khz() is 0. */
uint64_t tsc_to_us(uint64_t cycles);
/* The TSC value `us` microseconds from now (same assumption). */
uint64_t tsc_deadline_us(uint64_t us);
/* Busy-wait (ring 0 cost: a few instructions per iteration; keep it short). */
void udelay(uint64_t us);

/* ---- CPU helpers ---------------------------------------------------------- */
static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port) : "memory");
}
static inline void outw(uint16_t port, uint16_t v)
{
	asm volatile("outw %0, %1" : : "a"(v), "Nd"(port) : "memory");
}
static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}
static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory");
	return v;
}
static inline uint16_t inw(uint16_t port)
{
	uint16_t v;

	asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port) : "memory");
	return v;
}
static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port) : "memory");
	return v;
}
static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}
static inline uint64_t read_cr0(void)
{
	uint64_t v;

	asm volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}
static inline uint64_t read_cr2(void)
{
	uint64_t v;

	asm volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}
static inline uint64_t read_cr3(void)
{
	uint64_t v;

	asm volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}
static inline void write_cr3(uint64_t v)
{
	asm volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}
static inline uint64_t read_cr4(void)
{
	uint64_t v;

	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}
static inline void cpu_relax(void)
{
	asm volatile("pause" ::: "memory");
}
static inline void cli(void)
{
	asm volatile("cli" ::: "memory");
}
static inline void hlt(void)
{
	asm volatile("hlt" ::: "memory");
}

#define MSR_EFER 0xc0000080u
#define EFER_LMA (1u << 10)

/* ---- spinlocks ------------------------------------------------------------ */
struct spinlock {
	uint32_t locked;
};

static inline void spin_lock(struct spinlock *l)
{
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/* ---- exceptions (trap.c) -------------------------------------------------- */
/* The registers pushed by the interrupt stubs (vectors.S), lowest first. */
struct rt_regs {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error_code;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

/* What an expected exception looked like. */
struct rt_fault {
	uint32_t vector;
	uint32_t cpu;
	uint64_t error_code; /* 0 for vectors without one */
	uint64_t rip;
	uint64_t cr2; /* faulting address, #PF only */
	uint64_t rsp;
	uint64_t rflags;
	uint32_t cs; /* ring = cs & 3 */
	uint32_t reserved;
};

#define RT_NO_FAULT (-1)

#define PF_ERR_PRESENT (1u << 0)
#define PF_ERR_WRITE (1u << 1)
#define PF_ERR_USER (1u << 2)

/*
 * Run fn(arg) in ring 0 on this CPU. If it raises an exception (vector
 * 0..31), execution resumes here: returns the vector and fills *f (if not
 * NULL). Returns RT_NO_FAULT when fn returned normally. Not nestable on the
 * same CPU.
 */
int rt_catch(void (*fn)(void *), void *arg, struct rt_fault *f);

/* Short name of an exception vector, e.g. "#GP"; "INT" for other vectors. */
const char *rt_vector_name(uint32_t vector);

/*
 * Install a handler for `vector` (any vector 0..0x2f). It runs in ring 0
 * with interrupts off and returns true if it handled the event (the
 * interrupted code resumes), false to fall through to the default handling
 * (catch, or report an unexpected exception and end the VM). For external
 * interrupts the handler sends the EOI. NULL removes it.
 */
typedef bool (*rt_handler_t)(struct rt_regs *regs);
void rt_set_handler(uint32_t vector, rt_handler_t fn);

/*
 * Enable interrupts and sleep in hlt until done(arg) returns true or
 * timeout_us passed (a 1 ms LAPIC timer tick bounds each sleep); interrupts
 * are off again on return. Returns done(arg). Ring 0. The way to wait for
 * an interrupt on every host: never a fixed number of instructions after
 * sti (kvm_pvm delivers late). Enables the LAPIC and uses its timer.
 */
bool rt_wait_irq(bool (*done)(void *), void *arg, uint64_t timeout_us);

/* ---- ring 3 (user.c) ------------------------------------------------------ */
/*
 * Run fn(arg) in ring 3 on this CPU's 16 KiB user stack with interrupts
 * off, then come back to ring 0. Returns RT_NO_FAULT when fn returned (its
 * return value in *ret if ret is not NULL), or the vector of the exception
 * that ended it (details in *f if f is not NULL). All guest RAM is mapped
 * for ring 3; port I/O, printf and ucalls are not available there.
 */
int rt_run_user(long (*fn)(void *), void *arg, long *ret, struct rt_fault *f);
/* As rt_run_user, but an exception is unexpected: it ends the VM. */
long rt_user_call(long (*fn)(void *), void *arg);

/* ---- SMP (smp.c) ---------------------------------------------------------- */
/* Index (0..nr_cpus-1) of the CPU we run on; works in ring 0 and ring 3. */
uint32_t smp_cpu_id(void);
/* APIC id of CPU `cpu` as given by the boot information. */
uint32_t smp_apic_id(uint32_t cpu);
/* Read this CPU's APIC id from its local APIC (one MMIO exit). */
uint32_t apic_read_id(void);
/* Send this CPU a fixed interrupt on `vector` (enables the LAPIC first). Ring 0. */
void apic_self_ipi(uint8_t vector);
/* Send the CPU with APIC id `apic_id` a fixed interrupt on `vector`. Ring 0. */
void apic_send_fixed(uint32_t apic_id, uint8_t vector);
/* Acknowledge the interrupt being handled (LAPIC EOI). Ring 0. */
void apic_eoi(void);

typedef void (*smp_fn_t)(uint32_t cpu, void *arg);
/*
 * Start every AP (INIT/SIPI): each sets up its GDT/IDT/TSS and runs
 * fn(cpu, arg) in ring 0, then parks. Waits (bounded, ~10 s) until all APs
 * have checked in and returns how many did (nr_cpus - 1 on success; CPUs
 * that did not start are printed). May be called again once smp_wait_aps()
 * succeeded. Call from CPU 0 only.
 */
uint32_t smp_start_aps(smp_fn_t fn, void *arg);
/*
 * Wait (sleeping in hlt, bounded by timeout_ms) until every started AP
 * returned from its function. Returns 0, or -1 on timeout (the CPUs still
 * running are printed). CPU 0 only.
 */
int smp_wait_aps(uint64_t timeout_ms);

/* ---- PV PMU driver (pvpmu.c) ---------------------------------------------- */
/*
 * The guest side of perfvisor's paravirtual PMU (include/perfvisor/pvpmu.h):
 * discovery, counter programming, the shared counter page and the PMI
 * handler. Every call is ring 0 (MSR access) unless it says otherwise; the
 * PMU is per vCPU, so a call acts on the CPU it runs on. Never uses RDPMC.
 */
#include <perfvisor/pvpmu.h>

#define VEC_NMI 2

static inline void cpuid_count(uint32_t leaf, uint32_t sub, uint32_t *a, uint32_t *b, uint32_t *c,
			       uint32_t *d)
{
	asm volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}

/*
 * rdmsr/wrmsr that survive a fault: RT_NO_FAULT on success, else the vector
 * (13 for #GP; *v is then 0). Ring 0; not from inside rt_catch or a handler
 * that may interrupt one (rt_catch does not nest).
 */
int rdmsr_safe(uint32_t msr, uint64_t *v);
int wrmsr_safe(uint32_t msr, uint64_t v);

/* What CPUID 0x40000100..0x40000102 announce. */
struct pvpmu_info {
	uint32_t max_leaf;	/* EAX of 0x40000100 */
	uint32_t version;	/* PV_PMU_VERSION */
	uint32_t nr_counters;	/* counters per vCPU */
	uint32_t width;		/* counter width in bits */
	uint32_t msr_base;	/* first MSR of the block */
	uint32_t nr_events;	/* valid event ids: 0 .. nr_events-1 */
	uint32_t features;	/* PV_PMU_FEAT_* */
	uint32_t min_period;	/* host-counted events, in events */
	uint32_t min_period_ns; /* host-counted time events, in ns */
	uint32_t max_pmi_rate;	/* PMIs per second per vCPU */
	uint32_t host_counters; /* perf events the VM may hold at once */
};

/*
 * Read the CPUID leaves into *info (if not NULL). Returns false, leaving
 * the driver unusable, if the signature is absent (--pmu off). Any ring.
 */
bool pvpmu_probe(struct pvpmu_info *info);
/*
 * pvpmu_probe, then read the AVAIL/SAMPLE/FILTER bitmaps once and cache
 * them for the pvpmu_event_* queries. Ring 0. False if there is no PV PMU.
 */
bool pvpmu_init(struct pvpmu_info *info);
/* From the cached bitmaps (pvpmu_init first): any ring. False for ids out of range. */
bool pvpmu_event_available(uint32_t id);
bool pvpmu_event_can_sample(uint32_t id);
bool pvpmu_event_filters(uint32_t id);
/* A raw bitmap word as cached: kind 0 AVAIL, 1 SAMPLE, 2 FILTER. */
uint64_t pvpmu_bitmap(uint32_t kind, uint32_t word);

/*
 * Program counter i: CTR(i) = 2^width - period (0 for period 0), then
 * CFG(i) = event | flags (PV_PMU_CFG_USR/OS/INT/EN). It counts once also
 * enabled in GLOBAL_CTRL (pvpmu_start). Returns RT_NO_FAULT or the vector
 * the VMM raised (#GP: the combination is refused).
 */
int pvpmu_program(uint32_t i, uint32_t event, uint64_t flags, uint64_t period);
/* The CTR value that overflows after `period` more events. */
static inline uint64_t pvpmu_period_value(uint64_t period)
{
	return (0 - period) & PV_PMU_COUNTER_MASK;
}
/* Set / clear the counters of `mask` in GLOBAL_CTRL (read-modify-write). */
void pvpmu_start(uint64_t mask);
void pvpmu_stop(uint64_t mask);
/* CTR(i) read and write (an MSR exit each). */
uint64_t pvpmu_read(uint32_t i);
void pvpmu_write(uint32_t i, uint64_t value);
/* Disable every counter (GLOBAL_CTRL and CFG = 0), zero them, clear the status. */
void pvpmu_reset(void);

/* This CPU's counter page: 4 KiB-aligned, in guest RAM (one per CPU; any ring). */
struct pv_pmu_page *pvpmu_page(void);
/* Register / unregister this CPU's page (PV_PMU_MSR_PAGE). RT_NO_FAULT or the vector. */
int pvpmu_page_register(void);
void pvpmu_page_unregister(void);
/*
 * Counter i as this CPU's page shows it, read with the seqlock protocol. Works in
 * ring 3 (plain memory reads). Returns false if no consistent copy was seen
 * in a bounded number of tries; *config may be NULL.
 */
bool pvpmu_page_read(uint32_t i, uint64_t *value, uint64_t *config);
/* A consistent copy of the page's header (counter[] not copied). Any ring. */
bool pvpmu_page_header(struct pv_pmu_page *out);

/*
 * PMI handling. The handler reads GLOBAL_STATUS, writes it to STATUS_CLEAR,
 * calls fn(status, arg) (which re-arms counters by writing their CTR), then
 * clears PMI_CFG.MASK if fn returned true (false leaves the PMI masked:
 * further PMIs stay pending until pvpmu_pmi_unmask), and for a vector sends
 * the LAPIC EOI. fn runs in ring 0 with interrupts off, must not print and
 * must not use rdmsr_safe/wrmsr_safe.
 */
typedef bool (*pvpmu_pmi_fn)(uint64_t status, void *arg);
/*
 * Install the handler for VEC_NMI (PMI as NMI) or a fixed vector
 * 0x22..0x2f (enables the LAPIC; the guest must run with interrupts on
 * for it to arrive), and write PMI_CFG accordingly. RT_NO_FAULT or the
 * vector the PMI_CFG write raised.
 */
int pvpmu_pmi_install(uint32_t vector, pvpmu_pmi_fn fn, void *arg);
/* Mask PMIs (PMI_CFG.MASK, so none arrives) and remove the handler. */
void pvpmu_pmi_remove(void);
/* Re-arm by hand: write PMI_CFG without MASK (a pending PMI then arrives). */
void pvpmu_pmi_unmask(void);
/* ---- helpers for PMU tests ---- */
/* pvpmu_init, and a FAIL line "PV PMU present" when there is none. */
bool pvpmu_test_init(struct pvpmu_info *info);
/* n writes to the UART's scratch register 0x3ff: exactly n I/O exits that change nothing. Ring 0. */
void pvpmu_io_exits(uint32_t n);
/* For rt_run_user: spin in ring 3 until the TSC passes arg (a deadline); returns the iterations. */
long rt_spin_until(void *deadline);

/* Handler invocations so far (all CPUs). */
uint64_t pvpmu_pmi_count(void);
/* OR of every status the handler saw since the last call (then reset). */
uint64_t pvpmu_pmi_status_seen(void);

/* ---- a minimal virtio-mmio driver (virtio.c; docs/devices.md) ------------------------ */
#define VIO_BASE 0xd0000000ULL /* perfvisor's first virtio device's window */
#define VIO_GSI 5	       /* ... and its interrupt */
#define VIO_ST_ACK 0x1u
#define VIO_ST_DRIVER 0x2u
#define VIO_ST_DRIVER_OK 0x4u
#define VIO_ST_FEATURES_OK 0x8u
#define VIO_ST_NEEDS_RESET 0x40u
#define VIO_DESC_NEXT 1u
#define VIO_DESC_WRITE 2u

struct vio_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

/* One split queue of at most 16 entries, in one page: desc at 0, avail at 0x100, used at 0x200. */
struct vio_queue {
	struct vio_desc desc[16];
	uint16_t avail_flags, avail_idx, avail_ring[16], used_event;
	uint8_t pad0[0x200 - 0x100 - 38];
	uint16_t used_flags, used_idx;
	struct {
		uint32_t id, len;
	} used_ring[16];
	uint16_t avail_event;
} __attribute__((aligned(4096)));

struct vio_dev {
	uint64_t base;
	struct vio_queue *q;
	uint16_t num;
	uint16_t next_avail; /* the driver's avail idx */
	uint16_t qi;	     /* the queue index (0 unless set: virtio-net's TX queue is 1) */
};

uint32_t vio_read(const struct vio_dev *d, uint32_t off);
void vio_write(const struct vio_dev *d, uint32_t off, uint32_t val);
/* Acknowledge every interrupt cause InterruptStatus shows (an interrupt handler's first step): the causes. */
uint32_t vio_irq_ack(const struct vio_dev *d);
/* Magic, version 2 and device id at d->base: true if a modern virtio-mmio device of that id is there. */
bool vio_probe(const struct vio_dev *d, uint32_t device_id);
/* Reset, ACK, DRIVER, driver features (high word hi, low word lo), FEATURES_OK: the status read back. */
uint32_t vio_negotiate(struct vio_dev *d, uint32_t hi, uint32_t lo);
/* Queue d->qi of `num` entries at q (zeroed here), QueueReady = 1: QueueReady as read back. */
bool vio_queue_setup(struct vio_dev *d, struct vio_queue *q, uint16_t num);
/* Offer descriptor chain `head` (make it available) and notify queue d->qi. */
void vio_offer(struct vio_dev *d, uint16_t head);
/*
 * Route IOAPIC pin gsi, edge, active high, to `vector` on APIC id `apic_id`;
 * mask the 8259 PICs; enable this CPU's LAPIC. Ring 0. An interrupt then
 * waits in the LAPIC while interrupts are off: several coalesce into one.
 */
void vio_ioapic_route(uint32_t gsi, uint8_t vector, uint32_t apic_id);
/* Wait (bounded, in hlt with interrupts on) until the used idx reaches `idx`: true if it did. */
bool vio_wait_used(struct vio_dev *d, uint16_t idx, uint64_t timeout_us);

#endif
