// SPDX-License-Identifier: MIT
/*
 * `perfvisor stats-check TARGET`: map a running VM's statistics region
 * read-only and check every invariant of the ABI, one line each, stopping at
 * the first violation. Built against every frozen ABI version (tests/abi/vN),
 * so it uses only what ABI v1 defines.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stats/stats.h"
#include "stats/tools_internal.h"

/* Sizes of ABI v1, the first of epoch 1: every epoch-1 producer has at least these. */
#define V1_HEADER_SIZE 160U
#define V1_DESC_SIZE 64U
#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)

static const char check_usage[] =
	"Usage: perfvisor stats-check TARGET\n"
	"Check every invariant of a running VM's statistics region (docs/stats-abi.md).\n"
	"TARGET is the VMM's process id or its control socket path (--api-socket).\n"
	"Prints 'ok   <invariant>' or 'FAIL <invariant>: <detail>' per invariant and stops\n"
	"at the first violation. Exit status: 0 all hold, 1 a violation, 2 usage error.\n"
	"\n"
	"Options:\n"
	"  --help   show this help\n";

struct checker {
	int fd;
	const uint8_t *base; /* our own read-only mapping of the whole file */
	size_t size;
	struct pv_stats_header h; /* min(header_size, sizeof) copy */
	unsigned count;		  /* invariants checked */
};

