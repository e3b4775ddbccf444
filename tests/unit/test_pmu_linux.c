// SPDX-License-Identifier: MIT
/*
 * Unit tests of what the profiler reads of a Linux guest (pmu/linux.c):
 * loading a vmlinux this test writes (an ELF with .BTF made by libbpf's
 * writer, ORC tables and a version banner), the current task of a vCPU
 * and the ORC walk on a fake guest memory, and both on hostile memory:
 * pointers outside it, a task pointer into user space, a stack that does
 * not move up, a table without an entry; never a read outside.
 */
#include <bpf/btf.h>
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmu/pmu.h"
#include "tests/unit/elf_fake.h"

/* ---- the fake guest memory: MEM_SIZE bytes at MEM_BASE (a kernel direct map) ---- */
#define MEM_BASE 0xff11000000000000ULL /* 5-level paging's direct map: bit 63, under 0xffff8... */
#define MEM_SIZE 0x10000
static uint8_t mem[MEM_SIZE];

static bool rd(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	if (gva < MEM_BASE || gva - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (gva - MEM_BASE))
		return false;
	memcpy(buf, mem + (gva - MEM_BASE), len);
	return true;
}

static void put64(uint64_t gva, uint64_t v)
{
	memcpy(mem + (gva - MEM_BASE), &v, 8);
}

/* ---- a vmlinux: ELF64 with the sections the loader looks for ---- */
struct sec {
	const char *name;
	const void *data;
	size_t size;
	uint64_t addr;
};

static uint8_t *write_elf(const struct sec *s, unsigned n, size_t *len)
{
	char names[256] = "";
	size_t nlen = 1, off = sizeof(Elf64_Ehdr), data_end;
	unsigned shnum = n + 2; /* null, the sections, .shstrtab */
	uint32_t name_off[8];
	uint8_t *img;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;

	cr_assert_leq(n, 6);
	for (unsigned i = 0; i < n; i++) {
		name_off[i] = (uint32_t)nlen;
		strcpy(names + nlen, s[i].name);
		nlen += strlen(s[i].name) + 1;
	}
	name_off[n] = (uint32_t)nlen;
	strcpy(names + nlen, ".shstrtab");
	nlen += 10;
	data_end = off;
	for (unsigned i = 0; i < n; i++)
		data_end += s[i].size;
	data_end += nlen;
	data_end = (data_end + 7) & ~(size_t)7;
	*len = data_end + shnum * sizeof(Elf64_Shdr);
	img = calloc(1, *len);
	cr_assert_not_null(img);
	eh = (Elf64_Ehdr *)img;
	elf_fake_header(eh);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = (uint16_t)shnum;
	eh->e_shstrndx = (uint16_t)(n + 1);
	eh->e_shoff = data_end;
	sh = (Elf64_Shdr *)(img + data_end);
	for (unsigned i = 0; i <= n; i++) {
		const void *d = i < n ? s[i].data : names;
		size_t sz = i < n ? s[i].size : nlen;

		sh[i + 1] = (Elf64_Shdr){ .sh_name = name_off[i],
					  .sh_type = i < n ? SHT_PROGBITS : SHT_STRTAB,
					  .sh_offset = off,
					  .sh_size = sz,
					  .sh_addr = i < n ? s[i].addr : 0 };
		memcpy(img + off, d, sz);
		off += sz;
	}
	return img;
}

/* A BTF like a kernel's, for what the loader reads: task_struct (tgid inside an anonymous struct), current_task. */
static struct btf *kernel_btf(bool with_current)
{
	struct btf *b = btf__new_empty();
	int i32, chr, arr, ptr, task, anon, var, sec;

	cr_assert_not_null(b);
	i32 = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	chr = btf__add_int(b, "char", 1, BTF_INT_SIGNED);
	arr = btf__add_array(b, i32, chr, 16);
	task = btf__add_struct(b, "task_struct", 0x400);
	cr_assert_geq(btf__add_field(b, "state", i32, 0, 0), 0);
	cr_assert_geq(btf__add_field(b, "comm", arr, 0x300 * 8, 0), 0);
	cr_assert_geq(btf__add_field(b, "", 0, 0x100 * 8, 0), 0); /* the anonymous member: fixed below */
	anon = btf__add_struct(b, NULL, 8);
	cr_assert_geq(btf__add_field(b, "pid", i32, 0, 0), 0);
	cr_assert_geq(btf__add_field(b, "tgid", i32, 32, 0), 0);
	/* Point task_struct's third member at the anonymous struct. */
	btf_members((struct btf_type *)btf__type_by_id(b, task))[2].type = anon;
	ptr = btf__add_ptr(b, task);
	var = btf__add_var(b, with_current ? "current_task" : "other", BTF_VAR_GLOBAL_ALLOCATED, ptr);
	sec = btf__add_datasec(b, ".data..percpu", 0x100);
	cr_assert_geq(btf__add_datasec_var_info(b, var, 0x40, 8), 0);
	(void)sec;
	return b;
}

