#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): hello.
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-hello 240 "$ASAN" run --kernel "$G/hello.elf" --timeout 200
expect_status 0; expect_out 'Hello from perfvisor guest'; expect_clean; done_test
