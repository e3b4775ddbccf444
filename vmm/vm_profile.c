// SPDX-License-Identifier: MIT
/*
 * Host-side guest profiling (docs/profiling.md): each vCPU thread opens
 * sampling counters on itself; on an overflow signal it leaves KVM_RUN and
 * records where its guest is (RIP, CPL, a frame-pointer walk read from
 * guest memory through the guest's page tables, every pointer checked) in
 * its ring; the main thread drains the rings, and writes the profile at
 * the end. No guest cooperation.
 */
#include "vm_profile.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"

#define PROF_MAX_STACKS 65536 /* distinct stacks kept; more are counted as lost */
/*
 * mode=leaf: data pages of each counter's perf ring (16 bytes a sample):
 * 4096 samples, 200 ms at the rate cap, drained every 50 ms (vm.c).
 */
#define PROF_PERF_PAGES 16

#define X86_CR0_PG (1ULL << 31)
#define X86_CR4_LA57 (1ULL << 12)
#define X86_EFER_LMA (1ULL << 10)
#define PTE_PRESENT 1ULL
#define PTE_LARGE (1ULL << 7)
#define PTE_ADDR 0x000ffffffffff000ULL
#define MSR_LSTAR 0xc0000082 /* the 64-bit SYSCALL entry */

/* One vCPU's sampling: its counters and ring. Its own thread, the ring's consumer aside. */
struct prof_vcpu {
	unsigned index;
	int fd;		     /* the vCPU's: KVM_GET_REGS */
	struct kvm_run *run; /* its registers, with KVM_CAP_SYNC_REGS */
	struct sb_entry e;
	int prof_fd[PROF_MAX_EVENTS];
	uint64_t pcpu; /* a Linux guest: the kernel's GS base on this vCPU (its per-CPU area) */
	struct prof_ring ring;
	uint64_t last_ns; /* the last sample, for the rate cap */
	/* This process's counts (the stats fields continue across a restore); main reads them relaxed. */
	uint64_t samples, dropped, throttled, sample_ns;
	/*
	 * mode=leaf: each counter's perf ring buffer, mapped by this thread
	 * before its filter goes on, read and unmapped by the main thread,
	 * which then also keeps the counts above; pub_* is what the stats
	 * entry's writer of the moment published of them (publish_hook).
	 */
	void *map[PROF_MAX_EVENTS];
	size_t map_len[PROF_MAX_EVENTS];
	uint64_t pub_samples, pub_dropped, pub_throttled;
};

struct vm_profile {
	struct prof_spec spec; /* spec.n == 0: off */
	struct prof_symtab syms;
	struct prof_linux lx; /* a Linux guest's processes and ORC tables */
	struct prof_data data;
	char out_dir[4096];
	uint64_t start_ns;
	const char *kernel; /* whose symbols */
	bool sync_regs;	    /* KVM_CAP_SYNC_REGS: registers in kvm_run, no ioctl per sample */
	bool sigio;	    /* PERFVISOR_PROFILE_SIGIO (tests): counters send plain SIGIO */
	bool verbose;
	const struct gmem *mem;
	unsigned nr_vcpus;
	struct prof_vcpu *v;
	struct sb_field f_samples, f_dropped, f_throttled, f_sample_ns;
	bool stats; /* the fields above and each entry are known */
};

int vm_profile_signal(void)
{
	return SIGRTMIN + 2;
}

/* The profile is written at the end: find out now whether it can be (the parent exists, is writable). */
static int parent_writable(const char *dir)
{
	char parent[4096];
	const char *slash = strrchr(dir, '/');

	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == dir)
		snprintf(parent, sizeof(parent), "/");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
	return access(parent, W_OK | X_OK) ? -errno : 0;
}

/*
 * The kernel's vmlinux for its symbols, BTF and ORC tables: the file itself
 * (an ELF), or a bzImage's payload decompressed on the host. 0 with *out
 * NULL: neither (a flat kernel, or a payload only its own decompressor
 * reads); else 0 or the error, with a message.
 */
static int kernel_vmlinux(const char *path, void **out, size_t *n, struct errbuf *err)
{
	void *buf;
	size_t len;
	int rc = loader_read_file(path, "kernel", 1ULL << 30, &buf, &len, err);

	*out = NULL;
	*n = 0;
	if (rc)
		return rc;
	if (loader_is_elf(buf, len)) {
		*out = buf;
		*n = len;
		return 0;
	}
	rc = loader_is_bzimage(buf, len) ? loader_linux_vmlinux(buf, len, 1ULL << 30, out, n, err) : 0;
	free(buf);
	return rc == -ENOTSUP ? 0 : rc;
}

