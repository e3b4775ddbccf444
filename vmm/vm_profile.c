// SPDX-License-Identifier: MIT
/*
 * Host-side guest profiling (docs/profiling.md): each vCPU thread opens
 * sampling counters on itself; on an overflow signal it leaves KVM_RUN and
 * records where its guest is (RIP, CPL, a frame-pointer walk read from
 * guest memory through the guest's page tables, every pointer checked) in
 * its ring; the main thread drains the rings, and writes the profile at
 * the end. No guest cooperation.
 */
#include "vm_internal.h"

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

int vm_profile_create(struct vm *vm, struct errbuf *err)
{
	struct vm_profile *p = &vm->prof;
	const char *symfile = vm->cfg.symbols ? vm->cfg.symbols : vm->cfg.kernel;
	struct stat st;
	void *buf = NULL;
	size_t len = 0;
	int rc;

	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		for (unsigned e = 0; e < PROF_MAX_EVENTS; e++) {
			vm->vcpus[i].prof_fd[e] = -1;
			vm->vcpus[i].prof_map[e] = NULL;
		}
	p->spec = vm->cfg.prof;
	if (!p->spec.n)
		return 0;
	if (vm->cfg.profile_output)
		snprintf(p->out_dir, sizeof(p->out_dir), "%s", vm->cfg.profile_output);
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
	rc = loader_read_file(symfile, vm->cfg.symbols ? "--symbols" : "kernel", 1ULL << 30, &buf, &len, err);
	if (!rc && loader_is_elf(buf, len))
		rc = prof_symtab_load_elf(&p->syms, buf, len, err);
	else if (!rc && vm->cfg.symbols)
		rc = prof_symtab_load_text(&p->syms, buf, len, err);
	/* else a bzImage or flat kernel has no symbols: samples show addresses */
	free(buf);
	if (rc) {
		loader_prefix_error(err, vm->cfg.symbols ? "--symbols" : "kernel", symfile);
		if (vm->cfg.symbols)
			return rc;
		/* The kernel's own table is a bonus (and a restore may not find the file again). */
		vm_log(vm, "profile: no symbols from the kernel (%s); samples show addresses", err->msg);
		prof_symtab_fini(&p->syms);
	}
	if (!p->syms.source[0])
		snprintf(p->syms.source, sizeof(p->syms.source), "none");
	rc = prof_data_init(&p->data, vm->nr_vcpus, PROF_MAX_STACKS);
	for (unsigned i = 0; i < vm->nr_vcpus && !rc; i++)
		rc = prof_ring_init(&vm->vcpus[i].prof_ring);
	if (rc)
		return errbuf_set(err, rc, "profile: out of memory");
	p->start_ns = util_now_ns();
	/*
	 * A test knob: the counters send plain SIGIO, as the kernel does when a
	 * thread's real-time signal queue is full, so that path is tested.
	 */
	p->sigio = getenv("PERFVISOR_PROFILE_SIGIO") != NULL;
	/* KVM copies the registers into kvm_run at every exit: a sample then costs no ioctl. */
	rc = ioctl(vm->kvm.fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	p->sync_regs = rc > 0 && (rc & (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS)) ==
					 (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS);
	if (vm->cfg.verbose)
		vm_log(vm, "profile: %s, %zu symbols (%s), %s, output %s", p->spec.text, p->syms.n,
		       p->syms.source,
		       p->spec.leaf ? "samples written by the host kernel into perf ring buffers (no stacks)"
		       : p->sync_regs ? "registers by KVM_CAP_SYNC_REGS"
				      : "registers by KVM_GET_REGS",
		       p->out_dir);
	return 0;
}

void vm_profile_destroy(struct vm *vm)
{
	for (unsigned i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		prof_ring_fini(&v->prof_ring);
		for (unsigned e = 0; vm->prof.spec.n && e < PROF_MAX_EVENTS; e++) {
			if (v->prof_map[e])
				munmap(v->prof_map[e], v->prof_map_len[e]);
			v->prof_map[e] = NULL;
		}
	}
	prof_data_fini(&vm->prof.data);
	prof_symtab_fini(&vm->prof.syms);
}

/* ---- the vCPU thread ----------------------------------------------------------------- */

int vm_profile_vcpu_start(struct vcpu *v, struct errbuf *err)
{
	const struct prof_spec *s = &v->vm->prof.spec;

	for (unsigned i = 0; i < s->n; i++) {
		int fd = s->leaf ? pmu_perf_open_ring(s->e[i].ev, PV_PMU_CFG_USR | PV_PMU_CFG_OS,
						      s->e[i].period, PROF_PERF_PAGES, &v->prof_map[i],
						      &v->prof_map_len[i])
				 : pmu_perf_open(s->e[i].ev, PV_PMU_CFG_USR | PV_PMU_CFG_OS, s->e[i].period,
						 v->vm->prof.sigio ? 0 : vm_profile_signal());

		if (fd < 0)
			return errbuf_set(err, fd, "vCPU %u: --profile %s: perf_event_open: %s", v->index,
					  s->e[i].ev->name, strerror(-fd));
		v->prof_fd[i] = fd;
	}
	if (s->n && !s->leaf && v->vm->prof.sync_regs)
		v->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	return 0;
}

void vm_profile_vcpu_stop(struct vcpu *v)
{
	for (unsigned i = 0; i < PROF_MAX_EVENTS; i++) {
		if (v->prof_fd[i] >= 0)
			close(v->prof_fd[i]);
		v->prof_fd[i] = -1;
	}
}

/* Guest-virtual to guest-physical through the guest's own page tables (4- or 5-level, or none). */
static bool translate(const struct vm *vm, const struct kvm_sregs *sr, uint64_t gva, uint64_t *gpa)
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
		const uint64_t *pte = gmem_hva(&vm->mem, table + ((gva >> shift) & 511) * 8, 8);
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

/* One 8-byte word of guest-virtual memory. */
static bool read_guest_u64(const struct vm *vm, const struct kvm_sregs *sr, uint64_t gva, uint64_t *out)
{
	uint64_t gpa;
	const uint64_t *p;

	if (gva & 7 || !translate(vm, sr, gva, &gpa))
		return false;
	p = gmem_hva(&vm->mem, gpa, 8);
	if (!p)
		return false;
	*out = __atomic_load_n(p, __ATOMIC_RELAXED);
	return true;
}

/*
 * The frame-pointer chain from rbp: [rbp] is the caller's rbp, [rbp+8] the
 * return address. Frames must move up the stack (so the walk ends), and
 * every word is read through a checked translation.
 */
static void walk_stack(const struct vm *vm, const struct kvm_sregs *sr, uint64_t rbp, struct prof_sample *s)
{
	bool wide = (sr->efer & X86_EFER_LMA) && sr->cs.l;

	if (!wide || !(sr->cr0 & X86_CR0_PG))
		return; /* 32-bit code: the leaf only */
	while (s->depth < PROF_MAX_DEPTH && rbp) {
		uint64_t next, ret;

		if (!read_guest_u64(vm, sr, rbp, &next) || !read_guest_u64(vm, sr, rbp + 8, &ret)) {
			s->flags |= PROF_SAMPLE_TRUNCATED;
			return;
		}
		if (!ret)
			return;
		s->pc[s->depth++] = ret;
		if (next <= rbp || next - rbp > (1u << 20))
			return;
		rbp = next;
	}
}

/*
 * Count n in one of this vCPU's profile counts (this process's, which the
 * main thread reads) and in its stats field. The vCPU thread, its writer.
 */
static void count(struct vcpu *v, uint64_t *mine, struct sb_field f, uint64_t n)
{
	__atomic_store_n(mine, *mine + n, __ATOMIC_RELAXED);
	sb_begin(v->stats);
	sb_add(v->stats, f, n);
	sb_end(v->stats);
}

void vm_profile_sample(struct vcpu *v, int fd)
{
	const struct vm_stats_fields *sf = &v->vm->sf;
	uint64_t t0 = util_now_ns(), t1;
	struct kvm_regs regs_buf;
	struct kvm_sregs sregs_buf;
	const struct kvm_regs *regs = &regs_buf;
	const struct kvm_sregs *sregs = &sregs_buf;
	struct prof_sample s;
	uint64_t *mine;
	bool pushed;

	if (!v->vm->prof.spec.n)
		return;
	/* The rate cap: at most PROF_MAX_RATE samples a second per vCPU. */
	if (v->prof_last_ns && t0 - v->prof_last_ns < 1000000000ULL / PROF_MAX_RATE) {
		count(v, &v->prof_throttled, sf->prof_throttled, 1);
		return;
	}
	v->prof_last_ns = t0;
	if (v->vm->prof.sync_regs) {
		/* As of the last return from KVM_RUN: the guest has not run since. */
		regs = &v->run->s.regs.regs;
		sregs = &v->run->s.regs.sregs;
	} else if (ioctl(v->fd, KVM_GET_REGS, &regs_buf) < 0 || ioctl(v->fd, KVM_GET_SREGS, &sregs_buf) < 0) {
		/* No registers, no sample: counted as dropped, never silently. */
		count(v, &v->prof_dropped, sf->prof_dropped, 1);
		return;
	}
	memset(&s, 0, offsetof(struct prof_sample, pc));
	s.vcpu = v->index;
	s.cpl = sregs->cs.selector & 3;
	for (unsigned i = 0; i < PROF_MAX_EVENTS; i++)
		if (v->prof_fd[i] == fd && fd >= 0)
			s.event = (uint8_t)i;
	s.pc[0] = regs->rip;
	s.depth = 1;
	walk_stack(v->vm, sregs, regs->rbp, &s);
	pushed = prof_ring_push(&v->prof_ring, &s);
	mine = pushed ? &v->prof_samples : &v->prof_dropped;
	t1 = util_now_ns();
	/* One stats update for both: the sample (or its drop) and its cost. */
	__atomic_store_n(mine, *mine + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->prof_sample_ns, v->prof_sample_ns + (t1 - t0), __ATOMIC_RELAXED);
	sb_begin(v->stats);
	sb_add(v->stats, pushed ? sf->prof_samples : sf->prof_dropped, 1);
	sb_add(v->stats, sf->prof_sample_ns, t1 - t0);
	sb_end(v->stats);
}

/* ---- the main thread ----------------------------------------------------------------- */

/*
 * mode=leaf: take what the kernel wrote into one counter's perf ring since
 * the last time (the ring's protocol: acquire data_head, read, release
 * data_tail). Samples go into the profile; LOST records count as dropped,
 * THROTTLE records (the kernel's own rate limit) as throttled.
 */
static void drain_perf_ring(struct vm *vm, struct vcpu *v, unsigned e)
{
	struct perf_event_mmap_page *mp = v->prof_map[e];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), head, tail, size, samples = 0, dropped = 0,
		 throttled = 0;
	const uint8_t *data;

	if (!mp)
		return;
	/* Kernels before 4.1 leave data_offset/data_size 0: the data follow the first page. */
	size = mp->data_size ? mp->data_size : v->prof_map_len[e] - page;
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
			prof_data_add(&vm->prof.data, &s);
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
	__atomic_store_n(&v->prof_samples, v->prof_samples + samples, __ATOMIC_RELAXED);
	__atomic_store_n(&v->prof_dropped, v->prof_dropped + dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&v->prof_throttled, v->prof_throttled + throttled, __ATOMIC_RELAXED);
}

