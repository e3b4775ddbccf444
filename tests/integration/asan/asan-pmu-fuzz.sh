#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): the PV PMU fuzzed (pmu/pmu-fuzz.sh).
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-pmu-fuzz 400 "$ASAN" run --kernel "$G/pmu-fuzz.elf" --cmdline "iters=5000 seed=777" --timeout 380
pmu_guest asan-pmu-fuzz 4; done_test
