// SPDX-License-Identifier: MIT
/*
 * Host-side guest profiling, the pure parts (docs/profiling.md): the
 * --profile option, the per-vCPU sample ring between a vCPU thread and the
 * main thread, and the aggregation of samples into stacks.
 */
#include "pmu.h"

#include <errno.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cpu-clock is no PV PMU event (the guest has task-clock); the profiler may use it. */
static const struct pmu_event_info cpu_clock = {
	.id = UINT16_MAX,
	.name = "cpu-clock",
	.cls = PV_PMU_CLASS_SW,
	.ns = true,
	.perf_config = PERF_COUNT_SW_CPU_CLOCK,
};

static const struct pmu_event_info *prof_event_by_name(const char *name)
{
	const struct pmu_event_info *ev;

	if (!strcmp(name, "cpu-clock"))
		return &cpu_clock;
	ev = pmu_event_by_name(name);
	if (ev && (ev->cls == PV_PMU_CLASS_HW || (ev->cls == PV_PMU_CLASS_SW && ev->ns)))
		return ev;
	return NULL;
}

/* "1ms" -> 1000000 (ns). 0, or -EINVAL/-ERANGE. */
static int parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t mul;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].mul)
			return -ERANGE;
		*ns = v * units[i].mul;
		return 0;
	}
	return *end ? -EINVAL : -ENOENT; /* -ENOENT: a bare number */
}

static int parse_one(const char *item, bool hw_pmu, struct prof_event *e, struct errbuf *err)
{
	char name[64];
	const char *colon = strchr(item, ':');
	uint64_t v;
	int rc;

	if (!colon)
		return errbuf_set(
			err, -EINVAL,
			"--profile '%.60s': needs EVENT:PERIOD, e.g. task-clock:1ms or cycles:100000", item);
	if ((size_t)(colon - item) >= sizeof(name) || colon == item)
		return errbuf_set(err, -EINVAL, "--profile '%.60s': no event name before ':'", item);
	memcpy(name, item, (size_t)(colon - item));
	name[colon - item] = '\0';
	e->ev = prof_event_by_name(name);
	if (!e->ev)
		return errbuf_set(err, -EINVAL,
				  "--profile: unknown event '%s' (time events: task-clock, cpu-clock; "
				  "hardware: cycles, instructions, ...)",
				  name);
	if (e->ev->cls == PV_PMU_CLASS_HW && !hw_pmu)
		return errbuf_set(
			err, -ENOTSUP,
			"--profile: %s: this host has no hardware PMU (use task-clock or cpu-clock)", name);
	if (e->ev->ns) {
		rc = parse_time(colon + 1, &v);
		if (rc == -ENOENT)
			return errbuf_set(err, -EINVAL,
					  "--profile %s:%s: a time period needs a unit: ns, us, ms or s",
					  name, colon + 1);
		if (rc)
			return errbuf_set(err, -EINVAL,
					  "--profile %s: '%.40s' is not a period (examples: 1ms, 500us)",
					  name, colon + 1);
		if (v < PROF_MIN_PERIOD_NS || v > PROF_MAX_PERIOD_NS)
			return errbuf_set(err, -ERANGE, "--profile %s:%s: the period must be 100us to 10s",
					  name, colon + 1);
	} else {
		rc = util_parse_u64(colon + 1, PROF_MIN_PERIOD_EVENTS, PROF_MAX_PERIOD_EVENTS, &v);
		if (rc)
			return errbuf_set(
				err, -EINVAL,
				"--profile %s:%.40s: the period must be a count of events from %llu to %llu",
				name, colon + 1, (unsigned long long)PROF_MIN_PERIOD_EVENTS,
				(unsigned long long)PROF_MAX_PERIOD_EVENTS);
	}
	e->period = v;
	return 0;
}

