#!/bin/sh
# SPDX-License-Identifier: MIT
# demo with --pmu off: it times with the TSC and says there is no PV PMU.
. "$(dirname "$0")/../lib.sh"

run demo-pmu-off 240 "$PV" run --kernel "$G/demo.elf" --cpus 2 --pmu off --cmdline iters=1000000 --timeout 200
expect_status 0; expect_clean; expect_out 'no PV PMU'; expect_no_out 'PV PMU version'
done_test
