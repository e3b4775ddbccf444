#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot and restore: two vCPUs both counting (the snap guest checks itself); the snapshot and
# the restore through pwrite/pread, memory read in.
# cases: snap-smp snap-smp-end
. "$(dirname "$0")/../lib.sh"

cur=snap-smp; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
export PERFVISOR_SNAPSHOT_IO=plain
start_vm snap-smp-a 300 run --kernel "$SNAP" --cpus 2 --cmdline "phases=10" --api-socket "$T/c.sock" --timeout 280
wait_sock "$T/c.sock" 20
wait_for "$T/snap-smp-a.out" 'cpu 1 phase 2/' || bad "CPU 1 never reached phase 2"
snapshot "$T/c.sock" "$T/sc" stop
stop_vm
grep -q '(pwrite)' "$T/$cur.out" || bad "PERFVISOR_SNAPSHOT_IO=plain did not write with pwrite"
done_test
run snap-smp-end 300 "$PV" run --restore "$T/sc" --restore-memory read --timeout 280 --verbose
unset PERFVISOR_SNAPSHOT_IO
expect_status 0; expect_err 'guest memory read with pread'; expect_out 'cpu 1: exits.io counted exactly'
expect_out 'snap: done'; expect_out '^SUMMARY:'; expect_clean
done_test
