// SPDX-License-Identifier: MIT
/*
 * `perfvisor stat TARGET`: show a running VM's statistics from its region,
 * as a live top-like table with rates, one table (--once), one JSON object
 * (--json) or the Prometheus text exposition format (--prometheus).
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stats/stats.h"
#include "stats/tools_internal.h"

static const char stat_usage[] =
	"Usage: perfvisor stat TARGET [options]\n"
	"Show a running VM's statistics. TARGET is the VMM's process id or its control\n"
	"socket path (--api-socket). Without a format option, a table refreshes every\n"
	"interval with a row per vCPU and a TOTAL row; counters show their rate.\n"
	"\n"
	"Options:\n"
	"  --once              print one table and exit\n"
	"  --json              print one JSON object and exit\n"
	"  --prometheus        print the Prometheus text exposition format and exit\n"
	"  --interval SECONDS  refresh period of the live table (default 1, min 0.01)\n"
	"  --count N           stop the live table after N refreshes\n"
	"  --fields GLOB[,GLOB...]  only fields whose name matches (fnmatch)\n"
	"  --help              show this help\n";

enum stat_mode {
	MODE_LIVE,
	MODE_ONCE,
	MODE_JSON,
	MODE_PROM
};

struct stat_opts {
	const char *target;
	enum stat_mode mode;
	double interval;
	uint64_t count; /* 0: until interrupted */
	const char *fields;
	bool interval_set, count_set;
};

/* One consistent copy of every record: index 0 is the VM record, 1 + i is vCPU i. */
struct snap {
	uint64_t t_ns;
	uint64_t generation;
	unsigned online;
	uint64_t *vals;	 /* (1 + slots) * ndesc */
	uint32_t *state; /* 1 + slots */
	int *rc;	 /* 1 + slots: 0, -EBUSY */
};

struct stat_ctx {
	struct stats_view *v;
	pid_t pid;
	unsigned n, slots;
	bool *sel; /* per descriptor */
	struct snap cur, prev;
	bool have_prev;
};

__attribute__((format(printf, 1, 2))) static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("perfvisor stat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see perfvisor stat --help)\n", stderr);
	return 2;
}

static int parse_opts(int argc, char **argv, struct stat_opts *o)
{
	enum {
		O_ONCE = 256,
		O_JSON,
		O_PROM,
		O_INTERVAL,
		O_COUNT,
		O_FIELDS,
		O_HELP
	};
	static const struct option opts[] = {
		{ "once", no_argument, NULL, O_ONCE },
		{ "json", no_argument, NULL, O_JSON },
		{ "prometheus", no_argument, NULL, O_PROM },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "count", required_argument, NULL, O_COUNT },
		{ "fields", required_argument, NULL, O_FIELDS },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int opt;

	*o = (struct stat_opts){ .mode = MODE_LIVE, .interval = 1.0 };
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		enum stat_mode m = MODE_LIVE;

		switch (opt) {
		case O_ONCE:
			m = MODE_ONCE;
			break;
		case O_JSON:
			m = MODE_JSON;
			break;
		case O_PROM:
			m = MODE_PROM;
			break;
		case O_INTERVAL:
			errno = 0;
			o->interval = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o->interval) || o->interval < 0.01 ||
			    o->interval > 86400)
				return usage_err(
					"--interval '%s' is not a number of seconds in [0.01, 86400]",
					optarg);
			o->interval_set = true;
			continue;
		case O_COUNT:
			if (util_parse_u64(optarg, 1, UINT32_MAX, &o->count))
				return usage_err("--count '%s' is not a whole number >= 1", optarg);
			o->count_set = true;
			continue;
		case O_FIELDS:
			if (!*optarg)
				return usage_err("--fields needs a glob such as 'exits*'");
			o->fields = optarg;
			continue;
		case O_HELP:
			fputs(stat_usage, stdout);
			return 1;
		case ':':
			return usage_err("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_err("unknown option '%s'", argv[optind - 1]);
		}
		if (o->mode != MODE_LIVE && o->mode != m)
			return usage_err("choose one of --once, --json and --prometheus");
		o->mode = m;
	}
	if (argc - optind != 1)
		return usage_err("expected one TARGET (a PID or a control socket path)");
	o->target = argv[optind];
	if (o->mode != MODE_LIVE && (o->interval_set || o->count_set))
		return usage_err("--interval and --count apply to the live table only");
	return 0;
}

