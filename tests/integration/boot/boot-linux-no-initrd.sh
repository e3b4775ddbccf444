#!/bin/sh
# SPDX-License-Identifier: MIT
# The Linux boot protocol without an initrd.
. "$(dirname "$0")/../lib.sh"

run boot-linux-no-initrd 120 "$PV" run --kernel "$G/linux.bzimage" --timeout 100 --verbose
boot_guest 14 linux; expect_out 'linux: initrd at 0x0, 0 bytes'; done_test
