#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling: a full real-time signal queue makes the kernel send plain SIGIO, which does
# not say which counter overflowed: the sample is taken all the same (under the first event), never
# lost silently. PERFVISOR_PROFILE_SIGIO=1 (a test knob) has the profiler's counters send plain SIGIO.
# Here: pmu-count, whose PV PMU still counts exactly.
. "$(dirname "$0")/../lib.sh"

run profile-sigio-pmu 240 env PERFVISOR_PROFILE_SIGIO=1 "$PV" run --kernel "$G/pmu-count.elf" --profile task-clock:1ms \
	--profile-output "$T/prof-sigio6" --timeout 200
pmu_guest profile-sigio-pmu 25
[ "$("$JC" samples <"$T/prof-sigio6/profile.json")" -gt 0 ] || bad "no samples"
done_test
