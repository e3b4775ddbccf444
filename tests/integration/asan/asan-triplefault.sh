#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): a triple fault.
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-triplefault 120 "$ASAN" run --kernel "$G/behave.elf" --cmdline "mode=triplefault" --timeout 100
expect_status 123; expect_clean; done_test
