#!/bin/sh
# SPDX-License-Identifier: MIT
# --timeout stops vCPUs halted with interrupts off: exit status 124.
. "$(dirname "$0")/../lib.sh"

run timeout-hlt 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=hang" --cpus 2 --timeout 3
expect_status 124; expect_err 'timeout'; done_test
