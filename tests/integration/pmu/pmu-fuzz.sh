#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): fuzzing: perfvisor survives, logs #GPs rate-limited, and the PMU still counts exactly afterwards.
. "$(dirname "$0")/../lib.sh"

t0=$(date +%s)
run pmu-fuzz 400 "$PV" run --kernel "$G/pmu-fuzz.elf" --cmdline "iters=20000 seed=12345" --timeout 380
pmu_guest pmu-fuzz 4
gp=$(sed -n 's/.* writes accepted, \([0-9]*\) writes #GP, [0-9]* reads, \([0-9]*\) reads #GP.*/\1 \2/p' "$T/$cur.out")
set -- $gp
gp_ratelimited $((${1:-0} + ${2:-0})) $(($(date +%s) - t0))
done_test
