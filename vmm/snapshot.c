// SPDX-License-Identifier: MIT
/*
 * Snapshot and restore, the VMM side (docs/snapshot.md). A snapshot
 * pauses every vCPU at a clean point, has each one save its KVM and PV PMU
 * state on its own thread, adds the irqchip, PIT, clock, devices and the
 * statistics, and writes the directory atomically (snapio.c) with the
 * state file (snapfmt.c). A restore reads and checks everything before the
 * VM is built, then applies it in the order KVM needs.
 */
#include "vm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MSR_IA32_TSC 0x10u
#define MSR_IA32_TSC_DEADLINE 0x6e0u

/* ---- snapshot: what each vCPU saves on its own thread ---------------------------- */

struct vcpu_save {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_xcrs xcrs;
	struct kvm_debugregs dregs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_mp_state mp;
	uint8_t *xsave;
	struct kvm_msr_entry *msrs;
	uint32_t nr_msrs, msrs_skipped;
	struct pmu_vcpu_state pmu;
	bool done; /* the vCPU's thread ran save_vcpu */
	int rc;
	char what[96];
};

struct save_ctx {
	struct vcpu_save *vs;
	const uint32_t *msr_index;
	uint32_t nr_msr_index;
	uint32_t xsave_len; /* KVM_CAP_XSAVE2 size, or 4096 */
};

/* Every MSR of the list KVM can read; one it cannot read here is skipped. */
static int get_msrs(int fd, const uint32_t *idx, uint32_t n, struct vcpu_save *s)
{
	struct kvm_msrs *m = calloc(1, sizeof(*m) + n * sizeof(struct kvm_msr_entry));

	s->msrs = calloc(n ? n : 1, sizeof(*s->msrs));
	if (!m || !s->msrs) {
		free(m);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n;) {
		int got;

		m->nmsrs = n - i;
		for (uint32_t j = 0; j < n - i; j++)
			m->entries[j] = (struct kvm_msr_entry){ .index = idx[i + j] };
		got = ioctl(fd, KVM_GET_MSRS, m);
		if (got < 0) {
			free(m);
			return -errno;
		}
		memcpy(&s->msrs[s->nr_msrs], m->entries, (size_t)got * sizeof(*s->msrs));
		s->nr_msrs += (uint32_t)got;
		i += (uint32_t)got;
		if (i < n) { /* KVM stops at the first MSR it cannot read */
			s->msrs_skipped++;
			i++;
		}
	}
	free(m);
	return 0;
}

