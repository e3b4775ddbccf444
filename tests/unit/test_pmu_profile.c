// SPDX-License-Identifier: MIT
/*
 * Unit tests of the profiler's pure parts (pmu/profile*.c, pmu/symbols.c):
 * --profile parsing and every bad value, the sample ring (full, wrap),
 * aggregation and its bound, symbol tables from text and from an ELF (this
 * test's own executable; a damaged copy of it), and the output formats.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmu/pmu.h"

static int parse(const char *s, bool hw, struct prof_spec *out, struct errbuf *err)
{
	return prof_spec_parse(s, hw, out, err);
}

Test(profile_spec, good_values)
{
	struct prof_spec s;
	struct errbuf err;

	cr_assert_eq(parse("task-clock:1ms", false, &s, &err), 0);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.e[0].ev->name, "task-clock");
	cr_assert_eq(s.e[0].period, 1000000);
	cr_assert_str_eq(s.text, "task-clock:1000000ns");
	cr_assert_eq(parse("cpu-clock:500us,cycles:100000", true, &s, &err), 0);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.e[0].period, 500000);
	cr_assert_str_eq(s.e[1].ev->name, "cycles");
	cr_assert_eq(s.e[1].period, 100000);
	cr_assert_str_eq(s.text, "cpu-clock:500000ns,cycles:100000");
	/* The normalized text parses to the same spec (snapshots keep it). */
	cr_assert_eq(parse(s.text, true, &s, &err), 0);
	cr_assert_eq(s.e[0].period, 500000);
	cr_assert_eq(parse("task-clock:100us", false, &s, &err), 0);
	cr_assert_eq(parse("task-clock:10s", false, &s, &err), 0);
	cr_assert_eq(parse("task-clock:100000ns", false, &s, &err), 0);
	cr_assert(!s.leaf);
	/* mode=leaf anywhere in the list; the normalized text ends with it and parses back. */
	cr_assert_eq(parse("mode=leaf,task-clock:1ms", false, &s, &err), 0);
	cr_assert(s.leaf);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.text, "task-clock:1000000ns,mode=leaf");
	cr_assert_eq(parse(s.text, false, &s, &err), 0);
	cr_assert(s.leaf);
	cr_assert_str_eq(s.text, "task-clock:1000000ns,mode=leaf");
	cr_assert_eq(parse("task-clock:1ms,mode=stack", false, &s, &err), 0);
	cr_assert(!s.leaf);
	cr_assert_str_eq(s.text, "task-clock:1000000ns");
}

