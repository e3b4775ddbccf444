// SPDX-License-Identifier: MIT
/*
 * What a profile reads of a Linux guest beyond its symbols
 * (docs/profiling.md, "Processes and kernel stacks of a Linux guest"):
 *
 * - the process of a sample: the per-CPU pointer to the current task, then
 *   the task's tgid and comm, at offsets the kernel's own BTF gives
 *   (`.BTF` in the vmlinux, read with libbpf);
 * - its kernel stack: the kernel's ORC tables (`.orc_unwind_ip`,
 *   `.orc_unwind`), for kernels built without frame pointers.
 *
 * Loading is pure; the walks read guest memory only through the caller's
 * function, which checks every address, so a guest that corrupts its task
 * or its stack gives an unattributed or shorter sample, never more.
 */
#include "pmu.h"

#include "elf/elf.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ORC register and type numbers, as each format spells them. */
enum {
	ORC_REG_UNDEFINED = 0,
	ORC_REG_PREV_SP = 1,
	ORC_REG_DX = 2,
	ORC_REG_DI = 3,
	ORC_REG_BP = 4,
	ORC_REG_SP = 5,
	ORC_REG_R10 = 6,
	ORC_REG_R13 = 7,
	ORC_REG_BP_INDIRECT = 8,
	ORC_REG_SP_INDIRECT = 9,
};
enum orc_type {
	T_CALL,
	T_REGS,
	T_REGS_PARTIAL,
	T_END,
	T_UNDEFINED
};

/* pt_regs (x86-64): where ip, cs, sp and bp are. */
#define PT_BP 32
#define PT_IP 128
#define PT_CS 136
#define PT_SP 152

/* A member's byte offset in a struct, looking into anonymous members. -1: none. */
static long member_offset(const struct btf *btf, __u32 id, const char *name, int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;

	while (t && (btf_is_typedef(t) || btf_is_mod(t)))
		t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_composite(t) || depth > 8)
		return -1;
	m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		long in;

		if (n && *n && !strcmp(n, name))
			return (long)(btf_member_bit_offset(t, i) / 8);
		if ((!n || !*n) && (in = member_offset(btf, m->type, name, depth + 1)) >= 0)
			return (long)(btf_member_bit_offset(t, i) / 8) + in;
	}
	return -1;
}

/* A per-CPU variable's offset: its place in the .data..percpu data section. -1: none. */
static long percpu_offset(const struct btf *btf, const char *name)
{
	__s32 var = btf__find_by_name_kind(btf, name, BTF_KIND_VAR);
	__s32 sec = btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC);
	const struct btf_type *t;
	const struct btf_var_secinfo *v;

	if (var < 0 || sec < 0 || !(t = btf__type_by_id(btf, (__u32)sec)))
		return -1;
	v = btf_var_secinfos(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, v++)
		if (v->type == (__u32)var)
			return (long)v->offset;
	return -1;
}

static void load_tasks(struct prof_linux *lx, const struct elf_file *f)
{
	struct elf_section s;
	struct btf *btf;
	__s32 task;
	long cur, hot, tgid, comm;

	if (elf_section_named(f, ".BTF", &s, NULL)) {
		snprintf(lx->tasks_why, sizeof(lx->tasks_why), "the kernel has no BTF (.BTF section)");
		return;
	}
	btf = btf__new(s.data, (__u32)(s.size < UINT32_MAX ? s.size : 0));
	if (!btf) {
		snprintf(lx->tasks_why, sizeof(lx->tasks_why), "the kernel's BTF does not parse");
		return;
	}
	task = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	tgid = task < 0 ? -1 : member_offset(btf, (__u32)task, "tgid", 0);
	comm = task < 0 ? -1 : member_offset(btf, (__u32)task, "comm", 0);
	/* Linux up to 6.1: current_task; from 6.2, pcpu_hot.current_task. */
	cur = percpu_offset(btf, "current_task");
	if (cur < 0 && (hot = percpu_offset(btf, "pcpu_hot")) >= 0) {
		__s32 ht = btf__find_by_name_kind(btf, "pcpu_hot", BTF_KIND_STRUCT);
		long in = ht < 0 ? -1 : member_offset(btf, (__u32)ht, "current_task", 0);

		cur = in < 0 ? -1 : hot + in;
	}
	btf__free(btf);
	if (tgid < 0 || comm < 0 || cur < 0) {
		snprintf(lx->tasks_why, sizeof(lx->tasks_why), "the kernel's BTF lacks %s",
			 tgid < 0 || comm < 0 ? "task_struct's tgid or comm" : "the per-CPU current task");
		return;
	}
	lx->current_task = (uint64_t)cur;
	lx->off_tgid = (uint32_t)tgid;
	lx->off_comm = (uint32_t)comm;
	lx->tasks = true;
}

