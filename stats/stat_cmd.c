// SPDX-License-Identifier: MIT
/*
 * `perfvisor stat TARGET`: show a running VM's statistics from its region,
 * as a live top-like table with rates, JSON (one object, or one per line
 * every interval) or the Prometheus text exposition format. Every output
 * is made from whole-region snapshots (stats_snap_take).
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
	"Output ends by itself once the VM has stopped (its last values are shown).\n"
	"\n"
	"Options:\n"
	"  --once              one sample, then exit (a table, or with --json one object)\n"
	"  --json              JSON: one object and exit; with --interval or --count one\n"
	"                      object per line per interval (NDJSON)\n"
	"  --prometheus        one sample in the Prometheus text exposition format\n"
	"  --interval SECONDS  period of the live table or the JSON stream (default 1, min 0.01)\n"
	"  --count N           stop after N samples\n"
	"  --fields GLOB[,GLOB...]  only fields whose name matches (fnmatch)\n"
	"  --profile-top N     with a control socket TARGET and the table: below it, the top N\n"
	"                      symbols of the VM's profile (perfvisor run --profile; docs/profiling.md),\n"
	"                      and of a Linux guest the top N processes\n"
	"  --help              show this help\n";

enum stat_format {
	FMT_TABLE,
	FMT_JSON,
	FMT_PROM
};

struct stat_opts {
	const char *target;
	enum stat_format format;
	bool once;
	double interval;
	uint64_t count; /* samples; 0: until the VM stops or we are interrupted */
	const char *fields;
	bool interval_set, count_set;
	uint64_t profile_top; /* 0: no profile rows */
};

struct stat_ctx {
	struct stats_view *v;
	pid_t pid;
	unsigned n;
	bool *sel; /* per descriptor */
	struct stats_snap *cur, *prev;
	bool have_prev;
	char name[PV_STATS_VM_NAME_MAX]; /* from the header; "" if none or not valid */
};

#define usage_err(...) stats_usage_err("stat", __VA_ARGS__)

/* How many samples the options ask for (0 = until the VM stops), or a usage error. */
static int check_combination(struct stat_opts *o)
{
	bool repeat = o->interval_set || o->count_set;

	if (o->once && repeat)
		return usage_err("--once takes one sample: it does not go with --interval or --count");
	if (o->format == FMT_PROM && repeat)
		return usage_err("--prometheus prints one sample: --interval and --count do not apply "
				 "(perfvisor exporter serves it over HTTP)");
	if (o->once || (o->format != FMT_TABLE && !repeat))
		o->count = 1;
	return 0;
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
		O_HELP,
		O_PROFILE_TOP
	};
	static const struct option opts[] = {
		{ "once", no_argument, NULL, O_ONCE },
		{ "json", no_argument, NULL, O_JSON },
		{ "prometheus", no_argument, NULL, O_PROM },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "count", required_argument, NULL, O_COUNT },
		{ "fields", required_argument, NULL, O_FIELDS },
		{ "help", no_argument, NULL, O_HELP },
		{ "profile-top", required_argument, NULL, O_PROFILE_TOP },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int opt;

	*o = (struct stat_opts){ .format = FMT_TABLE, .interval = 1.0 };
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		enum stat_format f;

		switch (opt) {
		case O_ONCE:
			o->once = true;
			continue;
		case O_JSON:
			f = FMT_JSON;
			break;
		case O_PROM:
			f = FMT_PROM;
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
		case O_PROFILE_TOP:
			if (util_parse_u64(optarg, 1, 100, &o->profile_top))
				return usage_err("--profile-top '%s' is not a number from 1 to 100", optarg);
			continue;
		case O_HELP:
			fputs(stat_usage, stdout);
			return 1;
		case ':':
			return usage_err("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_err("unknown option '%s'", argv[optind - 1]);
		}
		if (o->format != FMT_TABLE && o->format != f)
			return usage_err("choose one of --json and --prometheus");
		o->format = f;
	}
	if (argc - optind != 1)
		return usage_err("expected one TARGET (a PID or a control socket path)");
	o->target = argv[optind];
	if (o->profile_top && o->format != FMT_TABLE)
		return usage_err("--profile-top goes with the table, not --json or --prometheus");
	if (o->profile_top && o->target[strspn(o->target, "0123456789")] == '\0')
		return usage_err(
			"--profile-top needs a control socket TARGET (the profile is asked for there)");
	return check_combination(o);
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

