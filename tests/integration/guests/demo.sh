#!/bin/sh
# SPDX-License-Identifier: MIT
# demo (the make run guest): every CPU measures itself with the PV PMU.
. "$(dirname "$0")/../lib.sh"

run demo 240 "$PV" run --kernel "$G/demo.elf" --cpus 2 --timeout 200
expect_status 0; expect_clean
expect_out 'PV PMU version 1'; expect_out 'task-clock us'
expect_out '2 of 2 CPUs counted their exits with the PV PMU'
# one row per CPU whose exits column (5th) is a number: counted, not n/a
[ "$(awk '$1 ~ /^[01]$/ && $5 ~ /^[0-9]+$/' "$T/demo.out" | wc -l)" -eq 2 ] || bad "no per-CPU counter table"
done_test
