#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot and restore with virtio-net (docs/snapshot.md): the guest talks to the host's end of
# the tap (ARP, ICMP echo), waits; the snapshot is taken and the VM stopped; the restored VM
# re-opens the tap by the name the snapshot saved (no --net), keeps its MAC, its queues where
# they were and its counters (each queue's notifications and interrupts too, which add up to the
# device's) and its interrupt coalescing (rx-usecs=, tx-usecs=), and the guest's second exchange
# works. snapshot-info describes it.
# cases: snap-virtio-net snap-virtio-net-restore
. "$(dirname "$0")/../lib.sh"

tap=pvtest-snap0
need_tap "$tap" 10.0.2.1/24

cur=snap-virtio-net; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm net-a 300 run --kernel "$G/virtio-net.elf" --net tap=$tap,mac=52:54:00:12:34:57,rx-usecs=500,tx-usecs=1500 --cmdline "pause_ms=8000" \
	--api-socket "$T/n.sock" --timeout 280
wait_sock "$T/n.sock" 20 || bad "no control socket"
wait_for "$T/net-a.out" 'virtio-net: waiting' || bad "the guest never waited"
grep -q 'PASS: first: ICMP echo 3 answered' "$T/net-a.out" || bad "the first exchange failed: $(grep FAIL "$T/net-a.out")"
stat_until "$vmpid" "$T/stat.json" vm/virtio.net0.tx_packets=4 vm/virtio.net0.tx_errors=0 vm/virtio.net0.rx_dropped=0 ||
	bad "statistics: $(grep -o '"virtio[^,]*' "$T/stat.json" | tr '\n' ' ')"
# Each queue's notifications and interrupts (the guest is idle, waiting): the device's are their sums.
rn=$("$JC" vm/virtio.net0.rx_notifications <"$T/stat.json"); tn=$("$JC" vm/virtio.net0.tx_notifications <"$T/stat.json")
ri=$("$JC" vm/virtio.net0.rx_interrupts <"$T/stat.json"); ti=$("$JC" vm/virtio.net0.tx_interrupts <"$T/stat.json")
dn=$("$JC" vm/virtio.net0.notifications <"$T/stat.json")
echo "  (queues: rx ${rn:-?} notifications ${ri:-?} interrupts, tx ${tn:-?} notifications ${ti:-?} interrupts; the device's notifications ${dn:-?})"
if [ -z "$tn" ] || [ -z "$ri" ] || [ -z "$dn" ] || [ "$tn" -lt 1 ] || [ "$ri" -lt 1 ] || [ $((rn + tn)) -ne "$dn" ]; then
	bad "per-queue counters: rx $rn + tx $tn notifications, the device's $dn; rx interrupts $ri"
fi
"$PV" stats-check "$vmpid" >"$T/check.out" 2>&1 || bad "stats-check: $(tail -n 3 "$T/check.out")"
snapshot "$T/n.sock" "$T/n.snap" stop
stop_vm
[ "$st" -eq 0 ] || bad "the first VM exited $st"
info_has "$T/n.snap" "virtio-net on tap $tap, MAC 52:54:00:12:34:57 (status 0xf, [1-9][0-9]* frames received, 4 sent; interrupts coalesced over 500 us receiving, 1500 us sending)"
done_test
run snap-virtio-net-restore 300 "$PV" run --restore "$T/n.snap" --verbose --timeout 280
expect_status 0; expect_out 'virtio-net: going on'; expect_out 'virtio-net: done'
expect_out 'PASS: second: ICMP echo 3 answered'
expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'; expect_no_out 'first:'
expect_err "virtio-net0: tap $tap, MAC 52:54:00:12:34:57, .*; interrupts coalesced over 500 us receiving, 1500 us sending"
expect_err 'virtio-net0: received [1-9][0-9]* frames, [0-9]* bytes, 0 dropped; sent 8 frames'
# The queues' counters continued: the second exchange's transmit kicks come on top of the first's.
tn2=$(sed -n 's/.*virtio-net0: receive queue [0-9]* notifications, [0-9]* interrupts; transmit queue \([0-9]*\) notifications.*/\1/p' "$T/$cur.err")
[ -n "$tn2" ] && [ -n "$tn" ] && [ "$tn2" -gt "$tn" ] || bad "transmit queue notifications: ${tn:-?} in the snapshot, ${tn2:-none} at the end"
expect_clean; done_test
