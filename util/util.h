/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by every perfvisor component: rate-limited logging
 * for guest-triggerable messages, size parsing with units, monotonic time.
 */
#ifndef PERFVISOR_UTIL_H
#define PERFVISOR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A token bucket for log lines a guest can trigger: at most `burst` lines,
 * then one per `interval_ns`. Lines that are not printed are counted in
 * `suppressed`. Thread-safe (atomics), so one limiter may serve all vCPUs.
 */
struct ratelimit {
	uint64_t interval_ns;
	uint32_t burst;
	uint32_t tokens;     /* accessed atomically */
	uint64_t last_ns;    /* accessed atomically */
	uint64_t suppressed; /* accessed atomically */
};

#define RATELIMIT_INIT(interval_ns_, burst_)                                         \
	{                                                                            \
		.interval_ns = (interval_ns_), .burst = (burst_), .tokens = (burst_) \
	}

/* Returns true if the caller may log now. Any thread. */
bool ratelimit_allow(struct ratelimit *rl);

/* Monotonic clock in nanoseconds. */
uint64_t util_now_ns(void);

/*
 * Parse a size such as "64M", "1G", "4096", "512K" (binary units, optional
 * trailing 'B' or 'iB'). Returns 0 and stores the byte count, or -EINVAL on
 * a malformed string, -ERANGE on overflow.
 */
int util_parse_size(const char *s, uint64_t *out);

/*
 * Parse a non-negative decimal integer in [min, max]. Returns 0, -EINVAL on
 * a malformed string, -ERANGE when out of bounds.
 */
int util_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* ---- error messages --------------------------------------------------- */
/*
 * Library functions return -errno and, where the caller needs to tell a
 * person what went wrong, also fill an errbuf with one clear line.
 */
struct errbuf {
	char msg[320];
};

/* Format the message into e (if non-NULL) and return err, for `return errbuf_set(...)`. */
int errbuf_set(struct errbuf *e, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Add words to e's message (cut to fit). */
void errbuf_append(struct errbuf *e, const char *words);

/* ---- control socket client (docs/api.md) ------------------------------ */
/* Connect to a VM's API socket. Returns the fd or -errno with a message. */
int util_api_connect(const char *path, struct errbuf *err);
/*
 * Send one request line and read one reply line (NUL-terminated, newline
 * kept) into reply; an fd passed with SCM_RIGHTS is stored in *fd_out (or
 * -1). Returns 0 or -errno (-ETIMEDOUT after timeout_ms) with a message.
 */
int util_api_request(int sock, const char *line, char *reply, size_t reply_len, int *fd_out, int timeout_ms,
		     struct errbuf *err);

#endif