/* "Linux version X.Y" in the image: the ORC format follows the version. */
static void load_version(struct prof_linux *lx, const uint8_t *p, size_t len)
{
	static const char banner[] = "Linux version ";
	const uint8_t *at = memmem(p, len, banner, sizeof(banner) - 1);
	char buf[16] = "";

	if (!at)
		return;
	at += sizeof(banner) - 1;
	memcpy(buf, at, (size_t)(p + len - at) < sizeof(buf) - 1 ? (size_t)(p + len - at) : sizeof(buf) - 1);
	if (sscanf(buf, "%u.%u", &lx->version[0], &lx->version[1]) != 2)
		lx->version[0] = lx->version[1] = 0;
}

static void load_orc(struct prof_linux *lx, const struct elf_file *f)
{
	struct elf_section ip, u;
	unsigned v = lx->version[0] * 100 + lx->version[1];
	size_t n;

	if (elf_section_named(f, ".orc_unwind_ip", &ip, NULL) ||
	    elf_section_named(f, ".orc_unwind", &u, NULL)) {
		snprintf(lx->orc_why, sizeof(lx->orc_why),
			 "the kernel has no ORC tables (.orc_unwind_ip, .orc_unwind)");
		return;
	}
	n = ip.size / 4;
	if (!n || ip.size % 4 || u.size != n * 6) {
		snprintf(lx->orc_why, sizeof(lx->orc_why),
			 "the kernel's ORC tables disagree (%zu entries, %zu bytes)", n, (size_t)u.size);
		return;
	}
	if (v < 400 || v > 9999) {
		snprintf(lx->orc_why, sizeof(lx->orc_why),
			 "no Linux version in the image: the ORC format is not known");
		return;
	}
	lx->orc_ip = malloc(n * sizeof(*lx->orc_ip));
	lx->orc = malloc(n * 6);
	if (!lx->orc_ip || !lx->orc) {
		snprintf(lx->orc_why, sizeof(lx->orc_why), "out of memory");
		goto bad;
	}
	for (size_t i = 0; i < n; i++) {
		int32_t rel;

		memcpy(&rel, ip.data + 4 * i, 4);
		lx->orc_ip[i] = ip.addr + 4 * i + (uint64_t)(int64_t)rel;
		/* The build sorts them (scripts/sorttable): a table out of order is not the kernel's. */
		if (i && lx->orc_ip[i] < lx->orc_ip[i - 1]) {
			snprintf(lx->orc_why, sizeof(lx->orc_why), "the kernel's ORC table is not sorted");
			goto bad;
		}
	}
	memcpy(lx->orc, u.data, n * 6);
	lx->n_orc = n;
	lx->orc_format = v < 603 ? 1 : v == 603 ? 2 : 3;
	return;
bad:
	free(lx->orc_ip);
	free(lx->orc);
	lx->orc_ip = NULL;
	lx->orc = NULL;
}

int prof_linux_load(struct prof_linux *lx, const void *vmlinux, size_t len, struct errbuf *err)
{
	struct elf_file f;

	memset(lx, 0, sizeof(*lx));
	if (elf_open(&f, vmlinux, len, err) || elf_check_shdrs(&f, err))
		return -EINVAL;
	load_version(lx, vmlinux, len);
	load_tasks(lx, &f);
	load_orc(lx, &f);
	return 0;
}

void prof_linux_fini(struct prof_linux *lx)
{
	free(lx->orc_ip);
	free(lx->orc);
	memset(lx, 0, sizeof(*lx));
}

int prof_linux_task(const struct prof_linux *lx, uint64_t pcpu_base, prof_read_fn rd, void *ctx, int32_t *pid,
		    char comm[PROF_COMM_LEN])
{
	uint64_t task;
	int32_t tgid;
	char c[PROF_COMM_LEN];

	if (!lx->tasks || !prof_linux_kernel_address(pcpu_base))
		return -ENOENT;
	if (!rd(ctx, pcpu_base + lx->current_task, &task, 8) || !prof_linux_kernel_address(task) ||
	    !rd(ctx, task + lx->off_tgid, &tgid, 4) || tgid < 0 ||
	    !rd(ctx, task + lx->off_comm, c, sizeof(c)))
		return -EFAULT;
	*pid = tgid;
	for (size_t i = 0; i < sizeof(c); i++) {
		/* Printable, and nothing that separates frames or counts in folded stacks. */
		comm[i] = c[i] == 0 || i == sizeof(c) - 1	      ? 0
			  : c[i] < 0x21 || c[i] > 0x7e || c[i] == ';' ? '_'
								      : c[i];
		if (!comm[i])
			break;
	}
	return 0;
}

struct orc {
	int16_t sp_off, bp_off;
	unsigned sp_reg, bp_reg;
	enum orc_type type;
	bool signal;
};

