/* SPDX-License-Identifier: MIT */
/*
 * kvm-unit-tests style reporting: PASS/FAIL/SKIP lines and a SUMMARY whose
 * result is the VM's exit status. Counters are atomic: any CPU may report.
 */
#include "guest.h"

static struct {
	uint32_t tests, failures, skipped;
} counts;

static __printf(2, 0) void line(const char *tag, const char *fmt, va_list ap)
{
	printf("%s: ", tag);
	vprintf(fmt, ap);
	printf("\n");
}

void report(bool pass, const char *fmt, ...)
{
	va_list ap;

	__atomic_add_fetch(&counts.tests, 1, __ATOMIC_RELAXED);
	if (!pass)
		__atomic_add_fetch(&counts.failures, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	line(pass ? "PASS" : "FAIL", fmt, ap);
	va_end(ap);
}

void report_skip(const char *fmt, ...)
{
	va_list ap;

	__atomic_add_fetch(&counts.tests, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&counts.skipped, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	line("SKIP", fmt, ap);
	va_end(ap);
}

int report_summary(void)
{
	uint32_t failures = __atomic_load_n(&counts.failures, __ATOMIC_ACQUIRE);

	printf("SUMMARY: %u tests, %u unexpected failures, %u skipped\n",
	       __atomic_load_n(&counts.tests, __ATOMIC_ACQUIRE), failures,
	       __atomic_load_n(&counts.skipped, __ATOMIC_ACQUIRE));
	return failures ? 1 : 0;
}
