// SPDX-License-Identifier: MIT
/*
 * The profiler's output formats (docs/profiling.md): profile.json, the
 * canonical one, written at the end of a run; folded stacks and the
 * per-symbol table derived from it; `perfvisor profile report`.
 */
#include "pmu.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* 2: stacks with ring -1 (samples outside the guest, mode=leaf); 1 is read too */
#define PROF_JSON_VERSION 2

static json_t *frame_name(const struct prof_symtab *syms, uint8_t cpl, uint64_t pc, bool *unknown)
{
	const struct prof_sym *s = syms->n && cpl != PROF_CPL_HOST ? prof_symtab_find(syms, pc) : NULL;
	char buf[32];

	if (cpl == PROF_CPL_HOST)
		return json_string(pc == PROF_HOST_VMM ? "[vmm]" : "[host-kernel]");
	if (s)
		return json_string(s->name);
	*unknown = true;
	if (syms->n)
		return json_string("[unknown]");
	snprintf(buf, sizeof(buf), "0x%" PRIx64, pc);
	return json_string(buf);
}

/*
 * Add one stack, symbolized, to `stacks`; stacks whose frames name the same
 * symbols (other addresses in the same functions) are merged through
 * `seen` (key: vCPU, ring and frames).
 */
static int add_stack(json_t *stacks, json_t *seen, const struct prof_stack *st,
		     const struct prof_symtab *syms, uint64_t *unknown)
{
	json_t *frames = json_array(), *old;
	bool leaf_unknown = false;
	char key[PROF_MAX_DEPTH * 40 + 32];
	size_t at;

	if (!frames)
		return -ENOMEM;
	at = (size_t)snprintf(key, sizeof(key), "%u/%u/%d/%.16s", st->vcpu, st->cpl,
			      st->comm[0] ? st->pid : -1, st->comm);
	/* Outermost first, as folded stacks have them. */
	for (int i = st->depth - 1; i >= 0; i--) {
		bool u = false;
		json_t *f = frame_name(syms, st->cpl, st->pc[i], &u);

		if (i == 0)
			leaf_unknown = u;
		if (at < sizeof(key))
			at += (size_t)snprintf(key + at, sizeof(key) - at, ";%.32s", json_string_value(f));
		json_array_append_new(frames, f);
	}
	if (leaf_unknown)
		*unknown += st->count;
	old = json_object_get(seen, key);
	if (old) {
		json_t *c = json_object_get(old, "count");

		json_integer_set(c, json_integer_value(c) + (json_int_t)st->count);
		if (st->truncated)
			json_object_set_new(old, "truncated", json_true());
		json_decref(frames);
		return 0;
	}
	old = json_pack("{s:i, s:i, s:I, s:b, s:o}", "vcpu", (json_int_t)st->vcpu, "ring",
			st->cpl == PROF_CPL_HOST ? (json_int_t)-1 : (json_int_t)st->cpl, "count",
			(json_int_t)st->count, "truncated", st->truncated, "frames", frames);
	if (old && st->comm[0] &&
	    (json_object_set_new(old, "pid", json_integer((json_int_t)st->pid)) ||
	     json_object_set_new(old, "comm", json_stringn(st->comm, strnlen(st->comm, PROF_COMM_LEN)))))
		return -ENOMEM;
	if (!old || json_array_append(stacks, old) || json_object_set_new(seen, key, old))
		return -ENOMEM;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "count"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "count"));

	return x > y ? -1 : x < y;
}

