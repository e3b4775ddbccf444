#!/bin/sh
# SPDX-License-Identifier: MIT
# A ucall DONE with status 7: exit status 7.
. "$(dirname "$0")/../lib.sh"

run done-status 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=done status=7" --timeout 50
expect_status 7; done_test
