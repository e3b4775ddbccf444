#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): overflows, PMIs, the MASK protocol, sampling, the minimum period and the rate cap.
. "$(dirname "$0")/../lib.sh"

run pmu-overflow 240 "$PV" run --kernel "$G/pmu-overflow.elf" --timeout 200
pmu_guest pmu-overflow 25; done_test