/* "online", "busy", ... for record idx of `record` kind in snapshot s. */
static const char *state_name(const struct stats_snap *s, enum pv_stats_record record, unsigned idx)
{
	uint32_t st = 0;
	int rc = stats_snap_status(s, record, idx, &st);

	if (rc == -EBUSY)
		return "busy";
	if (rc)
		return "absent";
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
	const struct pv_stats_desc *dd = stats_view_desc(c->v, d);
	double dt = (double)(stats_snap_time(c->cur) - stats_snap_time(c->prev)) / 1e9;
	char rate[32];

	if (dd->kind != PV_STATS_CUMULATIVE || !has_prev || dt <= 0) {
		snprintf(buf, len, "%llu", (unsigned long long)now);
		return;
	}
	if (dd->unit == PV_STATS_UNIT_SECONDS) /* time per second: a share */
		snprintf(rate, sizeof(rate), "%.1f%%", 100 * (double)(now - before) * pow10i(dd->scale) / dt);
	else
		fmt_rate(rate, sizeof(rate), (double)(now - before) / dt);
	snprintf(buf, len, "%llu (%s)", (unsigned long long)now, rate);
}

#define CELL_MAX 48

/* The cells of column d: one per vCPU, then the TOTAL; returns the column's width. */
static unsigned fill_column(struct stat_ctx *c, unsigned d, char *cells, unsigned stride)
{
	const struct stats_snap *s = c->cur, *p = c->prev;
	unsigned online = stats_snap_online(s), r, w = (unsigned)strlen(stats_view_desc(c->v, d)->name);
	uint64_t tot = 0, tot_prev = 0;
	bool all_prev = c->have_prev;

	for (r = 0; r <= online; r++) {
		char *cell = cells + (size_t)r * stride * CELL_MAX;
		bool has_prev = c->have_prev && r < stats_snap_online(p) &&
				!stats_snap_status(p, PV_STATS_RECORD_VCPU, r, NULL);

		if (r == online) {
			if (stats_view_desc(c->v, d)->kind == PV_STATS_CUMULATIVE)
				fmt_cell(c, cell, CELL_MAX, d, tot, all_prev, tot_prev);
		} else if (stats_snap_status(s, PV_STATS_RECORD_VCPU, r, NULL)) {
			snprintf(cell, CELL_MAX, "busy");
			all_prev = false;
		} else {
			uint64_t now = stats_snap_live(s, d, r),
				 before = has_prev ? stats_snap_live(p, d, r) : 0;

			fmt_cell(c, cell, CELL_MAX, d, now, has_prev, before);
			tot += now;
			tot_prev += before;
			all_prev &= has_prev;
		}
		if (strlen(cell) > w)
			w = (unsigned)strlen(cell);
	}
	return w;
}

