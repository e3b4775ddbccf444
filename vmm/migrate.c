// SPDX-License-Identifier: MIT
/*
 * Live migration, the source (migrate.h, docs/migration.md): HELLO and the
 * destination's answer, KVM's dirty log on, all of RAM while the guest
 * runs, rounds of the pages it wrote until the rest fits the downtime
 * budget, then the pause, the last pages, the state file, READY, GO and
 * RUNNING. Before GO every failure leaves the VM running here.
 */
#include "migrate.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "kvm.h"
#include "snapshot.h"
#include "vcpu.h"
#include "vm_virtio.h"
#include "vmm.h"

/* ---- the CPUID a guest sees, in HELLO (the PV PMU's leaves are the PMU part's to check) ---- */

static bool pmu_leaf(uint32_t fn)
{
	return fn >= PV_PMU_CPUID_SIGNATURE && fn <= PV_PMU_CPUID_MAX;
}

json_t *mig_cpuid_json(const struct kvm_cpuid2 *c)
{
	json_t *a = json_array();

	for (uint32_t i = 0; a && i < c->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (!pmu_leaf(e->function))
			json_array_append_new(a, json_pack("[I,I,I,I,I,I,I]", (json_int_t)e->function,
							   (json_int_t)e->index, (json_int_t)e->flags,
							   (json_int_t)e->eax, (json_int_t)e->ebx,
							   (json_int_t)e->ecx, (json_int_t)e->edx));
	}
	return a;
}

int mig_cpuid_check(const json_t *theirs, const struct kvm_cpuid2 *here, char *why, size_t len)
{
	size_t n = 0;

	if (!json_is_array(theirs)) {
		snprintf(why, len, "no CPUID table");
		return -EPROTO;
	}
	for (uint32_t i = 0; i < here->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &here->entries[i];
		json_int_t v[7];

		if (pmu_leaf(e->function))
			continue;
		if (json_unpack(json_array_get(theirs, n), "[IIIIIII]", &v[0], &v[1], &v[2], &v[3], &v[4],
				&v[5], &v[6]) < 0) {
			snprintf(why, len, "the guest has %zu CPUID entries, this host would give it more",
				 json_array_size(theirs));
			return -EOPNOTSUPP;
		}
		if (v[0] != e->function || v[1] != e->index || v[2] != e->flags || v[3] != e->eax ||
		    v[4] != e->ebx || v[5] != e->ecx || v[6] != e->edx) {
			snprintf(
				why, len,
				"CPUID leaf 0x%x.%u differs: the guest sees what this host's KVM would not offer",
				e->function, e->index);
			return -EOPNOTSUPP;
		}
		n++;
	}
	if (n != json_array_size(theirs)) {
		snprintf(why, len, "the guest has %zu CPUID entries, this host would give it %zu",
			 json_array_size(theirs), n);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* ---- the migration's memory ---------------------------------------------------------------- */

struct sender {
	const struct vm_snapshot_env *e;
	struct mig_conn *c;
	uint64_t npages;
	uint64_t *bitmap;    /* KVM's dirty log */
	uint64_t *vmm;	     /* the pages the devices reached meanwhile (vm_virtio_track) */
	bool released;	     /* the disks were handed over */
	uint8_t *buf;	     /* mig_send_memory's copy of a run */
	struct mig_round *r; /* the round's counts */
	struct errbuf *err;
};

/* Round 0: all RAM that holds data; later rounds: the pages in the bitmap. */
static int send_all(struct sender *s)
{
	return mig_send_memory(s->c, s->e->mem, NULL, s->buf, s->r, s->err);
}

static int send_dirty(struct sender *s)
{
	return mig_send_memory(s->c, s->e->mem, s->bitmap, s->buf, s->r, s->err);
}

static uint64_t count_dirty(const struct sender *s)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < (s->npages + 63) / 64; i++)
		n += (uint64_t)__builtin_popcountll(s->bitmap[i]);
	return n;
}

