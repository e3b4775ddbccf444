#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): the PV PMU's overflows (pmu/pmu-overflow.sh).
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-pmu-overflow 300 "$ASAN" run --kernel "$G/pmu-overflow.elf" --timeout 280
pmu_guest asan-pmu-overflow 25; done_test