/*
 * The symbols: --symbols (an ELF or text), else the kernel's .symtab, else
 * (a Linux kernel without one) its kallsyms tables.
 */
static int load_symbols(struct vm_profile *p, const struct vm_profile_config *cfg, const void *vm, size_t n,
			struct errbuf *err)
{
	void *buf;
	size_t len;
	int rc;

	if (cfg->symbols) {
		rc = loader_read_file(cfg->symbols, "--symbols", 1ULL << 30, &buf, &len, err);
		if (rc)
			return rc;
		rc = loader_is_elf(buf, len) ? prof_symtab_load_elf(&p->syms, buf, len, err)
					     : prof_symtab_load_text(&p->syms, buf, len, err);
		free(buf);
		return rc;
	}
	if (!vm)
		return 0; /* a flat kernel has no symbols: samples show addresses */
	rc = prof_symtab_load_elf(&p->syms, vm, n, err);
	if (!rc && !p->syms.n) {
		rc = prof_symtab_load_kallsyms(&p->syms, vm, n, err);
		if (rc == -ENOENT)
			rc = 0; /* not a Linux kernel */
	}
	return rc;
}

/*
 * On a vCPU thread: where the guest's kernel runs, once it knows (KASLR).
 * MSR_LSTAR holds its entry_SYSCALL_64 from the first CPU's setup on.
 */
static void learn_slide(struct vm_profile *p, struct prof_vcpu *v)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = { .h.nmsrs = 1, .e.index = MSR_LSTAR };

	if (!p->syms.anchor || __atomic_load_n(&p->syms.slide_known, __ATOMIC_ACQUIRE))
		return;
	if (ioctl(v->fd, KVM_GET_MSRS, &m) != 1 || prof_symtab_set_slide(&p->syms, m.e.data) != 0)
		return;
	if (p->verbose)
		vm_log("profile: the guest kernel runs at %+" PRId64 " MiB from its link address (KASLR; "
		       "%s at 0x%" PRIx64 ")",
		       (int64_t)p->syms.slide / (1 << 20), PROF_SLIDE_ANCHOR, (uint64_t)m.e.data);
}