Test(profile_spec, bad_values)
{
	static const struct {
		const char *in, *msg;
	} bad[] = {
		{ "", "needs EVENT:PERIOD" },
		{ "task-clock", "needs EVENT:PERIOD" },
		{ ":1ms", "no event name" },
		{ "foo:1ms", "unknown event 'foo'" },
		{ "exits:1000", "unknown event 'exits'" }, /* a PV PMU event, but no host counter */
		{ "page-faults:1000", "unknown event" },   /* software, but no time */
		{ "task-clock:1", "needs a unit" },
		{ "task-clock:0ms", "100us to 10s" },
		{ "task-clock:99us", "100us to 10s" },
		{ "task-clock:11s", "100us to 10s" },
		{ "task-clock:99999999999999999999s", "not a period" },
		{ "task-clock:18446744073709551615s", "not a period" },
		{ "task-clock:ms", "not a period" },
		{ "task-clock:-1ms", "not a period" },
		{ "task-clock:1 ms", "not a period" },
		{ "task-clock:1ms,", "empty item" },
		{ ",task-clock:1ms", "empty item" },
		{ "task-clock:1ms,,cpu-clock:1ms", "empty item" },
		{ "task-clock:1ms,task-clock:2ms", "given twice" },
		{ "mode=leaf", "needs EVENT:PERIOD" },
		{ "task-clock:1ms,mode=fast", "unknown mode 'fast'" },
		{ "task-clock:1ms,mode=", "unknown mode ''" },
		{ "task-clock:1ms,mode=leaf,mode=stack", "mode= is given twice" },
		{ "cycles:100000", "no hardware PMU" },
		{ "cycles:9999", "count of events" },
		{ "cycles:1ms", "count of events" },
		{ "a:1ms,b:1ms,c:1ms,d:1ms,e:1ms", "unknown event" },
		{ "task-clock:1ms,cpu-clock:1ms,cycles:100000,instructions:100000,branches:100000",
		  "at most 4" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct prof_spec s;
		struct errbuf err = { "" };
		bool hw = strstr(bad[i].in, "at most") || strstr(bad[i].msg, "at most") ||
			  strstr(bad[i].msg, "count");

		cr_assert_lt(parse(bad[i].in, hw, &s, &err), 0, "'%s' accepted", bad[i].in);
		cr_assert(strstr(err.msg, bad[i].msg), "'%s': message '%s' lacks '%s'", bad[i].in, err.msg,
			  bad[i].msg);
	}
}

Test(profile_ring, fill_drain_wrap)
{
	struct prof_ring r;
	struct prof_sample s = { .depth = 1 }, o;

	cr_assert_eq(prof_ring_init(&r), 0);
	cr_assert_not(prof_ring_pop(&r, &o));
	for (int round = 0; round < 3; round++) {
		for (unsigned i = 0; i < PROF_RING_SIZE; i++) {
			s.pc[0] = round * 100000 + i;
			cr_assert(prof_ring_push(&r, &s));
		}
		s.pc[0] = 42;
		cr_assert_not(prof_ring_push(&r, &s), "a full ring took a sample");
		for (unsigned i = 0; i < PROF_RING_SIZE; i++) {
			cr_assert(prof_ring_pop(&r, &o));
			cr_assert_eq(o.pc[0], (uint64_t)(round * 100000 + i));
		}
		cr_assert_not(prof_ring_pop(&r, &o));
	}
	prof_ring_fini(&r);
}

Test(profile_data, aggregates_and_bounds)
{
	struct prof_data d;
	struct prof_sample s = { .vcpu = 1, .cpl = 3, .depth = 2, .pc = { 0x1000, 0x2000 } };

	cr_assert_eq(prof_data_init(&d, 2, 8), 0);
	for (int i = 0; i < 5; i++)
		prof_data_add(&d, &s);
	cr_assert_eq(d.n, 1);
	cr_assert_eq(d.samples, 5);
	s.cpl = 0; /* same addresses, other ring: another stack */
	prof_data_add(&d, &s);
	cr_assert_eq(d.n, 2);
	/* Room for 6 of 8 distinct stacks; the rest are counted as lost, never dropped silently. */
	for (uint64_t i = 0; i < 10; i++) {
		s.pc[0] = 0x3000 + i;
		prof_data_add(&d, &s);
	}
	cr_assert_eq(d.n, 6);
	cr_assert_eq(d.lost, 6);
	cr_assert_eq(d.samples, 16);
	s.depth = 0;
	prof_data_add(&d, &s);
	cr_assert_eq(d.lost, 7);
	prof_data_fini(&d);
}

static const char map[] = "0000000000100000 T _start\n"
			  "0000000000100100 t hot_a\n"
			  "0000000000100200 T hot_b\t[mod]\n"
			  "0000000000300000 D data_symbol\n"
			  "                 U undefined\n"
			  "garbage line\n"
			  "0000000000100300 W weak_fn\r\n";

Test(profile_symbols, text)
{
	struct prof_symtab t;
	struct errbuf err;

	cr_assert_eq(prof_symtab_load_text(&t, map, strlen(map), &err), 0, "%s", err.msg);
	cr_assert_eq(t.n, 4);
	cr_assert_str_eq(t.source, "System.map");
	cr_assert_str_eq(prof_symtab_find(&t, 0x100100)->name, "hot_a");
	cr_assert_str_eq(prof_symtab_find(&t, 0x1001ff)->name, "hot_a");
	cr_assert_str_eq(prof_symtab_find(&t, 0x100200)->name, "hot_b");
	cr_assert_str_eq(prof_symtab_find(&t, 0x100300)->name, "weak_fn");
	cr_assert_null(prof_symtab_find(&t, 0xfffff));
	cr_assert_null(prof_symtab_find(&t, 0x100300 + (1u << 20)), "an unsized last symbol is bounded");
	prof_symtab_fini(&t);
	cr_assert_lt(prof_symtab_load_text(&t, "hello\nworld\n", 12, &err), 0);
	cr_assert(strstr(err.msg, "no text symbols"));
}

static void *read_self(size_t *len)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	char *buf = malloc(64 << 20);

	cr_assert(f && buf);
	*len = fread(buf, 1, 64 << 20, f);
	fclose(f);
	return buf;
}

