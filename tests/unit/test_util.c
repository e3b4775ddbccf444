// SPDX-License-Identifier: MIT
/*
 * Unit tests for util: size and integer parsing with their bad inputs, the
 * token-bucket rate limiter (burst, suppression count, refill, threads) and
 * errbuf_set.
 */
#include "util/util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- util_parse_size ---------------------------------------------------- */

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	int rc = util_parse_size(s, &v);

	cr_assert_eq(rc, 0, "'%s': rc %d", s, rc);
	cr_assert_eq(v, want, "'%s': got %llu, want %llu", s, (unsigned long long)v,
		     (unsigned long long)want);
}

static void size_bad(const char *s, int want_rc)
{
	uint64_t v = 0xdeadbeef;
	int rc = util_parse_size(s, &v);

	cr_assert_eq(rc, want_rc, "'%s': rc %d, want %d", s, rc, want_rc);
	cr_assert_eq(v, 0xdeadbeef, "'%s': output written on failure", s);
}

Test(parse_size, plain_bytes)
{
	size_ok("4096", 4096);
	size_ok("0", 0);
	size_ok("18446744073709551615", UINT64_MAX);
}

Test(parse_size, binary_units)
{
	size_ok("512K", 512ULL << 10);
	size_ok("64M", 64ULL << 20);
	size_ok("1G", 1ULL << 30);
	size_ok("2T", 2ULL << 40);
	size_ok("64m", 64ULL << 20);
}

Test(parse_size, unit_suffixes)
{
	size_ok("1GiB", 1ULL << 30);
	size_ok("2MB", 2ULL << 20);
	size_ok("4kb", 4ULL << 10);
}

