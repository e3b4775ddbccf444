#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): every #GP rule; perfvisor logs the guest's #GPs rate-limited.
. "$(dirname "$0")/../lib.sh"

t0=$(date +%s)
run pmu-rules 120 "$PV" run --kernel "$G/pmu-rules.elf" --timeout 100
pmu_guest pmu-rules 18
gp_ratelimited "$(sed -n 's/^pmu-rules: \([0-9]*\) #GPs as expected.*/\1/p' "$T/$cur.out")" $(($(date +%s) - t0))
done_test