/* The entry covering link address a (the last at or below it), decoded. false: none. */
static bool orc_find(const struct prof_linux *lx, uint64_t a, struct orc *o)
{
	size_t lo = 0, hi = lx->n_orc;
	const uint8_t *e;
	unsigned b, t;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lx->orc_ip[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	e = lx->orc + 6 * (lo - 1);
	memcpy(&o->sp_off, e, 2);
	memcpy(&o->bp_off, e + 2, 2);
	b = e[4] | (unsigned)e[5] << 8;
	o->sp_reg = b & 15;
	o->bp_reg = (b >> 4) & 15;
	if (lx->orc_format == 3) { /* 6.4 on: type:3, signal:1 */
		static const enum orc_type types[8] = {
			T_UNDEFINED,	T_END,	     T_CALL,	  T_REGS,
			T_REGS_PARTIAL, T_UNDEFINED, T_UNDEFINED, T_UNDEFINED
		};

		o->type = types[(b >> 8) & 7];
		o->signal = (b >> 11) & 1;
		return true;
	}
	/* Up to 6.2: type:2, end:1; 6.3: type:2, signal:1, end:1. */
	t = (b >> 8) & 3;
	o->type = t == 0 ? T_CALL : t == 1 ? T_REGS : t == 2 ? T_REGS_PARTIAL : T_UNDEFINED;
	o->signal = lx->orc_format == 2 ? (b >> 10) & 1 : o->type != T_CALL;
	if ((b >> (lx->orc_format == 2 ? 11 : 10)) & 1)
		o->type = T_END;
	if (o->sp_reg == ORC_REG_UNDEFINED && o->type != T_END)
		o->type = T_UNDEFINED;
	return true;
}

static bool rd64(prof_read_fn rd, void *ctx, uint64_t a, uint64_t *v)
{
	return rd(ctx, a, v, 8);
}

unsigned prof_linux_unwind(const struct prof_linux *lx, uint64_t slide, const struct prof_linux_regs *r,
			   prof_read_fn rd, void *ctx, uint64_t *pc, unsigned max, bool *truncated)
{
	uint64_t ip = r->ip, sp = r->sp, bp = r->bp;
	unsigned depth = 1;
	bool first = true, signal = true;

	*truncated = false;
	if (!lx->n_orc || !max)
		return max ? 1 : 0;
	pc[0] = ip;
	while (depth < max) {
		struct orc o;
		uint64_t cfa, nip, nsp, nbp = bp, cs = 0, reg = 0;

		/* A return address is after its call: look up the call's own instruction. */
		if (!orc_find(lx, (signal ? ip : ip - 1) - slide, &o) || o.type == T_UNDEFINED) {
			*truncated = true;
			break;
		}
		if (o.type == T_END)
			break;
		switch (o.sp_reg) {
		case ORC_REG_SP:
			cfa = sp + (uint64_t)(int64_t)o.sp_off;
			break;
		case ORC_REG_BP:
			cfa = bp + (uint64_t)(int64_t)o.sp_off;
			break;
		case ORC_REG_SP_INDIRECT:
			if (!rd64(rd, ctx, sp, &cfa))
				goto bad;
			cfa += (uint64_t)(int64_t)o.sp_off;
			break;
		case ORC_REG_BP_INDIRECT:
			if (!rd64(rd, ctx, bp + (uint64_t)(int64_t)o.sp_off, &cfa))
				goto bad;
			break;
		case ORC_REG_DI:
		case ORC_REG_DX:
		case ORC_REG_R10:
		case ORC_REG_R13:
			/* Only the interrupted frame's registers are known. */
			if (!first)
				goto bad;
			reg = o.sp_reg == ORC_REG_DI	? r->di
			      : o.sp_reg == ORC_REG_DX	? r->dx
			      : o.sp_reg == ORC_REG_R10 ? r->r10
							: r->r13;
			cfa = reg + (uint64_t)(int64_t)o.sp_off;
			break;
		default:
			goto bad;
		}
		switch (o.type) {
		case T_CALL:
			if (!rd64(rd, ctx, cfa - 8, &nip))
				goto bad;
			nsp = cfa;
			/* A caller's frame is higher up the same stack: the walk ends. */
			if (nsp <= sp)
				goto bad;
			break;
		case T_REGS:
			if (!rd64(rd, ctx, cfa + PT_IP, &nip) || !rd64(rd, ctx, cfa + PT_CS, &cs) ||
			    !rd64(rd, ctx, cfa + PT_SP, &nsp) || !rd64(rd, ctx, cfa + PT_BP, &nbp))
				goto bad;
			break;
		default: /* T_REGS_PARTIAL: the hardware's interrupt frame */
			if (!rd64(rd, ctx, cfa, &nip) || !rd64(rd, ctx, cfa + 8, &cs) ||
			    !rd64(rd, ctx, cfa + 24, &nsp))
				goto bad;
			break;
		}
		/* Entered from user mode: the kernel stack is whole. */
		if (o.type != T_CALL && (cs & 3) == 3)
			break;
		switch (o.bp_reg) {
		case ORC_REG_PREV_SP:
			if (!rd64(rd, ctx, cfa + (uint64_t)(int64_t)o.bp_off, &nbp))
				goto bad;
			break;
		case ORC_REG_BP:
			if (!rd64(rd, ctx, bp + (uint64_t)(int64_t)o.bp_off, &nbp))
				goto bad;
			break;
		default:
			break; /* unchanged, or pt_regs' */
		}
		if (!prof_linux_kernel_address(nip)) {
			*truncated = true;
			break;
		}
		ip = nip;
		sp = nsp;
		bp = nbp;
		signal = o.type != T_CALL;
		first = false;
		pc[depth++] = ip;
	}
	return depth;
bad:
	*truncated = true;
	return depth;
}