Test(profile_symbols, elf_own_executable)
{
	struct prof_symtab t;
	struct errbuf err;
	size_t len;
	char *img = read_self(&len);
	const struct prof_sym *s = NULL;

	cr_assert_eq(prof_symtab_load_elf(&t, img, len, &err), 0, "%s", err.msg);
	cr_assert_str_eq(t.source, "ELF .symtab");
	for (size_t i = 0; i < t.n; i++)
		if (!strcmp(t.sym[i].name, "prof_ring_push"))
			s = &t.sym[i];
	cr_assert_not_null(s, "prof_ring_push not in this test's own symbols");
	cr_assert_gt(s->size, 0);
	cr_assert_eq(prof_symtab_find(&t, s->addr + s->size - 1), s);
	cr_assert_neq(prof_symtab_find(&t, s->addr + s->size), s);
	prof_symtab_fini(&t);
	/* Damaged copies: refused or loaded, never read outside the buffer (ASan build). */
	for (size_t cut = 0; cut < len; cut += len / 61 + 1) {
		if (prof_symtab_load_elf(&t, img, cut, &err) == 0)
			prof_symtab_fini(&t);
	}
	cr_assert_lt(prof_symtab_load_elf(&t, "\177ELF", 4, &err), 0);
	cr_assert_lt(prof_symtab_load_elf(&t, "text", 4, &err), 0);
	free(img);
}

/* The profile of d (at most 4 vCPUs) as JSON: these per-vCPU sample counts, none dropped or throttled. */
static json_t *to_json(const struct prof_data *d, const struct prof_spec *spec,
		       const struct prof_symtab *syms, const char *kernel, const uint64_t *samples)
{
	static const uint64_t zero[4] = { 0 };
	json_t *j = prof_to_json(d, &(struct prof_meta){ .spec = spec,
							 .syms = syms,
							 .kernel = kernel,
							 .per_vcpu_samples = samples,
							 .per_vcpu_dropped = zero,
							 .per_vcpu_throttled = zero });

	cr_assert_not_null(j);
	return j;
}

/* What prof_write_folded() (top < 0) or prof_write_table(top) prints of j; free() it. */
static char *render(const json_t *j, int top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(top < 0 ? prof_write_folded(f, j) : prof_write_table(f, j, (unsigned)top), 0);
	fclose(f);
	return buf;
}

