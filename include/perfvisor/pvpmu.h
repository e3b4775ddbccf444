/* SPDX-License-Identifier: MIT */
/*
 * The perfvisor paravirtual PMU ABI: CPUID discovery leaves, the virtual
 * MSR block, the event namespace and the shared counter page. The single
 * definition used by the VMM (pmu/) and by guests (guest-images/lib/pvpmu.c,
 * and the Linux driver in guest-drivers/linux/, which includes it in the kernel).
 * docs/pvpmu.md is the prose version; every field and bit is explained there.
 * Fixed-width types only, no bitfields; reserved bits and fields are zero.
 */
#ifndef PERFVISOR_PVPMU_H
#define PERFVISOR_PVPMU_H

#ifdef __KERNEL__
#include <linux/types.h> /* a Linux kernel module: uint32_t/uint64_t come from here */
#else
#include <stdint.h>
#endif

/* ---- discovery: CPUID ------------------------------------------------------
 * Leaves 0x40000100.. leave KVM's own 0x40000000.. leaves in place. They are
 * absent when the VMM runs with --pmu off: KVM then answers as for any leaf
 * it does not know (zeros for AMD vCPUs, the highest basic leaf for Intel
 * vCPUs), so a driver checks the whole signature.
 */
#define PV_PMU_CPUID_SIGNATURE 0x40000100u /* EAX: highest PV PMU leaf; EBX,ECX,EDX: signature */
#define PV_PMU_CPUID_INFO 0x40000101u	   /* see PV_PMU_INFO_* */
#define PV_PMU_CPUID_LIMITS 0x40000102u	   /* see PV_PMU_LIMITS_* */
#define PV_PMU_CPUID_MAX PV_PMU_CPUID_LIMITS

/* "PerfvisorPMU" in EBX, ECX, EDX (little-endian, as the x86 vendor string). */
#define PV_PMU_SIG_EBX 0x66726550u /* "Perf" */
#define PV_PMU_SIG_ECX 0x6f736976u /* "viso" */
#define PV_PMU_SIG_EDX 0x554d5072u /* "rPMU" */

/* Leaf 0x40000101 */
#define PV_PMU_INFO_EAX_VERSION(eax) ((eax)&0xffu) /* ABI version, 1 */
#define PV_PMU_INFO_EAX_NR_COUNTERS(eax) \
	(((eax) >> 8) & 0xffu)				   /* counters per vCPU, <= PV_PMU_MAX_COUNTERS */
#define PV_PMU_INFO_EAX_WIDTH(eax) (((eax) >> 16) & 0xffu) /* counter width in bits, 48 */
/* EBX: index of the first MSR of the block (PV_PMU_MSR_BASE in version 1). */
/* ECX[15:0]: number of event ids (valid ids are 0 .. n-1); ECX[31:16] reserved. */
#define PV_PMU_INFO_ECX_NR_EVENTS(ecx) ((ecx)&0xffffu)
/* EDX: feature bits. */
#define PV_PMU_FEAT_PAGE (1u << 0)	 /* shared counter page (PV_PMU_MSR_PAGE) */
#define PV_PMU_FEAT_PMI_NMI (1u << 1)	 /* PMI as NMI */
#define PV_PMU_FEAT_PMI_VECTOR (1u << 2) /* PMI as a fixed interrupt vector */
#define PV_PMU_FEAT_HOST_HW (1u << 3) /* the host has a hardware PMU (some class-0 events may be available) */
#define PV_PMU_FEAT_ACK \
	(1u << 4) /* PV_PMU_MSR_PMI_ACK and PV_PMU_MSR_RELOAD(i): a PMI handled in one write */

/* Leaf 0x40000102 */
/* EAX: minimum sampling period of host-counted events (classes 0, 1) counted in events. */
/* EBX: minimum sampling period of host-counted events counted in nanoseconds (task-clock). */
/* (Class 2 events overflow exactly at the exit that wraps them; the PMI rate cap still applies.) */
/* ECX: maximum PMIs per second per vCPU (more are delayed, PV_PMU_STATUS_THROTTLED). */
/* EDX: host counters (perf events) this VM may hold at once, all vCPUs together. */

