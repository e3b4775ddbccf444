#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): two vCPUs, each with its own ratio and stacks.
. "$(dirname "$0")/../lib.sh"

run profile-2cpus 180 "$PV" run --kernel "$PROF" --cpus 2 --profile task-clock:1ms --profile-output "$T/prof2" --timeout 150
expect_status 0; expect_out '^SUMMARY:'; expect_clean
prof_checks "$T/prof2"; prof_ratio "$T/prof2" 5 hot_a hot_b; prof_ratio "$T/prof2" 6 hot_b hot_a
grep -q '^vcpu1;ring3;rt_user_return;user_main;work_round;hot_b [0-9]*$' "$T/prof2/stacks.folded" || bad "no vcpu1 stack"
done_test