/* Print one invariant's verdict; returns ok. */
__attribute__((format(printf, 3, 4))) static bool verdict(struct checker *c, bool ok, const char *fmt, ...)
{
	va_list ap;

	c->count++;
	fputs(ok ? "ok   " : "FAIL ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	return ok;
}

#define CHECK(c, cond, ...)                         \
	do {                                        \
		if (!verdict(c, cond, __VA_ARGS__)) \
			return false;               \
	} while (0)

static bool all_zero(const uint8_t *p, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static uint64_t span(const struct pv_stats_array *a)
{
	return (uint64_t)a->slots * a->stride;
}

static bool check_fd(struct checker *c)
{
	int fl = fcntl(c->fd, F_GETFL), seals = fcntl(c->fd, F_GET_SEALS);
	struct stat st;

	CHECK(c, fl >= 0 && (fl & O_ACCMODE) == O_RDONLY, "the region fd is open read-only");
	CHECK(c, seals >= 0 && (seals & ALL_SEALS) == ALL_SEALS,
	      "the region is sealed (shrink, grow, future-write, seal)%s%s", seals < 0 ? ": " : "",
	      seals < 0 ? strerror(errno) : "");
	CHECK(c, fstat(c->fd, &st) == 0 && S_ISREG(st.st_mode), "the region is a regular file (memfd)");
	c->size = (size_t)st.st_size;
	CHECK(c, c->size >= V1_HEADER_SIZE, "the region holds a header: %zu bytes", c->size);
	c->base = mmap(NULL, c->size, PROT_READ, MAP_SHARED, c->fd, 0);
	CHECK(c, c->base != MAP_FAILED, "the region maps read-only%s%s", c->base == MAP_FAILED ? ": " : "",
	      c->base == MAP_FAILED ? strerror(errno) : "");
	return true;
}

static bool check_header(struct checker *c)
{
	struct pv_stats_header *h = &c->h;
	uint32_t hs;
	unsigned i, nres;

	memcpy(&h->magic, c->base, sizeof(h->magic));
	CHECK(c, h->magic == PV_STATS_MAGIC, "magic is PV_STATS_MAGIC (epoch 1): 0x%016llx",
	      (unsigned long long)h->magic);
	memcpy(&hs, c->base + offsetof(struct pv_stats_header, header_size), sizeof(hs));
	CHECK(c, hs >= V1_HEADER_SIZE && hs % 8 == 0 && hs <= c->size,
	      "header_size %u is >= %u, a multiple of 8 and inside the file", hs, V1_HEADER_SIZE);
	memcpy(h, c->base, hs < sizeof(*h) ? hs : sizeof(*h));
	CHECK(c, h->flags == 0, "header flags are zero: 0x%x", h->flags);
	nres = sizeof(h->reserved) / sizeof(h->reserved[0]);
	for (i = 0; i < nres && h->reserved[i] == 0; i++)
		;
	CHECK(c, i == nres, "header reserved fields are zero%s", i == nres ? "" : ": one is not");
#ifdef PV_STATS_VM_NAME_MAX /* a header that has the name (not ABI v1) */
	if (hs >= offsetof(struct pv_stats_header, name) + sizeof(h->name))
		CHECK(c, memchr(h->name, 0, sizeof(h->name)) && (!h->name[0] || stats_vm_name_ok(h->name)),
		      "the VM name is NUL-terminated and empty or 1-63 chars of [A-Za-z0-9_.:-]");
#endif
	CHECK(c, h->region_size == c->size, "region_size %llu equals the file size %zu",
	      (unsigned long long)h->region_size, c->size);
	return true;
}

static bool check_array(struct checker *c, const char *what, const struct pv_stats_array *a)
{
	CHECK(c, a->offset >= c->h.header_size, "%s array: offset %llu >= header_size %u", what,
	      (unsigned long long)a->offset, c->h.header_size);
	CHECK(c, a->offset % 8 == 0, "%s array: offset %llu is a multiple of 8", what,
	      (unsigned long long)a->offset);
	CHECK(c, a->size >= sizeof(struct pv_stats_record_hdr), "%s array: record size %u >= record header",
	      what, a->size);
	CHECK(c, a->stride >= a->size, "%s array: stride %u >= size %u", what, a->stride, a->size);
	CHECK(c, a->stride % PV_STATS_ALIGN == 0, "%s array: stride %u is a multiple of %u", what, a->stride,
	      PV_STATS_ALIGN);
	CHECK(c, a->offset <= c->size && span(a) <= c->size - a->offset,
	      "%s array: offset + slots * stride (%llu + %u * %u) <= region size %zu", what,
	      (unsigned long long)a->offset, a->slots, a->stride, c->size);
	CHECK(c, a->online <= a->slots, "%s array: online %u <= slots %u", what, a->online, a->slots);
	return true;
}

/* Header, descriptor table and the two arrays are disjoint; every other byte is zero. */
static bool check_areas(struct checker *c)
{
	const struct pv_stats_header *h = &c->h;
	uint64_t lo[4] = { 0, h->desc_offset, h->vm.offset, h->vcpu.offset };
	uint64_t hi[4] = { h->header_size, h->desc_offset + (uint64_t)h->desc_count * h->desc_size,
			   h->vm.offset + span(&h->vm), h->vcpu.offset + span(&h->vcpu) };
	static const char *const names[4] = { "header", "descriptor table", "vm array", "vcpu array" };
	uint64_t pos = 0, off, gaps = 0;
	unsigned i, j, done = 0;

	for (i = 0; i < 4; i++)
		for (j = i + 1; j < 4; j++)
			CHECK(c, hi[i] <= lo[j] || hi[j] <= lo[i], "the %s and the %s do not overlap",
			      names[i], names[j]);
	/* walk the gaps in address order */
	for (;;) {
		uint64_t next = c->size;
		unsigned k = 4;

		for (i = 0; i < 4; i++)
			if (!(done & (1U << i)) && lo[i] >= pos && lo[i] < next) {
				next = lo[i];
				k = i;
			}
		for (off = pos; off < next && !c->base[off]; off++)
			;
		if (off != next)
			return verdict(
				c, false,
				"space outside the header, descriptors and arrays is zero: byte %llu is not",
				(unsigned long long)off);
		gaps += next > pos ? next - pos : 0;
		if (k == 4)
			return verdict(
				c, true,
				"space outside the header, descriptors and arrays is zero (%llu bytes)",
				(unsigned long long)gaps);
		done |= 1U << k;
		pos = hi[k];
	}
}

static bool name_charset_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
			return false;
	return true;
}

static void read_desc(const struct checker *c, unsigned i, struct pv_stats_desc *d)
{
	uint32_t n = c->h.desc_size < sizeof(*d) ? c->h.desc_size : sizeof(*d);

	memset(d, 0, sizeof(*d));
	memcpy(d, c->base + c->h.desc_offset + (uint64_t)i * c->h.desc_size, n);
}

static bool check_descs(struct checker *c)
{
	const struct pv_stats_header *h = &c->h;
	struct pv_stats_desc d, e;
	unsigned i, j, newer = 0;

	CHECK(c, h->desc_size >= V1_DESC_SIZE, "desc_size %u >= %u", h->desc_size, V1_DESC_SIZE);
	CHECK(c,
	      h->desc_offset >= h->header_size && h->desc_offset <= c->size &&
		      (uint64_t)h->desc_count * h->desc_size <= c->size - h->desc_offset,
	      "descriptor table (%llu + %u * %u) is inside [header_size, region size)",
	      (unsigned long long)h->desc_offset, h->desc_count, h->desc_size);
	for (i = 0; i < h->desc_count; i++) {
		const struct pv_stats_array *a;

		read_desc(c, i, &d);
		if (!memchr(d.name, 0, sizeof(d.name)))
			return verdict(c, false, "descriptor %u: name is NUL-terminated", i);
		if (!name_charset_ok(d.name))
			return verdict(c, false, "descriptor %u: name '%s' is non-empty [a-z0-9_.]", i,
				       d.name);
		if (d.flags || d.reserved)
			return verdict(c, false, "descriptor %u (%s): flags and reserved are zero", i,
				       d.name);
		if (d.record > PV_STATS_RECORD_VCPU || d.kind < PV_STATS_CUMULATIVE ||
		    d.kind > PV_STATS_PEAK || d.unit > PV_STATS_UNIT_CYCLES) {
			newer++; /* from a newer producer: readers skip it */
			continue;
		}
		a = d.record == PV_STATS_RECORD_VM ? &h->vm : &h->vcpu;
		if (d.offset % 8 || d.offset < 8 || (uint64_t)d.offset + 8 > a->size)
			return verdict(
				c, false,
				"descriptor %u (%s): offset %u is a multiple of 8, >= 8, + 8 <= record size %u",
				i, d.name, d.offset, a->size);
		for (j = 0; j < i; j++) {
			read_desc(c, j, &e);
			if (e.record != d.record)
				continue;
			if (!strcmp(e.name, d.name))
				return verdict(c, false, "descriptor names are unique per record: '%s' twice",
					       d.name);
			if (e.offset == d.offset)
				return verdict(
					c, false,
					"descriptors of a record do not share an offset: '%s' and '%s' at %u",
					e.name, d.name, d.offset);
		}
	}
	verdict(c, true,
		"descriptors: %u valid (names NUL-terminated, [a-z0-9_.], unique per record; flags and reserved zero; offsets aligned, >= 8, inside the record size)%s",
		h->desc_count - newer, newer ? "; some of kinds newer than ABI v1 skipped" : "");
	return true;
}

static bool check_readonly(struct checker *c)
{
	void *p = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	int rc;

	if (p != MAP_FAILED)
		munmap(p, c->size);
	CHECK(c, p == MAP_FAILED, "a writable shared mapping of the fd fails");
	rc = mprotect((void *)c->base, c->size, PROT_READ | PROT_WRITE);
	CHECK(c, rc < 0, "mprotect of the read-only mapping to writable fails");
	return true;
}

static bool state_ok(uint32_t s)
{
	return s == PV_STATS_ONLINE || s == PV_STATS_STOPPED;
}

static bool check_entries(struct checker *c, struct stats_view *v)
{
	const struct pv_stats_header *h = &c->h;
	const struct pv_stats_record_hdr *r;
	unsigned i, online;

	for (i = 0; i < h->vm.online; i++) {
		r = (const void *)(c->base + h->vm.offset);
		CHECK(c, state_ok(__atomic_load_n(&r->state, __ATOMIC_ACQUIRE)),
		      "the VM record's state is ONLINE or STOPPED: %u", r->state);
	}
	online = stats_view_online(v);
	for (i = 0; i < h->vcpu.slots; i++) {
		const uint8_t *e = c->base + h->vcpu.offset + (uint64_t)i * h->vcpu.stride;

		r = (const void *)e;
		if (i < online) {
			uint32_t s = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

			if (!state_ok(s))
				return verdict(c, false,
					       "online vCPU entry %u's state is ONLINE or STOPPED: %u", i, s);
			continue;
		}
		/* a vCPU may come online while we look: only a slot still offline must be zero */
		if (!all_zero(e, h->vcpu.stride) && i >= stats_view_online(v))
			return verdict(c, false, "offline vCPU slot %u is all zero", i);
	}
	verdict(c, true, "online vCPU entries (%u) are ONLINE or STOPPED; offline slots (%u) are all zero",
		online, h->vcpu.slots - online);
	for (i = 0; i < h->vcpu.slots; i++) {
		const uint8_t *e = c->base + h->vcpu.offset + (uint64_t)i * h->vcpu.stride;

		if (!all_zero(e + h->vcpu.size, h->vcpu.stride - h->vcpu.size))
			return verdict(c, false, "padding between size and stride is zero: vCPU slot %u", i);
	}
	CHECK(c, all_zero(c->base + h->vm.offset + h->vm.size, h->vm.stride - h->vm.size),
	      "padding between size and stride is zero (VM record and every vCPU slot)");
	return true;
}

/* The first busy record of a snapshot (0 = the VM record, 1 + i = vCPU i), or -1. */
static int first_busy(const struct stats_snap *s)
{
	if (stats_snap_status(s, PV_STATS_RECORD_VM, 0, NULL))
		return 0;
	for (unsigned i = 0; i < stats_snap_online(s); i++)
		if (stats_snap_status(s, PV_STATS_RECORD_VCPU, i, NULL))
			return 1 + (int)i;
	return -1;
}

/*
 * Compare record r (0 = VM, 1 + i = vCPU i) of two snapshots, the second
 * finished before `now`; false after printing a violation.
 */
static bool check_record_moves(struct checker *c, struct stats_view *v, struct stats_snap *s[2], uint64_t now,
			       unsigned r)
{
	enum pv_stats_record kind = r ? PV_STATS_RECORD_VCPU : PV_STATS_RECORD_VM;
	unsigned idx = r ? r - 1 : 0;
	uint32_t state0 = 0;

	stats_snap_status(s[0], kind, idx, &state0);
	for (unsigned d = 0; d < stats_view_ndesc(v); d++) {
		const struct pv_stats_desc *dd = stats_view_desc(v, d);
		uint64_t a, b;
		int since = stats_view_since(v, d);

		if (dd->record != kind)
			continue;
		a = stats_snap_value(s[0], d, idx);
		b = stats_snap_value(s[1], d, idx);
		if (dd->kind != PV_STATS_INSTANT && b < a)
			return verdict(c, false,
				       "cumulative and peak fields do not decrease: %s of %s%u: %llu -> %llu",
				       dd->name, r ? "vCPU " : "the VM", idx, (unsigned long long)a,
				       (unsigned long long)b);
		a = stats_snap_live(s[0], d, idx);
		b = stats_snap_live(s[1], d, idx);
		if (dd->kind != PV_STATS_INSTANT && b < a)
			return verdict(
				c, false,
				"cumulative and peak fields (live values) do not decrease: %s of %s%u: %llu -> %llu",
				dd->name, r ? "vCPU " : "the VM", idx, (unsigned long long)a,
				(unsigned long long)b);
		if (state0 == PV_STATS_STOPPED &&
		    stats_snap_value(s[1], d, idx) != stats_snap_value(s[0], d, idx))
			return verdict(c, false, "a STOPPED record's values are final: %s of %s%u changed",
				       dd->name, r ? "vCPU " : "the VM", idx);
		if (since >= 0 && stats_snap_value(s[1], (unsigned)since, idx) > now)
			return verdict(c, false,
				       "a since field is 0 or in the past: %s of %s%u is %llu, now %llu",
				       stats_view_desc(v, (unsigned)since)->name, r ? "vCPU " : "the VM", idx,
				       (unsigned long long)stats_snap_value(s[1], (unsigned)since, idx),
				       (unsigned long long)now);
	}
	return true;
}

/* Descriptor index of field `name` of records of kind `rec`, or -1. */
static int field_index(const struct stats_view *v, enum pv_stats_record rec, const char *name)
{
	for (unsigned d = 0; name && d < stats_view_ndesc(v); d++)
		if (stats_view_desc(v, d)->record == rec && !strcmp(stats_view_desc(v, d)->name, name))
			return (int)d;
	return -1;
}

/* vCPU idx's field d at time now: its published value plus its since companion's open interval. */
static uint64_t live_at(const struct stats_view *v, const struct stats_snap *s, unsigned d, unsigned idx,
			uint64_t now)
{
	int since = stats_view_since(v, d);
	uint64_t val = stats_snap_value(s, d, idx),
		 t0 = since >= 0 ? stats_snap_value(s, (unsigned)since, idx) : 0;

	return val + (t0 && now > t0 ? now - t0 : 0);
}

/* Sum over vCPUs 0..n-1 of field d: published, or live at `now` (now != 0). */
static uint64_t vcpu_sum(const struct stats_view *v, const struct stats_snap *s, unsigned d, unsigned n,
			 uint64_t now)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += now ? live_at(v, s, d, i, now) : stats_snap_value(s, d, i);
	return sum;
}