#define PV_PMU_VERSION 1u
#define PV_PMU_MAX_COUNTERS 32u /* the MSR block and page have room for this many */
#define PV_PMU_COUNTER_WIDTH 48u
#define PV_PMU_COUNTER_MASK ((1ULL << PV_PMU_COUNTER_WIDTH) - 1)

/* ---- the MSR block ------------------------------------------------------------
 * 256 MSRs from PV_PMU_MSR_BASE. Any index in the block not listed here, and
 * a counter MSR of a counter >= nr_counters, raises #GP. Per vCPU: each vCPU
 * has its own counters, status and page.
 */
#define PV_PMU_MSR_BASE 0x4b564e00u
#define PV_PMU_MSR_BLOCK_SIZE 0x100u

/* Global registers. RW = read/write, RO = read-only (#GP on write), WO = write-only (reads 0). */
#define PV_PMU_MSR_GLOBAL_CTRL (PV_PMU_MSR_BASE + 0x00)	  /* RW: bit i enables counter i */
#define PV_PMU_MSR_GLOBAL_STATUS (PV_PMU_MSR_BASE + 0x01) /* RO: overflow status, PV_PMU_STATUS_* */
#define PV_PMU_MSR_STATUS_CLEAR (PV_PMU_MSR_BASE + 0x02)  /* WO: write 1s to clear status bits */
#define PV_PMU_MSR_PMI_CFG (PV_PMU_MSR_BASE + 0x03)	  /* RW: PV_PMU_PMI_* */
#define PV_PMU_MSR_ERROR (PV_PMU_MSR_BASE + 0x04)	  /* RO: bit i: counter i enabled but not backed */
#define PV_PMU_MSR_PAGE (PV_PMU_MSR_BASE + 0x05)	  /* RW: counter page GPA | PV_PMU_PAGE_ENABLE */
#define PV_PMU_MSR_NOP (PV_PMU_MSR_BASE + 0x06)		  /* RW: reads 0, ignores writes, changes nothing */
/* With PV_PMU_FEAT_ACK (else #GP), WO: clear these GLOBAL_STATUS bits, load RELOAD(i) into CTR(i) for
 * each counter bit i written whose RELOAD(i) is not 0, and clear PMI_CFG's MASK; one exit per PMI. */
#define PV_PMU_MSR_PMI_ACK (PV_PMU_MSR_BASE + 0x09)

/* Per counter i (0 <= i < nr_counters). */
#define PV_PMU_MSR_CFG(i) (PV_PMU_MSR_BASE + 0x20 + 2 * (i)) /* RW: PV_PMU_CFG_* */
#define PV_PMU_MSR_CTR(i) (PV_PMU_MSR_BASE + 0x21 + 2 * (i)) /* RW: the count (width bits) */
/* With PV_PMU_FEAT_ACK (else #GP), RW: what PMI_ACK loads into CTR(i) (width bits, written as CTR(i) is); 0: nothing. */
#define PV_PMU_MSR_RELOAD(i) (PV_PMU_MSR_BASE + 0x60 + (i))

/* Event bitmaps, RO: word w covers event ids 64*w .. 64*w+63; w < nr_events/64 rounded up. */
#define PV_PMU_MSR_AVAIL(w) (PV_PMU_MSR_BASE + 0x80 + (w))  /* the host can back the event */
#define PV_PMU_MSR_SAMPLE(w) (PV_PMU_MSR_BASE + 0x90 + (w)) /* the event can interrupt on overflow */
#define PV_PMU_MSR_FILTER(w) (PV_PMU_MSR_BASE + 0xa0 + (w)) /* the event honours USR/OS separately */
#define PV_PMU_MAX_BITMAP_WORDS 16u

/* PV_PMU_MSR_CFG(i) */
#define PV_PMU_CFG_EVENT_MASK 0xffffULL /* bits 15:0 event id */
#define PV_PMU_CFG_USR (1ULL << 16)	/* count while the guest runs at CPL > 0 */
#define PV_PMU_CFG_OS (1ULL << 17)	/* count while the guest runs at CPL 0 */
#define PV_PMU_CFG_INT (1ULL << 20)	/* raise a PMI on overflow */
#define PV_PMU_CFG_EN (1ULL << 22)	/* enable (counts when also set in GLOBAL_CTRL) */
#define PV_PMU_CFG_VALID \
	(PV_PMU_CFG_EVENT_MASK | PV_PMU_CFG_USR | PV_PMU_CFG_OS | PV_PMU_CFG_INT | PV_PMU_CFG_EN)

