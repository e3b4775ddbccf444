// SPDX-License-Identifier: MIT
/*
 * The Prometheus text exposition format (version 0.0.4) of one or more VMs'
 * snapshots: the one writer behind `perfvisor stat --prometheus` and the
 * `perfvisor exporter` endpoint. Field names become metric names in base
 * units (nanoseconds become seconds), counters end in _total, and every
 * sample carries vm, name and vcpu labels (docs/stats-abi.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"

#define PROM_NAME_MAX (PV_STATS_NAME_MAX + 40)

/* One field of one VM, under its metric name. */
struct prom_entry {
	char name[PROM_NAME_MAX];
	unsigned vm, desc;
	uint8_t record, kind;
};

static const char *unit_word(uint8_t unit)
{
	switch (unit) {
	case PV_STATS_UNIT_BYTES:
		return "bytes";
	case PV_STATS_UNIT_SECONDS:
		return "seconds";
	case PV_STATS_UNIT_CYCLES:
		return "cycles";
	default:
		return NULL;
	}
}

/* Does `name` hold the word `w` as a whole _-separated token? Returns where, or NULL. */
static char *find_token(char *name, const char *w)
{
	size_t n = strlen(w);

	for (char *p = strchr(name, '_'); p; p = strchr(p + 1, '_'))
		if (!strncmp(p + 1, w, n) && (p[1 + n] == '_' || p[1 + n] == '\0'))
			return p;
	return NULL;
}

/* Append `_w` unless the name already ends so. */
static void append_word(char *buf, size_t len, const char *w)
{
	size_t n = strlen(buf), k = strlen(w);

	if (n > k && buf[n - k - 1] == '_' && !strcmp(buf + n - k, w))
		return;
	snprintf(buf + n, len - n, "_%s", w);
}

/*
 * perfvisor_[vm_]<name>, dots as underscores, in base units: a time in ns
 * ("_ns", scale -9) becomes "_seconds"; a unit the name does not say is
 * appended; a counter ends in _total.
 */
static void prom_name(char *buf, size_t len, const struct pv_stats_desc *d)
{
	const char *unit = unit_word(d->unit);
	char *p;

	snprintf(buf, len, "perfvisor_%s%s", d->record == PV_STATS_RECORD_VM ? "vm_" : "", d->name);
	for (p = buf; *p; p++)
		if (*p == '.')
			*p = '_';
	if (d->unit == PV_STATS_UNIT_SECONDS && d->scale == -9 && (p = find_token(buf, "ns"))) {
		char rest[PROM_NAME_MAX];

		snprintf(rest, sizeof(rest), "%s", p + 3);
		snprintf(p, len - (size_t)(p - buf), "_seconds%s", rest);
	}
	if (unit && !find_token(buf, unit))
		append_word(buf, len, unit);
	if (d->kind == PV_STATS_CUMULATIVE)
		append_word(buf, len, "total");
}

/* v * 10^scale as an exact decimal (a float only past 19 digits of scale). */
static void prom_value(char *buf, size_t len, uint64_t v, int scale)
{
	uint64_t p = 1;
	int i;

	if (scale == 0 || v == 0) {
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return;
	}
	if (scale > 0) {
		int n = snprintf(buf, len, "%llu", (unsigned long long)v);

		for (i = 0; i < scale && (size_t)n + 1 < len; i++)
			buf[n++] = '0';
		buf[n] = '\0';
		return;
	}
	if (scale < -19) {
		double x = (double)v;

		for (i = 0; i > scale; i--)
			x /= 10;
		snprintf(buf, len, "%.17g", x);
		return;
	}
	for (i = 0; i > scale; i--)
		p *= 10;
	snprintf(buf, len, "%llu.%0*llu", (unsigned long long)(v / p), -scale, (unsigned long long)(v % p));
}

/* A label value in the exposition format: backslash, quote and newline escaped. */
static void put_label(FILE *out, const char *key, const char *val)
{
	fprintf(out, "%s=\"", key);
	for (; *val; val++) {
		if (*val == '\\' || *val == '"')
			fputc('\\', out);
		if (*val == '\n')
			fputs("\\n", out);
		else
			fputc(*val, out);
	}
	fputc('"', out);
}

static const char *kind_word(uint8_t k)
{
	return k == PV_STATS_CUMULATIVE ? "cumulative" : k == PV_STATS_PEAK ? "peak" : "instant";
}

static int cmp_entry(const void *a, const void *b)
{
	const struct prom_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->vm != y->vm)
		return x->vm < y->vm ? -1 : 1;
	if (x->record != y->record)
		return x->record < y->record ? -1 : 1;
	return x->desc < y->desc ? -1 : x->desc > y->desc;
}

