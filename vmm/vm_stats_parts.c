// SPDX-License-Identifier: MIT
/*
 * The statistics' parts of a snapshot (docs/snapshot.md): the cumulative
 * and peak fields of the VM record and of each vCPU's, by name; back in a
 * restored VM, where KVM's mirrored stats and the thread's CPU time
 * continue from the saved values as bases.
 */
#include "vm_stats_internal.h"

#include <string.h>

/* The cumulative and peak fields of one record, by name. */
static void save_record(struct vm_stats *s, enum pv_stats_record rec, unsigned idx, struct snap_stats *out)
{
	out->n = 0;
	for (unsigned i = 0; i < sb_nr_fields(s->region) && out->n < SNAP_MAX_STATS; i++) {
		struct sb_field f;
		const struct pv_stats_desc *d = sb_field_at(s->region, i, &f);

		if (d->record != rec || d->kind == PV_STATS_INSTANT)
			continue;
		out->s[out->n++] = (struct snap_stat){ d->name, sb_get(s->region, idx, f) };
	}
}

/* Is f one of the kvm.* mirrors? Its index in s->kvm, or -1. */
static int kvm_mirror(const struct vm_stats *s, struct sb_field f)
{
	for (unsigned k = 0; k < s->kvm.nr; k++)
		if (s->kvm.field[k].offset == f.offset && s->kvm.field[k].record == f.record)
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
static void load_record(struct vm_stats *s, enum pv_stats_record rec, unsigned idx,
			const struct snap_stats *st)
{
	struct sb_entry e = rec == PV_STATS_RECORD_VM ? stats_vm_entry(s->region) : s->v[idx].e;

	sb_begin(e);
	for (unsigned j = 0; j < st->n; j++) {
		for (unsigned i = 0; i < sb_nr_fields(s->region); i++) {
			struct sb_field f;
			const struct pv_stats_desc *d = sb_field_at(s->region, i, &f);
			int k = rec == PV_STATS_RECORD_VCPU ? kvm_mirror(s, f) : -1;

			if (d->record != rec || strcmp(d->name, st->s[j].name))
				continue;
			if (d->kind == PV_STATS_INSTANT || (k >= 0 && d->kind != PV_STATS_CUMULATIVE))
				break;
			if (k >= 0)
				s->v[idx].kvm_base[k] = st->s[j].value;
			if (rec == PV_STATS_RECORD_VCPU && f.offset == s->sf.cpu_ns.offset)
				s->v[idx].cpu_ns_base = st->s[j].value;
			sb_set(e, f, st->s[j].value);
			break;
		}
	}
	sb_end(e);
}

static void save_vm(void *obj, void *state)
{
	save_record(obj, PV_STATS_RECORD_VM, 0, state);
}

static int load_vm(void *obj, const void *state, struct errbuf *err)
{
	(void)err;
	load_record(obj, PV_STATS_RECORD_VM, 0, state);
	return 0;
}

/* On vCPU i's thread: the kvm.* mirror as of now, not of the last refresh, then the record. */
static void save_vcpu(void *obj, unsigned i, void *state)
{
	vm_stats_kvm_refresh(obj, i, util_now_ns(), true);
	save_record(obj, PV_STATS_RECORD_VCPU, i, state);
}

static int load_vcpu(void *obj, unsigned i, const void *state, struct errbuf *err)
{
	(void)err;
	load_record(obj, PV_STATS_RECORD_VCPU, i, state);
	return 0;
}

static const struct vm_part_ops vm_ops = { .save = save_vm, .load = load_vm };
static const struct vm_part_ops vcpu_ops = { .per_vcpu = true,
					     .save_vcpu = save_vcpu,
					     .load_vcpu = load_vcpu };

int vm_stats_add_parts(struct vm_stats *s, struct vm_parts *l, struct errbuf *err)
{
	return vm_parts_add(l, &snap_stats_part, &vm_ops, s, err)
		       ?: vm_parts_add(l, &snap_stats_part, &vcpu_ops, s, err);
}
