/* SPDX-License-Identifier: MIT */
/*
 * Run `perfvisor stats-check [ARG]` in this process with stdout captured,
 * for the stats unit tests and the ABI compatibility tests (which find
 * this process's own region by its PID).
 */
#ifndef PERFVISOR_TEST_STATS_CHECK_RUN_H
#define PERFVISOR_TEST_STATS_CHECK_RUN_H

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats/stats.h"

/* ARG NULL: no argument. Returns the exit status; out gets what it printed. */
static inline int stats_check_run(const char *arg, char *out, size_t outlen)
{
	char *argv[] = { "stats-check", (char *)arg, NULL };
	int argc = arg ? 2 : 1, saved, tmp, rc;
	ssize_t n;

	fflush(stdout);
	tmp = memfd_create("check-out", MFD_CLOEXEC);
	saved = dup(STDOUT_FILENO);
	dup2(tmp, STDOUT_FILENO);
	rc = stats_cmd_check(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = pread(tmp, out, outlen - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(tmp);
	return rc;
}

/* The same on this process's own region. */
static inline int stats_check_self(char *out, size_t outlen)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return stats_check_run(pid, out, outlen);
}

#endif
