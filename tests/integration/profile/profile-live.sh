#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): live, the control socket's profile request and
# perfvisor stat --profile-top, while it runs.
. "$(dirname "$0")/../lib.sh"

cur=profile-live; ok=1
start_vm $cur 120 run --kernel "$PROF" --profile task-clock:1ms --profile-output "$T/prof-live" \
	--api-socket "$T/prof-live.sock" --cmdline "ms=5000" --timeout 100
wait_sock "$T/prof-live.sock" 20
prof_wait "$T/prof-live.sock" 300 || bad "the live profile never had 300 samples with hot_a on top"
"$PV" api "$T/prof-live.sock" '{"cmd":"profile","top":2}' >"$T/$cur.api" 2>&1 || bad "profile request failed: $(cat "$T/$cur.api")"
"$JC" top/0/symbol=hot_a top/1/symbol=hot_b spec=task-clock:1000000ns <"$T/$cur.api" >/dev/null ||
	bad "profile reply: $(cat "$T/$cur.api")"
"$PV" api "$T/prof-live.sock" '{"cmd":"profile","top":0}' >"$T/$cur.api2" 2>&1
grep -q '"top\\" must be 1 to 100' "$T/$cur.api2" || bad "top 0 accepted: $(cat "$T/$cur.api2")"
"$PV" stat "$T/prof-live.sock" --once --fields 'profile.*' --profile-top 3 >"$T/$cur.stat" 2>&1 || bad "stat failed"
grep -q '^profile task-clock:1000000ns: [0-9]* samples' "$T/$cur.stat" || bad "stat shows no profile"
awk '$NF == "hot_a" { f = 1 } END { exit !f }' "$T/$cur.stat" || bad "stat: hot_a not among the top symbols"
awk '$1 == "0" && $3 > 0 { f = 1 } END { exit !f }' "$T/$cur.stat" || bad "stat: profile.samples of vCPU 0 is not > 0"
sed 's/^/    | /' "$T/$cur.stat"
stop_vm
expect_status 0; expect_out '^SUMMARY:'
done_test