int prof_spec_parse(const char *s, bool hw_pmu, struct prof_spec *out, struct errbuf *err)
{
	char buf[256], *save = NULL;
	bool mode_seen = false;
	size_t at = 0;

	if (strlen(s) >= sizeof(buf))
		return errbuf_set(err, -EINVAL, "--profile: the value is too long");
	strcpy(buf, s); /* first: s may be out->text */
	memset(out, 0, sizeof(*out));
	if (!*buf)
		return errbuf_set(err, -EINVAL, "--profile needs EVENT:PERIOD, e.g. task-clock:1ms");
	if (buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
		return errbuf_set(err, -EINVAL, "--profile '%s': an empty item in the list", buf);
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		struct prof_event *e;
		int rc;

		if (!strncmp(item, "mode=", 5)) {
			if (mode_seen)
				return errbuf_set(err, -EINVAL, "--profile: mode= is given twice");
			mode_seen = true;
			if (!strcmp(item + 5, "leaf"))
				out->leaf = true;
			else if (strcmp(item + 5, "stack"))
				return errbuf_set(
					err, -EINVAL,
					"--profile: unknown mode '%.40s' (modes: stack, the default; leaf)",
					item + 5);
			continue;
		}
		if (out->n == PROF_MAX_EVENTS)
			return errbuf_set(err, -EINVAL, "--profile: at most %u events", PROF_MAX_EVENTS);
		e = &out->e[out->n];
		rc = parse_one(item, hw_pmu, e, err);
		if (rc)
			return rc;
		for (unsigned i = 0; i < out->n; i++)
			if (out->e[i].ev == e->ev)
				return errbuf_set(err, -EINVAL, "--profile: event %s is given twice",
						  e->ev->name);
		out->n++;
		at += (size_t)snprintf(out->text + at, sizeof(out->text) - at, "%s%s:%llu%s", at ? "," : "",
				       e->ev->name, (unsigned long long)e->period, e->ev->ns ? "ns" : "");
		if (at >= sizeof(out->text))
			return errbuf_set(err, -EINVAL, "--profile: the value is too long");
	}
	if (!out->n)
		return errbuf_set(err, -EINVAL, "--profile needs EVENT:PERIOD, e.g. task-clock:1ms");
	if (out->leaf) {
		at += (size_t)snprintf(out->text + at, sizeof(out->text) - at, ",mode=leaf");
		if (at >= sizeof(out->text))
			return errbuf_set(err, -EINVAL, "--profile: the value is too long");
	}
	return 0;
}

/* ---- perf ring records (mode=leaf) --------------------------------------------------- */

/* n bytes at free-running offset at of the ring, across its end if need be. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t at, void *dst, size_t n)
{
	uint64_t off = at & (size - 1);
	size_t first = (size_t)(size - off) < n ? (size_t)(size - off) : n;

	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, n - first);
}

size_t prof_perf_record(const uint8_t *data, uint64_t size, uint64_t at, uint64_t head,
			struct prof_perf_rec *r)
{
	struct perf_event_header h;
	uint64_t words[2] = { 0, 0 };

	if (!size || (size & (size - 1)) || head - at < sizeof(h) || head - at > size)
		return 0;
	ring_copy(data, size, at, &h, sizeof(h));
	if (h.size < sizeof(h) || h.size > head - at)
		return 0;
	r->type = h.type;
	r->misc = h.misc;
	r->value = 0;
	ring_copy(data, size, at + sizeof(h), words,
		  h.size - sizeof(h) < sizeof(words) ? h.size - sizeof(h) : sizeof(words));
	if (h.type == PERF_RECORD_SAMPLE)
		r->value = words[0]; /* sample_type PERF_SAMPLE_IP: { u64 ip; } */
	else if (h.type == PERF_RECORD_LOST)
		r->value = words[1]; /* { u64 id; u64 lost; } */
	return h.size;
}

void prof_perf_sample(const struct prof_perf_rec *r, uint32_t vcpu, uint8_t event, struct prof_sample *s)
{
	memset(s, 0, offsetof(struct prof_sample, pc));
	s->vcpu = vcpu;
	s->event = event;
	s->depth = 1;
	switch (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_GUEST_USER:
		s->cpl = 3;
		s->pc[0] = r->value;
		break;
	case PERF_RECORD_MISC_GUEST_KERNEL:
		s->cpl = 0;
		s->pc[0] = r->value;
		break;
	case PERF_RECORD_MISC_USER:
		s->cpl = PROF_CPL_HOST;
		s->pc[0] = PROF_HOST_VMM;
		break;
	default: /* the host kernel, the hypervisor, unknown */
		s->cpl = PROF_CPL_HOST;
		s->pc[0] = PROF_HOST_KERNEL;
		break;
	}
}

