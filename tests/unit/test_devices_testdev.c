// SPDX-License-Identifier: MIT
/*
 * Unit tests for the test device (ucall): good requests of every kind and
 * every bad one, against a fake guest memory and a fake host that records
 * console bytes, stop requests and log lines.
 */
#include "devices/devices.h"
#include "perfvisor/testdev.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MEM_SIZE 0x10000u

struct fake {
	uint64_t mem_base;
	uint8_t mem[MEM_SIZE];
	uint64_t last_len;
	char out[4096];
	size_t out_len;
	int stops, stop_status;
	const char *stop_why;
	int logs;
	char log[8][1024]; /* first lines */
	char last_log[1024];
	pthread_mutex_t lock;
};

static struct fake f;
static struct testdev *t;

/* Guest memory is [mem_base, mem_base + MEM_SIZE); careful with overflow. */
static void *fake_gpa_to_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	struct fake *fk = opaque;

	__atomic_store_n(&fk->last_len, len, __ATOMIC_RELAXED);
	if (gpa < fk->mem_base)
		return NULL;
	gpa -= fk->mem_base;
	if (gpa > MEM_SIZE || len > MEM_SIZE - gpa)
		return NULL;
	return fk->mem + gpa;
}

static void fake_stop(void *opaque, int status, const char *why)
{
	struct fake *fk = opaque;

	fk->stops++;
	fk->stop_status = status;
	fk->stop_why = why;
}

static void fake_console(void *opaque, const void *buf, size_t len)
{
	struct fake *fk = opaque;

	cr_assert_leq(fk->out_len + len, sizeof(fk->out));
	memcpy(fk->out + fk->out_len, buf, len);
	fk->out_len += len;
}

static void fake_log(void *opaque, const char *msg)
{
	struct fake *fk = opaque;

	pthread_mutex_lock(&fk->lock);
	if (fk->logs < 8)
		snprintf(fk->log[fk->logs], sizeof(fk->log[0]), "%s", msg);
	snprintf(fk->last_log, sizeof(fk->last_log), "%s", msg);
	fk->logs++;
	pthread_mutex_unlock(&fk->lock);
}

static const struct dev_host fake_host = {
	.opaque = &f,
	.gpa_to_hva = fake_gpa_to_hva,
	.request_stop = fake_stop,
	.console_write = fake_console,
	.log = fake_log,
};

static void setup(void)
{
	memset(&f, 0, sizeof(f));
	pthread_mutex_init(&f.lock, NULL);
	cr_assert_eq(testdev_create(&t, &fake_host), 0);
}

static void teardown(void)
{
	testdev_destroy(t);
	t = NULL;
	pthread_mutex_destroy(&f.lock);
}

TestSuite(testdev, .init = setup, .fini = teardown);

/* Place a ucall at guest address gpa and return it for tweaking. */
static struct pv_ucall *put_ucall(uint64_t gpa, uint32_t cmd)
{
	struct pv_ucall *uc = (struct pv_ucall *)(f.mem + (gpa - f.mem_base));

	memset(uc, 0, sizeof(*uc));
	uc->magic = PV_UCALL_MAGIC;
	uc->cmd = cmd;
	return uc;
}

static struct testdev_counters counters(void)
{
	struct testdev_counters c;

	testdev_get_counters(t, &c);
	return c;
}

static void assert_bad(uint64_t expected_bad, const char *needle)
{
	struct testdev_counters c = counters();

	cr_assert_eq(c.bad_requests, expected_bad);
	cr_assert_eq(c.prints + c.syncs + c.asserts + c.dones, 0);
	cr_assert_eq(f.stops, 0, "a bad request must not stop the VM");
	cr_assert_eq(f.out_len, 0);
	cr_assert_gt(f.logs, 0);
	cr_assert(strstr(f.last_log, needle), "log '%s' lacks '%s'", f.last_log, needle);
}

Test(testdev, print_writes_exact_text)
{
	strcpy(put_ucall(0x1000, PV_UCALL_PRINT)->text, "hello from the guest");
	testdev_write(t, 0x1000, 4);
	cr_assert_eq(f.out_len, strlen("hello from the guest"));
	cr_assert_arr_eq(f.out, "hello from the guest", f.out_len);
	cr_assert_eq(f.last_len, sizeof(struct pv_ucall), "translates the whole struct");
	cr_assert_eq(counters().prints, 1);
	cr_assert_eq(f.stops, 0);
	cr_assert_eq(f.logs, 0);
}