/* One rule of stats_rules on snapshot s, taken before `now` and before online was read again. */
static bool check_rule(struct checker *c, struct stats_view *v, const struct stats_snap *s,
		       const struct stats_rule *r, uint64_t now, unsigned online)
{
	enum pv_stats_record rec = r->kind == STATS_RULE_VCPU_SUM ? PV_STATS_RECORD_VCPU : PV_STATS_RECORD_VM;
	int a = field_index(v, rec, r->a), b[STATS_RULE_MAX_TERMS], slack = -1;
	unsigned nb = 0, n = stats_snap_online(s);
	uint32_t state = 0;
	uint64_t va, sum = 0;
	bool stopped;

	for (; nb < STATS_RULE_MAX_TERMS && r->b[nb]; nb++)
		if ((b[nb] = field_index(v,
					 nb == 0 && r->kind == STATS_RULE_VM_GE ? PV_STATS_RECORD_VM
										: PV_STATS_RECORD_VCPU,
					 r->b[nb])) < 0)
			a = -1;
	if (r->slack && (slack = field_index(v, PV_STATS_RECORD_VCPU, r->slack)) < 0)
		a = -1;
	if (a < 0)
		return verdict(c, true, "%s: %s is %s: a field is not published by this producer (skipped)",
			       stats_rules_version, r->a, r->doc);
	stats_snap_status(s, PV_STATS_RECORD_VM, 0, &state);
	stopped = state == PV_STATS_STOPPED;
	va = stats_snap_value(s, (unsigned)a, 0);
	switch (r->kind) {
	case STATS_RULE_VM_SUM:
		sum = vcpu_sum(v, s, (unsigned)b[0], n, 0);
		return verdict(c, stopped ? va == sum : va <= sum, "%s: %s is %s: %llu %s %llu",
			       stats_rules_version, r->a, r->doc, (unsigned long long)va,
			       stopped ? "==" : "<=", (unsigned long long)sum);
	case STATS_RULE_VM_LIVE_SUM:
		sum = vcpu_sum(v, s, (unsigned)b[0], n, now);
		return verdict(c, va <= sum, "%s: %s is %s: %llu <= %llu now", stats_rules_version, r->a,
			       r->doc, (unsigned long long)va, (unsigned long long)sum);
	case STATS_RULE_VM_GE:
		sum = stats_snap_value(s, (unsigned)b[0], 0);
		return verdict(c, va >= sum, "%s: %s is %s: %llu >= %s %llu", stats_rules_version, r->a,
			       r->doc, (unsigned long long)va, r->b[0], (unsigned long long)sum);
	case STATS_RULE_VM_ONLINE:
		return verdict(c, stopped ? va == online : va <= online, "%s: %s is %s: %llu %s %u",
			       stats_rules_version, r->a, r->doc, (unsigned long long)va,
			       stopped ? "==" : "<=", online);
	case STATS_RULE_VM_UPTIME:
		sum = now - c->h.start_time_ns;
		return verdict(c, va <= sum, "%s: %s is %s: %llu <= now - start_time_ns %llu",
			       stats_rules_version, r->a, r->doc, (unsigned long long)va,
			       (unsigned long long)sum);
	case STATS_RULE_VCPU_SUM:
		for (unsigned i = 0; i < n; i++) {
			uint64_t x = stats_snap_value(s, (unsigned)a, i), lo = 0,
				 hi = slack >= 0 ? stats_snap_value(s, (unsigned)slack, i) : 0;

			for (unsigned j = 0; j < nb; j++)
				lo += stats_snap_value(s, (unsigned)b[j], i);
			if (x < lo || x > lo + hi)
				return verdict(c, false, "%s: %s is %s: vCPU %u: %llu, the sum %llu%s%s",
					       stats_rules_version, r->a, r->doc, i, (unsigned long long)x,
					       (unsigned long long)lo, slack >= 0 ? ", slack " : "",
					       slack >= 0 ? r->slack : "");
		}
		return verdict(c, true, "%s: %s is %s: in each of %u vCPU records", stats_rules_version, r->a,
			       r->doc, n);
	}
	return verdict(c, false, "%s: rule %s: unknown kind %d", stats_rules_version, r->a, (int)r->kind);
}

