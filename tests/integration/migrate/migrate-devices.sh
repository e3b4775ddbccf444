#!/bin/sh
# SPDX-License-Identifier: MIT
# Live migration with virtio devices (docs/migration.md). A disk in the middle of its traffic (8
# writes and 8 reads back per round, 8 in flight): the I/O threads' writes to guest RAM are
# tracked and sent again while paused, the image is synced and its lock handed to the destination,
# which goes on and reads every byte right, and then holds the lock. The same with the destination
# dying with the state: the source takes the lock back and goes on. A destination where the image
# is not (renamed away after the source opened it) refuses the VM before the pause. virtio-rng
# moves with its queue where it was. (virtio-net: migrate-net.sh.)
# cases: migrate-blk migrate-blk-dest migrate-blk-lock migrate-blk-fault migrate-blk-gone migrate-rng
. "$(dirname "$0")/../lib.sh"

dd if=/dev/zero of="$T/m.img" bs=1M count=4 2>/dev/null
# dst NAME ADDR: a destination waiting at ADDR ($dpid, $dwd); env for it in $DENV.
dst() {
	env ${DENV:-} ASAN_OPTIONS=detect_leaks=1 "$PV" run --incoming "$2" --timeout 280 --verbose \
		>"$T/$1.out" 2>"$T/$1.err" </dev/null &
	dpid=$!
	watchdog $dpid 300; dwd=$wdpid
	wait_for "$T/$1.err" 'waiting for a migration on' || bad "$1: the destination never listened"
}

# started NAME SOCK PATTERN: the source just started ($vmpid; now $spid, $swd) serves SOCK and its
# output NAME.out shows PATTERN.
started() {
	spid=$vmpid; swd=$wdpid
	wait_sock "$2" 20 || bad "no control socket"
	wait_for "$T/$1.out" "$3" || bad "the guest never printed '$3'"
}
# moved NAME SOCK PATTERN DST ADDR: that source, moved to a new destination DST waiting at ADDR.
moved() {
	started "$1" "$2" "$3"
	dst "$4" "$5"
	"$PV" migrate "$2" --to "$5" --timeout 120s >>"$T/$cur.out" 2>>"$T/$cur.err" ||
		bad "perfvisor migrate failed: $(tail -n 1 "$T/$cur.err")"
}

cur=migrate-blk; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm blk-a 300 run --kernel "$G/virtio-blk.elf" --disk path="$T/m.img" --cmdline "loop_ms=6000" \
	--api-socket "$T/b.sock" --timeout 280
moved blk-a "$T/b.sock" 'virtio-blk: looping' blk-b "unix:$T/mb"
echo "  (migrate-blk: $(grep -c '^round' "$T/$cur.out") rounds; $(tail -n 1 "$T/$cur.out" | sed 's/^perfvisor migrate: //'))"
vmpid=$spid; wdpid=$swd; stop_vm
[ "$st" -eq 0 ] || bad "the source exited $st"
grep -q 'rounds of 8 writes' "$T/blk-a.out" && bad "the guest finished before it moved"
done_test
cur=migrate-blk-lock; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
# The destination holds the image's lock now: a third VM cannot open it for writing.
run migrate-blk-lock 30 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/m.img" --timeout 20
kill -0 "$dpid" 2>/dev/null || bad "the destination ended before the lock could be tried"
expect_status 125; expect_err 'is in use: another VM'
done_test
cur=migrate-blk-dest; ok=1
vmpid=$dpid; wdpid=$dwd; stop_vm
cp "$T/blk-b.out" "$T/$cur.out"; cp "$T/blk-b.err" "$T/$cur.err"
expect_status 0; expect_out '[0-9]* rounds of 8 writes and 8 reads, every byte right'
expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'; expect_no_out 'went wrong'
expect_err 'virtio-blk0: [0-9]* reads, [0-9]* writes'; expect_clean
done_test

cur=migrate-blk-fault; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm blk-c 300 run --kernel "$G/virtio-blk.elf" --disk path="$T/m.img" --cmdline "loop_ms=6000" \
	--api-socket "$T/c.sock" --timeout 280
started blk-c "$T/c.sock" 'virtio-blk: looping'
DENV=PERFVISOR_MIGRATE_FAULT=state dst blk-d "unix:$T/md"
"$PV" migrate "$T/c.sock" --to "unix:$T/md" --timeout 120s >>"$T/$cur.out" 2>>"$T/$cur.err"
[ $? -eq 1 ] || bad "perfvisor migrate did not fail"
grep -q 'runs on here' "$T/$cur.err" || bad "migrate did not say the VM runs on: $(tail -n 1 "$T/$cur.err")"
vmpid=$dpid; wdpid=$dwd; stop_vm; [ "$st" -eq 99 ] || bad "the destination exited $st, not the fault's 99"
vmpid=$spid; wdpid=$swd; stop_vm
[ "$st" -eq 0 ] || bad "the source exited $st"
grep -q '[0-9]* rounds of 8 writes and 8 reads, every byte right' "$T/blk-c.out" ||
	bad "the source's guest did not finish right: $(grep -m1 -e FAIL -e wrong "$T/blk-c.out")"
grep -q 'runs on without it' "$T/blk-c.err" && bad "the source could not take its disk's lock back"
done_test

cur=migrate-blk-gone; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm blk-e 300 run --kernel "$G/virtio-blk.elf" --disk path="$T/m.img" --cmdline "loop_ms=4000" \
	--api-socket "$T/e.sock" --timeout 280
started blk-e "$T/e.sock" 'virtio-blk: looping'
mv "$T/m.img" "$T/moved.img"
dst blk-f "unix:$T/mf"
"$PV" migrate "$T/e.sock" --to "unix:$T/mf" --timeout 60s >>"$T/$cur.out" 2>>"$T/$cur.err"
[ $? -eq 1 ] || bad "perfvisor migrate did not fail"
expect_err "the VM's disk .*/m.img cannot be opened for writing here: No such file or directory"
expect_err 'runs on here'
echo "  ($cur: $(tail -n 1 "$T/$cur.err"))"
vmpid=$dpid; wdpid=$dwd; stop_vm; [ "$st" -eq 125 ] || bad "the destination exited $st, not 125"
vmpid=$spid; wdpid=$swd; stop_vm
[ "$st" -eq 0 ] || bad "the source exited $st"
grep -q '[0-9]* rounds of 8 writes and 8 reads, every byte right' "$T/blk-e.out" ||
	bad "the source's guest did not finish right: $(grep -m1 -e FAIL -e wrong "$T/blk-e.out")"
mv "$T/moved.img" "$T/m.img"
done_test

cur=migrate-rng; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm rng-a 300 run --kernel "$G/virtio-rng.elf" --rng --cmdline "pause_ms=8000" --api-socket "$T/r.sock" --timeout 280
moved rng-a "$T/r.sock" 'virtio-rng: waiting' rng-b "unix:$T/mr"
vmpid=$spid; wdpid=$swd; stop_vm; [ "$st" -eq 0 ] || bad "the source exited $st"
vmpid=$dpid; wdpid=$dwd; stop_vm; [ "$st" -eq 0 ] || bad "the destination exited $st"
grep -q 'virtio-rng: done' "$T/rng-b.out" || bad "the guest did not finish at the destination"
grep -q '^SUMMARY: [0-9]* tests, 0 unexpected failures' "$T/rng-b.out" || bad "the guest failed: $(grep -m1 FAIL "$T/rng-b.out")"
grep -q 'virtio-rng: 6 requests' "$T/rng-b.err" || bad "the device's counters did not continue: $(grep 'virtio-rng:' "$T/rng-b.err")"
done_test