int vm_profile_create(struct vm_profile **out, const struct vm_profile_config *cfg, struct errbuf *err)
{
	struct vm_profile *p = calloc(1, sizeof(*p));
	const char *symfile = cfg->symbols ? cfg->symbols : cfg->kernel;
	struct stat st;
	void *vm = NULL; /* the kernel read here: freed */
	const void *kernel;
	size_t len = 0;
	int rc;

	*out = p;
	if (!p || !(p->v = calloc(cfg->nr_vcpus ? cfg->nr_vcpus : 1, sizeof(*p->v))))
		return errbuf_set(err, -ENOMEM, "out of memory");
	p->nr_vcpus = cfg->nr_vcpus;
	p->mem = cfg->mem;
	for (unsigned i = 0; i < p->nr_vcpus; i++)
		for (unsigned e = 0; e < PROF_MAX_EVENTS; e++)
			p->v[i].prof_fd[e] = -1;
	p->spec = *cfg->spec;
	if (!p->spec.n)
		return 0;
	if (cfg->output)
		snprintf(p->out_dir, sizeof(p->out_dir), "%s", cfg->output);
	else
		snprintf(p->out_dir, sizeof(p->out_dir), "perfvisor-profile.%d", (int)getpid());
	if (stat(p->out_dir, &st) == 0)
		return errbuf_set(err, -EEXIST, "--profile-output '%s' already exists; give a new directory",
				  p->out_dir);
	rc = parent_writable(p->out_dir);
	if (rc)
		return errbuf_set(err, rc, "--profile-output '%s': its parent directory: %s", p->out_dir,
				  strerror(-rc));
	p->kernel = symfile;
	/* The loader's vmlinux when it decompressed the kernel, else the file, read again. */
	rc = cfg->vmlinux ? 0 : kernel_vmlinux(cfg->kernel, &vm, &len, err);
	if (rc && !cfg->symbols) {
		loader_prefix_error(err, "kernel", cfg->kernel);
		vm_log("profile: no symbols from the kernel (%s); samples show addresses", err->msg);
	}
	if (cfg->vmlinux) {
		kernel = cfg->vmlinux;
		len = cfg->vmlinux_len;
	} else {
		kernel = vm;
	}
	rc = load_symbols(p, cfg, kernel, len, err);
	/* A Linux kernel's processes and ORC tables (docs/profiling.md). */
	/* PERFVISOR_PROFILE_NO_LINUX (bench/linuxprof.sh): the profile as it was before, to compare. */
	if (!rc && kernel && p->syms.anchor && !getenv("PERFVISOR_PROFILE_NO_LINUX")) {
		prof_linux_load(&p->lx, kernel, len, NULL);
		if (cfg->verbose)
			vm_log("profile: Linux %u.%u guest: processes %s%s, kernel stacks by %s%s",
			       p->lx.version[0], p->lx.version[1],
			       p->lx.tasks ? "from its BTF" : "not known: ", p->lx.tasks_why,
			       p->lx.n_orc ? "its ORC tables" : "frame pointers: ", p->lx.orc_why);
	}
	free(vm);
	if (rc) {
		loader_prefix_error(err, cfg->symbols ? "--symbols" : "kernel", symfile);
		if (cfg->symbols)
			return rc;
		/* The kernel's own table is a bonus (and a restore may not find the file again). */
		vm_log("profile: no symbols from the kernel (%s); samples show addresses", err->msg);
		prof_symtab_fini(&p->syms);
	}
	if (!p->syms.source[0])
		snprintf(p->syms.source, sizeof(p->syms.source), "none");
	rc = prof_data_init(&p->data, p->nr_vcpus, PROF_MAX_STACKS);
	for (unsigned i = 0; i < p->nr_vcpus && !rc; i++)
		rc = prof_ring_init(&p->v[i].ring);
	if (rc)
		return errbuf_set(err, rc, "profile: out of memory");
	p->start_ns = util_now_ns();
	/*
	 * A test knob: the counters send plain SIGIO, as the kernel does when a
	 * thread's real-time signal queue is full, so that path is tested.
	 */
	p->sigio = getenv("PERFVISOR_PROFILE_SIGIO") != NULL;
	p->verbose = cfg->verbose;
	/* KVM copies the registers into kvm_run at every exit: a sample then costs no ioctl. */
	rc = ioctl(cfg->kvm->fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	p->sync_regs = rc > 0 && (rc & (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS)) ==
					 (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS);
	if (cfg->verbose)
		vm_log("profile: %s, %zu symbols (%s), %s, output %s", p->spec.text, p->syms.n,
		       p->syms.source,
		       p->spec.leaf ? "samples written by the host kernel into perf ring buffers (no stacks)"
		       : p->sync_regs ? "registers by KVM_CAP_SYNC_REGS"
				      : "registers by KVM_GET_REGS",
		       p->out_dir);
	return 0;
}

void vm_profile_destroy(struct vm_profile *p)
{
	if (!p)
		return;
	for (unsigned i = 0; p->v && i < p->nr_vcpus; i++) {
		struct prof_vcpu *v = &p->v[i];

		prof_ring_fini(&v->ring);
		for (unsigned e = 0; p->spec.n && e < PROF_MAX_EVENTS; e++) {
			if (v->map[e])
				munmap(v->map[e], v->map_len[e]);
			v->map[e] = NULL;
		}
	}
	prof_data_fini(&p->data);
	prof_symtab_fini(&p->syms);
	prof_linux_fini(&p->lx);
	free(p->v);
	free(p);
}

bool vm_profile_on(const struct vm_profile *p)
{
	return p && p->spec.n;
}

/* Add to field what the main thread counted in *count since the last time (*published). */
static void publish_delta(struct sb_entry e, struct sb_field field, const uint64_t *count,
			  uint64_t *published)
{
	uint64_t n = __atomic_load_n(count, __ATOMIC_RELAXED);

	sb_add(e, field, n - *published);
	*published = n;
}

/* mode=leaf: the main thread's sample counts into vCPU i's entry; by its writer, inside an update. */
static void publish_hook(void *ctx, unsigned i, struct sb_entry e)
{
	struct vm_profile *p = ctx;
	struct prof_vcpu *v = &p->v[i];

	publish_delta(e, p->f_samples, &v->samples, &v->pub_samples);
	publish_delta(e, p->f_dropped, &v->dropped, &v->pub_dropped);
	publish_delta(e, p->f_throttled, &v->throttled, &v->pub_throttled);
}

void vm_profile_stats_ready(struct vm_profile *p, struct vm_stats *s)
{
	const struct vm_stats_fields *sf = vm_stats_fields(s);

	p->f_samples = sf->prof_samples;
	p->f_dropped = sf->prof_dropped;
	p->f_throttled = sf->prof_throttled;
	p->f_sample_ns = sf->prof_sample_ns;
	for (unsigned i = 0; i < p->nr_vcpus; i++)
		p->v[i].e = vm_stats_entry(s, i);
	p->stats = true;
	if (p->spec.leaf)
		vm_stats_set_publish_hook(s, publish_hook, p);
}

/* ---- the vCPU thread ----------------------------------------------------------------- */

int vm_profile_vcpu_start(struct vm_profile *p, unsigned i, int vcpu_fd, struct kvm_run *run,
			  struct errbuf *err)
{
	const struct prof_spec *s;
	struct prof_vcpu *v;

	if (!vm_profile_on(p))
		return 0;
	s = &p->spec;
	v = &p->v[i];
	v->index = i;
	v->fd = vcpu_fd;
	v->run = run;
	for (unsigned k = 0; k < s->n; k++) {
		int fd = s->leaf ? pmu_perf_open_ring(s->e[k].ev, PV_PMU_CFG_USR | PV_PMU_CFG_OS,
						      s->e[k].period, PROF_PERF_PAGES, &v->map[k],
						      &v->map_len[k])
				 : pmu_perf_open(s->e[k].ev, PV_PMU_CFG_USR | PV_PMU_CFG_OS, s->e[k].period,
						 p->sigio ? 0 : vm_profile_signal());

		if (fd < 0)
			return errbuf_set(err, fd, "vCPU %u: --profile %s: perf_event_open: %s", i,
					  s->e[k].ev->name, strerror(-fd));
		v->prof_fd[k] = fd;
	}
	if (s->n && !s->leaf && p->sync_regs)
		run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	return 0;
}

void vm_profile_vcpu_stop(struct vm_profile *p, unsigned i)
{
	struct prof_vcpu *v;

	if (!vm_profile_on(p))
		return;
	v = &p->v[i];
	learn_slide(p, v);
	for (unsigned k = 0; k < PROF_MAX_EVENTS; k++) {
		if (v->prof_fd[k] >= 0)
			close(v->prof_fd[k]);
		v->prof_fd[k] = -1;
	}
}

/* Guest-virtual to guest-physical through the guest's own page tables (4- or 5-level, or none). */
static bool translate(const struct gmem *mem, const struct kvm_sregs *sr, uint64_t gva, uint64_t *gpa)
{
	int levels = sr->cr4 & X86_CR4_LA57 ? 5 : 4;
	uint64_t table = sr->cr3 & PTE_ADDR;

	if (!(sr->cr0 & X86_CR0_PG)) {
		*gpa = gva & 0xffffffffULL;
		return true;
	}
	if (!(sr->efer & X86_EFER_LMA))
		return false; /* 32-bit paging: not walked (docs/profiling.md, limits) */
	for (int lvl = levels; lvl >= 1; lvl--) {
		unsigned shift = 12 + 9 * (unsigned)(lvl - 1);
		const uint64_t *pte = gmem_hva(mem, table + ((gva >> shift) & 511) * 8, 8);
		uint64_t e;

		if (!pte)
			return false;
		e = __atomic_load_n(pte, __ATOMIC_RELAXED); /* another vCPU may be changing it */
		if (!(e & PTE_PRESENT))
			return false;
		if (lvl == 1 || ((lvl == 2 || lvl == 3) && (e & PTE_LARGE))) {
			uint64_t mask = (1ULL << shift) - 1;

			*gpa = ((e & PTE_ADDR) & ~mask) | (gva & mask);
			return true;
		}
		table = e & PTE_ADDR;
	}
	return false;
}

/*
 * Guest-virtual reads for a sample's stack walks and a Linux guest's task
 * (prof_read_fn): through the guest's own page tables, the last page
 * translated kept (a walk reads a few words of one or two pages).
 */
struct guest_reader {
	const struct gmem *mem;
	const struct kvm_sregs *sr;
	uint64_t page;	    /* the guest-virtual page hva maps; hva NULL: none */
	const uint8_t *hva; /* its 4096 bytes */
};

static bool guest_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct guest_reader *g = ctx;
	uint8_t *out = buf;

	while (len) {
		size_t chunk = 4096 - (gva & 4095) < len ? 4096 - (gva & 4095) : len;
		uint64_t gpa;

		if (!g->hva || g->page != (gva & ~4095ULL)) {
			if (!translate(g->mem, g->sr, gva, &gpa)) {
				/* A PTI kernel in user mode: its own tables are the user ones without bit 12. */
				struct kvm_sregs k = *g->sr;

				k.cr3 &= ~(1ULL << 12);
				if (!(g->sr->cr3 & (1ULL << 12)) || !translate(g->mem, &k, gva, &gpa))
					return false;
			}
			g->hva = gmem_hva(g->mem, gpa & ~4095ULL, 4096);
			g->page = gva & ~4095ULL;
			if (!g->hva)
				return false;
		}
		memcpy(out, g->hva + (gva & 4095), chunk); /* another vCPU may be changing it: read once */
		out += chunk;
		gva += chunk;
		len -= chunk;
	}
	return true;
}

