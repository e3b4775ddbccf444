#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): a bzImage with an initrd.
. "$(dirname "$0")/../lib.sh"

need_asan
boot_inputs
run asan-boot-linux 240 "$ASAN" run --kernel "$G/linux.bzimage" --initrd "$T/initrd" --cmdline "initrd_size=$isize" --timeout 200
expect_status 0; expect_clean; done_test
