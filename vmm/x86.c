// SPDX-License-Identifier: MIT
/*
 * x86 vCPU state at boot (docs/boot.md): for every protocol the boot
 * vCPU's registers as machine/boot.c asks, and each vCPU's CPUID.
 */
#include "x86.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "perfvisor/bootinfo.h"

#define CR0_PE (1ULL << 0)
#define CR0_MP (1ULL << 1)
#define CR0_ET (1ULL << 4)
#define CR0_NE (1ULL << 5)
#define CR0_WP (1ULL << 16)
#define CR0_PG (1ULL << 31)
#define CR4_PAE (1ULL << 5)
#define CR4_OSFXSR (1ULL << 9)
#define CR4_OSXMMEXCPT (1ULL << 10)
#define EFER_SCE (1ULL << 0)
#define EFER_LME (1ULL << 8)
#define EFER_LMA (1ULL << 10)
#define EFER_NXE (1ULL << 11)

static void set_seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code64)
{
	memset(s, 0, sizeof(*s));
	s->selector = sel;
	s->base = 0;
	s->limit = 0xffffffff;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->l = code64;
	s->db = !code64;
	s->g = 1;
}

/* The boot vCPU as the protocol asks: long mode, or 32-bit protected mode without paging. */
int x86_setup_bsp(int vcpu_fd, const struct boot_cpu *bc, struct errbuf *err)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	if (ioctl(vcpu_fd, KVM_GET_SREGS, &sregs) < 0)
		return errbuf_set(err, -errno, "vCPU 0: KVM_GET_SREGS: %s", strerror(errno));
	set_seg(&sregs.cs, bc->cs, 0xb, bc->long_mode);
	set_seg(&sregs.ds, bc->ds, 0x3, false);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	memset(&sregs.tr, 0, sizeof(sregs.tr));
	sregs.tr.selector = bc->tr;
	sregs.tr.limit = 0x67;
	sregs.tr.type = 0xb; /* busy TSS: 64-bit in long mode, 32-bit otherwise */
	sregs.tr.present = 1;
	memset(&sregs.ldt, 0, sizeof(sregs.ldt));
	sregs.ldt.type = 0x2;
	sregs.ldt.unusable = 1;
	sregs.gdt.base = bc->gdt_gpa;
	sregs.gdt.limit = bc->gdt_limit;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	if (bc->long_mode) {
		sregs.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
		sregs.cr3 = bc->cr3;
		sregs.cr4 = CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT;
		sregs.efer = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
	} else {
		sregs.cr0 = CR0_PE | CR0_ET;
		sregs.cr3 = 0;
		sregs.cr4 = 0;
		sregs.efer = 0;
	}
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &sregs) < 0)
		return errbuf_set(err, -errno, "vCPU 0: KVM_SET_SREGS (%s): %s",
				  bc->long_mode ? "long mode" : "32-bit protected mode", strerror(errno));

	memset(&regs, 0, sizeof(regs));
	regs.rip = bc->rip;
	regs.rsp = bc->rsp;
	regs.rax = bc->rax;
	regs.rbx = bc->rbx;
	regs.rsi = bc->rsi;
	regs.rdi = bc->rdi;
	regs.rflags = 0x2;
	if (ioctl(vcpu_fd, KVM_SET_REGS, &regs) < 0)
		return errbuf_set(err, -errno, "vCPU 0: KVM_SET_REGS: %s", strerror(errno));
	return 0;
}

int x86_setup_cpuid(const struct kvm_sys *kvm, const struct vm_pmu *pmu, unsigned index, unsigned n,
		    unsigned add, unsigned hide, int vcpu_fd, struct kvm_cpuid2 **out, struct errbuf *err)
{
	const struct kvm_cpuid2 *sup = kvm->cpuid;
	unsigned cap = sup->nent + CPUID_EXTRA_ENTRIES + VM_PMU_CPUID_LEAVES;
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + cap * sizeof(c->entries[0]));
	int rc = 0;

	*out = NULL;
	if (!c)
		return errbuf_set(err, -ENOMEM, "out of memory");
	/* The room for the PMU's leaves is kept free by passing a smaller cap. */
	rc = cpuid_build(sup, index, n, c, cap - VM_PMU_CPUID_LEAVES);
	if (rc) {
		free(c);
		return errbuf_set(err, rc, "vCPU %u: CPUID: more leaves than expected", index);
	}
	cpuid_add(c, add);
	cpuid_hide(c, hide);
	vm_pmu_cpuid(pmu, c);
	if (vcpu_fd >= 0 && ioctl(vcpu_fd, KVM_SET_CPUID2, c) < 0) {
		rc = errbuf_set(err, -errno, "vCPU %u: KVM_SET_CPUID2: %s", index, strerror(errno));
		free(c);
		return rc;
	}
	*out = c; /* as configured: a snapshot saves it, a restore compares it */
	return 0;
}