#define TEXT 0xffffffff81000000ULL
/* ORC (Linux 6.1): sp_reg:4 bp_reg:4 type:2 end:1 */
#define ORC(spr, bpr, type, end) ((uint16_t)((spr) | (bpr) << 4 | (type) << 8 | (end) << 10))

struct orc6 {
	int16_t sp, bp;
	uint16_t bits;
} __attribute__((packed));

/* F: one push (cfa sp+16); G: a frame pointer frame; E: pt_regs at sp (an entry); then the end. */
static const uint64_t orc_addr[] = { TEXT + 0x1000, TEXT + 0x2000, TEXT + 0x3000, TEXT + 0x4000 };
static const struct orc6 orc_ent[] = {
	{ 16, 0, ORC(5, 0, 0, 0) },
	{ 16, -16, ORC(4, 1, 0, 0) },
	{ 0, 0, ORC(5, 0, 1, 0) },
	{ 0, 0, ORC(0, 0, 0, 1) },
};

static uint8_t *vmlinux(bool btf_ok, bool orc_ok, const char *banner, size_t *len)
{
	struct btf *b = kernel_btf(btf_ok);
	uint32_t braw_len;
	const void *braw = btf__raw_data(b, &braw_len);
	int32_t ip[4];
	struct sec s[4];
	unsigned n = 0;
	uint8_t *img;
	const uint64_t ip_addr = TEXT + 0x800000;

	for (unsigned i = 0; i < 4; i++)
		ip[i] = (int32_t)(orc_addr[orc_ok ? i : 3 - i] - (ip_addr + 4 * i));
	s[n++] = (struct sec){ ".rodata", banner, strlen(banner) + 1, TEXT + 0x600000 };
	s[n++] = (struct sec){ ".BTF", braw, braw_len, TEXT + 0x700000 };
	s[n++] = (struct sec){ ".orc_unwind_ip", ip, sizeof(ip), ip_addr };
	s[n++] = (struct sec){ ".orc_unwind", orc_ent, sizeof(orc_ent), TEXT + 0x900000 };
	img = write_elf(s, n, len);
	btf__free(b);
	return img;
}

Test(linux_guest, load_a_kernel)
{
	struct prof_linux lx;
	struct errbuf err;
	size_t len;
	uint8_t *img =
		vmlinux(true, true, "Linux version 6.1.0-57-amd64 (debian-kernel@lists.debian.org)", &len);

	cr_assert_eq(prof_linux_load(&lx, img, len, &err), 0, "%s", err.msg);
	cr_assert(lx.tasks, "%s", lx.tasks_why);
	cr_assert_eq(lx.current_task, 0x40);
	cr_assert_eq(lx.off_tgid, 0x104, "tgid inside the anonymous struct at 0x100");
	cr_assert_eq(lx.off_comm, 0x300);
	cr_assert_eq(lx.n_orc, 4, "%s", lx.orc_why);
	cr_assert_eq(lx.orc_format, 1);
	cr_assert_eq(lx.orc_ip[1], TEXT + 0x2000);
	cr_assert_eq(lx.version[0], 6);
	cr_assert_eq(lx.version[1], 1);
	prof_linux_fini(&lx);
	free(img);
}