/*
 * A Linux guest: its kernel stack by ORC (ring 0), and the process the vCPU
 * runs, from the per-CPU current task; the kernel's GS base is that vCPU's
 * per-CPU area, seen in ring 0 and kept for samples in ring 3.
 */
static bool linux_sample(struct vm_profile *p, struct prof_vcpu *v, const struct kvm_regs *regs,
			 struct guest_reader *g, struct prof_sample *s)
{
	const struct kvm_sregs *sr = g->sr;
	bool orc =
		p->lx.n_orc && s->cpl == 0 && (sr->efer & X86_EFER_LMA) && sr->cs.l && (sr->cr0 & X86_CR0_PG);

	if (p->lx.tasks) {
		if (s->cpl == 0 && prof_linux_kernel_address(sr->gs.base))
			v->pcpu = sr->gs.base;
		if (prof_linux_task(&p->lx, v->pcpu, guest_read, g, &s->pid, s->comm))
			s->comm[0] = 0;
	}
	if (orc) {
		struct prof_linux_regs r = { regs->rip, regs->rsp, regs->rbp, regs->rdi,
					     regs->rdx, regs->r10, regs->r13 };
		bool truncated;

		s->depth =
			(uint8_t)prof_linux_unwind(&p->lx, __atomic_load_n(&p->syms.slide, __ATOMIC_RELAXED),
						   &r, guest_read, g, s->pc, PROF_MAX_DEPTH, &truncated);
		if (truncated)
			s->flags |= PROF_SAMPLE_TRUNCATED;
	}
	return orc;
}

