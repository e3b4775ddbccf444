#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot and restore with virtio-blk in the middle of disk traffic (docs/snapshot.md): the guest
# writes and reads back 8 x 4 KiB per round, round after round, eight requests in flight; the
# snapshot drains what is at the disk before it saves, the VM stops; the restored VM (no --disk:
# the snapshot names the image) goes on and every byte it reads back is right. snapshot-info
# names the image; the disk's statistics are in the VM record and stats-check passes; they continue
# after the restore. A restore whose image is gone is a clear error.
# cases: snap-virtio-blk snap-virtio-blk-restore snap-virtio-blk-missing
. "$(dirname "$0")/../lib.sh"

dd if=/dev/zero of="$T/s.img" bs=1M count=4 2>/dev/null
cur=snap-virtio-blk; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm blk-a 300 run --kernel "$G/virtio-blk.elf" --disk path="$T/s.img" --cmdline "loop_ms=6000" \
	--api-socket "$T/b.sock" --timeout 280
wait_sock "$T/b.sock" 20 || bad "no control socket"
wait_for "$T/blk-a.out" 'virtio-blk: looping' || bad "the guest never started its rounds"
sleep 1
"$PV" stat "$vmpid" --once --json >"$T/stat.json" 2>>"$T/$cur.err" || bad "perfvisor stat failed"
grep -q '"virtio.blk0.writes"' "$T/stat.json" || bad "no virtio.blk0.writes in the statistics"
grep -q '"virtio.blk0.lat_lt_100us"' "$T/stat.json" || bad "no latency buckets in the statistics"
"$PV" stats-check "$vmpid" >"$T/check.out" 2>&1 || bad "stats-check: $(tail -n 3 "$T/check.out")"
snapshot "$T/b.sock" "$T/b.snap" stop
stop_vm
[ "$st" -eq 0 ] || bad "the first VM exited $st"
grep -q 'rounds of 8 writes' "$T/blk-a.out" && bad "the first VM finished before the snapshot"
info_has "$T/b.snap" "virtio-blk on .*/s.img (status 0xf, queue ready"
done_test

run snap-virtio-blk-restore 300 "$PV" run --restore "$T/b.snap" --verbose --timeout 280
expect_status 0; expect_out '[0-9]* rounds of 8 writes and 8 reads, every byte right'
expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'; expect_no_out 'went wrong'
expect_err 'virtio-blk0: [0-9]* requests'
expect_err 'virtio-blk0: [0-9]* reads, [0-9]* writes'
grep 'virtio-blk0: [0-9]* re' "$T/$cur.err" | sed 's/^/  /'
# The disk's counters continue from the snapshot: the two VMs together wrote and read the guest's
# rounds x 8 blocks (6 s of rounds), so the restored VM's totals reach that only if it started
# from the first VM's counts.
rounds=$(sed -n 's/.* \([0-9]*\) rounds of 8 writes and 8 reads.*/\1/p' "$T/$cur.out")
sed -n 's/.*virtio-blk0: \([0-9]*\) reads, \([0-9]*\) writes,.*/\1 \2/p' "$T/$cur.err" >"$T/rw"
read -r nr nw <"$T/rw" || bad "no disk counters after the restore"
[ -n "$rounds" ] && [ "${nr:-0}" -ge $((rounds * 8)) ] && [ "${nw:-0}" -ge $((rounds * 8)) ] ||
	bad "the disk's counters restarted: ${nr:-?} reads, ${nw:-?} writes after the restore, want >= ${rounds:-?} x 8 each"
expect_clean; done_test

mv "$T/s.img" "$T/gone.img"
run snap-virtio-blk-missing 60 "$PV" run --restore "$T/b.snap" --timeout 30
expect_status 125; expect_err "--disk path=.*/s.img: no such file"; done_test
