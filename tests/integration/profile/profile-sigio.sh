#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling: a full real-time signal queue makes the kernel send plain SIGIO, which does
# not say which counter overflowed: the sample is taken all the same (under the first event), never
# lost silently. PERFVISOR_PROFILE_SIGIO=1 (a test knob) has the profiler's counters send plain SIGIO.
# Here: the profile guest on two vCPUs.
. "$(dirname "$0")/../lib.sh"

run profile-sigio 120 env PERFVISOR_PROFILE_SIGIO=1 "$PV" run --kernel "$PROF" --cpus 2 --profile task-clock:1ms \
	--profile-output "$T/prof-sigio" --timeout 100
expect_status 0; expect_out '^SUMMARY:'; expect_clean
prof_checks "$T/prof-sigio"; prof_ratio "$T/prof-sigio" 5 hot_a hot_b; prof_ratio "$T/prof-sigio" 6 hot_b hot_a
done_test
