#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): smp on 8 vCPUs.
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-smp8 300 "$ASAN" run --kernel "$G/smp.elf" --cpus 8 --timeout 250
expect_status 0; expect_out 'smp: 8 CPUs online'; expect_clean; done_test