Test(profile_out, json_folded_table)
{
	struct prof_spec spec;
	struct prof_symtab syms, none = { 0 };
	struct prof_data d;
	struct errbuf err;
	uint64_t samples[2] = { 5, 1 };
	struct prof_sample a = { .vcpu = 0, .cpl = 3, .depth = 2, .pc = { 0x100110, 0x100010 } };
	struct prof_sample b = { .vcpu = 1, .cpl = 0, .depth = 1, .pc = { 0x100210 } };
	char *buf;
	json_t *j;

	cr_assert_eq(prof_spec_parse("task-clock:1ms", false, &spec, &err), 0);
	cr_assert_eq(prof_symtab_load_text(&syms, map, strlen(map), &err), 0);
	cr_assert_eq(prof_data_init(&d, 2, 64), 0);
	for (int i = 0; i < 4; i++)
		prof_data_add(&d, &a);
	a.pc[0] = 0x100120; /* another address in hot_a: the same symbolized stack */
	prof_data_add(&d, &a);
	prof_data_add(&d, &b);
	j = to_json(&d, &spec, &syms, "k.elf", samples);
	cr_assert_eq(json_array_size(json_object_get(j, "stacks")), 2, "same symbols were not merged");
	buf = render(j, -1);
	cr_assert_str_eq(buf, "vcpu0;ring3;_start;hot_a 5\nvcpu1;ring0;hot_b 1\n");
	free(buf);
	buf = render(j, 0);
	cr_assert(strstr(buf, "profile: 6 samples (task-clock:1000000ns) on 2 vCPUs"), "%s", buf);
	cr_assert(strstr(buf, "ring 0: 1 samples (16.7%), ring 3: 5 samples (83.3%)"), "%s", buf);
	cr_assert(strstr(buf, "        5  83.3%         5  83.3%          5          0  hot_a\n"), "%s", buf);
	cr_assert(strstr(buf, "        0   0.0%         5  83.3%          0          0  _start\n"), "%s",
		  buf);
	free(buf);
	json_decref(j);
	/* No symbols: addresses, every sample unknown. */
	snprintf(none.source, sizeof(none.source), "none");
	j = to_json(&d, &spec, &none, NULL, samples);
	cr_assert_eq(json_integer_value(json_object_get(j, "unknown")), 6);
	cr_assert_eq(json_array_size(json_object_get(j, "stacks")), 3);
	json_decref(j);
	prof_data_fini(&d);
	prof_symtab_fini(&syms);
}

/* A perf ring of 64 bytes with records written as the kernel writes them, across its end too. */
static void put(uint8_t *ring, uint64_t size, uint64_t at, const void *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ring[(at + i) & (size - 1)] = ((const uint8_t *)src)[i];
}

Test(profile_perf, records_samples_lost_wrap_and_garbage)
{
	uint8_t ring[64];
	struct {
		struct perf_event_header h;
		uint64_t ip;
	} smp = { { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_GUEST_USER, 16 }, 0x1000f4 };
	struct {
		struct perf_event_header h;
		uint64_t id, lost;
	} lost = { { PERF_RECORD_LOST, 0, 24 }, 7, 42 };
	struct perf_event_header bad = { PERF_RECORD_SAMPLE, 0, 4 };
	struct prof_perf_rec r;
	struct prof_sample s;

	memset(ring, 0xee, sizeof(ring));
	put(ring, 64, 0, &smp, sizeof(smp));
	put(ring, 64, 16, &lost, sizeof(lost));
	cr_assert_eq(prof_perf_record(ring, 64, 0, 40, &r), 16);
	cr_assert_eq(r.type, PERF_RECORD_SAMPLE);
	cr_assert_eq(r.value, 0x1000f4);
	prof_perf_sample(&r, 3, 1, &s);
	cr_assert(s.vcpu == 3 && s.event == 1 && s.cpl == 3 && s.depth == 1 && s.pc[0] == 0x1000f4);
	cr_assert_eq(prof_perf_record(ring, 64, 16, 40, &r), 24);
	cr_assert_eq(r.type, PERF_RECORD_LOST);
	cr_assert_eq(r.value, 42);
	/* Nothing past head; a header alone past head; a record longer than what was written. */
	cr_assert_eq(prof_perf_record(ring, 64, 40, 40, &r), 0);
	cr_assert_eq(prof_perf_record(ring, 64, 16, 30, &r), 0);
	cr_assert_eq(prof_perf_record(ring, 64, 0, 4, &r), 0);
	/* A size below the header's, a ring that is no power of two, head more than a ring ahead. */
	put(ring, 64, 40, &bad, sizeof(bad));
	cr_assert_eq(prof_perf_record(ring, 64, 40, 56, &r), 0);
	cr_assert_eq(prof_perf_record(ring, 48, 0, 40, &r), 0);
	cr_assert_eq(prof_perf_record(ring, 64, 0, 200, &r), 0);
	/* A sample that wraps: its header at 56..63, its IP at 0..7. */
	smp.h.misc = PERF_RECORD_MISC_GUEST_KERNEL;
	smp.ip = 0xffffffff81000000ULL;
	put(ring, 64, 120, &smp, sizeof(smp));
	cr_assert_eq(prof_perf_record(ring, 64, 120, 136, &r), 16);
	cr_assert_eq(r.value, 0xffffffff81000000ULL);
	prof_perf_sample(&r, 0, 0, &s);
	cr_assert(s.cpl == 0 && s.pc[0] == 0xffffffff81000000ULL);
	/* Outside the guest: perfvisor (host user mode) or the host kernel, whatever the IP. */
	r.misc = PERF_RECORD_MISC_USER;
	prof_perf_sample(&r, 0, 0, &s);
	cr_assert(s.cpl == PROF_CPL_HOST && s.pc[0] == PROF_HOST_VMM);
	r.misc = PERF_RECORD_MISC_KERNEL;
	prof_perf_sample(&r, 0, 0, &s);
	cr_assert(s.cpl == PROF_CPL_HOST && s.pc[0] == PROF_HOST_KERNEL);
	r.misc = PERF_RECORD_MISC_HYPERVISOR;
	prof_perf_sample(&r, 0, 0, &s);
	cr_assert(s.cpl == PROF_CPL_HOST && s.pc[0] == PROF_HOST_KERNEL);
}

