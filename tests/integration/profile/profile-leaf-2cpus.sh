#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): mode=leaf on two vCPUs.
. "$(dirname "$0")/../lib.sh"

run profile-leaf-2cpus 180 "$PV" run --kernel "$PROF" --cpus 2 --profile task-clock:1ms,mode=leaf --profile-output "$T/prof-leaf2" --timeout 150
expect_status 0; expect_out '^SUMMARY:'; expect_clean
prof_leaf_checks "$T/prof-leaf2"; prof_ratio "$T/prof-leaf2" 5 hot_a hot_b; prof_ratio "$T/prof-leaf2" 6 hot_b hot_a
done_test