Test(linux_guest, load_what_is_missing)
{
	struct prof_linux lx;
	struct errbuf err;
	size_t len;
	uint8_t *img = vmlinux(false, false, "Linux version 6.4.2", &len);

	cr_assert_eq(prof_linux_load(&lx, img, len, &err), 0, "%s", err.msg);
	cr_assert_not(lx.tasks);
	cr_assert(strstr(lx.tasks_why, "the per-CPU current task"), "%s", lx.tasks_why);
	cr_assert_eq(lx.n_orc, 0);
	cr_assert(strstr(lx.orc_why, "not sorted"), "%s", lx.orc_why);
	prof_linux_fini(&lx);
	free(img);
	img = vmlinux(true, true, "no banner here", &len);
	cr_assert_eq(prof_linux_load(&lx, img, len, &err), 0, "%s", err.msg);
	cr_assert(lx.tasks);
	cr_assert_eq(lx.n_orc, 0);
	cr_assert(strstr(lx.orc_why, "ORC format is not known"), "%s", lx.orc_why);
	prof_linux_fini(&lx);
	/* Cut anywhere: refused or read, never past the end (ASan). */
	for (size_t n = 0; n < len; n += 7)
		if (prof_linux_load(&lx, img, n, &err) == 0)
			prof_linux_fini(&lx);
	free(img);
	cr_assert_eq(prof_linux_load(&lx, "not an ELF", 10, &err), -EINVAL);
}

static const struct prof_linux task_lx = {
	.tasks = true, .current_task = 0x40, .off_tgid = 0x104, .off_comm = 0x300
};

Test(linux_guest, current_task)
{
	const uint64_t pcpu = MEM_BASE + 0x1000, task = MEM_BASE + 0x4000;
	int32_t pid = -1;
	char comm[PROF_COMM_LEN];

	memset(mem, 0, sizeof(mem));
	put64(pcpu + 0x40, task);
	memcpy(mem + 0x4104, &(int32_t){ 4242 }, 4);
	memcpy(mem + 0x4300, "my prog;x\x01\xff", 11);
	cr_assert_eq(prof_linux_task(&task_lx, pcpu, rd, NULL, &pid, comm), 0);
	cr_assert_eq(pid, 4242);
	cr_assert_str_eq(comm, "my_prog_x__", "printable, no separators");
	/* A comm of 16 bytes without its NUL: 15 kept. */
	memcpy(mem + 0x4300, "abcdefghijklmnopq", 17);
	cr_assert_eq(prof_linux_task(&task_lx, pcpu, rd, NULL, &pid, comm), 0);
	cr_assert_str_eq(comm, "abcdefghijklmno");
	/* Hostile or not ready: never a read outside, an error. */
	cr_assert_eq(prof_linux_task(&task_lx, 0x1000, rd, NULL, &pid, comm), -ENOENT, "a user GS base");
	cr_assert_eq(prof_linux_task(&task_lx, MEM_BASE + MEM_SIZE - 8, rd, NULL, &pid, comm), -EFAULT);
	put64(pcpu + 0x40, 0x400000);
	cr_assert_eq(prof_linux_task(&task_lx, pcpu, rd, NULL, &pid, comm), -EFAULT, "a task in user space");
	put64(pcpu + 0x40, MEM_BASE + MEM_SIZE - 0x200);
	cr_assert_eq(prof_linux_task(&task_lx, pcpu, rd, NULL, &pid, comm), -EFAULT, "a task past memory");
	put64(pcpu + 0x40, task);
	memcpy(mem + 0x4104, &(int32_t){ -5 }, 4);
	cr_assert_eq(prof_linux_task(&task_lx, pcpu, rd, NULL, &pid, comm), -EFAULT, "a negative tgid");
	cr_assert_eq(prof_linux_task(&(struct prof_linux){ 0 }, pcpu, rd, NULL, &pid, comm), -ENOENT);
}

/* The ORC tables above in a prof_linux, as the loader makes them. */
static struct prof_linux orc_lx(unsigned format)
{
	struct prof_linux lx = { .n_orc = 4, .orc_format = format };

	lx.orc_ip = (uint64_t *)orc_addr;
	lx.orc = (uint8_t *)orc_ent;
	return lx;
}

/* A stack: the leaf in F at sp S; G's frame at B; then pt_regs from user mode. */
static struct prof_linux_regs stack(uint64_t slide)
{
	const uint64_t s = MEM_BASE + 0x8000, b = MEM_BASE + 0x8100, regs = b + 16;

