#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): a task-clock counter armed 44 ns before its wrap gets the
# minimum period and one PMI; then (stress) eight at once: one PMI each at most, then the VMM moves
# each period to the next wrap (a host that cannot keep up must not wedge).
# cases: pmu-overflow-minperiod pmu-overflow-minperiod-stress
. "$(dirname "$0")/../lib.sh"

run pmu-overflow-minperiod 120 "$PV" run --kernel "$G/pmu-overflow.elf" --cmdline "only=minperiod" --timeout 100
pmu_guest pmu-overflow-minperiod 1; done_test

# In the test host (PVT_TESTHOST, tests/testhost/run.sh) eight host task-clock hrtimers at 1 ms
# on the vCPU thread stall KVM-on-emulated-SVM itself: six runs there (2026-12-06) took 5, 5, 5,
# 5, 26 and 117 s (116 s of it inside one KVM_RUN with no exit), one CI run over 100 s.
if [ -n "${PVT_TESTHOST:-}" ]; then
	skip_case pmu-overflow-minperiod-stress "eight task-clock counters at 1 ms stall the test host's nested KVM (5 to 117 s in one KVM_RUN; docs/testing.md)"
else
	run pmu-overflow-minperiod-stress 120 "$PV" run --kernel "$G/pmu-overflow.elf" --cmdline "only=minperiod stress" --timeout 100
	pmu_guest pmu-overflow-minperiod-stress 2; done_test
fi
