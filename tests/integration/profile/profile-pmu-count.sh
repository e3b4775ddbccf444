#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling with the PV PMU: the guest's own counters still count exactly while the host samples it.
. "$(dirname "$0")/../lib.sh"

run profile-pmu-count 240 "$PV" run --kernel "$G/pmu-count.elf" --profile task-clock:1ms --profile-output "$T/prof6" --timeout 200
pmu_guest profile-pmu-count 25
[ "$("$JC" samples <"$T/prof6/profile.json")" -gt 0 ] || bad "no samples"
done_test