/* PV_PMU_MSR_GLOBAL_STATUS / PV_PMU_MSR_STATUS_CLEAR */
/* bits 0..nr_counters-1: counter i overflowed (wrapped past 2^width - 1) */
#define PV_PMU_STATUS_THROTTLED (1ULL << 63) /* a PMI was delayed by the per-vCPU rate cap */

/* PV_PMU_MSR_PMI_CFG */
#define PV_PMU_PMI_VECTOR_MASK 0xffULL	   /* bits 7:0 vector (0x20..0xff) when PV_PMU_PMI_MODE_VECTOR */
#define PV_PMU_PMI_MODE_VECTOR (1ULL << 8) /* 0: deliver as NMI; 1: as a fixed interrupt on `vector` */
#define PV_PMU_PMI_MASK (1ULL << 16)	   /* set by the VMM on each PMI; the guest clears it to re-arm */
#define PV_PMU_PMI_VALID (PV_PMU_PMI_VECTOR_MASK | PV_PMU_PMI_MODE_VECTOR | PV_PMU_PMI_MASK)

/* PV_PMU_MSR_PAGE */
#define PV_PMU_PAGE_ENABLE (1ULL << 0)
#define PV_PMU_PAGE_ADDR_MASK (~0xfffULL) /* bits 11:1 reserved */

/* ---- events --------------------------------------------------------------------
 * 64 ids per class: id = class * 64 + n. Availability is per host (bitmaps).
 */
#define PV_PMU_EVENTS_PER_CLASS 64u
#define PV_PMU_NR_EVENTS 256u
#define PV_PMU_EVENT_CLASS(id) ((id) / PV_PMU_EVENTS_PER_CLASS)

enum pv_pmu_event_class {
	PV_PMU_CLASS_HW = 0,  /* host hardware events, counted for the guest only */
	PV_PMU_CLASS_SW = 1,  /* host software events on the vCPU thread */
	PV_PMU_CLASS_HV = 2,  /* counted exactly by the VMM */
	PV_PMU_CLASS_KVM = 3, /* KVM's binary statistics of the vCPU, by name */
};

