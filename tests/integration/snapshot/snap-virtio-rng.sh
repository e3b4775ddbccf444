#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot and restore with virtio-rng (docs/snapshot.md): the guest asks for random bytes three
# times, waits; the snapshot is taken (the I/O thread held off while it saves) and the VM stopped;
# the restored VM has the device without --rng, with its queue where it was, and the guest's
# next three requests are answered with their interrupts. snapshot-info describes the device;
# the device's counters are in the statistics (vm/virtio.rng.*) and continue after the restore.
# cases: snap-virtio-rng snap-virtio-rng-restore
. "$(dirname "$0")/../lib.sh"

cur=snap-virtio-rng; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm rng-a 300 run --kernel "$G/virtio-rng.elf" --rng --cmdline "pause_ms=6000" --api-socket "$T/r.sock" --timeout 280
wait_sock "$T/r.sock" 20 || bad "no control socket"
wait_for "$T/rng-a.out" 'virtio-rng: waiting' || bad "the guest never waited"
stat_until "$vmpid" "$T/stat.json" vm/virtio.rng.requests=3 vm/virtio.rng.dropped=0 ||
	bad "statistics: $(grep -o '"virtio[^,]*' "$T/stat.json" | tr '\n' ' ')"
"$PV" stats-check "$vmpid" >"$T/check.out" 2>&1 || bad "stats-check: $(tail -n 3 "$T/check.out")"
snapshot "$T/r.sock" "$T/r.snap" stop
stop_vm
[ "$st" -eq 0 ] || bad "the first VM exited $st"
grep -q 'virtio-rng: going on' "$T/rng-a.out" && bad "the first VM went on after the snapshot"
info_has "$T/r.snap" 'virtio-rng (status 0xf, queue ready, 3 requests served)'
done_test
run snap-virtio-rng-restore 300 "$PV" run --restore "$T/r.snap" --verbose --timeout 280
expect_status 0; expect_out 'virtio-rng: going on'; expect_out 'virtio-rng: done'
expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'; expect_no_out 'round [012]:'
expect_err 'virtio-rng: 6 requests'
expect_clean; done_test
