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

#endif