/* The stacks, most frequent first. */
static json_t *sorted(json_t *stacks)
{
	size_t n = json_array_size(stacks);
	json_t **v = calloc(n ? n : 1, sizeof(*v)), *out = json_array();

	if (!v || !out) {
		free(v);
		json_decref(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(stacks, i);
	qsort(v, n, sizeof(*v), by_count);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	return out;
}

json_t *prof_to_json(const struct prof_data *d, const struct prof_meta *m)
{
	json_t *events = json_array(), *vcpus = json_array(), *stacks = json_array(), *seen = json_object();
	json_t *root, *ordered;
	uint64_t unknown = 0;
	int rc = 0;

	for (unsigned i = 0; i < m->spec->n; i++)
		json_array_append_new(events, json_pack("{s:s, s:I, s:s}", "name", m->spec->e[i].ev->name,
							"period", (json_int_t)m->spec->e[i].period, "unit",
							m->spec->e[i].ev->ns ? "ns" : "events"));
	for (unsigned i = 0; i < d->nr_vcpus; i++)
		json_array_append_new(
			vcpus, json_pack("{s:i, s:I, s:I, s:I, s:I}", "vcpu", (json_int_t)i, "samples",
					 (json_int_t)m->per_vcpu_samples[i], "dropped",
					 (json_int_t)m->per_vcpu_dropped[i], "throttled",
					 (json_int_t)m->per_vcpu_throttled[i], "sample_ns",
					 (json_int_t)(m->per_vcpu_sample_ns ? m->per_vcpu_sample_ns[i] : 0)));
	for (size_t i = 0; i < d->cap && !rc; i++)
		if (d->stacks[i].used)
			rc = add_stack(stacks, seen, &d->stacks[i], m->syms, &unknown);
	ordered = rc ? NULL : sorted(stacks);
	json_decref(stacks);
	json_decref(seen);
	if (!ordered) {
		json_decref(events);
		json_decref(vcpus);
		return NULL;
	}
	root = json_pack("{s:i, s:s, s:o, s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:o}", "version",
			 PROF_JSON_VERSION, "spec", m->spec->text, "events", events, "kernel",
			 m->kernel ? m->kernel : "", "symbols", m->syms->source, "duration_ns",
			 (json_int_t)m->duration_ns, "samples", (json_int_t)d->samples, "lost",
			 (json_int_t)d->lost, "unknown", (json_int_t)unknown, "vcpus", vcpus, "stacks",
			 ordered);
	/* A Linux guest: what the profile could read of it, and why not (docs/profiling.md). */
	if (root && m->linux_guest) {
		const struct prof_linux *lx = m->linux_guest;
		char procs[160], kstacks[160];

		snprintf(procs, sizeof(procs), "%s%s",
			 lx->tasks ? "from its BTF" : "not known: ", lx->tasks_why);
		snprintf(kstacks, sizeof(kstacks), "%s%s",
			 lx->n_orc ? "by its ORC tables" : "by frame pointers: ", lx->orc_why);
		json_object_set_new(root, "linux",
				    json_pack("{s:s, s:s, s:b}", "processes", procs, "kernel_stacks", kstacks,
					      "kaslr_slide_known",
					      __atomic_load_n(&m->syms->slide_known, __ATOMIC_ACQUIRE)));
	}
	return root;
}

static json_int_t jint(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

int prof_write_folded(FILE *out, const json_t *profile)
{
	const json_t *stacks = json_object_get(profile, "stacks"), *st;
	size_t i;

	if (!json_is_array(stacks))
		return -EINVAL;
	json_array_foreach(stacks, i, st)
	{
		const json_t *frames = json_object_get(st, "frames"), *f;
		size_t j;

		fprintf(out, "vcpu%lld", (long long)jint(st, "vcpu"));
		/* A Linux guest's process: COMM[PID] (docs/profiling.md). */
		if (json_is_string(json_object_get(st, "comm")))
			fprintf(out, ";%s[%lld]", json_string_value(json_object_get(st, "comm")),
				(long long)jint(st, "pid"));
		if (jint(st, "ring") < 0)
			fputs(";host", out);
		else
			fprintf(out, ";ring%lld", (long long)jint(st, "ring"));
		json_array_foreach(frames, j, f)
		{
			const char *name = json_string_value(f);

			/* ';' and ' ' separate frames and the count: never inside a name. */
			fputc(';', out);
			for (const char *c = name ? name : "?"; *c; c++)
				fputc(*c == ';' || *c == ' ' ? '_' : *c, out);
		}
		fprintf(out, " %lld\n", (long long)jint(st, "count"));
	}
	return ferror(out) ? -EIO : 0;
}

struct row {
	const char *name;
	uint64_t self, total;
	uint64_t *vself;	  /* per vCPU */
	const json_t *last_stack; /* counts a symbol once per stack in `total` */
};

struct table {
	struct row *rows;
	size_t n, cap;
	unsigned nr_vcpus;
	json_t *index; /* name -> row number: a Linux guest has thousands of symbols */
};

static struct row *row_get(struct table *t, const char *name)
{
	json_t *at;

	if (!t->index && !(t->index = json_object()))
		return NULL;
	at = json_object_get(t->index, name);
	if (at)
		return &t->rows[json_integer_value(at)];
	if (json_object_set_new(t->index, name, json_integer((json_int_t)t->n)))
		return NULL;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct row *r = realloc(t->rows, ncap * sizeof(*r));

		if (!r)
			return NULL;
		t->rows = r;
		t->cap = ncap;
	}
	t->rows[t->n] = (struct row){ .name = name, .vself = calloc(t->nr_vcpus ? t->nr_vcpus : 1, 8) };
	if (!t->rows[t->n].vself)
		return NULL;
	return &t->rows[t->n++];
}

static int by_self(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void table_free(struct table *t)
{
	for (size_t r = 0; r < t->n; r++)
		free(t->rows[r].vself);
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
	json_decref(t->index);
	t->index = NULL;
}

/*
 * Rows by symbol (self: the leaf; total: anywhere in the stack, once), most
 * self first; ring[0..3] the samples per guest ring, ring[4] outside the guest.
 */
static int table_build(const json_t *profile, struct table *t, uint64_t *total, uint64_t ring[5])
{
	const json_t *stacks = json_object_get(profile, "stacks"), *st;
	size_t i;

	memset(t, 0, sizeof(*t));
	t->nr_vcpus = (unsigned)json_array_size(json_object_get(profile, "vcpus"));
	*total = 0;
	if (!json_is_array(stacks))
		return -EINVAL;
	json_array_foreach(stacks, i, st)
	{
		const json_t *frames = json_object_get(st, "frames"), *f;
		uint64_t count = (uint64_t)jint(st, "count");
		unsigned vcpu = (unsigned)jint(st, "vcpu");
		size_t n = json_array_size(frames), j;

		*total += count;
		ring[jint(st, "ring") < 0 ? 4 : jint(st, "ring") & 3] += count;
		json_array_foreach(frames, j, f)
		{
			struct row *r = row_get(t, json_string_value(f) ? json_string_value(f) : "?");

			if (!r) {
				table_free(t);
				return -ENOMEM;
			}
			if (r->last_stack != st)
				r->total += count;
			r->last_stack = st;
			if (j == n - 1) {
				r->self += count;
				if (vcpu < t->nr_vcpus)
					r->vself[vcpu] += count;
			}
		}
	}
	if (t->n)
		qsort(t->rows, t->n, sizeof(t->rows[0]), by_self);
	return 0;
}

/* A Linux guest's line: where its processes and kernel stacks came from, or why not. */
static void write_linux_line(FILE *out, const json_t *profile)
{
	const json_t *lx = json_object_get(profile, "linux");
	const char *procs = json_string_value(json_object_get(lx, "processes"));
	const char *kstacks = json_string_value(json_object_get(lx, "kernel_stacks"));

	if (json_is_object(lx))
		fprintf(out, "linux guest: processes %s; kernel stacks %s\n", procs ? procs : "?",
			kstacks ? kstacks : "?");
}

int prof_write_table(FILE *out, const json_t *profile, unsigned top)
{
	uint64_t total, ring[5] = { 0 }, dropped = 0, throttled = 0;
	struct table t;
	const json_t *v;
	size_t i;
	int rc;

	rc = table_build(profile, &t, &total, ring);
	if (rc)
		return rc;
	json_array_foreach(json_object_get(profile, "vcpus"), i, v)
	{
		dropped += (uint64_t)jint(v, "dropped");
		throttled += (uint64_t)jint(v, "throttled");
	}
	fprintf(out,
		"profile: %" PRIu64 " samples (%s) on %u vCPUs; %" PRIu64 " dropped, %" PRIu64
		" throttled, %lld lost, %lld [unknown]; symbols: %s\n",
		total, json_string_value(json_object_get(profile, "spec")), t.nr_vcpus, dropped, throttled,
		(long long)jint(profile, "lost"), (long long)jint(profile, "unknown"),
		json_string_value(json_object_get(profile, "symbols")));
	fprintf(out, "ring 0: %" PRIu64 " samples (%.1f%%), ring 3: %" PRIu64 " samples (%.1f%%)", ring[0],
		pct(ring[0], total), ring[3], pct(ring[3], total));
	if (ring[4])
		fprintf(out, ", outside the guest: %" PRIu64 " samples (%.1f%%)", ring[4],
			pct(ring[4], total));
	fputc('\n', out);
	write_linux_line(out, profile);
	fprintf(out, "%9s %6s %9s %6s", "self", "self%", "total", "total%");
	for (unsigned c = 0; c < t.nr_vcpus; c++)
		fprintf(out, " %8s%-2u", "vcpu", c);
	fprintf(out, "  symbol\n");
	for (size_t r = 0; r < t.n && (!top || r < top); r++) {
		fprintf(out, "%9" PRIu64 " %5.1f%% %9" PRIu64 " %5.1f%%", t.rows[r].self,
			pct(t.rows[r].self, total), t.rows[r].total, pct(t.rows[r].total, total));
		for (unsigned c = 0; c < t.nr_vcpus; c++)
			fprintf(out, " %10" PRIu64, t.rows[r].vself[c]);
		fprintf(out, "  %s\n", t.rows[r].name);
	}
	rc = ferror(out) ? -EIO : 0;
	table_free(&t);
	return rc;
}

json_t *prof_top_json(const json_t *profile, unsigned top)
{
	uint64_t total, ring[5] = { 0 };
	json_t *rows = json_array();
	struct table t;

	if (!rows || table_build(profile, &t, &total, ring)) {
		json_decref(rows);
		return NULL;
	}
	for (size_t r = 0; r < t.n && r < top; r++) {
		json_t *per = json_array();

		for (unsigned c = 0; c < t.nr_vcpus; c++)
			json_array_append_new(per, json_integer((json_int_t)t.rows[r].vself[c]));
		json_array_append_new(rows, json_pack("{s:s, s:I, s:I, s:f, s:o}", "symbol", t.rows[r].name,
						      "self", (json_int_t)t.rows[r].self, "total",
						      (json_int_t)t.rows[r].total, "percent",
						      pct(t.rows[r].self, total), "vcpus", per));
	}
	table_free(&t);
	return rows;
}

/* A process of a Linux guest: its samples and its leaves' counts. */
struct proc_row {
	long long pid; /* -1: samples of no known process */
	const char *comm;
	uint64_t samples;
	struct table leaves;
};

static int by_samples(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void procs_free(struct proc_row *rows, size_t n)
{
	for (size_t k = 0; k < n; k++)
		table_free(&rows[k].leaves);
	free(rows);
}

/* The processes of a profile's stacks, most samples first, each with its leaves most first. */
static int procs_build(const json_t *profile, struct proc_row **out, size_t *nout, uint64_t *total)
{
	const json_t *stacks = json_object_get(profile, "stacks"), *st;
	struct proc_row *rows = NULL;
	size_t n = 0, i;

	*total = 0;
	if (!json_is_array(stacks))
		return -EINVAL;
	json_array_foreach(stacks, i, st)
	{
		const json_t *frames = json_object_get(st, "frames");
		const char *comm = json_string_value(json_object_get(st, "comm"));
		long long pid = comm ? (long long)jint(st, "pid") : -1;
		uint64_t count = (uint64_t)jint(st, "count");
		const char *leaf = json_string_value(json_array_get(frames, json_array_size(frames) - 1));
		struct proc_row *r = NULL;
		struct row *l;

		*total += count;
		for (size_t k = 0; k < n && !r; k++)
			if (rows[k].pid == pid && !strcmp(rows[k].comm, comm ? comm : "[no process]"))
				r = &rows[k];
		if (!r) {
			struct proc_row *g = realloc(rows, (n + 1) * sizeof(*rows));

			if (!g) {
				procs_free(rows, n);
				return -ENOMEM;
			}
			rows = g;
			r = &rows[n++];
			*r = (struct proc_row){ .pid = pid, .comm = comm ? comm : "[no process]" };
		}
		r->samples += count;
		l = row_get(&r->leaves, leaf ? leaf : "?");
		if (!l) {
			procs_free(rows, n);
			return -ENOMEM;
		}
		l->self += count;
	}
	if (n)
		qsort(rows, n, sizeof(*rows), by_samples);
	for (size_t k = 0; k < n; k++)
		if (rows[k].leaves.n)
			qsort(rows[k].leaves.rows, rows[k].leaves.n, sizeof(rows[k].leaves.rows[0]), by_self);
	*out = rows;
	*nout = n;
	return 0;
}

int prof_write_processes(FILE *out, const json_t *profile)
{
	struct proc_row *rows;
	size_t n;
	uint64_t total;
	int rc = procs_build(profile, &rows, &n, &total);

	if (rc)
		return rc;
	fprintf(out, "profile: %" PRIu64 " samples (%s) in %zu processes; symbols: %s\n", total,
		json_string_value(json_object_get(profile, "spec")), n,
		json_string_value(json_object_get(profile, "symbols")));
	write_linux_line(out, profile);
	fprintf(out, "%8s  %-16s %9s %6s  %s\n", "pid", "command", "samples", "share", "top symbol");
	for (size_t k = 0; k < n; k++) {
		const struct proc_row *r = &rows[k];

		if (r->pid < 0)
			fprintf(out, "%8s  %-16s", "-", r->comm);
		else
			fprintf(out, "%8lld  %-16s", r->pid, r->comm);
		fprintf(out, " %9" PRIu64 " %5.1f%%  %s (%.1f%%)\n", r->samples, pct(r->samples, total),
			r->leaves.n ? r->leaves.rows[0].name : "-",
			r->leaves.n ? pct(r->leaves.rows[0].self, r->samples) : 0.0);
	}
	procs_free(rows, n);
	return ferror(out) ? -EIO : 0;
}

json_t *prof_processes_json(const json_t *profile, unsigned top)
{
	struct proc_row *rows;
	size_t n;
	uint64_t total;
	json_t *out = json_array();

	if (!out || procs_build(profile, &rows, &n, &total)) {
		json_decref(out);
		return NULL;
	}
	for (size_t k = 0; k < n && k < top; k++) {
		const struct proc_row *r = &rows[k];

		json_array_append_new(out, json_pack("{s:I, s:s, s:I, s:f, s:s}", "pid", (json_int_t)r->pid,
						     "comm", r->comm, "samples", (json_int_t)r->samples,
						     "percent", pct(r->samples, total), "top_symbol",
						     r->leaves.n ? r->leaves.rows[0].name : "-"));
	}
	procs_free(rows, n);
	return out;
}

static const char profile_usage[] =
	"Usage: perfvisor profile report DIR [--folded|--top N|--json|--processes]\n"
	"Show a profile written by perfvisor run --profile (docs/profiling.md): by default the\n"
	"per-symbol table (self and total samples, percent, self samples per vCPU); --top N\n"
	"only its first N rows; --folded the folded stacks (flamegraph.pl, speedscope);\n"
	"--json the whole profile.json; --processes a Linux guest's processes (pid, command,\n"
	"samples, share, the top symbol and its share of the process).\n";

int prof_cmd_profile(int argc, char **argv)
{
	enum {
		TABLE,
		FOLDED,
		JSON,
		PROCESSES
	} mode = TABLE;
	uint64_t top = 0;
	char path[4200];
	json_error_t jerr;
	json_t *p;
	int rc;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(profile_usage, stdout);
		return 0;
	}
	if (argc < 3 || strcmp(argv[1], "report")) {
		fprintf(stderr, "perfvisor profile: needs 'report DIR' (see perfvisor profile --help)\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (mode != TABLE || top) {
			fprintf(stderr,
				"perfvisor profile report: give one of --folded, --top N, --json, --processes\n");
			return 2;
		}
		if (!strcmp(argv[i], "--folded")) {
			mode = FOLDED;
		} else if (!strcmp(argv[i], "--json")) {
			mode = JSON;
		} else if (!strcmp(argv[i], "--processes")) {
			mode = PROCESSES;
		} else if (!strcmp(argv[i], "--top") && i + 1 < argc) {
			if (util_parse_u64(argv[++i], 1, 1000000, &top)) {
				fprintf(stderr,
					"perfvisor profile report: --top needs a number from 1 to 1000000 (got '%s')\n",
					argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr,
				"perfvisor profile report: unknown argument '%s' (see perfvisor profile --help)\n",
				argv[i]);
			return 2;
		}
	}
	snprintf(path, sizeof(path), "%s/profile.json", argv[2]);
	p = json_load_file(path, 0, &jerr);
	if (!p) {
		fprintf(stderr, "perfvisor profile report: %s: %s\n", path, jerr.text);
		return 1;
	}
	if (jint(p, "version") < 1 || jint(p, "version") > PROF_JSON_VERSION ||
	    !json_is_array(json_object_get(p, "stacks"))) {
		fprintf(stderr, "perfvisor profile report: %s: not a perfvisor profile (version %lld)\n",
			path, (long long)jint(p, "version"));
		json_decref(p);
		return 1;
	}
	if (mode == JSON) {
		rc = json_dumpf(p, stdout, JSON_INDENT(1)) ? -EIO : 0;
		fputc('\n', stdout);
	} else if (mode == FOLDED)
		rc = prof_write_folded(stdout, p);
	else if (mode == PROCESSES)
		rc = prof_write_processes(stdout, p);
	else
		rc = prof_write_table(stdout, p, (unsigned)top);
	json_decref(p);
	if (rc) {
		fprintf(stderr, "perfvisor profile report: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}