/* ---- the ring ------------------------------------------------------------------------ */

int prof_ring_init(struct prof_ring *r)
{
	r->head = r->tail = 0;
	r->slot = calloc(PROF_RING_SIZE, sizeof(*r->slot));
	return r->slot ? 0 : -ENOMEM;
}

void prof_ring_fini(struct prof_ring *r)
{
	free(r->slot);
	r->slot = NULL;
}

bool prof_ring_push(struct prof_ring *r, const struct prof_sample *s)
{
	uint64_t head = r->head; /* only this thread writes it */
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	if (head - tail >= PROF_RING_SIZE)
		return false;
	r->slot[head & (PROF_RING_SIZE - 1)] = *s;
	__atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
	return true;
}

bool prof_ring_pop(struct prof_ring *r, struct prof_sample *s)
{
	uint64_t tail = r->tail;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	if (tail == head)
		return false;
	*s = r->slot[tail & (PROF_RING_SIZE - 1)];
	__atomic_store_n(&r->tail, tail + 1, __ATOMIC_RELEASE);
	return true;
}

/* ---- aggregation --------------------------------------------------------------------- */

int prof_data_init(struct prof_data *d, unsigned nr_vcpus, size_t cap)
{
	memset(d, 0, sizeof(*d));
	d->stacks = calloc(cap, sizeof(*d->stacks));
	if (!d->stacks)
		return -ENOMEM;
	d->cap = cap;
	d->nr_vcpus = nr_vcpus;
	return 0;
}

void prof_data_fini(struct prof_data *d)
{
	free(d->stacks);
	d->stacks = NULL;
	d->cap = d->n = 0;
}

static uint64_t stack_hash(const struct prof_sample *s)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)s->vcpu << 8 | s->cpl) ^
		     ((uint64_t)(uint32_t)s->pid << 32);

	for (unsigned i = 0; i < s->depth; i++) {
		h ^= s->pc[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

static bool same_stack(const struct prof_stack *st, const struct prof_sample *s)
{
	return st->vcpu == s->vcpu && st->cpl == s->cpl && st->depth == s->depth && st->pid == s->pid &&
	       !strncmp(st->comm, s->comm, PROF_COMM_LEN) &&
	       !memcmp(st->pc, s->pc, s->depth * sizeof(s->pc[0]));
}

void prof_data_add(struct prof_data *d, const struct prof_sample *s)
{
	size_t i;

	d->samples++;
	if (!d->cap || !s->depth || s->depth > PROF_MAX_DEPTH) {
		d->lost++;
		return;
	}
	i = stack_hash(s) % d->cap;
	for (size_t probe = 0; probe < d->cap; probe++, i = (i + 1) % d->cap) {
		struct prof_stack *st = &d->stacks[i];

		if (st->used && same_stack(st, s)) {
			st->count++;
			return;
		}
		if (st->used)
			continue;
		/* Keep a quarter free: probes stay short. */
		if (d->n >= d->cap - d->cap / 4)
			break;
		st->used = 1;
		st->vcpu = s->vcpu;
		st->cpl = s->cpl;
		st->depth = s->depth;
		st->truncated = (s->flags & PROF_SAMPLE_TRUNCATED) != 0;
		st->pid = s->pid;
		memcpy(st->comm, s->comm, PROF_COMM_LEN);
		st->comm[PROF_COMM_LEN - 1] = 0;
		memcpy(st->pc, s->pc, s->depth * sizeof(s->pc[0]));
		st->count = 1;
		d->n++;
		return;
	}
	d->lost++;
}

int prof_spec_check_host(const struct prof_spec *spec, struct errbuf *err)
{
	for (unsigned i = 0; i < spec->n; i++) {
		const struct pmu_event_info *ev = spec->e[i].ev;
		int rc = pmu_perf_probe(ev);

		if (!rc)
			continue;
		if (ev->cls == PV_PMU_CLASS_HW)
			return errbuf_set(
				err, -ENOTSUP,
				"--profile %s: this host has no hardware PMU (%s); use task-clock or "
				"cpu-clock",
				ev->name, strerror(-rc));
		return errbuf_set(err, rc, "--profile %s: the host refuses the counter (perf_event_open: %s)",
				  ev->name, strerror(-rc));
	}
	return 0;
}