Test(testdev, print_text_without_nul_is_truncated)
{
	struct pv_ucall *uc = put_ucall(0x2000, PV_UCALL_PRINT);

	memset(uc->text, 'A', sizeof(uc->text));
	memset(uc->file, 'B', sizeof(uc->file));
	memset(f.mem + 0x2000 + sizeof(*uc), 'C', 64); /* no NUL after it either */
	testdev_write(t, 0x2000, 4);
	cr_assert_eq(f.out_len, sizeof(uc->text) - 1);
	for (size_t i = 0; i < f.out_len; i++)
		cr_assert_eq(f.out[i], 'A');
	cr_assert_eq(uc->text[sizeof(uc->text) - 1], 'A', "guest memory not written");
	cr_assert_eq(counters().prints, 1);
	cr_assert_eq(counters().bad_requests, 0);
}

Test(testdev, sync_logs_stage_and_values)
{
	struct pv_ucall *uc = put_ucall(0x100, PV_UCALL_SYNC);

	uc->line = 7;
	uc->args[0] = 1;
	uc->args[1] = 0x20;
	uc->args[2] = 0;
	uc->args[3] = 0xdeadbeefcafeULL;
	testdev_write(t, 0x100, 4);
	cr_assert_eq(f.logs, 1);
	cr_assert_str_eq(f.log[0], "guest sync: stage 7 values 0x1 0x20 0x0 0xdeadbeefcafe");
	cr_assert_eq(counters().syncs, 1);
	cr_assert_eq(f.stops, 0);
}

Test(testdev, assert_logs_and_stops)
{
	struct pv_ucall *uc = put_ucall(0x300, PV_UCALL_ASSERT);

	strcpy(uc->text, "x == 2");
	strcpy(uc->file, "guest.c");
	uc->line = 42;
	uc->args[0] = 3;
	uc->args[1] = 2;
	testdev_write(t, 0x300, 4);
	cr_assert_eq(f.logs, 1);
	cr_assert_str_eq(f.log[0], "guest assertion failed: x == 2 at guest.c:42 "
				   "(values 0x3, 0x2, 0x0, 0x0)");
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.stop_status, PV_STATUS_ASSERT);
	cr_assert_str_eq(f.stop_why, "guest assertion failed");
	cr_assert_eq(counters().asserts, 1);
}

Test(testdev, assert_with_unterminated_and_control_strings)
{
	struct pv_ucall *uc = put_ucall(0x300, PV_UCALL_ASSERT);

	memset(uc->file, 'f', sizeof(uc->file));
	memset(uc->text, 't', sizeof(uc->text));
	uc->text[0] = '\033'; /* a terminal escape must not reach the log */
	uc->text[1] = (char)0x9b;
	testdev_write(t, 0x300, 4);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.stop_status, PV_STATUS_ASSERT);
	cr_assert_null(strchr(f.log[0], '\033'));
	cr_assert_null(strchr(f.log[0], (char)0x9b));
	cr_assert(strstr(f.log[0], "guest assertion failed: ??ttt"));
	cr_assert_eq(uc->text[0], '\033', "guest memory untouched");
}

Test(testdev, done_stops_with_low_byte_of_status)
{
	put_ucall(0x400, PV_UCALL_DONE)->status = 0x105;
	testdev_write(t, 0x400, 4);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(f.stop_status, 5);
	cr_assert_str_eq(f.stop_why, "guest done");
	cr_assert_eq(counters().dones, 1);

	put_ucall(0x400, PV_UCALL_DONE)->status = 0;
	testdev_write(t, 0x400, 4);
	cr_assert_eq(f.stops, 2);
	cr_assert_eq(f.stop_status, 0);
}

Test(testdev, wrong_length_is_bad)
{
	put_ucall(0x400, PV_UCALL_DONE);
	testdev_write(t, 0x400, 1);
	testdev_write(t, 0x400, 2);
	testdev_write(t, 0x400, 0);
	testdev_write(t, 0x400, 8);
	assert_bad(4, "8-byte write");
}

Test(testdev, gpa_outside_memory_is_bad)
{
	testdev_write(t, MEM_SIZE, 4);
	assert_bad(1, "gpa 0x10000 outside guest memory");
	/* Starts inside, ends outside. */
	testdev_write(t, MEM_SIZE - sizeof(struct pv_ucall) + 1, 4);
	assert_bad(2, "outside guest memory");
	testdev_write(t, 0xffffffffu, 4);
	assert_bad(3, "gpa 0xffffffff outside guest memory");
	testdev_write(t, 0xfffffff0u, 4);
	assert_bad(4, "outside guest memory");
}

