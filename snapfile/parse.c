// SPDX-License-Identifier: MIT
/*
 * The snapshot state file's parser (docs/snapshot.md): snap_parse() checks
 * a whole blob (structure, checksum, version, every node and property,
 * sizes, counts, ranges, each part's own check) before anything uses it.
 * Pure: no KVM, no files; fuzzed (fuzz/snapshot.c).
 */
#include "snapfile/snapfile_internal.h"

#include <errno.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/machine.h"
#include "perfvisor/stats_abi.h"

/* ---- reading ---------------------------------------------------------------------- */

/* The parse context: the blob, the node being read, and the first error. */
struct fdtr {
	const void *blob;
	struct errbuf *err;
	int rc;
	char where[48]; /* the node, for messages */
};

static int r_fail(struct fdtr *r, const char *prop, const char *what)
{
	if (!r->rc)
		r->rc = errbuf_set(r->err, -EINVAL, "snapshot state file: %s%s%s: %s", r->where,
				   prop ? "/" : "", prop ? prop : "", what);
	return r->rc;
}

static int r_node(struct fdtr *r, int parent, const char *name)
{
	int node;

	if (r->rc)
		return -1;
	node = fdt_subnode_offset(r->blob, parent, name);
	if (node < 0) {
		if (fdt_get_path(r->blob, parent, r->where, sizeof(r->where)) == 0)
			snprintf(r->where + strlen(r->where), sizeof(r->where) - strlen(r->where), "%s%s",
				 parent ? "/" : "", name);
		r_fail(r, NULL, "node missing");
		return -1;
	}
	if (fdt_get_path(r->blob, node, r->where, sizeof(r->where)))
		snprintf(r->where, sizeof(r->where), "%s", name);
	return node;
}

static const void *r_prop(struct fdtr *r, int node, const char *name, int *len)
{
	const void *p;

	if (r->rc)
		return NULL;
	p = fdt_getprop(r->blob, node, name, len);
	if (!p)
		r_fail(r, name, "property missing");
	return p;
}

static uint32_t r_u32(struct fdtr *r, int node, const char *name, uint32_t max)
{
	int len;
	const fdt32_t *p = r_prop(r, node, name, &len);
	uint32_t v;

	if (!p)
		return 0;
	if (len != 4) {
		r_fail(r, name, "not a 32-bit value");
		return 0;
	}
	v = fdt32_to_cpu(*p);
	if (v > max) {
		r_fail(r, name, "value out of range");
		return 0;
	}
	return v;
}

/* A property added within format 1: `def` when an older writer left it out. */
static uint32_t r_u32_opt(struct fdtr *r, int node, const char *name, uint32_t max, uint32_t def)
{
	if (r->rc || !fdt_getprop(r->blob, node, name, NULL))
		return def;
	return r_u32(r, node, name, max);
}

static uint64_t r_u64(struct fdtr *r, int node, const char *name)
{
	int len;
	const void *p = r_prop(r, node, name, &len);
	fdt64_t v;

	if (!p)
		return 0;
	if (len != 8) {
		r_fail(r, name, "not a 64-bit value");
		return 0;
	}
	memcpy(&v, p, 8);
	return fdt64_to_cpu(v);
}

static void r_u64s(struct fdtr *r, int node, const char *name, uint64_t *out, unsigned n)
{
	int len;
	const uint8_t *p = r_prop(r, node, name, &len);

	if (!p)
		return;
	if (len != (int)(n * 8)) {
		r_fail(r, name, "wrong number of 64-bit values");
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		fdt64_t v;

		memcpy(&v, p + 8 * i, 8);
		out[i] = fdt64_to_cpu(v);
	}
}

static const char *r_str(struct fdtr *r, int node, const char *name)
{
	int len;
	const char *p = r_prop(r, node, name, &len);

	if (!p)
		return NULL;
	if (len < 1 || len > (int)SNAP_MAX_STRING || p[len - 1] != '\0' || strlen(p) != (size_t)len - 1) {
		r_fail(r, name, "not a string");
		return NULL;
	}
	return p;
}