/*
 * The frame-pointer chain from rbp: [rbp] is the caller's rbp, [rbp+8] the
 * return address. Frames must move up the stack (so the walk ends), and
 * every word is read through a checked translation.
 */
static void walk_stack(struct guest_reader *g, uint64_t rbp, struct prof_sample *s)
{
	bool wide = (g->sr->efer & X86_EFER_LMA) && g->sr->cs.l;

	if (!wide || !(g->sr->cr0 & X86_CR0_PG))
		return; /* 32-bit code: the leaf only */
	while (s->depth < PROF_MAX_DEPTH && rbp) {
		uint64_t w[2]; /* the caller's rbp, the return address */

		if (rbp & 7 || !guest_read(g, rbp, w, sizeof(w))) {
			s->flags |= PROF_SAMPLE_TRUNCATED;
			return;
		}
		if (!w[1])
			return;
		s->pc[s->depth++] = w[1];
		if (w[0] <= rbp || w[0] - rbp > (1u << 20))
			return;
		rbp = w[0];
	}
}

/*
 * Count n in one of this vCPU's profile counts (this process's, which the
 * main thread reads) and in its stats field. The vCPU thread, its writer.
 */
static void count(struct vm_profile *p, struct prof_vcpu *v, uint64_t *mine, struct sb_field f, uint64_t n)
{
	__atomic_store_n(mine, *mine + n, __ATOMIC_RELAXED);
	if (!p->stats)
		return;
	sb_begin(v->e);
	sb_add(v->e, f, n);
	sb_end(v->e);
}