/* ---- the migration ------------------------------------------------------------------------ */

/* The disks, for the destination to find the same images before the pause. */
static json_t *disks_json(const struct vm_snapshot_env *e)
{
	struct vm_disk_info d[VM_MAX_DISKS];
	unsigned n = vm_virtio_disks_info(e->virtio, d, VM_MAX_DISKS);
	json_t *a = json_array();

	for (unsigned i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:b, s:I}", "path", d[i].path, "readonly",
						   d[i].readonly, "sectors", (json_int_t)d[i].sectors));
	return a;
}

static json_t *hello(const struct vm_snapshot_env *e)
{
	const struct vm_machine *m = &e->machine;
	json_t *h;

	h = json_pack("{s:i, s:s, s:i, s:I, s:b, s:I, s:I, s:s, s:s, s:s, s:o}", "protocol", MIG_PROTOCOL,
		      "writer", "perfvisor", "vcpus", (int)m->nr_vcpus, "memory", (json_int_t)e->mem->size,
		      "pmu", m->pmu, "cpuid_hide", (json_int_t)m->cpuid_hide, "cpuid_add",
		      (json_int_t)m->cpuid_add, "kernel", m->kernel ? m->kernel : "", "cmdline",
		      m->cmdline ? m->cmdline : "", "host", host_kind_name(m->host.kind), "cpuid",
		      mig_cpuid_json(e->vcpus[0].cpuid));
	if (h)
		json_object_set_new(h, "disks", disks_json(e));
	if (h) {
		const char *names[VIRTIO_NET_MAX];
		unsigned n = vm_virtio_taps(e->virtio, names, VIRTIO_NET_MAX);
		json_t *a = json_array();

		for (unsigned i = 0; a && i < n; i++)
			json_array_append_new(a, json_string(names[i]));
		json_object_set_new(h, "taps", a);
	}
	return h;
}

static void log_round(const struct vm_snapshot_env *e, unsigned i, const struct mig_round *r, bool final)
{
	if (e->verbose)
		vm_log("migration round %u%s: %" PRIu64 " pages, %" PRIu64 " zero, %" PRIu64
		       " KiB in %.1f ms; %" PRIu64 " pages dirtied meanwhile",
		       i, final ? " (paused)" : "", r->pages, r->zero_pages, r->bytes >> 10,
		       (double)r->ns / 1e6, r->dirty);
}

/* The rounds while the guest runs; returns 0 when what is left fits the budget (or stop_copy allows). */
static int precopy(struct sender *s, const struct mig_request *rq, struct mig_result *res)
{
	const struct vm_snapshot_env *e = s->e;
	uint64_t rate = 0, best = UINT64_MAX, stalled = 0; /* bytes per ms */
	int rc;

	for (unsigned i = 0;; i++) {
		struct mig_round *r = &res->round[i];
		uint64_t t0 = util_now_ns(), b0 = s->c->tx_bytes, left_ns;

		s->r = r;
		rc = i == 0 ? send_all(s) : send_dirty(s);
		if (rc)
			return rc;
		r->ns = util_now_ns() - t0;
		r->bytes = s->c->tx_bytes - b0;
		rc = kvmsys_get_dirty_log(e->vm_fd, s->bitmap, s->err);
		if (rc)
			return rc;
		r->dirty = count_dirty(s);
		res->nr_rounds = i + 1;
		log_round(e, i, r, false);
		if (r->bytes >= (1u << 20) && r->ns)
			rate = r->bytes * 1000000 / r->ns; /* a round big enough to measure */
		left_ns = rate ? r->dirty * MIG_PAGE * 1000000 / rate : r->dirty * 1000;
		if (left_ns <= rq->max_downtime_ns)
			return 0;
		/* Converging means the dirty set shrinks; five rounds without a new low: it will not. */
		if (r->dirty < best) {
			best = r->dirty;
			stalled = 0;
		} else {
			stalled++;
		}
		if (i + 1 == MIG_MAX_ROUNDS || stalled == 5 || util_now_ns() + left_ns > s->c->deadline_ns) {
			if (rq->stop_copy) {
				res->forced = true;
				vm_log("migration: the rounds do not converge (%" PRIu64
				       " pages dirtied in the last, about %.1f ms to send): pausing anyway "
				       "(--stop-copy)",
				       r->dirty, (double)left_ns / 1e6);
				return 0;
			}
			return errbuf_set(
				s->err, -ETIMEDOUT,
				"the migration does not converge: after %u rounds the guest still dirties %" PRIu64
				" pages a round, about %.1f ms to send paused, more than --max-downtime %.1f ms "
				"(--stop-copy pauses anyway)",
				i + 1, r->dirty, (double)left_ns / 1e6, (double)rq->max_downtime_ns / 1e6);
		}
	}
}

