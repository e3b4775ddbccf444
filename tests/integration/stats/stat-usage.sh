#!/bin/sh
# SPDX-License-Identifier: MIT
# perfvisor stat and stats-check with bad arguments, or a process that is no VM.
# cases: stat-no-target stat-bad-flag stat-no-process stat-not-a-vm stats-check-no-target
. "$(dirname "$0")/../lib.sh"

run stat-no-target 10 "$PV" stat
expect_status 2; done_test
run stat-bad-flag 10 "$PV" stat 1 --frobnicate
expect_status 2; expect_err 'frobnicate'; done_test
run stat-no-process 10 "$PV" stat 999999 --once
expect_status 1; expect_err '999999'; done_test
run stat-not-a-vm 10 "$PV" stat $$ --once
expect_status 1; expect_err 'no perfvisor statistics region'; done_test
run stats-check-no-target 10 "$PV" stats-check
expect_status 2; done_test
