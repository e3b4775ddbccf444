// SPDX-License-Identifier: MIT
/*
 * perfvisor's own ELF64 boot contract (docs/boot.md): the flat GDT, the
 * identity-mapping page tables, the boot info block and the command line
 * in the VMM-reserved low area. Pure: guest memory only.
 */
#include "machine/boot_internal.h"

#include <errno.h>
#include <string.h>

#include "perfvisor/bootinfo.h"

/* GDT: null, 64-bit code (0x08), data (0x10), 64-bit TSS (0x18, 16 bytes). */
static const uint64_t boot_gdt[] = {
	0,
	0x00af9b000000ffffULL, /* code: P, DPL0, S, exec/read, accessed, L, G */
	0x00cf93000000ffffULL, /* data: P, DPL0, S, read/write, accessed, D/B, G */
	0x00008b0000000067ULL, /* TSS (busy) base 0 limit 0x67: VMX wants a usable TR */
	0,
};

static void *boot_ptr(struct gmem *mem, uint64_t gpa, uint64_t len)
{
	/* gmem_check_size() guarantees RAM >= 4 MiB, so the boot area always fits. */
	return gmem_hva(mem, gpa, len);
}

int boot_write_elf64(struct gmem *mem, const struct boot_elf64 *b, struct errbuf *err)
{
	uint64_t *pml4 = boot_ptr(mem, PV_PML4_GPA, 4096);
	uint64_t *pdpt = boot_ptr(mem, PV_PDPT_GPA, 4096);
	uint64_t *pd = boot_ptr(mem, PV_PD_GPA, 4 * 4096);
	struct pv_bootinfo *bi = boot_ptr(mem, PV_BOOTINFO_GPA, sizeof(*bi));
	char *cmdline = boot_ptr(mem, PV_CMDLINE_GPA, PV_CMDLINE_MAX);
	size_t cmdlen = strlen(b->cmdline);

	if (!pml4 || !pdpt || !pd || !bi || !cmdline)
		return errbuf_set(err, -EINVAL, "guest memory too small for the boot area");
	if (cmdlen >= PV_CMDLINE_MAX)
		return errbuf_set(err, -EINVAL, "command line longer than %u bytes", PV_CMDLINE_MAX - 1);

	memcpy(boot_ptr(mem, PV_GDT_GPA, sizeof(boot_gdt)), boot_gdt, sizeof(boot_gdt));
	/* Identity map of the first 4 GiB with 2 MiB pages: 4 PDs of 512 entries. */
	_Static_assert(PV_PDPT_GPA == PV_PML4_GPA + 4096 && PV_PD_GPA == PV_PML4_GPA + 2 * 4096, "layout");
	boot_identity_map(mem, PV_PML4_GPA);

	memset(bi, 0, sizeof(*bi));
	bi->magic = PV_BOOTINFO_MAGIC;
	bi->version = PV_BOOTINFO_VERSION;
	bi->size = sizeof(*bi);
	bi->nr_cpus = b->nr_cpus;
	bi->bsp_apic_id = 0;
	bi->mem_size = mem->size;
	bi->cmdline_gpa = PV_CMDLINE_GPA;
	bi->cmdline_len = (uint32_t)cmdlen;
	bi->nr_memmap = 2;
	bi->memmap[0] = (struct pv_memmap_entry){ 0, PV_RESERVED_END, PV_MEM_RESERVED, 0 };
	bi->memmap[1] =
		(struct pv_memmap_entry){ PV_RESERVED_END, mem->size - PV_RESERVED_END, PV_MEM_RAM, 0 };
	for (unsigned i = 0; i < b->nr_cpus; i++)
		bi->apic_ids[i] = i;
	bi->tsc_khz = b->tsc_khz;
	bi->host_kind = b->host->kind;
	bi->host_flags = b->host->flags;

	memset(cmdline, 0, PV_CMDLINE_MAX);
	memcpy(cmdline, b->cmdline, cmdlen);
	return 0;
}