/* Mark the descriptors selected by a comma-separated glob list; returns how many. */
static unsigned select_fields(struct stat_ctx *c, const char *globs)
{
	unsigned i, nsel = 0;

	for (i = 0; i < c->n; i++) {
		const char *name = stats_view_desc(c->v, i)->name, *g = globs;

		c->sel[i] = !globs;
		while (g && !c->sel[i]) {
			const char *comma = strchr(g, ',');
			size_t len = comma ? (size_t)(comma - g) : strlen(g);
			char pat[256];

			if (len < sizeof(pat)) {
				memcpy(pat, g, len);
				pat[len] = 0;
				c->sel[i] = fnmatch(pat, name, 0) == 0;
			}
			g = comma ? comma + 1 : NULL;
		}
		nsel += c->sel[i];
	}
	return nsel;
}

static int snap_alloc(struct snap *s, unsigned slots, unsigned n)
{
	s->vals = calloc((size_t)(1 + slots) * (n ? n : 1), sizeof(*s->vals));
	s->state = calloc(1 + slots, sizeof(*s->state));
	s->rc = calloc(1 + slots, sizeof(*s->rc));
	return s->vals && s->state && s->rc ? 0 : -ENOMEM;
}

static void snap_free(struct snap *s)
{
	free(s->vals);
	free(s->state);
	free(s->rc);
}

static void take(struct stat_ctx *c, struct snap *s)
{
	unsigned i;

	s->generation = stats_view_header(c->v)->generation;
	s->online = stats_view_online(c->v);
	s->t_ns = util_now_ns();
	s->rc[0] = stats_view_read(c->v, PV_STATS_RECORD_VM, 0, s->vals, &s->state[0]);
	for (i = 0; i < s->online; i++)
		s->rc[1 + i] = stats_view_read(c->v, PV_STATS_RECORD_VCPU, i,
					       s->vals + (size_t)(1 + i) * c->n, &s->state[1 + i]);
}

static const char *state_name(int rc, uint32_t st)
{
	if (rc == -EBUSY)
		return "busy";
	switch (st) {
	case PV_STATS_OFFLINE:
		return "offline";
	case PV_STATS_ONLINE:
		return "online";
	case PV_STATS_STOPPED:
		return "stopped";
	}
	return "unknown";
}

static const char *kind_name(uint8_t k)
{
	return k == PV_STATS_CUMULATIVE ? "cumulative" : k == PV_STATS_PEAK ? "peak" : "instant";
}

static const char *unit_name(uint8_t u)
{
	static const char *const names[] = { "none", "bytes", "seconds", "cycles" };

	return u < sizeof(names) / sizeof(names[0]) ? names[u] : "unknown";
}

/* ---- table -------------------------------------------------------------- */

/* 10^e without libm */
static double pow10i(int e)
{
	double r = 1;

	for (; e > 0; e--)
		r *= 10;
	for (; e < 0; e++)
		r /= 10;
	return r;
}

static void fmt_rate(char *buf, size_t len, double r)
{
	static const char sfx[] = " kMGTP";
	unsigned i = 0;

	while ((r < 0 ? -r : r) >= 1000 && i < sizeof(sfx) - 2) {
		r /= 1000;
		i++;
	}
	snprintf(buf, len, i ? "%.1f%c/s" : "%.0f/s", r, sfx[i]);
}