Test(profile_out, host_samples)
{
	struct prof_spec spec;
	struct prof_symtab syms;
	struct prof_data d;
	struct errbuf err;
	uint64_t samples[1] = { 6 };
	struct prof_sample g = { .vcpu = 0, .cpl = 3, .depth = 1, .pc = { 0x100110 } };
	struct prof_sample k = { .vcpu = 0, .cpl = PROF_CPL_HOST, .depth = 1, .pc = { PROF_HOST_KERNEL } };
	struct prof_sample u = { .vcpu = 0, .cpl = PROF_CPL_HOST, .depth = 1, .pc = { PROF_HOST_VMM } };
	char *buf;
	json_t *j;

	cr_assert_eq(prof_spec_parse("task-clock:1ms,mode=leaf", false, &spec, &err), 0);
	cr_assert_eq(prof_symtab_load_text(&syms, map, strlen(map), &err), 0);
	cr_assert_eq(prof_data_init(&d, 1, 64), 0);
	/* Distinct counts: the order of the stacks is by count. */
	for (int i = 0; i < 3; i++)
		prof_data_add(&d, &k);
	prof_data_add(&d, &g);
	prof_data_add(&d, &g);
	prof_data_add(&d, &u);
	j = to_json(&d, &spec, &syms, NULL, samples);
	cr_assert_eq(json_integer_value(json_object_get(j, "version")), 2);
	/* Host samples are not guest code: never [unknown], never symbolized. */
	cr_assert_eq(json_integer_value(json_object_get(j, "unknown")), 0);
	cr_assert_eq(
		json_integer_value(json_object_get(json_array_get(json_object_get(j, "stacks"), 0), "ring")),
		-1);
	buf = render(j, -1);
	cr_assert_str_eq(buf, "vcpu0;host;[host-kernel] 3\nvcpu0;ring3;hot_a 2\nvcpu0;host;[vmm] 1\n");
	free(buf);
	buf = render(j, 0);
	cr_assert(strstr(buf,
			 "ring 0: 0 samples (0.0%), ring 3: 2 samples (33.3%), outside the guest: 4 samples "
			 "(66.7%)\n"),
		  "%s", buf);
	cr_assert(strstr(buf, "  [host-kernel]\n") && strstr(buf, "  [vmm]\n"), "%s", buf);
	free(buf);
	json_decref(j);
	prof_data_fini(&d);
	prof_symtab_fini(&syms);
}

