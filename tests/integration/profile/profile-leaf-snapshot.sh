#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): mode=leaf live, and through a snapshot:
# the stats region's profile.samples grow while the guest runs; the restored VM profiles in mode=leaf again.
# cases: profile-leaf-restore
. "$(dirname "$0")/../lib.sh"

cur=profile-leaf-snapshot; ok=1
start_vm $cur 120 run --kernel "$PROF" --profile task-clock:1ms,mode=leaf --profile-output "$T/prof-la" \
	--api-socket "$T/prof-leaf.sock" --cmdline "ms=4000" --timeout 100
wait_sock "$T/prof-leaf.sock" 20
prof_wait "$T/prof-leaf.sock" 200 || bad "the live profile never had 200 samples with hot_a on top"
"$PV" stat $vmpid --json --interval 0.3 --count 2 --fields 'profile.samples' >"$T/$cur.stat" 2>&1 || bad "stat failed"
a=$(head -n 1 "$T/$cur.stat" | "$JC" vcpus/0/profile.samples 2>/dev/null); b=$(tail -n 1 "$T/$cur.stat" | "$JC" vcpus/0/profile.samples 2>/dev/null)
echo "  ($cur: profile.samples of vCPU 0: ${a:-?} then ${b:-?} 0.3 s later)"
[ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt "${a:-0}" ] || bad "profile.samples do not grow live: ${a:-?} then ${b:-?}"
"$PV" snapshot "$T/prof-leaf.sock" --output "$T/prof-leaf-snap" --stop >>"$T/$cur.out" 2>>"$T/$cur.err" || bad "snapshot failed"
stop_vm
expect_status 0; expect_err "samples written to $T/prof-la"
"$PV" snapshot-info "$T/prof-leaf-snap" 2>&1 | grep -q '^profile: task-clock:1000000ns,mode=leaf' || bad "snapshot-info does not show mode=leaf"
done_test
run profile-leaf-restore 120 "$PV" run --restore "$T/prof-leaf-snap" --profile-output "$T/prof-lb" --timeout 100
expect_status 0; expect_out '^SUMMARY:'; expect_clean
prof_leaf_checks "$T/prof-lb"; prof_ratio "$T/prof-lb" 5 hot_a hot_b
done_test
