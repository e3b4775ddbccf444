#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): --timeout with 4 vCPUs.
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-timeout 120 "$ASAN" run --kernel "$G/behave.elf" --cmdline "mode=hang" --cpus 4 --timeout 3
expect_status 124; expect_clean; done_test
