#!/bin/sh
# SPDX-License-Identifier: MIT
# A triple fault: exit status 123.
. "$(dirname "$0")/../lib.sh"

run triplefault 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=triplefault" --timeout 50
expect_status 123; expect_err 'triple fault'; done_test