void vm_profile_sample(struct vm_profile *p, unsigned i, int fd)
{
	struct prof_vcpu *v;
	uint64_t t0 = util_now_ns(), t1;
	struct kvm_regs regs_buf;
	struct kvm_sregs sregs_buf;
	const struct kvm_regs *regs = &regs_buf;
	const struct kvm_sregs *sregs = &sregs_buf;
	struct prof_sample s;
	struct guest_reader g;
	uint64_t *mine;
	bool pushed;

	if (!vm_profile_on(p))
		return;
	v = &p->v[i];
	/* The rate cap: at most PROF_MAX_RATE samples a second per vCPU. */
	if (v->last_ns && t0 - v->last_ns < 1000000000ULL / PROF_MAX_RATE) {
		count(p, v, &v->throttled, p->f_throttled, 1);
		return;
	}
	v->last_ns = t0;
	learn_slide(p, v);
	if (p->sync_regs) {
		/* As of the last return from KVM_RUN: the guest has not run since. */
		regs = &v->run->s.regs.regs;
		sregs = &v->run->s.regs.sregs;
	} else if (ioctl(v->fd, KVM_GET_REGS, &regs_buf) < 0 || ioctl(v->fd, KVM_GET_SREGS, &sregs_buf) < 0) {
		/* No registers, no sample: counted as dropped, never silently. */
		count(p, v, &v->dropped, p->f_dropped, 1);
		return;
	}
	memset(&s, 0, offsetof(struct prof_sample, pc));
	s.vcpu = i;
	s.cpl = sregs->cs.selector & 3;
	for (unsigned k = 0; k < PROF_MAX_EVENTS; k++)
		if (v->prof_fd[k] == fd && fd >= 0)
			s.event = (uint8_t)k;
	s.pc[0] = regs->rip;
	s.depth = 1;
	g = (struct guest_reader){ p->mem, sregs, 0, NULL };
	if (!linux_sample(p, v, regs, &g, &s))
		walk_stack(&g, regs->rbp, &s);
	pushed = prof_ring_push(&v->ring, &s);
	mine = pushed ? &v->samples : &v->dropped;
	t1 = util_now_ns();
	/* One stats update for both: the sample (or its drop) and its cost. */
	__atomic_store_n(mine, *mine + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->sample_ns, v->sample_ns + (t1 - t0), __ATOMIC_RELAXED);
	if (!p->stats)
		return;
	sb_begin(v->e);
	sb_add(v->e, pushed ? p->f_samples : p->f_dropped, 1);
	sb_add(v->e, p->f_sample_ns, t1 - t0);
	sb_end(v->e);
}

/* ---- the main thread ----------------------------------------------------------------- */

/*
 * mode=leaf: take what the kernel wrote into one counter's perf ring since
 * the last time (the ring's protocol: acquire data_head, read, release
 * data_tail). Samples go into the profile; LOST records count as dropped,
 * THROTTLE records (the kernel's own rate limit) as throttled.
 */
static void drain_perf_ring(struct vm_profile *p, struct prof_vcpu *v, unsigned e)
{
	struct perf_event_mmap_page *mp = v->map[e];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), head, tail, size, samples = 0, dropped = 0,
		 throttled = 0;
	const uint8_t *data;

	if (!mp)
		return;
	/* Kernels before 4.1 leave data_offset/data_size 0: the data follow the first page. */
	size = mp->data_size ? mp->data_size : v->map_len[e] - page;
	data = (const uint8_t *)mp + (mp->data_offset ? mp->data_offset : page);
	head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	tail = mp->data_tail;
	while (tail != head) {
		struct prof_perf_rec r;
		struct prof_sample s;
		size_t n = prof_perf_record(data, size, tail, head, &r);

		if (!n)
			break; /* not a record: skip what is left */
		if (r.type == PERF_RECORD_SAMPLE) {
			prof_perf_sample(&r, v->index, (uint8_t)e, &s);
			prof_data_add(&p->data, &s);
			samples++;
		} else if (r.type == PERF_RECORD_LOST) {
			dropped += r.value;
		} else if (r.type == PERF_RECORD_THROTTLE) {
			throttled++;
		}
		tail += n;
	}
	__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	/* Only this thread writes them in this mode; the vCPU's stats writer reads them. */
	__atomic_store_n(&v->samples, v->samples + samples, __ATOMIC_RELAXED);
	__atomic_store_n(&v->dropped, v->dropped + dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&v->throttled, v->throttled + throttled, __ATOMIC_RELAXED);
}

