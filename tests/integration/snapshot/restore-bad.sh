#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot: bad input, refused with one clear line, nothing run. The damaged snapshots are copies
# of a good one this test takes first (good_snapshot: the snap guest on one vCPU, stopped at phase 2).
# cases: restore-no-dir restore-not-a-snapshot restore-truncated restore-flipped snapshot-info-flipped
# cases: restore-newer-format restore-fdt-version snapshot-info-fdt-version restore-vcpu-count
# cases: restore-memory-flipped snapshot-info-verify restore-no-memory restore-memory-size restore-and-cpus
# cases: snapshot-usage snapshot-info-usage
. "$(dirname "$0")/../lib.sh"

good=$T/good
good_snapshot "$good"
run restore-no-dir 30 "$PV" run --restore "$T/nonexistent"
expect_status 125; expect_err 'not a directory'; done_test
mkdir -p "$T/empty"
run restore-not-a-snapshot 30 "$PV" run --restore "$T/empty"
expect_status 125; expect_err 'not a perfvisor snapshot directory'; done_test
damaged; head -c 1000 "$good/state.fdt" >"$T/bad/state.fdt"
run restore-truncated 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'truncated'; done_test
# Byte 5000 lies inside vCPU 0's 4 KiB xsave blob (from about 3500), so the
# checksum, not the tree's structure, catches it, also when nodes before it grow.
damaged; flip "$T/bad/state.fdt" 5000
run restore-flipped 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'checksum mismatch'; done_test
run snapshot-info-flipped 30 "$PV" snapshot-info "$T/bad"
expect_status 1; expect_err 'checksum mismatch'; done_test
damaged; "$B/tests/fdtset" "$T/bad/state.fdt" / format 2 # as a newer perfvisor would write it
run restore-newer-format 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'snapshot format 2: this perfvisor reads formats 1 to 1'; done_test
# A device tree of version 5 (the header's version field, at byte 20): libfdt 1.6.1 crashes
# checking those (found by fuzz/snapshot.c), so perfvisor refuses them before it looks.
damaged; printf '\000\000\000\005' | dd of="$T/bad/state.fdt" bs=1 seek=20 count=4 conv=notrunc 2>/dev/null
run restore-fdt-version 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'device tree version 5 (perfvisor writes 17'; done_test
run snapshot-info-fdt-version 30 "$PV" snapshot-info "$T/bad"
expect_status 1; expect_err 'device tree version 5'; done_test
# A consistent file (checksum recomputed) whose vCPU count disagrees with its vcpu@ nodes.
damaged; "$B/tests/fdtset" "$T/bad/state.fdt" /machine vcpus 3 --resum
run restore-vcpu-count 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'the number of vcpu@ nodes differs from machine/vcpus'; done_test
damaged; flip "$T/bad/memory" 1048676 # a byte of the guest's code at 1 MiB
run restore-memory-flipped 60 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'the memory file is damaged'; done_test
run snapshot-info-verify 60 "$PV" snapshot-info "$T/bad" --verify
expect_status 1; expect_err 'the memory file is damaged'; done_test
damaged; rm "$T/bad/memory"
run restore-no-memory 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'cannot open the memory file'; done_test
damaged; head -c 1048576 "$good/memory" >"$T/bad/memory"
run restore-memory-size 30 "$PV" run --restore "$T/bad"
expect_status 125; expect_err 'the memory file is 1048576 bytes'; done_test
run restore-and-cpus 10 "$PV" run --restore "$good" --cpus 2
expect_status 2; expect_err '--cpus cannot be combined with --restore'; done_test
run snapshot-usage 10 "$PV" snapshot "$T/nosock"
expect_status 2; expect_err 'needs SOCKET and --output DIR'; done_test
run snapshot-info-usage 10 "$PV" snapshot-info
expect_status 2; expect_err 'needs a snapshot directory'; done_test