enum pv_pmu_event {
	/* class 0: perf PERF_TYPE_HARDWARE, config = id; exclude_host */
	PV_PMU_EV_CYCLES = 0x00,
	PV_PMU_EV_INSTRUCTIONS = 0x01,
	PV_PMU_EV_CACHE_REFERENCES = 0x02,
	PV_PMU_EV_CACHE_MISSES = 0x03,
	PV_PMU_EV_BRANCHES = 0x04,
	PV_PMU_EV_BRANCH_MISSES = 0x05,
	PV_PMU_EV_BUS_CYCLES = 0x06,
	PV_PMU_EV_STALLED_FRONTEND = 0x07,
	PV_PMU_EV_STALLED_BACKEND = 0x08,
	PV_PMU_EV_REF_CYCLES = 0x09,
	/* class 1: perf PERF_TYPE_SOFTWARE on the vCPU thread (guest and VMM time together) */
	PV_PMU_EV_TASK_CLOCK = 0x40, /* nanoseconds */
	PV_PMU_EV_PAGE_FAULTS = 0x41,
	PV_PMU_EV_CONTEXT_SWITCHES = 0x42,
	PV_PMU_EV_CPU_MIGRATIONS = 0x43,
	PV_PMU_EV_MINOR_FAULTS = 0x44,
	PV_PMU_EV_MAJOR_FAULTS = 0x45,
	/* class 2: counted by the VMM, exact, updated at every exit of the vCPU */
	PV_PMU_EV_EXITS = 0x80,	   /* returns from KVM_RUN with an exit to handle */
	PV_PMU_EV_EXITS_IO = 0x81, /* port I/O exits */
	PV_PMU_EV_EXITS_MMIO = 0x82,
	PV_PMU_EV_EXITS_MSR = 0x83, /* userspace MSR exits, reads and writes */
	PV_PMU_EV_EXITS_HLT = 0x84,
	PV_PMU_EV_EXITS_INTR = 0x85, /* KVM_RUN interrupted by a signal */
	PV_PMU_EV_KVM_RUN_NS = 0x86, /* nanoseconds inside KVM_RUN */
	PV_PMU_EV_VMM_NS = 0x87,     /* nanoseconds in the VMM between KVM_RUN calls */
	PV_PMU_EV_PMIS = 0x88,	     /* PMIs this PMU injected (NMI or vector) */
	PV_PMU_EV_EXITS_MSR_READ = 0x89,
	PV_PMU_EV_EXITS_MSR_WRITE = 0x8a,
	/* class 3: KVM_GET_STATS_FD values of the vCPU, refreshed at most every 100 ms */
	PV_PMU_EV_KVM_EXITS = 0xc0,		/* "exits" */
	PV_PMU_EV_KVM_IO_EXITS = 0xc1,		/* "io_exits" */
	PV_PMU_EV_KVM_MMIO_EXITS = 0xc2,	/* "mmio_exits" */
	PV_PMU_EV_KVM_HALT_EXITS = 0xc3,	/* "halt_exits" */
	PV_PMU_EV_KVM_IRQ_EXITS = 0xc4,		/* "irq_exits" */
	PV_PMU_EV_KVM_NMI_INJECTIONS = 0xc5,	/* "nmi_injections" */
	PV_PMU_EV_KVM_IRQ_INJECTIONS = 0xc6,	/* "irq_injections" */
	PV_PMU_EV_KVM_SIGNAL_EXITS = 0xc7,	/* "signal_exits" */
	PV_PMU_EV_KVM_PF_TAKEN = 0xc8,		/* "pf_taken" */
	PV_PMU_EV_KVM_INSN_EMULATION = 0xc9,	/* "insn_emulation" */
	PV_PMU_EV_KVM_HALT_WAKEUP = 0xca,	/* "halt_wakeup" */
	PV_PMU_EV_KVM_HOST_STATE_RELOAD = 0xcb, /* "host_state_reload" */
};

/* ---- the shared counter page ------------------------------------------------------
 * One 4 KiB guest page per vCPU, registered with PV_PMU_MSR_PAGE. The VMM
 * writes it on that vCPU's thread: at every exit of the vCPU to the VMM and
 * after every PMU MSR access, and (while a host counter is enabled) at least
 * every refresh_us microseconds. Read it as a seqlock: read seq (retry while
 * odd), copy, read barrier, read seq again, retry if it changed.
 */
struct pv_pmu_page_counter {
	uint64_t value;	 /* the counter, as PV_PMU_MSR_CTR(i) would read at the last update */
	uint64_t config; /* PV_PMU_MSR_CFG(i) */
};

struct pv_pmu_page {
	uint32_t seq;	      /* odd while the VMM writes */
	uint32_t version;     /* PV_PMU_VERSION */
	uint32_t size;	      /* bytes of this struct the VMM fills (sizeof in version 1) */
	uint32_t nr_counters; /* entries of counter[] that are valid */
	uint64_t global_ctrl;
	uint64_t global_status;
	uint64_t error;
	uint64_t updates;    /* number of updates so far: changes whenever the VMM writes the page */
	uint32_t refresh_us; /* the longest the VMM lets a host-counted value age while the vCPU runs */
	uint32_t flags;	     /* reserved, 0 */
	uint64_t reserved[3];
	struct pv_pmu_page_counter counter[PV_PMU_MAX_COUNTERS];
};

_Static_assert(sizeof(struct pv_pmu_page_counter) == 16, "page counter size");
_Static_assert(__builtin_offsetof(struct pv_pmu_page, global_ctrl) == 16, "page layout");
_Static_assert(__builtin_offsetof(struct pv_pmu_page, counter) == 80, "page layout");
_Static_assert(sizeof(struct pv_pmu_page) == 80 + 16 * PV_PMU_MAX_COUNTERS, "page size");
_Static_assert(sizeof(struct pv_pmu_page) <= 4096, "page fits a page");

#endif
