// SPDX-License-Identifier: MIT
/*
 * The snapshot state file's writer (docs/snapshot.md): snap_build() turns
 * a struct snap into a flattened device tree with libfdt, each part's node
 * from its own table of fields, and the checksum. Pure: no KVM, no files.
 */
#include "snapfile/snapfile_internal.h"

#include <errno.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing -------------------------------------------------------------------- */

/* A sequential-write FDT whose calls do nothing after the first error. */
struct fdtw {
	void *buf;
	int err;
};

static void w_begin(struct fdtw *w, const char *name)
{
	if (!w->err)
		w->err = fdt_begin_node(w->buf, name);
}

static void w_end(struct fdtw *w)
{
	if (!w->err)
		w->err = fdt_end_node(w->buf);
}

static void w_bytes(struct fdtw *w, const char *name, const void *p, uint32_t len)
{
	if (!w->err)
		w->err = fdt_property(w->buf, name, p, (int)len);
}

static void w_blob(struct fdtw *w, const char *name, struct snap_bytes b)
{
	w_bytes(w, name, b.p, b.len);
}

static void w_u32(struct fdtw *w, const char *name, uint32_t v)
{
	if (!w->err)
		w->err = fdt_property_u32(w->buf, name, v);
}

static void w_u64(struct fdtw *w, const char *name, uint64_t v)
{
	if (!w->err)
		w->err = fdt_property_u64(w->buf, name, v);
}

static void w_str(struct fdtw *w, const char *name, const char *v)
{
	if (!w->err)
		w->err = fdt_property_string(w->buf, name, v ? v : "");
}

/* An array of u64 cells (big-endian, as FDT integers are). */
static void w_u64s(struct fdtw *w, const char *name, const uint64_t *v, unsigned n)
{
	fdt64_t cells[64];

	for (unsigned i = 0; i < n && i < 64; i++)
		cells[i] = cpu_to_fdt64(v[i]);
	w_bytes(w, name, cells, n * 8);
}

/* The bytes a field takes in its part's state. */
static size_t field_size(const struct snap_field *f)
{
	switch (f->type) {
	case SNAP_F_U8:
		return 1;
	case SNAP_F_U16:
		return 2;
	case SNAP_F_U32:
		return 4;
	case SNAP_F_BOOL:
		return sizeof(bool);
	case SNAP_F_U64:
		return 8;
	case SNAP_F_U64S:
		return f->count * sizeof(uint64_t);
	default:
		return 0;
	}
}

/* One field of a part, from its state. */
static void w_field(struct fdtw *w, const struct snap_field *f, const void *state)
{
	const uint8_t *at = (const uint8_t *)state + f->off;
	uint64_t u64s[64];
	uint16_t u16;
	bool b;

	if (f->optional) {
		/* Written only when not 0 (absent reads as 0): a state an older perfvisor could have
		 * made writes back as it wrote it. */
		size_t n = field_size(f), k = 0;

		while (k < n && !at[k])
			k++;
		if (n && k == n)
			return;
	}
	switch (f->type) {
	case SNAP_F_U8:
		w_u32(w, f->name, *at);
		break;
	case SNAP_F_U16:
		memcpy(&u16, at, sizeof(u16));
		w_u32(w, f->name, u16);
		break;
	case SNAP_F_U32:
		w_u32(w, f->name, *(const uint32_t *)(const void *)at);
		break;
	case SNAP_F_BOOL:
		memcpy(&b, at, sizeof(b));
		w_u32(w, f->name, b);
		break;
	case SNAP_F_U64:
		w_u64(w, f->name, *(const uint64_t *)(const void *)at);
		break;
	case SNAP_F_U64S:
		memcpy(u64s, at, (f->count < 64 ? f->count : 64) * sizeof(uint64_t));
		w_u64s(w, f->name, u64s, f->count);
		break;
	case SNAP_F_BYTES:
		memcpy(&u16, (const uint8_t *)state + f->len_off, sizeof(u16));
		w_bytes(w, f->name, at, u16 < f->count ? u16 : f->count);
		break;
	case SNAP_F_NAMED: {
		const struct snap_stats *st = (const void *)at;

		for (unsigned i = 0; i < st->n; i++)
			w_u64(w, st->s[i].name, st->s[i].value);
		break;
	}
	default:
		if (!w->err)
			w->err = -FDT_ERR_BADVALUE;
	}
}

/* A part's node, if it has a state. */
static void w_part(struct fdtw *w, const struct snap_part *p, const void *state)
{
	if (!state)
		return;
	w_begin(w, p->name);
	for (unsigned i = 0; i < p->nr_fields; i++)
		w_field(w, &p->fields[i], state);
	w_end(w);
}

static void w_vcpu(struct fdtw *w, const struct snap *s, unsigned i)
{
	const struct snap_vcpu *v = &s->vcpu[i];
	char name[16];

	snprintf(name, sizeof(name), "vcpu@%u", i);
	w_begin(w, name);
	w_u32(w, "index", i);
	w_blob(w, "regs", v->regs);
	w_blob(w, "sregs", v->sregs);
	w_blob(w, "xsave", v->xsave);
	w_blob(w, "xcrs", v->xcrs);
	w_blob(w, "debugregs", v->debugregs);
	w_blob(w, "lapic", v->lapic);
	w_blob(w, "events", v->events);
	w_blob(w, "msrs", v->msrs);
	w_blob(w, "cpuid", v->cpuid);
	w_u32(w, "mp-state", v->mp_state);
	for (unsigned k = 0; k < s->schema->nr_vcpu; k++)
		w_part(w, s->schema->vcpu[k], v->part[k]);
	w_end(w);
}