/* A string added within format 1: "" when an older writer left it out. */
static const char *r_str_opt(struct fdtr *r, int node, const char *name)
{
	if (r->rc || !fdt_getprop(r->blob, node, name, NULL))
		return "";
	return r_str(r, node, name);
}

/* A byte array of exactly `size` bytes, or of min..max bytes in steps of `unit` when size is 0. */
static struct snap_bytes r_bytes(struct fdtr *r, int node, const char *name, uint32_t size, uint32_t min,
				 uint32_t max, uint32_t unit)
{
	struct snap_bytes b = { NULL, 0 };
	int len;
	const void *p = r_prop(r, node, name, &len);

	if (!p)
		return b;
	if (size ? (uint32_t)len != size : ((uint32_t)len < min || (uint32_t)len > max || len % unit)) {
		r_fail(r, name, "wrong size");
		return b;
	}
	b.p = p;
	b.len = (uint32_t)len;
	return b;
}

static bool stat_name_ok(const char *n, int len)
{
	if (len < 1 || len >= (int)PV_STATS_NAME_MAX)
		return false;
	for (int i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_' ||
		      n[i] == '.'))
			return false;
	return true;
}

/* Every property of a node: a statistics field name and a u64. */
static void r_named(struct fdtr *r, int node, struct snap_stats *st)
{
	int prop;

	st->n = 0;
	fdt_for_each_property_offset(prop, r->blob, node)
	{
		const char *name;
		int len;
		const void *p = fdt_getprop_by_offset(r->blob, prop, &name, &len);
		fdt64_t v;

		if (!p || !name || !stat_name_ok(name, (int)strlen(name))) {
			r_fail(r, name, "not a statistics field name");
			return;
		}
		if (len != 8) {
			r_fail(r, name, "not a 64-bit value");
			return;
		}
		if (st->n == SNAP_MAX_STATS) {
			r_fail(r, NULL, "too many statistics fields");
			return;
		}
		memcpy(&v, p, 8);
		st->s[st->n++] = (struct snap_stat){ name, fdt64_to_cpu(v) };
	}
}

/* The largest value an integer field of this width may hold, and what the part allows. */
static uint32_t r_max(const struct snap_field *f, uint32_t width_max)
{
	return f->max < width_max ? (uint32_t)f->max : width_max;
}

/* One field of a part into its state. */
static void r_field(struct fdtr *r, int node, const struct snap_field *f, void *state)
{
	uint8_t *at = (uint8_t *)state + f->off;
	struct snap_bytes b;
	uint64_t u64;
	uint32_t u32;
	uint16_t u16;
	bool bo;

	if (f->optional && !fdt_getprop(r->blob, node, f->name, NULL))
		return; /* the state starts zeroed */
	switch (f->type) {
	case SNAP_F_U8:
		*at = (uint8_t)r_u32(r, node, f->name, r_max(f, 0xff));
		break;
	case SNAP_F_U16:
		u16 = (uint16_t)r_u32(r, node, f->name, r_max(f, 0xffff));
		memcpy(at, &u16, sizeof(u16));
		break;
	case SNAP_F_U32:
		u32 = r_u32(r, node, f->name, r_max(f, UINT32_MAX));
		memcpy(at, &u32, sizeof(u32));
		break;
	case SNAP_F_BOOL:
		bo = r_u32(r, node, f->name, 1) != 0;
		memcpy(at, &bo, sizeof(bo));
		break;
	case SNAP_F_U64:
		u64 = r_u64(r, node, f->name);
		memcpy(at, &u64, sizeof(u64));
		break;
	case SNAP_F_U64S: {
		uint64_t v[64] = { 0 };

		r_u64s(r, node, f->name, v, f->count < 64 ? f->count : 64);
		memcpy(at, v, (f->count < 64 ? f->count : 64) * sizeof(uint64_t));
		break;
	}
	case SNAP_F_BYTES:
		b = r_bytes(r, node, f->name, 0, 0, f->count, 1);
		u16 = (uint16_t)b.len;
		memcpy((uint8_t *)state + f->len_off, &u16, sizeof(u16));
		if (b.len)
			memcpy(at, b.p, b.len);
		break;
	case SNAP_F_NAMED:
		r_named(r, node, (struct snap_stats *)(void *)at);
		break;
	default:
		r_fail(r, f->name, "a field this perfvisor cannot read");
	}
}

