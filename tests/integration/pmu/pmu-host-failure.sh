#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): host failure: under a file-descriptor limit, perf_event_open fails for some
# counters (EMFILE): ERROR bits, no #GP.
. "$(dirname "$0")/../lib.sh"

cur=pmu-host-failure; ok=1
(ulimit -n 16 && exec timeout -s KILL 120 "$PV" run --kernel "$G/pmu-budget.elf" --cmdline host_failures \
	--timeout 100) >"$T/$cur.out" 2>"$T/$cur.err" </dev/null
st=$?
pmu_guest pmu-host-failure 4; expect_out 'counters refused through ERROR'; expect_err 'Too many open files'
done_test
