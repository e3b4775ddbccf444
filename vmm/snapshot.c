// SPDX-License-Identifier: MIT
/*
 * Snapshot and restore, the VMM side (snapshot.h, docs/snapshot.md): KVM's
 * state of each vCPU (saved on its own thread while it is parked) and of
 * the VM, the parts list's states, the memory file; and back, in the
 * order KVM needs.
 */
#include "snapshot.h"

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
	bool done; /* the vCPU's thread ran save_vcpu */
	int rc;
	char what[96];
};

struct save_ctx {
	struct vcpu_save *vs;
	const uint32_t *msr_index;
	uint32_t nr_msr_index;
	uint32_t xsave_len; /* KVM_CAP_XSAVE2 size, or 4096 */
	const struct vm_parts *parts;
	struct snap *s; /* each vCPU fills its per-vCPU parts' states (allocated by the main thread) */
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
	/* Its parts, here on its own thread: the PMU syncs its counters, the statistics their KVM mirror. */
	for (unsigned k = 0; k < c->s->schema->nr_vcpu; k++) {
		const struct vm_part *p = vm_parts_find(c->parts, c->s->schema->vcpu[k], true);
		void *st = c->s->vcpu[v->index].part[k];

		if (p && st)
			p->ops->save_vcpu(p->obj, v->index, st);
	}
	s->done = true;
}

/* A new state for `part` in *slot, filled later. */
static int new_state(const struct snap_part *part, void **slot)
{
	*slot = calloc(1, part->size);
	return *slot ? 0 : -ENOMEM;
}

/*
 * A state for every part this VM has (s->owns_parts: snap_fini frees
 * them); the VM-wide ones filled now (main thread, VM paused), the
 * per-vCPU ones by each vCPU on its own thread (save_vcpu).
 */
static int alloc_parts(const struct vm_snapshot_env *e, struct snap *s)
{
	const struct snap_schema *sc = vm_snap_schema();
	const struct vm_part *p;

	s->schema = sc;
	s->owns_parts = true;
	for (unsigned k = 0; k < sc->nr_devices; k++)
		if ((p = vm_parts_find(e->parts, sc->devices[k], false)) &&
		    new_state(sc->devices[k], &s->dev[k]))
			return -ENOMEM;
	for (unsigned k = 0; k < sc->nr_vm; k++)
		if ((p = vm_parts_find(e->parts, sc->vm[k], false)) && new_state(sc->vm[k], &s->vm[k]))
			return -ENOMEM;
	for (unsigned i = 0; i < e->machine.nr_vcpus; i++)
		for (unsigned k = 0; k < sc->nr_vcpu; k++)
			if (vm_parts_find(e->parts, sc->vcpu[k], true) &&
			    new_state(sc->vcpu[k], &s->vcpu[i].part[k]))
				return -ENOMEM;
	return 0;
}

/* The VM-wide parts' states: main thread, VM paused. */
static void save_vm_parts(const struct vm_snapshot_env *e, struct snap *s)
{
	const struct snap_schema *sc = s->schema;
	const struct vm_part *p;

	for (unsigned k = 0; k < sc->nr_devices; k++)
		if ((p = vm_parts_find(e->parts, sc->devices[k], false)) && s->dev[k])
			p->ops->save(p->obj, s->dev[k]);
	for (unsigned k = 0; k < sc->nr_vm; k++)
		if ((p = vm_parts_find(e->parts, sc->vm[k], false)) && s->vm[k])
			p->ops->save(p->obj, s->vm[k]);
}

static void blob(struct snap_bytes *b, const void *p, size_t len)
{
	b->p = p;
	b->len = (uint32_t)len;
}

/* Everything but guest memory, into s; the vCPUs have saved theirs into c. Main thread. */
static int capture(const struct vm_snapshot_env *e, struct snap *s, struct save_ctx *c,
		   struct kvm_irqchip chip[3], struct kvm_pit_state2 *pit, struct errbuf *err)
{
	const struct vm_machine *m = &e->machine;
	struct kvm_clock_data clock = { 0 };
	struct timespec now;

