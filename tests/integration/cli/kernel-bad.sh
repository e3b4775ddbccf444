#!/bin/sh
# SPDX-License-Identifier: MIT
# A kernel that is missing, in no format perfvisor boots, or larger than guest memory: exit 125.
# cases: kernel-missing kernel-not-elf kernel-too-big
. "$(dirname "$0")/../lib.sh"

run kernel-missing 10 "$PV" run --kernel "$T/nonexistent.elf"
expect_status 125; expect_err 'cannot open kernel'; done_test
run kernel-not-elf 10 "$PV" run --kernel tests/integration/tests.sh
expect_status 125; expect_err 'no format perfvisor boots: not a Linux bzImage'; expect_err 'no multiboot v1 header'
expect_err 'not an ELF file'; done_test
dd if=/dev/zero of="$T/big.elf" bs=1M count=5 2>/dev/null
run kernel-too-big 30 "$PV" run --kernel "$T/big.elf" --memory 4M
expect_status 125; expect_err 'larger than guest memory'; done_test
