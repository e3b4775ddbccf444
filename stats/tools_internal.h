/* SPDX-License-Identifier: MIT */
/*
 * Private to the stats tools (reader.c, check.c, stat_cmd.c): how a TARGET
 * argument (a PID or a control socket path) becomes a read-only region fd.
 * Only uses what ABI v1 defines, so the checker builds against tests/abi/v1.
 */
#ifndef PERFVISOR_STATS_TOOLS_INTERNAL_H
#define PERFVISOR_STATS_TOOLS_INTERNAL_H

#include <sys/types.h>

#include "util/util.h"

/* The memfd name the producer uses, as /proc/PID/fd shows it. */
#define STATS_MEMFD_NAME "perfvisor-stats"

/*
 * Find the stats memfd of process `pid` in /proc/PID/fd and open it again
 * O_RDONLY (an independent read-only open file). Returns the fd or -errno
 * with a message (-ESRCH no such process, -EACCES, -ENOENT no region).
 */
int stats_pid_fd(pid_t pid, struct errbuf *err);

/*
 * Ask a VMM's control socket for a read-only region fd (SCM_RIGHTS), waiting
 * at most timeout_ms for the reply. Returns the fd or -errno with a message.
 */
int stats_socket_fd(const char *path, int timeout_ms, struct errbuf *err);

/*
 * TARGET as the tools take it: all digits = a PID, otherwise a path to the
 * control socket. Returns a read-only fd and sets *pid (0 when unknown), or
 * -errno with a message.
 */
int stats_target_fd(const char *target, pid_t *pid, struct errbuf *err);

/*
 * One line on stderr for a bad command line of `perfvisor CMD`:
 * "perfvisor CMD: <message> (see perfvisor CMD --help)". Returns 2, the
 * usage exit status.
 */
int stats_usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * What a field means, as relations between fields that one version of
 * docs/stats-abi.md states: `perfvisor stats-check` checks each on a live
 * region. The checker built against a frozen ABI (tests/abi/vN) takes the
 * table of that version's documents (tests/abi/vN/meanings.c); the current
 * one is stats/meanings.c. Meanings never change, so every older table's
 * relations hold on today's producer too.
 */
enum stats_rule_kind {
	/* VM field `a` is the sum over online vCPUs of the published vCPU field b[0]: <= that sum in
	   vCPU records copied after the VM record, equal once the VM record is STOPPED. */
	STATS_RULE_VM_SUM = 1,
	/* VM field `a` <= the sum over online vCPUs of vCPU field b[0]'s live value now (with its
	   since companion, docs/stats-abi.md "Live values"). */
	STATS_RULE_VM_LIVE_SUM,
	/* VM field `a` >= VM field b[0] (both written in one update). */
	STATS_RULE_VM_GE,
	/* VM field `a` <= the header's vcpu.online read after it; equal once STOPPED. */
	STATS_RULE_VM_ONLINE,
	/* VM field `a` (ns) <= now - the header's start_time_ns. */
	STATS_RULE_VM_UPTIME,
	/* In every vCPU record, field `a` == the sum of the fields b[] (`slack` NULL), or
	   sum(b[]) <= a <= sum(b[]) + `slack`. */
	STATS_RULE_VCPU_SUM,
};

#define STATS_RULE_MAX_TERMS 8

struct stats_rule {
	enum stats_rule_kind kind;
	const char *a;
	const char *b[STATS_RULE_MAX_TERMS]; /* NULL-terminated when shorter */
	const char *slack;
	const char *doc; /* what the documents say, for the verdict line */
};

extern const struct stats_rule stats_rules[];
extern const unsigned stats_rules_len;
extern const char stats_rules_version[]; /* whose documents: "v1", "current" */

#endif