void vm_profile_drain(struct vm *vm)
{
	struct prof_sample s;

	if (!vm->prof.spec.n)
		return;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		while (prof_ring_pop(&vm->vcpus[i].prof_ring, &s))
			prof_data_add(&vm->prof.data, &s);
		for (unsigned e = 0; vm->prof.spec.leaf && e < vm->prof.spec.n; e++)
			drain_perf_ring(vm, &vm->vcpus[i], e);
	}
}

/* Add to field what the main thread counted in *count since the last time (*published). */
static void publish_delta(struct vcpu *v, struct sb_field field, const uint64_t *count, uint64_t *published)
{
	uint64_t n = __atomic_load_n(count, __ATOMIC_RELAXED);

	sb_add(v->stats, field, n - *published);
	*published = n;
}

void vm_profile_publish(struct vcpu *v)
{
	const struct vm_stats_fields *sf = &v->vm->sf;

	if (!v->vm->prof.spec.leaf)
		return;
	publish_delta(v, sf->prof_samples, &v->prof_samples, &v->prof_pub_samples);
	publish_delta(v, sf->prof_dropped, &v->prof_dropped, &v->prof_pub_dropped);
	publish_delta(v, sf->prof_throttled, &v->prof_throttled, &v->prof_pub_throttled);
}