static void w_tree(struct fdtw *w, const struct snap *s)
{
	const struct snap_schema *sc = s->schema;

	if (!w->err)
		w->err = fdt_finish_reservemap(w->buf);
	w_begin(w, "");
	w_str(w, "compatible", SNAP_COMPATIBLE);
	w_u32(w, "format", SNAP_FORMAT);
	w_u64(w, "checksum", 0); /* filled in once the blob is complete */
	w_str(w, "writer", s->writer);
	w_u64(w, "created-ns", s->created_ns);

	w_begin(w, "machine");
	w_u32(w, "vcpus", s->nr_vcpus);
	w_u64(w, "memory-size", s->mem_size);
	w_u32(w, "pmu", s->pmu);
	w_u32(w, "cpuid-hide", s->cpuid_hide);
	/* Only when there is one: 0 and absent mean the same, and an older state file writes back as it was. */
	if (s->cpuid_add)
		w_u32(w, "cpuid-add", s->cpuid_add);
	w_u32(w, "host-kind", s->host_kind);
	w_u64(w, "host-flags", s->host_flags);
	w_u32(w, "tsc-khz", s->tsc_khz);
	w_str(w, "kernel", s->kernel);
	w_str(w, "cmdline", s->cmdline);
	w_str(w, "profile", s->profile ? s->profile : "");
	w_str(w, "profile-symbols", s->profile_symbols ? s->profile_symbols : "");
	w_end(w);

	w_begin(w, "memory");
	w_str(w, "file", SNAP_MEMORY_FILE);
	w_u64(w, "size", s->mem_size);
	w_u64(w, "checksum", s->mem_checksum);
	w_end(w);

	w_begin(w, "vm");
	w_u64(w, "clock", s->clock);
	w_u32(w, "clock-flags", s->clock_flags);
	w_blob(w, "pit", s->pit);
	w_blob(w, "pic-master", s->pic_master);
	w_blob(w, "pic-slave", s->pic_slave);
	w_blob(w, "ioapic", s->ioapic);
	w_end(w);

	w_begin(w, "devices");
	for (unsigned k = 0; k < sc->nr_devices; k++)
		w_part(w, sc->devices[k], s->dev[k]);
	w_end(w);
	for (unsigned k = 0; k < sc->nr_vm; k++)
		w_part(w, sc->vm[k], s->vm[k]);
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		w_vcpu(w, s, i);
	w_end(w);
	if (!w->err)
		w->err = fdt_finish(w->buf);
}

/* Must the file have this part? Not an optional one; the PMU's only with the PV PMU. */
static bool needed(const struct snap *s, const struct snap_part *p)
{
	return !(p->flags & SNAP_PART_OPTIONAL) && (!(p->flags & SNAP_PART_PMU) || s->pmu);
}

int snap_build(const struct snap *s, void **blob, size_t *len, struct errbuf *err)
{
	size_t size = 64 << 10;

	*blob = NULL;
	if (s->nr_vcpus == 0 || s->nr_vcpus > PV_MAX_CPUS)
		return errbuf_set(err, -EINVAL, "snapshot: %u vCPUs", s->nr_vcpus);
	if (!s->schema || s->schema->nr_devices > SNAP_MAX_PARTS || s->schema->nr_vm > SNAP_MAX_PARTS ||
	    s->schema->nr_vcpu > SNAP_MAX_VCPU_PARTS)
		return errbuf_set(err, -EINVAL, "snapshot: no schema, or one with too many parts");
	for (unsigned k = 0; k < s->schema->nr_devices; k++)
		if (!s->dev[k] && needed(s, s->schema->devices[k]))
			return errbuf_set(err, -EINVAL, "snapshot: no state for devices/%s",
					  s->schema->devices[k]->name);
	for (unsigned k = 0; k < s->schema->nr_vm; k++)
		if (!s->vm[k] && needed(s, s->schema->vm[k]))
			return errbuf_set(err, -EINVAL, "snapshot: no state for %s", s->schema->vm[k]->name);
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		for (unsigned k = 0; k < s->schema->nr_vcpu; k++)
			if (!s->vcpu[i].part[k] && needed(s, s->schema->vcpu[k]))
				return errbuf_set(err, -EINVAL, "snapshot: no state for vcpu@%u/%s", i,
						  s->schema->vcpu[k]->name);
	for (;;) {
		struct fdtw w = { .buf = malloc(size) };
		uint64_t sum;

		if (!w.buf)
			return errbuf_set(err, -ENOMEM, "snapshot: out of memory");
		w.err = fdt_create(w.buf, (int)size);
		w_tree(&w, s);
		if (w.err == -FDT_ERR_NOSPACE && size < SNAP_MAX_STATE_SIZE) {
			free(w.buf);
			size *= 2;
			continue;
		}
		if (!w.err)
			w.err = snap_blob_checksum(w.buf, &sum);
		if (!w.err)
			w.err = fdt_setprop_inplace_u64(w.buf, 0, "checksum", sum);
		if (w.err) {
			free(w.buf);
			return errbuf_set(err, -EIO, "snapshot: cannot build the state file: %s",
					  fdt_strerror(w.err));
		}
		*blob = w.buf;
		*len = fdt_totalsize(w.buf);
		return 0;
	}
}