/*
 * A part's node under parent into a new state (*out), fields and then the
 * part's own check. An optional part that is absent, and a PMU part of a
 * machine without the PV PMU, get none (*out NULL).
 */
static void r_part(struct fdtr *r, struct snap *s, int parent, const struct snap_part *p, void **out)
{
	const char *why, *prop = NULL;
	int node;

	*out = NULL;
	if (r->rc || ((p->flags & SNAP_PART_PMU) && !s->pmu))
		return;
	if (p->flags & SNAP_PART_OPTIONAL)
		node = fdt_subnode_offset(r->blob, parent, p->name);
	else
		node = r_node(r, parent, p->name);
	if (node < 0)
		return; /* missing (r_node said so), or an older writer's file without an optional part */
	*out = calloc(1, p->size ? p->size : 1);
	if (!*out) {
		r->rc = errbuf_set(r->err, -ENOMEM, "snapshot: out of memory");
		return;
	}
	if (fdt_get_path(r->blob, node, r->where, sizeof(r->where)))
		snprintf(r->where, sizeof(r->where), "%s", p->name);
	for (unsigned i = 0; i < p->nr_fields && !r->rc; i++)
		r_field(r, node, &p->fields[i], *out);
	if (!r->rc && p->check && (why = p->check(s, *out, &prop)))
		r_fail(r, prop, why);
}

static void r_vcpu(struct fdtr *r, struct snap *s, unsigned i)
{
	struct snap_vcpu *v = &s->vcpu[i];
	char name[16];
	int node;

	snprintf(name, sizeof(name), "vcpu@%u", i);
	node = r_node(r, 0, name);
	if (node < 0)
		return;
	if (r_u32(r, node, "index", PV_MAX_CPUS) != i && !r->rc)
		r_fail(r, "index", "does not match the node name");
	v->regs = r_bytes(r, node, "regs", sizeof(struct kvm_regs), 0, 0, 1);
	v->sregs = r_bytes(r, node, "sregs", sizeof(struct kvm_sregs), 0, 0, 1);
	v->xsave = r_bytes(r, node, "xsave", 0, sizeof(struct kvm_xsave), SNAP_MAX_XSAVE, 64);
	v->xcrs = r_bytes(r, node, "xcrs", sizeof(struct kvm_xcrs), 0, 0, 1);
	v->debugregs = r_bytes(r, node, "debugregs", sizeof(struct kvm_debugregs), 0, 0, 1);
	v->lapic = r_bytes(r, node, "lapic", sizeof(struct kvm_lapic_state), 0, 0, 1);
	v->events = r_bytes(r, node, "events", sizeof(struct kvm_vcpu_events), 0, 0, 1);
	v->msrs = r_bytes(r, node, "msrs", 0, 0, SNAP_MAX_MSRS * KVM_MSR_ENTRY_SIZE, KVM_MSR_ENTRY_SIZE);
	v->cpuid = r_bytes(r, node, "cpuid", 0, sizeof(struct kvm_cpuid_entry2),
			   SNAP_MAX_CPUID * sizeof(struct kvm_cpuid_entry2), sizeof(struct kvm_cpuid_entry2));
	v->mp_state = r_u32(r, node, "mp-state", KVM_MP_STATE_AP_RESET_HOLD);
	for (unsigned k = 0; k < s->schema->nr_vcpu; k++)
		r_part(r, s, node, s->schema->vcpu[k], &v->part[k]);
}

