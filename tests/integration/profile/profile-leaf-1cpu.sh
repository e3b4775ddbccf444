#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): mode=leaf on one vCPU (samples the host kernel
# records, no stacks, no vCPU thread time).
. "$(dirname "$0")/../lib.sh"

run profile-leaf-1cpu 120 "$PV" run --kernel "$PROF" --profile task-clock:1ms,mode=leaf --profile-output "$T/prof-leaf1" --timeout 100
expect_status 0; expect_out '^SUMMARY:'; expect_clean; expect_err "samples written to $T/prof-leaf1"
prof_leaf_checks "$T/prof-leaf1"; prof_ratio "$T/prof-leaf1" 5 hot_a hot_b
"$JC" vcpus/0/sample_ns=0 <"$T/prof-leaf1/profile.json" >/dev/null || bad "leaf samples cost perfvisor's vCPU thread time"
"$PV" profile report "$T/prof-leaf1" --top 4 | sed 's/^/    | /'
done_test
