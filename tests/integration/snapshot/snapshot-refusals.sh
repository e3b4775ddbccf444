#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot refusals on the control socket: the VM keeps running and says so.
# cases: snapshot-exists snapshot-api-refusals snapshot-disk-full snapshot-after-refusals
. "$(dirname "$0")/../lib.sh"

start_vm snap-bad-vm 120 run --kernel "$G/behave.elf" --cmdline "mode=hang" --cpus 2 --api-socket "$T/d.sock" --timeout 100
wait_sock "$T/d.sock" 20
mkdir -p "$T/exists"
run snapshot-exists 30 "$PV" snapshot "$T/d.sock" --output "$T/exists"
expect_status 1; expect_err 'already exists'; done_test
run snapshot-api-refusals 30 "$PV" api "$T/d.sock" '{"cmd":"snapshot","dir":"relative/dir"}' '{"cmd":"snapshot"}' \
	"{\"cmd\":\"snapshot\",\"dir\":\"$T/x\",\"then\":\"later\"}" "{\"cmd\":\"snapshot\",\"dir\":\"$T/no/such/parent\"}"
expect_status 1; expect_out 'must be an absolute path'; expect_out 'needs \\"dir\\"'; expect_out 'must be \\"resume\\" or \\"stop\\"'
expect_out 'does not exist'; done_test
# A full disk mid-snapshot: an error on the socket, no half snapshot left, the VM runs on.
cur=snapshot-disk-full; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
mkdir -p "$T/full"
# This guest's snapshot is about 120 KiB (28 KiB of state, and its RAM's pages that hold
# data: the loader leaves its 2.3 MiB of bss as holes); 64 KiB cannot hold it.
if mount -t tmpfs -o size=64k tmpfs "$T/full" 2>/dev/null; then
	"$PV" snapshot "$T/d.sock" --output "$T/full/s" >"$T/$cur.out" 2>"$T/$cur.err"; st=$?
	[ "$st" -eq 1 ] || bad "exit status $st, expected 1"
	expect_err 'No space left on device'
	[ -z "$(ls -A "$T/full")" ] || bad "left behind in the full file system: $(ls -A "$T/full")"
	umount "$T/full"
	"$PV" api "$T/d.sock" '{"cmd":"query"}' | grep -q '"state":"running"' || bad "the VM is not running after the failed snapshot"
	done_test
else
	echo "SKIP snapshot-disk-full: cannot mount a tmpfs here (needs root)"
fi
run snapshot-after-refusals 60 "$PV" snapshot "$T/d.sock" --output "$T/d-ok"
expect_status 0; expect_out 'then resumed'; done_test
stop_vm TERM