/* One cell: the value, and for a counter its rate since the previous sample. */
static void fmt_cell(struct stat_ctx *c, char *buf, size_t len, unsigned d, uint64_t now, bool has_prev,
		     uint64_t before)
{
	char rate[32];
	double dt = (double)(c->cur.t_ns - c->prev.t_ns) / 1e9;

	if (stats_view_desc(c->v, d)->kind != PV_STATS_CUMULATIVE || !has_prev || dt <= 0) {
		snprintf(buf, len, "%llu", (unsigned long long)now);
		return;
	}
	if (stats_view_desc(c->v, d)->unit == PV_STATS_UNIT_SECONDS) /* time per second: a share */
		snprintf(rate, sizeof(rate), "%.1f%%",
			 100 * (double)(now - before) * pow10i(stats_view_desc(c->v, d)->scale) / dt);
	else
		fmt_rate(rate, sizeof(rate), (double)(now - before) / dt);
	snprintf(buf, len, "%llu (%s)", (unsigned long long)now, rate);
}

#define CELL_MAX 48

static void print_table(struct stat_ctx *c)
{
	const struct pv_stats_header *h = stats_view_header(c->v);
	const struct snap *s = &c->cur;
	unsigned rows = s->online + 1, cols = 0, d, r, col;
	unsigned *colw = calloc(c->n + 1, sizeof(unsigned)), *cold = calloc(c->n + 1, sizeof(unsigned));
	char *cells = calloc((size_t)(rows + 1) * (c->n + 1), CELL_MAX);

	if (!colw || !cold || !cells) {
		fputs("perfvisor stat: out of memory\n", stderr);
		goto out;
	}
	printf("perfvisor stat: pid %d  generation %llu  vcpus %u/%u", (int)c->pid,
	       (unsigned long long)s->generation, s->online, h->vcpu.slots);
	if (h->start_time_ns && s->t_ns > h->start_time_ns)
		printf("  uptime %.1fs", (double)(s->t_ns - h->start_time_ns) / 1e9);
	printf("\nvm (%s):", state_name(s->rc[0], s->state[0]));
	for (d = 0; d < c->n; d++)
		if (c->sel[d] && stats_view_desc(c->v, d)->record == PV_STATS_RECORD_VM && s->rc[0] == 0)
			printf(" %s=%llu", stats_view_desc(c->v, d)->name, (unsigned long long)s->vals[d]);
	putchar('\n');

	for (d = 0; d < c->n; d++)
		if (c->sel[d] && stats_view_desc(c->v, d)->record == PV_STATS_RECORD_VCPU)
			cold[cols++] = d;
	if (!cols)
		goto out;
	/* cells[row][col]: row 0 the vCPUs..., row `online` the TOTAL */
	for (col = 0; col < cols; col++) {
		uint64_t tot = 0, tot_prev = 0;
		bool all_prev = c->have_prev;

		d = cold[col];
		colw[col] = (unsigned)strlen(stats_view_desc(c->v, d)->name);
		for (r = 0; r <= s->online; r++) {
			char *cell = cells + ((size_t)r * cols + col) * CELL_MAX;
			bool has_prev = c->have_prev && r < c->prev.online && c->prev.rc[1 + r] == 0;

			if (r == s->online) {
				if (stats_view_desc(c->v, d)->kind == PV_STATS_CUMULATIVE)
					fmt_cell(c, cell, CELL_MAX, d, tot, all_prev, tot_prev);
			} else if (s->rc[1 + r]) {
				snprintf(cell, CELL_MAX, "busy");
				all_prev = false;
			} else {
				uint64_t now = s->vals[(size_t)(1 + r) * c->n + d];
				uint64_t before = has_prev ? c->prev.vals[(size_t)(1 + r) * c->n + d] : 0;

				fmt_cell(c, cell, CELL_MAX, d, now, has_prev, before);
				tot += now;
				tot_prev += before;
				all_prev &= has_prev;
			}
			if (strlen(cell) > colw[col])
				colw[col] = (unsigned)strlen(cell);
		}
	}
	printf("%-6s %-8s", "VCPU", "STATE");
	for (col = 0; col < cols; col++)
		printf("  %*s", (int)colw[col], stats_view_desc(c->v, cold[col])->name);
	putchar('\n');
	for (r = 0; r <= s->online; r++) {
		if (r < s->online)
			printf("%-6u %-8s", r, state_name(s->rc[1 + r], s->state[1 + r]));
		else
			printf("%-6s %-8s", "TOTAL", "");
		for (col = 0; col < cols; col++)
			printf("  %*s", (int)colw[col], cells + ((size_t)r * cols + col) * CELL_MAX);
		putchar('\n');
	}
out:
	fflush(stdout);
	free(colw);
	free(cold);
	free(cells);
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *json_u64(uint64_t v)
{
	return v <= INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

static int print_json(struct stat_ctx *c)
{
	const struct snap *s = &c->cur;
	json_t *root = json_object(), *vm = json_object(), *vcpus = json_array(), *fields = json_array();
	unsigned d, i;
	int rc = 0;

	if (!root || !vm || !vcpus || !fields) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_set_new(root, "pid", json_integer(c->pid));
	json_object_set_new(root, "generation", json_u64(s->generation));
	json_object_set_new(vm, "state", json_string(state_name(s->rc[0], s->state[0])));
	for (i = 0; i < s->online; i++) {
		json_t *e = json_object();

		json_object_set_new(e, "index", json_integer(i));
		json_object_set_new(e, "state", json_string(state_name(s->rc[1 + i], s->state[1 + i])));
		json_array_append_new(vcpus, e);
	}
	for (d = 0; d < c->n; d++) {
		const struct pv_stats_desc *dd = stats_view_desc(c->v, d);
		bool is_vm = dd->record == PV_STATS_RECORD_VM;

		if (!c->sel[d])
			continue;
		json_array_append_new(fields,
				      json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", dd->name, "record",
						is_vm ? "vm" : "vcpu", "kind", kind_name(dd->kind), "unit",
						unit_name(dd->unit), "scale", (int)dd->scale));
		if (is_vm) {
			if (s->rc[0] == 0)
				json_object_set_new(vm, dd->name, json_u64(s->vals[d]));
			continue;
		}
		for (i = 0; i < s->online; i++)
			if (s->rc[1 + i] == 0)
				json_object_set_new(json_array_get(vcpus, i), dd->name,
						    json_u64(s->vals[(size_t)(1 + i) * c->n + d]));
	}
	json_object_set_new(root, "vm", vm);
	json_object_set_new(root, "vcpus", vcpus);
	json_object_set_new(root, "fields", fields);
	vm = vcpus = fields = NULL;
	if (json_dumpf(root, stdout, JSON_COMPACT) < 0)
		rc = -EIO;
	putchar('\n');
out:
	json_decref(root);
	json_decref(vm);
	json_decref(vcpus);
	json_decref(fields);
	return rc;
}

/* ---- Prometheus ------------------------------------------------------------ */

/* perfvisor_<name> for vCPU fields, perfvisor_vm_<name> for the VM record's (so sums never mix). */
static void prom_name(char *buf, size_t len, const struct pv_stats_desc *d)
{
	char *p;

	snprintf(buf, len, "perfvisor_%s%s", d->record == PV_STATS_RECORD_VM ? "vm_" : "", d->name);
	for (p = buf; *p; p++)
		if (*p == '.')
			*p = '_';
}

static void print_prometheus(struct stat_ctx *c)
{
	const struct snap *s = &c->cur;
	char name[PV_STATS_NAME_MAX + 20], other[PV_STATS_NAME_MAX + 20];
	unsigned d, e, i;

	for (i = 0; i < s->online; i++)
		if (s->rc[1 + i])
			printf("# vcpu %u busy: its samples are left out\n", i);
	for (d = 0; d < c->n; d++) {
		const struct pv_stats_desc *dd = stats_view_desc(c->v, d);
		bool first = true;

		if (!c->sel[d])
			continue;
		prom_name(name, sizeof(name), dd);
		/* a metric's samples must follow its TYPE: group the records' fields of one name */
		for (e = 0; e < d && first; e++) {
			prom_name(other, sizeof(other), stats_view_desc(c->v, e));
			first = !(c->sel[e] && !strcmp(name, other));
		}
		if (!first)
			continue;
		printf("# HELP %s perfvisor %s field %s (%s, unit %s, scale 10^%d)\n", name,
		       dd->record == PV_STATS_RECORD_VM ? "VM" : "vCPU", dd->name, kind_name(dd->kind),
		       unit_name(dd->unit), dd->scale);
		printf("# TYPE %s %s\n", name, dd->kind == PV_STATS_CUMULATIVE ? "counter" : "gauge");
		for (e = d; e < c->n; e++) {
			const struct pv_stats_desc *ed = stats_view_desc(c->v, e);

			prom_name(other, sizeof(other), ed);
			if (!c->sel[e] || strcmp(name, other))
				continue;
			if (ed->record == PV_STATS_RECORD_VM) {
				if (s->rc[0] == 0)
					printf("%s{vm=\"%d\"} %llu\n", name, (int)c->pid,
					       (unsigned long long)s->vals[e]);
				continue;
			}
			for (i = 0; i < s->online; i++)
				if (s->rc[1 + i] == 0)
					printf("%s{vm=\"%d\",vcpu=\"%u\"} %llu\n", name, (int)c->pid, i,
					       (unsigned long long)s->vals[(size_t)(1 + i) * c->n + e]);
		}
	}
}

/* ---- the command ------------------------------------------------------------ */

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int run(struct stat_ctx *c, const struct stat_opts *o)
{
	bool tty = isatty(STDOUT_FILENO);
	uint64_t k;
	struct snap t;

	take(c, &c->cur);
	switch (o->mode) {
	case MODE_JSON:
		return print_json(c) ? 1 : 0;
	case MODE_PROM:
		print_prometheus(c);
		return 0;
	case MODE_ONCE:
		print_table(c);
		return 0;
	case MODE_LIVE:
		break;
	}
	for (k = 1;; k++) {
		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (k > 1)
			putchar('\n');
		print_table(c);
		if (o->count && k >= o->count)
			return 0;
		sleep_s(o->interval);
		t = c->prev;
		c->prev = c->cur;
		c->cur = t;
		c->have_prev = true;
		take(c, &c->cur);
	}
}

int stats_cmd_stat(int argc, char **argv)
{
	struct stat_ctx c = { 0 };
	struct stat_opts o;
	struct errbuf err = { "" };
	int fd, rc;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	fd = stats_target_fd(o.target, &c.pid, &err);
	if (fd < 0) {
		fprintf(stderr, "perfvisor stat: %s\n", err.msg);
		return 1;
	}
	rc = stats_view_open_fd(&c.v, fd, &err);
	close(fd);
	if (rc) {
		fprintf(stderr, "perfvisor stat: %s: %s\n", o.target, err.msg);
		return 1;
	}
	if (!c.pid)
		c.pid = (pid_t)stats_view_header(c.v)->producer_pid;
	c.n = stats_view_ndesc(c.v);
	c.slots = stats_view_header(c.v)->vcpu.slots;
	c.sel = calloc(c.n ? c.n : 1, sizeof(bool));
	if (!c.sel || snap_alloc(&c.cur, c.slots, c.n) || snap_alloc(&c.prev, c.slots, c.n)) {
		fputs("perfvisor stat: out of memory\n", stderr);
		rc = 1;
	} else if (o.fields && !select_fields(&c, o.fields)) {
		rc = usage_err("--fields '%s' matches no field of this VM", o.fields);
	} else {
		if (!o.fields)
			select_fields(&c, NULL);
		rc = run(&c, &o);
	}
	snap_free(&c.cur);
	snap_free(&c.prev);
	free(c.sel);
	stats_view_close(c.v);
	return rc;
}