/* The samples of entry e: one for the VM record, one per readable vCPU. */
static void put_samples(FILE *out, const struct stats_prom_vm *vm, const struct prom_entry *e)
{
	const struct pv_stats_desc *d = stats_view_desc(vm->v, e->desc);
	unsigned n = e->record == PV_STATS_RECORD_VM ? 1 : stats_snap_online(vm->s);
	char val[48], idx[16];

	for (unsigned i = 0; i < n; i++) {
		if (stats_snap_status(vm->s, e->record, i, NULL))
			continue; /* busy: said in a comment above */
		snprintf(idx, sizeof(idx), "%d", (int)vm->pid);
		fputs(e->name, out);
		fputc('{', out);
		put_label(out, "vm", idx);
		if (vm->name && vm->name[0]) {
			fputc(',', out);
			put_label(out, "name", vm->name);
		}
		if (e->record == PV_STATS_RECORD_VCPU) {
			snprintf(idx, sizeof(idx), "%u", i);
			fputc(',', out);
			put_label(out, "vcpu", idx);
		}
		prom_value(val, sizeof(val), stats_snap_live(vm->s, e->desc, i), d->scale);
		fprintf(out, "} %s\n", val);
	}
}

static void put_busy_comments(FILE *out, const struct stats_prom_vm *vm)
{
	if (stats_snap_status(vm->s, PV_STATS_RECORD_VM, 0, NULL) == -EBUSY)
		fprintf(out, "# vm %d: its VM record is busy: its samples are left out\n", (int)vm->pid);
	for (unsigned i = 0; i < stats_snap_online(vm->s); i++)
		if (stats_snap_status(vm->s, PV_STATS_RECORD_VCPU, i, NULL) == -EBUSY)
			fprintf(out, "# vm %d vcpu %u busy: its samples are left out\n", (int)vm->pid, i);
}

int stats_prom_write(FILE *out, const struct stats_prom_vm *vms, unsigned nvms)
{
	struct prom_entry *e;
	size_t n = 0, cap = 0, i;

	for (unsigned k = 0; k < nvms; k++)
		cap += stats_view_ndesc(vms[k].v);
	e = calloc(cap ? cap : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (unsigned k = 0; k < nvms; k++) {
		put_busy_comments(out, &vms[k]);
		for (unsigned d = 0; d < stats_view_ndesc(vms[k].v); d++) {
			const struct pv_stats_desc *dd = stats_view_desc(vms[k].v, d);

			if (vms[k].sel && !vms[k].sel[d])
				continue;
			prom_name(e[n].name, sizeof(e[n].name), dd);
			e[n].vm = k;
			e[n].desc = d;
			e[n].record = dd->record;
			e[n].kind = dd->kind;
			n++;
		}
	}
	/* A metric's samples follow its one HELP and TYPE: group every VM's fields of one name. */
	qsort(e, n, sizeof(*e), cmp_entry);
	for (i = 0; i < n; i++) {
		const struct pv_stats_desc *d = stats_view_desc(vms[e[i].vm].v, e[i].desc);
		bool first = i == 0 || strcmp(e[i].name, e[i - 1].name);
		const struct prom_entry *head = &e[i];

		if (first) {
			fprintf(out, "# HELP %s perfvisor %s field %s (%s%s%s)\n", e[i].name,
				d->record == PV_STATS_RECORD_VM ? "VM" : "vCPU", d->name, kind_word(d->kind),
				unit_word(d->unit) ? ", in " : "",
				unit_word(d->unit) ? unit_word(d->unit) : "");
			fprintf(out, "# TYPE %s %s\n", e[i].name,
				d->kind == PV_STATS_CUMULATIVE ? "counter" : "gauge");
		} else {
			while (head > e && !strcmp(head[-1].name, e[i].name))
				head--;
			/* Two fields that map to one series, or a kind that differs between VMs: keep the first. */
			if ((e[i - 1].vm == e[i].vm && e[i - 1].record == e[i].record) ||
			    (e[i].kind == PV_STATS_CUMULATIVE) != (head->kind == PV_STATS_CUMULATIVE)) {
				fprintf(out,
					"# vm %d field %s left out: it would repeat or change the type of %s\n",
					(int)vms[e[i].vm].pid, d->name, e[i].name);
				continue;
			}
		}
		put_samples(out, &vms[e[i].vm], &e[i]);
	}
	free(e);
	return ferror(out) ? -EIO : 0;
}
