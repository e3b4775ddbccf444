#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): exact VMM-kept counts, continuity, task-clock against the TSC.
. "$(dirname "$0")/../lib.sh"

run pmu-count 240 "$PV" run --kernel "$G/pmu-count.elf" --timeout 200
pmu_guest pmu-count 25; done_test
