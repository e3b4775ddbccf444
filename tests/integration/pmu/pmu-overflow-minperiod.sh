#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): eight task-clock counters armed at the minimum period: one PMI, then the
# VMM moves each period to the next wrap (a host that cannot keep up must not wedge).
. "$(dirname "$0")/../lib.sh"

run pmu-overflow-minperiod 120 "$PV" run --kernel "$G/pmu-overflow.elf" --cmdline "only=minperiod stress" --timeout 100
pmu_guest pmu-overflow-minperiod 2; done_test
