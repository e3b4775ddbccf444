#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot and restore (docs/snapshot.md). The snap guest counts through snapshots and checks itself
# that nothing reset and nothing was counted twice (exits.io exactly K a phase, all exits K + 3,
# task-clock growing, the LCG state intact); the test snapshots it mid-run, kills the original
# and restores it in a new process.
# Here: snapshot -> restore -> snapshot -> restore, one vCPU, the first snapshot in ring 3.
# Each snapshot leaves the guest phases to go (250 ms each, by its TSC), so a slow
# host (TCG) cannot finish the guest before the snapshot request reaches it.
# cases: snap-chain snap-chain-end
. "$(dirname "$0")/../lib.sh"

cur=snap-chain; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm snap-a 300 run --kernel "$SNAP" --cmdline "phases=12 work_ms=250" --api-socket "$T/a.sock" --timeout 280
wait_sock "$T/a.sock" 20
wait_for "$T/snap-a.out" 'phase 2/' || bad "the guest never reached phase 2"
# Most of the guest's time is in ring 3: retry (--resume) until a snapshot caught it there.
n=0
while [ $n -lt 5 ]; do
	n=$((n + 1))
	snapshot "$T/a.sock" "$T/sa$n" resume
	"$PV" snapshot-info "$T/sa$n" >"$T/sa.info" 2>&1 || bad "snapshot-info sa$n: $(cat "$T/sa.info")"
	grep -q '^vCPU 0: .* in ring 3, runnable' "$T/sa.info" && break
done
grep -q '^vCPU 0: .* in ring 3' "$T/sa.info" || bad "no snapshot of 5 caught vCPU 0 in ring 3"
grep -q 'PV PMU counter 0: exits.io = ' "$T/sa.info" || bad "snapshot-info shows no PMU counter"
kill -KILL $vmpid; stop_vm # the original is gone: what follows runs in new processes
start_vm snap-b 300 run --restore "$T/sa$n" --api-socket "$T/b.sock" --timeout 280
wait_sock "$T/b.sock" 20
wait_for "$T/snap-b.out" 'phase 8/' || bad "the restored guest never reached phase 8"
snapshot "$T/b.sock" "$T/sb" stop
stop_vm
[ "$st" -eq 0 ] || bad "snapshot --stop: the VM exited $st"
grep -q 'stopped after a snapshot' "$T/snap-b.err" || bad "no 'stopped after a snapshot' from the restored VM"
"$PV" snapshot-info "$T/sb" --verify >"$T/sb.info" 2>&1 || bad "snapshot-info --verify sb: $(cat "$T/sb.info")"
done_test
run snap-chain-end 300 "$PV" run --restore "$T/sb" --timeout 280 --verbose
expect_status 0; expect_out 'snap: cpu 0 phase 12/12'; expect_out 'snap: done'; expect_out '^SUMMARY:'; expect_clean
expect_no_out 'phase 1/' # it continued; it did not boot again
# The statistics continued: vCPU 0's exits at the end exceed the snapshot's (taken 8 phases
# in, 4 to go: about 1.5 times as many at the end), and are not doubled.
e0=$(info_exits "$T/sb.info" 0)
e1=$(sed -n 's/^perfvisor: vCPU 0: \([0-9]*\) exits.*/\1/p' "$T/$cur.err")
echo "  (vCPU 0 exits: $e0 in the snapshot, $e1 at the end)"
[ -n "$e0" ] && [ -n "$e1" ] && [ "$e1" -gt "$e0" ] && [ "$e1" -lt $((2 * e0)) ] ||
	bad "exits went from '$e0' at the snapshot to '$e1' at the end: reset or counted twice"
done_test
