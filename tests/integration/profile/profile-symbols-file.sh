#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): the stripped guest with its symbols as nm text (--symbols, as a System.map).
. "$(dirname "$0")/../lib.sh"

run profile-symbols-file 120 "$PV" run --kernel "$G/profile.stripped" --profile task-clock:1ms --profile-output "$T/prof5" \
	--symbols "$G/profile.map" --timeout 100
expect_status 0; expect_clean; prof_checks "$T/prof5"; prof_ratio "$T/prof5" 5 hot_a hot_b
"$JC" symbols=System.map <"$T/prof5/profile.json" >/dev/null || bad "symbols is not System.map"
done_test
