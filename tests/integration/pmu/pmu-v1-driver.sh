#!/bin/sh
# SPDX-License-Identifier: MIT
# An older guest driver keeps working: the worked example of docs/pvpmu.md as version 1 published
# it, built against v1's frozen header (tests/abi/pvpmu-v1), samples every 1000th port-I/O exit
# with an NMI on today's perfvisor and gets exactly what v1's text promises.
. "$(dirname "$0")/../lib.sh"

run pmu-v1-driver 240 "$PV" run --kernel "$G/pmu-v1-driver.elf" --cmdline "n=5000" --timeout 200
pmu_guest pmu-v1-driver 5; expect_out '5000 port writes gave 5 NMIs'; done_test