/* Every documented meaning (stats_rules) on one snapshot. */
static bool check_meanings(struct checker *c, struct stats_view *v, const struct stats_snap *s)
{
	uint64_t now = util_now_ns(); /* after the snapshot's copies */
	unsigned online = stats_view_online(v);

	for (unsigned i = 0; i < stats_rules_len; i++)
		if (!check_rule(c, v, s, &stats_rules[i], now, online))
			return false;
	return true;
}

static bool check_reads(struct checker *c, struct stats_view *v)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	struct stats_snap *s[2] = { NULL, NULL };
	uint64_t now = 0;
	bool ok = true;
	int k, busy;

	if (stats_snap_create(&s[0], v) || stats_snap_create(&s[1], v)) {
		ok = verdict(c, false, "reads complete: out of memory");
		goto out;
	}
	for (k = 0; k < 2 && ok; k++) {
		if (k)
			nanosleep(&ts, NULL);
		stats_snap_take(s[k]);
		now = util_now_ns(); /* after the copies: a since field read there is older */
		busy = first_busy(s[k]);
		ok = verdict(c, busy < 0, "consistent read %d of every record completes%s", k + 1,
			     busy < 0 ? "" : ": busy (seq odd for the whole retry bound)");
	}
	if (!ok)
		goto out;
	ok = verdict(c,
		     stats_snap_online(s[1]) >= stats_snap_online(s[0]) &&
			     stats_snap_generation(s[1]) >= stats_snap_generation(s[0]),
		     "online and generation do not decrease (%u -> %u, %llu -> %llu)",
		     stats_snap_online(s[0]), stats_snap_online(s[1]),
		     (unsigned long long)stats_snap_generation(s[0]),
		     (unsigned long long)stats_snap_generation(s[1]));
	for (unsigned r = 0; ok && r < 1 + stats_snap_online(s[0]); r++)
		ok = check_record_moves(c, v, s, now, r);
	if (ok)
		verdict(c, true,
			"cumulative and peak fields (published and live values) do not decrease, since fields are in the past, STOPPED records do not change (100 ms apart)");
	for (k = 0; k < 2 && ok; k++)
		ok = check_meanings(c, v, s[k]);