	memset(mem, 0, sizeof(mem));
	put64(s + 8, TEXT + 0x2020 + slide);  /* F returns into G */
	put64(b, MEM_BASE + 0x9000);	      /* G's caller's bp */
	put64(b + 8, TEXT + 0x3010 + slide);  /* G returns into the entry */
	put64(regs + 128, 0x401000);	      /* pt_regs: user ip */
	put64(regs + 136, 0x33);	      /* user CS */
	put64(regs + 152, 0x7ffffffde000ULL); /* user sp */
	return (struct prof_linux_regs){ .ip = TEXT + 0x1010 + slide, .sp = s, .bp = b };
}

Test(linux_guest, orc_walk)
{
	struct prof_linux lx = orc_lx(1);
	struct prof_linux_regs r = stack(0);
	uint64_t pc[PROF_MAX_DEPTH];
	bool tr;

	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 3);
	cr_assert_not(tr, "it ends at the entry from user mode");
	cr_assert_eq(pc[0], TEXT + 0x1010);
	cr_assert_eq(pc[1], TEXT + 0x2020);
	cr_assert_eq(pc[2], TEXT + 0x3010);
	/* KASLR: the same walk 200 MiB up. */
	r = stack(200ULL << 20);
	cr_assert_eq(prof_linux_unwind(&lx, 200ULL << 20, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 3);
	cr_assert_eq(pc[2], TEXT + 0x3010 + (200ULL << 20));
	/* The depth asked for. */
	r = stack(0);
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, 2, &tr), 2);
	/* The end the table marks. */
	r.ip = TEXT + 0x4000;
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 1);
	cr_assert_not(tr);
	/* No table (frame pointers instead): the leaf. */
	cr_assert_eq(prof_linux_unwind(&(struct prof_linux){ 0 }, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr),
		     1);
}

Test(linux_guest, orc_walk_hostile)
{
	struct prof_linux lx = orc_lx(1);
	struct prof_linux_regs r;
	uint64_t pc[PROF_MAX_DEPTH];
	bool tr;

	/* Below every entry. */
	r = stack(0);
	r.ip = TEXT;
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 1);
	cr_assert(tr);
	/* A stack outside memory. */
	r = stack(0);
	r.sp = MEM_BASE + MEM_SIZE - 4;
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 1);
	cr_assert(tr);
	/* A frame that returns into itself (cfa not above sp): a loop, stopped. */
	r = stack(0);
	put64(r.sp + 8, TEXT + 0x1010);
	cr_assert_leq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), PROF_MAX_DEPTH);
	/* G's frame pointer at the top of memory. */
	r = stack(0);
	r.bp = MEM_BASE + MEM_SIZE;
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 2);
	cr_assert(tr);
	/* A return address into user space. */
	r = stack(0);
	put64(r.sp + 8, 0x401000);
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 1);
	cr_assert(tr);
	/* Every byte of memory random: a bounded walk, whatever it finds. */
	srand(1);
	for (int k = 0; k < 200; k++) {
		for (size_t i = 0; i < sizeof(mem); i++)
			mem[i] = (uint8_t)rand();
		r = (struct prof_linux_regs){ .ip = TEXT + 0x1000 + (uint64_t)(rand() % 0x4000),
					      .sp = MEM_BASE + (uint64_t)(rand() % MEM_SIZE),
					      .bp = MEM_BASE + (uint64_t)(rand() % MEM_SIZE) };
		cr_assert_leq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr),
			      PROF_MAX_DEPTH);
	}
}

Test(linux_guest, orc_formats)
{
	/* 6.4 on: type:3 (2 CALL, 1 END_OF_STACK), signal:1. The same walk, F then the end. */
	static const uint64_t addr[] = { TEXT + 0x1000, TEXT + 0x2000 };
	static const struct orc6 ent[] = {
		{ 16, 0, (uint16_t)(5 | 0 << 4 | 2 << 8) },
		{ 0, 0, (uint16_t)(1 << 8) },
	};
	struct prof_linux lx = {
		.n_orc = 2, .orc_format = 3, .orc_ip = (uint64_t *)addr, .orc = (uint8_t *)ent
	};
	struct prof_linux_regs r = stack(0);
	uint64_t pc[PROF_MAX_DEPTH];
	bool tr;

	put64(r.sp + 8, TEXT + 0x2020);
	cr_assert_eq(prof_linux_unwind(&lx, 0, &r, rd, NULL, pc, PROF_MAX_DEPTH, &tr), 2);
	cr_assert_not(tr, "the end of the stack, as 6.4 marks it");
	cr_assert_eq(pc[1], TEXT + 0x2020);
}