/* A Linux guest's processes: a frame in folded stacks, fields in JSON, the --processes table. */
Test(profile_out, processes)
{
	struct prof_spec spec;
	struct prof_symtab syms;
	struct prof_data d;
	struct errbuf err;
	uint64_t samples[1] = { 7 };
	struct prof_sample a = { .cpl = 3, .depth = 1, .pid = 42, .comm = "spinA", .pc = { 0x100110 } };
	struct prof_sample a0 = { .cpl = 0, .depth = 1, .pid = 42, .comm = "spinA", .pc = { 0x100210 } };
	struct prof_sample b = { .cpl = 3, .depth = 1, .pid = 43, .comm = "spinB", .pc = { 0x100110 } };
	struct prof_sample n = { .cpl = 0, .depth = 1, .pc = { 0x100210 } };
	char *buf = NULL;
	size_t len = 0;
	const json_t *st;
	FILE *f;
	json_t *j;

	cr_assert_eq(prof_spec_parse("task-clock:1ms", false, &spec, &err), 0);
	cr_assert_eq(prof_symtab_load_text(&syms, map, strlen(map), &err), 0);
	cr_assert_eq(prof_data_init(&d, 1, 64), 0);
	for (int i = 0; i < 3; i++)
		prof_data_add(&d, &a);
	prof_data_add(&d, &a0);
	prof_data_add(&d, &b);
	prof_data_add(&d, &b);
	prof_data_add(&d, &n);
	j = to_json(&d, &spec, &syms, NULL, samples);
	st = json_array_get(json_object_get(j, "stacks"), 0);
	cr_assert_eq(json_integer_value(json_object_get(st, "pid")), 42);
	cr_assert_str_eq(json_string_value(json_object_get(st, "comm")), "spinA");
	st = json_array_get(json_object_get(j, "stacks"), 3);
	cr_assert_null(json_object_get(st, "comm"), "no process known: no fields");
	buf = render(j, -1);
	cr_assert_str_eq(buf,
			 "vcpu0;spinA[42];ring3;hot_a 3\nvcpu0;spinB[43];ring3;hot_a 2\n"
			 "vcpu0;spinA[42];ring0;hot_b 1\nvcpu0;ring0;hot_b 1\n",
			 "%s", buf);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	cr_assert_eq(prof_write_processes(f, j), 0);
	fclose(f);
	cr_assert(strstr(buf, "7 samples (task-clock:1000000ns) in 3 processes"), "%s", buf);
	cr_assert(strstr(buf, "      42  spinA                    4  57.1%  hot_a (75.0%)\n"), "%s", buf);
	cr_assert(strstr(buf, "      43  spinB                    2  28.6%  hot_a (100.0%)\n"), "%s", buf);
	cr_assert(strstr(buf, "       -  [no process]             1  14.3%  hot_b (100.0%)\n"), "%s", buf);
	free(buf);
	st = prof_processes_json(j, 2);
	cr_assert_eq(json_array_size(st), 2, "the top 2");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(st, 0), "pid")), 42);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(st, 0), "top_symbol")), "hot_a");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(st, 1), "comm")), "spinB");
	json_decref((json_t *)st);
	json_decref(j);
	/* A Linux kernel without BTF or ORC still profiles; the report says what is missing and why. */
	j = prof_to_json(&d, &(struct prof_meta){ .spec = &spec,
						  .syms = &syms,
						  .per_vcpu_samples = samples,
						  .per_vcpu_dropped = samples,
						  .per_vcpu_throttled = samples,
						  .linux_guest = &(struct prof_linux){
							  .tasks_why = "no BTF", .orc_why = "no ORC" } });
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "linux"), "processes")),
			 "not known: no BTF");
	buf = render(j, 0);
	cr_assert(
		strstr(buf,
		       "linux guest: processes not known: no BTF; kernel stacks by frame pointers: no ORC\n"),
		"%s", buf);
	free(buf);
	json_decref(j);
	prof_data_fini(&d);
	prof_symtab_fini(&syms);
}