Test(parse_size, malformed)
{
	size_bad("", -EINVAL);
	size_bad("M", -EINVAL);
	size_bad("12X", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad(" 64M", -EINVAL);
	size_bad("1.5G", -EINVAL);
	size_bad("64MX", -EINVAL);
	size_bad("64MiBs", -EINVAL);
	size_bad(NULL, -EINVAL);
}

Test(parse_size, overflow)
{
	size_bad("99999999999999999999", -ERANGE);
	size_bad("17179869184T", -ERANGE);
	size_bad("17179869184G", -ERANGE);
	/* The largest value that still fits: 2^24 - 1 TiB. */
	size_ok("16777215T", 16777215ULL << 40);
	size_bad("16777216T", -ERANGE);
}

/* ---- util_parse_u64 ----------------------------------------------------- */

Test(parse_u64, in_bounds)
{
	uint64_t v = 0;

	cr_assert_eq(util_parse_u64("1", 1, 64, &v), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(util_parse_u64("64", 1, 64, &v), 0);
	cr_assert_eq(v, 64);
	cr_assert_eq(util_parse_u64("007", 0, 10, &v), 0);
	cr_assert_eq(v, 7);
	cr_assert_eq(util_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, UINT64_MAX);
}

Test(parse_u64, out_of_bounds)
{
	uint64_t v = 42;

	cr_assert_eq(util_parse_u64("0", 1, 64, &v), -ERANGE);
	cr_assert_eq(util_parse_u64("65", 1, 64, &v), -ERANGE);
	cr_assert_eq(util_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	cr_assert_eq(util_parse_u64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
	cr_assert_eq(v, 42, "output written on failure");
}

Test(parse_u64, malformed)
{
	uint64_t v = 42;

	cr_assert_eq(util_parse_u64("", 0, 10, &v), -EINVAL);
	cr_assert_eq(util_parse_u64("abc", 0, 10, &v), -EINVAL);
	cr_assert_eq(util_parse_u64("-1", 0, 10, &v), -EINVAL);
	cr_assert_eq(util_parse_u64(" 1", 0, 10, &v), -EINVAL);
	cr_assert_eq(util_parse_u64("1 ", 0, 10, &v), -EINVAL);
	cr_assert_eq(util_parse_u64("4k", 0, 10000, &v), -EINVAL);
	cr_assert_eq(util_parse_u64("0x10", 0, 100, &v), -EINVAL);
	cr_assert_eq(util_parse_u64(NULL, 0, 10, &v), -EINVAL);
	cr_assert_eq(v, 42, "output written on failure");
}

/* ---- ratelimit ---------------------------------------------------------- */

Test(ratelimit, burst_then_suppressed)
{
	/* A long interval, so no refill can happen during the test. */
	struct ratelimit rl = RATELIMIT_INIT(60ULL * 1000000000ULL, 3);

	for (int i = 0; i < 3; i++)
		cr_assert(ratelimit_allow(&rl), "call %d within the burst", i);
	for (int i = 0; i < 5; i++)
		cr_assert_not(ratelimit_allow(&rl), "call %d after the burst", i);
	cr_assert_eq(rl.suppressed, 5);
}

Test(ratelimit, refills_after_interval)
{
	struct ratelimit rl = RATELIMIT_INIT(20ULL * 1000000ULL, 2);

	cr_assert(ratelimit_allow(&rl));
	cr_assert(ratelimit_allow(&rl));
	cr_assert_not(ratelimit_allow(&rl));
	cr_assert_eq(rl.suppressed, 1);

	sleep_ms(30);
	cr_assert(ratelimit_allow(&rl), "bucket refilled after the interval");
	cr_assert(ratelimit_allow(&rl), "the whole burst is back");
	cr_assert_not(ratelimit_allow(&rl));
	cr_assert_eq(rl.suppressed, 2, "suppressed lines keep counting across refills");
}

struct rl_thread {
	struct ratelimit *rl;
	unsigned allowed;
};

static void *rl_worker(void *p)
{
	struct rl_thread *t = p;

	for (int i = 0; i < 1000; i++)
		t->allowed += ratelimit_allow(t->rl);
	return NULL;
}

Test(ratelimit, shared_by_threads_allows_exactly_burst)
{
	struct ratelimit rl = RATELIMIT_INIT(60ULL * 1000000000ULL, 100);
	struct rl_thread t[4];
	pthread_t tid[4];
	unsigned total = 0;

	for (int i = 0; i < 4; i++) {
		t[i] = (struct rl_thread){ .rl = &rl };
		cr_assert_eq(pthread_create(&tid[i], NULL, rl_worker, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		total += t[i].allowed;
	}
	cr_assert_eq(total, 100);
	cr_assert_eq(rl.suppressed, 3900);
}

Test(util, now_ns_is_monotonic)
{
	uint64_t a = util_now_ns();

	sleep_ms(2);
	uint64_t b = util_now_ns();

	cr_assert_geq(b - a, 2000000ULL, "2 ms sleep measured as %llu ns", (unsigned long long)(b - a));
}

/* ---- errbuf ------------------------------------------------------------- */

Test(errbuf, formats_and_returns_err)
{
	struct errbuf e = { { 0 } };

	cr_assert_eq(errbuf_set(&e, -EINVAL, "bad %s %d", "thing", 7), -EINVAL);
	cr_assert_str_eq(e.msg, "bad thing 7");
	cr_assert_eq(errbuf_set(&e, -ENOENT, "second"), -ENOENT);
	cr_assert_str_eq(e.msg, "second", "a new message replaces the old one");
}

Test(errbuf, null_buffer_still_returns_err)
{
	cr_assert_eq(errbuf_set(NULL, -E2BIG, "ignored %d", 1), -E2BIG);
}

Test(errbuf, long_message_truncated_and_terminated)
{
	struct errbuf e;
	char big[1000];

	memset(&e, 'z', sizeof(e));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(errbuf_set(&e, -EIO, "%s", big), -EIO);
	cr_assert_eq(strlen(e.msg), sizeof(e.msg) - 1);
	cr_assert_eq(e.msg[0], 'a');
}