#define SAVE_IOCTL(s, fd, req, arg)                                                              \
	do {                                                                                     \
		if (!(s)->rc && ioctl((fd), (req), (arg)) < 0) {                                 \
			(s)->rc = -errno;                                                        \
			snprintf((s)->what, sizeof((s)->what), "%s: %s", #req, strerror(errno)); \
		}                                                                                \
	} while (0)

/* Park work: runs on the vCPU's own thread while the VM is paused. */
static void save_vcpu(struct vcpu *v, void *arg)
{
	struct save_ctx *c = arg;
	struct vcpu_save *s = &c->vs[v->index];

	SAVE_IOCTL(s, v->fd, KVM_GET_REGS, &s->regs);
	SAVE_IOCTL(s, v->fd, KVM_GET_SREGS, &s->sregs);
	SAVE_IOCTL(s, v->fd, KVM_GET_XCRS, &s->xcrs);
	SAVE_IOCTL(s, v->fd, KVM_GET_DEBUGREGS, &s->dregs);
	SAVE_IOCTL(s, v->fd, KVM_GET_LAPIC, &s->lapic);
	SAVE_IOCTL(s, v->fd, KVM_GET_VCPU_EVENTS, &s->events);
	SAVE_IOCTL(s, v->fd, KVM_GET_MP_STATE, &s->mp);
	s->xsave = calloc(1, c->xsave_len);
	if (!s->xsave && !s->rc)
		s->rc = -ENOMEM;
	if (c->xsave_len > sizeof(struct kvm_xsave))
		SAVE_IOCTL(s, v->fd, KVM_GET_XSAVE2, s->xsave);
	else
		SAVE_IOCTL(s, v->fd, KVM_GET_XSAVE, s->xsave);
	if (!s->rc) {
		s->rc = get_msrs(v->fd, c->msr_index, c->nr_msr_index, s);
		if (s->rc)
			snprintf(s->what, sizeof(s->what), "KVM_GET_MSRS: %s", strerror(-s->rc));
	}
	if (v->pmu.vm)
		pmu_vcpu_save(&v->pmu, &s->pmu);
	/* The kvm.* mirror as of now, not of the last refresh. */
	vm_stats_kvm_refresh(v, util_now_ns(), true);
	s->done = true;
}

static int msr_index_list(struct vm *vm, uint32_t **out, uint32_t *n, struct errbuf *err)
{
	struct kvm_msr_list probe = { .nmsrs = 0 }, *l;

	if (ioctl(vm->kvm.fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return errbuf_set(err, -errno, "snapshot: KVM_GET_MSR_INDEX_LIST: %s", strerror(errno));
	l = calloc(1, sizeof(*l) + probe.nmsrs * sizeof(uint32_t));
	if (!l)
		return errbuf_set(err, -ENOMEM, "out of memory");
	l->nmsrs = probe.nmsrs;
	if (ioctl(vm->kvm.fd, KVM_GET_MSR_INDEX_LIST, l) < 0) {
		free(l);
		return errbuf_set(err, -errno, "snapshot: KVM_GET_MSR_INDEX_LIST: %s", strerror(errno));
	}
	*n = l->nmsrs;
	*out = malloc((l->nmsrs ? l->nmsrs : 1) * sizeof(uint32_t));
	if (*out)
		memcpy(*out, l->indices, l->nmsrs * sizeof(uint32_t));
	free(l);
	return *out ? 0 : errbuf_set(err, -ENOMEM, "out of memory");
}

static uint32_t xsave_size(struct vm *vm)
{
	int n = ioctl(vm->fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2);

	return n > (int)sizeof(struct kvm_xsave) ? (uint32_t)n : (uint32_t)sizeof(struct kvm_xsave);
}

/* The cumulative and peak fields of one record, by name. */
static void save_stats(struct vm *vm, enum pv_stats_record rec, unsigned idx, struct snap_stats *out)
{
	for (unsigned i = 0; i < sb_nr_fields(vm->stats) && out->n < SNAP_MAX_STATS; i++) {
		struct sb_field f;
		const struct pv_stats_desc *d = sb_field_at(vm->stats, i, &f);

		if (d->record != rec || d->kind == PV_STATS_INSTANT)
			continue;
		out->s[out->n++] = (struct snap_stat){ d->name, sb_get(vm->stats, idx, f) };
	}
}

/* A new state for `part` in *slot, filled by the caller. */
static void *new_state(const struct snap_part *part, void **slot)
{
	*slot = calloc(1, part->size);
	return *slot;
}

/* The components' parts: each device's, the PV PMU's and the statistics'. -ENOMEM. */
static int save_parts(struct vm *vm, struct snap *s, const struct save_ctx *c)
{
	const struct snap_schema *sc = vm_snap_schema();
	void *st;

	s->schema = sc;
	s->owns_parts = true; /* snap_fini frees them */
	for (unsigned k = 0; k < sc->nr_devices; k++)
		for (unsigned d = 0; d < vm->nr_devs; d++) {
			if (vm->devs[d].desc->state != sc->devices[k])
				continue;
			if (!(st = new_state(sc->devices[k], &s->dev[k])))
				return -ENOMEM;
			vm->devs[d].desc->save(vm->devs[d].dev, st);
		}
	for (unsigned k = 0; k < sc->nr_vm; k++) {
		if (sc->vm[k] == &pmu_caps_part && s->pmu) {
			if (!(st = new_state(sc->vm[k], &s->vm[k])))
				return -ENOMEM;
			memcpy(st, &vm->pmu.caps, sizeof(vm->pmu.caps));
		} else if (sc->vm[k] == &snap_stats_part) {
			if (!(st = new_state(sc->vm[k], &s->vm[k])))
				return -ENOMEM;
			save_stats(vm, PV_STATS_RECORD_VM, 0, st);
		}
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		for (unsigned k = 0; k < sc->nr_vcpu; k++) {
			if (sc->vcpu[k] == &pmu_vcpu_part && s->pmu) {
				if (!(st = new_state(sc->vcpu[k], &s->vcpu[i].part[k])))
					return -ENOMEM;
				memcpy(st, &c->vs[i].pmu, sizeof(c->vs[i].pmu));
			} else if (sc->vcpu[k] == &snap_stats_part) {
				if (!(st = new_state(sc->vcpu[k], &s->vcpu[i].part[k])))
					return -ENOMEM;
				save_stats(vm, PV_STATS_RECORD_VCPU, i, st);
			}
		}
	return 0;
}

static void blob(struct snap_bytes *b, const void *p, size_t len)
{
	b->p = p;
	b->len = (uint32_t)len;
}

/* Everything but guest memory, into s; the vCPUs have saved theirs into c. Main thread. */
static int capture(struct vm *vm, struct snap *s, struct save_ctx *c, struct kvm_irqchip chip[3],
		   struct kvm_pit_state2 *pit, struct errbuf *err)
{
	struct kvm_clock_data clock = { 0 };
	struct timespec now;

	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		if (!c->vs[i].done)
			return errbuf_set(err, -ESHUTDOWN,
					  "snapshot: vCPU %u did not save its state (the VM is stopping)", i);
		if (c->vs[i].rc)
			return errbuf_set(err, c->vs[i].rc, "snapshot: vCPU %u: %s", i, c->vs[i].what);
	}
	for (int i = 0; i < 3; i++) {
		chip[i].chip_id = (uint32_t)i;
		if (ioctl(vm->fd, KVM_GET_IRQCHIP, &chip[i]) < 0)
			return errbuf_set(err, -errno, "snapshot: KVM_GET_IRQCHIP %d: %s", i,
					  strerror(errno));
	}
	if (ioctl(vm->fd, KVM_GET_PIT2, pit) < 0)
		return errbuf_set(err, -errno, "snapshot: KVM_GET_PIT2: %s", strerror(errno));
	if (ioctl(vm->fd, KVM_GET_CLOCK, &clock) < 0)
		return errbuf_set(err, -errno, "snapshot: KVM_GET_CLOCK: %s", strerror(errno));
	clock_gettime(CLOCK_REALTIME, &now);

	s->nr_vcpus = vm->nr_vcpus;
	s->mem_size = vm->mem.size;
	s->pmu = vm->cfg.pmu;
	s->cpuid_hide = vm->cfg.cpuid_hide;
	s->host_kind = vm->kvm_host.kind;
	s->host_flags = vm->kvm_host.flags;
	s->tsc_khz = vm->tsc_khz;
	s->created_ns = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	s->kernel = vm->cfg.kernel;
	s->cmdline = vm->cfg.cmdline;
	s->writer = "perfvisor";
	s->profile = vm->prof.spec.n ? vm->prof.spec.text : "";
	s->profile_symbols = vm->prof.spec.n && vm->cfg.symbols ? vm->cfg.symbols : "";
	s->clock = clock.clock;
	s->clock_flags = clock.flags;
	blob(&s->pit, pit, sizeof(*pit));
	blob(&s->pic_master, &chip[0].chip, sizeof(chip[0].chip));
	blob(&s->pic_slave, &chip[1].chip, sizeof(chip[1].chip));
	blob(&s->ioapic, &chip[2].chip, sizeof(chip[2].chip));
	if (save_parts(vm, s, c))
		return errbuf_set(err, -ENOMEM, "snapshot: out of memory");
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct snap_vcpu *sv = &s->vcpu[i];
		struct vcpu_save *vs = &c->vs[i];
		struct vcpu *v = &vm->vcpus[i];

		blob(&sv->regs, &vs->regs, sizeof(vs->regs));
		blob(&sv->sregs, &vs->sregs, sizeof(vs->sregs));
		blob(&sv->xsave, vs->xsave, c->xsave_len);
		blob(&sv->xcrs, &vs->xcrs, sizeof(vs->xcrs));
		blob(&sv->debugregs, &vs->dregs, sizeof(vs->dregs));
		blob(&sv->lapic, &vs->lapic, sizeof(vs->lapic));
		blob(&sv->events, &vs->events, sizeof(vs->events));
		blob(&sv->msrs, vs->msrs, vs->nr_msrs * sizeof(*vs->msrs));
		blob(&sv->cpuid, v->cpuid->entries, v->cpuid->nent * sizeof(v->cpuid->entries[0]));
		sv->mp_state = vs->mp.mp_state;
	}
	return 0;
}

static int write_snapshot(struct vm *vm, const char *dir, struct vm_snapshot_result *res, struct errbuf *err)
{
	struct save_ctx c = { 0 };
	struct snap *s = calloc(1, sizeof(*s));
	struct kvm_irqchip chip[3];
	struct kvm_pit_state2 pit;
	struct snapio_dir d = { .dfd = -1 };
	void *state = NULL;
	size_t state_len = 0;
	int rc;

	c.vs = calloc(vm->nr_vcpus, sizeof(*c.vs));
	if (!s || !c.vs) {
		rc = errbuf_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = msr_index_list(vm, (uint32_t **)&c.msr_index, &c.nr_msr_index, err);
	if (rc)
		goto out;
	c.xsave_len = xsave_size(vm);
	vm_on_parked_vcpus(vm, save_vcpu, &c);
	rc = capture(vm, s, &c, chip, &pit, err);
	if (!rc)
		rc = snapio_begin(&d, dir, err);
	if (!rc)
		/* A memfd knows its holes; restored copy-on-write RAM: its file's holes, then what is resident. */
		rc = snapio_write_memory(&d, vm->mem.hva, vm->mem.size,
					 vm->mem.fd >= 0 ? vm->mem.fd : vm->mem.src_fd, vm->mem.fd < 0,
					 &s->mem_checksum, err);
	if (!rc)
		rc = snap_build(s, &state, &state_len, err);
	if (!rc)
		rc = snapio_finish(&d, state, state_len, err);
	snapio_abort(&d);
	res->memory_ns = d.memory_ns;
	res->used_uring = d.used_uring;
	res->state_bytes = state_len;
	res->memory_bytes = vm->mem.size;
	if (vm->cfg.verbose && !rc)
		vm_log(vm, "snapshot %s: %u vCPUs, %u MSRs each (%u unreadable skipped), %zu bytes of state",
		       dir, vm->nr_vcpus, c.vs[0].nr_msrs, c.vs[0].msrs_skipped, state_len);
out:
	for (unsigned i = 0; c.vs && i < vm->nr_vcpus; i++) {
		free(c.vs[i].xsave);
		free(c.vs[i].msrs);
	}
	free(c.vs);
	free((void *)c.msr_index);
	free(state);
	if (s)
		snap_fini(s);
	free(s);
	return rc;
}

int vm_snapshot(struct vm *vm, const char *dir, bool stop_after, struct vm_snapshot_result *res,
		struct errbuf *err)
{
	bool was_paused = atomic_load(&vm->paused);
	uint64_t t0 = util_now_ns();
	int rc;

	memset(res, 0, sizeof(*res));
	if (!was_paused)
		vm_pause(vm);
	if (atomic_load(&vm->stopping))
		return errbuf_set(err, -ESHUTDOWN, "snapshot: the VM is stopping");
	rc = write_snapshot(vm, dir, res, err);
	res->paused_ns = util_now_ns() - t0;
	if (!rc && stop_after) {
		vm_log(vm, "stopped after a snapshot to %s", dir);
		vm_request_stop(vm, 0, "stopped after a snapshot to %s", dir);
	} else if (!was_paused)
		vm_resume(vm); /* also after a failed snapshot: the VM carries on */
	return rc;
}

/* ---- restore ------------------------------------------------------------------------ */

static int restore_fail(struct vm *vm, struct errbuf *err, int rc, const char *msg)
{
	return errbuf_set(err, rc, "snapshot %s: %s", vm->cfg.restore, msg);
}

static int restore_profile(struct vm *vm, const struct snap *s, struct errbuf *err);

int vm_restore_load(struct vm *vm, struct errbuf *err)
{
	char path[4200];
	struct errbuf e;
	struct snap *s = calloc(1, sizeof(*s));
	struct stat st;
	size_t len;
	int rc, fd;

	if (!s)
		return errbuf_set(err, -ENOMEM, "out of memory");
	vm->restored = s;
	if (stat(vm->cfg.restore, &st) < 0 || !S_ISDIR(st.st_mode))
		return restore_fail(vm, err, -ENOENT, "not a directory");
	snprintf(path, sizeof(path), "%s/%s", vm->cfg.restore, SNAP_STATE_FILE);
	if (access(path, F_OK) < 0)
		return restore_fail(vm, err, -ENOENT,
				    "no " SNAP_STATE_FILE ": not a perfvisor snapshot directory");
	rc = snapio_read_file(path, SNAP_MAX_STATE_SIZE, &vm->restored_blob, &len, &e);
	if (!rc)
		rc = snap_parse(vm->restored_blob, len, vm_snap_schema(), s, &e);
	if (rc)
		return restore_fail(vm, err, rc, e.msg);
	snprintf(path, sizeof(path), "%s/%s", vm->cfg.restore, SNAP_MEMORY_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return restore_fail(vm, err, -errno, "cannot open the memory file " SNAP_MEMORY_FILE);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != s->mem_size) {
		snprintf(e.msg, sizeof(e.msg), "the memory file is %lld bytes, the snapshot's RAM %" PRIu64,
			 (long long)st.st_size, s->mem_size);
		close(fd);
		return restore_fail(vm, err, -EINVAL, e.msg);
	}
	vm->restored_memfd = fd;
	vm->nr_vcpus = s->nr_vcpus;
	vm->cfg.nr_cpus = s->nr_vcpus;
	vm->cfg.mem_size = s->mem_size;
	vm->cfg.pmu = s->pmu;
	vm->cfg.cpuid_hide = s->cpuid_hide;
	vm->cfg.kernel = s->kernel;
	vm->cfg.cmdline = s->cmdline;
	return restore_profile(vm, s, err);
}

/* The profiling configuration is the VM's: the snapshot's spec again, on this host's counters. */
static int restore_profile(struct vm *vm, const struct snap *s, struct errbuf *err)
{
	struct errbuf e;

	if (!s->profile || !s->profile[0]) {
		if (vm->cfg.profile_output || vm->cfg.symbols)
			return restore_fail(vm, err, -EINVAL,
					    "--profile-output and --symbols need a snapshot of a profiled VM "
					    "(perfvisor run --profile)");
		return 0;
	}
	if (prof_spec_parse(s->profile, true, &vm->cfg.prof, &e) || prof_spec_check_host(&vm->cfg.prof, &e))
		return restore_fail(vm, err, -EINVAL, e.msg);
	if (!vm->cfg.symbols && s->profile_symbols && s->profile_symbols[0])
		vm->cfg.symbols = s->profile_symbols;
	return 0;
}

int vm_restore_memory(struct vm *vm, struct errbuf *err)
{
	const struct snap *s = vm->restored;
	bool check = !vm->cfg.restore_no_check, uring = false;
	uint64_t sum = 0;
	int rc;

	if (!vm->cfg.restore_read) {
		if (check && (rc = snapio_hash_file(vm->restored_memfd, s->mem_size, &sum)) < 0)
			return restore_fail(vm, err, rc, "cannot read the memory file");
		rc = gmem_init_private(&vm->mem, vm->restored_memfd, s->mem_size, err);
	} else {
		rc = gmem_init(&vm->mem, s->mem_size, err);
		if (!rc && (rc = snapio_memory(vm->restored_memfd, vm->mem.hva, s->mem_size, false,
					       vm->restored_memfd, false, check ? &sum : NULL, &uring)) < 0)
			return restore_fail(vm, err, rc, "cannot read the memory file");
	}
	close(vm->restored_memfd);
	vm->restored_memfd = -1;
	if (rc)
		return rc;
	if (check && sum != s->mem_checksum)
		return restore_fail(vm, err, -EPROTO,
				    "the memory file is damaged (its checksum does not match)");
	if (vm->cfg.verbose)
		vm_log(vm, "restore: guest memory %s%s",
		       vm->cfg.restore_read ? "read" : "mapped copy-on-write",
		       vm->cfg.restore_read ? (uring ? " with io_uring" : " with pread") : "");
	return 0;
}

/* The first (function, index) where two CPUID tables differ, for the message. */
static bool cpuid_same(const struct kvm_cpuid2 *now, struct snap_bytes saved, char *why, size_t len)
{
	const struct kvm_cpuid_entry2 *e = saved.p;
	unsigned n = saved.len / sizeof(*e);

	if (n != now->nent) {
		snprintf(why, len, "%u CPUID entries here, %u in the snapshot", now->nent, n);
		return false;
	}
	for (unsigned i = 0; i < n; i++) {
		if (memcmp(&e[i], &now->entries[i], sizeof(*e))) {
			snprintf(why, len, "CPUID leaf 0x%x.%u differs", e[i].function, e[i].index);
			return false;
		}
	}
	return true;
}

static int set_msrs(int fd, const struct snap_bytes b, bool deadline_only, const char **failed, uint32_t *idx)
{
	const struct kvm_msr_entry *e = b.p;
	unsigned n = b.len / sizeof(*e), k = 0;
	struct kvm_msrs *m = calloc(1, sizeof(*m) + n * sizeof(*e));
	int rc = 0;

	if (!m)
		return -ENOMEM;
	/* TSC first, TSC_DEADLINE only after the LAPIC (a second call), as KVM needs. */
	for (unsigned pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < n; i++) {
			bool first = e[i].index == MSR_IA32_TSC, dl = e[i].index == MSR_IA32_TSC_DEADLINE;

			if (deadline_only ? dl && pass == 0 : !dl && (pass == 0) == first)
				m->entries[k++] = e[i];
		}
	m->nmsrs = k;
	if (k) {
		int set = ioctl(fd, KVM_SET_MSRS, m);

		if (set < 0 || (unsigned)set != k) {
			rc = set < 0 ? -errno : -EINVAL;
			*idx = set < 0 ? 0 : m->entries[set].index;
			*failed = "KVM_SET_MSRS";
		}
	}
	free(m);
	return rc;
}

#define SET_IOCTL(fd, req, arg)                             \
	do {                                                \
		if (!rc && ioctl((fd), (req), (arg)) < 0) { \
			rc = -errno;                        \
			failed = #req;                      \
		}                                           \
	} while (0)

/* One vCPU's KVM state, in KVM's order: sregs before LAPIC, MSRs around it. Main thread. */
static int restore_vcpu(struct vcpu *v, const struct snap_vcpu *sv, struct errbuf *err)
{
	struct kvm_vcpu_events events;
	struct kvm_mp_state mp = { .mp_state = sv->mp_state };
	const char *failed = NULL;
	uint32_t msr = 0;
	uint8_t *xsave;
	int rc = 0;

	memcpy(&events, sv->events.p, sizeof(events));
	/* NMI pending and the SIPI vector are only set when these flags say so. */
	events.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR;
	xsave = calloc(1, sv->xsave.len > 4096 ? sv->xsave.len : 4096);
	if (!xsave)
		return errbuf_set(err, -ENOMEM, "out of memory");
	memcpy(xsave, sv->xsave.p, sv->xsave.len);
	SET_IOCTL(v->fd, KVM_SET_SREGS, sv->sregs.p);
	SET_IOCTL(v->fd, KVM_SET_REGS, sv->regs.p);
	SET_IOCTL(v->fd, KVM_SET_XCRS, sv->xcrs.p);
	SET_IOCTL(v->fd, KVM_SET_XSAVE, xsave);
	if (!rc)
		rc = set_msrs(v->fd, sv->msrs, false, &failed, &msr);
	SET_IOCTL(v->fd, KVM_SET_MP_STATE, &mp);
	SET_IOCTL(v->fd, KVM_SET_LAPIC, sv->lapic.p);
	if (!rc)
		rc = set_msrs(v->fd, sv->msrs, true, &failed, &msr);
	SET_IOCTL(v->fd, KVM_SET_VCPU_EVENTS, &events);
	SET_IOCTL(v->fd, KVM_SET_DEBUGREGS, sv->debugregs.p);
	free(xsave);
	if (rc && msr)
		return errbuf_set(err, rc, "restore: vCPU %u: KVM refused MSR 0x%x", v->index, msr);
	if (rc)
		return errbuf_set(err, rc, "restore: vCPU %u: %s: %s", v->index, failed, strerror(-rc));
	return 0;
}

int vm_restore_state(struct vm *vm, struct errbuf *err)
{
	const struct snap *s = vm->restored;
	const struct snap_bytes *chips[3] = { &s->pic_master, &s->pic_slave, &s->ioapic };
	char why[128];
	int rc;

	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		if (!cpuid_same(vm->vcpus[i].cpuid, s->vcpu[i].cpuid, why, sizeof(why)))
			return errbuf_set(
				err, -EINVAL,
				"snapshot %s: vCPU %u: this host's CPUID is not the snapshot's (%s): "
				"restore on a host like the one it was taken on",
				vm->cfg.restore, i, why);
		if (s->vcpu[i].xsave.len > xsave_size(vm))
			return restore_fail(vm, err, -EINVAL, "its XSAVE state is larger than this host's");
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		rc = restore_vcpu(&vm->vcpus[i], &s->vcpu[i], err);
		if (rc)
			return rc;
	}
	for (int i = 0; i < 3; i++) {
		struct kvm_irqchip chip = { .chip_id = (uint32_t)i };

		memcpy(&chip.chip, chips[i]->p, sizeof(chip.chip));
		if (ioctl(vm->fd, KVM_SET_IRQCHIP, &chip) < 0)
			return errbuf_set(err, -errno, "restore: KVM_SET_IRQCHIP %d: %s", i, strerror(errno));
	}
	if (ioctl(vm->fd, KVM_SET_PIT2, s->pit.p) < 0)
		return errbuf_set(err, -errno, "restore: KVM_SET_PIT2: %s", strerror(errno));
	/* The devices' states; snap_parse checked them (their own checks), so a refusal is a bug. */
	for (unsigned d = 0; d < vm->nr_devs; d++) {
		const struct dev_desc *desc = vm->devs[d].desc;
		const void *st = desc->state ? snap_part_state(s, desc->state, -1) : NULL;

		if (st && desc->load(vm->devs[d].dev, st))
			return restore_fail(vm, err, -EINVAL, "a device state the device refuses");
	}
	return 0;
}

/* Is f one of the kvm.* mirrors? Its index in vm->kvm_stats, or -1. */
static int kvm_mirror(const struct vm *vm, struct sb_field f)
{
	for (unsigned k = 0; k < vm->kvm_stats.nr; k++)
		if (vm->kvm_stats.field[k].offset == f.offset && vm->kvm_stats.field[k].record == f.record)
			return (int)k;
	return -1;
}

/*
 * Saved values back into a record, by name. Cumulative and peak fields
 * carry over; a kvm.* mirror's cumulative value becomes its base, because
 * the new VM's KVM counts from 0 (its peaks start over), and so does
 * time.cpu_ns (the new vCPU thread's CPU clock starts at 0). Fields this
 * perfvisor does not have are ignored. Before the vCPUs start.
 */
static void restore_record(struct vm *vm, enum pv_stats_record rec, unsigned idx, const struct snap_stats *st)
{
	struct sb_entry e =
		rec == PV_STATS_RECORD_VM ? stats_vm_entry(vm->stats) : stats_vcpu_entry(vm->stats, idx);

	sb_begin(e);
	for (unsigned j = 0; j < st->n; j++) {
		for (unsigned i = 0; i < sb_nr_fields(vm->stats); i++) {
			struct sb_field f;
			const struct pv_stats_desc *d = sb_field_at(vm->stats, i, &f);
			int k = rec == PV_STATS_RECORD_VCPU ? kvm_mirror(vm, f) : -1;

			if (d->record != rec || strcmp(d->name, st->s[j].name))
				continue;
			if (d->kind == PV_STATS_INSTANT || (k >= 0 && d->kind != PV_STATS_CUMULATIVE))
				break;
			if (k >= 0)
				vm->vcpus[idx].kvm_stats_base[k] = st->s[j].value;
			if (rec == PV_STATS_RECORD_VCPU && f.offset == vm->sf.cpu_ns.offset)
				vm->vcpus[idx].cpu_ns_base = st->s[j].value;
			sb_set(e, f, st->s[j].value);
			break;
		}
	}
	sb_end(e);
}

int vm_restore_stats(struct vm *vm, struct errbuf *err)
{
	const struct snap *s = vm->restored;
	const char *why;

	const struct pmu_caps *caps = snap_part_state(s, &pmu_caps_part, -1);

	/* The PMU's capabilities are complete only now (class 3 comes from KVM's stats). */
	if (s->pmu && !pmu_caps_equal(caps, &vm->pmu.caps, &why))
		return errbuf_set(
			err, -EINVAL,
			"snapshot %s: this host's PV PMU differs from the snapshot's (%s): restore on a "
			"host like the one it was taken on",
			vm->cfg.restore, why);
	restore_record(vm, PV_STATS_RECORD_VM, 0, snap_part_state(s, &snap_stats_part, -1));
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		restore_record(vm, PV_STATS_RECORD_VCPU, i, snap_part_state(s, &snap_stats_part, (int)i));
		if (s->pmu)
			vm->vcpus[i].restore_pmu = snap_part_state(s, &pmu_vcpu_part, (int)i);
	}
	return 0;
}

int vm_restore_clock(struct vm *vm, struct errbuf *err)
{
	struct kvm_clock_data clock = { .clock = vm->restored->clock };

	if (ioctl(vm->fd, KVM_SET_CLOCK, &clock) < 0)
		return errbuf_set(err, -errno, "restore: KVM_SET_CLOCK: %s", strerror(errno));
	return 0;
}

void vm_restore_free(struct vm *vm)
{
	if (vm->restored_memfd >= 0)
		close(vm->restored_memfd);
	vm->restored_memfd = -1;
	if (vm->restored)
		snap_fini(vm->restored);
	free(vm->restored);
	free(vm->restored_blob);
	vm->restored = NULL;
	vm->restored_blob = NULL;
}
