/* SPDX-License-Identifier: MIT */
/* Run `perfvisor stats-check <this process>` with stdout captured: for both halves of the compatibility test. */
#ifndef PERFVISOR_TEST_ABI_COMPAT_CHECK_H
#define PERFVISOR_TEST_ABI_COMPAT_CHECK_H

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats/stats.h"

static inline int compat_check_self(char *out, size_t len)
{
	char pid[16], *argv[] = { "stats-check", pid, NULL };
	int saved, tmp, rc;
	ssize_t n;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fflush(stdout);
	tmp = memfd_create("check-out", MFD_CLOEXEC);
	saved = dup(STDOUT_FILENO);
	dup2(tmp, STDOUT_FILENO);
	rc = stats_cmd_check(2, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = pread(tmp, out, len - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(tmp);
	return rc;
}

#endif
