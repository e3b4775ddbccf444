#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): the counter page.
. "$(dirname "$0")/../lib.sh"

run pmu-page 120 "$PV" run --kernel "$G/pmu-page.elf" --timeout 100
pmu_guest pmu-page 15; done_test