static void r_parts(struct fdtr *r, struct snap *s)
{
	const struct snap_schema *sc = s->schema;
	int devs = r_node(r, 0, "devices");

	for (unsigned k = 0; k < sc->nr_devices && devs >= 0; k++)
		r_part(r, s, devs, sc->devices[k], &s->dev[k]);
	for (unsigned k = 0; k < sc->nr_vm; k++)
		r_part(r, s, 0, sc->vm[k], &s->vm[k]);
}

static void r_machine(struct fdtr *r, struct snap *s)
{
	int node = r_node(r, 0, "machine");
	struct errbuf sizeerr;

	if (node < 0)
		return;
	s->nr_vcpus = r_u32(r, node, "vcpus", PV_MAX_CPUS);
	if (!r->rc && s->nr_vcpus == 0)
		r_fail(r, "vcpus", "zero vCPUs");
	s->mem_size = r_u64(r, node, "memory-size");
	if (!r->rc && gmem_check_size(s->mem_size, &sizeerr))
		r_fail(r, "memory-size", sizeerr.msg);
	s->pmu = r_u32(r, node, "pmu", 1);
	s->cpuid_hide = r_u32_opt(
		r, node, "cpuid-hide",
		CPUID_HIDE_XSAVE | CPUID_HIDE_CX16 | CPUID_HIDE_TSC_DEADLINE | CPUID_HIDE_PMU_ACK, 0);
	s->cpuid_add = r_u32_opt(r, node, "cpuid-add", CPUID_ADD_TSC_DEADLINE, 0);
	s->host_kind = r_u32(r, node, "host-kind", ~0u);
	s->host_flags = r_u64(r, node, "host-flags");
	s->tsc_khz = r_u32(r, node, "tsc-khz", ~0u);
	s->kernel = r_str(r, node, "kernel");
	s->cmdline = r_str(r, node, "cmdline");
	s->profile = r_str_opt(r, node, "profile");
	s->profile_symbols = r_str_opt(r, node, "profile-symbols");
}

/* Exactly nr_vcpus "vcpu@N" nodes: a file with more is not this machine's. */
static void r_count_vcpus(struct fdtr *r, const struct snap *s)
{
	unsigned n = 0;
	int node;

	if (r->rc)
		return;
	fdt_for_each_subnode(node, r->blob, 0)
	{
		const char *name = fdt_get_name(r->blob, node, NULL);

		n += name && !strncmp(name, "vcpu@", 5);
	}
	snprintf(r->where, sizeof(r->where), "/");
	if (n != s->nr_vcpus)
		r_fail(r, NULL, "the number of vcpu@ nodes differs from machine/vcpus");
}

static int check_checksum(const void *blob, size_t len, struct errbuf *err)
{
	void *copy = malloc(len);
	uint64_t want, got = 0;
	int len0, rc;
	const void *p = fdt_getprop(blob, 0, "checksum", &len0);

	if (!copy)
		return errbuf_set(err, -ENOMEM, "snapshot: out of memory");
	if (!p || len0 != 8) {
		free(copy);
		return errbuf_set(err, -EINVAL, "snapshot state file: no checksum property at the root");
	}
	memcpy(&want, p, 8);
	want = fdt64_to_cpu(want);
	memcpy(copy, blob, len);
	rc = snap_blob_checksum(copy, &got);
	free(copy);
	if (rc)
		return errbuf_set(err, -EINVAL, "snapshot state file: %s", fdt_strerror(rc));
	if (got != want)
		return errbuf_set(
			err, -EPROTO,
			"snapshot state file: checksum mismatch (the file is damaged): stored %016llx, "
			"computed %016llx",
			(unsigned long long)want, (unsigned long long)got);
	return 0;
}

int snap_parse(const void *blob, size_t len, const struct snap_schema *schema, struct snap *s,
	       struct errbuf *err)
{
	struct fdtr r = { .blob = blob, .err = err, .where = "/" };
	const char *compat;
	int rc, node;