out:
	stats_snap_destroy(s[0]);
	stats_snap_destroy(s[1]);
	return ok;
}

static bool check_all(struct checker *c)
{
	struct stats_view *v;
	struct errbuf err = { "" };
	bool ok;
	int rc;

	if (!check_fd(c) || !check_header(c) || !check_array(c, "vm", &c->h.vm) ||
	    !check_array(c, "vcpu", &c->h.vcpu))
		return false;
	CHECK(c, c->h.vm.slots == 1, "vm array: slots is 1: %u", c->h.vm.slots);
	if (!check_descs(c) || !check_areas(c) || !check_readonly(c))
		return false;
	rc = stats_view_open_fd(&v, c->fd, &err);
	CHECK(c, rc == 0, "the reader library accepts the region%s%s", rc ? ": " : "", err.msg);
	ok = check_entries(c, v) && check_reads(c, v);
	stats_view_close(v);
	return ok;
}

int stats_cmd_check(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	struct checker c = { .fd = -1, .base = MAP_FAILED };
	struct errbuf err = { "" };
	pid_t pid;
	int opt;
	bool ok;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(check_usage, stdout);
			return 0;
		}
		fprintf(stderr, "perfvisor stats-check: unknown option '%s' (see --help)\n",
			argv[optind - 1]);
		return 2;
	}
	if (argc - optind != 1) {
		fprintf(stderr,
			"perfvisor stats-check: expected one TARGET (a PID or a socket path), see --help\n");
		return 2;
	}
	c.fd = stats_target_fd(argv[optind], &pid, &err);
	if (c.fd < 0) {
		printf("FAIL the region can be opened: %s\n", err.msg);
		return 1;
	}
	ok = check_all(&c);
	if (c.base != MAP_FAILED)
		munmap((void *)c.base, c.size);
	close(c.fd);
	if (ok)
		printf("stats-check: all %u invariants hold\n", c.count);
	return ok ? 0 : 1;
}