void vm_profile_drain(struct vm_profile *p)
{
	struct prof_sample s;

	if (!vm_profile_on(p))
		return;
	for (unsigned i = 0; i < p->nr_vcpus; i++) {
		while (prof_ring_pop(&p->v[i].ring, &s))
			prof_data_add(&p->data, &s);
		for (unsigned e = 0; p->spec.leaf && e < p->spec.n; e++)
			drain_perf_ring(p, &p->v[i], e);
	}
}

json_t *vm_profile_json(struct vm_profile *p)
{
	unsigned n;
	uint64_t *c;
	json_t *j;

	if (!vm_profile_on(p))
		return NULL;
	n = p->nr_vcpus;
	vm_profile_drain(p);
	c = calloc(4 * (size_t)n, sizeof(*c));
	if (!c)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		c[i] = __atomic_load_n(&p->v[i].samples, __ATOMIC_RELAXED);
		c[n + i] = __atomic_load_n(&p->v[i].dropped, __ATOMIC_RELAXED);
		c[2 * n + i] = __atomic_load_n(&p->v[i].throttled, __ATOMIC_RELAXED);
		c[3 * n + i] = __atomic_load_n(&p->v[i].sample_ns, __ATOMIC_RELAXED);
	}
	j = prof_to_json(&p->data, &(struct prof_meta){ .spec = &p->spec,
							.syms = &p->syms,
							.kernel = p->kernel,
							.per_vcpu_samples = c,
							.per_vcpu_dropped = c + n,
							.per_vcpu_throttled = c + 2 * n,
							.per_vcpu_sample_ns = c + 3 * n,
							.duration_ns = util_now_ns() - p->start_ns,
							.linux_guest = p->syms.anchor ? &p->lx : NULL });
	free(c);
	return j;
}

/* Write one file of the profile into dir. */
static int write_file(const char *dir, const char *name, const json_t *prof, int kind, struct errbuf *err)
{
	char path[4200];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return errbuf_set(err, -errno, "profile: cannot create %s: %s", path, strerror(errno));
	if (kind == 0)
		rc = json_dumpf(prof, f, JSON_INDENT(1)) ? -EIO : 0;
	else if (kind == 1)
		rc = prof_write_folded(f, prof);
	else
		rc = prof_write_table(f, prof, 0);
	if (fclose(f) && !rc)
		rc = -errno;
	if (rc)
		return errbuf_set(err, rc, "profile: cannot write %s: %s", path, strerror(-rc));
	return 0;
}

/* A profile that could not be finished (a full disk): no half directory stays behind. */
static void remove_tmp(const char *tmp)
{
	static const char *const files[] = { "profile.json", "stacks.folded", "symbols.txt" };
	char path[4300];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, files[i]);
		unlink(path);
	}
	rmdir(tmp);
}

int vm_profile_write(struct vm_profile *p, struct errbuf *err)
{
	char tmp[4200];
	json_t *j;
	int rc;

	if (!vm_profile_on(p))
		return 0;
	j = vm_profile_json(p);
	if (!j)
		return errbuf_set(err, -ENOMEM, "profile: out of memory");
	/* Written beside the target, then renamed: no half profile looks complete. */
	snprintf(tmp, sizeof(tmp), "%s.tmp-%d", p->out_dir, (int)getpid());
	if (mkdir(tmp, 0755) < 0) {
		rc = errbuf_set(err, -errno, "profile: cannot create %s: %s", tmp, strerror(errno));
		json_decref(j);
		return rc;
	}
	rc = write_file(tmp, "profile.json", j, 0, err);
	if (!rc)
		rc = write_file(tmp, "stacks.folded", j, 1, err);
	if (!rc)
		rc = write_file(tmp, "symbols.txt", j, 2, err);
	if (!rc && rename(tmp, p->out_dir) < 0)
		rc = errbuf_set(err, -errno, "profile: cannot rename %s to %s: %s", tmp, p->out_dir,
				strerror(errno));
	if (!rc)
		vm_log("profile: %" PRIu64 " samples written to %s (perfvisor profile report %s)",
		       p->data.samples, p->out_dir, p->out_dir);
	else
		remove_tmp(tmp);
	json_decref(j);
	return rc;
}