Test(testdev, gpa_near_4g_does_not_wrap)
{
	/* Guest RAM ending exactly at 4 GiB: gpa + size past 2^32 must not wrap to low memory. */
	f.mem_base = 0x100000000ULL - MEM_SIZE;
	strcpy(put_ucall(f.mem_base, PV_UCALL_PRINT)->text, "ok");
	testdev_write(t, (uint32_t)f.mem_base, 4);
	cr_assert_eq(f.out_len, 2, "a request at the start of the high region works");
	cr_assert_eq(counters().prints, 1);

	/* A DONE request whose first 256 bytes fit below 4 GiB, the rest do not. */
	memcpy(f.mem + 0xff00, &(uint32_t[]){ PV_UCALL_MAGIC, PV_UCALL_DONE }, 8);
	testdev_write(t, 0xffffff00u, 4);
	testdev_write(t, 0xffffffffu, 4);
	cr_assert_eq(counters().bad_requests, 2);
	cr_assert_eq(f.stops, 0);
	cr_assert(strstr(f.last_log, "outside guest memory"));
}

Test(testdev, bad_magic_is_bad)
{
	put_ucall(0x500, PV_UCALL_DONE)->magic = 0x12345678;
	testdev_write(t, 0x500, 4);
	assert_bad(1, "bad magic 0x12345678");
	testdev_write(t, 0x600, 4); /* all-zero memory */
	assert_bad(2, "bad magic 0x00000000 in request at gpa 0x600");
}

Test(testdev, unknown_command_is_bad)
{
	put_ucall(0x500, 0);
	testdev_write(t, 0x500, 4);
	assert_bad(1, "unknown command 0");
	put_ucall(0x500, 5);
	testdev_write(t, 0x500, 4);
	assert_bad(2, "unknown command 5");
	put_ucall(0x500, 0xffffffffu);
	testdev_write(t, 0x500, 4);
	assert_bad(3, "unknown command 4294967295 in request at gpa 0x500");
}

Test(testdev, flood_of_bad_requests_is_rate_limited)
{
	struct pv_ucall *uc;

	for (int i = 0; i < 1000; i++)
		testdev_write(t, 0xfffffff0u, 4);
	cr_assert_eq(counters().bad_requests, 1000);
	cr_assert_leq(f.logs, 10, "at most a burst of lines, got %d", f.logs);
	cr_assert_geq(f.logs, 1);
	cr_assert_eq(f.stops, 0);

	/* Other kinds of lines have their own budget. */
	uc = put_ucall(0x100, PV_UCALL_SYNC);
	uc->line = 1;
	testdev_write(t, 0x100, 4);
	cr_assert_str_eq(f.last_log, "guest sync: stage 1 values 0x0 0x0 0x0 0x0");
}

Test(testdev, suppressed_lines_are_announced)
{
	int logs;
	struct timespec ts = { .tv_sec = 1, .tv_nsec = 100 * 1000 * 1000 };

	for (int i = 0; i < 1000; i++)
		testdev_write(t, 0xfffffff0u, 4);
	logs = f.logs;
	cr_assert_leq(logs, 10);
	nanosleep(&ts, NULL);
	testdev_write(t, 0xfffffff0u, 4);
	cr_assert_eq(f.logs, logs + 1, "a new interval allows a line");
	cr_assert(strstr(f.last_log, "outside guest memory"));
	cr_assert(strstr(f.last_log, "(990 similar lines suppressed)"), "got '%s'", f.last_log);
	cr_assert_eq(counters().bad_requests, 1001);
}

Test(testdev, missing_callbacks_do_not_crash)
{
	struct testdev *t2;
	struct testdev_counters c;

	cr_assert_eq(testdev_create(&t2, NULL), 0);
	testdev_write(t2, 0x1000, 4); /* no guest memory at all: a bad request */
	testdev_write(t2, 0x1000, 2);
	testdev_get_counters(t2, &c);
	cr_assert_eq(c.bad_requests, 2);
	testdev_destroy(t2);
	testdev_destroy(NULL);
}

#define THREADS 4
#define PER_THREAD 1000

static void *sync_thread(void *arg)
{
	uint32_t gpa = (uint32_t)(uintptr_t)arg;

	for (int i = 0; i < PER_THREAD; i++)
		testdev_write(t, gpa, 4);
	return NULL;
}

Test(testdev, counters_exact_under_concurrency)
{
	pthread_t th[THREADS];

	put_ucall(0x800, PV_UCALL_SYNC);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, sync_thread, (void *)(uintptr_t)0x800), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(counters().syncs, THREADS * PER_THREAD);
	cr_assert_leq(f.logs, 10);
	cr_assert_eq(counters().bad_requests, 0);
}

Test(testdev, counters_continue_after_a_restore)
{
	struct testdev_counters saved = {
		.prints = 41, .syncs = 3, .asserts = 0, .dones = 0, .bad_requests = 2
	};

	testdev_set_counters(t, &saved);
	strcpy(put_ucall(0x1000, PV_UCALL_PRINT)->text, "after the restore");
	testdev_write(t, 0x1000, 4);
	cr_assert_eq(counters().prints, 42, "counts on from the saved value");
	cr_assert_eq(counters().syncs, 3);
	cr_assert_eq(counters().bad_requests, 2);
}
