#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): its CPUID leaves and event bitmaps (hardware events unavailable where the host has none).
. "$(dirname "$0")/../lib.sh"

hw=$(pmu_hw_cmdline)
run pmu-discovery 120 "$PV" run --kernel "$G/pmu-discovery.elf" --cmdline "$hw" --timeout 100
pmu_guest pmu-discovery 20; done_test
