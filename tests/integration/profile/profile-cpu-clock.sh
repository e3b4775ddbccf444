#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): the cpu-clock event every 500 us.
. "$(dirname "$0")/../lib.sh"

run profile-cpu-clock 120 "$PV" run --kernel "$PROF" --profile cpu-clock:500us --profile-output "$T/prof3" --timeout 100
expect_status 0; expect_clean; prof_checks "$T/prof3"; prof_ratio "$T/prof3" 5 hot_a hot_b
"$JC" spec=cpu-clock:500000ns <"$T/prof3/profile.json" >/dev/null || bad "spec not cpu-clock:500000ns"
done_test
