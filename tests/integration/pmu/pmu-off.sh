#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): with --pmu off its leaves are absent and its MSRs #GP.
. "$(dirname "$0")/../lib.sh"

run pmu-off 120 "$PV" run --pmu off --kernel "$G/pmu-discovery.elf" --cmdline "expect_absent" --timeout 100
pmu_guest pmu-off 3; done_test