	memset(s, 0, sizeof(*s));
	s->schema = schema;
	s->owns_parts = true;
	if (schema->nr_devices > SNAP_MAX_PARTS || schema->nr_vm > SNAP_MAX_PARTS ||
	    schema->nr_vcpu > SNAP_MAX_VCPU_PARTS)
		return errbuf_set(err, -EINVAL, "snapshot: a schema with too many parts");
	if (len < sizeof(struct fdt_header) || fdt_magic(blob) != FDT_MAGIC)
		return errbuf_set(err, -EINVAL, "snapshot state file: not a flattened device tree");
	if (len > SNAP_MAX_STATE_SIZE || fdt_totalsize(blob) != len)
		return errbuf_set(
			err, -EINVAL,
			"snapshot state file: %zu bytes, but its header says %u (truncated or padded)", len,
			fdt_totalsize(blob));
	/*
	 * Versions before 16 (names as full paths, no size fields) crash
	 * Debian's libfdt 1.6.1 in fdt_check_full (found by fuzz/snapshot.c);
	 * perfvisor writes 17.
	 */
	if (fdt_version(blob) < 16)
		return errbuf_set(
			err, -EINVAL,
			"snapshot state file: device tree version %u (perfvisor writes 17, reads 16 and later)",
			fdt_version(blob));
	rc = fdt_check_full(blob, len);
	if (rc)
		return errbuf_set(err, -EINVAL, "snapshot state file: damaged device tree: %s",
				  fdt_strerror(rc));
	compat = fdt_getprop(blob, 0, "compatible", NULL);
	if (!compat || strcmp(compat, SNAP_COMPATIBLE))
		return errbuf_set(err, -EINVAL, "snapshot state file: not a perfvisor snapshot (compatible)");
	/* The version first: a newer format may checksum differently. */
	s->format = r_u32(&r, 0, "format", ~0u);
	if (r.rc)
		return r.rc;
	if (s->format == 0 || s->format > SNAP_FORMAT)
		return errbuf_set(
			err, -ENOTSUP,
			"snapshot format %u: this perfvisor reads formats 1 to %u (a newer perfvisor wrote it?)",
			s->format, SNAP_FORMAT);
	rc = check_checksum(blob, len, err);
	if (rc)
		return rc;
	s->writer = r_str(&r, 0, "writer");
	s->created_ns = r_u64(&r, 0, "created-ns");
	r_machine(&r, s);
	node = r_node(&r, 0, "memory");
	if (node >= 0) {
		const char *file = r_str(&r, node, "file");

		if (file && strcmp(file, SNAP_MEMORY_FILE))
			r_fail(&r, "file", "the memory file must be \"" SNAP_MEMORY_FILE "\"");
		if (r_u64(&r, node, "size") != s->mem_size && !r.rc)
			r_fail(&r, "size", "differs from machine/memory-size");
		s->mem_checksum = r_u64(&r, node, "checksum");
	}
	node = r_node(&r, 0, "vm");
	if (node >= 0) {
		s->clock = r_u64(&r, node, "clock");
		s->clock_flags = r_u32(&r, node, "clock-flags", ~0u);
		s->pit = r_bytes(&r, node, "pit", sizeof(struct kvm_pit_state2), 0, 0, 1);
		s->pic_master =
			r_bytes(&r, node, "pic-master", sizeof(((struct kvm_irqchip *)0)->chip), 0, 0, 1);
		s->pic_slave =
			r_bytes(&r, node, "pic-slave", sizeof(((struct kvm_irqchip *)0)->chip), 0, 0, 1);
		s->ioapic = r_bytes(&r, node, "ioapic", sizeof(((struct kvm_irqchip *)0)->chip), 0, 0, 1);
	}
	r_parts(&r, s);
	r_count_vcpus(&r, s);
	for (unsigned i = 0; i < s->nr_vcpus && !r.rc; i++)
		r_vcpu(&r, s, i);
	return r.rc;
}