/* The guest paused: the last pages and the state. */
static int final_round(struct sender *s, struct mig_result *res)
{
	const struct vm_snapshot_env *e = s->e;
	struct mig_round *r = &res->round[res->nr_rounds];
	uint64_t t0 = util_now_ns(), b0 = s->c->tx_bytes;
	void *state = NULL;
	size_t len = 0;
	int rc;

	s->r = r;
	/* The pages the guest wrote in the last running round (the bitmap holds them), */
	rc = send_dirty(s);
	/* then the state: a vCPU saving its parts may still write guest memory (the PMU's page), */
	uint64_t t_state = util_now_ns();

	if (!rc)
		rc = vm_snapshot_state(e, &state, &len, s->err);
	t_state = util_now_ns() - t_state;
	if (!rc)
		rc = kvmsys_get_dirty_log(e->vm_fd, s->bitmap, s->err);
	/*
	 * then what was written since, and every page a device reached during the
	 * migration (its writes, an io_uring read's too, bypass KVM's log; the VM is
	 * paused and its disks drained, so the devices write no more).
	 */
	if (s->vmm) {
		vm_virtio_track(e->virtio, NULL);
		for (uint64_t w = 0; w < (s->npages + 63) / 64; w++)
			s->bitmap[w] |= __atomic_load_n(&s->vmm[w], __ATOMIC_RELAXED);
	}
	if (!rc)
		rc = send_dirty(s);
	/* The disks' images and the taps go to the destination: synced, unlocked, detached. */
	if (!rc) {
		rc = vm_virtio_devices_handover(e->virtio, true, s->err);
		s->released = true; /* also in part: taking back what is still held is a no-op */
	}
	if (!rc && len > SNAP_MAX_STATE_SIZE)
		rc = errbuf_set(s->err, -EFBIG, "the state is %zu bytes, more than a migration carries", len);
	if (!rc)
		rc = mig_send(s->c, MIG_STATE, state, (uint32_t)len, NULL, 0, s->err);
	free(state);
	r->ns = util_now_ns() - t0;
	r->bytes = s->c->tx_bytes - b0;
	res->state_bytes = len;
	res->nr_rounds++;
	log_round(e, res->nr_rounds - 1, r, true);
	if (e->verbose)
		vm_log("migration: the paused round saved the state in %.1f ms (%zu bytes)",
		       (double)t_state / 1e6, len);
	return rc;
}

int vm_migrate(const struct vm_snapshot_env *e, const struct mig_request *rq, struct mig_result *res,
	       struct errbuf *err)
{
	struct mig_addr addr;
	struct mig_conn c = { .fd = -1 };
	struct sender s = { .e = e, .c = &c, .err = err };
	bool was_paused = vmctl_paused(e->ctl), logging = false, paused = false;
	uint64_t t0 = util_now_ns(), tp = 0;
	struct errbuf ignore;
	int rc;

