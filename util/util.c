// SPDX-License-Identifier: MIT
/* Rate limiting, size parsing and clocks shared by all components. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t util_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

bool ratelimit_allow(struct ratelimit *rl)
{
	uint64_t now = util_now_ns();
	uint64_t last = __atomic_load_n(&rl->last_ns, __ATOMIC_RELAXED);

	/* Refill the whole bucket once an interval has passed since the last refill. */
	if (now - last >= rl->interval_ns &&
	    __atomic_compare_exchange_n(&rl->last_ns, &last, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		__atomic_store_n(&rl->tokens, rl->burst, __ATOMIC_RELAXED);

	uint32_t t = __atomic_load_n(&rl->tokens, __ATOMIC_RELAXED);
	while (t > 0) {
		if (__atomic_compare_exchange_n(&rl->tokens, &t, t - 1, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return true;
	}
	__atomic_add_fetch(&rl->suppressed, 1, __ATOMIC_RELAXED);
	return false;
}

int util_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int util_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		const char *u = strchr(units, toupper((unsigned char)*end));

		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

void errbuf_append(struct errbuf *e, const char *words)
{
	size_t n = strlen(e->msg);

	snprintf(e->msg + n, sizeof(e->msg) - n, "%s", words);
}

int errbuf_set(struct errbuf *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return err;
}
