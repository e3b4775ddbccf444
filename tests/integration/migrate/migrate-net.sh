#!/bin/sh
# SPDX-License-Identifier: MIT
# Live migration with virtio-net on a tap (docs/migration.md): the guest talks to the host's end of
# the tap (ARP, ICMP echo) and waits; it moves; at the pause the source detaches from the tap and
# the destination attaches to it by the name the state names, with the MAC and the queues where
# they were, and its transmit interrupt coalescing (tx-usecs=), and the guest's second exchange
# works there. The same with the destination dying
# with the state: the source attaches again and the second exchange works at the source.
# cases: migrate-net migrate-net-fault
. "$(dirname "$0")/../lib.sh"

tap=pvtest-mig0
need_tap "$tap" 10.0.2.1/24

# net NAME SOCK DST ADDR: the guest on the tap, past its first exchange, moved to DST at ADDR
# (env for the destination in $DENV); $spid/$swd the source, $dpid/$dwd the destination, $mst
# perfvisor migrate's status.
net() {
	start_vm "$1" 300 run --kernel "$G/virtio-net.elf" --net tap=$tap,mac=52:54:00:12:34:58,tx-usecs=700 \
		--cmdline "pause_ms=8000" --api-socket "$2" --timeout 280
	spid=$vmpid; swd=$wdpid
	wait_sock "$2" 20 || bad "no control socket"
	wait_for "$T/$1.out" 'virtio-net: waiting' || bad "the guest never waited"
	grep -q 'PASS: first: ICMP echo 3 answered' "$T/$1.out" || bad "the first exchange failed: $(grep FAIL "$T/$1.out")"
	env ${DENV:-} ASAN_OPTIONS=detect_leaks=1 "$PV" run --incoming "$4" --timeout 280 --verbose \
		>"$T/$3.out" 2>"$T/$3.err" </dev/null &
	dpid=$!
	watchdog $dpid 300; dwd=$wdpid
	wait_for "$T/$3.err" 'waiting for a migration on' || bad "the destination never listened"
	"$PV" migrate "$2" --to "$4" --timeout 60s >>"$T/$cur.out" 2>>"$T/$cur.err"
	mst=$?
}

cur=migrate-net; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
net net-a "$T/a.sock" net-b "unix:$T/mb"
[ "$mst" -eq 0 ] || bad "perfvisor migrate failed: $(tail -n 1 "$T/$cur.err")"
echo "  ($cur: $(tail -n 1 "$T/$cur.out" | sed 's/^perfvisor migrate: //'))"
vmpid=$spid; wdpid=$swd; stop_vm; [ "$st" -eq 0 ] || bad "the source exited $st"
vmpid=$dpid; wdpid=$dwd; stop_vm; [ "$st" -eq 0 ] || bad "the destination exited $st"
grep -q 'virtio-net: going on' "$T/net-a.out" && bad "the guest went on at the source"
grep -q 'PASS: second: ICMP echo 3 answered' "$T/net-b.out" ||
	bad "the second exchange failed at the destination: $(grep -m1 FAIL "$T/net-b.out")"
grep -q '^SUMMARY: [0-9]* tests, 0 unexpected failures' "$T/net-b.out" || bad "the guest failed: $(grep -m1 FAIL "$T/net-b.out")"
grep -q "virtio-net0: tap $tap, MAC 52:54:00:12:34:58, .*; interrupts coalesced over 0 us receiving, 700 us sending" "$T/net-b.err" ||
	bad "the destination did not attach to $tap with the MAC and the coalescing: $(grep 'virtio-net0: tap' "$T/net-b.err")"
grep -q 'virtio-net0: received [1-9][0-9]* frames, [0-9]* bytes, 0 dropped; sent 8 frames' "$T/net-b.err" ||
	bad "the device's counters did not continue: $(grep 'virtio-net0: received' "$T/net-b.err")"
done_test

cur=migrate-net-fault; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
DENV=PERFVISOR_MIGRATE_FAULT=state net net-c "$T/c.sock" net-d "unix:$T/md"
[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
grep -q 'runs on here' "$T/$cur.err" || bad "migrate did not say the VM runs on: $(tail -n 1 "$T/$cur.err")"
vmpid=$dpid; wdpid=$dwd; stop_vm; [ "$st" -eq 99 ] || bad "the destination exited $st, not the fault's 99"
vmpid=$spid; wdpid=$swd; stop_vm; [ "$st" -eq 0 ] || bad "the source exited $st"
grep -q 'PASS: second: ICMP echo 3 answered' "$T/net-c.out" ||
	bad "the second exchange failed at the source: $(grep -m1 FAIL "$T/net-c.out")"
grep -q 'runs on without it' "$T/net-c.err" && bad "the source could not attach to its tap again"
done_test
