#!/bin/sh
# SPDX-License-Identifier: MIT
# A write to the debug-exit port: exit status (5 << 1) | 1.
. "$(dirname "$0")/../lib.sh"

run debugexit 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=debugexit code=5" --timeout 50
expect_status 11; done_test
