// SPDX-License-Identifier: MIT
/*
 * The snapshot state file (docs/snapshot.md): a flattened device tree
 * written and read with libfdt. snap_build() turns a struct snap into a
 * blob with its checksum; snap_parse() checks a whole blob (structure,
 * checksum, version, every node and property, sizes, counts, ranges)
 * before anything uses it. Pure: no KVM, no files; fuzzed (fuzz/).
 */
#include "snapfile/snapfile.h"

#include <errno.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "perfvisor/stats_abi.h"

#define COMPATIBLE "perfvisor,snapshot"
#define KVM_MSR_ENTRY_SIZE 16u

uint64_t snap_hash(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

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

static void w_stats(struct fdtw *w, const struct snap_stats *st)
{
	w_begin(w, "stats");
	for (unsigned i = 0; i < st->n; i++)
		w_u64(w, st->s[i].name, st->s[i].value);
	w_end(w);
}

static void w_pmu_vcpu(struct fdtw *w, const struct pmu_vcpu_state *p)
{
	w_begin(w, "pmu");
	w_u64(w, "global-ctrl", p->global_ctrl);
	w_u64(w, "global-status", p->status);
	w_u64(w, "pmi-cfg", p->pmi_cfg);
	w_u64(w, "page", p->page);
	w_u64s(w, "counter-config", p->cfg, PMU_NR_COUNTERS);
	w_u64s(w, "counter-value", p->value, PMU_NR_COUNTERS);
	w_u64(w, "page-seq", p->page_seq);
	w_u64(w, "page-updates", p->page_updates);
	w_u32(w, "pmi-pending", p->pmi_pending);
	w_u32(w, "pmi-throttled", p->throttled);
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
	if (s->pmu)
		w_pmu_vcpu(w, &v->pmu);
	w_stats(w, &v->stats);
	w_end(w);
}

static void w_devices(struct fdtw *w, const struct snap *s)
{
	const struct serial_state *u = &s->serial;

	w_begin(w, "devices");
	w_begin(w, "serial@3f8");
	w_u32(w, "ier", u->ier);
	w_u32(w, "lcr", u->lcr);
	w_u32(w, "mcr", u->mcr);
	w_u32(w, "fcr", u->fcr);
	w_u32(w, "scr", u->scr);
	w_u32(w, "dll", u->dll);
	w_u32(w, "dlm", u->dlm);
	w_u32(w, "lsr-errors", u->lsr_errors);
	w_u32(w, "msr", u->msr);
	w_u32(w, "thri-pending", u->thri_pending);
	w_bytes(w, "rx", u->rx, u->rx_count);
	w_end(w);
	w_begin(w, "testdev");
	w_u64(w, "prints", s->testdev.prints);
	w_u64(w, "syncs", s->testdev.syncs);
	w_u64(w, "asserts", s->testdev.asserts);
	w_u64(w, "dones", s->testdev.dones);
	w_u64(w, "bad-requests", s->testdev.bad_requests);
	w_end(w);
	w_begin(w, "i8042");
	w_u32(w, "command-byte", s->i8042.ctr);
	w_u32(w, "pending", s->i8042.pending);
	w_u32(w, "obf", s->i8042.obf);
	w_u32(w, "out", s->i8042.out);
	w_end(w);
	w_begin(w, "fw_cfg@510");
	w_u32(w, "selector", s->fwcfg.selector);
	w_u32(w, "offset", s->fwcfg.offset);
	w_end(w);
	w_end(w);
}

static void w_tree(struct fdtw *w, const struct snap *s)
{
	if (!w->err)
		w->err = fdt_finish_reservemap(w->buf);
	w_begin(w, "");
	w_str(w, "compatible", COMPATIBLE);
	w_u32(w, "format", SNAP_FORMAT);
	w_u64(w, "checksum", 0); /* filled in once the blob is complete */
	w_str(w, "writer", s->writer);
	w_u64(w, "created-ns", s->created_ns);

	w_begin(w, "machine");
	w_u32(w, "vcpus", s->nr_vcpus);
	w_u64(w, "memory-size", s->mem_size);
	w_u32(w, "pmu", s->pmu);
	w_u32(w, "cpuid-hide", s->cpuid_hide);
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

	w_devices(w, s);

	if (s->pmu) {
		w_begin(w, "pmu");
		w_u32(w, "nr-counters", s->pmu_caps.nr_counters);
		w_u32(w, "features", s->pmu_caps.features);
		w_u32(w, "min-period", s->pmu_caps.min_period);
		w_u32(w, "min-period-ns", s->pmu_caps.min_period_ns);
		w_u32(w, "max-pmis-per-s", s->pmu_caps.max_pmis_per_s);
		w_u32(w, "host-budget", s->pmu_caps.host_budget);
		w_u64s(w, "avail", s->pmu_caps.avail, PMU_BITMAP_WORDS);
		w_u64s(w, "sample", s->pmu_caps.sample, PMU_BITMAP_WORDS);
		w_u64s(w, "filter", s->pmu_caps.filter, PMU_BITMAP_WORDS);
		w_end(w);
	}
	w_stats(w, &s->vm_stats);
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		w_vcpu(w, s, i);
	w_end(w);
	if (!w->err)
		w->err = fdt_finish(w->buf);
}

/* The checksum: XXH3-64 of the blob with the root's checksum property zeroed. */
static int blob_checksum(void *blob, uint64_t *sum)
{
	int rc = fdt_setprop_inplace_u64(blob, 0, "checksum", 0);

	if (rc)
		return rc;
	*sum = snap_hash(blob, fdt_totalsize(blob));
	return 0;
}

int snap_build(const struct snap *s, void **blob, size_t *len, struct errbuf *err)
{
	size_t size = 64 << 10;

	*blob = NULL;
	if (s->nr_vcpus == 0 || s->nr_vcpus > PV_MAX_CPUS)
		return errbuf_set(err, -EINVAL, "snapshot: %u vCPUs", s->nr_vcpus);
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
			w.err = blob_checksum(w.buf, &sum);
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

/* Every property of the node `stats` under parent: a statistics field name and a u64. */
static void r_stats(struct fdtr *r, int parent, struct snap_stats *st)
{
	int node = r_node(r, parent, "stats"), prop;

	st->n = 0;
	if (node < 0)
		return;
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

static void r_pmu_vcpu(struct fdtr *r, int parent, struct pmu_vcpu_state *p)
{
	int node = r_node(r, parent, "pmu");

	if (node < 0)
		return;
	p->global_ctrl = r_u64(r, node, "global-ctrl");
	p->status = r_u64(r, node, "global-status");
	p->pmi_cfg = r_u64(r, node, "pmi-cfg");
	p->page = r_u64(r, node, "page");
	r_u64s(r, node, "counter-config", p->cfg, PMU_NR_COUNTERS);
	r_u64s(r, node, "counter-value", p->value, PMU_NR_COUNTERS);
	p->page_seq = r_u64(r, node, "page-seq");
	p->page_updates = r_u64(r, node, "page-updates");
	p->pmi_pending = r_u32(r, node, "pmi-pending", 1);
	p->throttled = r_u32(r, node, "pmi-throttled", 1);
}

static void r_vcpu(struct fdtr *r, struct snap *s, unsigned i)
{
	struct snap_vcpu *v = &s->vcpu[i];
	char name[16];
	const char *why;
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
	if (s->pmu) {
		r_pmu_vcpu(r, node, &v->pmu);
		if (!r->rc && pmu_vcpu_state_check(&s->pmu_caps, &v->pmu, &why))
			r_fail(r, NULL, why);
	}
	r_stats(r, node, &v->stats);
}

static void r_devices(struct fdtr *r, struct snap *s)
{
	int devs = r_node(r, 0, "devices"), node;
	struct serial_state *u = &s->serial;
	struct snap_bytes rx;

	if (devs < 0)
		return;
	node = r_node(r, devs, "serial@3f8");
	if (node < 0)
		return;
	u->ier = (uint8_t)r_u32(r, node, "ier", 0xff);
	u->lcr = (uint8_t)r_u32(r, node, "lcr", 0xff);
	u->mcr = (uint8_t)r_u32(r, node, "mcr", 0xff);
	u->fcr = (uint8_t)r_u32(r, node, "fcr", 0xff);
	u->scr = (uint8_t)r_u32(r, node, "scr", 0xff);
	u->dll = (uint8_t)r_u32(r, node, "dll", 0xff);
	u->dlm = (uint8_t)r_u32(r, node, "dlm", 0xff);
	u->lsr_errors = (uint8_t)r_u32(r, node, "lsr-errors", 0xff);
	u->msr = (uint8_t)r_u32(r, node, "msr", 0xff);
	u->thri_pending = r_u32(r, node, "thri-pending", 1);
	rx = r_bytes(r, node, "rx", 0, 0, SERIAL_RX_MAX, 1);
	u->rx_count = (uint16_t)rx.len;
	if (rx.len)
		memcpy(u->rx, rx.p, rx.len);
	if (!r->rc && !serial_state_valid(u))
		r_fail(r, NULL, "not a state a 16550 can be in");
	node = r_node(r, devs, "testdev");
	if (node < 0)
		return;
	s->testdev.prints = r_u64(r, node, "prints");
	s->testdev.syncs = r_u64(r, node, "syncs");
	s->testdev.asserts = r_u64(r, node, "asserts");
	s->testdev.dones = r_u64(r, node, "dones");
	s->testdev.bad_requests = r_u64(r, node, "bad-requests");
	node = r_node(r, devs, "i8042");
	if (node < 0)
		return;
	s->i8042.ctr = (uint8_t)r_u32(r, node, "command-byte", 0xff);
	s->i8042.pending = (uint8_t)r_u32(r, node, "pending", 0xff);
	s->i8042.obf = r_u32(r, node, "obf", 1);
	s->i8042.out = (uint8_t)r_u32(r, node, "out", 0xff);
	if (!r->rc && !i8042_state_valid(&s->i8042))
		r_fail(r, "pending", "not a command the i8042 waits on");
	/* fw_cfg came within format 1: a snapshot without it had its reset state. */
	node = r->rc ? -1 : fdt_subnode_offset(r->blob, devs, "fw_cfg@510");
	if (node >= 0) {
		s->fwcfg.selector = (uint16_t)r_u32(r, node, "selector", 0xffff);
		s->fwcfg.offset = r_u32(r, node, "offset", UINT32_MAX);
	}
}

static void r_pmu_caps(struct fdtr *r, struct snap *s)
{
	int node = r_node(r, 0, "pmu");
	struct pmu_caps *c = &s->pmu_caps;

	if (node < 0)
		return;
	c->nr_counters = r_u32(r, node, "nr-counters", PMU_NR_COUNTERS);
	c->features = r_u32(r, node, "features", ~0u);
	c->min_period = r_u32(r, node, "min-period", ~0u);
	c->min_period_ns = r_u32(r, node, "min-period-ns", ~0u);
	c->max_pmis_per_s = r_u32(r, node, "max-pmis-per-s", ~0u);
	c->host_budget = r_u32(r, node, "host-budget", ~0u);
	r_u64s(r, node, "avail", c->avail, PMU_BITMAP_WORDS);
	r_u64s(r, node, "sample", c->sample, PMU_BITMAP_WORDS);
	r_u64s(r, node, "filter", c->filter, PMU_BITMAP_WORDS);
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
	s->cpuid_hide = r_u32_opt(r, node, "cpuid-hide", CPUID_HIDE_XSAVE | CPUID_HIDE_CX16, 0);
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
	rc = blob_checksum(copy, &got);
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

int snap_parse(const void *blob, size_t len, struct snap *s, struct errbuf *err)
{
	struct fdtr r = { .blob = blob, .err = err, .where = "/" };
	const char *compat;
	int rc, node;

	memset(s, 0, sizeof(*s));
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
	if (!compat || strcmp(compat, COMPATIBLE))
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
	r_devices(&r, s);
	if (s->pmu)
		r_pmu_caps(&r, s);
	snprintf(r.where, sizeof(r.where), "/");
	r_stats(&r, 0, &s->vm_stats);
	r_count_vcpus(&r, s);
	for (unsigned i = 0; i < s->nr_vcpus && !r.rc; i++)
		r_vcpu(&r, s, i);
	return r.rc;
}
