#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): snapshot and restore: the profile's configuration
# is part of the VM's state. The first process writes the samples up to the snapshot; the restored
# one profiles the rest, same spec; --profile cannot be given to the restore.
# cases: profile-restore profile-restore-twice
. "$(dirname "$0")/../lib.sh"

cur=profile-snapshot; ok=1
start_vm $cur 120 run --kernel "$PROF" --profile task-clock:1ms --profile-output "$T/prof-a" --symbols "$G/profile.map" \
	--api-socket "$T/prof.sock" --cmdline "ms=4000" --timeout 100
wait_sock "$T/prof.sock" 20
prof_wait "$T/prof.sock" 200 || bad "the profile never had 200 samples with hot_a on top"
"$PV" snapshot "$T/prof.sock" --output "$T/prof-snap" --stop >>"$T/$cur.out" 2>>"$T/$cur.err" || bad "snapshot failed"
stop_vm
expect_status 0; expect_err "samples written to $T/prof-a"
"$PV" snapshot-info "$T/prof-snap" >"$T/$cur.info" 2>&1
grep -q "^profile: task-clock:1000000ns, symbols from $G/profile.map" "$T/$cur.info" || bad "snapshot-info: $(grep profile "$T/$cur.info")"
"$JC" spec=task-clock:1000000ns <"$T/prof-a/profile.json" >/dev/null || bad "first profile: wrong spec"
[ "$("$JC" samples <"$T/prof-a/profile.json")" -gt 100 ] || bad "first profile: too few samples"
done_test
run profile-restore 120 "$PV" run --restore "$T/prof-snap" --profile-output "$T/prof-b" --timeout 100
expect_status 0; expect_out '^SUMMARY:'; expect_clean; expect_err "samples written to $T/prof-b"
prof_checks "$T/prof-b"; prof_ratio "$T/prof-b" 5 hot_a hot_b
"$JC" spec=task-clock:1000000ns symbols=System.map <"$T/prof-b/profile.json" >/dev/null || bad "restored profile: wrong spec or symbols"
done_test
run profile-restore-twice 20 "$PV" run --restore "$T/prof-snap" --profile cpu-clock:1ms --timeout 10
expect_status 2; expect_err '--profile cannot be combined with --restore'; done_test
