/* SPDX-License-Identifier: MIT */
/*
 * Private to the guest runtime: segment selectors, vectors, stack layout
 * (shared with the assembly files) and the per-CPU structure. Tests use
 * guest.h only.
 */
#ifndef GUEST_RT_INTERNAL_H
#define GUEST_RT_INTERNAL_H

/* GDT layout: fixed descriptors, then one 16-byte TSS descriptor per CPU. */
#define RT_KERNEL_CS 0x08 /* 64-bit ring 0 code, same selector as the VMM's */
#define RT_KERNEL_DS 0x10
#define RT_KERNEL_CS32 0x18 /* 32-bit code, used by the AP trampoline only */
#define RT_USER_DS 0x20	    /* ring 3 data, used with RPL 3 */
#define RT_USER_CS 0x28	    /* 64-bit ring 3 code, used with RPL 3 */
#define RT_TSS_SEL0 0x30    /* TSS of CPU i: RT_TSS_SEL0 + 16 * i */
#define RT_GDT_ENTRIES (6 + 2 * 64)

/* Per-CPU stacks: a 16 KiB kernel stack followed by a 16 KiB user stack. */
#define RT_KSTACK_SIZE 0x4000
#define RT_USTACK_SIZE 0x4000
#define RT_STACKS_SHIFT 15 /* log2(RT_KSTACK_SIZE + RT_USTACK_SIZE) */

/* The real-mode AP trampoline is copied here; SIPI vector = page number. */
#define RT_TRAMPOLINE_GPA 0x20000

/* Interrupt vectors the runtime uses besides the 32 exceptions. */
#define RT_VEC_TIMER 0x20      /* LAPIC timer tick while the BSP waits */
#define RT_VEC_WAKE 0x21       /* IPI from an AP to wake the waiting BSP */
#define RT_VEC_FIRST_FREE 0x22 /* 0x22..0x2f: free for tests (rt_set_handler) */
#define RT_VEC_LAST_STUB 0x2f
#define RT_VEC_SPURIOUS 0xff

/* Local APIC (xAPIC MMIO at 0xfee00000) registers and ICR commands. */
#define APIC_BASE 0xfee00000
#define APIC_ID 0x20
#define APIC_EOI 0xb0
#define APIC_SVR 0xf0
#define APIC_ICR_LO 0x300
#define APIC_ICR_HI 0x310
#define APIC_LVT_TIMER 0x320
#define APIC_TIMER_INIT 0x380
#define APIC_TIMER_DIV 0x3e0
#define APIC_ICR_INIT 0x00004500  /* INIT, level assert */
#define APIC_ICR_SIPI 0x00004600  /* STARTUP | vector */
#define APIC_ICR_FIXED 0x00004000 /* fixed | vector */

#ifndef __ASSEMBLER__

#include "guest.h"

struct rt_tss {
	uint32_t reserved0;
	uint64_t rsp0; /* kernel stack used when ring 3 traps to ring 0 */
	uint64_t rsp1, rsp2;
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base; /* = sizeof: no I/O bitmap, ring 3 port I/O faults */
} __attribute__((packed));
_Static_assert(sizeof(struct rt_tss) == 104, "tss");

/* Callee-saved state for rt_setjmp/rt_longjmp (entry.S). */
struct rt_jmp {
	uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
};

enum rt_cpu_state {
	RT_CPU_OFFLINE = 0,
	RT_CPU_RUNNING = 1, /* AP checked in and runs its function */
	RT_CPU_DONE = 2,    /* AP function returned; the AP is parked in hlt */
};

struct rt_cpu {
	uint32_t index;
	uint32_t apic_id;
	uint32_t state;		 /* enum rt_cpu_state, accessed atomically */
	uint32_t line_len;	 /* bytes pending in ucall.text (printf) */
	struct rt_jmp *catch_jb; /* active rt_catch, or NULL */
	struct rt_fault *catch_fault;
	struct rt_jmp *user_jb; /* active rt_run_user, or NULL */
	struct rt_fault *user_fault;
	uint64_t user_ret;
	struct rt_tss tss;
	/* One ucall block per CPU: its text[] doubles as the printf line buffer. */
	struct pv_ucall ucall __attribute__((aligned(64)));
} __attribute__((aligned(64)));

struct rt_stacks {
	uint8_t kernel[RT_KSTACK_SIZE];
	uint8_t user[RT_USTACK_SIZE];
};

extern struct rt_cpu rt_cpus[PV_MAX_CPUS];
extern struct rt_stacks rt_stacks[PV_MAX_CPUS];
extern uint64_t rt_gdt[RT_GDT_ENTRIES];
extern uint8_t rt_apic_to_cpu[256]; /* APIC id -> cpu index + 1, 0 = unknown */
extern uint64_t rt_ap_cr0, rt_ap_cr3, rt_ap_cr4, rt_ap_efer;
extern const char rt_tramp_start[], rt_tramp_end[];

/* The CPU we run on, found from the stack pointer (kernel or user stack). */
static inline struct rt_cpu *rt_this_cpu(void)
{
	uintptr_t sp;
	uintptr_t i;

	asm volatile("mov %%rsp, %0" : "=r"(sp));
	i = (sp - (uintptr_t)rt_stacks) >> RT_STACKS_SHIFT;
	return &rt_cpus[i < PV_MAX_CPUS ? i : 0];
}

/* entry.S */
int rt_setjmp(struct rt_jmp *jb) __attribute__((returns_twice));
__attribute__((noreturn)) void rt_longjmp(struct rt_jmp *jb, int val);
/* tss_rsp0 points at the (unaligned, packed) RSP0 field of this CPU's TSS. */
void rt_user_enter(long (*fn)(void *), void *arg, uint64_t user_rsp, void *tss_rsp0);
/* The ud2 ring 3 runs when its function returned: a #UD here means "done". */
extern const char rt_user_return[];
__attribute__((noreturn)) void rt_park(void);

/* cpu.c */
void rt_gdt_load(void);
void rt_idt_init(void);
void rt_cpu_init(struct rt_cpu *c);
void rt_user_pages_init(uint64_t mem_size);

/* start.c / smp.c: C entry points called from entry.S */
__attribute__((noreturn)) void rt_start(const struct pv_bootinfo *bi);
__attribute__((noreturn)) void rt_ap_start(uint32_t cpu);

/* apic.c */
uint32_t apic_read(uint32_t reg);
void apic_write(uint32_t reg, uint32_t val);
void apic_sw_enable(void);
void apic_send_ipi(uint32_t apic_id, uint32_t icr_lo);
void apic_timer_periodic(uint8_t vector, uint32_t count);
void apic_timer_stop(void);

/* printf.c / ucall.c */
void rt_line_flush(struct rt_cpu *c);
void ucall_send(struct rt_cpu *c, uint32_t cmd);

#endif /* __ASSEMBLER__ */
#endif
