#!/bin/sh
# SPDX-License-Identifier: MIT
# --timeout stops a vCPU spinning in ring 3: exit status 124.
. "$(dirname "$0")/../lib.sh"

run timeout-spin 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=spin" --cpus 2 --timeout 3
expect_status 124; expect_err 'timeout'; done_test