	memset(res, 0, sizeof(*res));
	res->mem_bytes = e->mem->size;
	if (was_paused)
		return errbuf_set(err, -EBUSY,
				  "the VM is paused: resume it first (a migration copies a running VM)");
	rc = mig_addr_parse(rq->to, &addr, err);
	if (rc)
		return rc;
	c.deadline_ns = t0 + rq->timeout_ms * 1000000ULL;
	s.npages = e->mem->size / MIG_PAGE;
	s.bitmap = calloc((s.npages + 63) / 64, 8);
	s.buf = malloc(MIG_MAX_RUN * MIG_PAGE);
	if (!s.bitmap || !s.buf) {
		rc = errbuf_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = mig_connect(&c, &addr, err);
	if (!rc)
		rc = mig_send_json(&c, MIG_HELLO, hello(e), err);
	if (!rc)
		rc = mig_recv_answer(&c, MIG_ACCEPT, NULL, err);
	if (rc)
		goto out;
	rc = kvmsys_dirty_log(e->vm_fd, e->mem, true, err);
	if (rc)
		goto out;
	logging = true;
	if (e->virtio) {
		s.vmm = calloc((s.npages + 63) / 64, 8);
		if (!s.vmm) {
			rc = errbuf_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		vm_virtio_track(e->virtio, s.vmm);
	}
	vm_log("migrating to %s: %" PRIu64 " MiB, %u vCPUs", addr.text, e->mem->size >> 20,
	       e->machine.nr_vcpus);
	/* The rounds while the guest runs keep to --max-bandwidth; the paused one goes at full speed. */
	mig_conn_limit(&c, rq->max_bandwidth);
	rc = precopy(&s, rq, res);
	mig_conn_limit(&c, 0);
	if (rc)
		goto out;
	vmctl_pause(e->ctl);
	paused = true;
	tp = util_now_ns();
	rc = final_round(&s, res);
	if (!rc)
		rc = mig_recv_answer(&c, MIG_READY, NULL, err);
	/*
	 * Once GO is sent whole, the guest is the destination's. A GO that could
	 * not be sent whole never reached it (a record is taken only complete):
	 * the guest did not run there, and this VM may resume.
	 */
	if (!rc && !(rc = mig_send(&c, MIG_GO, NULL, 0, NULL, 0, err)))
		res->committed = true;
	if (!rc)
		rc = mig_recv_answer(&c, MIG_RUNNING, NULL, err);
	res->downtime_ns = util_now_ns() - tp;
	if (!rc) {
		vm_log("migrated to %s: %u rounds, %.1f MiB sent, paused %.1f ms", addr.text, res->nr_rounds,
		       (double)c.tx_bytes / 1048576.0, (double)res->downtime_ns / 1e6);
		vmctl_request_stop(e->ctl, 0, "migrated to %s", addr.text);
	}
out:
	res->total_ns = util_now_ns() - t0;
	res->bytes = c.tx_bytes;
	if (rc && c.fd >= 0 && !res->committed)
		mig_send_json(&c, MIG_ABORT, json_pack("{s:s}", "error", err->msg), &ignore);
	mig_close(&c);
	if (s.vmm)
		vm_virtio_track(e->virtio, NULL);
	if (logging)
		kvmsys_dirty_log(e->vm_fd, e->mem, false, &ignore);
	/* Not GO: the disks and taps are this VM's again (a destination that took one has exited or will). */
	if (rc && !res->committed && s.released && vm_virtio_devices_handover(e->virtio, false, &ignore))
		vm_log("migration to %s: %s; the VM runs on without it", rq->to, ignore.msg);
	if (rc && res->committed) {
		vm_log("migration to %s: %s; GO was sent, so the guest may run there: this VM stays paused "
		       "(resume it only if the destination never ran it)",
		       addr.text, err->msg);
		errbuf_append(err, "; GO was sent, so this VM stays paused (docs/migration.md)");
	} else if (rc) {
		if (paused)
			vmctl_resume(e->ctl);
		vm_log("migration to %s failed: %s; the VM runs on here", rq->to, err->msg);
		errbuf_append(err, "; the VM runs on here");
	}
	free(s.bitmap);
	free(s.vmm);
	free(s.buf);
	return rc;
}