static void print_table(struct stat_ctx *c)
{
	const struct pv_stats_header *h = stats_view_header(c->v);
	const struct stats_snap *s = c->cur;
	unsigned online = stats_snap_online(s), cols = 0, d, r, col;
	unsigned *colw = calloc(c->n + 1, sizeof(unsigned)), *cold = calloc(c->n + 1, sizeof(unsigned));
	char *cells = calloc((size_t)(online + 1) * (c->n + 1), CELL_MAX);

	if (!colw || !cold || !cells) {
		fputs("perfvisor stat: out of memory\n", stderr);
		goto out;
	}
	printf("perfvisor stat: pid %d%s%s  generation %llu  vcpus %u/%u", (int)c->pid,
	       c->name[0] ? "  name " : "", c->name, (unsigned long long)stats_snap_generation(s), online,
	       h->vcpu.slots);
	if (h->start_time_ns && stats_snap_time(s) > h->start_time_ns)
		printf("  uptime %.1fs", (double)(stats_snap_time(s) - h->start_time_ns) / 1e9);
	printf("\nvm (%s):", state_name(s, PV_STATS_RECORD_VM, 0));
	for (d = 0; d < c->n; d++)
		if (c->sel[d] && stats_view_desc(c->v, d)->record == PV_STATS_RECORD_VM &&
		    !stats_snap_status(s, PV_STATS_RECORD_VM, 0, NULL))
			printf(" %s=%llu", stats_view_desc(c->v, d)->name,
			       (unsigned long long)stats_snap_live(s, d, 0));
	putchar('\n');

	for (d = 0; d < c->n; d++)
		if (c->sel[d] && stats_view_desc(c->v, d)->record == PV_STATS_RECORD_VCPU)
			cold[cols++] = d;
	if (!cols)
		goto out;
	/* cells[row][col]: rows 0 .. online-1 the vCPUs, row `online` the TOTAL */
	for (col = 0; col < cols; col++)
		colw[col] = fill_column(c, cold[col], cells + (size_t)col * CELL_MAX, cols);
	printf("%-6s %-8s", "VCPU", "STATE");
	for (col = 0; col < cols; col++)
		printf("  %*s", (int)colw[col], stats_view_desc(c->v, cold[col])->name);
	putchar('\n');
	for (r = 0; r <= online; r++) {
		if (r < online)
			printf("%-6u %-8s", r, state_name(s, PV_STATS_RECORD_VCPU, r));
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

/* One sample as one JSON object on one line (docs/stats-abi.md "perfvisor stat --json"). */
static int print_json(struct stat_ctx *c)
{
	const struct stats_snap *s = c->cur;
	json_t *root = json_object(), *vm = json_object(), *vcpus = json_array(), *fields = json_array();
	unsigned d, i, online = stats_snap_online(s);
	int rc = 0;

	if (!root || !vm || !vcpus || !fields) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_set_new(root, "pid", json_integer(c->pid));
	json_object_set_new(root, "name", json_string(c->name));
	json_object_set_new(root, "time_ns", json_u64(stats_snap_time(s)));
	json_object_set_new(root, "generation", json_u64(stats_snap_generation(s)));
	json_object_set_new(vm, "state", json_string(state_name(s, PV_STATS_RECORD_VM, 0)));
	for (i = 0; i < online; i++) {
		json_t *e = json_object();

		json_object_set_new(e, "index", json_integer(i));
		json_object_set_new(e, "state", json_string(state_name(s, PV_STATS_RECORD_VCPU, i)));
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
			if (!stats_snap_status(s, PV_STATS_RECORD_VM, 0, NULL))
				json_object_set_new(vm, dd->name, json_u64(stats_snap_live(s, d, 0)));
			continue;
		}
		for (i = 0; i < online; i++)
			if (!stats_snap_status(s, PV_STATS_RECORD_VCPU, i, NULL))
				json_object_set_new(json_array_get(vcpus, i), dd->name,
						    json_u64(stats_snap_live(s, d, i)));
	}
	json_object_set_new(root, "vm", vm);
	json_object_set_new(root, "vcpus", vcpus);
	json_object_set_new(root, "fields", fields);
	vm = vcpus = fields = NULL;
	if (json_dumpf(root, stdout, JSON_COMPACT) < 0)
		rc = -EIO;
	putchar('\n');
	fflush(stdout);
out:
	json_decref(root);
	json_decref(vm);
	json_decref(vcpus);
	json_decref(fields);
	return rc;
}

/* ---- the command ------------------------------------------------------------ */

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The VM record says the VMM has stopped: its values are final. */
static bool vm_stopped(const struct stats_snap *s)
{
	uint32_t st = 0;

	return !stats_snap_status(s, PV_STATS_RECORD_VM, 0, &st) && st == PV_STATS_STOPPED;
}

/* The top symbols of the VM's profile, asked over its control socket ({"cmd":"profile"}). */
static void print_profile(const struct stat_opts *o)
{
	char req[64], reply[65536]; /* 100 symbols and 100 processes fit */
	struct errbuf err = { "" };
	json_t *r, *row;
	json_error_t jerr;
	int sock, fd = -1;
	size_t i;

	sock = util_api_connect(o->target, &err);
	snprintf(req, sizeof(req), "{\"cmd\":\"profile\",\"top\":%u}", (unsigned)o->profile_top);
	/* The VMM symbolizes every distinct stack to answer: 20k stacks take 0.25 s natively and
	 * took over 5 s in the nested test host, so the bound is generous. */
	if (sock < 0 || util_api_request(sock, req, reply, sizeof(reply), &fd, 30000, &err)) {
		printf("profile: %s\n", err.msg);
		if (sock >= 0)
			close(sock);
		return;
	}
	close(sock);
	if (fd >= 0)
		close(fd);
	r = json_loads(reply, 0, &jerr);
	if (!r || !json_is_true(json_object_get(r, "ok"))) {
		printf("profile: %s\n", r ? json_string_value(json_object_get(r, "error")) : jerr.text);
		json_decref(r);
		return;
	}
	printf("\nprofile %s: %lld samples, %lld [unknown]\n%9s %6s  %s\n",
	       json_string_value(json_object_get(r, "spec")),
	       (long long)json_integer_value(json_object_get(r, "samples")),
	       (long long)json_integer_value(json_object_get(r, "unknown")), "self", "self%", "symbol");
	json_array_foreach(json_object_get(r, "top"), i, row)
		printf("%9lld %5.1f%%  %s\n", (long long)json_integer_value(json_object_get(row, "self")),
		       json_real_value(json_object_get(row, "percent")),
		       json_string_value(json_object_get(row, "symbol")));
	/* A Linux guest's processes (docs/profiling.md). */
	if (json_array_size(json_object_get(r, "processes")))
		printf("%8s  %-16s %9s %6s  %s\n", "pid", "command", "samples", "share", "top symbol");
	json_array_foreach(json_object_get(r, "processes"), i, row)
	{
		const char *comm = json_string_value(json_object_get(row, "comm"));
		const char *sym = json_string_value(json_object_get(row, "top_symbol"));
		long long pid = (long long)json_integer_value(json_object_get(row, "pid"));

		if (pid < 0)
			printf("%8s", "-");
		else
			printf("%8lld", pid);
		printf("  %-16s %9lld %5.1f%%  %s\n", comm ? comm : "?",
		       (long long)json_integer_value(json_object_get(row, "samples")),
		       json_real_value(json_object_get(row, "percent")), sym ? sym : "?");
	}
	json_decref(r);
}

static int print_one(struct stat_ctx *c, const struct stat_opts *o)
{
	struct stats_prom_vm pv = { .v = c->v, .s = c->cur, .sel = c->sel, .pid = c->pid, .name = c->name };

	switch (o->format) {
	case FMT_JSON:
		return print_json(c) ? 1 : 0;
	case FMT_PROM:
		return stats_prom_write(stdout, &pv, 1) ? 1 : 0;
	case FMT_TABLE:
		print_table(c);
		if (o->profile_top)
			print_profile(o);
		return 0;
	}
	return 1;
}

static int run(struct stat_ctx *c, const struct stat_opts *o)
{
	bool clear = o->format == FMT_TABLE && isatty(STDOUT_FILENO);
	struct stats_snap *t;
	uint64_t k;
	int rc;

	for (k = 1;; k++) {
		stats_snap_take(c->cur);
		if (clear)
			fputs("\033[H\033[2J", stdout);
		else if (k > 1 && o->format == FMT_TABLE)
			putchar('\n');
		rc = print_one(c, o);
		if (rc || (o->count && k >= o->count) || vm_stopped(c->cur))
			return rc;
		sleep_s(o->interval);
		t = c->prev;
		c->prev = c->cur;
		c->cur = t;
		c->have_prev = true;
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
	memcpy(c.name, stats_view_header(c.v)->name, sizeof(c.name));
	c.name[sizeof(c.name) - 1] = '\0';
	if (c.name[0] && !stats_vm_name_ok(c.name))
		c.name[0] = '\0'; /* a hostile producer's name is not printed */
	c.n = stats_view_ndesc(c.v);
	c.sel = calloc(c.n ? c.n : 1, sizeof(bool));
	if (!c.sel || stats_snap_create(&c.cur, c.v) || stats_snap_create(&c.prev, c.v)) {
		fputs("perfvisor stat: out of memory\n", stderr);
		rc = 1;
	} else if (o.fields && !select_fields(&c, o.fields)) {
		rc = usage_err("--fields '%s' matches no field of this VM", o.fields);
	} else {
		if (!o.fields)
			select_fields(&c, NULL);
		rc = run(&c, &o);
	}
	stats_snap_destroy(c.cur);
	stats_snap_destroy(c.prev);
	free(c.sel);
	stats_view_close(c.v);
	return rc;
}