	for (unsigned i = 0; i < m->nr_vcpus; i++) {
		if (!c->vs[i].done)
			return errbuf_set(err, -ESHUTDOWN,
					  "snapshot: vCPU %u did not save its state (the VM is stopping)", i);
		if (c->vs[i].rc)
			return errbuf_set(err, c->vs[i].rc, "snapshot: vCPU %u: %s", i, c->vs[i].what);
	}
	for (int i = 0; i < 3; i++) {
		chip[i].chip_id = (uint32_t)i;
		if (ioctl(e->vm_fd, KVM_GET_IRQCHIP, &chip[i]) < 0)
			return errbuf_set(err, -errno, "snapshot: KVM_GET_IRQCHIP %d: %s", i,
					  strerror(errno));
	}
	if (ioctl(e->vm_fd, KVM_GET_PIT2, pit) < 0)
		return errbuf_set(err, -errno, "snapshot: KVM_GET_PIT2: %s", strerror(errno));
	if (ioctl(e->vm_fd, KVM_GET_CLOCK, &clock) < 0)
		return errbuf_set(err, -errno, "snapshot: KVM_GET_CLOCK: %s", strerror(errno));
	clock_gettime(CLOCK_REALTIME, &now);

	s->nr_vcpus = m->nr_vcpus;
	s->mem_size = e->mem->size;
	s->pmu = m->pmu;
	s->cpuid_hide = m->cpuid_hide;
	s->cpuid_add = m->cpuid_add;
	s->host_kind = m->host.kind;
	s->host_flags = m->host.flags;
	s->tsc_khz = m->tsc_khz;
	s->created_ns = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	s->kernel = m->kernel;
	s->cmdline = m->cmdline;
	s->writer = "perfvisor";
	s->profile = m->profile;
	s->profile_symbols = m->profile_symbols;
	s->clock = clock.clock;
	s->clock_flags = clock.flags;
	blob(&s->pit, pit, sizeof(*pit));
	blob(&s->pic_master, &chip[0].chip, sizeof(chip[0].chip));
	blob(&s->pic_slave, &chip[1].chip, sizeof(chip[1].chip));
	blob(&s->ioapic, &chip[2].chip, sizeof(chip[2].chip));
	save_vm_parts(e, s);
	for (unsigned i = 0; i < m->nr_vcpus; i++) {
		struct snap_vcpu *sv = &s->vcpu[i];
		struct vcpu_save *vs = &c->vs[i];
		const struct vcpu *v = &e->vcpus[i];

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

/* A paused VM's state but its memory, captured: what a snapshot and a migration write. */
struct capture {
	struct save_ctx c;
	struct snap *s;
	struct kvm_irqchip chip[3];
	struct kvm_pit_state2 pit;
};

static void capture_fini(struct capture *k, unsigned n)
{
	for (unsigned i = 0; k->c.vs && i < n; i++) {
		free(k->c.vs[i].xsave);
		free(k->c.vs[i].msrs);
	}
	free(k->c.vs);
	free((void *)k->c.msr_index);
	if (k->s)
		snap_fini(k->s);
	free(k->s);
}

/* Every vCPU saves its state on its thread, then the VM's; the VM is paused. Main thread. */
static int capture_all(const struct vm_snapshot_env *e, struct capture *k, struct errbuf *err)
{
	unsigned n = e->machine.nr_vcpus;
	int rc;

	memset(k, 0, sizeof(*k));
	k->c.parts = e->parts;
	k->s = calloc(1, sizeof(*k->s));
	k->c.vs = calloc(n, sizeof(*k->c.vs));
	k->c.s = k->s;
	if (!k->s || !k->c.vs || alloc_parts(e, k->s))
		return errbuf_set(err, -ENOMEM, "out of memory");
	rc = kvmsys_msr_index_list(e->kvm, (uint32_t **)&k->c.msr_index, &k->c.nr_msr_index, err);
	if (rc)
		return rc;
	k->c.xsave_len = kvmsys_xsave_size(e->vm_fd);
	vmctl_on_parked(e->ctl, save_vcpu, &k->c);
	return capture(e, k->s, &k->c, k->chip, &k->pit, err);
}

int vm_snapshot_state(const struct vm_snapshot_env *e, void **state, size_t *len, struct errbuf *err)
{
	struct capture k;
	int rc = capture_all(e, &k, err);

	/* The stream checks each record of memory; the state file's memory checksum stays 0. */
	if (!rc)
		rc = snap_build(k.s, state, len, err);
	capture_fini(&k, e->machine.nr_vcpus);
	return rc;
}

static int write_snapshot(const struct vm_snapshot_env *e, const char *dir, struct vm_snapshot_result *res,
			  struct errbuf *err)
{
	unsigned n = e->machine.nr_vcpus;
	struct snapio_dir d = { .dfd = -1 };
	struct capture k;
	void *state = NULL;
	size_t state_len = 0;
	int rc = capture_all(e, &k, err);

	if (!rc)
		rc = snapio_begin(&d, dir, err);
	if (!rc)
		/* A memfd knows its holes; restored copy-on-write RAM: its file's holes, then what is resident. */
		rc = snapio_write_memory(&d, e->mem->hva, e->mem->size,
					 e->mem->fd >= 0 ? e->mem->fd : e->mem->src_fd, e->mem->fd < 0,
					 &k.s->mem_checksum, err);
	if (!rc)
		rc = snap_build(k.s, &state, &state_len, err);
	if (!rc)
		rc = snapio_finish(&d, state, state_len, err);
	snapio_abort(&d);
	res->memory_ns = d.memory_ns;
	res->used_uring = d.used_uring;
	res->state_bytes = state_len;
	res->memory_bytes = e->mem->size;
	if (e->verbose && !rc)
		vm_log("snapshot %s: %u vCPUs, %u MSRs each (%u unreadable skipped), %zu bytes of state", dir,
		       n, k.c.vs[0].nr_msrs, k.c.vs[0].msrs_skipped, state_len);
	free(state);
	capture_fini(&k, n);
	return rc;
}

int vm_snapshot(const struct vm_snapshot_env *e, const char *dir, bool stop_after,
		struct vm_snapshot_result *res, struct errbuf *err)
{
	bool was_paused = vmctl_paused(e->ctl);
	uint64_t t0 = util_now_ns();
	int rc;

	memset(res, 0, sizeof(*res));
	if (!was_paused)
		vmctl_pause(e->ctl);
	if (vmctl_stopping(e->ctl))
		return errbuf_set(err, -ESHUTDOWN, "snapshot: the VM is stopping");
	rc = write_snapshot(e, dir, res, err);
	res->paused_ns = util_now_ns() - t0;
	if (!rc && stop_after) {
		vm_log("stopped after a snapshot to %s", dir);
		vmctl_request_stop(e->ctl, 0, "stopped after a snapshot to %s", dir);
	} else if (!was_paused)
		vmctl_resume(e->ctl); /* also after a failed snapshot: the VM carries on */
	return rc;
}

/* ---- restore ------------------------------------------------------------------------ */

static int restore_fail(const char *dir, struct errbuf *err, int rc, const char *msg)
{
	return errbuf_set(err, rc, "snapshot %s: %s", dir, msg);
}

/* The profiling configuration is the VM's: the snapshot's spec again, on this host's counters. */
static int restore_profile(const char *dir, const struct snap *s, struct vm_config *cfg, struct errbuf *err)
{
	struct errbuf e;

	if (!s->profile || !s->profile[0]) {
		if (cfg->profile_output || cfg->symbols)
			return restore_fail(dir, err, -EINVAL,
					    "--profile-output and --symbols need a snapshot of a profiled VM "
					    "(perfvisor run --profile)");
		return 0;
	}
	if (prof_spec_parse(s->profile, true, &cfg->prof, &e) || prof_spec_check_host(&cfg->prof, &e))
		return restore_fail(dir, err, -EINVAL, e.msg);
	if (!cfg->symbols && s->profile_symbols && s->profile_symbols[0])
		cfg->symbols = s->profile_symbols;
	return 0;
}

static int restore_machine(struct vm_restore *r, struct vm_config *cfg, struct errbuf *err);

int vm_restore_load(struct vm_restore *r, struct vm_config *cfg, struct errbuf *err)
{
	char path[4200];
	struct errbuf e;
	struct snap *s = calloc(1, sizeof(*s));
	struct stat st;
	size_t len;
	int rc, fd;

	r->dir = cfg->restore;
	r->memfd = -1;
	r->snap = s;
	if (!s)
		return errbuf_set(err, -ENOMEM, "out of memory");
	if (cfg->incoming_vm) {
		/* A migration: the state came over the stream, the memory is already in RAM. */
		r->blob = cfg->incoming_vm->state;
		len = cfg->incoming_vm->state_len;
		cfg->incoming_vm->state = NULL;
		rc = snap_parse(r->blob, len, vm_snap_schema(), s, &e);
		if (!rc && s->mem_size != cfg->incoming_vm->mem.size)
			rc = errbuf_set(&e, -EPROTO,
					"its state says %" PRIu64 " MiB of RAM, %" PRIu64 " came",
					s->mem_size >> 20, cfg->incoming_vm->mem.size >> 20);
		if (rc)
			return restore_fail(r->dir, err, rc, e.msg);
		return restore_machine(r, cfg, err);
	}
	if (stat(r->dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return restore_fail(r->dir, err, -ENOENT, "not a directory");
	snprintf(path, sizeof(path), "%s/%s", r->dir, SNAP_STATE_FILE);
	if (access(path, F_OK) < 0)
		return restore_fail(r->dir, err, -ENOENT,
				    "no " SNAP_STATE_FILE ": not a perfvisor snapshot directory");
	rc = snapio_read_file(path, SNAP_MAX_STATE_SIZE, &r->blob, &len, &e);
	if (!rc)
		rc = snap_parse(r->blob, len, vm_snap_schema(), s, &e);
	if (rc)
		return restore_fail(r->dir, err, rc, e.msg);
	snprintf(path, sizeof(path), "%s/%s", r->dir, SNAP_MEMORY_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return restore_fail(r->dir, err, -errno, "cannot open the memory file " SNAP_MEMORY_FILE);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != s->mem_size) {
		snprintf(e.msg, sizeof(e.msg), "the memory file is %lld bytes, the snapshot's RAM %" PRIu64,
			 (long long)st.st_size, s->mem_size);
		close(fd);
		return restore_fail(r->dir, err, -EINVAL, e.msg);
	}
	r->memfd = fd;
	return restore_machine(r, cfg, err);
}

/* The machine the snapshot describes, into cfg. */
static int restore_machine(struct vm_restore *r, struct vm_config *cfg, struct errbuf *err)
{
	const struct snap *s = r->snap;
	const struct pmu_caps *caps;

	cfg->nr_cpus = s->nr_vcpus;
	cfg->mem_size = s->mem_size;
	cfg->pmu = s->pmu;
	cfg->rng = snap_part_state(s, &virtio_rng_part, -1) != NULL; /* the machine had the device */
	/* Its disks, in their order: the restore opens the same images (a missing one: a clear error). */
	for (cfg->nr_disks = 0; cfg->nr_disks < VIRTIO_BLK_MAX_PARTS && cfg->nr_disks < VM_MAX_DISKS;
	     cfg->nr_disks++) {
		const struct virtio_blk_state *d = snap_part_state(s, &virtio_blk_parts[cfg->nr_disks], -1);

		if (!d)
			break;
		memcpy(cfg->disks[cfg->nr_disks].path, d->path, d->path_len);
		cfg->disks[cfg->nr_disks].path[d->path_len] = '\0';
		cfg->disks[cfg->nr_disks].readonly = d->readonly;
	}
	/* Its nets, on the taps of the same names (docs/snapshot.md). */
	cfg->nr_net = 0;
	for (unsigned i = 0; i < VIRTIO_NET_MAX; i++) {
		const struct virtio_net_state *ns = snap_part_state(s, &virtio_net_parts[i], -1);

		if (!ns)
			break;
		memcpy(cfg->net[i].tap, ns->ifname, ns->ifname_len);
		cfg->net[i].tap[ns->ifname_len] = '\0';
		memcpy(cfg->net[i].mac, ns->mac, 6);
		cfg->net[i].has_mac = true;
		/* mrg=on is not saved: a device whose driver took it offers it again. */
		cfg->net[i].mrg_rxbuf = ns->t.drv_features & VIRTIO_NET_F_MRG_RXBUF;
		/* Its interrupt coalescing, as it was (0 from a snapshot older than the setting). */
		cfg->net[i].rx_usecs = ns->rx_usecs;
		cfg->net[i].tx_usecs = ns->tx_usecs;
		cfg->nr_net++;
	}
	/* The same CPUID; and PMI_ACK, added since an older perfvisor took the snapshot, stays
	 * hidden from a guest whose PMU (the snapshot's /pmu features) did not have it. */
	caps = snap_part_state(s, &pmu_caps_part, -1);
	cfg->cpuid_hide =
		s->cpuid_hide | (caps && !(caps->features & PV_PMU_FEAT_ACK) ? CPUID_HIDE_PMU_ACK : 0);
	cfg->cpuid_add = s->cpuid_add;
	cfg->kernel = s->kernel;
	cfg->cmdline = s->cmdline;
	return restore_profile(r->dir, s, cfg, err);
}

int vm_restore_memory(struct vm_restore *r, const struct vm_config *cfg, struct gmem *mem, struct errbuf *err)
{
	const struct snap *s = r->snap;
	bool check = !cfg->restore_no_check, uring = false;
	uint64_t sum = 0;
	int rc;

	if (cfg->incoming_vm) {
		*mem = cfg->incoming_vm->mem; /* RAM the stream filled: the VM's now */
		cfg->incoming_vm->mem = (struct gmem){ .fd = -1, .src_fd = -1 };
		return 0;
	}
	if (!cfg->restore_read) {
		if (check && (rc = snapio_hash_file(r->memfd, s->mem_size, &sum)) < 0)
			return restore_fail(r->dir, err, rc, "cannot read the memory file");
		rc = gmem_init_private(mem, r->memfd, s->mem_size, err);
	} else {
		rc = gmem_init(mem, s->mem_size, err);
		if (!rc && (rc = snapio_memory(r->memfd, mem->hva, s->mem_size, false, r->memfd, false,
					       check ? &sum : NULL, &uring)) < 0)
			return restore_fail(r->dir, err, rc, "cannot read the memory file");
	}
	close(r->memfd);
	r->memfd = -1;
	if (rc)
		return rc;
	if (check && sum != s->mem_checksum)
		return restore_fail(r->dir, err, -EPROTO,
				    "the memory file is damaged (its checksum does not match)");
	if (cfg->verbose)
		vm_log("restore: guest memory %s%s", cfg->restore_read ? "read" : "mapped copy-on-write",
		       cfg->restore_read ? (uring ? " with io_uring" : " with pread") : "");
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

/*
 * A TSC written from outside within a second of what KVM expects (the
 * value last written, 0 at the vCPU's creation, plus the time since) is
 * taken as an attempt to line the vCPUs up, and KVM keeps its own value
 * instead (kvm_synchronize_tsc; Linux before 6.7, the test host's 6.1): a
 * snapshot taken in the guest's first second came back with its TSC
 * restarted, behind what the guest had read. The boot vCPU's TSC is first
 * written far off (2^50 cycles, days), so its saved value, a long way from
 * that, is taken as given; the others, within a second of it, are then
 * lined up with it, as on the source.
 */
#define TSC_FAR_OFF (1ULL << 50)

static int set_msrs(int fd, const struct snap_bytes b, bool deadline_only, bool boot_vcpu,
		    const char **failed, uint32_t *idx)
{
	const struct kvm_msr_entry *e = b.p;
	unsigned n = b.len / sizeof(*e), k = 0;
	struct kvm_msrs *m = calloc(1, sizeof(*m) + (n + 1) * sizeof(*e));
	int rc = 0;

	if (!m)
		return -ENOMEM;
	/* TSC first, TSC_DEADLINE only after the LAPIC (a second call), as KVM needs. */
	for (unsigned pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < n; i++) {
			bool first = e[i].index == MSR_IA32_TSC, dl = e[i].index == MSR_IA32_TSC_DEADLINE;

			if (!(deadline_only ? dl && pass == 0 : !dl && (pass == 0) == first))
				continue;
			if (first && boot_vcpu) {
				m->entries[k] = e[i];
				m->entries[k++].data = e[i].data + TSC_FAR_OFF;
			}
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
		rc = set_msrs(v->fd, sv->msrs, false, v->index == 0, &failed, &msr);
	SET_IOCTL(v->fd, KVM_SET_MP_STATE, &mp);
	SET_IOCTL(v->fd, KVM_SET_LAPIC, sv->lapic.p);
	if (!rc)
		rc = set_msrs(v->fd, sv->msrs, true, false, &failed, &msr);
	SET_IOCTL(v->fd, KVM_SET_VCPU_EVENTS, &events);
	SET_IOCTL(v->fd, KVM_SET_DEBUGREGS, sv->debugregs.p);
	free(xsave);
	if (rc && msr)
		return errbuf_set(err, rc, "restore: vCPU %u: KVM refused MSR 0x%x", v->index, msr);
	if (rc)
		return errbuf_set(err, rc, "restore: vCPU %u: %s: %s", v->index, failed, strerror(-rc));
	return 0;
}

int vm_restore_kvm(const struct vm_restore *r, const struct vm_snapshot_env *e, struct errbuf *err)
{
	const struct snap *s = r->snap;
	const struct snap_bytes *chips[3] = { &s->pic_master, &s->pic_slave, &s->ioapic };
	char why[128];
	int rc;

	for (unsigned i = 0; i < s->nr_vcpus; i++) {
		if (!cpuid_same(e->vcpus[i].cpuid, s->vcpu[i].cpuid, why, sizeof(why)))
			return errbuf_set(
				err, -EINVAL,
				"snapshot %s: vCPU %u: this host's CPUID is not the snapshot's (%s): "
				"restore on a host like the one it was taken on",
				r->dir, i, why);
		if (s->vcpu[i].xsave.len > kvmsys_xsave_size(e->vm_fd))
			return restore_fail(r->dir, err, -EINVAL,
					    "its XSAVE state is larger than this host's");
	}
	for (unsigned i = 0; i < s->nr_vcpus; i++) {
		rc = restore_vcpu(&e->vcpus[i], &s->vcpu[i], err);
		if (rc)
			return rc;
	}
	for (int i = 0; i < 3; i++) {
		struct kvm_irqchip chip = { .chip_id = (uint32_t)i };

		memcpy(&chip.chip, chips[i]->p, sizeof(chip.chip));
		if (ioctl(e->vm_fd, KVM_SET_IRQCHIP, &chip) < 0)
			return errbuf_set(err, -errno, "restore: KVM_SET_IRQCHIP %d: %s", i, strerror(errno));
	}
	if (ioctl(e->vm_fd, KVM_SET_PIT2, s->pit.p) < 0)
		return errbuf_set(err, -errno, "restore: KVM_SET_PIT2: %s", strerror(errno));
	return 0;
}

/* One part's state back, or the error with the snapshot named. */
static int load_part(const struct vm_restore *r, const struct vm_part *p, int vcpu, const void *st,
		     struct errbuf *err)
{
	struct errbuf e;
	int rc = vcpu < 0 ? p->ops->load(p->obj, st, &e) : p->ops->load_vcpu(p->obj, (unsigned)vcpu, st, &e);

	return rc ? restore_fail(r->dir, err, rc, e.msg) : 0;
}

int vm_restore_parts(const struct vm_restore *r, const struct vm_parts *parts, unsigned nr_vcpus,
		     struct errbuf *err)
{
	const struct snap *s = r->snap;
	int rc = 0;

	for (unsigned k = 0; k < parts->n && !rc; k++) {
		const struct vm_part *p = &parts->p[k];

		if (!p->ops->per_vcpu) {
			const void *st = snap_part_state(s, p->desc, -1);

			/* A part the snapshot lacks is one this machine does not have in it (the PMU off). */
			if (st)
				rc = load_part(r, p, -1, st, err);
			continue;
		}
		for (unsigned i = 0; i < nr_vcpus && !rc; i++) {
			const void *st = snap_part_state(s, p->desc, (int)i);

			if (st)
				rc = load_part(r, p, (int)i, st, err);
		}
	}
	return rc;
}

int vm_restore_clock(const struct vm_restore *r, int vm_fd, struct errbuf *err)
{
	struct kvm_clock_data clock = { .clock = r->snap->clock };

	if (ioctl(vm_fd, KVM_SET_CLOCK, &clock) < 0)
		return errbuf_set(err, -errno, "restore: KVM_SET_CLOCK: %s", strerror(errno));
	return 0;
}

void vm_restore_fini(struct vm_restore *r)
{
	if (r->memfd >= 0)
		close(r->memfd);
	r->memfd = -1;
	if (r->snap)
		snap_fini(r->snap);
	free(r->snap);
	free(r->blob);
	r->snap = NULL;
	r->blob = NULL;
}
