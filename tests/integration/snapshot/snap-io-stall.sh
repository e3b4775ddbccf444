#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot: a stalled io_uring (no completion within PERFVISOR_SNAPSHOT_IO_STALL_MS; 0 forces it) is
# cancelled and the memory written with pwrite: the snapshot is whole and restores.
# cases: snap-io-stall snap-io-stall-end
. "$(dirname "$0")/../lib.sh"

cur=snap-io-stall; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
PERFVISOR_SNAPSHOT_IO_STALL_MS=0 start_vm snap-stall-a 300 run --kernel "$SNAP" --cpus 1 --cmdline "phases=12 work_ms=250" \
	--api-socket "$T/st.sock" --timeout 280
wait_sock "$T/st.sock" 20
wait_for "$T/snap-stall-a.out" 'cpu 0 phase 2/' || bad "CPU 0 never reached phase 2"
snapshot "$T/st.sock" "$T/sst" stop
stop_vm
grep -q 'io_uring made no progress in 0 ms; using pwrite instead' "$T/snap-stall-a.err" ||
	bad "the stall path was not taken: $(grep snapshot "$T/snap-stall-a.err")"
done_test
run snap-io-stall-end 300 "$PV" run --restore "$T/sst" --timeout 280
expect_status 0; expect_out 'snap: done'; expect_out '^SUMMARY:'; expect_clean
done_test