json_t *vm_profile_json(struct vm *vm)
{
	struct vm_profile *p = &vm->prof;
	uint64_t *c;
	json_t *j;

	if (!p->spec.n)
		return NULL;
	vm_profile_drain(vm);
	c = calloc(4 * (size_t)vm->nr_vcpus, sizeof(*c));
	if (!c)
		return NULL;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		c[i] = __atomic_load_n(&vm->vcpus[i].prof_samples, __ATOMIC_RELAXED);
		c[vm->nr_vcpus + i] = __atomic_load_n(&vm->vcpus[i].prof_dropped, __ATOMIC_RELAXED);
		c[2 * vm->nr_vcpus + i] = __atomic_load_n(&vm->vcpus[i].prof_throttled, __ATOMIC_RELAXED);
		c[3 * vm->nr_vcpus + i] = __atomic_load_n(&vm->vcpus[i].prof_sample_ns, __ATOMIC_RELAXED);
	}
	j = prof_to_json(&p->data, &(struct prof_meta){ .spec = &p->spec,
							.syms = &p->syms,
							.kernel = p->kernel,
							.per_vcpu_samples = c,
							.per_vcpu_dropped = c + vm->nr_vcpus,
							.per_vcpu_throttled = c + 2 * vm->nr_vcpus,
							.per_vcpu_sample_ns = c + 3 * vm->nr_vcpus,
							.duration_ns = util_now_ns() - p->start_ns });
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

int vm_profile_write(struct vm *vm, struct errbuf *err)
{
	struct vm_profile *p = &vm->prof;
	char tmp[4200];
	json_t *j;
	int rc;

	if (!p->spec.n)
		return 0;
	j = vm_profile_json(vm);
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
		vm_log(vm, "profile: %" PRIu64 " samples written to %s (perfvisor profile report %s)",
		       p->data.samples, p->out_dir, p->out_dir);
	else
		remove_tmp(tmp);
	json_decref(j);
	return rc;
}
