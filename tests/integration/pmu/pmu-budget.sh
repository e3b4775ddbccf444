#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): 9 CPUs x 8 task-clock counters ask for 72 host counters: the 8 beyond the VM's
# budget of 64 are refused through ERROR (no #GP, no crash), logged rate-limited; released ones can be had again.
. "$(dirname "$0")/../lib.sh"

run pmu-budget 240 "$PV" run --kernel "$G/pmu-budget.elf" --cpus 9 --timeout 200
pmu_guest pmu-budget 7; expect_out 'ERROR bits over all CPUs: 8, want 8'; expect_err 'budget of host counters is used up'
done_test
